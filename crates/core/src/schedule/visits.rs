//! Integer visits per horizon: x_i evenly spaced visits of each URL in the horizon T, at most
//! floor(T / P_h) per host, floor(R T) in total, maximising weighted freshness (PUC-Rio problem S).
//!
//! The objective is binary freshness of a cyclic timetable: with k evenly spaced visits per horizon
//! the copy is stale a share S(k) = 1 - (1 - e^-c)/c of the time, c = lambda T / k (S(0) = 1), which
//! is Cho & Garcia-Molina's fixed-interval freshness at rate k/T, i.e. the run's `binary-fixed`
//! objective restricted to integers. PUC-Rio's A_i(x) = 1 + ((x+1)/(lambda T))(e^{-lambda T/(x+1)} - 1)
//! is S(x + 1): the paper's horizon is not cyclic and starts with a fresh copy, which acts as one
//! free visit. We keep the cyclic form because our timetables repeat every night.
//!
//! S is convex in k (k (1 - e^{-c/k}) is concave on [0, inf) and 0 at 0), so the marginal gains
//! Delta_i(k) = mu_i (S(k-1) - S(k)) decrease in k, and the best response of a page to a price theta
//! is the step function x_i(theta) = #{k : Delta_i(k) > theta} (PUC-Rio Phase 1's greedy is this
//! threshold rule, Federgruen & Groenevelt). Host demand capped at floor(T/P_h) and the global budget
//! are then solved by the same safeguarded multiplier search as the rates, generic over
//! [`AllReduce`], so it runs distributed later; steps exactly at the final price are split by page key.

use serde::{Deserialize, Serialize};

use super::interval::{fresh_share, harmonic_share, stale_share};
use crate::exact_sum::ExactSum;
use crate::objective::fixed_interval;
use crate::reduce::{AllReduce, Combine};
use crate::solve::multiplier::{MultiplierSearch, Next, Observation};
use crate::solve::pages::Pages;
use crate::units::Seconds;

/// A host's politeness cap in visits per horizon, floor(T / P) (PUC-Rio constraint (2)).
///
/// Division is correctly rounded, so an exact integer ratio (86400 / 15 = 5760) is never lost.
pub fn host_visit_cap(horizon: Seconds, min_delay: Seconds) -> u32 {
    if min_delay.0 <= 0.0 {
        return u32::MAX;
    }
    (horizon.0 / min_delay.0)
        .floor()
        .clamp(0.0, u32::MAX as f64) as u32
}

/// The visit budget floor(R T) of a bandwidth in fetches per day over a horizon (PUC-Rio constraint (1)).
pub fn visit_budget(bandwidth_per_day: f64, horizon: Seconds) -> u64 {
    (bandwidth_per_day * horizon.days()).floor().max(0.0) as u64
}

/// Share of time the copy is stale with `k` evenly spaced visits per horizon (cyclic), S(k).
#[inline]
pub fn periodic_staleness(change_rate: f64, horizon_days: f64, k: u32) -> f64 {
    if change_rate <= 0.0 {
        return 0.0;
    }
    if k == 0 {
        return 1.0;
    }
    stale_share(change_rate * horizon_days / k as f64)
}

/// Freshness gained by the k-th visit (k >= 1): mu (S(k-1) - S(k)), non-increasing in k.
#[inline]
pub fn marginal_gain(importance: f64, change_rate: f64, horizon_days: f64, k: u32) -> f64 {
    if change_rate <= 0.0 || k == 0 {
        return 0.0;
    }
    let c = change_rate * horizon_days;
    if k == 1 {
        return importance * fresh_share(c);
    }
    let (a, b) = (c / (k - 1) as f64, c / k as f64);
    if b >= 1.0 {
        // Rare visits: S(k-1) - S(k) = (1 - k e^-b + (k-1) e^-a) / c, where S(k-1) and S(k) are both
        // near 1 and their difference would keep only the rounding (gains that are equal to the last
        // bit then come out increasing).
        importance * (1.0 - k as f64 * (-b).exp() + (k - 1) as f64 * (-a).exp()) / c
    } else {
        // Frequent visits: S is small and its difference loses only ~log2(k) bits.
        importance * (stale_share(a) - stale_share(b))
    }
}

/// What integer visits maximise: binary freshness of evenly spaced visits (PUC-Rio), or minus the
/// harmonic penalty of evenly spaced visits (NeurIPS'19 eq. 1 with C = H, for periodic crawls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VisitObjective {
    Staleness,
    Harmonic,
}

impl VisitObjective {
    /// What integer visits pursue for a run of `objective`: its own harmonic penalty for a harmonic
    /// run (where the budget and caps can visit every changing page; see the job), else freshness,
    /// the criterion every other objective's visits share.
    pub fn wanted_for(objective: crate::objective::Objective) -> Self {
        if objective == crate::objective::Objective::Harmonic {
            VisitObjective::Harmonic
        } else {
            VisitObjective::Staleness
        }
    }

