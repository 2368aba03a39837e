//! `revisit evaluate --visits`: the exact value of a cyclic timetable (a run's `visits/` or
//! anyone's) on a page set, its hosts' politeness checked on the visit times, and the optima at the
//! bandwidth the timetable uses.
//!
//! Visit rows travel to their host's worker like rates rows do; there each page's visit times are
//! valued exactly ([`TimetableValue`], Liu & Nain Lemma 3), and each host's merged times give its
//! shortest gap, the wrap-around to the next horizon included.

use std::time::Instant;

use anyhow::{bail, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use revisit_core::exact_sum::ExactSum;
use revisit_core::objective::Objective;
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::schedule::evaluate::TimetableValue;
use revisit_core::schedule::night::plan_night;
use revisit_core::schedule::simulate::simulate_page;
use revisit_core::schedule::timetable::politeness_violations;
use revisit_core::schedule::visits::{host_visit_cap, visit_budget, VisitObjective};
use revisit_core::units::{Seconds, SECONDS_PER_DAY};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::{fetch_time, optima, route_keyed, sorted_by_page, KeyedMessage, Pairs};
use crate::io::inputs;
use crate::io::visits_in::{self, HorizonSource, VisitsFile};
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::keys::UrlKey;
use crate::job::load::{load, LoadChannels};
use crate::job::page_key::{gallop, PageKey};
use crate::job::progress::Progress;
use crate::job::share::ProcessShare;
use crate::plan::evaluate::{EvaluatePlan, MonteCarloPlan, OBJECTIVES};
use crate::report::evaluate::{worse, ImpoliteHost, MonteCarlo, VisitsEvaluation, VisitsReport};
use crate::report::provenance::{InputFile, Provenance};
use crate::report::rows::{by_reason, DefaultsUsed};
use crate::report::TotalSeconds;

/// Gaps between visits are differences of f64 times: a gap this much short of a host's delay is
/// still polite (the tolerance `run --timetable` promises).
const POLITENESS_TOLERANCE_S: f64 = 1e-6;

/// Runs worker `worker`'s share of a timetable evaluation; worker 0 returns the report.
pub fn worker(
    worker: &mut Worker,
    share: &ProcessShare,
    plan: &EvaluatePlan,
    files: &[VisitsFile],
    horizon_source: HorizonSource,
) -> Result<Option<VisitsEvaluation>> {
    let started = Instant::now();
    let (index, peers) = (worker.index(), worker.peers());
    let progress = Progress::of_worker(!plan.quiet, index, peers, started);
    let horizon = plan.pages.horizon;
    let mut pages_channel = LoadChannels::new(worker);
    let mut visits_channel =
        Shuffle::<KeyedMessage<f64, PageKey>>::new(worker, "VisitsByHost", |m| m.0 as u64);
    let mut reducer = Reducer::new(worker);
    let identity = crate::job::identity::agree(&mut reducer);
    let loaded = load(
        &mut reducer,
        &mut pages_channel,
        share,
        &plan.pages,
        &progress,
    )?;

    // Read my row groups of the visits; send each (url key, at_s) to its host's worker.
    let units = visits_in::units(files);
    let mut received = Vec::new();
    let status = route_keyed(
        loaded.by_host(plan.pages.politeness),
        &mut reducer,
        share,
        &mut visits_channel,
        &units,
        |u| u.file,
        |unit, row, invalid| visits_in::read_unit(&files[unit.file], unit, horizon.0, row, invalid),
        |message| received.push(message),
    )?;
    progress.say(format!(
        "read {} visits rows; joining to pages",
        status.rows
    ));

    let (arranged, pages) = (&loaded.arranged, &loaded.arranged.pages);
    let (join, counts) = join(received, arranged, horizon, plan.monte_carlo);
    let join = reducer.all_reduce(join);
    let visits_per_day = join.matched as f64 * SECONDS_PER_DAY / horizon.0;
    let bandwidth = plan.bandwidth.unwrap_or(visits_per_day);
    if bandwidth.is_nan() || bandwidth <= 0.0 {
        bail!(
            "no visits row matches a page ({} rows, {} unmatched, {} invalid): nothing to value (check that the visits' URLs are the pages' URLs, or give --bandwidth for the optima)",
            status.rows,
            join.unmatched + status.unmatched,
            status.invalid
        );
    }
    let value = &join.value;
    let stale = value.stale.value();
    let staleness = value.staleness();
    let cost_harmonic = value.cost_harmonic();

    // Under random fetch times the timetable gives shares visits_i / sum of visits.
    let fetch_time = fetch_time(
        &mut reducer,
        plan,
        pages,
        (&counts, join.matched as f64),
        visits_per_day,
        loaded.pages,
    )?;
    // The best integer visits with as many visits, evenly spaced: the Weak-Politeness and the
    // non-polite bounds of PUC-Rio Thm 1, the timetable's own yardstick.
    let bounds = bounds(&mut reducer, arranged, join.matched, horizon);

    // The timetable's exact costs against each objective's optima at the same bandwidth.
    let cost = |o: Objective| match o {
        Objective::Harmonic => cost_harmonic,
        _ => Some(stale),
    };
    let (optima, values) = optima(pages, bandwidth, &mut reducer, cost, &progress)?;
    if index != 0 {
        return Ok(None);
    }
    let fixed = OBJECTIVES
        .iter()
        .position(|&o| o == Objective::BinaryFixed)
        .map(|k| values[k][0].figures.freshness_fixed_interval)
        .filter(|&f| f > 0.0);
    let mut inputs = loaded.inputs.clone();
    inputs.extend(
        files
            .iter()
            .map(|f| InputFile::new(&f.path, "visits", inputs::size(&f.path))),
    );
    Ok(Some(VisitsEvaluation {
        provenance: Provenance::new(
            "evaluate",
            identity,
            inputs,
            loaded.hosts_table.clone(),
            &plan.options,
        ),
        urls: loaded.pages,
        rows_in: loaded.rows_in,
        rows_rejected: loaded.rows_rejected(),
        rejected_by_reason: by_reason(&loaded.rejected_by_reason),
        defaults: DefaultsUsed::new(
            &plan.pages.defaults,
            loaded.default_importance,
            loaded.default_change_rate,
        ),
        bandwidth,
        visits: VisitsReport {
            horizon_s: horizon.0,
            horizon_source: match horizon_source {
                HorizonSource::Metadata => "metadata",
                HorizonSource::Flag => "flag",
            }
            .to_owned(),
            files: files.len() as u64,
            rows: status.rows,
            matched: join.matched,
            unmatched: join.unmatched + status.unmatched,
            duplicate: join.duplicate,
            invalid: status.invalid,
            first_invalid: status.first_invalid.map(|(_, b)| b),
            visits_per_day,
            pages_visited: value.visited,
            pages_unvisited: value.unvisited,
            pages_starved: value.starved,
            staleness,
            freshness: 1.0 - staleness,
            cost_binary: stale,
            cost_harmonic,
            freshness_of_fixed_interval_optimum: fixed.map(|f| (1.0 - staleness) / f),
            staleness_weak_politeness: bounds.0,
            staleness_non_polite: bounds.1,
            gap_to_weak_politeness: staleness / bounds.0 - 1.0,
            hosts_visited: join.hosts_visited,
            host_gap_min_s: join.gap_min_s,
            hosts_impolite: join.hosts_impolite,
            gaps_impolite: join.gaps_impolite,
            worst_host: join.worst,
            monte_carlo: plan.monte_carlo.map(|mc| {
                let w = value.weight.value();
                let (simulated, std_err) =
                    (join.simulated.value() / w, join.variance.value().sqrt() / w);
                MonteCarlo {
                    horizons: mc.horizons,
                    seed: mc.seed,
                    simulated,
                    std_err,
                    exact_in_95_ci: (staleness - simulated).abs() <= 1.96 * std_err,
                }
            }),
        },
        optima,
        fetch_time,
        workers: peers / plan.cluster.processes(),
        processes: plan.cluster.processes(),
        seconds: TotalSeconds {
            total: started.elapsed().as_secs_f64(),
        },
    }))
}

/// Joins the received ((host, URL) key, at_s) pairs to this worker's pages: each page's visit
/// times valued exactly, each host's gaps checked against its delay; also each page's visit count.
/// The pairs are sorted in the pages' canonical order and merged with them (a binary search of
/// the pairs for each page missed the cache at every step).
fn join(
    received: Vec<Pairs<f64, PageKey>>,
    arranged: &Arranged,
    horizon: Seconds,
    monte_carlo: Option<MonteCarloPlan>,
) -> (VisitsJoin, Vec<f64>) {
    // a page's times ascending, exact repeats dropped: a total order (equal pairs are the same
    // bits)
    let mut pairs = sorted_by_page(received, f64::total_cmp);
    let before = pairs.len();
    pairs.dedup_by(|a, b| a.0 == b.0 && a.1.to_bits() == b.1.to_bits());
    let pages = &arranged.pages;
    let mut join = VisitsJoin {
        duplicate: (before - pairs.len()) as u64,
        ..Default::default()
    };
    // Visits per page, as f64: the shares of --fetch-time are visits_i / sum of visits.
    let mut counts = vec![0.0; pages.len()];
    // buffers reused across pages and hosts (one allocation each, not one per page)
    let (mut host_times, mut page_times): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    // the first pair not yet passed
    let mut at = 0;
    for h in 0..pages.hosts() {
        host_times.clear();
        for i in pages.host_pages(h) {
            let url = UrlKey::from(arranged.url(h, i).id());
            let key = PageKey::new(arranged.host_ids[h], url);
            // pairs before the page's are of no page of this worker
            let lo = gallop(&pairs, at, |p| p.0 < key);
            let hi = gallop(&pairs, lo, |p| p.0 == key);
            at = hi;
            page_times.clear();
            page_times.extend(pairs[lo..hi].iter().map(|p| p.1));
            join.matched += page_times.len() as u64;
            counts[i] = page_times.len() as f64;
            let (mu, lambda) = (pages.importance()[i], pages.change_rate()[i]);
            let exact = join.value.add_page(mu, lambda, &page_times, horizon).stale;
            if let Some(mc) = monte_carlo {
                // each page's own stream, from the seed and its URL: any worker count draws alike
                let mut rng = ChaCha8Rng::seed_from_u64(mc.seed ^ url.low());
                match simulate_page(&page_times, lambda, horizon, mc.horizons, &mut rng) {
                    Some(sim) => {
                        join.simulated.add(mu * sim.stale.mean);
                        join.variance
                            .add(mu * mu * sim.stale.std_err * sim.stale.std_err);
                    }
                    // never visited, or never changes: the value is certain
                    None => join.simulated.add(mu * exact),
                }
            }
            host_times.extend_from_slice(&page_times);
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
                    host: arranged.host_name(h).to_owned(),
                    gap_s: gap,
                    min_delay_s: delay.0,
                }),
            );
        }
    }
    join.unmatched = pairs.len() as u64 - join.matched;
    (join, counts)
}

