//! A host's demand D_h(theta) = sum of its pages' best responses at one price, with what the
//! multiplier search needs to move: both one-sided limits at a step, the slope, the nearest steps.
//!
//! Why two paths: the demand is the solver's inner loop (every round of the global search and
//! every local search of a capped host walks all pages), and dispatching on each page's
//! [`Response`] costs more than the response itself. So [`demand`] and [`walk_demands`] take pages
//! in chunks: each run of one family in a chunk gets a loop specialised to it, and where a chunk
//! mixes two smooth families (no jump; harmonic pages of both observabilities) both families'
//! loops run over the whole chunk and each page takes its own family's answer. Each page still
//! contributes the same terms in the same order as in [`demand_generic`], the per-page reference,
//! so the two agree bit for bit (tested below), but for the harmonic family with incomplete
//! observations, the most common, whose loop also saves divisions and agrees to a few ulps.

use super::problem::Problem;
use crate::objective::{binary, harmonic, proportional, Page, Response};
use crate::wide::{wide, wide_if};

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

    /// The demand of a host of one page of a smooth family, given the page's response `rate` and
    /// its `slope` as the maps give them (a rate of 0 or below: the page is starved): what the
    /// sums of [`walk_demands`] give such a host, to the sign of a zero.
    #[inline(always)]
    pub fn one_smooth(rate: f64, slope: f64) -> Self {
        let right = 0.0 + rate.max(0.0);
        Demand {
            right,
            left: right,
            slope: if rate > 0.0 { 0.0 + slope } else { 0.0 },
            ..Demand::zero()
        }
    }
}

/// What a walk over every host's demand ([`walk_demands`]) does with them; any
/// `FnMut(host, &Demand)` is one.
pub trait HostDemands {
    /// Takes host `h`'s demand.
    fn host(&mut self, h: usize, d: &Demand);

    /// Takes hosts `first..first + rate.len()`, each of one page of a smooth family, given the
    /// pages' responses and slopes: the same as [`HostDemands::host`] with [`Demand::one_smooth`]
    /// of each, in order (the default). A sink overrides it to take a stretch of them in one
    /// tight loop: per host, the general call costs more than the page's response.
    #[inline(always)]
    fn smooth_singles(&mut self, first: usize, rate: &[f64], slope: &[f64]) {
        for (k, (&r, &s)) in rate.iter().zip(slope).enumerate() {
            self.host(first + k, &Demand::one_smooth(r, s));
        }
    }
}