    /// The name reports use: `harmonic` or `staleness`.
    pub fn name(self) -> &'static str {
        match self {
            VisitObjective::Harmonic => "harmonic",
            VisitObjective::Staleness => "staleness",
        }
    }

    /// The value of the k-th visit (k >= 1) of page (mu, lambda) per horizon, non-increasing in k.
    #[inline]
    pub fn gain(self, importance: f64, change_rate: f64, horizon_days: f64, k: u32) -> f64 {
        match self {
            VisitObjective::Staleness => marginal_gain(importance, change_rate, horizon_days, k),
            VisitObjective::Harmonic => harmonic_gain(importance, change_rate, horizon_days, k),
        }
    }
}

/// Harmonic penalty removed by the k-th visit (k >= 1): mu (Hs(k-1) - Hs(k)) with Hs(k) the
/// time-average penalty of k evenly spaced visits, [`harmonic_share`] of lambda T / k; a page
/// that changes and is never visited pays forever, so its first visit is worth +inf.
#[inline]
pub fn harmonic_gain(importance: f64, change_rate: f64, horizon_days: f64, k: u32) -> f64 {
    if change_rate <= 0.0 || k == 0 {
        return 0.0;
    }
    if k == 1 {
        return f64::INFINITY;
    }
    let c = change_rate * horizon_days;
    importance * (harmonic_share(c / (k - 1) as f64) - harmonic_share(c / k as f64))
}

/// One page's visits at a price: both one-sided limits of the step response and the nearest steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageSteps {
    /// #{k <= cap : Delta(k) > price}.
    pub right: u32,
    /// #{k <= cap : Delta(k) >= price}.
    pub left: u32,
    /// Delta(right) (smallest step above the price), +inf if right = 0.
    pub next_above: f64,
    /// Delta(left + 1) (largest step below the price), 0 if left = cap.
    pub next_below: f64,
    /// d x / d price of the continuous relaxation (<= 0), to let Newton move across the staircase.
    pub slope: f64,
}

/// The step response of page (mu, lambda) to `price`, at most `cap` visits.
///
/// The continuous fixed-interval response (Lambert W) gives a guess within a step or two; concavity
/// makes the local walk from the guess exact whatever the guess.
pub fn page_steps(
    importance: f64,
    change_rate: f64,
    horizon_days: f64,
    cap: u32,
    price: f64,
) -> PageSteps {
    page_steps_from(
        Gains::new(
            VisitObjective::Staleness,
            importance,
            change_rate,
            horizon_days,
        ),
        cap,
        price,
    )
}

