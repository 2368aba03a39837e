//! A host's demand D_h(theta) = sum of its pages' best responses at one price, with what the
//! multiplier search needs to move: both one-sided limits at a step, the slope, the nearest steps.
//!
//! Why two paths: the demand is the solver's inner loop (every round of the global search and every
//! local search of a capped host walks all pages), and dispatching on each page's [`Response`] costs
//! more than the response itself. Pages of one objective come in runs of one family (a host's pages
//! are mostly of one observability), so [`demand`] walks a host in runs of equal family and gives
//! each run of a smooth family (no jump) a loop specialised to it. Each page still contributes the
//! same terms in the same order as in [`demand_generic`], the per-page reference, so the two agree
//! bit for bit (tested below), but for the harmonic family with incomplete observations, the most
//! common, whose loop also saves divisions and agrees to a few ulps.

use super::problem::Problem;
use crate::objective::{binary, harmonic, proportional, Page, Response};

/// Relative half-width of the window in which step responses are smeared into a slope for Newton.
///
/// Step responses (complete observations, binary objective) have zero slope almost everywhere; a
/// staircase of many small steps still behaves like a smooth curve at the scale of a Newton step, and
/// this window estimates that curve's slope from the steps near the price.
pub const STEP_WINDOW: f64 = 0.05;

/// Demand of a set of pages at one price.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// Demand just above the price (right limit), fetches per day.
    pub right: f64,
    /// Demand just below the price (left limit): larger than `right` only when steps sit at the price.
    pub left: f64,
    /// d demand / d price: the smooth responses' slope plus the smeared steps near the price (<= 0).
    pub slope: f64,
    /// The smallest step price above the price (+inf if none).
    pub next_above: f64,
    /// The largest step price below the price (0 if none).
    pub next_below: f64,
}

impl Demand {
    fn zero() -> Self {
        Demand {
            right: 0.0,
            left: 0.0,
            slope: 0.0,
            next_above: f64::INFINITY,
            next_below: 0.0,
        }
    }
}

/// One price and what every page's contribution to the demand at it needs: computed once per price
/// (its divisions cost a host of one page as much as the page itself).
#[derive(Clone, Copy)]
pub struct At {
    price: f64,
    /// 1 / price.
    inv_price: f64,
    /// The window around the price over which steps are smeared ([`STEP_WINDOW`]).
    window_lo: f64,
    window_hi: f64,
    /// 1 / the window's width.
    step_density: f64,
}

impl At {
    /// What the demand at `price` needs.
    pub fn new(price: f64) -> Self {
        let (window_lo, window_hi) = (price / (1.0 + STEP_WINDOW), price * (1.0 + STEP_WINDOW));
        At {
            price,
            inv_price: 1.0 / price,
            window_lo,
            window_hi,
            step_density: 1.0 / (window_hi - window_lo),
        }
    }
}

/// A page's box [lo, hi] and whether hi cuts its family short (a min refetch interval).
#[derive(Clone, Copy)]
struct PageBox {
    lo: f64,
    hi: f64,
    cut: bool,
}

impl PageBox {
    fn of(problem: &Problem, h: usize, i: usize, page: Page, response: Response) -> Self {
        let (lo, hi) = problem.bounds(h, i);
        PageBox {
            lo,
            hi,
            cut: hi < response.upper(page),
        }
    }

    /// A rate within the box (the families clip at their own upper already).
    #[inline]
    fn clip(&self, r: f64) -> f64 {
        r.max(self.lo).min(self.hi)
    }

    /// Whether a response of `r` moves with the price (not held at a bound).
    #[inline]
    fn free(&self, r: f64) -> bool {
        r > self.lo && !(self.cut && r >= self.hi)
    }
}

/// Adds one page's response at `at` to `d`, within its box: the reference for every family.
#[inline]
fn add_page(d: &mut Demand, page: Page, response: Response, b: PageBox, at: &At) {
    let price = at.price;
    let r = response.rate(page, price);
    let jump = response.jump(page);
    d.right += b.clip(r);
    d.left += if jump.is_some() {
        b.clip(response.rate_left(page, price))
    } else {
        b.clip(r)
    };
    if b.free(r) {
        d.slope += response.slope(page, price, r); // the continuous part (0 for pure steps)
    }
    // a jump the box does not swallow
    let step = jump
        .filter(|&step| b.clip(response.rate_left(page, step)) > b.clip(response.rate(page, step)));
    if let Some(step) = step {
        if step > price {
            d.next_above = d.next_above.min(step);
        } else if step < price {
            d.next_below = d.next_below.max(step);
        }
        if step > at.window_lo && step < at.window_hi {
            // the step's size spread over the window: the staircase's average slope
            let size = b.clip(response.rate_left(page, step)) - b.clip(response.rate(page, step));
            d.slope -= size * at.step_density;
        }
    }
}

