//! `revisit evaluate --visits`: the exact value of a cyclic timetable (a run's `visits/` or anyone's)
//! on a page set, its hosts' politeness checked on the visit times, and the optima at the bandwidth
//! the timetable uses.
//!
//! Visit rows travel to their host's worker like rates rows do; there each page's visit times give
//! the closed forms of [`revisit_core::schedule::evaluate`] (Liu & Nain Lemma 3), and each host's merged
//! times give its shortest gap, the wrap-around to the next horizon included.

use std::time::Instant;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::arrange::Reading;
use super::channel::{Reducer, Shuffle};
use super::evaluate::{
    fetch_time_report, fetch_time_sums, optima, route_keyed, url_key, EvaluateArgs,
    FetchTimeReport, Optimum, RatesMessage,
};
use super::load::load;
use super::visits::plan;
use super::worker::{progress, VERSION};
use revisit_core::exact_sum::ExactSum;
use crate::io::rates_in::InvalidRate;
use crate::io::rows::RowBatch;
use crate::io::visits_in::{self, HorizonSource, VisitsFile, VisitsUnit};
use revisit_core::objective::Objective;
use revisit_core::fetch_time::FetchTime;
use revisit_core::schedule::evaluate::evaluate_page;
use revisit_core::schedule::timetable::politeness_violations;
use revisit_core::schedule::visits::VisitObjective;
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::units::{Seconds, SECONDS_PER_DAY};

/// Gaps between visits are differences of f64 times: a gap this much short of a host's delay is
/// still polite (the tolerance `run --timetable` promises, README).
const POLITENESS_TOLERANCE_S: f64 = 1e-6;

/// The visits files of an evaluation and the horizon they repeat over, resolved once per process
/// before the workers start.
#[derive(Clone, Debug)]
pub struct VisitsInput {
    pub files: Vec<VisitsFile>,
    pub horizon_s: f64,
    pub horizon_source: HorizonSource,
}

/// What `evaluate --visits` reports: the same top level as the rates report ([`super::evaluate::Evaluation`]),
/// the timetable's figures under `visits`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VisitsEvaluation {
    pub version: String,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    /// Bandwidth of the optima, fetches per day (default: the timetable's `visits.visits_per_day`).
    pub bandwidth: f64,
    pub visits: VisitsReport,
    /// Each objective's optima at `bandwidth`; `cost` is the timetable's exact cost by that
    /// objective's measure (harmonic: J_h; binary and binary-fixed: the timetable's binary cost).
    pub optima: Vec<Optimum>,
    /// With `--fetch-time`: the timetable's shares f_i = visits_i / Σ visits valued under random
    /// fetch times (None without the flag).
    pub fetch_time: Option<FetchTimeReport>,
    pub workers: usize,
    pub processes: usize,
    pub seconds: f64,
}