/// [`page_steps`] reading the page's gains from `gains` (which may hold some already).
/// The least `j >= from` where `ok` fails, for `ok` true then false as `j` grows (and false at
/// u32::MAX): doubling steps, then bisection.
fn first_false(from: u32, mut ok: impl FnMut(u32) -> bool) -> u32 {
    if !ok(from) {
        return from;
    }
    let (mut lo, mut step) = (from, 1u32);
    let mut hi = loop {
        let next = lo.saturating_add(step);
        if !ok(next) {
            break next;
        }
        lo = next;
        step = step.saturating_mul(2);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The greatest `j <= from` where `ok` holds, for `ok` true then false as `j` grows (and true at 0).
fn last_true(from: u32, mut ok: impl FnMut(u32) -> bool) -> u32 {
    if ok(from) {
        return from;
    }
    let (mut hi, mut step) = (from, 1u32);
    let mut lo = loop {
        let next = hi.saturating_sub(step);
        if ok(next) {
            break next;
        }
        hi = next;
        step = step.saturating_mul(2);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

fn page_steps_from(mut gains: Gains, cap: u32, price: f64) -> PageSteps {
    let (importance, change_rate, horizon_days) =
        (gains.importance, gains.change_rate, gains.horizon_days);
    // the continuous guess (and slope) is the fixed-interval freshness relaxation's; the harmonic
    // staircase walks from its first steps (concavity makes the walk exact from any start)
    let relaxable = gains.objective == VisitObjective::Staleness;
    let mut gain = |k: u32| gains.at(k);
    let none = PageSteps {
        right: 0,
        left: 0,
        next_above: f64::INFINITY,
        next_below: 0.0,
        slope: 0.0,
    };
    if change_rate <= 0.0 || cap == 0 {
        return none;
    }
    // Most pages of a big capped host take 0 or 1 visits: settle those with one or two gains and
    // skip the Lambert W guess (and its slope: Newton then reads the staircase's secant instead).
    let few = !relaxable || gain(1) <= price || cap == 1 || gain(2) <= price;
    // rho(theta_rate) per day with theta_rate = price * T (Delta(k) ~ mu u'(k/T) / T)
    let rate_price = price * horizon_days;
    let (rho, relaxed) = if few {
        (0.0, 0.0)
    } else {
        let rho = fixed_interval::rate(importance, change_rate, rate_price);
        (rho, rho * horizon_days)
    };
    let mut k = if few {
        1
    } else if relaxed.is_finite() {
        (relaxed + 0.5).floor().clamp(0.0, cap as f64) as u32
    } else {
        cap
    };
    // Gains fall with k (concavity): gallop from the guess, then bisect, so that a page's cost is
    // logarithmic in its visits (a walk one visit at a time made the timetable's cost grow with the
    // bandwidth when the bandwidth far exceeds what the caps let pages use).
    k = first_false(k, |j| j < cap && gain(j + 1) > price);
    if k > 0 && gain(k) <= price {
        k = last_true(k, |j| j == 0 || gain(j) > price);
    }
    let right = k;
    let left = first_false(right, |j| j < cap && gain(j + 1) >= price);
    let slope = if relaxed > 0.0 && relaxed < cap as f64 {
        fixed_interval::slope(importance, change_rate, rate_price, rho)
            * horizon_days
            * horizon_days
    } else {
        0.0
    };
    PageSteps {
        right,
        left,
        next_above: if right > 0 {
            gain(right)
        } else {
            f64::INFINITY
        },
        next_below: if left < cap { gain(left + 1) } else { 0.0 },
        slope,
    }
}

/// A page's marginal gains, each computed once per [`page_steps`] call: the walk to the threshold,
/// the tie count and the neighbouring steps ask for the same few k several times, and each gain
/// costs two exponentials.
struct Gains {
    objective: VisitObjective,
    importance: f64,
    change_rate: f64,
    horizon_days: f64,
    /// The (k, gain) pairs known, filled round-robin.
    kept: [(u32, f64); GAINS_KEPT],
    filled: usize,
}

/// Gains a [`Gains`] keeps: the walk settles within k - 1 ..= k + 2 of its answer.
const GAINS_KEPT: usize = 4;

impl Gains {
    fn new(
        objective: VisitObjective,
        importance: f64,
        change_rate: f64,
        horizon_days: f64,
    ) -> Self {
        Gains {
            objective,
            importance,
            change_rate,
            horizon_days,
            kept: [(0, 0.0); GAINS_KEPT],
            filled: 0,
        }
    }

    /// Gains that know Delta(1) and Delta(2) already.
    fn seeded(
        objective: VisitObjective,
        importance: f64,
        change_rate: f64,
        horizon_days: f64,
        first: [f64; 2],
    ) -> Self {
        let mut g = Gains::new(objective, importance, change_rate, horizon_days);
        g.kept[0] = (1, first[0]);
        g.kept[1] = (2, first[1]);
        g.filled = 2;
        g
    }

    #[inline]
    fn at(&mut self, k: u32) -> f64 {
        let known = self.filled.min(GAINS_KEPT);
        if let Some(&(_, g)) = self.kept[..known].iter().find(|e| e.0 == k) {
            return g;
        }
        let g = self
            .objective
            .gain(self.importance, self.change_rate, self.horizon_days, k);
        self.kept[self.filled % GAINS_KEPT] = (k, g);
        self.filled += 1;
        g
    }
}

/// What the integer problem reads: pages grouped by host, caps in visits, and page keys.
#[derive(Clone, Copy, Debug)]
pub struct VisitProblem<'a> {
    /// Pages grouped by host (importance, change rate per day; caps per day are not read).
    pub pages: &'a Pages,
    /// Politeness cap of each host in visits per horizon ([`host_visit_cap`]); u32::MAX for none.
    pub caps: &'a [u32],
    /// A key per page, unique across all workers (e.g. the URL hash): ties at the threshold go to the
    /// smallest keys, so the split does not depend on sharding.
    pub keys: &'a [u64],
    /// The horizon T.
    pub horizon: Seconds,
    /// What the visits maximise.
    pub objective: VisitObjective,
}

/// A host's visits at a price, summed over its pages.
#[derive(Clone, Copy, Debug, Default)]
struct HostSteps {
    right: u64,
    left: u64,
    slope: f64,
    next_above: f64,
    next_below: f64,
}

impl VisitProblem<'_> {
    fn days(&self) -> f64 {
        self.horizon.days()
    }

    /// Most visits host `h` can use: its cap if any page changes, else 0.
    fn host_max(&self, h: usize) -> u64 {
        let changes = self
            .pages
            .host_pages(h)
            .any(|i| self.pages.change_rate()[i] > 0.0);
        if changes {
            self.caps[h] as u64
        } else {
            0
        }
    }
}

/// A problem with every page's first two marginal gains at hand: most pages take 0, 1 or 2
/// visits, so a round of the search then compares numbers instead of evaluating exponentials (4x
/// fewer on the 1M-page PUC-Rio set). The gains are the same function of the same inputs, so
/// every answer is bit for bit that of computing them afresh.
struct Seeded<'p, 'a> {
    problem: &'p VisitProblem<'a>,
    /// Delta(1) and Delta(2) of each page.
    first_gains: &'p [[f64; 2]],
}

/// Delta(1) and Delta(2) of every page of a problem (they depend on the pages and the horizon, not
/// on the caps: the polite and the non-polite solve share them).
pub struct FirstGains(Vec<[f64; 2]>);

impl FirstGains {
    /// The first two marginal gains of every page of `problem`.
    pub fn of(problem: &VisitProblem) -> Self {
        let (a, t) = (problem.pages, problem.days());
        FirstGains(
            (0..a.len())
                .map(|i| {
                    let (mu, lambda) = (a.importance()[i], a.change_rate()[i]);
                    let o = problem.objective;
                    [o.gain(mu, lambda, t, 1), o.gain(mu, lambda, t, 2)]
                })
                .collect(),
        )
    }
}

impl<'p, 'a> Seeded<'p, 'a> {
    fn new(problem: &'p VisitProblem<'a>, first: &'p FirstGains) -> Self {
        assert_eq!(
            first.0.len(),
            problem.pages.len(),
            "first gains of these pages"
        );
        Seeded {
            problem,
            first_gains: &first.0,
        }
    }

    fn page(&self, h: usize, i: usize, price: f64) -> PageSteps {
        let (a, t) = (self.problem.pages, self.problem.days());
        let cap = self.problem.caps[h];
        let first = self.first_gains[i][0];
        if first < price && cap > 0 && a.change_rate()[i] > 0.0 {
            // Not even one visit is worth the price (most pages, when the budget is a fraction of
            // a visit per page): what `page_steps` finds, without its walk.
            return PageSteps {
                right: 0,
                left: 0,
                next_above: f64::INFINITY,
                next_below: first,
                slope: 0.0,
            };
        }
        let gains = Gains::seeded(
            self.problem.objective,
            a.importance()[i],
            a.change_rate()[i],
            t,
            self.first_gains[i],
        );
        page_steps_from(gains, cap, price)
    }

    fn host(&self, h: usize, price: f64) -> HostSteps {
        let mut s = HostSteps {
            next_above: f64::INFINITY,
            ..Default::default()
        };
        for i in self.problem.pages.host_pages(h) {
            let p = self.page(h, i, price);
            s.right += p.right as u64;
            s.left += p.left as u64;
            s.slope += p.slope;
            s.next_above = s.next_above.min(p.next_above);
            s.next_below = s.next_below.max(p.next_below);
        }
        s
    }
}

/// One worker's visits at a price, capped per host; combined exactly across workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitSpend {
    /// The price evaluated.
    pub price: f64,
    /// sum_h min(cap_h, sum_i x_i(price+)).
    pub right: u64,
    /// sum_h min(cap_h, sum_i x_i(price-)).
    pub left: u64,
    /// Slope of the uncapped hosts' relaxed demand.
    pub slope: ExactSum,
    /// Smallest step above the price.
    pub next_above: f64,
    /// Largest step below the price.
    pub next_below: f64,
}

impl Combine for VisitSpend {
    fn combine(&mut self, other: Self) {
        self.right += other.right;
        self.left += other.left;
        self.slope.merge(&other.slope);
        self.next_above = self.next_above.min(other.next_above);
        self.next_below = self.next_below.max(other.next_below);
    }
}

/// This worker's capped visits at `price`.
fn visit_spend(seeded: &Seeded, price: f64) -> VisitSpend {
    let problem = seeded.problem;
    let mut s = VisitSpend {
        price,
        next_above: f64::INFINITY,
        ..Default::default()
    };
    for h in 0..problem.pages.hosts() {
        let cap = problem.caps[h] as u64;
        let d = seeded.host(h, price);
        s.right += d.right.min(cap);
        s.left += d.left.min(cap);
        if d.right < cap {
            s.slope.add(d.slope);
        }
        s.next_above = s.next_above.min(d.next_above);
        s.next_below = s.next_below.max(d.next_below);
    }
    s
}

/// What a worker knows before the first round: the most its hosts can take, and moments for a guess.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitPrelude {
    /// sum_h (cap_h if a page of h changes, else 0).
    pub max_visits: u64,
    /// sum_i sqrt(mu_i lambda_i / 2) (frequent visits: x ~ T (sqrt(mu lambda/(2 theta T)) - lambda/3)).
    pub root_moment: ExactSum,
    /// sum_i lambda_i / 3.
    pub offset_moment: ExactSum,
}