/// What to do with a run of pages of one smooth family (no jump, no floor), given the family's
/// response `rate(mu, lambda)` and slope `slope(mu, lambda, rate)` at one price as inlinable closures.
pub trait SmoothRun {
    /// Visits the run's pages (importance and change rate columns).
    fn run(
        &mut self,
        mu: &[f64],
        lambda: &[f64],
        rate: impl Fn(f64, f64) -> f64,
        slope: impl Fn(f64, f64, f64) -> f64,
    );
}

/// Calls `visitor` with `family`'s response and slope at `price` specialised (one instance per
/// family, so the per-page loop has no dispatch); false, without calling it, for the families with a
/// jump (they keep the per-page path).
#[inline(always)]
pub fn with_smooth_family<V: SmoothRun>(
    family: Response,
    price: f64,
    mu: &[f64],
    lambda: &[f64],
    visitor: &mut V,
) -> bool {
    match family {
        Response::HarmonicIncomplete => visitor.run(
            mu,
            lambda,
            |mu, lambda| harmonic::incomplete_rate(mu, lambda, price),
            |_, lambda, r| harmonic::incomplete_slope(lambda, price, r),
        ),
        Response::HarmonicComplete => visitor.run(
            mu,
            lambda,
            |mu, lambda| harmonic::complete_rate(mu, lambda, price),
            |mu, lambda, _| harmonic::complete_slope(mu, lambda, price),
        ),
        Response::BinaryPoisson => visitor.run(
            mu,
            lambda,
            |mu, lambda| binary::poisson_rate(mu, lambda, price),
            |_, lambda, r| binary::poisson_slope(lambda, price, r),
        ),
        Response::ImportanceProportional => visitor.run(
            mu,
            lambda,
            |mu, _| proportional::rate(mu, price),
            |mu, _, _| proportional::slope(mu, price),
        ),
        Response::ChangeRateProportional => visitor.run(
            mu,
            lambda,
            |_, lambda| proportional::rate(lambda, price),
            |_, lambda, _| proportional::slope(lambda, price),
        ),
        Response::Uniform => visitor.run(
            mu,
            lambda,
            |_, _| proportional::rate(1.0, price),
            |_, _, _| proportional::slope(1.0, price),
        ),
        Response::BinaryComplete | Response::FixedInterval | Response::BinaryDiscrete => {
            return false
        }
    }
    true
}

/// The end of the run of pages of one family that starts at page `i` (before `end`).
///
/// A page's family is the objective's for its observability, so a run is a run of equal
/// observability flags, or everything left when both observabilities answer alike.
#[inline]
pub fn run_end(problem: &Problem, i: usize, end: usize) -> usize {
    let objective = problem.objective();
    if Response::of(objective, false) == Response::of(objective, true) {
        return end;
    }
    let complete = &problem.pages().complete_obs()[i..end];
    i + complete.iter().take_while(|&&c| c == complete[0]).count()
}

/// Adds a run of pages of one smooth family without a floor: what [`add_page`] does for such pages
/// (lo = 0, no jump, so left = right), with the family's response inlined into the loop.
impl SmoothRun for Demand {
    #[inline(always)]
    fn run(
        &mut self,
        mu: &[f64],
        lambda: &[f64],
        rate: impl Fn(f64, f64) -> f64,
        slope: impl Fn(f64, f64, f64) -> f64,
    ) {
        let (mut right, mut left, mut sum_slope) = (self.right, self.left, self.slope);
        for (&mu, &lambda) in mu.iter().zip(lambda) {
            let r = rate(mu, lambda);
            right += r.max(0.0);
            left += r.max(0.0);
            if r > 0.0 {
                sum_slope += slope(mu, lambda, r);
            }
        }
        (self.right, self.left, self.slope) = (right, left, sum_slope);
    }
}

/// [`add_page`] for a page of a family with a jump, on a host without a floor, evaluating the left
/// limit at the price only at the jump itself: every family's `rate_left` equals its `rate` at any
/// other price, and for fixed-interval crawls each evaluation is a Lambert W (this halves them).
#[inline]
fn add_jump_page(d: &mut Demand, page: Page, response: Response, at: &At) {
    let price = at.price;
    let r = response.rate(page, price);
    let jump = response.jump(page);
    d.right += r.max(0.0);
    d.left += match jump {
        Some(step) if step == price => response.rate_left(page, price).max(0.0),
        _ => r.max(0.0),
    };
    if r > 0.0 {
        d.slope += response.slope(page, price, r);
    }
    let step = jump.filter(|&step| {
        response.rate_left(page, step).max(0.0) > response.rate(page, step).max(0.0)
    });
    if let Some(step) = step {
        if step > price {
            d.next_above = d.next_above.min(step);
        } else if step < price {
            d.next_below = d.next_below.max(step);
        }
        if step > at.window_lo && step < at.window_hi {
            let size = response.rate_left(page, step).max(0.0) - response.rate(page, step).max(0.0);
            d.slope -= size * at.step_density;
        }
    }
}

