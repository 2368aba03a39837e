//! A sweep: the optimum of several policies over a range of bandwidths, with and without politeness,
//! on pages loaded once. Each point warm-starts its multiplier from the points before it.

use serde::{Deserialize, Serialize};

use super::arena::Arena;
use super::demand::{page_rate, run_end, with_smooth_family, SmoothRun};
use crate::reduce::{AllReduce, Combine};
use super::spend::{prelude, Prelude};
use super::{price_seeded, Priced};
use crate::objective::value::{HostValue, PolicyValue};
use crate::objective::{Objective, Page, Response};

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

/// Runs `plan` on `arena` (this worker's pages; `complete_obs` is each page's own observability and
/// `pages_total` the page count over all workers). `on_point` sees every point as it is done.
///
/// Each bandwidth is solved with the caps, then without: the non-polite problem's spend at the polite
/// multiplier comes with the polite search's last round (same host demands, caps lifted), so its
/// search starts from that observation, one round in, and from very close (few hosts are capped).
/// Points are returned by policy, then polite before non-polite, then bandwidth.
///
/// The arena's responses, caps, floors and slot are changed along the way (and left changed).
pub fn sweep<R: AllReduce>(
    arena: &mut Arena,
    complete_obs: &[bool],
    pages_total: u64,
    plan: &SweepPlan,
    reduce: &mut R,
    mut on_point: impl FnMut(&SweepPoint),
) -> Vec<SweepPoint> {
    let polite_caps = arena.cap.clone();
    let free_caps = vec![f64::INFINITY; polite_caps.len()];
    let mut points = Vec::new();
    for &policy in &plan.policies {
        for (k, &c) in complete_obs.iter().enumerate() {
            arena.response[k] = Response::of(policy, c);
        }
        // The prelude depends on the bandwidth only through floors and the discrete slot.
        let per_point_prelude = plan.floor > 0.0 || policy == Objective::BinaryDiscrete;
        // per politeness (polite first): prelude, multipliers so far, points
        let mut pre: [Option<Prelude>; 2] = [None, None];
        let mut previous: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        let mut series: [Vec<SweepPoint>; 2] = [Vec::new(), Vec::new()];
        for &fraction in &plan.fractions {
            let bandwidth = fraction * pages_total as f64;
            let (mut seed, mut polite_fill) = (None, f64::NAN);
            for (m, polite) in [true, false].into_iter().enumerate() {
                arena
                    .cap
                    .clone_from(if polite { &polite_caps } else { &free_caps });
                arena.slot_days = 1.0 / bandwidth;
                if plan.floor > 0.0 {
                    // floors are water-filled under the caps: they differ with and without them
                    arena.set_floor(plan.floor * fraction);
                    seed = None;
                }
                if per_point_prelude {
                    pre[m] = None;
                }
                let pre = &*pre[m].get_or_insert_with(|| reduce.all_reduce(prelude(arena)));
                let guess = warm_guess(&previous[m], pre, bandwidth);
                let priced = price_seeded(
                    arena,
                    bandwidth,
                    pre,
                    guess,
                    seed.take(),
                    reduce,
                    |_, _, _| {},
                );
                previous[m].push((bandwidth, priced.multiplier));
                if polite {
                    polite_fill = priced.fill;
                } else if let Some(point) =
                    same_without_caps(series[0].last(), polite_fill, &priced, plan.floor)
                {
                    on_point(&point);
                    series[m].push(point);
                    continue;
                }
                let local = PointTotals {
                    value: value_at(arena, &priced, complete_obs),
                    hosts_capped: priced.hosts.iter().filter(|h| h.capped).count() as u64,
                };
                let t = reduce.all_reduce(local);
                let point = SweepPoint {
                    policy,
                    polite,
                    bandwidth_fraction: fraction,
                    bandwidth,
                    bandwidth_used: t.value.bandwidth.value(),
                    multiplier: priced.multiplier,
                    rounds: priced.rounds,
                    cost_harmonic: t.value.harmonic_cost(),
                    cost_binary: t.value.binary_cost(),
                    cost_fixed_interval: t.value.fixed_interval_cost(),
                    freshness_poisson: t.value.freshness_poisson(),
                    freshness_fixed_interval: t.value.freshness_fixed_interval(),
                    urls_starved: t.value.starved,
                    hosts_capped: t.hosts_capped,
                };
                on_point(&point);
                series[m].push(point);
                seed = priced.uncapped;
            }
        }
        let [polite, free] = series;
        points.extend(polite);
        points.extend(free);
    }
    arena.cap = polite_caps;
    points
}

/// The polite point just solved (with step share `polite_fill`), as the non-polite point `priced` at
/// the same bandwidth, when no cap bound and `priced` has the same multiplier and step share: every
/// host then has the same price in both, so the rates, and every figure, are the same, and the
/// valuation pass is saved. None if `priced` differs, or with floors (they are water-filled under the caps).
fn same_without_caps(
    polite_point: Option<&SweepPoint>,
    polite_fill: f64,
    priced: &Priced,
    floor: f64,
) -> Option<SweepPoint> {
    let p = polite_point?;
    let same = floor == 0.0
        && p.hosts_capped == 0
        && p.multiplier == priced.multiplier
        && polite_fill == priced.fill;
    same.then(|| SweepPoint {
        polite: false,
        rounds: priced.rounds,
        ..p.clone()
    })
}

