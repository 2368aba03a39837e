//! A night of visits. Cyclic (PUC-Rio's three phases): integer visits per page with the bounds that
//! judge any timetable of them ([`plan_night`], every worker taking part), then one crawler's
//! timetable from the visits of its hosts, valued exactly ([`crawler_night`]). Rolling: one
//! crawler's fetches of the due times of its hosts' pages ([`rolling_night`]).

use serde::{Deserialize, Serialize};

use super::crawler::{crawler_phases, sequence_crawler, sequence_rolling, CrawlerHost};
use super::evaluate::TimetableValue;
use super::timetable::{host_timetable, Sequencing};
use super::visits::{
    integer_visits_from, EvenlySpaced, FirstGains, VisitObjective, VisitProblem, Visits,
};
use crate::reduce::{AllReduce, Combine};
use crate::solve::pages::Pages;
use crate::units::Seconds;

/// This worker's integer visits and the bounds every worker agrees on.
#[derive(Clone, Debug)]
pub struct Planned {
    /// Integer visits of this worker's pages (PUC-Rio Phase 1).
    pub visits: Visits,
    /// The integer visits evenly spaced: the Weak-Politeness bound of `objective` (PUC-Rio Thm 1).
    pub weak_politeness: EvenlySpaced,
    /// The best integer visits without host caps, evenly spaced: the NonPolite bound.
    pub non_polite: EvenlySpaced,
    /// What the integer visits maximise (harmonic only when asked and the budget and every host's
    /// cap can visit each changing page: otherwise every polite integer solution leaves one
    /// unvisited, at infinite harmonic cost, and binary freshness is the only finite criterion).
    pub objective: VisitObjective,
}

/// Pages that change, and how many of them their hosts' caps let a night visit, summed over workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Changing {
    pages: u64,
    visitable: u64,
}

impl Combine for Changing {
    fn combine(&mut self, other: Self) {
        self.pages += other.pages;
        self.visitable += other.visitable;
    }
}

impl Changing {
    fn of(pages: &Pages, caps: &[u32]) -> Self {
        let mut c = Changing::default();
        for (h, &cap) in caps.iter().enumerate() {
            let changing = pages.change_rate()[pages.host_pages(h)]
                .iter()
                .filter(|&&l| l > 0.0)
                .count() as u64;
            c.pages += changing;
            c.visitable += changing.min(cap as u64);
        }
        c
    }
}

/// Integer visits of `pages` for `wanted` within `budget` visits per `horizon` and each host's cap
/// in `caps` (visits per horizon), with their Weak-Politeness and non-polite bounds. Every worker
/// calls it (the searches are all-reduces); `keys` (one per page, unique across workers, e.g. URL
/// hashes) split the ties, so every count is the same whatever the number of workers.
pub fn plan_night<R: AllReduce>(
    pages: &Pages,
    caps: &[u32],
    keys: &[u64],
    budget: u64,
    horizon: Seconds,
    wanted: VisitObjective,
    reduce: &mut R,
) -> Planned {
    let changing = reduce.all_reduce(Changing::of(pages, caps));
    let every_page = budget >= changing.pages && changing.visitable == changing.pages;
    let objective = if wanted == VisitObjective::Harmonic && every_page {
        VisitObjective::Harmonic
    } else {
        VisitObjective::Staleness
    };
    let problem = VisitProblem {
        pages,
        caps,
        keys,
        horizon,
        objective,
    };
    let first = FirstGains::of(&problem);
    let visits = integer_visits_from(&problem, budget, None, &first, reduce);
    let weak_politeness =
        reduce.all_reduce(EvenlySpaced::of(pages, &visits.counts, horizon, objective));
    let free = vec![u32::MAX; pages.hosts()];
    let loose = VisitProblem {
        caps: &free,
        ..problem
    };
    // without caps the capped hosts take more, so the price is higher: start from the polite one
    let np_counts =
        integer_visits_from(&loose, budget, Some(visits.multiplier), &first, reduce).counts;
    let non_polite = reduce.all_reduce(EvenlySpaced::of(pages, &np_counts, horizon, objective));
    Planned {
        objective,
        visits,
        weak_politeness,
        non_polite,
    }
}

/// One host of a crawler's night: its visited pages (importance, change rate per day, visits).
#[derive(Clone, Copy, Debug)]
pub struct NightHost<'a> {
    pub min_delay: Seconds,
    pub importance: &'a [f64],
    pub change_rate: &'a [f64],
    pub counts: &'a [u32],
}

/// How a crawler's night is made.
#[derive(Clone, Copy, Debug)]
pub struct NightSettings {
    pub horizon: Seconds,
    pub sequencing: Sequencing,
    /// Fetches per second of the crawler.
    pub crawler_rate: f64,
}

/// What crawlers' nights add up to (combined over crawlers and workers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NightTotals {
    /// Fetches served.
    pub scheduled: u64,
    /// Planned visits no crawler could serve within the horizon.
    pub dropped: u64,
    /// Of those, visits their crawler had time for but not their host's politeness across the
    /// wrap-around to the next night.
    pub dropped_at_wrap: u64,
    /// Visits served after the horizon's end, in the next repetition's early hours.
    pub served_round_the_cycle: u64,
    /// Largest served share of a crawler's floor(c T) fetches.
    pub utilisation_max: f64,
    /// Largest delay of a fetch behind its host's plan, seconds.
    pub delay_max_s: f64,
    /// The served times' exact value (pages without a planned visit are added by whoever holds them).
    pub value: TimetableValue,
}

