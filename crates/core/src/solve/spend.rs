//! Total spend at a price, sum_h min(C_h, D_h(price)), as a partial over one worker's hosts.
//!
//! No per-host precomputation is needed: a host spends its demand or its cap, whichever
//! is smaller, and only uncapped hosts contribute to the slope.

use serde::{Deserialize, Serialize};

use super::demand::{self, Demand};
use super::multiplier::Observation;
use super::problem::Problem;
use super::sketch::SwitchSketch;
use crate::exact_sum::ExactSum;
use crate::objective::Response;
use crate::reduce::Combine;

/// One worker's share of the spend at a price; combined exactly across workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SpendPartial {
    /// The price evaluated (identical on every worker).
    pub price: f64,
    /// sum_h min(C_h, D_h(price+)).
    pub right: ExactSum,
    /// sum_h min(C_h, D_h(price-)).
    pub left: ExactSum,
    /// Slope of the uncapped hosts' demand.
    pub slope: ExactSum,
    /// Smallest step price above the price.
    pub next_above: f64,
    /// Largest step price below the price.
    pub next_below: f64,
    /// Step sizes at the price of hosts that stay under their caps whatever share of the step is taken.
    pub tie_linear: ExactSum,
    /// Hosts that reach their cap while taking the step: (room left under the cap, step size).
    pub tie_crossing: Vec<(f64, f64)>,
}

impl Combine for SpendPartial {
    fn combine(&mut self, other: Self) {
        self.right.merge(&other.right);
        self.left.merge(&other.left);
        self.slope.merge(&other.slope);
        self.next_above = self.next_above.min(other.next_above);
        self.next_below = self.next_below.max(other.next_below);
        self.tie_linear.merge(&other.tie_linear);
        self.tie_crossing.extend(other.tie_crossing);
    }
}

impl SpendPartial {
    /// What the multiplier search needs from a combined total.
    pub fn observation(&self) -> Observation {
        Observation {
            price: self.price,
            right: self.right.value(),
            left: self.left.value(),
            slope: self.slope.value(),
            next_above: self.next_above,
            next_below: self.next_below,
        }
    }

    /// The share f in [0, 1] of the steps at the price to take so that spend meets `target` exactly.
    ///
    /// Spend is right + f * tie_linear + sum over crossing hosts of min(room, f * step): continuous,
    /// piecewise linear and increasing in f, solved exactly over its breakpoints.
    pub fn tie_fill(&self, target: f64) -> f64 {
        let right = self.right.value();
        if target <= right {
            return 0.0;
        }
        let mut crossing = self.tie_crossing.clone();
        // breakpoints f = room / step, in order (ties of equal breakpoints are interchangeable)
        crossing.sort_by(|a, b| {
            (a.0 / a.1)
                .total_cmp(&(b.0 / b.1))
                .then(a.0.total_cmp(&b.0))
        });
        let mut base = ExactSum::new(); // spend at f = 0 plus the saturated hosts' rooms
        base.add(right);
        let mut slope = self.tie_linear.clone(); // d spend / d f of the hosts not yet saturated
        for &(_, step) in &crossing {
            slope.add(step);
        }
        for &(room, step) in &crossing {
            let f_break = room / step;
            let at_break = base.value() + f_break * slope.value();
            if at_break >= target {
                break;
            }
            base.add(room);
            slope.add(-step);
        }
        let s = slope.value();
        if s <= 0.0 {
            return 1.0;
        }
        ((target - base.value()) / s).clamp(0.0, 1.0)
    }
}

/// This worker's spend partial at `price` over all hosts of `problem`.
pub fn spend_partial(problem: &Problem, price: f64) -> SpendPartial {
    spend_partial_keeping(problem, price, &mut Vec::new()).capped
}

/// The spend at one price with the problem's caps and without them: both come from the same host
/// demands, and the second is the first observation of the non-polite problem at the same bandwidth
/// for free (see [`super::sweep`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SpendPair {
    /// sum_h min(C_h, D_h): the spend of the problem being solved.
    pub capped: SpendPartial,
    /// sum_h D_h: the same hosts with every cap lifted.
    pub uncapped: SpendPartial,
}

