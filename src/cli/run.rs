//! `revisit run`: every URL's crawl rate, per-host budgets and one partition per crawler.

use std::path::PathBuf;

use anyhow::{bail, Result};
use revisit_core::objective::Objective;
use revisit_core::schedule::timetable::Sequencing;

use super::heading;
use super::shared::{JobArg, PageArgs, RunnerArgs};
use crate::plan::run::{Bandwidth, IndexPlan, RunPlan, TimetablePlan, DEFAULT_BANDWIDTH_PER_URL};
use crate::plan::Options;
use crate::report::run::Summary;

/// Options of `revisit run`.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// Total crawl bandwidth, fetches per day
    ///
    /// Fetches per day over all crawlers together. Default: --bandwidth-fraction 0.2.
    #[arg(
        long,
        value_name = "FETCHES_PER_DAY",
        conflicts_with = "bandwidth_fraction",
        help_heading = heading::BANDWIDTH
    )]
    pub bandwidth: Option<f64>,
    /// Bandwidth per valid URL, fetches per day [default: 0.2]
    ///
    /// The bandwidth as a multiple of the number of valid URLs: 0.2 is one fetch per URL every
    /// five days on average. Used when --bandwidth is not given.
    #[arg(long, value_name = "PER_URL", help_heading = heading::BANDWIDTH)]
    pub bandwidth_fraction: Option<f64>,
    /// What fresh means (the list: --help)
    ///
    /// What "fresh" means: harmonic (staleness grows with every missed change; LambdaCrawl,
    /// NeurIPS'19), binary (share of time pages are fresh with Poisson crawls; Azar et al.,
    /// PNAS'18), binary-fixed (the same with evenly spaced crawls; Cho & Garcia-Molina, Frontera),
    /// binary-discrete (one fetch per time slot; PNAS'18 Problem 1), harmonic-approx (rates
    /// proportional to importance; NeurIPS'19 Prop. 9), binary-blind (BLC blind to complete
    /// observations, a baseline), or a baseline with proportional rates: uniform, change-rate,
    /// importance (a capped host keeps its cap and the rest is re-shared).
    #[arg(long, value_enum, value_name = "NAME", default_value_t = Objective::Harmonic, hide_possible_values = true, help_heading = heading::BANDWIDTH)]
    pub objective: Objective,
    /// Non-starvation floor, a share of the bandwidth
    ///
    /// BLC-eps (NeurIPS'19 supplement): every page that changes gets at least EPS x bandwidth /
    /// pages fetches per day (less where its host's cap cannot hold all floors); the objective is
    /// then optimised exactly above the floors. EPS in [0, 1).
    #[arg(long, default_value_t = 0.0, value_name = "EPS", help_heading = heading::BANDWIDTH)]
    pub floor: f64,
    /// Output folder, replaced atomically on success
    ///
    /// rates/, hosts/, rejected/ (and visits/ with --timetable), summary.json, manifest.json and
    /// _SUCCESS; a failed run leaves the previous output as it was.
    #[arg(long, default_value = "out", value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out: PathBuf,
    /// Crawlers, one output partition each
    ///
    /// Each host is crawled by exactly one crawler; rates/crawler=N/ holds crawler N's URLs.
    #[arg(long, default_value_t = 10, value_name = "N", help_heading = heading::OUTPUT)]
    pub crawlers: u32,
    /// Also write each crawler's fetches for one horizon
    ///
    /// DIR/visits/crawler=N/: integer visits per URL that maximise binary freshness of evenly
    /// spaced visits (PUC-Rio Phase 1), or with --objective harmonic and a budget that visits every
    /// changing page, minimise their harmonic penalty (below that budget every choice leaves a
    /// changing page unvisited at infinite penalty, so freshness decides), within the bandwidth
    /// and the hosts' caps; per-host schedules (--sequencing), then each crawler's fetches at
    /// --crawler-rate, never impolite (Phase 3). The other tables are the same with or without it.
    #[arg(long, overrides_with = "no_timetable", help_heading = heading::TIMETABLE)]
    pub timetable: bool,
    /// No timetable (undoes --timetable from a job file)
    #[arg(long, overrides_with = "timetable", hide_short_help = true, help_heading = heading::TIMETABLE)]
    pub no_timetable: bool,
    /// How a host's visits are ordered in time
    ///
    /// merge (PUC-Rio MERGE: each page's ideal times merged into the host's slots), mp2 (each URL
    /// evenly spaced, no merge; may break politeness), carousel (earliest deadline, PNAS'18
    /// Alg. 3), golden-ratio (Liu & Nain §1.3.4).
    #[arg(long, value_enum, value_name = "ORDER", default_value_t = Sequencing::Merge, hide_possible_values = true, help_heading = heading::TIMETABLE)]
    pub sequencing: Sequencing,
    /// Fetches per second of one crawler
    ///
    /// Default: 1.25 x bandwidth / crawlers / 86400, i.e. 25% headroom over a crawler's mean share
    /// of the bandwidth, and at least 2 / --min-delay-s (two fetches per politeness delay, to
    /// interleave hosts; no such floor with --min-delay-s 0).
    #[arg(long, value_name = "FETCHES_PER_S", help_heading = heading::TIMETABLE)]
    pub crawler_rate: Option<f64>,
    /// Horizon start, UTC: adds fetch_at timestamps
    ///
    /// RFC 3339 (e.g. 2026-11-23T00:00:00Z): the visits tables then also have a fetch_at column,
    /// start + at_s (timestamp, UTC, microseconds).
    #[arg(long, value_name = "RFC3339", help_heading = heading::TIMETABLE)]
    pub start: Option<String>,
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// Indexer capacity: recommend a crawler count
    ///
    /// Pages per day the indexer fed by the crawlers finishes: with it the summary says how many
    /// crawlers the static M/M/1/K model recommends for this bandwidth (Liu & Nain Prop. 1; see
    /// `plan-crawlers`).
    #[arg(long, value_name = "PAGES_PER_DAY", help_heading = heading::OTHER)]
    pub index_rate: Option<f64>,
    /// Indexer buffer, the page being indexed included
    #[arg(long, default_value_t = 1000, value_name = "PAGES", help_heading = heading::OTHER)]
    pub index_buffer: usize,
    /// Cost of an idle indexer [default: --index-rate]
    ///
    /// In lost pages per day (with --index-rate).
    #[arg(long, value_name = "PAGES_PER_DAY", help_heading = heading::OTHER)]
    pub index_gamma: Option<f64>,
    #[command(flatten)]
    pub job: JobArg,
}