impl<F: FnMut(usize, &Demand)> HostDemands for F {
    #[inline(always)]
    fn host(&mut self, h: usize, d: &Demand) {
        self(h, d)
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

/// The runs of one family that make up `pages`, in order: as [`run_end`] cuts them, but all of
/// `pages` at once when they share a family, tested without an early exit (which vector
/// instructions do many flags at a time, where [`run_end`] takes one at a time).
#[inline(always)]
pub fn runs<'p>(
    problem: &'p Problem,
    pages: std::ops::Range<usize>,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'p {
    let objective = problem.objective();
    let complete = &problem.pages().complete_obs()[pages.clone()];
    let one = Response::of(objective, false) == Response::of(objective, true)
        || complete
            .iter()
            .fold(true, |same, &c| same & (c == complete[0]));
    let mut i = pages.start;
    std::iter::from_fn(move || {
        if i >= pages.end {
            return None;
        }
        let end = if one {
            pages.end
        } else {
            run_end(problem, i, pages.end)
        };
        let run = i..end;
        i = end;
        Some(run)
    })
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

/// The rate and slope at `at` of a harmonic page with incomplete observations, from one square
/// root and two divisions where [`harmonic::incomplete_rate`] and [`harmonic::incomplete_slope`]
/// take four divisions (the demand's loops are bound by the divider).
///
/// With q = mu/theta and s = sqrt(1 + 4q/lambda), NeurIPS'19 eq. 5's root is r = 2q/(1+s), and
/// differentiating r (r + lambda) = q lambda gives dr/dtheta = -r (r+lambda)/(theta (2r+lambda))
/// = -q/(theta s), as r (r+lambda) = q lambda and 2r + lambda = lambda s; both share 1/(s (1+s)).
/// Each agrees with the reference to a few ulps (tested); pages the identities do not cover (never
/// changing, or an infinite q) take the reference.
#[inline(always)]
fn harmonic_incomplete_page(mu: f64, lambda: f64, at: &At) -> (f64, f64) {
    let (price, inv_price) = (at.price, at.inv_price);
    let q = mu * inv_price;
    if lambda > 0.0 && q.is_finite() {
        let s = (1.0 + 4.0 * q / lambda).sqrt();
        let shared = 1.0 / (s * (1.0 + s));
        (2.0 * q * s * shared, -(q * inv_price) * (1.0 + s) * shared)
    } else {
        let r = harmonic::incomplete_rate(mu, lambda, price);
        (r, harmonic::incomplete_slope(lambda, price, r))
    }
}

/// [`harmonic_incomplete_page`] of every page of a run, into `rate` and `slope`: the identities
/// computed for every page without a branch, so that the compiler can use vector instructions
/// (two pages per division), then the reference for the pages they do not cover (rare).
#[inline(always)]
fn harmonic_incomplete_map(
    mu: &[f64],
    lambda: &[f64],
    at: &At,
    rate: &mut [f64],
    slope: &mut [f64],
) {
    let inv_price = at.inv_price;
    let out = rate.iter_mut().zip(slope.iter_mut());
    let mut exceptions = false;
    for ((&mu, &lambda), (r, dr)) in mu.iter().zip(lambda).zip(out) {
        let q = mu * inv_price;
        let s = (1.0 + 4.0 * q / lambda).sqrt();
        let shared = 1.0 / (s * (1.0 + s));
        *r = 2.0 * q * s * shared;
        *dr = -(q * inv_price) * (1.0 + s) * shared;
        exceptions |= !(lambda > 0.0 && q.is_finite());
    }
    if exceptions {
        for ((&mu, &lambda), (r, dr)) in mu.iter().zip(lambda).zip(rate.iter_mut().zip(slope)) {
            (*r, *dr) = harmonic_incomplete_page(mu, lambda, at);
        }
    }
}

/// [`binary::poisson_rate`] and [`binary::poisson_slope`] (where the rate is positive) of every
/// page of a run at `price`, into `rate` and `slope`, bit for bit: the same arithmetic for every
/// page with the starved ones (about half at the optimum) selected to 0 instead of branched
/// around, which the CPU mispredicted on every other page and which kept the loop from vector
/// instructions; then the reference for the pages the formula does not cover (an infinite q).
#[inline(always)]
fn binary_poisson_map(mu: &[f64], lambda: &[f64], price: f64, rate: &mut [f64], slope: &mut [f64]) {
    let out = rate.iter_mut().zip(slope.iter_mut());
    let mut exceptions = false;
    for ((&mu, &lambda), (r, dr)) in mu.iter().zip(lambda).zip(out) {
        let q = mu / price;
        let fed = lambda > 0.0 && q > lambda;
        let formula = binary::fed_rate(q, lambda);
        *r = if fed { formula } else { 0.0 };
        *dr = if fed {
            -(formula + lambda) / (2.0 * price)
        } else {
            0.0
        };
        exceptions |= fed && !formula.is_finite();
    }
    if exceptions {
        for ((&mu, &lambda), (r, dr)) in mu.iter().zip(lambda).zip(rate.iter_mut().zip(slope)) {
            *r = binary::poisson_rate(mu, lambda, price);
            *dr = if *r > 0.0 {
                binary::poisson_slope(lambda, price, *r)
            } else {
                0.0
            };
        }
    }
}

/// [`harmonic::complete_rate`] and [`harmonic::complete_slope`] (where the rate is positive) of
/// every page of a run at `price`, into `rate` and `slope`, bit for bit: both selected instead of
/// branched to, so that the compiler can use vector instructions. (Those two functions called in
/// this loop instead: 838.6M instructions for the solver's bench process on 200K Zipf pages,
/// against 762.2M.)
#[inline(always)]
fn harmonic_complete_map(
    mu: &[f64],
    lambda: &[f64],
    price: f64,
    rate: &mut [f64],
    slope: &mut [f64],
) {
    let out = rate.iter_mut().zip(slope.iter_mut());
    for ((&mu, &lambda), (r, dr)) in mu.iter().zip(lambda).zip(out) {
        let q = mu / price;
        let changes = lambda > 0.0;
        *r = if changes { lambda.min(q) } else { 0.0 };
        // (as complete_slope tests it: a NaN q is not at the clip)
        let free = changes && (q < lambda || q.is_nan());
        *dr = if *r > 0.0 && free { -q / price } else { 0.0 };
    }
}

/// Whether `family`'s response is continuous in the price (no jump): the families
/// [`with_smooth_family`] specialises.
#[inline]
pub fn is_smooth(family: Response) -> bool {
    !matches!(
        family,
        Response::BinaryComplete | Response::FixedInterval | Response::BinaryDiscrete
    )
}

/// Pages in a run of one family from which the walk computes its responses in [`wide`] loops.
const WIDE_RUN: usize = 32;

/// Pages whose responses the walk over every host computes before summing them by host: enough
/// independent divisions and square roots for the CPU to overlap, few enough for the stack.
const CHUNK: usize = 256;

/// A run of one smooth family's responses and slopes at one price, page by page.
struct ChunkMap<'a> {
    rate: &'a mut [f64],
    slope: &'a mut [f64],
}

impl SmoothRun for ChunkMap<'_> {
    #[inline(always)]
    fn run(
        &mut self,
        mu: &[f64],
        lambda: &[f64],
        rate: impl Fn(f64, f64) -> f64,
        slope: impl Fn(f64, f64, f64) -> f64,
    ) {
        let out = self.rate.iter_mut().zip(self.slope.iter_mut());
        for ((&mu, &lambda), (r, s)) in mu.iter().zip(lambda).zip(out) {
            *r = rate(mu, lambda);
            // many pages of the binary objective are starved: their slope is not needed
            *s = if *r > 0.0 { slope(mu, lambda, *r) } else { 0.0 };
        }
    }
}

