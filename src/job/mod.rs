//! The timely dataflow job: workers shard hosts, agree on the multiplier by all-reduce rounds, and
//! write one partition per crawler. No formulas here: the math is in [`crate::solve`].

pub mod arrange;
pub mod channel;
pub mod cluster;
pub mod config;
pub mod evaluate;
mod flag_sort;
pub mod load;
pub mod output;
pub mod simulate;
pub mod sweep;
pub mod visits;
pub mod worker;

use anyhow::{anyhow, Result};

use crate::report::Summary;
use config::RunArgs;

/// Runs the job in this process (one of `--processes`); returns the summary on process 0.
pub fn run(args: RunArgs) -> Result<Option<Summary>> {
    args.validate()?;
    let cluster = args.pages.cluster.clone();
    execute(&cluster, move |worker, processes| {
        worker::run_worker(worker, &args, processes)
    })
}

/// Runs a sweep in this process; returns its summary on process 0.
pub fn run_sweep(args: sweep::SweepArgs) -> Result<Option<sweep::SweepSummary>> {
    args.validate()?;
    let cluster = args.pages.cluster.clone();
    execute(&cluster, move |worker, processes| {
        sweep::run_sweep_worker(worker, &args, processes)
    })
}

/// Runs an evaluation in this process; returns its report on process 0.
pub fn run_evaluate(args: evaluate::EvaluateArgs) -> Result<Option<evaluate::Evaluation>> {
    args.validate()?;
    // Read once per process, before any worker starts: a bad spec fails fast, and a measured
    // sample is not read again by every worker.
    let fetch = args
        .fetch_time
        .as_deref()
        .map(crate::io::fetch_times::parse_fetch_time)
        .transpose()?;
    let cluster = args.pages.cluster.clone();
    execute(&cluster, move |worker, processes| {
        evaluate::run_evaluate_worker(worker, &args, fetch.as_ref(), processes)
    })
}

/// Starts the workers of this process in timely's cluster mode and runs `program` on each; returns
/// the lead's result (process 0), or the first error of any worker.
fn execute<T: Send + 'static>(
    cluster: &cluster::ClusterArgs,
    program: impl Fn(&mut timely::worker::Worker, usize) -> Result<Option<T>> + Send + Sync + 'static,
) -> Result<Option<T>> {
    let config = cluster.config()?;
    let processes = cluster.processes;
    let guards = timely::execute(config, move |worker| {
        program(worker, processes).map_err(|e| format!("{e:#}"))
    })
    .map_err(|e| anyhow!("starting the workers: {e}"))?;
    let mut result = None;
    let mut first_error = None;
    for r in guards.join() {
        match r {
            Ok(Ok(Some(s))) => result = Some(s),
            Ok(Ok(None)) => {}
            Ok(Err(e)) | Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(anyhow!(e)),
        None => Ok(result),
    }
}
