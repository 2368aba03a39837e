//! `run --timetable`: integer visits over the workers' hosts, then each crawler's timetable built
//! by its writer from the hosts it receives (DESIGN §3). The math is in [`revisit_core::schedule`]; this
//! file moves hosts to their crawler's writer, orders them canonically and writes the table.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::arrange::{url_key, Arranged, URL_PREFETCH_DISTANCE};
use revisit_core::exact_sum::ExactSum;
use crate::io::manifest::FileEntry;
use revisit_core::schedule::crawler::{crawler_phases, sequence_crawler, CrawlerHost};
use revisit_core::schedule::evaluate::evaluate_page;
use revisit_core::schedule::timetable::{host_timetable, Sequencing};
use revisit_core::schedule::visits::{
    host_visit_cap, integer_visits_from, periodic_staleness, visit_budget, EvenlySpaced,
    FirstGains, VisitObjective, VisitProblem, Visits,
};
use revisit_core::solve::arena::Arena;
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::units::Seconds;

/// This worker's integer visits and the bounds every worker agrees on.
pub struct Planned {
    /// Integer visits of this worker's pages (PUC-Rio Phase 1).
    pub visits: Visits,
    /// The integer visits evenly spaced: the Weak-Politeness bound of `objective`.
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
    fn of(arena: &Arena, caps: &[u32]) -> Self {
        let mut c = Changing::default();
        for (h, &cap) in caps.iter().enumerate() {
            let pages = arena.change_rate[arena.host_pages(h)]
                .iter()
                .filter(|&&l| l > 0.0)
                .count() as u64;
            c.pages += pages;
            c.visitable += pages.min(cap as u64);
        }
        c
    }
}

/// Solves the integer problem on the workers' pages (every worker calls it; `reduce` combines).
///
/// Caps are floor(T / P_h) per host, the budget floor(R T); page keys are URL hashes, so the tie
/// split and hence every count is the same whatever the number of workers.
pub fn plan<R: AllReduce>(
    arranged: &Arranged,
    bandwidth_per_day: f64,
    horizon: Seconds,
    wanted: VisitObjective,
    reduce: &mut R,
) -> Planned {
    let arena = &arranged.arena;
    let caps: Vec<u32> = arranged
        .host_delays
        .iter()
        .map(|&d| host_visit_cap(horizon, d))
        .collect();
    let keys: Vec<u64> = (0..arena.pages())
        .map(|i| {
            arranged.prefetch_url(i + URL_PREFETCH_DISTANCE);
            url_key(arranged.url_bytes(i))
        })
        .collect();
    let budget = visit_budget(bandwidth_per_day, horizon);
    let changing = reduce.all_reduce(Changing::of(arena, &caps));
    let every_page = budget >= changing.pages && changing.visitable == changing.pages;
    let objective = if wanted == VisitObjective::Harmonic && every_page {
        VisitObjective::Harmonic
    } else {
        VisitObjective::Staleness
    };
    let problem = VisitProblem {
        arena,
        caps: &caps,
        keys: &keys,
        horizon,
        objective,
    };
    let first = FirstGains::of(&problem);
    let visits = integer_visits_from(&problem, budget, None, &first, reduce);
    let weak_politeness =
        reduce.all_reduce(EvenlySpaced::of(arena, &visits.counts, horizon, objective));
    let free = vec![u32::MAX; arena.hosts()];
    let loose = VisitProblem {
        caps: &free,
        ..problem
    };
    // without caps the capped hosts take more, so the price is higher: start from the polite one
    let np_counts =
        integer_visits_from(&loose, budget, Some(visits.multiplier), &first, reduce).counts;
    let non_polite = reduce.all_reduce(EvenlySpaced::of(arena, &np_counts, horizon, objective));
    Planned {
        objective,
        visits,
        weak_politeness,
        non_polite,
    }
}

/// One host's visited pages, sent to its crawler's writer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitHost {
    /// 128-bit host identity: the writer orders hosts by it, whatever worker sent them.
    pub id: u128,
    pub name: String,
    pub min_delay_s: f64,
    /// The host's pages with at least one visit, in canonical order.
    pub urls: Vec<String>,
    pub importance: Vec<f64>,
    pub change_rate: Vec<f64>,
    pub counts: Vec<u32>,
}

/// Hosts of one crawler from one worker.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitBatch {
    /// The writer worker.
    pub dest: u32,
    pub hosts: Vec<VisitHost>,
}

impl VisitHost {
    /// Host `h` of `arranged` with its pages' visit counts; None if it has no visit.
    pub fn of(arranged: &Arranged, counts: &[u32], h: usize) -> Option<VisitHost> {
        let a = &arranged.arena;
        let mut host = VisitHost {
            id: arranged.host_ids[h],
            name: arranged.host_names[h].clone(),
            min_delay_s: arranged.host_delays[h].0,
            ..Default::default()
        };
        for i in a.host_pages(h) {
            if counts[i] > 0 {
                host.urls
                    .push(String::from_utf8_lossy(arranged.url_bytes(i)).into_owned());
                host.importance.push(a.importance[i]);
                host.change_rate.push(a.change_rate[i]);
                host.counts.push(counts[i]);
            }
        }
        (!host.counts.is_empty()).then_some(host)
    }

    /// Bytes of text, to cut batches.
    pub fn text_bytes(&self) -> usize {
        self.urls.iter().map(String::len).sum::<usize>() + self.name.len()
    }
}