/// The timetable's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VisitsReport {
    /// The horizon the timetable repeats over, seconds, and where it came from (`metadata`: the
    /// files' revisit.horizon_s; `flag`: --horizon-s).
    pub horizon_s: f64,
    pub horizon_source: String,
    pub files: u64,
    /// Rows of the visits tables; rows = matched + unmatched + duplicate + invalid.
    pub rows: u64,
    /// Rows joined to a page (the visits valued).
    pub matched: u64,
    /// Valid rows whose URL is no page (on the host the row names or its URL implies).
    pub unmatched: u64,
    /// Rows repeating another row's URL and at_s exactly (one of them is used).
    pub duplicate: u64,
    /// Rows with no url, or an at_s that is missing, not a number or outside [0, horizon_s).
    pub invalid: u64,
    /// The first invalid row by file then row, to fix.
    pub first_invalid: Option<InvalidRate>,
    /// Fetches per day the timetable implies: matched × 86400 / horizon_s.
    pub visits_per_day: f64,
    /// Pages with at least one visit, and without.
    pub pages_visited: u64,
    pub pages_unvisited: u64,
    /// Pages that change and have no visit: stale from their first change on.
    pub pages_starved: u64,
    /// Importance-weighted mean binary staleness Σ μ S_i / Σ μ of the cyclic timetable, exact
    /// (Liu & Nain Lemma 3: S over a gap τ is 1 − (1 − e^{−λτ})/(λτ)); the run summary's
    /// `timetable.staleness` measures the same.
    pub staleness: f64,
    /// 1 − staleness.
    pub freshness: f64,
    /// Σ μ S_i (the scale of J_b).
    pub cost_binary: f64,
    /// Σ μ E[H(N(t))], time-averaged (NeurIPS'19 eq. 1 with the harmonic penalty; the scale of
    /// J_h); None (infinite) when a changing page has no visit.
    pub cost_harmonic: Option<f64>,
    /// freshness / the polite binary-fixed optimum's freshness at `bandwidth` (PNAS'18 Fig. 1 puts
    /// its timetable at 99% of that optimum).
    pub freshness_of_fixed_interval_optimum: Option<f64>,
    /// The best staleness of as many integer visits, evenly spaced, within the hosts' caps
    /// floor(T / min_delay_s): the Weak-Politeness lower bound (PUC-Rio Thm 1); and without caps.
    pub staleness_weak_politeness: f64,
    pub staleness_non_polite: f64,
    /// staleness / staleness_weak_politeness - 1 (PUC-Rio: MERGE 3% above).
    pub gap_to_weak_politeness: f64,
    /// Hosts with at least one matched visit.
    pub hosts_visited: u64,
    /// The smallest gap between consecutive visits of one host, wrap-around included, seconds
    /// (None: no visit).
    pub host_gap_min_s: Option<f64>,
    /// Hosts with a gap below their min_delay_s (less 1e-6 s), and such gaps in all.
    pub hosts_impolite: u64,
    pub gaps_impolite: u64,
    /// The impolite host with the shortest gap.
    pub worst_host: Option<ImpoliteHost>,
}

/// A host visited faster than its politeness delay allows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ImpoliteHost {
    pub host: String,
    pub gap_s: f64,
    pub min_delay_s: f64,
}

impl VisitsEvaluation {
    /// A report a person reads.
    pub fn human(&self) -> String {
        let v = &self.visits;
        let show = |c: Option<f64>| c.map(|c| format!("{c:.6e}")).unwrap_or("inf".into());
        let pct = |g: Option<f64>| {
            g.map(|g| format!("{:+.4}%", 100.0 * g))
                .unwrap_or("-".into())
        };
        let mut s = format!(
            "revisit evaluate: {} pages, {} visits rows in {} files ({} matched, {} unmatched, {} duplicate, {} invalid)\n\
             timetable: horizon {} s (from {}), {:.6e} fetches/day; {} pages visited, {} not ({} of them change)\n\
             \x20 staleness (importance-weighted, exact) {:.9}   fresh share {:.6}\n\
             \x20 binary cost J_b   {:.6e}\n\
             \x20 harmonic cost J_h {}\n",
            self.urls,
            v.rows,
            v.files,
            v.matched,
            v.unmatched,
            v.duplicate,
            v.invalid,
            v.horizon_s,
            v.horizon_source,
            v.visits_per_day,
            v.pages_visited,
            v.pages_unvisited,
            v.pages_starved,
            v.staleness,
            v.freshness,
            v.cost_binary,
            show(v.cost_harmonic),
        );
        s += &format!(
            "  bounds for {} integer visits (PUC-Rio Thm 1): Weak-Politeness {:.9} ({:+.4}% to it), non-polite {:.9}\n",
            v.matched,
            v.staleness_weak_politeness,
            100.0 * v.gap_to_weak_politeness,
            v.staleness_non_polite,
        );
        if let Some(r) = v.freshness_of_fixed_interval_optimum {
            s += &format!(
                "  freshness {:.4}% of the polite fixed-interval optimum's at {:.6e} fetches/day (which may visit a page less than once a horizon)\n",
                100.0 * r,
                self.bandwidth
            );
        }
        s += &format!(
            "politeness: {} hosts visited, shortest gap {} s; {} hosts ({} gaps) below their min_delay_s\n",
            v.hosts_visited,
            v.host_gap_min_s
                .map_or("-".to_owned(), |g| format!("{g:.6}")),
            v.hosts_impolite,
            v.gaps_impolite,
        );
        if let Some(w) = &v.worst_host {
            s += &format!(
                "  worst: {} visited {:.6} s apart, min_delay_s {}\n",
                w.host, w.gap_s, w.min_delay_s
            );
        }
        s += &format!(
            "optima at {:.6e} fetches/day (binary rows: the timetable's exact cost against Poisson and fixed-interval optima):\n  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>11}\n",
            self.bandwidth,
            "objective",
            "timetable",
            "polite opt.",
            "no-caps opt.",
            "gap polite",
            "gap no caps",
            "politeness",
        );
        for o in &self.optima {
            s += &format!(
                "  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>11}\n",
                o.objective,
                show(o.cost),
                show(o.polite_cost),
                show(o.non_polite_cost),
                pct(o.gap_to_polite),
                pct(o.gap_to_non_polite),
                pct(o.price_of_politeness),
            );
        }
        if let Some(f) = &self.fetch_time {
            // the shared block speaks of a rates table; here a page's share is its visits
            s += &f.human().replace("have no rate", "have no visit");
        }
        if let Some(b) = &v.first_invalid {
            s += &format!(
                "first invalid visits row: {} row {} column {}\n",
                b.file, b.row, b.column
            );
        }
        s
    }
}

