//! The safeguarded search for a price at which spend meets a target: Newton in log-log space inside a
//! bisection bracket, aware of the steps of step responses.
//!
//! One search finds the global multiplier nu (spend = bandwidth; each evaluation is one all-reduce
//! round on a cluster) and, with the same code, each capped host's own multiplier (demand = cap; each
//! evaluation a local pass). It is a state machine so that the caller decides how an evaluation is
//! done: the search never sees pages, hosts or workers.
//!
//! Why Newton in log-log: total spend is close to a power law in the price (exponent between -1 and
//! -1/2 for our objectives), so ln S is nearly linear in ln theta and Newton converges in a handful of
//! rounds from a moment-based guess, where plain bisection needs ~50. Steps (binary objective with
//! complete observations) make spend discontinuous: an evaluation reports both one-sided limits and the
//! nearest steps, the search can land on a step exactly, and the caller splits the tie (see
//! [`super::spend::tie_fill`]).

/// What one evaluation of spend at a price reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// The price evaluated.
    pub price: f64,
    /// Spend just above the price.
    pub right: f64,
    /// Spend just below the price (>= right; larger only at a step).
    pub left: f64,
    /// d spend / d price near the price (<= 0).
    pub slope: f64,
    /// Smallest step price above `price` (+inf if none).
    pub next_above: f64,
    /// Largest step price below `price` (0 if none).
    pub next_below: f64,
}

/// What the search wants next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// Evaluate spend at this price and call [`MultiplierSearch::observe`].
    Evaluate(f64),
    /// The target lies in [right, left] at this observation's price (within the tolerance).
    Converged(Observation),
}

/// Relative tolerance on spend: |spend - target| <= TOLERANCE * target (the issue asks 1e-12).
pub const TOLERANCE: f64 = 1e-13;

/// Relative difference within which the reported elasticity and the secant's agree (see
/// `MultiplierSearch::candidate`): secants through nearby prices of a smooth spend differ from the
/// tangent by far less; a cap switching on or a staircase of steps between them, by more.
const SLOPES_AGREE: f64 = 0.1;

/// Evaluations after which the search stops at its best observation whatever happens: a guarantee
/// of termination (a nightly job must end), far above the 5-8 rounds seen on real data. Reaching it
/// means the spend function defeated the safeguards; the caller sees a spend off the target.
pub const MAX_ROUNDS: u32 = 200;

/// Safeguarded Newton search for the price at which a non-increasing spend function meets a target.
#[derive(Clone, Debug)]
pub struct MultiplierSearch {
    target: f64,
    /// Highest price known to spend more than the target (0 at the start).
    lo: Observation,
    /// Lowest price known to spend less than the target (+inf at the start).
    hi: Observation,
    /// Whether the latest observation moved `lo` (true) or `hi` (false).
    last_was_lo: bool,
    /// The observation before the latest, with the spend value used for it, for secant slopes.
    prev: Option<(f64, f64)>,
    /// The latest observation's price and spend value.
    latest: Option<(f64, f64)>,
    /// |ln(spend/target)| of the last three observations, to force a bisection when progress stalls.
    gaps: [f64; 3],
    rounds: u32,
    /// Whether the search stopped at [`MAX_ROUNDS`] rather than at the target.
    exhausted: bool,
}

impl MultiplierSearch {
    /// Starts a search for `target` > 0 given the spend at price 0+ (`max_spend`, possibly +inf), and
    /// a first guess of the price. Returns the search and its first request.
    pub fn new(target: f64, max_spend: f64, guess: f64) -> (Self, Next) {
        let zero = Observation {
            price: 0.0,
            right: max_spend,
            left: max_spend,
            slope: 0.0,
            next_above: 0.0,
            next_below: 0.0,
        };
        let infinity = Observation {
            price: f64::INFINITY,
            right: 0.0,
            left: 0.0,
            slope: 0.0,
            next_above: f64::INFINITY,
            next_below: f64::INFINITY,
        };
        let search = MultiplierSearch {
            target,
            lo: zero,
            hi: infinity,
            last_was_lo: true,
            prev: None,
            latest: None,
            gaps: [f64::INFINITY; 3],
            rounds: 0,
            exhausted: false,
        };
        if max_spend <= target * (1.0 + TOLERANCE) {
            // Everything the pages and hosts can take is at most the target: price 0.
            return (search, Next::Converged(zero));
        }
        let first = if guess.is_finite() && guess > 0.0 {
            guess
        } else {
            1.0
        };
        (search, Next::Evaluate(first))
    }

    /// Starts a search whose price is known to be at least `observed.price` (its spend is above target).
    pub fn from_below(target: f64, observed: Observation) -> (Self, Next) {
        let (mut search, _) = MultiplierSearch::new(target, f64::INFINITY, 1.0);
        let next = search.observe(observed);
        search.rounds = 0;
        (search, next)
    }

