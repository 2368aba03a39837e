//! The timely dataflow job: workers shard hosts, agree on the multiplier by all-reduce rounds, and
//! write one partition per crawler. No formulas here: the math is in [`crate::solve`].

pub mod arrange;
pub mod channel;
pub mod cluster;
pub mod config;
mod flag_sort;
pub mod output;
pub mod worker;

use anyhow::{anyhow, Result};

use crate::report::Summary;
use config::RunArgs;

/// Runs the job in this process (one of `--processes`); returns the summary on process 0.
pub fn run(args: RunArgs) -> Result<Option<Summary>> {
    args.validate()?;
    let config = args.cluster.config()?;
    let processes = args.cluster.processes;
    let guards = timely::execute(config, move |worker| {
        worker::run_worker(worker, &args, processes).map_err(|e| format!("{e:#}"))
    })
    .map_err(|e| anyhow!("starting the workers: {e}"))?;
    let mut summary = None;
    let mut first_error = None;
    for result in guards.join() {
        match result {
            Ok(Ok(Some(s))) => summary = Some(s),
            Ok(Ok(None)) => {}
            Ok(Err(e)) | Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(anyhow!(e)),
        None => Ok(summary),
    }
}
