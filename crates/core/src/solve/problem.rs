//! What to solve on some pages: an objective, a bandwidth, the hosts' politeness caps or none, and
//! each page's box of rates (BLC-eps's non-starvation floors, refetch-interval bounds). A problem is
//! a cheap view of [`Pages`]: changing the objective, the bandwidth or the caps gives a new view of
//! the same pages.
//!
//! ```text
//! maximise  sum_i mu_i u_i(rho_i)   subject to  sum_i rho_i = R,  sum_{i in h} rho_i <= C_h,
//!           lo_i <= rho_i <= hi_i
//! ```
//!
//! Every page answers a price with its objective's best response ([`Response::of`] the objective
//! and the page's observability), clipped to its box. The box of page i of host h:
//!
//! ```text
//! target_i = max(min(floor, upper_i), 1 / max_interval_i)    what it should get at least
//! lo_i     = min(target_i, level_h)                           politeness first
//! hi_i     = max(min(upper_i, 1 / min_interval_i), lo_i)
//! ```
//!
//! upper_i is the family's largest useful rate ([`Response::upper`]); floor is BLC-eps's eps R / |W|
//! (NeurIPS'19 supplement); the intervals are the page's own or the problem's. A max interval is a
//! hard wish to look again (a page that never changes may vanish), so it is kept even above
//! upper_i; politeness is harder still: when a host's targets exceed its cap, they are water-filled
//! to the level level_h with sum_i min(target_i, level_h) = C_h, lowered by 1e-12 relative so that
//! the host's demand crosses its cap at a finite price (its own multiplier stays well defined).

use super::pages::Pages;
use crate::objective::{Objective, Page, Response};

/// The optimisation problem on some pages (see the module notes).
#[derive(Clone, Debug)]
pub struct Problem<'p> {
    pages: &'p Pages,
    objective: Objective,
    /// R, fetches per day.
    bandwidth: f64,
    /// Whether the hosts' caps are in force.
    polite: bool,
    /// BLC-eps's eps, and the page count of the whole problem (all workers) it divides by.
    floor_eps: f64,
    pages_total: u64,
    /// The least and largest rate of pages without their own, fetches per day (1 / the max and
    /// min refetch intervals; 0 and +inf: none).
    rate_bounds: (f64, f64),
    /// Derived: BLC-eps's floor, eps R / |W| fetches per day (0: none).
    floor: f64,
    /// Derived: each host's water level under its cap (+inf where the targets fit; empty when no
    /// page has a lower bound).
    level: Vec<f64>,
    /// Derived: whether any page has a bound besides its family's (the demand's fast path is for
    /// problems without).
    bounded: bool,
    /// Derived: slot of the discrete-time model, days: one fetch per slot, 1 / R.
    slot_days: f64,
}

/// A parameter no problem can have.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProblemError {
    #[error("the bandwidth must be a finite number > 0 of fetches per day, got {0}")]
    Bandwidth(f64),
    #[error(
        "the floor share eps must be in [0, 1) (it is the share of the bandwidth spread evenly \
         as floors; a floor of 1 is the uniform policy), got {0}"
    )]
    FloorShare(f64),
    #[error(
        "rate bounds must be 0 <= least <= largest fetches per day (the max refetch interval at \
         least the min), got [{0}, {1}]"
    )]
    RateBounds(f64, f64),
}

impl<'p> Problem<'p> {
    /// `objective` on `pages` with `bandwidth` fetches per day, polite, with no bounds but the
    /// pages' own.
    pub fn new(
        pages: &'p Pages,
        objective: Objective,
        bandwidth: f64,
    ) -> Result<Self, ProblemError> {
        Problem {
            pages,
            objective,
            bandwidth: 0.0,
            polite: true,
            floor_eps: 0.0,
            pages_total: 0,
            rate_bounds: (0.0, f64::INFINITY),
            floor: 0.0,
            level: Vec::new(),
            bounded: false,
            slot_days: 0.0,
        }
        .at_bandwidth(bandwidth)
    }

    /// The same with BLC-eps's floors (NeurIPS'19 supplement): every page gets at least
    /// eps R / `pages_total` fetches per day (`pages_total`: the pages of every worker), never above
    /// what it can use nor, summed over a host, above the host's cap.
    pub fn with_floor(mut self, eps: f64, pages_total: u64) -> Result<Self, ProblemError> {
        if !(0.0..1.0).contains(&eps) {
            return Err(ProblemError::FloorShare(eps));
        }
        self.floor_eps = eps;
        self.pages_total = pages_total;
        Ok(self.settled())
    }

