//! `revisit run`: every URL's crawl rate, per-host budgets and one partition per crawler.

use std::path::PathBuf;

use anyhow::{bail, Result};
use revisit_core::objective::Objective;
use revisit_core::schedule::timetable::Sequencing;

use super::shared::{JobArg, PageArgs};
use crate::plan::run::{
    output_folder, Bandwidth, IndexPlan, PreviousNight, RunPlan, SchedulePlan, StartSource,
    TimetableMode, TimetablePlan, DEFAULT_BANDWIDTH_PER_URL, DEFAULT_CRAWLERS,
};
use crate::report::run::Summary;

/// Options of `revisit run`.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub job: JobArg,
    #[command(flatten)]
    pub pages: PageArgs,
    /// Total crawl bandwidth, fetches per day over all crawlers.
    #[arg(
        long,
        value_name = "FETCHES_PER_DAY",
        conflicts_with = "bandwidth_fraction"
    )]
    pub bandwidth: Option<f64>,
    /// Bandwidth as a multiple of the number of valid URLs (0.2 = one fetch per URL every 5 days on
    /// average). Default 0.2 when --bandwidth is not given.
    #[arg(long, value_name = "MULTIPLE")]
    pub bandwidth_fraction: Option<f64>,
    /// What "fresh" means: harmonic (staleness grows with every missed change; LambdaCrawl,
    /// NeurIPS'19), binary (fraction of time pages are fresh with Poisson crawls; Azar et al.,
    /// PNAS'18), binary-fixed (the same with evenly spaced crawls; Cho & Garcia-Molina, Frontera),
    /// binary-discrete (one fetch per time slot; PNAS'18 Problem 1), harmonic-approx (rates
    /// proportional to importance; NeurIPS'19 Prop. 9), or a baseline: uniform, change-rate,
    /// importance (proportional rates; a capped host keeps its cap and the rest is re-shared).
    #[arg(long, value_enum, default_value_t = Objective::Harmonic)]
    pub objective: Objective,
    /// Non-starvation floor (BLC-eps, NeurIPS'19 supplement): every page that changes gets at least
    /// EPS x bandwidth / pages fetches per day (less where its host's cap cannot hold all floors);
    /// the objective is then optimised exactly above the floors. EPS in [0, 1).
    #[arg(long, default_value_t = 0.0, value_name = "EPS")]
    pub floor: f64,
    /// Number of crawlers; each host is crawled by exactly one (at most the number of hosts, or 10).
    #[arg(long, default_value_t = DEFAULT_CRAWLERS)]
    pub crawlers: u32,
    /// Output folder (replaced atomically when the run succeeds; one run at a time: a second run
    /// into the same folder refuses, naming the first).
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Indexer capacity, pages per day: with it the summary says how many crawlers the static
    /// M/M/1/K model recommends for this bandwidth (Liu & Nain Prop. 1; see `plan-crawlers`).
    #[arg(long, value_name = "PAGES_PER_DAY")]
    pub index_rate: Option<f64>,
    /// Indexer buffer in pages, the page being indexed included (with --index-rate).
    #[arg(long, default_value_t = 1000)]
    pub index_buffer: usize,
    /// Cost of an idle indexer in lost pages per day (with --index-rate; default: the index rate).
    #[arg(long)]
    pub index_gamma: Option<f64>,
    /// Also write each crawler's fetches for the night [--start, --start + horizon),
    /// DIR/visits/crawler=NNN/: every fetch due in the night for every URL (each due every
    /// 1 / crawl_rate after its last fetch), polite per host (across the night boundary too) and at
    /// each crawler's --crawler-rate; what cannot be served stays due. With --cyclic, one night of
    /// integer visits repeated every horizon instead (PUC-Rio).
    #[arg(long, overrides_with = "no_timetable")]
    pub timetable: bool,
    /// No timetable (undoes --timetable from a job file).
    #[arg(long, overrides_with = "timetable", hide_short_help = true)]
    pub no_timetable: bool,
    /// With --timetable: one night of integer visits per URL that repeats every horizon (PUC-Rio
    /// Phase 1: maximise binary freshness of evenly spaced visits, or with --objective harmonic and
    /// a budget that visits every changing page, their harmonic penalty), per-host schedules
    /// (--sequencing), each crawler's fetches at --crawler-rate. A page needing less than one visit
    /// a night gets none: use it to reproduce the paper, not for nightly crawling.
    #[arg(long, requires = "timetable")]
    pub cyclic: bool,
    /// How a host's visits are ordered in time (with --cyclic): merge (PUC-Rio MERGE), mp2
    /// (each URL evenly spaced, no merge), carousel (earliest deadline, PNAS'18 Alg. 3),
    /// golden-ratio (Liu & Nain §1.3.4).
    #[arg(long, value_enum, default_value_t = Sequencing::Merge)]
    pub sequencing: Sequencing,
    /// Fetches per second one crawler can make (with --timetable). Default: 1.25 x bandwidth /
    /// crawlers / 86400, i.e. 25% headroom over a crawler's mean share of the bandwidth, and at
    /// least 2 / --min-delay-s (two fetches per politeness delay, to interleave hosts).
    #[arg(long, value_name = "FETCHES_PER_S")]
    pub crawler_rate: Option<f64>,
    /// Start of the night planned, RFC 3339 (e.g. 2026-11-23T00:00:00Z): every URL's next_fetch_at
    /// counts from it, the timetable covers [start, start + horizon). Default: with --previous, the
    /// night after it; else 00:00 UTC today.
    #[arg(long, value_name = "RFC3339")]
    pub start: Option<String>,
    /// Last night's output folder (read only): every URL's last fetch and next due time continue
    /// from it; URLs no longer in the pages are dropped (and counted), new ones are phased in.
    #[arg(long, value_name = "DIR")]
    pub previous: Option<PathBuf>,
    /// Fetch logs (Parquet or CSV: url, fetched_at timestamp or fetched_at_s, optional ok and
    /// host): the fetches that happened. They become each URL's last_fetch_at; a failed or
    /// missing fetch leaves its URL overdue. Without a log, last night's visits count as made (or,
    /// if it made no timetable, its due times as fetched). Repeat the option for several files.
    #[arg(long, value_name = "LOG")]
    pub fetched: Vec<String>,
    /// Fetch every URL at most this often, e.g. 1h (caps fetches per change); a page's own
    /// min_interval_s column wins.
    #[arg(long, value_name = "DURATION")]
    pub min_interval: Option<String>,
    /// Fetch every URL at least this often, e.g. 30d (how a crawler notices pages that vanish,
    /// even ones that never change); a page's own max_interval_s column wins.
    #[arg(long, value_name = "DURATION")]
    pub max_interval: Option<String>,
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
            cluster: self.pages.cluster.plan()?,
            objective: self.objective,
            bandwidth,
            floor_eps: self.floor,
            crawlers: self.crawlers,
            out: output_folder(&self.out)?,
            index: self.index_plan()?,
            timetable: self.timetable_plan()?,
            quiet: self.pages.quiet,
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
pub fn run(args: &RunArgs) -> Result<String> {
    let plan = args.plan()?;
    let out = plan.out.clone();
    Ok(crate::job::run(plan)?
        .map(|s: Summary| s.human(&out))
        .unwrap_or_default())
}
