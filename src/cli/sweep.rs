//! `revisit sweep`: the optimum of several policies over a range of bandwidths, with and without
//! politeness, as a table and a plot.

use std::path::PathBuf;

use anyhow::{bail, Result};
use revisit_core::objective::Objective;

use super::heading;
use super::shared::{JobArg, PageArgs, RunnerArgs};
use crate::plan::sweep::{fractions, SweepJob, DEFAULT_POLICIES_TEXT};
use crate::plan::Options;

/// Parameters of `revisit sweep`.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// Policies to compare, comma-separated (--help: default)
    #[arg(long, value_enum, value_name = "NAMES", value_delimiter = ',', default_value = DEFAULT_POLICIES_TEXT, hide_default_value = true, hide_possible_values = true, long_help = policies_help(), help_heading = heading::BANDWIDTH)]
    pub policies: Vec<Objective>,
    /// Smallest bandwidth, fetches per URL per day
    ///
    /// A multiple of the number of valid URLs, as `run --bandwidth-fraction`.
    #[arg(long, default_value_t = 0.01, value_name = "PER_URL", help_heading = heading::BANDWIDTH)]
    pub from: f64,
    /// Largest bandwidth, fetches per URL per day
    #[arg(long, default_value_t = 1.0, value_name = "PER_URL", help_heading = heading::BANDWIDTH)]
    pub to: f64,
    /// Bandwidths, log-spaced from --from to --to
    #[arg(long, default_value_t = 20, value_name = "N", help_heading = heading::BANDWIDTH)]
    pub points: usize,
    /// Non-starvation floor for every policy
    ///
    /// EPS in [0, 1), as `run --floor`.
    #[arg(long, default_value_t = 0.0, value_name = "EPS", help_heading = heading::BANDWIDTH)]
    pub floor: f64,
    /// Output folder, replaced atomically on success
    ///
    /// sweep.csv, sweep.parquet, sweep.svg, summary.json, manifest.json and _SUCCESS.
    #[arg(long, default_value = "sweep", value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out: PathBuf,
    #[command(flatten)]
    pub runner: RunnerArgs,
    #[command(flatten)]
    pub job: JobArg,
}

/// The long help of `--policies`, with the default as the option takes it (comma-separated).
fn policies_help() -> String {
    let all: Vec<&str> = Objective::ALL.iter().map(|o| o.name()).collect();
    format!(
        "Policies to compare, comma-separated: any of {} (as `run --objective`)\n\n\
         [default: {DEFAULT_POLICIES_TEXT}]",
        all.join(", ")
    )
}

impl SweepArgs {
    /// The sweep's plan; fails, naming the option, on a range or policy list no sweep can take.
    pub fn plan(&self) -> Result<SweepJob> {
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
        Ok(SweepJob {
            pages: self.pages.plan(None)?,
            cluster: self.runner.cluster.plan()?,
            policies: self.policies.clone(),
            fractions: fractions(self.from, self.to, self.points),
            floor_eps: self.floor,
            out: self.out.clone(),
            quiet: self.runner.quiet,
            options: Options::new(),
        })
    }
}

/// Runs `revisit sweep`; returns the table a person reads (process 0).
pub fn run(args: &SweepArgs, options: &Options) -> Result<String> {
    let mut plan = args.plan()?;
    plan.options = options.clone();
    let out = plan.out.clone();
    Ok(crate::job::sweep(plan)?
        .map(|s| s.human(&out))
        .unwrap_or_default())
}