/// The value of the rates `priced` gives this worker's pages, in one pass and without storing them
/// (`complete_obs` is each page's own observability).
///
/// Hosts without a floor are walked in runs of one response family with the family's response
/// inlined (as [`super::demand::demand`] does); each page is valued as [`value_at_generic`] values
/// it, in the same order, so both give the same sums bit for bit.
pub fn value_at(arena: &Arena, priced: &Priced, complete_obs: &[bool]) -> PolicyValue {
    let mut value = PolicyValue::default();
    for (h, hp) in priced.hosts.iter().enumerate() {
        let mut host = HostValue::default();
        let pages = arena.host_pages(h);
        if arena.host_floor(h) > 0.0 {
            for i in pages {
                let rate = page_rate(arena, h, i, hp.price, hp.fill);
                host.add(arena.page(i), rate, complete_obs[i]);
            }
            value.add_host(&host);
            continue;
        }
        let mut i = pages.start;
        while i < pages.end {
            let (family, end) = (arena.response[i], run_end(arena, i, pages.end));
            let mut run = ValueRun {
                host: &mut host,
                complete_obs: &complete_obs[i..end],
                slot_days: arena.slot_days,
            };
            let (mu, lambda) = (&arena.importance[i..end], &arena.change_rate[i..end]);
            if !with_smooth_family(family, hp.price, mu, lambda, &mut run) {
                for (k, &complete) in (i..end).zip(&complete_obs[i..end]) {
                    let rate = page_rate(arena, h, k, hp.price, hp.fill);
                    host.add(arena.page(k), rate, complete);
                }
            }
            i = end;
        }
        value.add_host(&host);
    }
    value
}

/// [`value_at`] page by page through [`Response`]'s dispatch: the reference it must equal.
pub fn value_at_generic(arena: &Arena, priced: &Priced, complete_obs: &[bool]) -> PolicyValue {
    let mut value = PolicyValue::default();
    for (h, hp) in priced.hosts.iter().enumerate() {
        let mut host = HostValue::default();
        for i in arena.host_pages(h) {
            let rate = page_rate(arena, h, i, hp.price, hp.fill);
            host.add(arena.page(i), rate, complete_obs[i]);
        }
        value.add_host(&host);
    }
    value
}

/// Values a run of pages of one smooth family at its host's price (no floor: the rate is the
/// response itself, as [`page_rate`] gives it).
struct ValueRun<'a> {
    host: &'a mut HostValue,
    complete_obs: &'a [bool],
    slot_days: f64,
}

impl SmoothRun for ValueRun<'_> {
    #[inline(always)]
    fn run(
        &mut self,
        mu: &[f64],
        lambda: &[f64],
        rate: impl Fn(f64, f64) -> f64,
        _slope: impl Fn(f64, f64, f64) -> f64,
    ) {
        for ((&mu, &lambda), &complete) in mu.iter().zip(lambda).zip(self.complete_obs) {
            let page = Page {
                importance: mu,
                change_rate: lambda,
                slot_days: self.slot_days,
            };
            self.host.add(page, rate(mu, lambda).max(0.0), complete);
        }
    }
}

