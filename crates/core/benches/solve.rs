//! The solve's passes on plain columns, timed: what the multiplier search, the host pricing and the
//! valuation cost per page, apart from reading, exchanging and writing. One JSON line per shape and
//! objective, each figure the median of a few repetitions, in nanoseconds per page: `prelude` (the
//! pass before the first round), `walk` (every host's demand at the multiplier, nothing summed),
//! `round` (one round of the search: the walk and the exact sums), `solve` (all of it: prelude,
//! rounds, host prices, rates) and `value` (the rates valued by every measure).
//!
//!   cargo bench -p revisit-core --bench solve            # 1M pages, the shapes below
//!   PAGES=200000 cargo bench -p revisit-core --bench solve
//!   SHAPE=zipf OBJECTIVE=binary cargo bench -p revisit-core --bench solve   # one of them
//!
//! Shapes: `single` puts every page on a host of its own (the Microsoft reference's shape, and
//! the web's long tail), `zipf` 100 pages per host on average with Zipf host sizes. Pages are
//! drawn as `revisit gen` draws them: Pareto(1, 1.5) importance, lognormal(ln 0.3, 1.2) change
//! rates clipped to [5e-4, 7] per day, 1 in 10 with complete observations (none for `single`,
//! as the reference has none), caps of one fetch per 2 s (they bind on a few large hosts).

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Pareto, Zipf};
use revisit_core::objective::Objective;
use revisit_core::reduce::Alone;
use revisit_core::solve::optimum::value_of_rates;
use revisit_core::solve::{self, spend, Pages, PagesBuilder, Problem};
use revisit_core::units::{politeness_cap, Seconds};

/// Repetitions of each measurement; the median is printed.
const REPS: usize = 5;
/// Bandwidth as fetches per day per page (the reference comparison's 0.2).
const BANDWIDTH_PER_PAGE: f64 = 0.2;
/// Pages per host on average in the `zipf` shape.
const PAGES_PER_HOST: usize = 100;

fn pages(shape: &str, n: usize) -> Pages {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let importance = Pareto::new(1.0, 1.5).expect("valid Pareto");
    let change = LogNormal::new(0.3f64.ln(), 1.2).expect("valid lognormal");
    let cap = politeness_cap(Seconds(2.0));
    let complete_share = if shape == "single" { 0.0 } else { 0.1 };
    let page = |rng: &mut ChaCha8Rng| {
        let mu: f64 = importance.sample(rng);
        let lambda: f64 = change.sample(rng).clamp(5e-4, 7.0);
        (mu, lambda, rng.random::<f64>() < complete_share)
    };
    let mut b = PagesBuilder::new();
    match shape {
        "single" => {
            for _ in 0..n {
                let p = page(&mut rng);
                b.push_host(cap, [p]);
            }
        }
        _ => {
            let hosts = (n / PAGES_PER_HOST).max(1);
            let sizes = Zipf::new(hosts as f64, 1.0).expect("valid Zipf");
            let mut of_host = vec![0usize; hosts];
            for _ in 0..n {
                of_host[sizes.sample(&mut rng) as usize - 1] += 1;
            }
            for &k in of_host.iter().filter(|&&k| k > 0) {
                let host: Vec<_> = (0..k).map(|_| page(&mut rng)).collect();
                b.push_host(cap, host);
            }
        }
    }
    b.build().expect("valid pages")
}

/// Median seconds of `REPS` runs of `f`.
fn median(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..REPS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[REPS / 2]
}

fn main() {
    let n: usize = std::env::var("PAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let chosen = |var: &str, name: &str| std::env::var(var).map_or(true, |v| v == name);
    for shape in ["single", "zipf"]
        .into_iter()
        .filter(|s| chosen("SHAPE", s))
    {
        let pages = pages(shape, n);
        for objective in [Objective::Harmonic, Objective::Binary] {
            if !chosen("OBJECTIVE", objective.name()) {
                continue;
            }
            let bandwidth = BANDWIDTH_PER_PAGE * n as f64;
            let problem = Problem::new(&pages, objective, bandwidth).expect("valid problem");
            let solution = solve::solve(&problem, &mut Alone, |_, _, _| {}).expect("solvable");
            let price = solution.multiplier;
            let per_page = |s: f64| (s * 1e9 / n as f64 * 10.0).round() / 10.0;
            let prelude = median(|| {
                std::hint::black_box(spend::prelude(&problem));
            });
            let mut demands = Vec::new();
            let round = median(|| {
                std::hint::black_box(spend::spend_partial_keeping(&problem, price, &mut demands));
            });
            let walk = median(|| {
                let mut total = 0.0;
                let at = solve::demand::At::new(price);
                solve::demand::each_host_demand(&problem, &at, |_, d| total += d.right);
                std::hint::black_box(total);
            });
            let whole = median(|| {
                std::hint::black_box(solve::solve(&problem, &mut Alone, |_, _, _| {}).ok());
            });
            let value = median(|| {
                std::hint::black_box(value_of_rates(&problem, &solution.rates));
            });
            println!(
                "{{\"shape\": \"{shape}\", \"objective\": \"{}\", \"pages\": {n}, \"hosts\": {}, \
                 \"rounds\": {}, \"hosts_capped\": {}, \"ns_per_page\": {{\"prelude\": {}, \
                 \"walk\": {}, \"round\": {}, \"solve\": {}, \"value\": {}}}, \"solve_ms\": {:.1}}}",
                objective.name(),
                pages.hosts(),
                solution.rounds,
                solution.hosts.iter().filter(|h| h.capped).count(),
                per_page(prelude),
                per_page(walk),
                per_page(round),
                per_page(whole),
                per_page(value),
                whole * 1e3,
            );
        }
    }
}