impl Combine for VisitPrelude {
    fn combine(&mut self, other: Self) {
        self.max_visits = self.max_visits.saturating_add(other.max_visits);
        self.root_moment.merge(&other.root_moment);
        self.offset_moment.merge(&other.offset_moment);
    }
}

fn visit_prelude(problem: &VisitProblem) -> VisitPrelude {
    let mut p = VisitPrelude::default();
    let a = problem.pages;
    for h in 0..a.hosts() {
        p.max_visits = p.max_visits.saturating_add(problem.host_max(h));
        for i in a.host_pages(h) {
            p.root_moment
                .add((0.5 * a.importance()[i] * a.change_rate()[i].max(0.0)).sqrt());
            p.offset_moment.add(a.change_rate()[i].max(0.0) / 3.0);
        }
    }
    p
}

/// Largest miss of the budget, in visits, that the search settles by selecting the step directly.
const ENDGAME_STEPS: u64 = 4096;
/// Selections tried per solve (a proposal that fails only costs its round; the search goes on).
const ENDGAME_TRIES: u32 = 2;

/// The `count` step values nearest a price on the side that moves spend toward the budget: the
/// smallest taken steps above it (too many visits: raising the price past them drops them) or the
/// largest untaken steps at or below it (too few), as hosts' caps let them count. The `count`-th
/// is the price where the budget falls inside [right, left]; the search checks it like any price.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StepSelection {
    count: u64,
    /// Too many visits at the price: keep the smallest values (else the largest).
    raise: bool,
    /// The values kept (at most `count` after each combine).
    values: Vec<f64>,
}