    /// Evaluations observed so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Whether the search ended at its round cap, its answer off the target: the spend function
    /// defeated the safeguards (a caller must not present the answer as a solution).
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Takes an evaluation and says what to do next.
    pub fn observe(&mut self, o: Observation) -> Next {
        self.rounds += 1;
        let t = self.target;
        if o.right <= t * (1.0 + TOLERANCE) && o.left >= t * (1.0 - TOLERANCE) {
            return Next::Converged(o);
        }
        if self.rounds >= MAX_ROUNDS {
            self.exhausted = true;
            let gap = |x: &Observation| (x.right - t).abs().min((x.left - t).abs());
            let best = [o, self.lo, self.hi]
                .into_iter()
                .filter(|x| x.price.is_finite())
                .min_by(|a, b| gap(a).total_cmp(&gap(b)));
            return Next::Converged(best.unwrap_or(o));
        }
        let value = if o.right > t {
            if o.price > self.lo.price {
                self.lo = o;
            }
            self.last_was_lo = true;
            o.right
        } else {
            if o.price < self.hi.price {
                self.hi = o;
            }
            self.last_was_lo = false;
            o.left
        };
        self.prev = self.latest;
        self.latest = Some((o.price, value));
        self.gaps = [self.gaps[1], self.gaps[2], (value / t).ln().abs()];
        let next = self.candidate();
        if next == o.price {
            // The bracket is down to at most one float inside and this price was just evaluated:
            // probe the float left inside, if any; else spend jumps past the target between two
            // neighbouring prices with no step to split (a response steeper than f64 resolves), and
            // evaluating again would return the same: stop here.
            let inside = next_up(self.lo.price);
            if self.lo.price > 0.0 && inside < self.hi.price && inside != o.price {
                return Next::Evaluate(inside);
            }
            return Next::Converged(o);
        }
        Next::Evaluate(next)
    }

    fn candidate(&mut self) -> f64 {
        let (lo, hi, t) = (self.lo, self.hi, self.target);
        if hi.price.is_finite() && lo.price > 0.0 && hi.price <= next_up(next_up(lo.price)) {
            // The bracket is down to adjacent floats: spend is discontinuous or flat here beyond what
            // the step reports show; take the step itself (the caller splits the tie at hi's price).
            return hi.price;
        }
        // Progress is too slow when the gap did not at least halve over two observations.
        let stalled = self.gaps[2] > 0.5 * self.gaps[0];

        let (x, value, next_step) = if self.last_was_lo {
            (lo, lo.right, lo.next_above)
        } else {
            (hi, hi.left, hi.next_below)
        };
        let inside = |p: f64| p > lo.price && p < hi.price && p.is_finite();

        // Newton on ln S against ln theta from the latest observation. The slope is the secant through
        // the previous observation when that one is near, unless spend has no steps and the two
        // slopes agree: the secant measures what the evaluations report (steps, caps switching
        // on) where the reported slope only knows the smooth responses. Where spend is smooth and
        // they agree, nothing unreported lies between, and the reported slope, exact at the
        // latest price, converges quadratically (the secant at order 1.6: a round more on the
        // binary objective without complete observations).
        let mut elasticity = x.slope * x.price / value;
        if let (Some((p0, v0)), Some((p1, v1))) = (self.prev, self.latest) {
            let secant = (v1 / v0).ln() / (p1 / p0).ln();
            // a staircase's reported slope is its steps smeared over a window, not a tangent
            let smooth = x.next_above == f64::INFINITY && x.next_below == 0.0;
            let agrees = smooth && (secant / elasticity - 1.0).abs() <= SLOPES_AGREE;
            if (p1 / p0).ln().abs() < 0.5 && secant < 0.0 && secant.is_finite() && !agrees {
                elasticity = secant;
            }
        }
        let mut cand = f64::NAN;
        if elasticity < 0.0 && elasticity.is_finite() && !stalled {
            cand = x.price * (-(value / t).ln() / elasticity).exp();
        }
        if inside(cand) {
            // A step between here and the Newton target: probe the step itself when it is the only
            // one left in the bracket, or when it lies more than halfway to the target (in log).
            let crosses = if self.last_was_lo {
                cand >= next_step
            } else {
                cand <= next_step
            };
            if crosses && inside(next_step) {
                let only_step = lo.next_above == hi.next_below;
                let far = (next_step / x.price).ln().abs() >= 0.5 * (cand / x.price).ln().abs();
                if only_step || far {
                    return next_step;
                }
            }
            return cand;
        }
        // Fallbacks: expand an open bracket along a power law of exponent -1, else bisect.
        if !hi.price.is_finite() {
            if x.price == 0.0 {
                return 1.0; // no scale known yet: start anywhere, the bracket expands geometrically
            }
            return x.price * (value / t).max(2.0);
        }
        if lo.price == 0.0 {
            return hi.price * (value / t).min(0.5);
        }
        if lo.next_above == hi.next_below && inside(lo.next_above) {
            return lo.next_above;
        }
        if !stalled {
            // Regula falsi on ln S against ln theta between the bracket ends.
            let (g_lo, g_hi) = ((lo.right / t).ln(), (hi.left / t).ln());
            let f = g_lo / (g_lo - g_hi);
            let secant = (lo.price.ln() + f * (hi.price / lo.price).ln()).exp();
            if inside(secant) {
                return secant;
            }
        }
        let mid = (lo.price * hi.price).sqrt();
        if inside(mid) {
            mid
        } else {
            hi.price
        }
    }
}