/// Adds a run of harmonic pages with incomplete observations without a floor, rate and slope from
/// one square root and two divisions where [`harmonic::incomplete_rate`] and
/// [`harmonic::incomplete_slope`] take four divisions (the loop is bound by the divider).
///
/// With q = mu/theta and s = sqrt(1 + 4q/lambda), NeurIPS'19 eq. 5's root is r = 2q/(1+s), and
/// differentiating r (r + lambda) = q lambda gives dr/dtheta = -r (r+lambda)/(theta (2r+lambda))
/// = -q/(theta s), as r (r+lambda) = q lambda and 2r + lambda = lambda s; both share 1/(s (1+s)).
/// Each agrees with the reference to a few ulps (tested); pages the identities do not cover (never
/// changing, or an infinite q) take the reference.
#[inline]
fn add_harmonic_incomplete_run(d: &mut Demand, mu: &[f64], lambda: &[f64], at: &At) {
    let (price, inv_price) = (at.price, at.inv_price);
    let (mut right, mut left, mut slope) = (d.right, d.left, d.slope);
    for (&mu, &lambda) in mu.iter().zip(lambda) {
        let q = mu * inv_price;
        let (r, dr) = if lambda > 0.0 && q.is_finite() {
            let s = (1.0 + 4.0 * q / lambda).sqrt();
            let shared = 1.0 / (s * (1.0 + s));
            (2.0 * q * s * shared, -(q * inv_price) * (1.0 + s) * shared)
        } else {
            let r = harmonic::incomplete_rate(mu, lambda, price);
            (r, harmonic::incomplete_slope(lambda, price, r))
        };
        right += r.max(0.0);
        left += r.max(0.0);
        if r > 0.0 {
            slope += dr;
        }
    }
    (d.right, d.left, d.slope) = (right, left, slope);
}

/// Demand of host `h`'s pages at `price`, each within its box, summed in page order (deterministic).
///
/// Equals [`demand_generic`], bit for bit but for harmonic pages with incomplete observations (a few
/// ulps per page, see [`add_harmonic_incomplete_run`]); faster on problems without bounds besides
/// the families' own (see the module notes).
#[inline]
pub fn demand(problem: &Problem, h: usize, price: f64) -> Demand {
    demand_at(problem, h, &At::new(price))
}

/// [`demand`] at a price prepared once for every host.
#[inline]
pub fn demand_at(problem: &Problem, h: usize, at: &At) -> Demand {
    let price = at.price;
    if problem.is_bounded() {
        return demand_generic(problem, h, price);
    }
    let mut d = Demand::zero();
    let pages = problem.host_pages(h);
    let mut i = pages.start;
    while i < pages.end {
        let (family, end) = (problem.response(i), run_end(problem, i, pages.end));
        let (mu, lambda) = (
            &problem.pages().importance()[i..end],
            &problem.pages().change_rate()[i..end],
        );
        if family == Response::HarmonicIncomplete {
            add_harmonic_incomplete_run(&mut d, mu, lambda, at);
        } else if !with_smooth_family(family, price, mu, lambda, &mut d) {
            for k in i..end {
                add_jump_page(&mut d, problem.page(k), family, at);
            }
        }
        i = end;
    }
    d
}

/// [`demand`] page by page through [`Response`]'s dispatch: the reference the fast path must equal.
pub fn demand_generic(problem: &Problem, h: usize, price: f64) -> Demand {
    let at = At::new(price);
    let mut d = Demand::zero();
    for i in problem.host_pages(h) {
        let (page, response) = (problem.page(i), problem.response(i));
        add_page(
            &mut d,
            page,
            response,
            PageBox::of(problem, h, i, page, response),
            &at,
        );
    }
    d
}