impl StepSelection {
    fn new(count: u64, raise: bool) -> Self {
        StepSelection {
            count,
            raise,
            values: Vec::new(),
        }
    }

    /// Values nearest the price first.
    fn order(&self, a: &f64, b: &f64) -> std::cmp::Ordering {
        if self.raise {
            a.total_cmp(b)
        } else {
            b.total_cmp(a)
        }
    }

    /// Keeps the `count` nearest values (in no particular order).
    fn keep_nearest(&mut self) {
        let n = self.count as usize;
        if n > 0 && self.values.len() > n {
            let mut values = std::mem::take(&mut self.values);
            values.select_nth_unstable_by(n - 1, |a, b| self.order(a, b));
            values.truncate(n);
            self.values = values;
        }
    }

    /// The price proposed: the `count`-th nearest value, if there are that many.
    fn pick(&self) -> Option<f64> {
        if self.count == 0 || (self.values.len() as u64) < self.count {
            return None;
        }
        self.values
            .iter()
            .copied()
            .max_by(|a, b| self.order(a, b))
            .filter(|v| v.is_finite() && *v > 0.0)
    }
}

impl Combine for StepSelection {
    fn combine(&mut self, other: Self) {
        self.values.extend(other.values);
        self.keep_nearest();
    }
}

/// This worker's part of a [`StepSelection`] at `price`.
///
/// Raising the price: a host over its cap by e visits loses e steps before its count moves, so its
/// candidates are its (e + count) smallest taken steps less the e smallest. Lowering it: a host
/// with room r adds at most r steps, its largest untaken ones. Each page's steps come nearest the
/// price first, so a first pass over every page's nearest step gives a bound: `count` candidates
/// at least as near exist, so no farther step can be selected, and the second pass stops each page
/// at its first step past the bound (a page or two of steps, not `count`).
fn select_steps(seeded: &Seeded, price: f64, mut wanted: StepSelection) -> StepSelection {
    let problem = seeded.problem;
    let (a, t) = (problem.pages, problem.days());
    let count = wanted.count as usize;
    let raise = wanted.raise;
    let nearer = |x: f64, than: f64| if raise { x <= than } else { x >= than };
    let order = |x: &f64, y: &f64| {
        if raise {
            x.total_cmp(y)
        } else {
            y.total_cmp(x)
        }
    };
    // (skip, room) of host h: steps passed over before its count moves, and steps it can use
    let limits = |h: usize, steps: &[PageSteps]| -> (usize, usize) {
        let cap = problem.caps[h] as u64;
        let right: u64 = steps.iter().map(|p| p.right as u64).sum();
        if raise {
            (right.saturating_sub(cap) as usize, count)
        } else {
            (0, cap.saturating_sub(right).min(count as u64) as usize)
        }
    };
    // the page's j-th step nearest the price (j from 0), if any
    let step_k = |cap: u32, p: &PageSteps, j: u32| -> Option<u32> {
        if raise {
            p.right.checked_sub(j).filter(|&k| k >= 1)
        } else {
            p.right.checked_add(j + 1).filter(|&k| k <= cap)
        }
    };
    let gains_of = |i: usize| {
        let o = problem.objective;
        Gains::seeded(
            o,
            a.importance()[i],
            a.change_rate()[i],
            t,
            seeded.first_gains[i],
        )
    };
    let host_steps = |h: usize| -> Vec<PageSteps> {
        a.host_pages(h).map(|i| seeded.page(h, i, price)).collect()
    };

    // Pass 1: the nearest step of every page, as many per host as the host can use.
    let mut near: Vec<f64> = Vec::new();
    let mut firsts: Vec<f64> = Vec::new();
    for h in 0..a.hosts() {
        let steps = host_steps(h);
        let (skip, room) = limits(h, &steps);
        if skip > 0 || room == 0 {
            continue; // a capped host's nearest steps do not move its count
        }
        firsts.clear();
        for (p, i) in steps.iter().zip(a.host_pages(h)) {
            if let Some(k) = step_k(problem.caps[h], p, 0) {
                firsts.push(gains_of(i).at(k));
            }
        }
        if firsts.len() > room {
            firsts.select_nth_unstable_by(room - 1, order);
            firsts.truncate(room);
        }
        near.extend_from_slice(&firsts);
    }
    let worker_bound = (near.len() >= count && count > 0).then(|| {
        let (_, nth, _) = near.select_nth_unstable_by(count - 1, order);
        *nth
    });
    drop(near);

    // Pass 2: every step no farther than the bound, per host as its cap lets it count.
    let mut values: Vec<f64> = Vec::new();
    for h in 0..a.hosts() {
        let steps = host_steps(h);
        let (skip, room) = limits(h, &steps);
        if room == 0 {
            continue;
        }
        let usable = skip + room;
        let cap = problem.caps[h];
        // a capped host needs its own bound: its usable-th nearest first step
        let mut bound = if skip == 0 { worker_bound } else { None };
        if skip > 0 {
            firsts.clear();
            for (p, i) in steps.iter().zip(a.host_pages(h)) {
                if let Some(k) = step_k(cap, p, 0) {
                    firsts.push(gains_of(i).at(k));
                }
            }
            if firsts.len() >= usable {
                let (_, nth, _) = firsts.select_nth_unstable_by(usable - 1, order);
                bound = Some(*nth);
            }
        }
        values.clear();
        for (p, i) in steps.iter().zip(a.host_pages(h)) {
            let mut gains = gains_of(i);
            for j in 0..usable as u32 {
                let Some(k) = step_k(cap, p, j) else { break };
                let g = gains.at(k);
                if bound.is_some_and(|b| !nearer(g, b)) || (!raise && g <= 0.0) {
                    break;
                }
                values.push(g);
            }
        }
        if values.len() > skip {
            if values.len() > usable {
                values.select_nth_unstable_by(usable - 1, order);
                values.truncate(usable);
            }
            values.sort_unstable_by(order);
            wanted
                .values
                .extend(values.iter().skip(skip).take(room).copied());
        }
        if wanted.values.len() > 4 * count {
            wanted.keep_nearest();
        }
    }
    wanted.keep_nearest();
    wanted
}