    /// The same with every page's rate in [least, largest] fetches per day unless it has bounds of
    /// its own (1 / the max and min refetch intervals; 0 and +inf for none).
    pub fn with_rate_bounds(mut self, least: f64, largest: f64) -> Result<Self, ProblemError> {
        if !(least.is_finite() && least >= 0.0 && largest > 0.0 && least <= largest) {
            return Err(ProblemError::RateBounds(least, largest));
        }
        self.rate_bounds = (least, largest);
        Ok(self.settled())
    }

    /// The same problem at another bandwidth.
    pub fn at_bandwidth(&self, bandwidth: f64) -> Result<Self, ProblemError> {
        if !(bandwidth.is_finite() && bandwidth > 0.0) {
            return Err(ProblemError::Bandwidth(bandwidth));
        }
        Ok(Problem {
            bandwidth,
            slot_days: 1.0 / bandwidth,
            ..self.clone()
        }
        .settled())
    }

    /// The same problem for another objective.
    pub fn with_objective(&self, objective: Objective) -> Self {
        Problem {
            objective,
            ..self.clone()
        }
        .settled()
    }

    /// The same problem without politeness caps (its optimum bounds every polite policy's).
    pub fn without_caps(&self) -> Self {
        Problem {
            polite: false,
            ..self.clone()
        }
        .settled()
    }

    /// The same problem with the hosts' caps in force.
    pub fn with_caps(&self) -> Self {
        Problem {
            polite: true,
            ..self.clone()
        }
        .settled()
    }

    /// Recomputes what derives from the parameters: the floor, the hosts' water levels (they depend
    /// on the bandwidth, the responses and the caps).
    fn settled(mut self) -> Self {
        self.floor = if self.floor_eps > 0.0 && self.pages_total > 0 {
            self.floor_eps * self.bandwidth / self.pages_total as f64
        } else {
            0.0
        };
        self.bounded = self.floor > 0.0
            || self.rate_bounds != (0.0, f64::INFINITY)
            || self.pages.has_rate_bounds();
        self.level = Vec::new();
        if self.floor > 0.0 || self.rate_bounds.0 > 0.0 || self.pages.has_rate_bounds() {
            self.level = (0..self.hosts()).map(|h| self.water_level(h)).collect();
        }
        self
    }

    /// The water level of host `h`: +inf if its pages' targets fit under its cap, else the level l
    /// with sum_i min(target_i, l) = cap, lowered by 1e-12 relative.
    fn water_level(&self, h: usize) -> f64 {
        let targets: Vec<f64> = self.host_pages(h).map(|i| self.target(i)).collect();
        let cap = self.cap(h);
        if targets.iter().sum::<f64>() <= cap {
            return f64::INFINITY;
        }
        // pages with a target below the level keep it, the others share what is left
        let mut sorted = targets;
        sorted.sort_by(f64::total_cmp);
        let mut room = cap;
        let mut level = 0.0;
        for (k, &t) in sorted.iter().enumerate() {
            let share = room / (sorted.len() - k) as f64;
            if t >= share {
                level = share;
                break;
            }
            room -= t;
        }
        level * (1.0 - 1e-12)
    }

    /// What page `i` should get at least: its floor (at most what it can use), and a visit every
    /// max interval.
    #[inline]
    fn target(&self, i: usize) -> f64 {
        let upper = self.response(i).upper(self.page(i));
        let floor = if self.floor > 0.0 {
            self.floor.min(upper)
        } else {
            0.0
        };
        floor.max(self.rate_bounds_of(i).0)
    }

    /// The least and largest rate page `i` asks for itself, or the problem's.
    #[inline]
    fn rate_bounds_of(&self, i: usize) -> (f64, f64) {
        let (own_min, own_max) = self.pages.rate_bounds(i);
        (
            if own_min.is_nan() {
                self.rate_bounds.0
            } else {
                own_min
            },
            if own_max.is_nan() {
                self.rate_bounds.1
            } else {
                own_max
            },
        )
    }