impl RunArgs {
    /// The run's plan; fails, naming the option, on a value no run can take.
    pub fn plan(&self) -> Result<RunPlan> {
        let bandwidth = match (self.bandwidth, self.bandwidth_fraction) {
            (Some(r), _) if r.is_finite() && r > 0.0 => Bandwidth::PerDay(r),
            (Some(r), _) => {
                bail!("--bandwidth must be a positive number of fetches per day, got {r}")
            }
            (None, Some(f)) if f.is_finite() && f > 0.0 => Bandwidth::PerUrl(f),
            (None, Some(f)) => bail!("--bandwidth-fraction must be positive, got {f}"),
            (None, None) => Bandwidth::PerUrl(DEFAULT_BANDWIDTH_PER_URL),
        };
        if self.crawlers == 0 {
            bail!("--crawlers must be at least 1");
        }
        if !(self.floor >= 0.0 && self.floor < 1.0) {
            bail!(
                "--floor must be in [0, 1): it is the share of the bandwidth spread evenly as floors, got {} \
                 (--objective uniform is the policy of a floor of 1)",
                self.floor
            );
        }
        Ok(RunPlan {
            pages: self.pages.plan(None)?,
            cluster: self.runner.cluster.plan()?,
            objective: self.objective,
            bandwidth,
            floor_eps: self.floor,
            crawlers: self.crawlers,
            out: self.out.clone(),
            index: self.index_plan()?,
            timetable: self.timetable_plan()?,
            quiet: self.runner.quiet,
            options: Options::new(),
        })
    }

    fn index_plan(&self) -> Result<Option<IndexPlan>> {
        let Some(index_rate) = self.index_rate else {
            return Ok(None);
        };
        if !(index_rate.is_finite() && index_rate > 0.0) {
            bail!("--index-rate must be a positive number of pages per day, got {index_rate}");
        }
        if self.index_buffer == 0 {
            bail!("--index-buffer must be at least 1 (it counts the page being indexed)");
        }
        let gamma = self.index_gamma.unwrap_or(index_rate);
        if !(gamma.is_finite() && gamma >= 0.0) {
            bail!("--index-gamma must be a non-negative number of pages per day, got {gamma}");
        }
        Ok(Some(IndexPlan {
            index_rate,
            buffer: self.index_buffer,
            gamma,
        }))
    }

    fn timetable_plan(&self) -> Result<Option<TimetablePlan>> {
        if !self.timetable {
            if self.crawler_rate.is_some() || self.start.is_some() {
                bail!("--crawler-rate and --start describe the timetable: give --timetable too");
            }
            return Ok(None);
        }
        if let Some(c) = self.crawler_rate {
            if !(c.is_finite() && c > 0.0) {
                bail!("--crawler-rate must be a positive number of fetches per second, got {c}");
            }
        }
        let start = match &self.start {
            Some(s) => Some((
                s.clone(),
                crate::rfc3339::parse_micros(s).map_err(|e| anyhow::anyhow!("--start {s}: {e}"))?,
            )),
            None => None,
        };
        Ok(Some(TimetablePlan {
            sequencing: self.sequencing,
            crawler_rate: self.crawler_rate,
            start,
        }))
    }
}

/// Runs `revisit run`; returns the summary a person reads (process 0) or nothing (the others).
pub fn run(args: &RunArgs, options: &Options) -> Result<String> {
    let mut plan = args.plan()?;
    plan.options = options.clone();
    let out = plan.out.clone();
    Ok(crate::job::run(plan)?
        .map(|s: Summary| s.human(&out))
        .unwrap_or_default())
}