/// Tied steps at the final price that fit under their hosts' caps: (page key, step), smallest first,
/// at most `keep`; combining keeps the `keep` smallest of the union (associative and commutative).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TiedSteps {
    /// How many of the smallest to keep (the visits still to hand out).
    pub keep: u64,
    /// (key, step index within the page's tie), sorted.
    pub steps: Vec<(u64, u32)>,
}

impl Combine for TiedSteps {
    fn combine(&mut self, other: Self) {
        self.steps.extend(other.steps);
        self.steps.sort_unstable();
        self.steps.dedup();
        self.steps.truncate(self.keep as usize);
    }
}

/// The integer visits of one worker's pages, with the global figures every worker agrees on.
#[derive(Clone, Debug)]
pub struct Visits {
    /// The global price nu (0 when the hosts cannot use the whole budget).
    pub multiplier: f64,
    /// Rounds of the global search (each one all-reduce).
    pub rounds: u32,
    /// The budget floor(R T).
    pub budget: u64,
    /// Visits the hosts could take at most (sum of caps of hosts with a changing page).
    pub max_visits: u64,
    /// Visits handed out in total (= min(budget, max_visits) unless the search hit its round limit).
    pub used: u64,
    /// Per local host: its price theta_h (= nu unless capped).
    pub host_price: Vec<f64>,
    /// Per local host: whether its politeness cap binds.
    pub host_capped: Vec<bool>,
    /// Per local host: its visits per horizon.
    pub host_visits: Vec<u64>,
    /// Per local page: visits per horizon.
    pub counts: Vec<u32>,
}

/// Solves the integer problem on this worker's pages given a budget of visits per horizon.
///
/// Every worker must call it with the same budget and its own pages; `reduce` combines partials.
pub fn integer_visits<R: AllReduce>(problem: &VisitProblem, budget: u64, reduce: &mut R) -> Visits {
    integer_visits_from(problem, budget, None, &FirstGains::of(problem), reduce)
}

