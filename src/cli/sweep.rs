//! `revisit sweep`: the optimum of several policies over a range of bandwidths, with and without
//! politeness, as a table and a plot.

use std::path::PathBuf;

use anyhow::{bail, Result};
use revisit_core::objective::Objective;

use super::shared::{JobArg, PageArgs};
use crate::plan::sweep::{fractions, SweepJob, DEFAULT_POLICIES};

/// Parameters of `revisit sweep`.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub job: JobArg,
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
            cluster: self.pages.cluster.plan()?,
            policies: self.policies.clone(),
            fractions: fractions(self.from, self.to, self.points),
            floor_eps: self.floor,
            out: self.out.clone(),
            quiet: self.pages.quiet,
        })
    }
}

/// Runs `revisit sweep`; returns the table a person reads (process 0).
pub fn run(args: &SweepArgs) -> Result<String> {
    let plan = args.plan()?;
    let out = plan.out.clone();
    Ok(crate::job::sweep(plan)?
        .map(|s| s.human(&out))
        .unwrap_or_default())
}