/// Runs worker `worker`'s share of a timetable evaluation; worker 0 returns the report.
pub fn run_visits_worker(
    worker: &mut Worker,
    args: &EvaluateArgs,
    input: &VisitsInput,
    fetch: Option<&FetchTime>,
    processes: usize,
) -> Result<Option<VisitsEvaluation>> {
    let started = Instant::now();
    let index = worker.index();
    let peers = worker.peers();
    let lead = index == 0;
    let say = progress(lead && !args.pages.quiet, started);
    let horizon = Seconds(input.horizon_s);
    let mut pages_channel = Shuffle::<RowBatch>::new(worker, "ByHost", |b| b.dest as u64);
    let mut visits_channel = Shuffle::<RatesMessage>::new(worker, "VisitsByHost", |m| m.0 as u64);
    let mut reducer = Reducer::new(worker);
    let reading = Reading {
        objective: Objective::Harmonic,
        value_per_change: args.pages.value_per_change,
    };
    let loaded = load(&mut reducer, &mut pages_channel, &args.pages, reading, &say)?;

    // Read my row groups of the visits; send each (url key, at_s) to its host's worker.
    let units = visits_in::units(&input.files);
    let mine: Vec<VisitsUnit> = units.iter().copied().skip(index).step_by(peers).collect();
    let (received, status) = route_keyed(
        &mut reducer,
        &mut visits_channel,
        &mine,
        |u| u.file,
        |unit, row, invalid| {
            visits_in::read_unit(&input.files[unit.file], unit, input.horizon_s, row, invalid)
        },
    )?;
    say(format!(
        "read {} visits rows; joining to pages",
        status.rows
    ));

    // Join: my pages' visits by URL key, times ascending, exact repeats dropped.
    let mut pairs: Vec<(u128, f64)> = received.into_iter().flat_map(|m| m.1).collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let before = pairs.len();
    pairs.dedup_by(|a, b| a.0 == b.0 && a.1.to_bits() == b.1.to_bits());
    let mut join = VisitsJoin {
        duplicate: (before - pairs.len()) as u64,
        ..Default::default()
    };
    let mut arranged = loaded.arranged;
    let arena = &arranged.arena;
    // Visits per page, as f64: the shares of --fetch-time are visits_i / Σ visits.
    let mut counts = vec![0.0; arena.pages()];
    // buffers reused across pages and hosts (one allocation each, not one per page)
    let (mut host_times, mut page_times): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for h in 0..arena.hosts() {
        host_times.clear();
        for i in arena.host_pages(h) {
            let key = url_key(arranged.url_bytes(i));
            let lo = pairs.partition_point(|p| p.0 < key);
            let hi = lo + pairs[lo..].partition_point(|p| p.0 == key);
            page_times.clear();
            page_times.extend(pairs[lo..hi].iter().map(|p| p.1));
            let times = &page_times;
            join.matched += times.len() as u64;
            counts[i] = times.len() as f64;
            let (mu, lambda) = (arena.importance[i], arena.change_rate[i]);
            let value = evaluate_page(times, lambda, horizon);
            join.weight.add(mu);
            join.stale.add(mu * value.stale);
            if value.harmonic.is_finite() {
                join.harmonic.add(mu * value.harmonic);
            }
            if times.is_empty() {
                join.pages_unvisited += 1;
                if lambda > 0.0 {
                    join.pages_starved += 1;
                }
            } else {
                join.pages_visited += 1;
            }
            host_times.extend_from_slice(times);
        }
        if host_times.is_empty() {
            continue;
        }
        host_times.sort_by(f64::total_cmp);
        let delay = arranged.host_delays[h];
        let (short, gap) =
            politeness_violations(&host_times, horizon, delay, Seconds(POLITENESS_TOLERANCE_S));
        join.hosts_visited += 1;
        join.gap_min_s = Some(join.gap_min_s.map_or(gap, |g: f64| g.min(gap)));
        if short > 0 {
            join.hosts_impolite += 1;
            join.gaps_impolite += short;
            join.worst = worse(
                join.worst.take(),
                Some(ImpoliteHost {
                    host: arranged.host_names[h].clone(),
                    gap_s: gap,
                    min_delay_s: delay.0,
                }),
            );
        }
    }
    join.unmatched = pairs.len() as u64 - join.matched;
    let join = reducer.all_reduce(join);
    let visits_per_day = join.matched as f64 * SECONDS_PER_DAY / horizon.0;
    let bandwidth = args.bandwidth.unwrap_or(visits_per_day);
    if bandwidth.is_nan() || bandwidth <= 0.0 {
        bail!(
            "no visits row matches a page ({} rows, {} unmatched, {} invalid): nothing to value (check that the visits' URLs are the pages' URLs, or give --bandwidth for the optima)",
            status.rows,
            join.unmatched + status.unmatched,
            status.invalid
        );
    }
    let stale = join.stale.value();
    let weight = join.weight.value();
    let staleness = stale / weight;
    // a changing page with no visit has an infinite harmonic penalty
    let cost_harmonic = (join.pages_starved == 0).then(|| join.harmonic.value());

    // Under random fetch times the timetable gives shares visits_i / Σ visits (all-reduced above).
    let fetch_sums = match fetch {
        Some(fetch) => {
            let sums =
                reducer.all_reduce(fetch_time_sums(fetch, arena, &counts, join.matched as f64));
            // every worker fails together, after the all-reduce
            if let Some(e) = sums.error {
                bail!(e);
            }
            Some(sums)
        }
        None => None,
    };

    // The best integer visits with as many visits, evenly spaced: the Weak-Politeness and the
    // non-polite bounds of PUC-Rio Thm 1, the timetable's own yardstick. plan() takes the budget
    // as floor(bandwidth x T): half a visit more keeps floor() at the count against rounding.
    let bounds = plan(
        &arranged,
        (join.matched as f64 + 0.5) * SECONDS_PER_DAY / horizon.0,
        horizon,
        VisitObjective::Staleness,
        &mut reducer,
    );

    // The timetable's exact costs against each objective's optima at the same bandwidth.
    let mut arena = std::mem::take(&mut arranged.arena);
    let cost = |o: Objective| match o {
        Objective::Harmonic => cost_harmonic,
        _ => Some(stale),
    };
    let (optima, values) = optima(
        &mut arena,
        &arranged.complete_obs,
        bandwidth,
        &mut reducer,
        cost,
        &say,
    );
    if !lead {
        return Ok(None);
    }
    let fixed = super::evaluate::OBJECTIVES
        .iter()
        .position(|&o| o == Objective::BinaryFixed)
        .map(|k| values[k][0].freshness_fixed_interval)
        .filter(|&f| f > 0.0);
    let fetch_time = match (fetch, fetch_sums) {
        (Some(fetch), Some(sums)) => Some(fetch_time_report(
            args,
            fetch,
            &sums,
            loaded.pages,
            visits_per_day,
        )),
        _ => None,
    };
    Ok(Some(VisitsEvaluation {
        version: VERSION.to_owned(),
        urls: loaded.pages,
        rows_in: loaded.rows_in,
        rows_rejected: loaded.rejected_by_reason.iter().sum(),
        bandwidth,
        visits: VisitsReport {
            horizon_s: horizon.0,
            horizon_source: match input.horizon_source {
                HorizonSource::Metadata => "metadata",
                HorizonSource::Flag => "flag",
            }
            .to_owned(),
            files: input.files.len() as u64,
            rows: status.rows,
            matched: join.matched,
            unmatched: join.unmatched + status.unmatched,
            duplicate: join.duplicate,
            invalid: status.invalid,
            first_invalid: status.first_invalid.map(|(_, b)| b),
            visits_per_day,
            pages_visited: join.pages_visited,
            pages_unvisited: join.pages_unvisited,
            pages_starved: join.pages_starved,
            staleness,
            freshness: 1.0 - staleness,
            cost_binary: stale,
            cost_harmonic,
            freshness_of_fixed_interval_optimum: fixed.map(|f| (1.0 - staleness) / f),
            staleness_weak_politeness: bounds.weak_politeness.mean(),
            staleness_non_polite: bounds.non_polite.mean(),
            gap_to_weak_politeness: staleness / bounds.weak_politeness.mean() - 1.0,
            hosts_visited: join.hosts_visited,
            host_gap_min_s: join.gap_min_s,
            hosts_impolite: join.hosts_impolite,
            gaps_impolite: join.gaps_impolite,
            worst_host: join.worst,
        },
        optima,
        fetch_time,
        workers: peers / processes,
        processes,
        seconds: started.elapsed().as_secs_f64(),
    }))
}

