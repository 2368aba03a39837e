//! The plan of `revisit run`.

use std::path::PathBuf;

use revisit_core::capacity::{recommended_crawlers, Quantity};
use revisit_core::objective::Objective;
use revisit_core::schedule::crawler;
use revisit_core::schedule::timetable::Sequencing;
use revisit_core::schedule::visits::VisitObjective;
use revisit_core::units::Seconds;

use super::{Cluster, Options, PagesPlan};

/// The bandwidth when none is given: one fetch per URL every five days, on average.
pub const DEFAULT_BANDWIDTH_PER_URL: f64 = 0.2;

/// Crawlers when none are given; also as many as a run may have beyond its hosts (some idle).
pub const DEFAULT_CRAWLERS: u32 = 10;

/// Total crawl bandwidth, as given: fetches per day, or a multiple of the number of valid URLs
/// (known only once the pages are read).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bandwidth {
    PerDay(f64),
    PerUrl(f64),
}

impl Bandwidth {
    /// Fetches per day for `urls` valid URLs.
    pub fn per_day(self, urls: u64) -> f64 {
        match self {
            Bandwidth::PerDay(r) => r,
            Bandwidth::PerUrl(f) => f * urls as f64,
        }
    }
}

/// What `run` does.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPlan {
    pub pages: PagesPlan,
    pub cluster: Cluster,
    pub objective: Objective,
    pub bandwidth: Bandwidth,
    /// BLC-eps's eps (0: no floors).
    pub floor_eps: f64,
    pub crawlers: u32,
    pub out: PathBuf,
    /// The indexer model behind `recommended_crawlers` (with --index-rate).
    pub index: Option<IndexPlan>,
    /// The rolling schedule: the night planned and what it continues from.
    pub schedule: SchedulePlan,
    /// Each crawler's fetches (with --timetable).
    pub timetable: Option<TimetablePlan>,
    /// No progress lines.
    pub quiet: bool,
    /// Every option as resolved, for provenance.
    pub options: Options,
}

impl RunPlan {
    /// Refuses more crawlers than hosts (beyond the default fleet): a crawler without hosts gets
    /// empty partitions, and `--crawlers 100000` on 100 hosts would write 100,000 files for nothing.
    pub fn check_crawlers(&self, hosts: u64) -> anyhow::Result<()> {
        if self.crawlers as u64 > hosts.max(DEFAULT_CRAWLERS as u64) {
            anyhow::bail!(
                "--crawlers {} is more than the {hosts} hosts of the input: each host has exactly one crawler, so at most {} crawlers get work; give --crawlers {} or fewer",
                self.crawlers,
                hosts,
                hosts.max(DEFAULT_CRAWLERS as u64)
            );
        }
        Ok(())
    }

    /// What the integer visits pursue: [`VisitObjective::wanted_for`] the run's objective.
    pub fn visit_objective(&self) -> VisitObjective {
        VisitObjective::wanted_for(self.objective)
    }
}

/// The indexer a run's crawlers feed (Liu & Nain §1.2): pages per day, buffer, idle cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexPlan {
    pub index_rate: f64,
    pub buffer: usize,
    pub gamma: f64,
}

impl IndexPlan {
    /// The static optimum (Prop. 1) for crawlers that each deliver `arrival_per_crawler` pages per
    /// day: (crawlers, cost in lost pages per day); an error names the options to change.
    pub fn recommend(&self, arrival_per_crawler: f64) -> anyhow::Result<(usize, f64)> {
        recommended_crawlers(
            arrival_per_crawler,
            self.index_rate,
            self.buffer,
            self.gamma,
        )
        .map_err(|e| {
            let options: Vec<&str> = e
                .quantities()
                .into_iter()
                .map(|q| match q {
                    Quantity::ArrivalRate => "--bandwidth / --crawlers (pages per crawler)",
                    Quantity::IndexRate => "--index-rate",
                    Quantity::Buffer => "--index-buffer",
                    Quantity::IdleCost => "--index-gamma",
                    Quantity::Crawlers => "--crawlers",
                })
                .collect();
            anyhow::anyhow!("{}: {e}", options.join(", "))
        })
    }
}

/// Where the night's start came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartSource {
    /// `--start`.
    Given,
    /// The previous run's start plus its horizon: the night after it.
    AfterPrevious,
    /// 00:00 UTC today.
    Today,
}

/// The night a run plans and the state it continues from.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulePlan {
    /// The night's start, microseconds since the Unix epoch, and where it came from.
    pub start_us: i64,
    pub start_source: StartSource,
    /// The previous run's output (read only), with the night it planned.
    pub previous: Option<PreviousNight>,
    /// Fetch logs: the fetches that happened (empty: the previous night's visits, or without
    /// them its due times, count as fetched as planned; see [`SchedulePlan::fetches`]).
    pub fetched: Vec<String>,
    /// Refetch-interval bounds of URLs without their own, seconds.
    pub min_interval_s: Option<f64>,
    pub max_interval_s: Option<f64>,
}

