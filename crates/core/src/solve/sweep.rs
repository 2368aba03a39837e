//! A sweep: the optimum of several policies over a range of bandwidths, with and without politeness,
//! on pages loaded once. Each point warm-starts its multiplier from the points before it.

use serde::{Deserialize, Serialize};

use super::optimum::{optima, Optimum, Warm};
use super::pages::Pages;
use super::problem::Problem;
use super::SolveError;
use crate::objective::Objective;
use crate::reduce::AllReduce;

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepPlan {
    /// Policies (objectives and baselines), in output order.
    pub policies: Vec<Objective>,
    /// Bandwidths as multiples of the page count, increasing.
    pub fractions: Vec<f64>,
    /// BLC-eps floor share (0 for none), applied to every policy as in `run --floor`.
    pub floor: f64,
}

/// One point of a sweep: a policy's optimum at one bandwidth, with or without politeness.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    pub policy: Objective,
    /// Whether the hosts' politeness caps were in force.
    pub polite: bool,
    /// Bandwidth as a multiple of the page count.
    pub bandwidth_fraction: f64,
    /// Bandwidth requested, fetches per day.
    pub bandwidth: f64,
    /// Bandwidth the rates use (less when politeness leaves some unusable), fetches per day.
    pub bandwidth_used: f64,
    /// The global multiplier.
    pub multiplier: f64,
    /// Rounds of the multiplier search.
    pub rounds: u32,
    /// Harmonic staleness J_h (None when a changing page is starved: +inf).
    pub cost_harmonic: Option<f64>,
    /// Binary staleness J_b with Poisson crawls.
    pub cost_binary: f64,
    /// Binary staleness with evenly spaced crawls at the same rates.
    pub cost_fixed_interval: f64,
    /// Importance-weighted fresh share of time with Poisson crawls.
    pub freshness_poisson: f64,
    /// Importance-weighted fresh share of time with evenly spaced crawls.
    pub freshness_fixed_interval: f64,
    /// Pages that change but are never crawled.
    pub urls_starved: u64,
    /// Hosts whose cap binds.
    pub hosts_capped: u64,
}

impl SweepPoint {
    /// `optimum` of `policy` at `bandwidth_fraction` x the page count, as a row of the sweep.
    pub fn new(policy: Objective, bandwidth_fraction: f64, optimum: &Optimum) -> Self {
        let f = &optimum.figures;
        SweepPoint {
            policy,
            polite: optimum.polite,
            bandwidth_fraction,
            bandwidth: optimum.bandwidth,
            bandwidth_used: f.bandwidth,
            multiplier: optimum.multiplier,
            rounds: optimum.rounds,
            cost_harmonic: f.cost_harmonic,
            cost_binary: f.cost_binary,
            cost_fixed_interval: f.cost_fixed_interval,
            freshness_poisson: f.freshness_poisson,
            freshness_fixed_interval: f.freshness_fixed_interval,
            urls_starved: f.urls_starved,
            hosts_capped: optimum.hosts_capped,
        }
    }
}