/// The responses and slopes of up to [`CHUNK`] consecutive pages at one price, computed before
/// they are summed by host: the chain of divisions and square roots of many pages at once, which
/// the CPU overlaps and vector instructions share.
struct Chunk {
    /// The chunk's first page.
    start: usize,
    rate: [f64; CHUNK],
    slope: [f64; CHUNK],
    /// Whether every page of the chunk is of a smooth family (else the pages of a family with a
    /// jump are left to the sums, [`add_jump_page`]).
    smooth: bool,
    /// The second family's responses, where a chunk mixes two smooth families.
    other_rate: [f64; CHUNK],
    other_slope: [f64; CHUNK],
}

impl Chunk {
    fn new() -> Self {
        Chunk {
            start: 0,
            rate: [0.0; CHUNK],
            slope: [0.0; CHUNK],
            smooth: true,
            other_rate: [0.0; CHUNK],
            other_slope: [0.0; CHUNK],
        }
    }

    /// Computes the responses of pages `pages` (at most [`CHUNK`]) of a problem without bounds
    /// at `at`: each page's as its family gives it, bit for bit.
    #[inline(always)]
    fn respond(&mut self, problem: &Problem, pages: std::ops::Range<usize>, at: &At) {
        let (start, n) = (pages.start, pages.len());
        let columns = problem.pages();
        let mu = &columns.importance()[pages.clone()];
        let lambda = &columns.change_rate()[pages.clone()];
        let complete = &columns.complete_obs()[pages.clone()];
        let families = [false, true].map(|c| Response::of(problem.objective(), c));
        self.start = start;
        self.smooth = true;
        // (every flag tested, without an early exit: many at a time in vector instructions)
        let mixed = families[0] != families[1]
            && complete
                .iter()
                .fold(false, |mixed, &c| mixed | (c != complete[0]));
        if mixed && is_smooth(families[0]) && is_smooth(families[1]) {
            // Both families over the whole chunk, then each page's own taken. Where 1 page in 10
            // has complete observations, runs of one family are 10 pages long on average: each
            // paid its loop's setup, and none was long enough for the wide loops.
            family_map(
                families[0],
                mu,
                lambda,
                at,
                &mut self.rate[..n],
                &mut self.slope[..n],
            );
            let (other_rate, other_slope) = (&mut self.other_rate[..n], &mut self.other_slope[..n]);
            family_map(families[1], mu, lambda, at, other_rate, other_slope);
            let (rate, slope) = (&mut self.rate[..n], &mut self.slope[..n]);
            let (other_rate, other_slope) = (&self.other_rate[..n], &self.other_slope[..n]);
            // (by masks on the bits: a select on the flag compiled to a branch a page)
            for (k, &c) in complete.iter().enumerate() {
                let other = (c as u64).wrapping_neg();
                let pick = |own: f64, second: f64| {
                    f64::from_bits((second.to_bits() & other) | (own.to_bits() & !other))
                };
                rate[k] = pick(rate[k], other_rate[k]);
                slope[k] = pick(slope[k], other_slope[k]);
            }
            return;
        }
        for run in runs(problem, pages) {
            let family = problem.response(run.start);
            self.smooth &= is_smooth(family);
            let k = run.start - start..run.end - start;
            let (rate, slope) = (&mut self.rate[k.clone()], &mut self.slope[k.clone()]);
            family_map(family, &mu[k.clone()], &lambda[k], at, rate, slope);
        }
    }