fn next_up(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(
        target: f64,
        max_spend: f64,
        guess: f64,
        f: impl Fn(f64) -> Observation,
    ) -> (Observation, u32) {
        let (mut s, mut next) = MultiplierSearch::new(target, max_spend, guess);
        for _ in 0..200 {
            match next {
                Next::Evaluate(p) => next = s.observe(f(p)),
                Next::Converged(o) => return (o, s.rounds()),
            }
        }
        panic!("no convergence");
    }

    fn smooth(c: f64, k: f64) -> impl Fn(f64) -> Observation {
        move |p: f64| {
            let v = c * p.powf(-k);
            Observation {
                price: p,
                right: v,
                left: v,
                slope: -k * v / p,
                next_above: f64::INFINITY,
                next_below: 0.0,
            }
        }
    }

    #[test]
    fn a_power_law_converges_in_one_newton_step() {
        let (o, rounds) = drive(10.0, f64::INFINITY, 1.0, smooth(3.0, 0.7));
        assert!((o.right - 10.0).abs() <= 10.0 * TOLERANCE);
        assert!(rounds <= 3, "{rounds}");
    }

    #[test]
    fn a_capped_curve_converges() {
        // min(cap, power law) summed over two "hosts": kinks, no steps.
        let f = |p: f64| {
            let a = 5.0 * p.powf(-0.5);
            let b = 2.0 * p.powf(-1.0);
            let (sa, da) = if a < 3.0 {
                (a, -0.5 * a / p)
            } else {
                (3.0, 0.0)
            };
            let (sb, db) = if b < 4.0 { (b, -b / p) } else { (4.0, 0.0) };
            let v = sa + sb;
            Observation {
                price: p,
                right: v,
                left: v,
                slope: da + db,
                next_above: f64::INFINITY,
                next_below: 0.0,
            }
        };
        let (o, rounds) = drive(5.0, 7.0, 0.01, f);
        assert!((o.right - 5.0).abs() <= 5.0 * TOLERANCE, "{o:?}");
        assert!(rounds < 30, "{rounds}");
    }

    #[test]
    fn a_single_step_is_found_exactly() {
        // spend = 1/p + (4 if p <= 2 else 0); target 2 lies inside the step at p = 2 (0.5..4.5).
        let f = |p: f64| {
            let s = 1.0 / p;
            let step = 4.0;
            Observation {
                price: p,
                right: s + if p < 2.0 { step } else { 0.0 },
                left: s + if p <= 2.0 { step } else { 0.0 },
                slope: -s / p,
                next_above: if p < 2.0 { 2.0 } else { f64::INFINITY },
                next_below: if p > 2.0 { 2.0 } else { 0.0 },
            }
        };
        let (o, _) = drive(2.0, f64::INFINITY, 0.1, f);
        assert_eq!(o.price, 2.0);
        assert!(o.right <= 2.0 && o.left >= 2.0);
        // and a target on the smooth part just beside the step is not mistaken for it
        let (o, _) = drive(4.75, f64::INFINITY, 0.1, f);
        assert!((o.price - 4.0 / 3.0).abs() < 1e-12, "{o:?}");
    }

    #[test]
    fn a_search_that_cannot_meet_its_target_says_so() {
        // spend jumps from far above to far below the target between every pair of prices a
        // search can try (as at a bandwidth of 5e-324): it must end, and say it did not converge
        let flip = |p: f64| {
            let v = if p < 1.0 { 1e300 } else { 0.0 };
            Observation {
                price: p,
                right: v,
                left: v,
                slope: 0.0,
                next_above: f64::INFINITY,
                next_below: 0.0,
            }
        };
        let (mut s, mut next) = MultiplierSearch::new(5e-324, f64::INFINITY, 1.0);
        for _ in 0..=MAX_ROUNDS {
            match next {
                Next::Evaluate(p) => next = s.observe(flip(p)),
                Next::Converged(_) => break,
            }
        }
        assert!(matches!(next, Next::Converged(_)));
        let (o, _) = drive(10.0, f64::INFINITY, 1.0, smooth(3.0, 0.7));
        assert!(o.right > 0.0);
        let (mut fine, _) = MultiplierSearch::new(10.0, f64::INFINITY, 1.0);
        fine.observe(smooth(3.0, 0.7)(1.0));
        assert!(!fine.exhausted());
        if s.rounds() >= MAX_ROUNDS {
            assert!(s.exhausted());
        }
    }

    #[test]
    fn zero_when_the_target_exceeds_what_can_be_spent() {
        let (_, next) = MultiplierSearch::new(10.0, 9.0, 1.0);
        assert!(matches!(next, Next::Converged(o) if o.price == 0.0));
    }
}
