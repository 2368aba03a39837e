//! `revisit bench-io` (hidden): the benchmark's floor, reading the inputs and writing them back as
//! Parquet on the same threads, nothing else.

use std::path::PathBuf;

use anyhow::Result;

use crate::report::clock::Moment;

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

/// What `revisit bench-io` prints: the baseline's measurement, and the CPU it took.
#[derive(serde::Serialize)]
struct Measured {
    #[serde(flatten)]
    baseline: crate::io::baseline::Baseline,
    /// CPU seconds of every thread (user and system), from opening the inputs to the last file
    /// written: the floor of a run's `seconds_cpu.total`, as `seconds` is of its wall time.
    cpu_seconds: f64,
}

/// Runs `revisit bench-io`; returns its measurement as one JSON line.
pub fn run(args: &BenchIoArgs) -> Result<String> {
    let start = Moment::now();
    let baseline = crate::io::baseline::run(&args.inputs, &args.out, args.workers.max(1))?;
    let cpu_seconds = Moment::now().cpu_s_since(&start);
    Ok(serde_json::to_string(&Measured {
        baseline,
        cpu_seconds,
    })? + "\n")
}