impl Combine for SpendPair {
    fn combine(&mut self, other: Self) {
        self.capped.combine(other.capped);
        self.uncapped.combine(other.uncapped);
    }
}

/// [`spend_partial`] with and without the caps, keeping in `binding` the demand at `price` of every
/// host whose cap it may reach (left limit not below the cap), by ascending host, so that pricing
/// the hosts at the converged multiplier needs no further pass over the pages: the others are
/// priced at it whatever its step share.
pub fn spend_partial_keeping(
    problem: &Problem,
    price: f64,
    binding: &mut Vec<(usize, Demand)>,
) -> SpendPair {
    binding.clear();
    let empty = SpendPartial {
        price,
        next_above: f64::INFINITY,
        next_below: 0.0,
        ..Default::default()
    };
    let mut spending = Spending {
        problem,
        binding,
        free: empty.clone(),
        capped: empty.clone(),
        uncapped: empty,
        level: ExactSum::new(),
        levels: [0.0; SINGLES],
        slopes: [0.0; SINGLES],
    };
    demand::walk_demands(problem, &demand::At::new(price), &mut spending);
    let Spending {
        mut free,
        mut capped,
        mut uncapped,
        level,
        ..
    } = spending;
    free.right.merge(&level);
    free.left.merge(&level);
    capped.combine(free.clone());
    uncapped.combine(free);
    SpendPair { capped, uncapped }
}

/// Writes the demands and slopes of one-page hosts below their `caps` to `levels` and `slopes` (0
/// for the others), given their pages' responses; returns whether there are others. Many at a time
/// in vector instructions.
#[inline(always)]
fn level_singles(
    rate: &[f64],
    slope: &[f64],
    caps: &[f64],
    levels: &mut [f64; SINGLES],
    slopes: &mut [f64; SINGLES],
) -> bool {
    crate::wide::wide(
        #[inline(always)]
        || {
            let mut others = false;
            let out = levels.iter_mut().zip(slopes.iter_mut());
            for (((&r, &s), &cap), (level, slope)) in rate.iter().zip(slope).zip(caps).zip(out) {
                let d = Demand::one_smooth(r, s);
                let below = d.right < cap;
                *level = if below { d.right } else { 0.0 };
                *slope = if below { d.slope } else { 0.0 };
                others |= !below;
            }
            others
        },
    )
}

/// Hosts of one page [`Spending`] sums at a time.
const SINGLES: usize = 256;
/// The caps of as many hosts without politeness.
static NO_CAPS: [f64; SINGLES] = [f64::INFINITY; SINGLES];

/// The sums of [`spend_partial_keeping`] as its walk goes.
struct Spending<'a> {
    problem: &'a Problem<'a>,
    binding: &'a mut Vec<(usize, Demand)>,
    /// Hosts whose cap binds on neither side of the price: they add the same to both partials, so
    /// they are added once, here, and this to both at the end (exact sums: the same bits). Most
    /// hosts are free, so this halves the work per host, which is most of a round's work on hosts
    /// of one page.
    free: SpendPartial,
    capped: SpendPartial,
    uncapped: SpendPartial,
    /// Of the free hosts, those without a step at the price (left = right, most of them): they add
    /// their demand once, here, which goes to both of `free`'s sums at the end: one exact
    /// addition saved a host.
    level: ExactSum,
    /// Scratch for a stretch of one-page hosts' demands and slopes (kept: zeroing them for each
    /// stretch cost as much as summing them).
    levels: [f64; SINGLES],
    slopes: [f64; SINGLES],
}