/// Staleness sum mu S(0) of this worker's pages that get no visit (they are never fresh once they
/// change); the visited pages are valued by their crawler's writer.
pub fn unvisited_staleness(arranged: &Arranged, counts: &[u32], horizon: Seconds) -> ExactSum {
    let a = &arranged.arena;
    let mut s = ExactSum::default();
    for (i, &k) in counts.iter().enumerate() {
        if k == 0 {
            s.add(a.importance[i] * periodic_staleness(a.change_rate[i], horizon.days(), 0));
        }
    }
    s
}

/// What the crawlers' timetables add up to (combined over writers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitTotals {
    /// Fetches in the visits tables.
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
    /// sum mu x exact staleness of the served times (visited pages; unvisited ones added apart).
    pub staleness: ExactSum,
    /// sum mu x exact harmonic penalty of the served times, over the pages with a fetch or no change.
    pub harmonic: ExactSum,
    /// Pages that change, were planned a visit and got no fetch (all dropped): infinite penalty.
    pub harmonic_starved: u64,
}

impl Combine for VisitTotals {
    fn combine(&mut self, o: Self) {
        self.scheduled += o.scheduled;
        self.dropped += o.dropped;
        self.dropped_at_wrap += o.dropped_at_wrap;
        self.served_round_the_cycle += o.served_round_the_cycle;
        self.utilisation_max = self.utilisation_max.max(o.utilisation_max);
        self.delay_max_s = self.delay_max_s.max(o.delay_max_s);
        self.staleness.merge(&o.staleness);
        self.harmonic.merge(&o.harmonic);
        self.harmonic_starved += o.harmonic_starved;
    }
}

/// How a crawler's timetable is made and stamped.
#[derive(Clone, Copy, Debug)]
pub struct TimetableParams {
    pub horizon: Seconds,
    pub sequencing: Sequencing,
    /// Fetches per second of one crawler.
    pub crawler_rate: f64,
    /// Horizon start, microseconds since the Unix epoch (`--start`).
    pub start_us: Option<i64>,
}

/// One crawler's fetches in time order: (at_s, host index, page index within the host's list).
pub struct CrawlerNight {
    pub hosts: Vec<VisitHost>,
    pub fetches: Vec<(f64, u32, u32)>,
    pub totals: VisitTotals,
}

/// Builds the timetable of one crawler from every host it received: hosts in identity order,
/// phases on distinct crawler ticks, each host's timetable, then Phase 3 at the crawler rate.
pub fn crawler_night(batches: Vec<VisitBatch>, p: &TimetableParams) -> CrawlerNight {
    let mut hosts: Vec<VisitHost> = batches.into_iter().flat_map(|b| b.hosts).collect();
    hosts.sort_unstable_by_key(|h| h.id);
    let slots: Vec<f64> = hosts
        .iter()
        .map(|h| p.horizon.0 / h.counts.iter().map(|&x| x as f64).sum::<f64>())
        .collect();
    let phases = crawler_phases(&slots, p.crawler_rate);
    let tables: Vec<_> = hosts
        .iter()
        .zip(&phases)
        .map(|(h, &phase)| host_timetable(&h.counts, p.horizon, phase, p.sequencing))
        .collect();
    let crawler_hosts: Vec<CrawlerHost> = hosts
        .iter()
        .zip(&tables)
        .map(|(h, t)| CrawlerHost {
            planned_s: &t.at_s,
            min_delay: Seconds(h.min_delay_s),
        })
        .collect();
    let night = sequence_crawler(&crawler_hosts, p.crawler_rate, p.horizon);
    // served times per page, to value the timetable exactly
    let mut served: Vec<Vec<Vec<f64>>> = hosts.iter().map(|h| vec![vec![]; h.urls.len()]).collect();
    let mut fetches = Vec::with_capacity(night.at_s.len());
    for k in 0..night.at_s.len() {
        let h = night.host[k] as usize;
        let page = tables[h].page[night.visit[k] as usize];
        served[h][page as usize].push(night.at_s[k]);
        fetches.push((night.at_s[k], h as u32, page));
    }
    let (mut staleness, mut harmonic, mut harmonic_starved) =
        (ExactSum::default(), ExactSum::default(), 0);
    for (h, host) in hosts.iter().enumerate() {
        for (j, times) in served[h].iter().enumerate() {
            let v = evaluate_page(times, host.change_rate[j], p.horizon);
            staleness.add(host.importance[j] * v.stale);
            if v.harmonic.is_finite() {
                harmonic.add(host.importance[j] * v.harmonic);
            } else {
                harmonic_starved += 1;
            }
        }
    }
    CrawlerNight {
        totals: VisitTotals {
            scheduled: night.scheduled(),
            dropped: night.dropped,
            dropped_at_wrap: night.dropped_at_wrap,
            served_round_the_cycle: night.served_round_the_cycle,
            utilisation_max: night.utilisation,
            delay_max_s: night.max_delay_s,
            staleness,
            harmonic,
            harmonic_starved,
        },
        hosts,
        fetches,
    }
}

/// Writes `visits/crawler=NNN/part-00000.parquet` of one crawler; returns its entry and totals.
pub fn write_crawler_visits(
    staging: &Path,
    width: usize,
    crawler: u32,
    batches: Vec<VisitBatch>,
    params: &TimetableParams,
    metadata: &[(String, String)],
) -> Result<(FileEntry, VisitTotals)> {
    let night = crawler_night(batches, params);
    let rel = format!("visits/crawler={crawler:0width$}/part-00000.parquet");
    let path = staging.join(&rel);
    std::fs::create_dir_all(path.parent().unwrap_or(staging))
        .with_context(|| format!("creating {}", path.display()))?;
    let (rows, bytes) = super::output::write_visits(
        &path,
        &night.hosts,
        &night.fetches,
        params.start_us,
        metadata,
    )?;
    Ok((
        FileEntry {
            path: rel,
            rows,
            bytes,
        },
        night.totals,
    ))
}