    /// The pages.
    #[inline]
    pub fn pages(&self) -> &'p Pages {
        self.pages
    }

    /// The objective.
    #[inline]
    pub fn objective(&self) -> Objective {
        self.objective
    }

    /// R, fetches per day.
    #[inline]
    pub fn bandwidth(&self) -> f64 {
        self.bandwidth
    }

    /// Whether the hosts' caps are in force.
    #[inline]
    pub fn is_polite(&self) -> bool {
        self.polite
    }

    /// BLC-eps's eps (0: no floors).
    #[inline]
    pub fn floor_eps(&self) -> f64 {
        self.floor_eps
    }

    /// Whether some page has a bound besides its family's (floors, interval bounds): the
    /// demand's loops specialised per family assume none.
    #[inline]
    pub fn is_bounded(&self) -> bool {
        self.bounded
    }

    /// Number of hosts.
    #[inline]
    pub fn hosts(&self) -> usize {
        self.pages.hosts()
    }

    /// Page index range of host `h`.
    #[inline]
    pub fn host_pages(&self, h: usize) -> std::ops::Range<usize> {
        self.pages.host_pages(h)
    }

    /// The politeness caps of `hosts`, fetches per day (None without politeness: no cap).
    #[inline]
    pub fn caps(&self, hosts: std::ops::Range<usize>) -> Option<&[f64]> {
        self.polite.then(|| &self.pages.caps()[hosts])
    }

    /// The cap of host `h` in this problem, fetches per day (+inf without caps).
    #[inline]
    pub fn cap(&self, h: usize) -> f64 {
        if self.polite {
            self.pages.cap(h)
        } else {
            f64::INFINITY
        }
    }

    /// The best-response family of page `i`: the objective's, for the page's observability.
    #[inline]
    pub fn response(&self, i: usize) -> Response {
        Response::of(self.objective, self.pages.complete_obs()[i])
    }

    /// Page `i` as its response sees it.
    #[inline]
    pub fn page(&self, i: usize) -> Page {
        Page {
            importance: self.pages.importance()[i],
            change_rate: self.pages.change_rate()[i],
            slot_days: self.slot_days,
        }
    }

    /// Slot of the discrete-time model, days (1 / R).
    #[inline]
    pub fn slot_days(&self) -> f64 {
        self.slot_days
    }

    /// The box [lo, hi] of page `i` of host `h`, fetches per day (see the module notes).
    #[inline]
    pub fn bounds(&self, h: usize, i: usize) -> (f64, f64) {
        let upper = self.response(i).upper(self.page(i));
        if !self.bounded {
            return (0.0, upper);
        }
        let lo = self
            .target(i)
            .min(self.level.get(h).copied().unwrap_or(f64::INFINITY));
        let hi = upper.min(self.rate_bounds_of(i).1).max(lo);
        (lo, hi)
    }

    /// Whether page `i` of host `h` at `rate` is held at a bound of its refetch intervals: (at the
    /// least rate its max interval asks, at the largest its min interval allows); and whether
    /// politeness keeps it under what its max interval asks.
    pub fn interval_bound(&self, h: usize, i: usize, rate: f64) -> IntervalBound {
        let (least, largest) = self.rate_bounds_of(i);
        let (lo, hi) = self.bounds(h, i);
        let tight = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
        IntervalBound {
            at_max_interval: least > 0.0 && lo >= least * (1.0 - 1e-12) && tight(rate, lo),
            at_min_interval: largest.is_finite() && tight(hi, largest) && tight(rate, hi),
            max_interval_unmet: least > 0.0 && lo < least * (1.0 - 1e-9),
        }
    }

    /// Whether the spend at price 0 and the first guess (the [`super::spend::Prelude`]) change with
    /// the bandwidth: with floors, and for the discrete-time model (its slot is 1 / R).
    pub fn prelude_depends_on_bandwidth(&self) -> bool {
        self.floor_eps > 0.0 || self.objective == Objective::BinaryDiscrete
    }
}

