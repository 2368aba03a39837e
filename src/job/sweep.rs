//! `revisit sweep`, one worker's program: load the page set once, then the optimum of several
//! policies over a range of bandwidths, with and without politeness; the lead writes a table and a
//! plot.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use revisit_core::exact_sum::ExactSum;
use revisit_core::reduce::AllReduce;
use revisit_core::solve::sweep::{sweep, SweepPlan};
use timely::worker::Worker;

use super::channel::Reducer;
use super::identity;
use super::load::{load, LoadChannels};
use super::progress::Progress;
use super::share::ProcessShare;
use crate::io::manifest::{FileEntry, Manifest};
use crate::io::{plot, publish, schema, sweep_table};
use crate::plan::sweep::SweepJob;
use crate::report::format::{num, percent};
use crate::report::provenance::Provenance;
use crate::report::rows::{by_reason, DefaultsUsed};
use crate::report::sweep::{SweepSeconds, SweepSummary};

/// Runs worker `worker`'s share of a sweep; worker 0 writes the files and returns the summary.
pub fn worker(
    worker: &mut Worker,
    share: &ProcessShare,
    plan: &SweepJob,
) -> Result<Option<SweepSummary>> {
    let started = Instant::now();
    let lead = worker.index() == 0;
    let peers = worker.peers();
    let progress = Progress::of_worker(!plan.quiet, worker.index(), peers, started);
    publish::check_replaceable(&plan.out)?;
    let mut pages_channel = LoadChannels::new(worker);
    let mut reducer = Reducer::new(worker);
    let identity = identity::agree(&mut reducer);
    let loaded = load(
        &mut reducer,
        &mut pages_channel,
        share,
        &plan.pages,
        &progress,
    )?;
    let load_done = Instant::now();
    let pages = &loaded.arranged.pages;
    let mut importance = ExactSum::new();
    pages.importance().iter().for_each(|&mu| importance.add(mu));
    let importance_total = reducer.all_reduce(importance).value();
    let sweep_plan = SweepPlan {
        policies: plan.policies.clone(),
        fractions: plan.fractions.clone(),
        floor: plan.floor_eps,
    };
    let total_points = plan.policies.len() * plan.fractions.len() * 2;
    let mut done = 0;
    let points = sweep(pages, loaded.pages, &sweep_plan, &mut reducer, |p| {
        done += 1;
        progress.say(format!(
            "point {done} of {total_points} ({}): {} {} at {} fetches per URL per day: {} rounds, fresh {}",
            percent(done as f64 / total_points as f64),
            p.policy.name(),
            if p.polite { "polite" } else { "no caps" },
            num(p.bandwidth_fraction),
            p.rounds,
            percent(p.freshness_poisson)
        ))
    })?;
    let sweep_done = Instant::now();
    if !lead {
        return Ok(None);
    }
    let summary = SweepSummary {
        provenance: Provenance::new(
            "sweep",
            identity,
            loaded.inputs.clone(),
            loaded.hosts_table.clone(),
            &plan.options,
        ),
        urls: loaded.pages,
        rows_in: loaded.rows_in,
        rows_rejected: loaded.rows_rejected(),
        rejected_by_reason: by_reason(&loaded.rejected_by_reason),
        defaults: DefaultsUsed::new(
            &plan.pages.defaults,
            loaded.default_importance,
            loaded.default_change_rate,
        ),
        policies: plan.policies.iter().map(|p| p.name().to_owned()).collect(),
        bandwidth_fractions: plan.fractions.clone(),
        rounds: points.iter().map(|p| p.rounds as u64).sum(),
        points,
        workers: peers / plan.cluster.processes(),
        processes: plan.cluster.processes(),
        seconds: SweepSeconds {
            load: (load_done - started).as_secs_f64(),
            sweep: (sweep_done - load_done).as_secs_f64(),
            ..SweepSeconds::default()
        },
        importance_total,
    };
    write(plan, summary, started).map(Some)
}

/// Writes the lead's files into a staging folder and publishes it.
fn write(plan: &SweepJob, mut summary: SweepSummary, started: Instant) -> Result<SweepSummary> {
    let run_id = summary.provenance.run_id.clone();
    let staging = publish::staging_dir(&plan.out, &run_id);
    std::fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;
    let mut metadata = summary.provenance.metadata();
    metadata.extend([
        (
            "revisit.horizon_s".to_owned(),
            format!("{}", plan.pages.horizon.0),
        ),
        (
            "revisit.floor_eps".to_owned(),
            format!("{}", plan.floor_eps),
        ),
        (
            "revisit.units.sweep".to_owned(),
            schema::SWEEP_UNITS.to_owned(),
        ),
    ]);
    let files = match write_files(&staging, &mut summary, &metadata, started) {
        Ok(f) => f,
        Err(e) => {
            std::fs::remove_dir_all(&staging).ok();
            return Err(e);
        }
    };
    publish::publish(
        &staging,
        &plan.out,
        &Manifest {
            version: summary.provenance.version.clone(),
            run_id,
            files,
        },
    )?;
    Ok(summary)
}

/// The table (CSV, Parquet), the plot and the summary, in `staging`.
fn write_files(
    staging: &Path,
    summary: &mut SweepSummary,
    metadata: &[(String, String)],
    started: Instant,
) -> Result<Vec<FileEntry>> {
    let mut files = Vec::new();
    let (rows, bytes) = sweep_table::write_csv(&staging.join("sweep.csv"), &summary.points)?;
    files.push(FileEntry {
        path: "sweep.csv".into(),
        rows,
        bytes,
    });
    let (rows, bytes) =
        sweep_table::write_parquet(&staging.join("sweep.parquet"), &summary.points, metadata)?;
    files.push(FileEntry {
        path: "sweep.parquet".into(),
        rows,
        bytes,
    });
    if summary.bandwidth_fractions.len() >= 2 {
        let path = staging.join("sweep.svg");
        plot::write_sweep_svg(&path, &summary.points, summary.importance_total)?;
        let bytes = std::fs::metadata(&path)?.len();
        files.push(FileEntry {
            path: "sweep.svg".into(),
            rows: 0,
            bytes,
        });
    }
    summary.seconds.total = started.elapsed().as_secs_f64();
    summary.seconds.write = summary.seconds.total - summary.seconds.load - summary.seconds.sweep;
    std::fs::write(
        staging.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .context("writing summary.json")?;
    Ok(files)
}