/// The previous run a night continues from.
#[derive(Clone, Debug, PartialEq)]
pub struct PreviousNight {
    pub dir: PathBuf,
    pub start_us: i64,
    pub horizon_s: f64,
    /// Its visits files (empty: it made no timetable).
    pub visits: Vec<PathBuf>,
}

/// What tells a night which fetches happened before it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fetches<'a> {
    /// Nothing: a first night, no log.
    Unknown,
    /// `--fetched`: logs of the fetches that happened (a fetch they do not show did not).
    Logged(&'a [String]),
    /// No log, a previous timetable: its visits, each taken as made (a due fetch it could not
    /// serve stays due).
    PlannedVisits(&'a [PathBuf]),
    /// No log, no previous timetable: the previous night's due times, each taken as fetched.
    PlannedDueTimes,
}

impl Fetches<'_> {
    /// Whether the fetches come as rows to read (a log or visits tables).
    pub fn has_rows(&self) -> bool {
        matches!(self, Fetches::Logged(_) | Fetches::PlannedVisits(_))
    }

    /// The name the summary gives them.
    pub fn name(&self) -> &'static str {
        match self {
            Fetches::Unknown => "none",
            Fetches::Logged(_) => "fetched",
            Fetches::PlannedVisits(_) => "previous_visits",
            Fetches::PlannedDueTimes => "previous_due_times",
        }
    }
}

impl SchedulePlan {
    /// Where the night learns which fetches happened.
    pub fn fetches(&self) -> Fetches<'_> {
        match (&self.previous, self.fetched.is_empty()) {
            (_, false) => Fetches::Logged(&self.fetched),
            (Some(p), true) if !p.visits.is_empty() => Fetches::PlannedVisits(&p.visits),
            (Some(_), true) => Fetches::PlannedDueTimes,
            (None, true) => Fetches::Unknown,
        }
    }

    /// The least and largest crawl rate the interval bounds allow, fetches per day (0 and +inf
    /// where unbounded).
    pub fn rate_bounds(&self) -> (f64, f64) {
        (
            self.max_interval_s
                .map_or(0.0, |s| revisit_core::units::SECONDS_PER_DAY / s),
            self.min_interval_s
                .map_or(f64::INFINITY, |s| revisit_core::units::SECONDS_PER_DAY / s),
        )
    }
}

/// How a night's fetches are laid out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimetableMode {
    /// Every fetch due tonight, for every URL, continuing from the previous night.
    Rolling,
    /// One night of integer visits repeated every horizon (PUC-Rio), its hosts' visits ordered by
    /// the sequencing.
    Cyclic(Sequencing),
}

/// How crawler timetables are made.
#[derive(Clone, Debug, PartialEq)]
pub struct TimetablePlan {
    pub mode: TimetableMode,
    /// Fetches per second of one crawler, if given (else [`crawler::default_rate`]).
    pub crawler_rate: Option<f64>,
}

impl TimetablePlan {
    /// Fetches per second of one crawler: as given, else [`crawler::default_rate`] for this
    /// bandwidth, crawler count and default politeness delay.
    pub fn crawler_rate(&self, bandwidth_per_day: f64, crawlers: u32, min_delay: Seconds) -> f64 {
        self.crawler_rate
            .unwrap_or_else(|| crawler::default_rate(bandwidth_per_day, crawlers, min_delay))
    }
}

/// The output folder as an absolute path without `.` or `..` (what every process of a cluster
/// compares, and what the lock and the staging folder sit beside).
pub fn output_folder(out: &std::path::Path) -> anyhow::Result<PathBuf> {
    use std::path::Component;
    let absolute =
        std::path::absolute(out).map_err(|e| anyhow::anyhow!("--out {}: {e}", out.display()))?;
    let mut clean = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            c => clean.push(c),
        }
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_folder_is_absolute_and_clean() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            output_folder(std::path::Path::new("out")).unwrap(),
            cwd.join("out")
        );
        assert_eq!(
            output_folder(std::path::Path::new("./a/../out/")).unwrap(),
            cwd.join("out")
        );
        assert_eq!(output_folder(std::path::Path::new(".")).unwrap(), cwd);
    }

    #[test]
    fn a_per_url_bandwidth_scales_with_the_pages() {
        assert_eq!(Bandwidth::PerUrl(0.2).per_day(20_000), 4_000.0);
        assert_eq!(Bandwidth::PerDay(123.0).per_day(20_000), 123.0);
    }

    #[test]
    fn the_crawler_rate_is_given_or_derived() {
        let t = TimetablePlan {
            mode: TimetableMode::Rolling,
            crawler_rate: None,
        };
        // 4,000 fetches a day on 10 crawlers: 1.25 x 400 / 86,400, but at least 2 per 15 s
        let derived = t.crawler_rate(4_000.0, 10, Seconds(15.0));
        assert_eq!(derived, 2.0 / 15.0);
        let busy = t.crawler_rate(8_640_000.0, 10, Seconds(15.0));
        assert!((busy - 1.25 * 10.0).abs() < 1e-12);
        let given = TimetablePlan {
            crawler_rate: Some(3.0),
            ..t
        };
        assert_eq!(given.crawler_rate(4_000.0, 10, Seconds(15.0)), 3.0);
    }
}
