//! The papers' timetable experiments, printed as numbers.
//!
//! (a) PUC-Rio §4: 1M pages on 2,000 servers (Zipf theta = 1), lambda ~ U[0.01, 1] per hour,
//!     T = 24 h, 10 crawlers x 10 pages/s, P = 15 s, uniform weights: staleness of each sequencing
//!     after Phase 3 vs the Weak-Politeness bound and the NonPolite bound.
//! (b) PNAS'18 Fig. 1: 1,000 pages, lambda ~ U[0, 1], utilities Zipf(2, range 10^4) or U[0, 1],
//!     bandwidth 1..10: timetable freshness as a share of the fixed-interval optimum.
//!
//! cargo run --release --example timetables -- [pages (default 1000000)] [seed (default 1)]

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};

use revisit_core::objective::Objective;
use revisit_core::reduce::Alone;
use revisit_core::schedule::assign::assign;
use revisit_core::schedule::crawler::{crawler_phases, sequence_crawler, CrawlerHost};
use revisit_core::schedule::evaluate::evaluate_page;
use revisit_core::schedule::timetable::{
    host_phase, host_timetable, politeness_violations, HostTimetable, Sequencing,
};
use revisit_core::schedule::visits::{
    host_visit_cap, integer_visits, visit_budget, EvenlySpaced, VisitObjective, VisitProblem,
};
use revisit_core::solve::{Pages, PagesBuilder, Problem};
use revisit_core::units::{PerDay, Seconds};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pages: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    puc_rio(pages, seed);
    pnas_fig1(seed);
}

