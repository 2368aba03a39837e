//! revisit: compute freshness-optimal, polite crawl rates (see README.md).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use revisit::gen::{generate, GenArgs};
use revisit::job::config::RunArgs;
use revisit::plan::PlanCrawlersArgs;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Freshness-optimal, polite crawl rates for every URL, as a timely-dataflow batch job.
#[derive(Parser)]
#[command(name = "revisit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compute every URL's crawl rate, per-host budgets and one partition per crawler.
    ///
    /// With no arguments it runs on the sample page set in data/ and writes out/.
    Run(RunArgs),
    /// Write a synthetic, web-like page set (Parquet shards and a hosts table).
    Gen(GenArgs),
    /// How many crawlers should feed one indexer (Liu & Nain §1.2: M/M/1/K queue and an MDP).
    PlanCrawlers(PlanCrawlersArgs),
}

fn main() -> ExitCode {
    // A panicking worker would leave the others waiting forever (STACK.md gotcha 1): abort the
    // process instead, so the job ends with a failure status and publishes nothing.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        std::process::abort();
    }));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => {
            let out = args.out.clone();
            revisit::job::run(args).map(|summary| {
                if let Some(s) = summary {
                    print!("{}", s.human(&out));
                }
            })
        }
        Command::Gen(args) => generate(&args).map(|files| {
            println!("wrote {} files under {}", files.len(), args.out.display());
        }),
        Command::PlanCrawlers(args) => revisit::plan::run(&args).map(|text| print!("{text}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