/// Runs `plan` on `pages` (this worker's; `pages_total` is the page count over all workers).
/// `on_point` sees every point as it is done.
///
/// Each bandwidth is solved with the caps, then without ([`optima`]), warm-starting from the
/// bandwidths before. Points are returned by policy, then polite before non-polite, then bandwidth.
pub fn sweep<R: AllReduce>(
    pages: &Pages,
    pages_total: u64,
    plan: &SweepPlan,
    reduce: &mut R,
    mut on_point: impl FnMut(&SweepPoint),
) -> Result<Vec<SweepPoint>, SolveError> {
    let mut points = Vec::new();
    for &policy in &plan.policies {
        let mut warm = Warm::default();
        let mut series: [Vec<SweepPoint>; 2] = [Vec::new(), Vec::new()];
        for &fraction in &plan.fractions {
            let bandwidth = fraction * pages_total as f64;
            let problem =
                Problem::new(pages, policy, bandwidth)?.with_floor(plan.floor, pages_total)?;
            for (m, optimum) in optima(&problem, &mut warm, reduce)?.iter().enumerate() {
                let point = SweepPoint::new(policy, fraction, optimum);
                on_point(&point);
                series[m].push(point);
            }
        }
        let [polite, free] = series;
        points.extend(polite);
        points.extend(free);
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::value::PolicyValue;
    use crate::reduce::Alone;
    use crate::solve::optimum::{value_at, value_at_generic};
    use crate::solve::pages::PagesBuilder;
    use crate::solve::spend::prelude;
    use crate::solve::{price, solve};
    use crate::units::PerDay;
    use rand::{Rng, SeedableRng};

    fn random_pages(seed: u64, complete_share: f64) -> Pages {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut b = PagesBuilder::new();
        for _ in 0..40 {
            let n = rng.random_range(1..30);
            let cap = rng.random_range(0.5..20.0);
            let pages: Vec<(f64, f64, bool)> = (0..n)
                .map(|_| {
                    let c = rng.random_bool(complete_share);
                    let mu = rng.random_range(0.01..10.0);
                    let lambda = rng.random_range(0.001..5.0);
                    (mu, lambda, c)
                })
                .collect();
            b.push_host(PerDay(cap), pages);
        }
        b.build().unwrap()
    }

    /// Every sweep point equals a cold `solve` of the same policy and bandwidth: warm starts change
    /// the path of the search, never the answer.
    #[test]
    fn every_point_equals_a_cold_solve() {
        let pages = random_pages(7, 0.1);
        let n = pages.len() as u64;
        let plan = SweepPlan {
            policies: vec![Objective::Harmonic, Objective::Binary, Objective::Uniform],
            fractions: vec![0.05, 0.1, 0.3, 1.0, 3.0],
            floor: 0.0,
        };
        let points = sweep(&pages, n, &plan, &mut Alone, |_| {}).unwrap();
        assert_eq!(points.len(), 3 * 2 * 5);
        for p in &points {
            let mut cold = Problem::new(&pages, p.policy, p.bandwidth).unwrap();
            if !p.polite {
                cold = cold.without_caps();
            }
            let s = solve(&cold, &mut Alone, |_, _, _| {}).unwrap();
            let mut value = PolicyValue::default();
            for (i, &r) in s.rates.iter().enumerate() {
                value.add(cold.page(i), r, pages.complete_obs()[i]);
            }
            let scale = value.binary_cost().abs().max(1e-300);
            assert!(
                (value.binary_cost() - p.cost_binary).abs() <= 1e-10 * scale,
                "{p:?}: cold J_b {}",
                value.binary_cost()
            );
            assert!((s.bandwidth_used - p.bandwidth_used).abs() <= 1e-11 * p.bandwidth);
        }
    }

    /// Politeness can only cost: at every bandwidth the polite optimum is no better than the
    /// non-polite one on the policy's own objective, and both costs fall as bandwidth grows.
    #[test]
    fn politeness_costs_and_bandwidth_helps() {
        let pages = random_pages(11, 0.0);
        let plan = SweepPlan {
            policies: vec![Objective::Harmonic, Objective::Binary],
            fractions: vec![0.02, 0.05, 0.2, 0.5, 2.0],
            floor: 0.0,
        };
        let points = sweep(&pages, pages.len() as u64, &plan, &mut Alone, |_| {}).unwrap();
        for policy in [Objective::Harmonic, Objective::Binary] {
            let own = |p: &SweepPoint| p.cost_harmonic.unwrap_or(f64::INFINITY);
            let cost = |p: &SweepPoint| {
                if policy == Objective::Harmonic {
                    own(p)
                } else {
                    p.cost_binary
                }
            };
            let polite: Vec<&SweepPoint> = points
                .iter()
                .filter(|p| p.policy == policy && p.polite)
                .collect();
            let free: Vec<&SweepPoint> = points
                .iter()
                .filter(|p| p.policy == policy && !p.polite)
                .collect();
            for (a, b) in polite.iter().zip(&free) {
                assert!(cost(a) >= cost(b) * (1.0 - 1e-12), "{a:?} vs {b:?}");
            }
            for w in free.windows(2) {
                assert!(cost(w[1]) < cost(w[0]));
            }
        }
    }

    /// The valuation by runs of one family gives the per-page reference's sums bit for bit, on hosts
    /// mixing observabilities (steps included), for every objective, with and without floors.
    #[test]
    fn value_by_runs_equals_the_per_page_reference() {
        let pages = random_pages(13, 0.3);
        let n = pages.len() as f64;
        for objective in Objective::ALL {
            for floor in [0.0, 0.3] {
                for bandwidth in [0.05 * n, 0.5 * n, 3.0 * n] {
                    let problem = Problem::new(&pages, objective, bandwidth)
                        .unwrap()
                        .with_floor(floor, pages.len() as u64)
                        .unwrap();
                    let pre = prelude(&problem);
                    let priced = price(
                        &problem,
                        &pre,
                        pre.guess(bandwidth),
                        &mut Alone,
                        |_, _, _| {},
                    )
                    .unwrap();
                    let (a, b) = (
                        value_at(&problem, &priced),
                        value_at_generic(&problem, &priced),
                    );
                    assert_eq!(a.harmonic.value().to_bits(), b.harmonic.value().to_bits());
                    assert_eq!(a.binary.value(), b.binary.value());
                    assert_eq!(a.fixed_interval.value(), b.fixed_interval.value());
                    assert_eq!(a.bandwidth.value(), b.bandwidth.value());
                    assert_eq!(a.importance.value(), b.importance.value());
                    assert_eq!((a.starved, a.pages), (b.starved, b.pages));
                }
            }
        }
    }

    #[test]
    fn warm_starts_take_fewer_rounds_than_cold_ones() {
        let pages = random_pages(3, 0.0);
        let n = pages.len() as u64;
        let fractions: Vec<f64> = (0..20).map(|k| 0.01 * 1.25f64.powi(k)).collect();
        let plan = SweepPlan {
            policies: vec![Objective::Binary],
            fractions: fractions.clone(),
            floor: 0.0,
        };
        let points = sweep(&pages, n, &plan, &mut Alone, |_| {}).unwrap();
        let warm: u32 = points.iter().filter(|p| p.polite).map(|p| p.rounds).sum();
        let cold: u32 = fractions
            .iter()
            .map(|f| {
                let problem = Problem::new(&pages, Objective::Binary, f * n as f64).unwrap();
                solve(&problem, &mut Alone, |_, _, _| {}).unwrap().rounds
            })
            .sum();
        assert!(warm < cold, "warm {warm} rounds, cold {cold}");
    }
}