/// [`integer_visits`] with the search started at `guess` when given (e.g. the price of a closely
/// related problem: the same pages under other caps), else at the closed form of the relaxation.
/// `first` must be [`FirstGains::of`] these pages and horizon.
pub fn integer_visits_from<R: AllReduce>(
    problem: &VisitProblem,
    budget: u64,
    guess: Option<f64>,
    first: &FirstGains,
    reduce: &mut R,
) -> Visits {
    let a = problem.pages;
    assert_eq!(problem.caps.len(), a.hosts(), "one cap per host");
    assert_eq!(problem.keys.len(), a.len(), "one key per page");
    let pre = reduce.all_reduce(visit_prelude(problem));
    let seeded = Seeded::new(problem, first);
    let target = budget as f64;
    let (root, offset) = (pre.root_moment.value(), pre.offset_moment.value());
    let t = problem.days();
    let guess = match guess {
        Some(g) if g.is_finite() && g > 0.0 => g,
        _ if root > 0.0 => {
            let s = (target + t * offset) / (t.sqrt() * root);
            1.0 / (s * s)
        }
        _ => 1.0,
    };
    let (mut search, mut next) = MultiplierSearch::new(target, pre.max_visits as f64, guess);
    let mut last: Option<VisitSpend> = None;
    let mut selections = 0;
    let nu = loop {
        match next {
            Next::Evaluate(mut price) => {
                let mut total = reduce.all_reduce(visit_spend(&seeded, price));
                // Near the target the staircase's last few steps cost the search a round each:
                // select the step that meets the budget directly and evaluate there instead.
                let miss = total.right.abs_diff(budget);
                if total.right != budget
                    && (total.right > budget || total.left < budget)
                    && miss <= ENDGAME_STEPS
                    && selections < ENDGAME_TRIES
                {
                    selections += 1;
                    let wanted = StepSelection::new(miss, total.right > budget);
                    let chosen = reduce.all_reduce(select_steps(&seeded, price, wanted));
                    if let Some(v) = chosen.pick() {
                        price = v;
                        total = reduce.all_reduce(visit_spend(&seeded, price));
                    }
                }
                let o = Observation {
                    price,
                    right: total.right as f64,
                    left: total.left as f64,
                    // Pages settled without the relaxation (0 or 1 visit: most of them when the
                    // budget is a fraction of a visit per page) report no slope, so the sum
                    // understates how fast visits fall with the price and the first Newton step
                    // overshoots tenfold. Assume at least unit elasticity (the staircase of first
                    // visits falls about that fast); the bracket keeps the search safe either way.
                    slope: total.slope.value().min(-(total.right as f64) / price),
                    next_above: total.next_above,
                    next_below: total.next_below,
                };
                next = search.observe(o);
                last = Some(total);
                if let Next::Converged(c) = next {
                    break c.price;
                }
            }
            Next::Converged(o) => break o.price,
        }
    };
    // The last evaluation is the converged price unless the search stopped at an older observation
    // (round limit): evaluate again then, so the tie split below sees the right counts.
    let at_nu = match last {
        Some(s) if s.price == nu => s,
        _ if nu > 0.0 => reduce.all_reduce(visit_spend(&seeded, nu)),
        _ => VisitSpend::default(),
    };

    let mut counts = vec![0u32; a.len()];
    let mut host_price = vec![nu; a.hosts()];
    let mut host_capped = vec![false; a.hosts()];
    let mut host_visits = vec![0u64; a.hosts()];

    if nu > 0.0 {
        // Steps at nu: each host offers min(room under its cap, its tied steps), smallest keys first.
        let keep = budget.saturating_sub(at_nu.right);
        let mut local = TiedSteps {
            keep,
            steps: vec![],
        };
        for h in 0..a.hosts() {
            let cap = problem.caps[h] as u64;
            let mut right = 0u64;
            let mut tied = vec![];
            for i in a.host_pages(h) {
                let p = seeded.page(h, i, nu);
                right += p.right as u64;
                if p.left > p.right {
                    tied.push((problem.keys[i], p.left - p.right));
                }
            }
            let room = cap.saturating_sub(right);
            let mut steps: Vec<(u64, u32)> = tied
                .iter()
                .flat_map(|&(key, n)| (0..n).map(move |j| (key, j)))
                .collect();
            steps.sort_unstable();
            steps.truncate(room.min(keep) as usize);
            local.steps.extend(steps);
        }
        local.steps.sort_unstable();
        local.steps.truncate(keep as usize);
        let chosen = reduce.all_reduce(local);
        let last_taken = chosen.steps.last().copied();

        for h in 0..a.hosts() {
            let cap = problem.caps[h] as u64;
            let pages = a.host_pages(h);
            let mut right = 0u64;
            let mut tied = vec![];
            for i in pages.clone() {
                let p = seeded.page(h, i, nu);
                counts[i] = p.right;
                right += p.right as u64;
                for j in 0..(p.left - p.right) {
                    tied.push((problem.keys[i], j, i));
                }
            }
            // the host's tied steps inside the globally chosen prefix, within its room (as offered)
            tied.sort_unstable();
            let room = cap.saturating_sub(right) as usize;
            let mut taken = 0u64;
            if let Some(lt) = last_taken {
                for &(key, j, i) in tied.iter().take(room) {
                    if (key, j) <= lt {
                        counts[i] += 1;
                        taken += 1;
                    }
                }
            }
            if right > cap {
                // the cap binds: undo and price the host on its own
                let (price, c) = price_capped_host(&seeded, h, nu);
                host_price[h] = price;
                host_capped[h] = true;
                for (i, v) in pages.zip(c) {
                    counts[i] = v;
                }
                host_visits[h] = cap;
            } else {
                host_capped[h] = right + taken == cap && cap > 0;
                host_visits[h] = right + taken;
            }
        }
    } else {
        // Price 0: every host takes all it can, so a host with a changing page is at its cap.
        for h in 0..a.hosts() {
            let (price, c) = price_capped_host(&seeded, h, 0.0);
            host_price[h] = price;
            host_capped[h] = problem.host_max(h) > 0;
            for (i, v) in a.host_pages(h).zip(c) {
                counts[i] = v;
            }
            host_visits[h] = problem.host_max(h);
        }
    }
    let used = reduce.all_reduce(UsedVisits(host_visits.iter().sum())).0;
    Visits {
        multiplier: nu,
        // each selection is one all-reduce and one evaluation more
        rounds: search.rounds() + 2 * selections,
        budget,
        max_visits: pre.max_visits,
        used,
        host_price,
        host_capped,
        host_visits,
        counts,
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct UsedVisits(u64);

impl Combine for UsedVisits {
    fn combine(&mut self, other: Self) {
        self.0 += other.0;
    }
}

/// A capped host's own price theta_h >= nu with x(theta_h+) <= cap <= x(theta_h-), and its pages'
/// counts with the tie split by key to fill the cap exactly (or all it can use, when that is less).
fn price_capped_host(seeded: &Seeded, h: usize, nu: f64) -> (f64, Vec<u32>) {
    let problem = seeded.problem;
    let cap = problem.caps[h] as u64;
    let pages = problem.pages.host_pages(h);
    if problem.objective == VisitObjective::Harmonic {
        // Every changing page's first visit is worth +inf: when the cap cannot take them all, no
        // finite price fills it and the host's penalty is infinite whatever it does; it visits
        // the cap's worth of its changing pages once, smallest keys first (the heap greedy's
        // tie rule), and nothing more.
        let mut changing: Vec<(u64, usize)> = pages
            .clone()
            .enumerate()
            .filter(|&(_, i)| problem.pages.change_rate()[i] > 0.0)
            .map(|(local, i)| (problem.keys[i], local))
            .collect();
        if changing.len() as u64 > cap {
            changing.sort_unstable();
            let mut counts = vec![0u32; pages.len()];
            for &(_, local) in changing.iter().take(cap as usize) {
                counts[local] = 1;
            }
            return (f64::INFINITY, counts);
        }
    }
    let observe = |price: f64| {
        let d = seeded.host(h, price);
        Observation {
            price,
            right: d.right as f64,
            left: d.left as f64,
            slope: d.slope,
            next_above: d.next_above,
            next_below: d.next_below,
        }
    };
    let at_nu = observe(nu);
    let price = if at_nu.right <= cap as f64 {
        nu
    } else {
        let (mut search, mut next) = MultiplierSearch::from_below(cap as f64, at_nu);
        loop {
            match next {
                Next::Evaluate(p) => next = search.observe(observe(p)),
                Next::Converged(o) => break o.price,
            }
        }
    };
    let mut counts = Vec::with_capacity(pages.len());
    let mut tied = vec![];
    let mut right = 0u64;
    for (local, i) in pages.enumerate() {
        let p = seeded.page(h, i, price);
        counts.push(p.right);
        right += p.right as u64;
        if p.left > p.right {
            tied.push((i, local, p.left - p.right));
        }
    }
    let mut order: Vec<(u64, u32, usize)> = tied
        .iter()
        .flat_map(|&(i, local, n)| (0..n).map(move |j| (problem.keys[i], j, local)))
        .collect();
    order.sort_unstable();
    for &(_, _, local) in order.iter().take(cap.saturating_sub(right) as usize) {
        counts[local] += 1;
    }
    (price, counts)
}

/// The value of integer visits evenly spaced over the horizon, for one worker's pages (exact
/// partials): weighted staleness sum_i mu_i S(x_i), harmonic penalty sum_i mu_i Hs(lambda_i T / x_i)
/// and the weight sum_i mu_i.
///
/// Evenly spaced is the best a timetable can do with x_i visits (both penalties are convex in the
/// gap), so for the counts optimal under the caps the ratio is PUC-Rio's Weak-Politeness bound
/// (Thm 1) of the objective they were optimal for, and without caps the NonPolite bound.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EvenlySpaced {
    /// sum_i mu_i S(x_i).
    pub weighted: ExactSum,
    /// sum_i mu_i Hs(lambda_i T / x_i) over the pages with a visit or no change.
    pub harmonic: ExactSum,
    /// Pages that change and get no visit: their harmonic penalty is infinite.
    pub starved: u64,
    /// Whether the harmonic penalty was summed (it costs an exponential integral per page).
    pub with_harmonic: bool,
    /// sum_i mu_i.
    pub weight: ExactSum,
}

impl Combine for EvenlySpaced {
    fn combine(&mut self, other: Self) {
        self.weighted.merge(&other.weighted);
        self.harmonic.merge(&other.harmonic);
        self.starved += other.starved;
        self.with_harmonic &= other.with_harmonic;
        self.weight.merge(&other.weight);
    }
}

impl EvenlySpaced {
    /// Of `counts` evenly spaced visits of each page of `pages` over `horizon`: the staleness, and
    /// the harmonic penalty too if `objective` is harmonic.
    pub fn of(pages: &Pages, counts: &[u32], horizon: Seconds, objective: VisitObjective) -> Self {
        let with_harmonic = objective == VisitObjective::Harmonic;
        let mut s = EvenlySpaced {
            with_harmonic,
            ..EvenlySpaced::default()
        };
        for (i, &k) in counts.iter().enumerate() {
            let (mu, lambda) = (pages.importance()[i], pages.change_rate()[i]);
            s.weighted
                .add(mu * periodic_staleness(lambda, horizon.days(), k));
            if lambda > 0.0 && k == 0 {
                s.starved += 1;
            } else if lambda > 0.0 && with_harmonic {
                s.harmonic
                    .add(mu * harmonic_share(lambda * horizon.days() / k as f64));
            }
            s.weight.add(mu);
        }
        s
    }

    /// The weighted mean staleness sum mu S / sum mu.
    pub fn mean(&self) -> f64 {
        self.weighted.value() / self.weight.value()
    }

    /// The harmonic penalty sum mu Hs (the scale of J_h), None when a changing page has no visit
    /// or it was not summed.
    pub fn harmonic_cost(&self) -> Option<f64> {
        (self.with_harmonic && self.starved == 0).then(|| self.harmonic.value())
    }
}