impl demand::HostDemands for &mut Spending<'_> {
    #[inline(always)]
    fn host(&mut self, h: usize, d: &Demand) {
        let cap = self.problem.cap(h);
        // (a host below its cap on the left stays below it whatever share of its steps is taken)
        if d.left >= cap || d.left.is_nan() {
            self.binding.push((h, *d));
        }
        if d.left == d.right && d.right < cap {
            self.level.add(d.right);
            self.free.add_slope_and_steps(f64::INFINITY, d);
        } else if d.left <= cap && d.right < cap {
            self.free.add_host(f64::INFINITY, d);
        } else {
            self.capped.add_host(cap, d);
            self.uncapped.add_host(f64::INFINITY, d);
        }
    }

    // (out of line: a call a chunk costs nothing, and inlined, it slowed the walk's other loops)
    #[inline(never)]
    fn smooth_singles(&mut self, first: usize, rate: &[f64], slope: &[f64]) {
        // the level free hosts' demands and slopes, summed a slice at a time (0 for the others)
        let this = &mut **self;
        for (start, (rate, slope)) in (first..)
            .step_by(SINGLES)
            .zip(rate.chunks(SINGLES).zip(slope.chunks(SINGLES)))
        {
            let n = rate.len();
            let hosts = start..start + n;
            // below its cap (so not NaN): a level free host, as `host` takes it, no steps; the
            // others (rare) go to `host` after, one by one
            let others = match this.problem.caps(hosts.clone()) {
                Some(caps) => level_singles(rate, slope, caps, &mut this.levels, &mut this.slopes),
                None => level_singles(
                    rate,
                    slope,
                    &NO_CAPS[..n],
                    &mut this.levels,
                    &mut this.slopes,
                ),
            };
            if others {
                for (h, (&r, &s)) in hosts.zip(rate.iter().zip(slope)) {
                    let d = Demand::one_smooth(r, s);
                    if d.right >= this.problem.cap(h) || d.right.is_nan() {
                        (&mut *this).host(h, &d);
                    }
                }
            }
            this.level.add_slice_mut(&mut this.levels[..n]);
            this.free.slope.add_slice_mut(&mut this.slopes[..n]);
        }
    }
}

impl SpendPartial {
    /// Adds a host of cap `cap` and demand `d` at the partial's price.
    #[inline(always)]
    fn add_host(&mut self, cap: f64, d: &Demand) {
        self.right.add(cap.min(d.right));
        self.left.add(cap.min(d.left));
        self.add_slope_and_steps(cap, d);
    }

    /// [`SpendPartial::add_host`] but for the two limits.
    #[inline(always)]
    fn add_slope_and_steps(&mut self, cap: f64, d: &Demand) {
        if d.right < cap {
            self.slope.add(d.slope);
        }
        self.next_above = self.next_above.min(d.next_above);
        self.next_below = self.next_below.max(d.next_below);
        if d.left > d.right {
            if d.left <= cap {
                self.tie_linear.add(d.left - d.right);
            } else if d.right < cap {
                self.tie_crossing.push((cap - d.right, d.left - d.right));
            }
        }
    }
}

/// What a worker knows before the first round: the most it can spend, and moments for a first guess.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Prelude {
    /// sum_h min(C_h, D_h(0+)): the spend at price zero (may be +inf).
    pub max_spend: ExactSum,
    /// sum_h min(C_h, sum of the floors): the spend at an infinite price (0 without floors).
    pub min_spend: ExactSum,
    /// sum of w over pages whose response behaves like w/theta (harmonic and proportional families).
    pub inverse_moment: ExactSum,
    /// sum of a over pages whose response behaves like a/sqrt(theta) - b (binary families).
    pub root_moment: ExactSum,
    /// sum of b over the same pages.
    pub offset_moment: ExactSum,
    /// The pages of the families of response lambda G(mu / (lambda theta)), by switch price (the
    /// moments above hold the other pages).
    pub sketch: SwitchSketch,
}

impl Combine for Prelude {
    fn combine(&mut self, other: Self) {
        self.max_spend.merge(&other.max_spend);
        self.min_spend.merge(&other.min_spend);
        self.inverse_moment.merge(&other.inverse_moment);
        self.root_moment.merge(&other.root_moment);
        self.offset_moment.merge(&other.offset_moment);
        self.sketch.combine(other.sketch);
    }
}