    /// Adds the responses of pages `part` of the chunk to `d`, in page order (the pages of a
    /// family with a jump through [`add_jump_page`]).
    #[inline(always)]
    fn add_part(&self, d: &mut Demand, problem: &Problem, part: std::ops::Range<usize>, at: &At) {
        let k = part.start - self.start..part.end - self.start;
        let (rate, slope) = (&self.rate[k.clone()], &self.slope[k]);
        if self.smooth {
            add_responses(d, rate, slope);
            return;
        }
        let mut p = part.start;
        while p < part.end {
            let (family, run) = (problem.response(p), run_end(problem, p, part.end));
            let k = p - part.start..run - part.start;
            if is_smooth(family) {
                add_responses(d, &rate[k.clone()], &slope[k]);
            } else {
                for q in p..run {
                    add_jump_page(d, problem.page(q), family, at);
                }
            }
            p = run;
        }
    }
}

/// The responses and slopes at `at` of a run of pages of `family` into `rate` and `slope`
/// (nothing for a family with a jump: [`with_smooth_family`]).
#[inline(always)]
fn family_map(
    family: Response,
    mu: &[f64],
    lambda: &[f64],
    at: &At,
    rate: &mut [f64],
    slope: &mut [f64],
) {
    // (a short run would pay the wide loop's setup for nothing)
    let long = mu.len() >= WIDE_RUN;
    if family == Response::HarmonicIncomplete {
        wide_if(
            long,
            #[inline(always)]
            || harmonic_incomplete_map(mu, lambda, at, rate, slope),
        );
    } else if family == Response::BinaryPoisson {
        wide_if(
            long,
            #[inline(always)]
            || binary_poisson_map(mu, lambda, at.price, rate, slope),
        );
    } else if family == Response::HarmonicComplete {
        wide_if(
            long,
            #[inline(always)]
            || harmonic_complete_map(mu, lambda, at.price, rate, slope),
        );
    } else {
        let mut map = ChunkMap { rate, slope };
        with_smooth_family(family, at.price, mu, lambda, &mut map);
    }
}

