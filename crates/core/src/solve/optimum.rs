//! An objective's optimum at one bandwidth with the hosts' politeness caps and without, each valued
//! by every measure: what `evaluate` compares a policy with and what a sweep draws, one code path.
//!
//! The non-polite problem's spend at the polite multiplier comes with the polite search's last
//! round (the same host demands, caps lifted), so its search starts from that observation, one
//! round in, and from very close (few hosts are capped). Searches warm-start from the multipliers
//! of the bandwidths solved before ([`Warm`]).

use serde::{Deserialize, Serialize};

use super::demand::{page_rate, run_end, with_smooth_family, SmoothRun};
use super::problem::Problem;
use super::spend::{prelude, Prelude};
use super::{price_seeded, Priced, SolveError};
use crate::exact_sum::ExactSum;
use crate::objective::value::{Figures, HostValue, PolicyValue};
use crate::objective::Page;
use crate::reduce::{AllReduce, Combine};

/// One optimum: the problem's, with or without the caps, and what its rates are worth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Optimum {
    /// Whether the hosts' politeness caps were in force.
    pub polite: bool,
    /// Bandwidth requested, fetches per day.
    pub bandwidth: f64,
    /// The global multiplier.
    pub multiplier: f64,
    /// Rounds of the multiplier search.
    pub rounds: u32,
    /// Hosts whose cap binds.
    pub hosts_capped: u64,
    /// The optimal rates' value (its `bandwidth` is what they use: less than requested when
    /// politeness leaves some unusable).
    pub figures: Figures,
}

/// What the searches of one objective carry from bandwidth to bandwidth, polite and not: the
/// global prelude (it depends on the pages and caps, not the bandwidth, but for floors and the
/// discrete slot) and the multipliers found so far.
#[derive(Clone, Debug, Default)]
pub struct Warm {
    prelude: [Option<Prelude>; 2],
    previous: [Vec<(f64, f64)>; 2],
}

/// The optimum of `problem` with its caps and without, in that order (every worker calls it: the
/// searches are all-reduces). `warm` is the same objective's state from the bandwidths before.
pub fn optima<R: AllReduce>(
    problem: &Problem,
    warm: &mut Warm,
    reduce: &mut R,
) -> Result<[Optimum; 2], SolveError> {
    let polite = problem.with_caps();
    let free = problem.without_caps();
    let first = solve_one(&polite, 0, warm, None, reduce)?;
    let seed = first.priced.uncapped.clone();
    // Without floors, a polite optimum that no cap binds is also the optimum without caps when the
    // second search lands on the same multiplier and step share: every host has the same price in
    // both, so every figure is the same, and the valuation pass is saved. (Floors are water-filled
    // under the caps: they differ.)
    let second = solve_one(&free, 1, warm, seed, reduce)?;
    let unchanged = problem.floor_eps() == 0.0
        && first.optimum.hosts_capped == 0
        && first.priced.multiplier == second.priced.multiplier
        && first.priced.fill == second.priced.fill;
    let free_optimum = if unchanged {
        Optimum {
            polite: false,
            rounds: second.priced.rounds,
            ..first.optimum.clone()
        }
    } else {
        valued(&free, &second.priced, reduce)
    };
    let polite_optimum = first.optimum;
    Ok([polite_optimum, free_optimum])
}

/// A search's outcome, valued when it is the polite one.
struct Solved {
    priced: Priced,
    optimum: Optimum,
}

/// Prices `problem` (politeness slot `m` of `warm`), from `seed` if given; values it if polite.
fn solve_one<R: AllReduce>(
    problem: &Problem,
    m: usize,
    warm: &mut Warm,
    seed: Option<super::Seed>,
    reduce: &mut R,
) -> Result<Solved, SolveError> {
    if problem.prelude_depends_on_bandwidth() {
        warm.prelude[m] = None;
    }
    let pre = &*warm.prelude[m].get_or_insert_with(|| reduce.all_reduce(prelude(problem)));
    let bandwidth = problem.bandwidth();
    let guess = warm_guess(&warm.previous[m], pre, bandwidth);
    // floors differ with and without caps, so a seed of the polite spend does not apply
    let seed = seed.filter(|_| problem.floor_eps() == 0.0);
    let priced = price_seeded(problem, pre, guess, seed, reduce, |_, _, _| {})?;
    warm.previous[m].push((bandwidth, priced.multiplier));
    let optimum = if problem.is_polite() {
        valued(problem, &priced, reduce)
    } else {
        // valued by the caller unless it equals the polite one
        Optimum {
            polite: false,
            bandwidth,
            multiplier: priced.multiplier,
            rounds: priced.rounds,
            hosts_capped: 0,
            figures: Figures::default(),
        }
    };
    Ok(Solved { priced, optimum })
}

/// The optimum `priced` of `problem`, valued over every worker.
fn valued<R: AllReduce>(problem: &Problem, priced: &Priced, reduce: &mut R) -> Optimum {
    let t = reduce.all_reduce(PointTotals {
        value: value_at(problem, priced),
        hosts_capped: priced.hosts.capped().len() as u64,
    });
    Optimum {
        polite: problem.is_polite(),
        bandwidth: problem.bandwidth(),
        multiplier: priced.multiplier,
        rounds: priced.rounds,
        hosts_capped: t.hosts_capped,
        figures: t.value.figures(),
    }
}

