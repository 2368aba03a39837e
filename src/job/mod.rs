//! The timely dataflow job: workers shard hosts, agree on the multiplier by all-reduce rounds, and
//! write one partition per crawler. No formulas here: the math is in [`revisit_core::solve`].

pub mod arrange;
pub mod channel;
pub mod cluster;
pub mod config;
pub mod estimate;
pub mod evaluate;
pub mod evaluate_visits;
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
pub fn run_evaluate(mut args: evaluate::EvaluateArgs) -> Result<Option<evaluate::Report>> {
    args.validate()?;
    // Read once per process, before any worker starts: a bad spec fails fast, and a measured
    // sample is not read again by every worker.
    let fetch = args
        .fetch_time
        .as_deref()
        .map(crate::io::fetch_times::parse_fetch_time)
        .transpose()?;
    let cluster = args.pages.cluster.clone();
    if args.visits.is_empty() {
        return execute(&cluster, move |worker, processes| {
            evaluate::run_evaluate_worker(worker, &args, fetch.as_ref(), processes)
                .map(|r| r.map(evaluate::Report::Rates))
        });
    }
    // The visits' footers and horizon, once per process: a bad file or a horizon the files
    // disagree on fails before any worker starts.
    let files = crate::io::visits_in::open_all(&crate::io::inputs::expand(&args.visits)?)?;
    let (horizon_s, horizon_source) =
        crate::io::visits_in::horizon(&files, args.pages.horizon_s, config::DEFAULT_HORIZON_S)?;
    // The pages' caps and the timetable share the timetable's horizon.
    args.pages.horizon_s = Some(horizon_s);
    let input = evaluate_visits::VisitsInput {
        files,
        horizon_s,
        horizon_source,
    };
    execute(&cluster, move |worker, processes| {
        evaluate_visits::run_visits_worker(worker, &args, &input, fetch.as_ref(), processes)
            .map(|r| r.map(evaluate::Report::Visits))
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
