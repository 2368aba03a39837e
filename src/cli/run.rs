//! `revisit run`: every URL's crawl rate, per-host budgets and one partition per crawler.

use std::path::PathBuf;

use anyhow::{bail, Result};
use revisit_core::objective::Objective;
use revisit_core::schedule::timetable::Sequencing;

use super::heading;
use super::shared::{JobArg, PageArgs, RunnerArgs};
use crate::plan::run::{
    output_folder, Bandwidth, IndexPlan, PreviousNight, RunPlan, SchedulePlan, StartSource,
    TimetableMode, TimetablePlan, DEFAULT_BANDWIDTH_PER_URL, DEFAULT_CRAWLERS,
};
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
    /// _SUCCESS; a failed run leaves the previous output as it was. One run at a time: a second
    /// run into the same folder refuses, naming the first.
    #[arg(long, default_value = "out", value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out: PathBuf,
    /// Crawlers, one output partition each
    ///
    /// Each host is crawled by exactly one crawler (at most the number of hosts, or 10);
    /// rates/crawler=N/ holds crawler N's URLs.
    #[arg(long, default_value_t = DEFAULT_CRAWLERS, value_name = "N", help_heading = heading::OUTPUT)]
    pub crawlers: u32,
    /// Also write each crawler's fetches for the night
    ///
    /// DIR/visits/crawler=N/: every fetch due in [--start, --start + horizon) for every URL (each
    /// due every 1 / crawl_rate after the due time its last fetch served), polite per host (across
    /// the night boundary too) and at each crawler's --crawler-rate; what cannot be served stays
    /// due, and is counted. With --cyclic, one night of integer visits repeated every horizon
    /// instead (PUC-Rio).
    #[arg(long, overrides_with = "no_timetable", help_heading = heading::TIMETABLE)]
    pub timetable: bool,
    /// No timetable (undoes --timetable from a job file)
    #[arg(long, overrides_with = "timetable", hide_short_help = true, help_heading = heading::TIMETABLE)]
    pub no_timetable: bool,
    /// One cycle of integer visits repeated every horizon (PUC-Rio)
    ///
    /// With --timetable. Phase 1 maximises binary freshness of evenly spaced visits (or with
    /// --objective harmonic and a budget that visits every changing page, their harmonic penalty)
    /// within the bandwidth and the hosts' caps; per-host schedules (--sequencing); each
    /// crawler's fetches at --crawler-rate. A page needing less than one visit a night gets none: use it to reproduce
    /// the paper, not for nightly crawling.
    #[arg(long, requires = "timetable", help_heading = heading::TIMETABLE)]
    pub cyclic: bool,
    /// Order of a host's visits, with --cyclic
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
    /// Night start, UTC [default: after --previous or 00:00 today]
    ///
    /// RFC 3339 (e.g. 2026-11-23T00:00:00Z): every URL's next_fetch_at counts from it, and the
    /// timetable covers [start, start + horizon). With --previous, the night after it.
    #[arg(long, value_name = "RFC3339", help_heading = heading::TIMETABLE)]
    pub start: Option<String>,
    /// Last night's output folder, to continue from (read only)
    ///
    /// Every URL's last fetch and next due time continue from it; URLs no longer in the pages are
    /// dropped (and counted), new ones are phased in. It must be a complete revisit output over
    /// the same horizon.
    #[arg(long, value_name = "DIR", help_heading = heading::INPUT)]
    pub previous: Option<PathBuf>,
    /// Fetch log: the fetches that happened (repeatable)
    ///
    /// Parquet or CSV: url, fetched_at (timestamp) or fetched_at_s (seconds since the epoch),
    /// optional ok and host. They become each URL's last_fetch_at; a failed or missing fetch leaves
    /// its URL overdue. Without a log, last night's visits count as made (or, if it made no
    /// timetable, its due times as fetched).
    #[arg(long, value_name = "LOG", help_heading = heading::INPUT)]
    pub fetched: Vec<String>,
    /// Shortest refetch interval, e.g. 1h
    ///
    /// A page's min_interval_s column wins. Caps fetches per change; solved exactly as a bound on every URL's rate.
    #[arg(long, value_name = "DURATION", help_heading = heading::BANDWIDTH)]
    pub min_interval: Option<String>,
    /// Longest refetch interval, e.g. 30d
    ///
    /// A page's max_interval_s column wins. How a crawler notices pages that vanish, even ones that never change; solved exactly as a
    /// bound on every URL's rate. The summary counts URLs their host's politeness holds back.
    #[arg(long, value_name = "DURATION", help_heading = heading::BANDWIDTH)]
    pub max_interval: Option<String>,
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
        let pages = self.pages.plan(None)?;
        let schedule = self.schedule_plan(pages.horizon.0)?;
        Ok(RunPlan {
            pages,
            schedule,
            cluster: self.runner.cluster.plan()?,
            objective: self.objective,
            bandwidth,
            floor_eps: self.floor,
            crawlers: self.crawlers,
            out: output_folder(&self.out)?,
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
            if self.crawler_rate.is_some() {
                bail!("--crawler-rate describes the timetable: give --timetable too");
            }
            return Ok(None);
        }
        if let Some(c) = self.crawler_rate {
            if !(c.is_finite() && c > 0.0) {
                bail!("--crawler-rate must be a positive number of fetches per second, got {c}");
            }
        }
        Ok(Some(TimetablePlan {
            mode: if self.cyclic {
                TimetableMode::Cyclic(self.sequencing)
            } else {
                TimetableMode::Rolling
            },
            crawler_rate: self.crawler_rate,
        }))
    }

    /// The night: its start (given, the night after --previous, or today), the state it continues
    /// from (checked: a complete output over the same horizon), and the interval bounds.
    fn schedule_plan(&self, horizon_s: f64) -> Result<SchedulePlan> {
        let previous = match &self.previous {
            Some(dir) => {
                let p = crate::io::state_in::open(dir)?;
                if p.horizon_s != horizon_s {
                    bail!(
                        "--previous {}: planned a horizon of {} s, this run {horizon_s} s: a night \
                         continues a night of the same length (give --horizon-s {})",
                        dir.display(),
                        p.horizon_s,
                        p.horizon_s
                    );
                }
                Some(PreviousNight {
                    dir: dir.clone(),
                    start_us: p.start_us,
                    horizon_s: p.horizon_s,
                    visits: p.visits,
                })
            }
            None => None,
        };
        let (start_us, start_source) = match (&self.start, &previous) {
            (Some(s), _) => (
                crate::time::parse_timestamp_us(s)
                    .map_err(|e| anyhow::anyhow!("--start {s}: {e}"))?,
                StartSource::Given,
            ),
            (None, Some(p)) => (
                crate::time::add_seconds_us(p.start_us, p.horizon_s),
                StartSource::AfterPrevious,
            ),
            (None, None) => (crate::time::today_utc_us(), StartSource::Today),
        };
        if let Some(p) = &previous {
            if start_us < p.start_us {
                bail!(
                    "--start {} is before the night --previous planned ({}): a run continues \
                     from an earlier night",
                    crate::time::format_timestamp(start_us),
                    crate::time::format_timestamp(p.start_us)
                );
            }
        }
        let duration = |flag: &str, v: &Option<String>| -> Result<Option<f64>> {
            v.as_deref()
                .map(|t| {
                    crate::time::parse_duration_s(t).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
                })
                .transpose()
        };
        let min_interval_s = duration("--min-interval", &self.min_interval)?;
        let max_interval_s = duration("--max-interval", &self.max_interval)?;
        if let (Some(min), Some(max)) = (min_interval_s, max_interval_s) {
            if min > max {
                bail!("--min-interval ({min} s) is longer than --max-interval ({max} s)");
            }
        }
        Ok(SchedulePlan {
            start_us,
            start_source,
            previous,
            fetched: self.fetched.clone(),
            min_interval_s,
            max_interval_s,
        })
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