/// Where a page's rate sits against its refetch-interval bounds ([`Problem::interval_bound`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntervalBound {
    /// Fetched once per max interval, no more.
    pub at_max_interval: bool,
    /// Fetched once per min interval, no less often.
    pub at_min_interval: bool,
    /// Its host's cap cannot give it one fetch per max interval.
    pub max_interval_unmet: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solve::pages::PagesBuilder;
    use crate::units::PerDay;

    #[test]
    fn floors_fit_the_caps_by_water_filling() {
        let mut b = PagesBuilder::new();
        // binary: complete observations have hi = lambda
        b.push_host(PerDay(10.0), [(1.0, 0.5, false), (1.0, 0.5, false)])
            .push_host(
                PerDay(1.0),
                [(1.0, 0.1, true), (1.0, 5.0, false), (1.0, 5.0, false)],
            )
            .push_host(PerDay(5.0), [(1.0, 0.0, false)]);
        let pages = b.build().unwrap();
        // eps R / pages = 2 per page
        let p = Problem::new(&pages, Objective::Binary, 6.0)
            .unwrap()
            .with_floor(2.0 / 3.0, 2)
            .unwrap();
        assert_eq!(p.bounds(0, 0).0, 2.0);
        // host 1: 0.1 at its hi, 0.45 each for the other two
        let (lo, _) = p.bounds(1, 3);
        assert!((lo - 0.45).abs() < 1e-12 && lo < 0.45, "{lo}");
        assert_eq!(p.bounds(1, 2), (0.1, 0.1));
        // a page that never changes has nothing to gain: its box is [0, 0]
        assert_eq!(p.bounds(2, 5), (0.0, 0.0));
        // without caps every floor is the level
        assert_eq!(p.without_caps().bounds(1, 3).0, 2.0);
    }

    #[test]
    fn interval_bounds_are_boxes_even_for_pages_that_never_change() {
        let mut b = PagesBuilder::new();
        b.push_host(
            PerDay(100.0),
            [(1.0, 0.0, false), (1.0, 2.0, true), (1.0, 2.0, false)],
        )
        .push_host(PerDay(0.5), [(1.0, 1.0, false), (1.0, 1.0, false)]);
        let pages = b.build().unwrap();
        // a visit at least every 30 days, at most every hour
        let (least, largest) = (1.0 / 30.0, 24.0);
        let p = Problem::new(&pages, Objective::Harmonic, 10.0)
            .unwrap()
            .with_rate_bounds(least, largest)
            .unwrap();
        // never changes: fetched once every 30 days all the same
        assert_eq!(p.bounds(0, 0), (least, least));
        // complete observations: at most its change rate, at least the max interval's
        assert_eq!(p.bounds(0, 1), (least, 2.0));
        assert_eq!(p.bounds(0, 2), (least, largest));
        // a cap of 0.5 a day cannot give two pages one fetch each every 30 days at... it can
        assert_eq!(p.bounds(1, 3).0, least);
        let tight = Problem::new(&pages, Objective::Harmonic, 10.0)
            .unwrap()
            .with_rate_bounds(0.5, largest)
            .unwrap();
        // 2 x 0.5 > 0.5: water-filled to 0.25 each, just under
        let (lo, _) = tight.bounds(1, 3);
        assert!(lo < 0.25 && lo > 0.25 * (1.0 - 1e-11), "{lo}");
        assert!(tight.interval_bound(1, 3, lo).max_interval_unmet);
        // a page's own bounds win over the problem's
        let own = pages
            .clone()
            .with_rate_bounds(
                vec![f64::NAN, 1.0, f64::NAN, f64::NAN, f64::NAN],
                vec![f64::NAN, 1.5, 0.1, f64::NAN, f64::NAN],
            )
            .unwrap();
        let p = Problem::new(&own, Objective::Harmonic, 10.0)
            .unwrap()
            .with_rate_bounds(least, largest)
            .unwrap();
        assert_eq!(p.bounds(0, 1), (1.0, 1.5));
        assert_eq!(p.bounds(0, 2), (least, 0.1));
        assert!(pages
            .clone()
            .with_rate_bounds(vec![2.0; 5], vec![1.0; 5])
            .is_err());
        assert!(p.clone().with_rate_bounds(2.0, 1.0).is_err());
    }

    #[test]
    fn views_change_one_thing() {
        let mut b = PagesBuilder::new();
        b.push_host(PerDay(3.0), [(1.0, 0.5, false), (2.0, 0.5, true)]);
        let pages = b.build().unwrap();
        let p = Problem::new(&pages, Objective::Harmonic, 4.0).unwrap();
        assert_eq!(p.response(1), Response::HarmonicComplete);
        assert_eq!(p.slot_days(), 0.25);
        let q = p.with_objective(Objective::Binary).without_caps();
        assert_eq!(q.response(0), Response::BinaryPoisson);
        assert_eq!((q.cap(0), p.cap(0)), (f64::INFINITY, 3.0));
        assert_eq!(q.at_bandwidth(8.0).unwrap().slot_days(), 0.125);
        assert_eq!(
            p.at_bandwidth(0.0).unwrap_err(),
            ProblemError::Bandwidth(0.0)
        );
        assert_eq!(
            p.clone().with_floor(1.0, 2).unwrap_err(),
            ProblemError::FloorShare(1.0)
        );
    }
}