/// This worker's prelude.
pub fn prelude(problem: &Problem) -> Prelude {
    let families = [false, true].map(|c| Response::of(problem.objective(), c));
    if problem.is_bounded() || !families.into_iter().all(SwitchSketch::models) {
        return prelude_generic(problem);
    }
    // Without bounds a page's box is [0, its family's upper], and the pages the sketch models
    // are the ones with an upper above 0 (a change rate above 0), which the sketch tells apart
    // itself: it takes the pages in runs of one family, wherever hosts begin, and the hosts their
    // uppers. The same sums as the generic pass, in two tight loops (hosts of one page made it a
    // dispatch a page).
    let mut p = Prelude::default();
    let pages = problem.pages();
    let (mu, lambda, complete) = (
        pages.importance(),
        pages.change_rate(),
        pages.complete_obs(),
    );
    p.sketch.add_pages(families, mu, lambda, complete);
    let mut h = 0;
    let mut spends = [0.0; SINGLES];
    while h < problem.hosts() {
        // hosts of one page in a stretch, their spends summed a slice at a time
        // (their pages in a row from the first's, a run of one family at a time)
        let singles = super::one_page_hosts(pages.offsets(), h..problem.hosts());
        let (first, end) = (pages.offsets()[h], pages.offsets()[h] + singles);
        for block in (first..end).step_by(SINGLES) {
            for run in demand::runs(problem, block..(block + SINGLES).min(end)) {
                let family = families[complete[run.start] as usize];
                let spends = &mut spends[..run.len()];
                for (spend, i) in spends.iter_mut().zip(run) {
                    let host = h + (i - first);
                    *spend = problem.cap(host).min(0.0 + family.upper(problem.page(i)));
                }
                p.max_spend.add_slice_mut(spends);
            }
        }
        h += singles;
        if h == problem.hosts() {
            break;
        }
        let mut max_demand = 0.0;
        for i in problem.host_pages(h) {
            max_demand += families[complete[i] as usize].upper(problem.page(i));
        }
        p.max_spend.add(problem.cap(h).min(max_demand));
        h += 1;
    }
    // (the least spend is 0 without bounds: nothing to add)
    p
}

/// [`prelude`] page by page through the pages' bounds and responses: the reference.
pub fn prelude_generic(problem: &Problem) -> Prelude {
    use crate::objective::Response::*;
    let mut p = Prelude::default();
    for h in 0..problem.hosts() {
        let (mut max_demand, mut min_demand) = (0.0, 0.0);
        for i in problem.host_pages(h) {
            let (page, response) = (problem.page(i), problem.response(i));
            let (mu, lambda) = (page.importance, page.change_rate);
            let (lo, hi) = problem.bounds(h, i);
            max_demand += hi;
            min_demand += lo;
            if hi <= 0.0 {
                continue;
            }
            match response {
                HarmonicIncomplete | HarmonicComplete | BinaryPoisson | BinaryComplete => {
                    p.sketch.add(response, mu, lambda)
                }
                ImportanceProportional => p.inverse_moment.add(mu),
                ChangeRateProportional => p.inverse_moment.add(lambda),
                Uniform => p.inverse_moment.add(1.0),
                FixedInterval => {
                    // frequent crawls: x = sqrt(2c) + 2c/3 + ..., so rho ~ sqrt(mu lambda/(2 theta)) - lambda/3
                    p.root_moment.add((0.5 * mu * lambda).sqrt());
                    p.offset_moment.add(lambda / 3.0);
                }
                BinaryDiscrete => {
                    // the Poisson form with mu' = mu / (1 - Delta), lambda' = Delta / ((1 - Delta) slot)
                    let slot = problem.slot_days();
                    let (delta, keep) = crate::objective::discrete::slot_change(lambda, slot);
                    if delta < 1.0 {
                        p.root_moment.add((mu * delta / slot).sqrt() / keep);
                        p.offset_moment.add(delta / keep / slot);
                    }
                }
            }
        }
        p.max_spend.add(problem.cap(h).min(max_demand));
        p.min_spend.add(problem.cap(h).min(min_demand));
    }
    p
}

