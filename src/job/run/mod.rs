//! `revisit run`, one worker's program, as its phases: load (read, exchange by host, arrange),
//! solve, assign hosts to crawlers, plan the night's visits (with --timetable), write the
//! partitions, and summarize and publish (the lead). Every fallible step after the dataflows start
//! ends in an all-reduce that carries errors, so a failing worker stops every worker instead of
//! hanging them.

mod assign;
mod solve;
mod visits;
mod write;

use std::time::Instant;

use anyhow::{Context, Result};
use timely::worker::Worker;

use super::channel::{Reducer, Shuffle};
use super::identity;
use super::load::{load, Loaded};
use super::progress::Progress;
use super::wire::{rated::RatedBatch, rows::RowBatch, visits::VisitBatch};
use crate::io::manifest::Manifest;
use crate::io::publish;
use crate::plan::run::RunPlan;
use crate::report::provenance::Provenance;
use crate::report::rows::DefaultsUsed;
use crate::report::run::{PhaseSeconds, RunFacts, Summary, VisitsFacts, VERSION};
use assign::Assigned;
use solve::Solved;
use visits::Night;
use write::Written;

/// Runs worker `worker`'s share of `plan`; the lead (worker 0) publishes and returns the summary.
pub fn worker(worker: &mut Worker, plan: &RunPlan) -> Result<Option<Summary>> {
    let progress = Progress::of_worker(!plan.quiet, worker.index(), worker.peers(), Instant::now());
    publish::check_replaceable(&plan.out)?;
    let mut channels = Channels::new(worker, plan.timetable.is_some());
    let mut reducer = Reducer::new(worker);
    let identity = identity::agree(&mut reducer);
    let loaded = load(&mut reducer, &mut channels.pages, &plan.pages, &progress)?;
    let provenance = Provenance::new(
        "run",
        identity,
        loaded.inputs.clone(),
        loaded.hosts_table.clone(),
        &plan.options,
    );
    let solved = solve::solve(&mut reducer, plan, &loaded, &progress)?;
    let assigned = assign::assign(&mut reducer, plan, &loaded.arranged, &solved, &progress);
    let night = visits::plan(
        &mut reducer,
        plan,
        &loaded.arranged,
        solved.bandwidth,
        &progress,
    );
    let written = write::write(
        &mut reducer,
        &mut channels,
        plan,
        &provenance,
        &loaded,
        &solved,
        &assigned,
        night.as_ref(),
        &progress,
    )?;
    if reducer.worker.index() != 0 {
        return Ok(None);
    }
    let phases = Phases {
        loaded: &loaded,
        solved: &solved,
        assigned: &assigned,
        night: night.as_ref(),
    };
    let workers = reducer.worker.peers() / plan.cluster.processes();
    summarize(plan, provenance, phases, written, &progress, workers).map(Some)
}

/// The dataflows of a run, built in the same order on every worker.
pub struct Channels {
    /// Input rows to their host's worker.
    pub pages: Shuffle<RowBatch>,
    /// Solved rows to their crawler's writer.
    pub rated: Shuffle<RatedBatch>,
    /// Visited hosts to their crawler's writer (with --timetable).
    pub visits: Option<Shuffle<VisitBatch>>,
    /// Host rows and rejected rows to the lead.
    pub gather: Shuffle<(u32, Vec<u8>)>,
}

impl Channels {
    fn new(worker: &mut Worker, timetable: bool) -> Self {
        Channels {
            pages: Shuffle::new(worker, "ByHost", |b| b.dest as u64),
            rated: Shuffle::new(worker, "ByCrawler", |b| b.dest as u64),
            visits: timetable
                .then(|| Shuffle::new(worker, "ToTimetable", |b: &VisitBatch| b.dest as u64)),
            gather: Shuffle::new(worker, "ToLead", |m: &(u32, Vec<u8>)| m.0 as u64),
        }
    }
}

/// What the lead's earlier phases measured.
struct Phases<'a> {
    loaded: &'a Loaded,
    solved: &'a Solved,
    assigned: &'a Assigned,
    night: Option<&'a Night>,
}

/// The lead's last phase: the summary, written beside the tables, and the staging folder published.
fn summarize(
    plan: &RunPlan,
    provenance: Provenance,
    p: Phases,
    written: Written,
    progress: &Progress,
    workers: usize,
) -> Result<Summary> {
    let write_done = Instant::now();
    let started = progress.started();
    let (loaded, solution) = (p.loaded, &p.solved.solution);
    let summary = Summary::assemble(RunFacts {
        plan,
        provenance,
        bandwidth: p.solved.bandwidth,
        multiplier: solution.multiplier,
        rounds: solution.rounds,
        bandwidth_used: solution.bandwidth_used,
        max_spend: solution.max_spend,
        rows_in: loaded.rows_in,
        rejected_by_reason: &loaded.rejected_by_reason,
        defaults: DefaultsUsed::new(
            &plan.pages.defaults,
            loaded.default_importance,
            loaded.default_change_rate,
        ),
        rates: &written.rates,
        crawler_load_max_over_mean: p.assigned.load_ratio,
        largest_host: p.assigned.largest_host,
        timetable: p.night.map(|n| VisitsFacts {
            objective: n.planned.objective,
            visits: &n.planned.visits,
            weak_politeness: &n.planned.weak_politeness,
            non_polite: &n.planned.non_polite,
            crawler_rate_per_s: n.settings.crawler_rate,
            totals: &written.nights,
        }),
        workers,
        processes: plan.cluster.processes(),
        seconds: PhaseSeconds {
            read: (loaded.read_done - started).as_secs_f64(),
            exchange: (loaded.arrange_done - loaded.read_done).as_secs_f64(),
            solve: (p.solved.done - loaded.arrange_done).as_secs_f64(),
            write: (write_done - p.solved.done).as_secs_f64(),
            total: (write_done - started).as_secs_f64(),
        },
    });
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            std::fs::remove_dir_all(&written.staging).ok();
            return Err(e);
        }
    };
    std::fs::write(
        written.staging.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .context("writing summary.json")?;
    let mut files = written.files;
    files.sort();
    publish::publish(
        &written.staging,
        &plan.out,
        &Manifest {
            version: VERSION.to_owned(),
            files,
        },
    )?;
    Ok(summary)
}