/// The value of the rates `priced` gives this worker's pages, in one pass and without storing them
/// (each page valued with its own observability, whatever the objective assumed).
///
/// Problems without bounds are walked in runs of one response family with the family's response
/// inlined (as [`super::demand::demand`] does); each page is valued as [`value_at_generic`] values
/// it, in the same order, so both give the same sums bit for bit.
pub fn value_at(problem: &Problem, priced: &Priced) -> PolicyValue {
    let complete_obs = problem.pages().complete_obs();
    let mut value = PolicyValue::default();
    for (h, hp) in priced.hosts.iter().enumerate() {
        let mut host = HostValue::default();
        let pages = problem.host_pages(h);
        if problem.is_bounded() {
            for i in pages {
                let rate = page_rate(problem, h, i, hp.price, hp.fill);
                host.add(problem.page(i), rate, complete_obs[i]);
            }
            value.add_host(&host);
            continue;
        }
        let mut i = pages.start;
        while i < pages.end {
            let (family, end) = (problem.response(i), run_end(problem, i, pages.end));
            let mut run = ValueRun {
                host: &mut host,
                complete_obs: &complete_obs[i..end],
                slot_days: problem.slot_days(),
            };
            let p = problem.pages();
            let (mu, lambda) = (&p.importance()[i..end], &p.change_rate()[i..end]);
            if !with_smooth_family(family, hp.price, mu, lambda, &mut run) {
                for (k, &complete) in (i..end).zip(&complete_obs[i..end]) {
                    let rate = page_rate(problem, h, k, hp.price, hp.fill);
                    host.add(problem.page(k), rate, complete);
                }
            }
            i = end;
        }
        value.add_host(&host);
    }
    value
}

/// What rates (one per page of `problem`) are worth: every measure, each page by its own
/// observability, and the problem's own objective as a cost ([`crate::objective::Response::cost`]);
/// both summed per host in page order, then exactly.
///
/// Where the objective's cost is one of the measures (harmonic, binary, binary-fixed: each page's
/// response costs it as the measure does, [`PolicyValue::exact_cost_of`]), it is that measure's
/// sum, not a second cost a page: for the harmonic objective a second logarithm, a fifth of the
/// pass.
pub fn value_of_rates(problem: &Problem, rates: &[f64]) -> (PolicyValue, ExactSum) {
    let complete_obs = problem.pages().complete_obs();
    let measured = PolicyValue::measures(problem.objective());
    let (mut value, mut objective) = (PolicyValue::default(), ExactSum::default());
    for h in 0..problem.hosts() {
        let (mut host, mut host_objective) = (HostValue::default(), 0.0);
        for i in problem.host_pages(h) {
            let (page, rate) = (problem.page(i), rates[i]);
            host.add(page, rate, complete_obs[i]);
            if !measured {
                host_objective += problem.response(i).cost(page, rate);
            }
        }
        value.add_host(&host);
        objective.add(host_objective);
    }
    if let Some(cost) = value.exact_cost_of(problem.objective()) {
        objective = cost.clone();
    }
    (value, objective)
}

/// [`value_at`] page by page through the responses' dispatch: the reference it must equal.
pub fn value_at_generic(problem: &Problem, priced: &Priced) -> PolicyValue {
    let complete_obs = problem.pages().complete_obs();
    let mut value = PolicyValue::default();
    for (h, hp) in priced.hosts.iter().enumerate() {
        let mut host = HostValue::default();
        for i in problem.host_pages(h) {
            let rate = page_rate(problem, h, i, hp.price, hp.fill);
            host.add(problem.page(i), rate, complete_obs[i]);
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
    use proptest::prelude::*;

    use super::*;
    use crate::objective::{Objective, Response};
    use crate::solve::PagesBuilder;
    use crate::units::PerDay;

    proptest! {
        /// The objective's cost of any rates is every page's own response cost, summed per host
        /// in page order then exactly, to the last bit, for every objective; and the measures
        /// are each page's figures summed the same way (rates of zero, starved pages, complete
        /// observations included).
        #[test]
        fn the_objective_is_each_pages_cost_and_the_measures_each_pages_figures(
            pages in prop::collection::vec(
                (1e-3..1e3f64, prop::sample::select(vec![0.0, 1e-4, 0.3, 7.0, 1e3]), 0..5usize, any::<bool>(),
                 prop::sample::select(vec![0.0, 1e-9, 0.05, 1.0, 40.0])),
                1..40),
        ) {
            let mut b = PagesBuilder::new();
            let mut rates = Vec::new();
            for h in 0..5 {
                let members: Vec<_> = pages.iter().filter(|p| p.2 == h).collect();
                if !members.is_empty() {
                    b.push_host(PerDay(f64::INFINITY), members.iter().map(|p| (p.0, p.1, p.3)));
                    rates.extend(members.iter().map(|p| p.4));
                }
            }
            let built = b.build().unwrap();
            for objective in Objective::ALL {
                let problem = Problem::new(&built, objective, 1.0).unwrap();
                let (value, cost) = value_of_rates(&problem, &rates);
                let (mut want_value, mut want_cost) = (PolicyValue::default(), ExactSum::new());
                for h in 0..problem.hosts() {
                    let (mut host, mut host_cost) = (HostValue::default(), 0.0);
                    for i in problem.host_pages(h) {
                        let (page, complete) = (problem.page(i), built.complete_obs()[i]);
                        host.add(page, rates[i], complete);
                        host_cost += Response::of(objective, complete).cost(page, rates[i]);
                    }
                    want_value.add_host(&host);
                    want_cost.add(host_cost);
                }
                prop_assert_eq!(&cost, &want_cost, "{:?}", objective);
                prop_assert_eq!(value.figures(), want_value.figures(), "{:?}", objective);
            }
        }
    }
}