/// The rate of page `i` of host `h` at the host's price, with `fill` of the step at exactly that
/// price taken, within the page's box.
#[inline]
pub fn page_rate(problem: &Problem, h: usize, i: usize, price: f64, fill: f64) -> f64 {
    let (page, response) = (problem.page(i), problem.response(i));
    let b = PageBox::of(problem, h, i, page, response);
    let right = b.clip(response.rate(page, price));
    match response.jump(page) {
        Some(step) if step == price && fill > 0.0 => {
            right + fill * (b.clip(response.rate_left(page, price)) - right)
        }
        _ => right,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;
    use crate::solve::pages::{Pages, PagesBuilder};
    use crate::units::PerDay;
    use proptest::prelude::*;

    /// Relative agreement of the harmonic loop with the reference: a few ulps per page (sums of
    /// terms of one sign keep that relative bound).
    const ULPS: f64 = 8.0 * f64::EPSILON;

    /// The slot of the discrete-time model in these tests: 1 / bandwidth.
    const BANDWIDTH: f64 = 100.0;

    /// Pages on `hosts` hosts from `(k, mu, lambda)`: complete observations for k odd, mostly in
    /// runs (k < 30 is incomplete) as real hosts are, and pages that never change (k % 7 == 0).
    fn mixed_pages(seed: &[(u8, f64, f64)], hosts: usize) -> Pages {
        let mut b = PagesBuilder::new();
        let per_host = seed.len() / hosts + 1;
        for chunk in seed.chunks(per_host) {
            b.push_host(
                PerDay(f64::INFINITY),
                chunk.iter().map(|&(k, mu, lambda)| {
                    let lambda = if k % 7 == 0 { 0.0 } else { lambda };
                    (mu, lambda, k >= 30 && k % 2 == 1)
                }),
            );
        }
        b.build().unwrap()
    }

    fn steps(problem: &Problem, h: usize) -> Vec<f64> {
        problem
            .host_pages(h)
            .filter_map(|i| problem.response(i).jump(problem.page(i)))
            .collect()
    }

    /// Without the harmonic pages every family's loop is the reference's, bit for bit.
    #[test]
    fn runs_of_other_families_equal_the_reference_bit_for_bit() {
        let seed: Vec<(u8, f64, f64)> = (0..400u32)
            .map(|k| {
                (
                    30 + (k % 30) as u8,
                    0.1 + (k % 17) as f64,
                    0.01 * (1 + k % 23) as f64,
                )
            })
            .collect();
        let pages = mixed_pages(&seed, 3);
        let mut with_steps = 0;
        for objective in Objective::ALL {
            if objective == Objective::Harmonic {
                continue;
            }
            let problem = Problem::new(&pages, objective, BANDWIDTH).unwrap();
            for h in 0..problem.hosts() {
                let steps = steps(&problem, h);
                with_steps += steps.len();
                for price in [1e-3, 0.05, 1.0, 30.0].into_iter().chain(steps) {
                    assert_eq!(
                        demand(&problem, h, price),
                        demand_generic(&problem, h, price)
                    );
                }
            }
        }
        assert!(with_steps > 0, "prices at steps were tested");
    }

    proptest! {
        /// The specialised runs give the per-page reference's demand bit for bit, at any price.
        #[test]
        fn runs_equal_the_per_page_reference(
            seed in prop::collection::vec((0u8..60, 1e-6f64..1e6, 1e-6f64..1e3), 1..300),
            hosts in 1usize..6,
            prices in prop::collection::vec(1e-6f64..1e6, 1..6),
        ) {
            let pages = mixed_pages(&seed, hosts);
            for objective in Objective::ALL {
                let problem = Problem::new(&pages, objective, BANDWIDTH).unwrap();
                for h in 0..problem.hosts() {
                    // prices exactly at steps, where left and right limits differ
                    let at_steps = steps(&problem, h).into_iter().take(4);
                    for price in prices.iter().copied().chain(at_steps) {
                        let (fast, reference) =
                            (demand(&problem, h, price), demand_generic(&problem, h, price));
                        // the harmonic runs agree to a few ulps per page, the others bit for bit
                        let near = |a: f64, b: f64| a == b || (a - b).abs() <= ULPS * b.abs();
                        prop_assert!(near(fast.right, reference.right), "{:?} vs {:?}", fast, reference);
                        prop_assert!(near(fast.left, reference.left), "{:?} vs {:?}", fast, reference);
                        prop_assert!(near(fast.slope, reference.slope), "{:?} vs {:?}", fast, reference);
                        prop_assert_eq!(fast.next_above, reference.next_above);
                        prop_assert_eq!(fast.next_below, reference.next_below);
                    }
                }
            }
        }
    }

    /// The specialised path assumes no jump: no family it takes may have one, and every objective's
    /// main family (incomplete observations) but the step-shaped ones takes it.
    #[test]
    fn only_families_without_a_jump_are_specialised() {
        for family in Response::ALL {
            let smooth = with_smooth_family(family, 1.0, &[], &[], &mut Demand::zero());
            for (mu, lambda) in [(1.0, 0.5), (1e-6, 1e3), (1e6, 1e-6), (1.0, 100.0)] {
                let page = Page {
                    importance: mu,
                    change_rate: lambda,
                    slot_days: 0.01,
                };
                assert!(!smooth || family.jump(page).is_none(), "{family:?}");
            }
        }
        for objective in [Objective::Harmonic, Objective::Binary, Objective::Uniform] {
            let family = Response::of(objective, false);
            assert!(with_smooth_family(
                family,
                1.0,
                &[],
                &[],
                &mut Demand::zero()
            ));
        }
    }
}
