//! What to solve on some pages: an objective, a bandwidth, the hosts' politeness caps or none, and
//! BLC-eps's non-starvation floors. A problem is a cheap view of [`Pages`]: changing the objective,
//! the bandwidth or the caps gives a new view of the same pages.
//!
//! ```text
//! maximise  sum_i mu_i u_i(rho_i)   subject to  sum_i rho_i = R,  sum_{i in h} rho_i <= C_h,
//!           lo_i <= rho_i <= hi_i
//! ```
//!
//! Every page answers a price with its objective's best response ([`Response::of`] the objective
//! and the page's observability), clipped to its box [lo, hi]: hi is the family's largest useful
//! rate ([`Response::upper`]), lo = min(floor of its host, hi).

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
    /// Least rate of every page of each host, fetches per day (empty: no floors); derived.
    floor: Vec<f64>,
    /// Slot of the discrete-time model, days: one fetch per slot, 1 / R; derived.
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
}

impl<'p> Problem<'p> {
    /// `objective` on `pages` with `bandwidth` fetches per day, polite, without floors.
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
            floor: Vec::new(),
            slot_days: 0.0,
        }
        .at_bandwidth(bandwidth)
    }

    /// The same with BLC-eps's floors (NeurIPS'19 supplement): every page gets at least
    /// eps R / `pages_total` fetches per day (`pages_total`: the pages of every worker), never above
    /// what it can use nor, summed over a host, above the host's cap (see [`Problem::host_floor`]).
    pub fn with_floor(mut self, eps: f64, pages_total: u64) -> Result<Self, ProblemError> {
        if !(0.0..1.0).contains(&eps) {
            return Err(ProblemError::FloorShare(eps));
        }
        self.floor_eps = eps;
        self.pages_total = pages_total;
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

    /// Recomputes what derives from the parameters: the floors (they depend on the bandwidth, the
    /// responses and the caps).
    fn settled(mut self) -> Self {
        self.floor = if self.floor_eps > 0.0 && self.pages_total > 0 {
            let level = self.floor_eps * self.bandwidth / self.pages_total as f64;
            (0..self.hosts())
                .map(|h| self.floor_level(h, level))
                .collect()
        } else {
            Vec::new()
        };
        self
    }

    /// The floor of host `h` for a wanted level: the level if its pages' floors fit under the cap,
    /// else the highest l with sum_i min(l, hi_i) = cap (water-filling), lowered by 1e-12 relative:
    /// politeness is a hard limit and the floor a soft guarantee, and the small margin keeps the
    /// host's demand crossing its cap at a finite price, so its own multiplier stays well defined.
    /// The floors then total at most eps R, which leaves the optimum something to share (eps < 1).
    fn floor_level(&self, h: usize, level: f64) -> f64 {
        let his: Vec<f64> = self
            .pages
            .host_pages(h)
            .map(|i| self.response(i).upper(self.page(i)))
            .collect();
        let at = |l: f64| -> f64 { his.iter().map(|&hi| hi.min(l)).sum() };
        let cap = self.cap(h);
        if at(level) <= cap {
            return level;
        }
        // pages with hi below the level are at hi, the others share what is left
        let mut sorted = his;
        sorted.sort_by(f64::total_cmp);
        let mut room = cap;
        let mut filled = 0.0;
        for (k, &hi) in sorted.iter().enumerate() {
            let share = room / (sorted.len() - k) as f64;
            if hi >= share {
                filled = share;
                break;
            }
            room -= hi;
        }
        filled * (1.0 - 1e-12)
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

    /// The floor level of host `h`, fetches per day per page (0 without floors).
    #[inline]
    pub fn host_floor(&self, h: usize) -> f64 {
        self.floor.get(h).copied().unwrap_or(0.0)
    }

    /// The box [lo, hi] of page `i` of host `h`, fetches per day.
    #[inline]
    pub fn bounds(&self, h: usize, i: usize) -> (f64, f64) {
        let hi = self.response(i).upper(self.page(i));
        (self.host_floor(h).min(hi), hi)
    }

    /// Whether the spend at price 0 and the first guess (the [`super::spend::Prelude`]) change with
    /// the bandwidth: with floors, and for the discrete-time model (its slot is 1 / R).
    pub fn prelude_depends_on_bandwidth(&self) -> bool {
        self.floor_eps > 0.0 || self.objective == Objective::BinaryDiscrete
    }
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
        assert_eq!(p.host_floor(0), 2.0);
        // host 1: 0.1 at its hi, 0.45 each for the other two
        assert!((p.host_floor(1) - 0.45).abs() < 1e-12);
        assert!(p.host_floor(1) < 0.45);
        assert_eq!(p.bounds(1, 2), (0.1, 0.1));
        // a page that never changes has nothing to gain: its box is [0, 0]
        assert_eq!(p.bounds(2, 5), (0.0, 0.0));
        // without caps every floor is the level
        assert_eq!(p.without_caps().host_floor(1), 2.0);
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
