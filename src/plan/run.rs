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
    /// Each crawler's timetable (with --timetable).
    pub timetable: Option<TimetablePlan>,
    /// No progress lines.
    pub quiet: bool,
    /// Every option as resolved, for provenance.
    pub options: Options,
}

impl RunPlan {
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

/// How crawler timetables are made.
#[derive(Clone, Debug, PartialEq)]
pub struct TimetablePlan {
    pub sequencing: Sequencing,
    /// Fetches per second of one crawler, if given (else [`crawler::default_rate`]).
    pub crawler_rate: Option<f64>,
    /// The horizon's start, as given (RFC 3339) and in microseconds since the Unix epoch.
    pub start: Option<(String, i64)>,
}

impl TimetablePlan {
    /// Fetches per second of one crawler: as given, else [`crawler::default_rate`] for this
    /// bandwidth, crawler count and default politeness delay.
    pub fn crawler_rate(&self, bandwidth_per_day: f64, crawlers: u32, min_delay: Seconds) -> f64 {
        self.crawler_rate
            .unwrap_or_else(|| crawler::default_rate(bandwidth_per_day, crawlers, min_delay))
    }

    /// The horizon's start in microseconds since the epoch, if given.
    pub fn start_us(&self) -> Option<i64> {
        self.start.as_ref().map(|s| s.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_per_url_bandwidth_scales_with_the_pages() {
        assert_eq!(Bandwidth::PerUrl(0.2).per_day(20_000), 4_000.0);
        assert_eq!(Bandwidth::PerDay(123.0).per_day(20_000), 123.0);
    }

    #[test]
    fn the_crawler_rate_is_given_or_derived() {
        let t = TimetablePlan {
            sequencing: Sequencing::Merge,
            crawler_rate: None,
            start: None,
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