impl Prelude {
    /// A first price: the root of the sketched spend plus A/theta + B/sqrt(theta) - L, the
    /// uncapped, unclipped spend of the inverse (w/theta) and square-root (sqrt(mu lambda/theta) -
    /// lambda) families, at `bandwidth`.
    pub fn guess(&self, bandwidth: f64) -> f64 {
        let (a, b, l) = (
            self.inverse_moment.value(),
            self.root_moment.value(),
            self.offset_moment.value(),
        );
        let c = bandwidth + l;
        let s = if a > 0.0 {
            2.0 * c / (b + (b * b + 4.0 * a * c).sqrt())
        } else if b > 0.0 {
            c / b
        } else {
            1.0
        };
        let moments_only = 1.0 / (s * s);
        if self.sketch.is_empty() {
            return moments_only;
        }
        let curve = self.sketch.curve();
        let excess = |theta: f64| curve.spend(theta) + a / theta + b / theta.sqrt() - c;
        bisect_decreasing(excess, 1.0).unwrap_or(moments_only)
    }
}

/// The price at which a non-increasing `f` crosses zero, by doubling from `start` to a bracket and
/// bisecting it in log; None if `f` keeps one sign over every positive f64.
fn bisect_decreasing(f: impl Fn(f64) -> f64, start: f64) -> Option<f64> {
    let (mut lo, mut hi) = (start, start);
    // a bracket [lo, hi] with f(lo) > 0 >= f(hi), doubling away from the start (at most about
    // 1100 times: the whole f64 range)
    if f(start) > 0.0 {
        while f(hi) > 0.0 {
            lo = hi;
            hi *= 2.0;
            if !hi.is_finite() {
                return None;
            }
        }
    } else {
        while f(lo) <= 0.0 {
            hi = lo;
            lo *= 0.5;
            if lo == 0.0 {
                return None;
            }
        }
    }
    // each step halves the bracket in log: 64 steps from an octave leave far less than an ulp
    for _ in 0..64 {
        let mid = lo.sqrt() * hi.sqrt(); // (lo * hi overflows beyond 1e154)
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo.sqrt() * hi.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;
    use crate::solve::pages::PagesBuilder;
    use crate::units::PerDay;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_prelude_without_bounds_is_the_generic_one() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut b = PagesBuilder::new();
        for h in 0..400 {
            // hosts of one page and of many, runs of one observability and mixes, pages that
            // never change or do not matter, caps that bind on what the pages could take or not
            let n = if h % 3 == 0 {
                1
            } else {
                rng.random_range(1..30)
            };
            let mixed = h % 4 == 0;
            let pages: Vec<(f64, f64, bool)> = (0..n)
                .map(|k| {
                    let mu = if k % 11 == 5 {
                        0.0
                    } else {
                        rng.random_range(0.01..50.0)
                    };
                    let lambda = if k % 7 == 3 {
                        0.0
                    } else {
                        rng.random_range(1e-3..5.0)
                    };
                    (
                        mu,
                        lambda,
                        if mixed {
                            rng.random::<bool>()
                        } else {
                            h % 2 == 0
                        },
                    )
                })
                .collect();
            // (no infinite cap: one would make the most every pass can spend infinite)
            let cap = if h % 5 == 0 {
                1e6
            } else {
                rng.random_range(0.1..40.0)
            };
            b.push_host(PerDay(cap), pages);
        }
        let pages = b.build().unwrap();
        let mut compared = 0;
        for objective in Objective::ALL {
            let problem = Problem::new(&pages, objective, 100.0).unwrap();
            let (fast, generic) = (prelude(&problem), prelude_generic(&problem));
            let values = |p: &Prelude| {
                [
                    &p.max_spend,
                    &p.min_spend,
                    &p.inverse_moment,
                    &p.root_moment,
                    &p.offset_moment,
                ]
                .map(|s| s.value().to_bits())
            };
            assert_eq!(values(&fast), values(&generic), "{objective:?}");
            assert_eq!(fast.sketch, generic.sketch, "{objective:?}");
            compared += !fast.sketch.is_empty() as u32;
        }
        // harmonic, binary and the objectives of their families took the fast pass
        assert!(compared >= 2, "{compared}");
    }
}
