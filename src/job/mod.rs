//! The timely dataflow: workers (threads, and processes through timely's cluster mode) shard pages
//! by host, agree on multipliers by all-reduce rounds, and write one partition per crawler. No
//! formulas here: the math is `revisit-core`; files are [`crate::io`].
//!
//! Each command's worker program reads as its phases ([`run`], [`evaluate`], [`sweep`]); [`load`]
//! is the phases they share (read, exchange by host, arrange), [`channel`] the two ways workers
//! talk (shuffles and all-reduces), [`wire`] what travels.

pub mod arrange;
pub mod channel;
pub mod cluster;
pub mod evaluate;
pub mod fail_point;
mod flag_sort;
pub mod identity;
pub mod keys;
pub mod load;
pub mod progress;
pub mod run;
pub mod sweep;
pub mod wire;

use anyhow::{anyhow, Result};

use crate::plan::evaluate::EvaluatePlan;
use crate::plan::run::RunPlan;
use crate::plan::sweep::SweepJob;
use crate::plan::Cluster;
use crate::report::evaluate::Report;
use crate::report::run::Summary;
use crate::report::sweep::SweepSummary;

/// Runs `plan` in this process (one of the cluster's); returns the summary on process 0.
pub fn run(plan: RunPlan) -> Result<Option<Summary>> {
    let cluster = plan.cluster.clone();
    execute(&cluster, move |worker| run::worker(worker, &plan))
}

/// Runs a sweep in this process; returns its summary on process 0.
pub fn sweep(plan: SweepJob) -> Result<Option<SweepSummary>> {
    let cluster = plan.cluster.clone();
    execute(&cluster, move |worker| sweep::worker(worker, &plan))
}

/// Runs an evaluation in this process; returns its report on process 0.
pub fn evaluate(plan: EvaluatePlan) -> Result<Option<Report>> {
    let cluster = plan.cluster.clone();
    execute(&cluster, move |worker| evaluate::worker(worker, &plan))
}

/// Starts the workers of this process and runs `program` on each; returns the lead's result
/// (process 0), or the first error of any worker.
fn execute<T: Send + 'static>(
    cluster: &Cluster,
    program: impl Fn(&mut timely::worker::Worker) -> Result<Option<T>> + Send + Sync + 'static,
) -> Result<Option<T>> {
    let guards = timely::execute(cluster::config(cluster), move |worker| {
        program(worker).map_err(|e| format!("{e:#}"))
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