/// The staleness of the best `visits` integer visits evenly spaced, with the hosts' caps (the
/// Weak-Politeness bound) and without (PUC-Rio Thm 1). Every worker calls it.
fn bounds(
    reducer: &mut Reducer<'_>,
    arranged: &Arranged,
    visits: u64,
    horizon: Seconds,
) -> (f64, f64) {
    let pages = &arranged.pages;
    let caps: Vec<u32> = arranged
        .host_delays
        .iter()
        .map(|&d| host_visit_cap(horizon, d))
        .collect();
    let keys: Vec<u64> = arranged.urls().map(|url| url.key()).collect();
    // the budget is floor(bandwidth x T): half a visit more keeps floor() at the count against
    // rounding
    let budget = visit_budget((visits as f64 + 0.5) * SECONDS_PER_DAY / horizon.0, horizon);
    let planned = plan_night(
        pages,
        &caps,
        &keys,
        budget,
        horizon,
        VisitObjective::Staleness,
        reducer,
    );
    (planned.weak_politeness.mean(), planned.non_polite.mean())
}

/// A worker's share of the timetable's value, combined over workers (exact sums: any worker count
/// gives the same figures).
#[derive(Clone, Default, Serialize, Deserialize)]
struct VisitsJoin {
    value: TimetableValue,
    /// With --simulate: sum mu x simulated staleness, and sum mu^2 x its variance.
    simulated: ExactSum,
    variance: ExactSum,
    matched: u64,
    unmatched: u64,
    duplicate: u64,
    hosts_visited: u64,
    hosts_impolite: u64,
    gaps_impolite: u64,
    gap_min_s: Option<f64>,
    worst: Option<ImpoliteHost>,
}

impl Combine for VisitsJoin {
    fn combine(&mut self, o: Self) {
        self.value.combine(o.value);
        self.simulated.merge(&o.simulated);
        self.variance.merge(&o.variance);
        self.matched += o.matched;
        self.unmatched += o.unmatched;
        self.duplicate += o.duplicate;
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
