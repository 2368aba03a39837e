//! `revisit sweep`: load the page set once, then the optimum of several policies over a range of
//! bandwidths, with and without politeness; the lead writes a table and a plot.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use timely::worker::Worker;

use super::arrange::Reading;
use super::channel::{Reducer, Shuffle};
use super::config::PageArgs;
use super::load::load;
use super::worker::{progress, VERSION};
use revisit_core::exact_sum::ExactSum;
use crate::io::manifest::{FileEntry, Manifest};
use crate::io::rows::RowBatch;
use crate::io::{plot, publish, schema, sweep_table};
use revisit_core::objective::Objective;
use revisit_core::reduce::AllReduce;
use revisit_core::solve::sweep::{sweep, SweepPlan, SweepPoint};

/// The policies a sweep compares unless told otherwise.
const DEFAULT_POLICIES: [Objective; 7] = [
    Objective::Harmonic,
    Objective::Binary,
    Objective::BinaryFixed,
    Objective::HarmonicApprox,
    Objective::Uniform,
    Objective::ChangeRate,
    Objective::Importance,
];

/// Parameters of `revisit sweep`.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// Policies to compare, comma-separated (any `run --objective` value).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = DEFAULT_POLICIES)]
    pub policies: Vec<Objective>,
    /// Smallest bandwidth, as a multiple of the number of valid URLs (fetches per URL per day).
    #[arg(long, default_value_t = 0.01, value_name = "MULTIPLE")]
    pub from: f64,
    /// Largest bandwidth, as a multiple of the number of valid URLs.
    #[arg(long, default_value_t = 1.0, value_name = "MULTIPLE")]
    pub to: f64,
    /// Number of bandwidths, spaced evenly on a log scale from --from to --to.
    #[arg(long, default_value_t = 20)]
    pub points: usize,
    /// Non-starvation floor EPS for every policy, as `run --floor`.
    #[arg(long, default_value_t = 0.0, value_name = "EPS")]
    pub floor: f64,
    /// Output folder: sweep.csv, sweep.parquet, sweep.svg, summary.json (replaced atomically).
    #[arg(long, default_value = "sweep")]
    pub out: PathBuf,
}

impl SweepArgs {
    /// Checks the parameters before any work starts.
    pub fn validate(&self) -> Result<()> {
        self.pages.validate()?;
        if !(self.from.is_finite()
            && self.from > 0.0
            && self.to.is_finite()
            && self.to >= self.from)
        {
            bail!(
                "--from and --to must be positive with --from <= --to, got {} and {}",
                self.from,
                self.to
            );
        }
        if self.points == 0 || (self.points == 1 && self.to != self.from) {
            bail!("--points must be at least 2 (or 1 with --from equal to --to)");
        }
        if self.policies.is_empty() {
            bail!("--policies needs at least one policy");
        }
        if !(self.floor >= 0.0 && self.floor < 1.0) {
            bail!("--floor must be in [0, 1), got {}", self.floor);
        }
        Ok(())
    }

    /// The bandwidths as multiples of the URL count, evenly spaced in log scale.
    pub fn fractions(&self) -> Vec<f64> {
        if self.points == 1 {
            return vec![self.from];
        }
        let step = (self.to / self.from).ln() / (self.points - 1) as f64;
        (0..self.points)
            .map(|k| match k {
                0 => self.from,
                k if k == self.points - 1 => self.to,
                k => self.from * (step * k as f64).exp(),
            })
            .collect()
    }
}

/// What `sweep` reports (summary.json).
#[derive(Clone, Debug, Serialize)]
pub struct SweepSummary {
    pub version: String,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    pub policies: Vec<String>,
    pub bandwidth_fractions: Vec<f64>,
    /// The points (in sweep.csv and sweep.parquet, not in summary.json).
    #[serde(skip)]
    pub points: Vec<SweepPoint>,
    /// Rounds of all points' multiplier searches.
    pub rounds: u64,
    pub workers: usize,
    pub processes: usize,
    /// Seconds: loading (read, exchange, arrange), the sweep's solves, writing, total.
    pub seconds_load: f64,
    pub seconds_sweep: f64,
    pub seconds_total: f64,
    #[serde(skip)]
    pub importance_total: f64,
}

impl SweepSummary {
    /// A table a person reads: each policy at the bandwidth closest to 0.2 per URL, polite and not.
    pub fn human(&self, out: &std::path::Path) -> String {
        let target = 0.2;
        let nearest = self
            .bandwidth_fractions
            .iter()
            .copied()
            .min_by(|a, b| (a / target).ln().abs().total_cmp(&(b / target).ln().abs()))
            .unwrap_or(target);
        let mut s = format!(
            "revisit sweep: {} URLs, {} policies x {} bandwidths x polite/no caps in {:.2} s (load {:.2} s, {} rounds)\n\
             at bandwidth {nearest:.4} x URLs:\n  {:<16} {:>14} {:>14} {:>10} {:>10} {:>9}\n",
            self.urls,
            self.policies.len(),
            self.bandwidth_fractions.len(),
            self.seconds_total,
            self.seconds_load,
            self.rounds,
            "policy",
            "J_h polite",
            "J_h no caps",
            "fresh pol.",
            "fresh free",
            "price %",
        );
        for policy in &self.policies {
            let at = |polite: bool| {
                self.points.iter().find(|p| {
                    p.policy.name() == policy
                        && p.polite == polite
                        && p.bandwidth_fraction == nearest
                })
            };
            if let (Some(a), Some(b)) = (at(true), at(false)) {
                let show = |c: Option<f64>| c.map(|c| format!("{c:.6e}")).unwrap_or("inf".into());
                let price = match (own_cost(a), own_cost(b)) {
                    (Some(x), Some(y)) if y > 0.0 => format!("{:+.3}", 100.0 * (x / y - 1.0)),
                    _ => "-".into(),
                };
                s += &format!(
                    "  {:<16} {:>14} {:>14} {:>10.6} {:>10.6} {:>9}\n",
                    policy,
                    show(a.cost_harmonic),
                    show(b.cost_harmonic),
                    a.freshness_poisson,
                    b.freshness_poisson,
                    price
                );
            }
        }
        s += &format!(
            "  (price % = the policy's own cost with politeness / without - 1: J_b for binary, the\n   evenly spaced staleness for binary-fixed, J_h for the others)\nwrote {}/sweep.csv, sweep.parquet, sweep.svg, summary.json\n",
            out.display()
        );
        s
    }
}