/// A first price for `bandwidth` from the points already solved: ln nu is a smooth function of ln R
/// (a straight line for a pure power law), so extrapolate it through the last three points with a
/// parabola (two points: a line); with one point, scale it by the prelude's model; with none, take
/// the prelude's guess. A closer guess saves rounds: Newton doubles the correct digits per round.
pub fn warm_guess(previous: &[(f64, f64)], pre: &Prelude, bandwidth: f64) -> f64 {
    let usable = |&&(r, nu): &&(f64, f64)| r > 0.0 && nu > 0.0 && nu.is_finite();
    let known: Vec<(f64, f64)> = previous
        .iter()
        .rev()
        .filter(usable)
        .take(3)
        .map(|&(r, nu)| (r.ln(), nu.ln()))
        .collect();
    let x = bandwidth.ln();
    let distinct = |a: f64, b: f64| (a - b).abs() > 1e-9;
    match *known.as_slice() {
        [(x1, y1), (x2, y2), (x3, y3)]
            if distinct(x1, x2) && distinct(x2, x3) && distinct(x1, x3) =>
        {
            // Lagrange form of the parabola through the three points, evaluated at x
            let l1 = (x - x2) * (x - x3) / ((x1 - x2) * (x1 - x3));
            let l2 = (x - x1) * (x - x3) / ((x2 - x1) * (x2 - x3));
            let l3 = (x - x1) * (x - x2) / ((x3 - x1) * (x3 - x2));
            (y1 * l1 + y2 * l2 + y3 * l3).exp()
        }
        [(x1, y1), (x2, y2), ..] if distinct(x1, x2) => {
            (y1 + (y1 - y2) / (x1 - x2) * (x - x1)).exp()
        }
        [(x1, y1), ..] => y1.exp() * pre.guess(bandwidth) / pre.guess(x1.exp()),
        _ => pre.guess(bandwidth),
    }
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct PointTotals {
    value: PolicyValue,
    hosts_capped: u64,
}

impl Combine for PointTotals {
    fn combine(&mut self, o: Self) {
        self.value.combine(o.value);
        self.hosts_capped += o.hosts_capped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::Alone;
    use crate::solve::{price, solve};
    use rand::{Rng, SeedableRng};

    fn random_arena(seed: u64, complete_share: f64) -> (Arena, Vec<bool>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut arena = Arena::new();
        let mut complete = Vec::new();
        for _ in 0..40 {
            let n = rng.random_range(1..30);
            let cap = rng.random_range(0.5..20.0);
            let pages: Vec<(f64, f64, Response)> = (0..n)
                .map(|_| {
                    let c = rng.random_bool(complete_share);
                    complete.push(c);
                    let mu = rng.random_range(0.01..10.0);
                    let lambda = rng.random_range(0.001..5.0);
                    (mu, lambda, Response::of(Objective::Harmonic, c))
                })
                .collect();
            arena.push_host(cap, pages);
        }
        (arena, complete)
    }

    /// Every sweep point equals a cold `solve` of the same policy and bandwidth: warm starts change
    /// the path of the search, never the answer.
    #[test]
    fn every_point_equals_a_cold_solve() {
        let (mut arena, complete) = random_arena(7, 0.1);
        let pages = arena.pages() as u64;
        let plan = SweepPlan {
            policies: vec![Objective::Harmonic, Objective::Binary, Objective::Uniform],
            fractions: vec![0.05, 0.1, 0.3, 1.0, 3.0],
            floor: 0.0,
        };
        let points = sweep(&mut arena, &complete, pages, &plan, &mut Alone, |_| {});
        assert_eq!(points.len(), 3 * 2 * 5);
        for p in &points {
            let mut cold = arena.clone();
            for (k, &c) in complete.iter().enumerate() {
                cold.response[k] = Response::of(p.policy, c);
            }
            if !p.polite {
                cold.cap = vec![f64::INFINITY; cold.hosts()];
            }
            let s = solve(&cold, p.bandwidth, &mut Alone, |_, _, _| {});
            let mut value = PolicyValue::default();
            for (i, &r) in s.rates.iter().enumerate() {
                value.add(cold.page(i), r, complete[i]);
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
        let (mut arena, complete) = random_arena(11, 0.0);
        let pages = arena.pages() as u64;
        let plan = SweepPlan {
            policies: vec![Objective::Harmonic, Objective::Binary],
            fractions: vec![0.02, 0.05, 0.2, 0.5, 2.0],
            floor: 0.0,
        };
        let points = sweep(&mut arena, &complete, pages, &plan, &mut Alone, |_| {});
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
    /// mixing families (steps included), with and without floors, capped or not.
    #[test]
    fn value_by_runs_equals_the_per_page_reference() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for floor in [0.0, 0.3] {
            let (mut arena, complete) = random_arena(13, 0.2);
            arena.slot_days = 0.01;
            for r in arena.response.iter_mut() {
                // runs of the harmonic families broken by pages of every other family
                if rng.random_bool(0.3) {
                    *r = Response::ALL[rng.random_range(0..Response::ALL.len())];
                }
            }
            let pages = arena.pages() as f64;
            for bandwidth in [0.05 * pages, 0.5 * pages, 3.0 * pages] {
                if floor > 0.0 {
                    // BLC-eps: eps R / |W| per page
                    arena.set_floor(floor * bandwidth / pages);
                }
                let pre = prelude(&arena);
                let priced = price(
                    &arena,
                    bandwidth,
                    &pre,
                    pre.guess(bandwidth),
                    &mut Alone,
                    |_, _, _| {},
                );
                let (a, b) = (
                    value_at(&arena, &priced, &complete),
                    value_at_generic(&arena, &priced, &complete),
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

    #[test]
    fn warm_starts_take_fewer_rounds_than_cold_ones() {
        let (mut arena, complete) = random_arena(3, 0.0);
        let pages = arena.pages() as u64;
        let fractions: Vec<f64> = (0..20).map(|k| 0.01 * 1.25f64.powi(k)).collect();
        let plan = SweepPlan {
            policies: vec![Objective::Binary],
            fractions: fractions.clone(),
            floor: 0.0,
        };
        let points = sweep(&mut arena, &complete, pages, &plan, &mut Alone, |_| {});
        let warm: u32 = points.iter().filter(|p| p.polite).map(|p| p.rounds).sum();
        let mut cold_arena = arena.clone();
        for (k, &c) in complete.iter().enumerate() {
            cold_arena.response[k] = Response::of(Objective::Binary, c);
        }
        let cold: u32 = fractions
            .iter()
            .map(|f| solve(&cold_arena, f * pages as f64, &mut Alone, |_, _, _| {}).rounds)
            .sum();
        assert!(warm < cold, "warm {warm} rounds, cold {cold}");
    }
}
