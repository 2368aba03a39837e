//! revisit: freshness-optimal, polite crawl rates (see README.md). Parse, run, print.

use std::process::ExitCode;

use revisit::cli::{self, ParseError};

// No custom global allocator: rows travel as columnar buffers, and on the 1M-URL benchmark glibc's
// malloc gave 1.5-1.9 s and 237 MiB peak against mimalloc's 2.2 s and 397 MiB (its eagerly
// committed arenas are zeroed page by page by the kernel before use).

fn main() -> ExitCode {
    // A panicking worker would leave the others waiting forever: abort the process instead, so the
    // job ends with a failure status and publishes nothing; a broken connection to another process
    // of a cluster ends this one with a message naming it.
    revisit::job::control::install_panic_hook();
    let cli = match cli::parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(ParseError::Clap(e)) => e.exit(),
        Err(ParseError::JobFile(e)) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    match cli::run(cli) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