impl Combine for NightTotals {
    fn combine(&mut self, o: Self) {
        self.scheduled += o.scheduled;
        self.dropped += o.dropped;
        self.dropped_at_wrap += o.dropped_at_wrap;
        self.served_round_the_cycle += o.served_round_the_cycle;
        self.utilisation_max = self.utilisation_max.max(o.utilisation_max);
        self.delay_max_s = self.delay_max_s.max(o.delay_max_s);
        self.value.combine(o.value);
    }
}

/// One crawler's night: its fetches in time order, as (at_s, host index, page index within the
/// host), and what they add up to.
#[derive(Clone, Debug, Default)]
pub struct CrawlerNight {
    pub fetches: Vec<(f64, u32, u32)>,
    pub totals: NightTotals,
}

/// The night of one crawler with `hosts` (in the order that makes it reproducible): phases on
/// distinct crawler ticks, each host's timetable, then the fetches at the crawler's rate, never
/// impolite (PUC-Rio Phase 3); each page's served times valued exactly.
pub fn crawler_night(hosts: &[NightHost], s: &NightSettings) -> CrawlerNight {
    let slots: Vec<f64> = hosts
        .iter()
        .map(|h| s.horizon.0 / h.counts.iter().map(|&x| x as f64).sum::<f64>())
        .collect();
    let phases = crawler_phases(&slots, s.crawler_rate);
    let tables: Vec<_> = hosts
        .iter()
        .zip(&phases)
        .map(|(h, &phase)| host_timetable(h.counts, s.horizon, phase, s.sequencing))
        .collect();
    let crawler_hosts: Vec<CrawlerHost> = hosts
        .iter()
        .zip(&tables)
        .map(|(h, t)| CrawlerHost {
            planned_s: &t.at_s,
            min_delay: h.min_delay,
        })
        .collect();
    let night = sequence_crawler(&crawler_hosts, s.crawler_rate, s.horizon);
    // served times per page, to value the timetable exactly
    let mut served: Vec<Vec<Vec<f64>>> =
        hosts.iter().map(|h| vec![vec![]; h.counts.len()]).collect();
    let mut fetches = Vec::with_capacity(night.at_s.len());
    for k in 0..night.at_s.len() {
        let h = night.host[k] as usize;
        let page = tables[h].page[night.visit[k] as usize];
        served[h][page as usize].push(night.at_s[k]);
        fetches.push((night.at_s[k], h as u32, page));
    }
    let mut value = TimetableValue::default();
    for (h, host) in hosts.iter().enumerate() {
        for (j, times) in served[h].iter().enumerate() {
            value.add_page(host.importance[j], host.change_rate[j], times, s.horizon);
        }
    }
    CrawlerNight {
        totals: NightTotals {
            scheduled: night.scheduled(),
            dropped: night.dropped,
            dropped_at_wrap: night.dropped_at_wrap,
            served_round_the_cycle: night.served_round_the_cycle,
            utilisation_max: night.utilisation,
            delay_max_s: night.max_delay_s,
            value,
        },
        fetches,
    }
}

/// One host of a rolling night: when its first fetch may come, and each of its pages' due times
/// tonight (seconds from the night's start, ascending).
#[derive(Clone, Copy, Debug)]
pub struct DueHost<'a> {
    pub min_delay: Seconds,
    /// Its last fetch of the night before + P_h (seconds from the start; negative: no constraint).
    pub not_before_s: f64,
    /// Its pages' due times, page after page (each page's ascending).
    pub due_s: &'a [f64],
    /// How many of `due_s` each page has, in page order.
    pub due_counts: &'a [u32],
}

/// One crawler's rolling night from `hosts` (in the order that makes it reproducible): each host's
/// due times merged in time order (ties by page), then served at `crawler_rate` never earlier than
/// due nor impolitely, across the night boundary too ([`sequence_rolling`]); what does not fit is
/// dropped, to be due again tomorrow. Fetches are (at_s, host index, page index within the host).
pub fn rolling_night(hosts: &[DueHost], crawler_rate: f64, horizon: Seconds) -> CrawlerNight {
    let merged: Vec<Vec<(f64, u32)>> = hosts
        .iter()
        .map(|h| {
            let mut m: Vec<(f64, u32)> = Vec::with_capacity(h.due_s.len());
            let mut times = h.due_s.iter();
            for (page, &count) in h.due_counts.iter().enumerate() {
                m.extend(
                    times
                        .by_ref()
                        .take(count as usize)
                        .map(|&t| (t, page as u32)),
                );
            }
            m.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            m
        })
        .collect();
    let planned: Vec<Vec<f64>> = merged
        .iter()
        .map(|m| m.iter().map(|v| v.0).collect())
        .collect();
    let crawler_hosts: Vec<CrawlerHost> = hosts
        .iter()
        .zip(&planned)
        .map(|(h, p)| CrawlerHost {
            planned_s: p,
            min_delay: h.min_delay,
        })
        .collect();
    let not_before: Vec<f64> = hosts.iter().map(|h| h.not_before_s).collect();
    let night = sequence_rolling(&crawler_hosts, &not_before, crawler_rate, horizon);
    let fetches = (0..night.at_s.len())
        .map(|k| {
            let h = night.host[k] as usize;
            (
                night.at_s[k],
                h as u32,
                merged[h][night.visit[k] as usize].1,
            )
        })
        .collect();
    CrawlerNight {
        totals: NightTotals {
            scheduled: night.scheduled(),
            dropped: night.dropped,
            dropped_at_wrap: 0,
            served_round_the_cycle: 0,
            utilisation_max: night.utilisation,
            delay_max_s: night.max_delay_s,
            value: TimetableValue::default(),
        },
        fetches,
    }
}
