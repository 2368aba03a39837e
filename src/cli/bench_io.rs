//! `revisit bench-io` (hidden): the benchmark's floor, reading the inputs and writing them back as
//! Parquet on the same threads, nothing else.

use std::path::PathBuf;

use anyhow::Result;

/// Options of `revisit bench-io`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchIoArgs {
    /// Page sets, as for `run`.
    pub inputs: Vec<String>,
    /// Folder for the copies.
    #[arg(long)]
    pub out: PathBuf,
    /// Threads.
    #[arg(short = 'w', long, default_value_t = 1)]
    pub workers: usize,
}

/// Runs `revisit bench-io`; returns its measurement as one JSON line.
pub fn run(args: &BenchIoArgs) -> Result<String> {
    let b = crate::io::baseline::run(&args.inputs, &args.out, args.workers.max(1))?;
    Ok(serde_json::to_string(&b)? + "\n")
}