/// Adds pages' responses `rate` and slopes `slope` (taken where the rate is positive) to `d`.
#[inline(always)]
fn add_responses(d: &mut Demand, rate: &[f64], slope: &[f64]) {
    let (mut right, mut left, mut sum_slope) = (d.right, d.left, d.slope);
    for (&r, &s) in rate.iter().zip(slope) {
        right += r.max(0.0);
        left += r.max(0.0);
        if r > 0.0 {
            sum_slope += s;
        }
    }
    (d.right, d.left, d.slope) = (right, left, sum_slope);
}

/// Calls `host(h, d)` with every host's demand at `at`, in host order ([`walk_demands`]).
pub fn each_host_demand(problem: &Problem, at: &At, host: impl FnMut(usize, &Demand)) {
    walk_demands(problem, at, host)
}

/// Gives `sink` every host's demand at `at`, in host order: what [`demand_at`] gives for each
/// host, bit for bit, in one walk over the pages.
///
/// Why a walk: on hosts of one page, a call per host computes one page's chain of divisions and
/// square root at a time (about 40 ns), where pages taken in chunks, responses first and sums by
/// host after, overlap in the CPU (measured by `cargo bench -p revisit-core --bench solve`).
pub fn walk_demands(problem: &Problem, at: &At, mut sink: impl HostDemands) {
    let hosts = problem.hosts();
    if problem.is_bounded() {
        for h in 0..hosts {
            sink.host(h, &demand_generic(problem, h, at.price));
        }
        return;
    }
    let pages = problem.pages();
    let complete = pages.complete_obs();
    let families = [false, true].map(|c| Response::of(problem.objective(), c));
    let smooth = families.map(is_smooth);
    let mut chunk = Chunk::new();
    let mut h = 0;
    let mut host_end = if hosts > 0 {
        problem.host_pages(0).end
    } else {
        0
    };
    let mut d = Demand::zero();
    let offsets = problem.pages().offsets();
    for start in (0..pages.len()).step_by(CHUNK) {
        let end = (start + CHUNK).min(pages.len());
        chunk.respond(problem, start..end, at);
        let (rate, slope) = (&chunk.rate, &chunk.slope);
        // hosts of one page (the web's long tail), a chunk of them: each page's response is its
        // host's demand, with no run of the sums below to set up per host
        while start == host_end && h + 1 < hosts {
            sink.host(h, &d);
            d = Demand::zero();
            h += 1;
            host_end = problem.host_pages(h).end;
        }
        let len = end - start;
        // (every offset tested, without an early exit: many at a time in vector instructions)
        let singles = h + len < offsets.len()
            && offsets[h] == start
            && offsets[h..=h + len]
                .iter()
                .zip(start..)
                .fold(true, |one, (&o, k)| one & (o == k));
        if singles {
            if chunk.smooth {
                sink.smooth_singles(h, &rate[..len], &slope[..len]);
            } else {
                for (k, (&r, &s)) in rate[..len].iter().zip(&slope[..len]).enumerate() {
                    let c = complete[start + k] as usize;
                    let one = if smooth[c] {
                        Demand::one_smooth(r, s)
                    } else {
                        let mut one = Demand::zero();
                        add_jump_page(&mut one, problem.page(start + k), families[c], at);
                        one
                    };
                    sink.host(h + k, &one);
                }
            }
            // the next chunk starts with the host after them
            h += len;
            host_end = if h < hosts {
                problem.host_pages(h).end
            } else {
                end
            };
            continue;
        }
        // sums, in page order, host by host: each host's share of the chunk in one loop
        let mut i = start;
        while i < end {
            while i == host_end {
                sink.host(h, &d);
                d = Demand::zero();
                h += 1;
                host_end = problem.host_pages(h).end;
            }
            let part = i..host_end.min(end);
            i = part.end;
            chunk.add_part(&mut d, problem, part, at);
        }
    }
    // the last host, and any without pages after it
    while h < hosts {
        sink.host(h, &d);
        d = Demand::zero();
        h += 1;
    }
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
    if problem.is_bounded() {
        return demand_generic(problem, h, at.price);
    }
    let mut d = Demand::zero();
    let mut chunk = Chunk::new();
    let pages = problem.host_pages(h);
    for start in pages.clone().step_by(CHUNK) {
        let part = start..(start + CHUNK).min(pages.end);
        chunk.respond(problem, part.clone(), at);
        chunk.add_part(&mut d, problem, part, at);
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

/// Writes into `rates` the rate of every page of `pages` at `price` with `fill` of the steps there
/// taken, as [`page_rate`] gives each, bit for bit, on a problem without bounds (every page of
/// `pages` belongs to a host priced at `price`): runs of a smooth family in a loop of their own.
pub fn rates_at(
    problem: &Problem,
    pages: std::ops::Range<usize>,
    price: f64,
    fill: f64,
    rates: &mut [f64],
) {
    debug_assert!(!problem.is_bounded() && rates.len() == pages.len());
    let (mu, lambda) = (problem.pages().importance(), problem.pages().change_rate());
    for run in runs(problem, pages.clone()) {
        let (i, run) = (run.start, run.end);
        let family = problem.response(i);
        let out = &mut rates[i - pages.start..run - pages.start];
        let (mu, lambda) = (&mu[i..run], &lambda[i..run]);
        let mut map = RateMap {
            rates: out,
            family,
            slot_days: problem.slot_days(),
        };
        // the two commonest families without a branch a page, so that they use vector instructions
        if family == Response::HarmonicIncomplete {
            wide(
                #[inline(always)]
                || map.harmonic_incomplete(mu, lambda, price),
            );
        } else if family == Response::BinaryPoisson {
            wide(
                #[inline(always)]
                || map.binary_poisson(mu, lambda, price),
            );
        } else if !with_smooth_family(family, price, mu, lambda, &mut map) {
            // h only matters to bounds, and there are none
            for (k, r) in (i..run).zip(map.rates.iter_mut()) {
                *r = page_rate(problem, 0, k, price, fill);
            }
        }
    }
}

/// A run of one smooth family's rates at one price, each clipped to [0, the family's upper] as
/// [`page_rate`] clips it without bounds.
struct RateMap<'a> {
    rates: &'a mut [f64],
    family: Response,
    slot_days: f64,
}

impl RateMap<'_> {
    /// The rates of harmonic pages with incomplete observations, as the reference gives them, bit
    /// for bit: [`harmonic::incomplete_rate`]'s arithmetic for every page, then the reference for
    /// the pages it does not cover (never changing, or an infinite mu/theta).
    #[inline(always)]
    fn harmonic_incomplete(&mut self, mu: &[f64], lambda: &[f64], price: f64) {
        let mut exceptions = false;
        for ((&mu, &lambda), r) in mu.iter().zip(lambda).zip(self.rates.iter_mut()) {
            let q = mu / price;
            // the family's upper is +inf for a page that changes: only the floor at 0 applies
            *r = harmonic::incomplete_root(q, lambda).max(0.0);
            exceptions |= !(lambda > 0.0 && q.is_finite());
        }
        if exceptions {
            self.reference(mu, lambda, |mu, lambda| {
                harmonic::incomplete_rate(mu, lambda, price)
            });
        }
    }

    /// The rates of binary pages with Poisson crawls, bit for bit: [`binary::fed_rate`] for every
    /// page (starved ones selected to 0), then the reference for the pages it does not cover.
    #[inline(always)]
    fn binary_poisson(&mut self, mu: &[f64], lambda: &[f64], price: f64) {
        let mut exceptions = false;
        for ((&mu, &lambda), r) in mu.iter().zip(lambda).zip(self.rates.iter_mut()) {
            let q = mu / price;
            let fed = lambda > 0.0 && q > lambda;
            let formula = binary::fed_rate(q, lambda);
            *r = if fed { formula } else { 0.0 };
            exceptions |= fed && !formula.is_finite();
        }
        if exceptions {
            self.reference(mu, lambda, |mu, lambda| {
                binary::poisson_rate(mu, lambda, price)
            });
        }
    }

    /// Every page's rate from the family's response `rate`.
    fn reference(&mut self, mu: &[f64], lambda: &[f64], rate: impl Fn(f64, f64) -> f64) {
        self.run(mu, lambda, rate, |_, _, _| 0.0);
    }
}