fn puc_rio(pages: usize, seed: u64) {
    let start = Instant::now();
    let servers = 2_000u64;
    let crawlers = 10u32;
    let crawler_rate = 10.0; // pages per second
    let horizon = Seconds(86_400.0);
    let delay = Seconds(15.0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let zipf = Zipf::new(servers as f64, 1.0).expect("valid Zipf");
    let mut rows: Vec<(u64, f64)> = (0..pages)
        .map(|_| {
            let server = zipf.sample(&mut rng) as u64 - 1;
            (server, rng.random_range(0.01..1.0) * 24.0) // per hour -> per day
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    let mut b = PagesBuilder::new();
    let mut host_keys = vec![];
    let mut k = 0;
    while k < rows.len() {
        let host = rows[k].0;
        let end = k + rows[k..].iter().take_while(|r| r.0 == host).count();
        b.push_host(
            PerDay(f64::INFINITY),
            rows[k..end].iter().map(|r| (1.0, r.1, false)),
        );
        host_keys.push(host);
        k = end;
    }
    let arena = b.build().expect("valid pages");
    let keys: Vec<u64> = (0..arena.len() as u64).collect();
    let cap = host_visit_cap(horizon, delay);
    let caps = vec![cap; arena.hosts()];
    let budget = visit_budget(crawlers as f64 * crawler_rate * 86_400.0, horizon);
    println!(
        "(a) PUC-Rio: {} pages on {} servers (largest {}), cap {cap} visits/server, budget {budget}",
        arena.len(),
        arena.hosts(),
        (0..arena.hosts()).map(|h| arena.host_pages(h).len()).max().unwrap_or(0),
    );

    let t = Instant::now();
    let problem = VisitProblem {
        pages: &arena,
        caps: &caps,
        keys: &keys,
        horizon,
        objective: VisitObjective::Staleness,
    };
    let visits = integer_visits(&problem, budget, &mut Alone);
    let wp = EvenlySpaced::of(&arena, &visits.counts, horizon, VisitObjective::Staleness).mean();
    println!(
        "  integer visits: {} used of {budget}, {} rounds, {} capped servers, {:.2} s",
        visits.used,
        visits.rounds,
        visits.host_capped.iter().filter(|&&c| c).count(),
        t.elapsed().as_secs_f64()
    );
    let free = vec![u32::MAX; arena.hosts()];
    let np_problem = VisitProblem {
        caps: &free,
        ..problem
    };
    let np_visits = integer_visits(&np_problem, budget, &mut Alone);
    let np = EvenlySpaced::of(
        &arena,
        &np_visits.counts,
        horizon,
        VisitObjective::Staleness,
    )
    .mean();
    println!("  bounds: Weak-Politeness {wp:.5}, NonPolite {np:.5}");

    let loads: Vec<(u64, f64)> = host_keys
        .iter()
        .zip(&visits.host_visits)
        .map(|(&k, &v)| (k, v as f64))
        .collect();
    let crawler_of = assign(&loads, crawlers);
    let runs = Sequencing::ALL
        .iter()
        .map(|&s| (s, false))
        .chain([(Sequencing::Merge, true)]);
    for (seq, hashed_phases) in runs {
        let t = Instant::now();
        // phases: hosts of a crawler on distinct ticks of that crawler
        let mut phase = vec![0.0; arena.hosts()];
        for c in 0..crawlers {
            let mine: Vec<usize> = (0..arena.hosts()).filter(|&h| crawler_of[h] == c).collect();
            let slots: Vec<f64> = mine
                .iter()
                .map(|&h| horizon.0 / visits.host_visits[h].max(1) as f64)
                .collect();
            for (&h, p) in mine.iter().zip(crawler_phases(&slots, crawler_rate)) {
                phase[h] = if hashed_phases {
                    host_phase(host_keys[h])
                } else {
                    p
                };
            }
        }
        let tables: Vec<HostTimetable> = (0..arena.hosts())
            .map(|h| {
                let r = arena.host_pages(h);
                host_timetable(&visits.counts[r], horizon, phase[h], seq)
            })
            .collect();
        let impolite: u64 = tables
            .iter()
            .map(|t| politeness_violations(&t.at_s, horizon, delay, Seconds(1e-6)).0)
            .sum();
        // InfCrawlers: the timetables as planned
        let planned = mean_staleness(&arena, &tables, None, horizon);
        // Phase 3 on each crawler
        let mut served: Vec<Vec<f64>> = vec![vec![]; arena.hosts()];
        let (mut dropped, mut max_util) = (0u64, 0.0f64);
        for c in 0..crawlers {
            let mine: Vec<usize> = (0..arena.hosts()).filter(|&h| crawler_of[h] == c).collect();
            let hosts: Vec<CrawlerHost> = mine
                .iter()
                .map(|&h| CrawlerHost {
                    planned_s: &tables[h].at_s,
                    min_delay: delay,
                })
                .collect();
            let night = sequence_crawler(&hosts, crawler_rate, horizon);
            dropped += night.dropped;
            max_util = max_util.max(night.utilisation);
            for k in 0..night.at_s.len() {
                let h = mine[night.host[k] as usize];
                served[h].push(night.at_s[k]);
            }
        }
        // served[h] is in time order per crawler; visit j of host h is its j-th fetch (FIFO per host)
        let after = mean_staleness(&arena, &tables, Some(&served), horizon);
        println!(
            "  {seq:?}{}: planned {planned:.5} ({:+.2}% vs WP, {impolite} impolite gaps), after Phase 3 {after:.5} ({:+.2}% vs WP, {:+.2}% vs NonPolite), dropped {dropped}, max utilisation {:.4}, {:.2} s",
            if hashed_phases { " (hashed phases)" } else { "" },
            100.0 * (planned / wp - 1.0),
            100.0 * (after / wp - 1.0),
            100.0 * (after / np - 1.0),
            max_util,
            t.elapsed().as_secs_f64()
        );
    }
    println!("  total {:.1} s", start.elapsed().as_secs_f64());
}

/// Mean staleness of every page of `arena` under its hosts' timetables, or under the times the
/// crawlers actually served (`served[h]` = fetch times of host h's visits in order; visits beyond
/// its length were dropped).
fn mean_staleness(
    arena: &Pages,
    tables: &[HostTimetable],
    served: Option<&[Vec<f64>]>,
    horizon: Seconds,
) -> f64 {
    let mut sum = 0.0;
    let mut times: Vec<Vec<f64>> = vec![];
    for (h, t) in tables.iter().enumerate() {
        let r = arena.host_pages(h);
        times.clear();
        times.resize(r.len(), vec![]);
        let at = served.map(|s| &s[h][..]).unwrap_or(&t.at_s);
        for (j, &a) in at.iter().enumerate() {
            times[t.page[j] as usize].push(a);
        }
        for (local, i) in r.enumerate() {
            times[local].sort_by(f64::total_cmp);
            sum += arena.importance()[i]
                * evaluate_page(&times[local], arena.change_rate()[i], horizon).stale;
        }
    }
    let weight: f64 = arena.importance().iter().sum();
    sum / weight
}

fn pnas_fig1(seed: u64) {
    println!(
        "(b) PNAS'18 Fig. 1: 1,000 pages, freshness of the timetable / fixed-interval optimum"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1);
    let n = 1_000;
    let lambda: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
    let zipf = Zipf::new(1e4, 2.0).expect("valid Zipf");
    let utilities = [
        (
            "Zipf(2, 1e4)",
            (0..n).map(|_| zipf.sample(&mut rng)).collect::<Vec<f64>>(),
        ),
        (
            "U[0,1]",
            (0..n).map(|_| rng.random_range(0.0..1.0)).collect(),
        ),
    ];
    for (name, mu) in &utilities {
        for horizon_days in [10.0, 100.0, 1000.0] {
            let horizon = Seconds(horizon_days * 86_400.0);
            let mut line = format!("  {name}, T = {horizon_days} days:");
            for bandwidth in 1..=10 {
                let r = bandwidth as f64;
                let mut b = PagesBuilder::new();
                b.push_host(
                    PerDay(f64::INFINITY),
                    (0..n).map(|i| (mu[i], lambda[i], false)),
                );
                let arena = b.build().expect("valid pages");
                let problem =
                    Problem::new(&arena, Objective::BinaryFixed, r).expect("a positive bandwidth");
                let opt = revisit_core::solve::solve(&problem, &mut Alone, |_, _, _| {})
                    .expect("an unbounded problem is always feasible");
                let weight: f64 = mu.iter().sum();
                let opt_fresh: f64 = (0..n)
                    .map(|i| {
                        mu[i]
                            * revisit_core::objective::fixed_interval::freshness(
                                lambda[i],
                                opt.rates[i],
                            )
                    })
                    .sum::<f64>()
                    / weight;
                let keys: Vec<u64> = (0..n as u64).collect();
                let caps = [u32::MAX];
                let p = VisitProblem {
                    pages: &arena,
                    caps: &caps,
                    keys: &keys,
                    horizon,
                    objective: VisitObjective::Staleness,
                };
                let v = integer_visits(&p, visit_budget(r, horizon), &mut Alone);
                let t = host_timetable(&v.counts, horizon, 0.0, Sequencing::Carousel);
                let mut times = vec![vec![]; n];
                for (j, &a) in t.at_s.iter().enumerate() {
                    times[t.page[j] as usize].push(a);
                }
                let ours: f64 = (0..n)
                    .map(|i| mu[i] * (1.0 - evaluate_page(&times[i], lambda[i], horizon).stale))
                    .sum::<f64>()
                    / weight;
                line += &format!(" R={bandwidth}: {:.4}", ours / opt_fresh);
            }
            println!("{line}");
        }
    }
}