/// The worse of two impolite hosts: the shorter gap, then the name (the same whatever the workers).
fn worse(a: Option<ImpoliteHost>, b: Option<ImpoliteHost>) -> Option<ImpoliteHost> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (a.gap_s, &a.host) <= (b.gap_s, &b.host) {
            a
        } else {
            b
        }),
        (a, b) => a.or(b),
    }
}

/// A worker's share of the timetable's value, combined over workers (exact sums: any worker count
/// gives the same figures).
#[derive(Clone, Default, Serialize, Deserialize)]
struct VisitsJoin {
    /// Σ μ S_i, Σ μ E[H] over pages with a finite one, Σ μ.
    stale: ExactSum,
    harmonic: ExactSum,
    weight: ExactSum,
    matched: u64,
    unmatched: u64,
    duplicate: u64,
    pages_visited: u64,
    pages_unvisited: u64,
    pages_starved: u64,
    hosts_visited: u64,
    hosts_impolite: u64,
    gaps_impolite: u64,
    gap_min_s: Option<f64>,
    worst: Option<ImpoliteHost>,
}

impl Combine for VisitsJoin {
    fn combine(&mut self, o: Self) {
        self.stale.merge(&o.stale);
        self.harmonic.merge(&o.harmonic);
        self.weight.merge(&o.weight);
        self.matched += o.matched;
        self.unmatched += o.unmatched;
        self.duplicate += o.duplicate;
        self.pages_visited += o.pages_visited;
        self.pages_unvisited += o.pages_unvisited;
        self.pages_starved += o.pages_starved;
        self.hosts_visited += o.hosts_visited;
        self.hosts_impolite += o.hosts_impolite;
        self.gaps_impolite += o.gaps_impolite;
        self.gap_min_s = match (self.gap_min_s, o.gap_min_s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.worst = worse(self.worst.take(), o.worst);
    }
}
