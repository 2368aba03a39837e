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
pub mod control;
pub mod evaluate;
pub mod fail_point;
mod flag_sort;
mod heap;
pub mod identity;
pub mod keys;
pub mod load;
pub mod mesh;
pub mod page_key;
pub mod progress;
pub mod route;
mod routing;
mod row_sender;
pub mod run;
pub mod share;
pub mod sweep;
mod url_dedupe;
pub mod url_text;
pub mod wire;

use anyhow::{anyhow, Result};

use crate::io::out_lock::{self, OutLock};
use crate::plan::evaluate::EvaluatePlan;
use crate::plan::fingerprint;
use crate::plan::run::RunPlan;
use crate::plan::sweep::SweepJob;
use crate::plan::Cluster;
use crate::report::evaluate::Report;
use crate::report::run::Summary;
use crate::report::sweep::SweepSummary;
use mesh::Mesh;
use share::ProcessShare;

/// Runs `plan` in this process (one of the cluster's); returns the summary on process 0.
///
/// Before any work, the lead takes the lock on the output folder (clearing dead runs' staging
/// folders), and on a cluster every process agrees on the job and sees the lead's lock (shared
/// storage); then the workers run, and every process learns whether the lead published.
pub fn run(plan: RunPlan) -> Result<Option<Summary>> {
    let cluster = plan.cluster.clone();
    let say = |m: &str| {
        if !plan.quiet {
            eprintln!("[revisit] {m}");
        }
    };
    let mut lock: Option<OutLock> = None;
    let mut take_lock = || -> Result<String> {
        let l = OutLock::acquire(&plan.out)?;
        for dead in &l.cleared {
            say(&format!(
                "removed {}, left by a run that did not finish",
                dead.display()
            ));
        }
        let id = l.run_id.clone();
        lock = Some(l);
        Ok(id)
    };
    let (run_id, mesh) = if cluster.processes() == 1 {
        (take_lock()?, None)
    } else {
        let out = plan.out.clone();
        let mesh = mesh::connect(
            &cluster,
            plan.fingerprint(),
            take_lock,
            |token| out_lock::check_visible(&out, token),
            say,
        )?;
        (mesh.token.clone(), Some(mesh))
    };
    let result = execute(&cluster, mesh, true, move |worker, share| {
        run::worker(worker, share, &plan, &run_id)
    });
    drop(lock); // held until the outcome is known everywhere
    result
}

/// Runs a sweep in this process; returns its summary on process 0.
pub fn sweep(plan: SweepJob) -> Result<Option<SweepSummary>> {
    let cluster = plan.cluster.clone();
    let mesh = connect(&cluster, &plan.pages, || {
        let mut p = plan.clone();
        (p.cluster.process, p.quiet) = (0, false);
        format!("{p:?}")
    })?;
    execute(&cluster, mesh, false, move |worker, share| {
        sweep::worker(worker, share, &plan)
    })
}

/// Runs an evaluation in this process; returns its report on process 0.
pub fn evaluate(plan: EvaluatePlan) -> Result<Option<Report>> {
    let cluster = plan.cluster.clone();
    let mesh = connect(&cluster, &plan.pages, || {
        let mut p = plan.clone();
        (p.cluster.process, p.quiet) = (0, false);
        format!("{p:?}")
    })?;
    execute(&cluster, mesh, false, move |worker, share| {
        evaluate::worker(worker, share, &plan)
    })
}

/// The connections of a cluster (None for one process), agreed on `pages` and the plan's `debug`
/// form (a command without output lock).
fn connect(
    cluster: &Cluster,
    pages: &crate::plan::PagesPlan,
    debug: impl FnOnce() -> String,
) -> Result<Option<Mesh>> {
    if cluster.processes() == 1 {
        return Ok(None);
    }
    let print = |m: &str| eprintln!("[revisit] {m}");
    let fp = fingerprint::of_plan(pages, cluster, debug());
    let mesh = mesh::connect(cluster, fp, || Ok(String::new()), |_| Ok(()), print)?;
    Ok(Some(mesh))
}

/// Starts the workers of this process and runs `program` on each, with what they share; returns
/// the lead's result (process 0), or the first error of any worker. On a cluster, the control
/// plane watches the other processes meanwhile; with `outcome`, the others then wait for the
/// lead's (publication).
fn execute<T: Send + 'static>(
    cluster: &Cluster,
    mesh: Option<Mesh>,
    outcome: bool,
    program: impl Fn(&mut timely::worker::Worker, &ProcessShare) -> Result<Option<T>>
        + Send
        + Sync
        + 'static,
) -> Result<Option<T>> {
    let share = ProcessShare::new(cluster.process, cluster.processes());
    let program = move |worker: &mut timely::worker::Worker| {
        let result = program(worker, &share).map_err(|e| format!("{e:#}"));
        control::worker_returned();
        result
    };
    control::set_cluster(cluster);
    let clustered = mesh.is_some();
    let guards = match mesh {
        None => timely::execute(cluster::config(cluster), program),
        Some(mesh) => {
            control::start(cluster, mesh.control);
            cluster::start(cluster, mesh.data, program)
        }
    }
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
    if clustered {
        let ended = match &first_error {
            Some(e) => Err(e.clone()),
            None if outcome && cluster.process != 0 => control::await_outcome()
                .map_err(|e| format!("{} did not publish: {e}", cluster.name(0))),
            None => Ok(()),
        };
        control::end(&ended);
        first_error = ended.err();
    }
    match first_error {
        Some(e) => Err(anyhow!(e)),
        None => Ok(result),
    }
}