/// The cost a policy is judged by: its own objective (J_b for the binary family, the paper's BLC
/// included), J_h for the harmonic family and the proportional baselines.
fn own_cost(p: &SweepPoint) -> Option<f64> {
    match p.policy {
        Objective::Binary | Objective::BinaryDiscrete | Objective::BinaryBlind => {
            Some(p.cost_binary)
        }
        Objective::BinaryFixed => Some(p.cost_fixed_interval),
        _ => p.cost_harmonic,
    }
}

/// Runs worker `worker`'s share of a sweep; worker 0 returns the summary.
pub fn run_sweep_worker(
    worker: &mut Worker,
    args: &SweepArgs,
    processes: usize,
) -> Result<Option<SweepSummary>> {
    let started = Instant::now();
    let lead = worker.index() == 0;
    let peers = worker.peers();
    let say = progress(lead && !args.pages.quiet, started);
    publish::check_replaceable(&args.out)?;
    let mut pages_channel = Shuffle::<RowBatch>::new(worker, "ByHost", |b| b.dest as u64);
    let mut reducer = Reducer::new(worker);
    let reading = Reading {
        objective: args.policies[0],
        value_per_change: args.pages.value_per_change,
    };
    let loaded = load(&mut reducer, &mut pages_channel, &args.pages, reading, &say)?;
    let load_done = Instant::now();
    let mut arranged = loaded.arranged;
    let mut importance = ExactSum::new();
    arranged
        .arena
        .importance
        .iter()
        .for_each(|&mu| importance.add(mu));
    let importance_total = reducer.all_reduce(importance).value();
    let plan = SweepPlan {
        policies: args.policies.clone(),
        fractions: args.fractions(),
        floor: args.floor,
    };
    let total_points = plan.policies.len() * plan.fractions.len() * 2;
    let mut done = 0;
    let points = sweep(
        &mut arranged.arena,
        &arranged.complete_obs,
        loaded.pages,
        &plan,
        &mut reducer,
        |p| {
            done += 1;
            say(format!(
                "point {done}/{total_points}: {} {} at {:.4} x URLs: {} rounds, fresh {:.6}",
                p.policy.name(),
                if p.polite { "polite" } else { "no caps" },
                p.bandwidth_fraction,
                p.rounds,
                p.freshness_poisson
            ))
        },
    );
    let sweep_done = Instant::now();
    if !lead {
        return Ok(None);
    }
    let summary = SweepSummary {
        version: VERSION.to_owned(),
        urls: loaded.pages,
        rows_in: loaded.rows_in,
        rows_rejected: loaded.rejected_by_reason.iter().sum(),
        policies: plan.policies.iter().map(|p| p.name().to_owned()).collect(),
        bandwidth_fractions: plan.fractions.clone(),
        rounds: points.iter().map(|p| p.rounds as u64).sum(),
        points,
        workers: peers / processes,
        processes,
        seconds_load: (load_done - started).as_secs_f64(),
        seconds_sweep: (sweep_done - load_done).as_secs_f64(),
        seconds_total: 0.0,
        importance_total,
    };
    write_sweep(args, summary, started)
}

/// Writes the lead's files into a staging folder and publishes it.
fn write_sweep(
    args: &SweepArgs,
    mut summary: SweepSummary,
    started: Instant,
) -> Result<Option<SweepSummary>> {
    let staging = publish::staging_dir(&args.out, &format!("{:016x}", std::process::id()));
    std::fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;
    let metadata = vec![
        ("revisit.version".to_owned(), VERSION.to_owned()),
        (
            "revisit.horizon_s".to_owned(),
            format!("{}", args.pages.horizon_s()),
        ),
        ("revisit.floor_eps".to_owned(), format!("{}", args.floor)),
        (
            "revisit.units.sweep".to_owned(),
            schema::SWEEP_UNITS.to_owned(),
        ),
    ];
    let result = (|| -> Result<Vec<FileEntry>> {
        let mut files = Vec::new();
        let (rows, bytes) = sweep_table::write_csv(&staging.join("sweep.csv"), &summary.points)?;
        files.push(FileEntry {
            path: "sweep.csv".into(),
            rows,
            bytes,
        });
        let (rows, bytes) =
            sweep_table::write_parquet(&staging.join("sweep.parquet"), &summary.points, &metadata)?;
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
        summary.seconds_total = started.elapsed().as_secs_f64();
        std::fs::write(
            staging.join("summary.json"),
            serde_json::to_string_pretty(&summary)?,
        )
        .context("writing summary.json")?;
        Ok(files)
    })();
    let files = match result {
        Ok(f) => f,
        Err(e) => {
            std::fs::remove_dir_all(&staging).ok();
            return Err(e);
        }
    };
    publish::publish(
        &staging,
        &args.out,
        &Manifest {
            version: VERSION.to_owned(),
            files,
        },
    )?;
    Ok(Some(summary))
}