impl SmoothRun for RateMap<'_> {
    #[inline(always)]
    fn run(
        &mut self,
        mu: &[f64],
        lambda: &[f64],
        rate: impl Fn(f64, f64) -> f64,
        _slope: impl Fn(f64, f64, f64) -> f64,
    ) {
        for ((&mu, &lambda), r) in mu.iter().zip(lambda).zip(self.rates.iter_mut()) {
            let page = Page {
                importance: mu,
                change_rate: lambda,
                slot_days: self.slot_days,
            };
            *r = rate(mu, lambda).max(0.0).min(self.family.upper(page));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;
    use crate::solve::pages::{Pages, PagesBuilder};
    use crate::units::PerDay;
    use proptest::prelude::*;

    /// Adds a run of pages of one smooth family without a floor: what [`add_page`] does for such
    /// pages (lo = 0, no jump, so left = right), with the family's response inlined into the loop.
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

    /// Adds a run of harmonic pages with incomplete observations without a floor (see
    /// [`harmonic_incomplete_page`]).
    #[inline]
    fn add_harmonic_incomplete_run(d: &mut Demand, mu: &[f64], lambda: &[f64], at: &At) {
        let (mut right, mut left, mut slope) = (d.right, d.left, d.slope);
        for (&mu, &lambda) in mu.iter().zip(lambda) {
            let (r, dr) = harmonic_incomplete_page(mu, lambda, at);
            right += r.max(0.0);
            left += r.max(0.0);
            if r > 0.0 {
                slope += dr;
            }
        }
        (d.right, d.left, d.slope) = (right, left, slope);
    }

    /// What [`demand_at`] gave before pages were taken in chunks, run by run: the reference the
    /// chunks must equal bit for bit (a smooth family's run through its own loop, a harmonic page
    /// with incomplete observations through [`harmonic_incomplete_page`], a page with a jump
    /// through [`add_jump_page`]).
    fn demand_in_runs(problem: &Problem, h: usize, at: &At) -> Demand {
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
            } else if !with_smooth_family(family, at.price, mu, lambda, &mut d) {
                for k in i..end {
                    add_jump_page(&mut d, problem.page(k), family, at);
                }
            }
            i = end;
        }
        d
    }

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

    /// `n` pages for [`mixed_pages`]: kind `kind(k)`, importances and change rates on a grid.
    fn grid_seed(n: u32, kind: impl Fn(u32) -> u8) -> Vec<(u8, f64, f64)> {
        (0..n)
            .map(|k| (kind(k), 0.1 + (k % 17) as f64, 0.01 * (1 + k % 23) as f64))
            .collect()
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
        let pages = mixed_pages(&grid_seed(400, |k| 30 + (k % 30) as u8), 3);
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
                        // pages taken in chunks (two families' responses picked from where a
                        // chunk mixes them) give what runs of one family gave, bit for bit
                        prop_assert_eq!(fast, demand_in_runs(&problem, h, &At::new(price)));
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

    /// The walk over every host gives each host's [`demand_at`], bit for bit, at any price and
    /// however the hosts and the families' runs fall across its chunks.
    #[test]
    fn the_walk_over_hosts_equals_each_host_s_demand() {
        let mut rng = 7u64;
        let mut next = move || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) as f64 / (1u64 << 31) as f64
        };
        // hosts of 0 to 700 pages (chunks of 256 pages cut hosts and runs anywhere), never
        // changing pages, runs of complete observations
        let mut b = PagesBuilder::new();
        for host in 0..400 {
            let size = match host % 9 {
                0 => 0,
                1 => 700,
                2..=4 => 1,
                _ => (next() * 40.0) as usize,
            };
            let complete_run = host % 3 == 0;
            b.push_host(
                PerDay(f64::INFINITY),
                (0..size).map(|k| {
                    let lambda = if k % 11 == 5 {
                        0.0
                    } else {
                        1e-3 + 5.0 * next()
                    };
                    (1e-3 + 1e3 * next(), lambda, complete_run && k % 5 < 3)
                }),
            );
        }
        // then the long tail: chunks of hosts of one page only, and chunks where a host without
        // pages or of two breaks the run
        for host in 0..1500 {
            let size = match host {
                700 | 1301 => 0,
                1100 => 2,
                _ => 1,
            };
            let lambda = if host % 13 == 0 {
                0.0
            } else {
                1e-3 + 5.0 * next()
            };
            let complete = host % 17 == 0;
            b.push_host(
                PerDay(f64::INFINITY),
                (0..size).map(|_| (1e-3 + 1e3 * next(), lambda, complete)),
            );
        }
        let pages = b.build().unwrap();
        let mut walked = 0;
        for objective in Objective::ALL {
            let problem = Problem::new(&pages, objective, BANDWIDTH).unwrap();
            // the last price makes mu/price infinite for the largest importances
            for price in [1e-4, 0.3, 7.0, 1e3, 1e-310] {
                let at = At::new(price);
                let mut next_host = 0;
                each_host_demand(&problem, &at, |h, d| {
                    assert_eq!(h, next_host, "{objective:?}: hosts in order");
                    let one = demand_at(&problem, h, &at);
                    assert_eq!(*d, one, "{objective:?} host {h} at {price}");
                    let runs = demand_in_runs(&problem, h, &at);
                    assert_eq!(
                        one, runs,
                        "{objective:?} host {h} at {price}: chunks and runs"
                    );
                    next_host += 1;
                });
                assert_eq!(next_host, problem.hosts(), "{objective:?}: every host");
                walked += 1;
            }
            // with floors every page has a box: the walk takes each host's general path
            let floored = problem.with_floor(0.5, pages.len() as u64).unwrap();
            assert!(floored.is_bounded());
            let at = At::new(0.3);
            let mut n = 0;
            each_host_demand(&floored, &at, |h, d| {
                let one = demand_at(&floored, h, &at);
                assert_eq!(*d, one, "{objective:?} floored host {h}");
                n += 1;
            });
            assert_eq!(n, floored.hosts());
        }
        assert!(walked > 0);
    }

    /// [`rates_at`] gives every page's [`page_rate`], bit for bit, at any price and fill, at the
    /// steps too, on runs of every family.
    #[test]
    fn rates_in_runs_equal_each_page_s_rate() {
        // every kind of page of mixed_pages, in runs and alone
        let pages = mixed_pages(&grid_seed(500, |k| ((k * 7) % 60) as u8), 4);
        let mut compared = 0;
        for objective in Objective::ALL {
            let problem = Problem::new(&pages, objective, BANDWIDTH).unwrap();
            let all = 0..pages.len();
            let at_steps = steps(&problem, 0).into_iter().take(3);
            // (5e-324: mu/theta is infinite, and the fast loops leave the pages to the reference)
            for price in [5e-324, 1e-3, 0.2, 3.0, 50.0].into_iter().chain(at_steps) {
                for fill in [0.0, 0.4, 1.0] {
                    let mut rates = vec![f64::NAN; pages.len()];
                    rates_at(&problem, all.clone(), price, fill, &mut rates);
                    for h in 0..problem.hosts() {
                        for i in problem.host_pages(h) {
                            let reference = page_rate(&problem, h, i, price, fill);
                            assert_eq!(
                                rates[i].to_bits(),
                                reference.to_bits(),
                                "{objective:?} page {i} at {price}"
                            );
                            compared += 1;
                        }
                    }
                }
            }
        }
        assert!(compared > 0);
    }

    /// [`is_smooth`] names exactly the families [`with_smooth_family`] specialises.
    #[test]
    fn smooth_families_are_the_specialised_ones() {
        for family in Response::ALL {
            let specialised = with_smooth_family(family, 1.0, &[], &[], &mut Demand::zero());
            assert_eq!(is_smooth(family), specialised, "{family:?}");
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
