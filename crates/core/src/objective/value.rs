//! What any rates are worth: the harmonic and binary costs and the freshness of a policy, summed
//! exactly so that every worker count gives the same figures.

use serde::{Deserialize, Serialize};

use super::{binary, binary_cost, fixed_interval, harmonic_cost, Objective, Page};
use crate::exact_sum::ExactSum;
use crate::reduce::Combine;

/// The value of a policy's rates over pages, as exact sums (combine partial values of workers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PolicyValue {
    /// Harmonic staleness J_h = sum mu ln(1 + lambda/rho), or -sum mu ln p with complete
    /// observations (NeurIPS'19 eqs. 2 and 5); +inf as soon as a changing page is starved.
    pub harmonic: ExactSum,
    /// Binary staleness J_b = sum mu lambda/(rho + lambda), or sum mu (1 - p) (NeurIPS'19 eqs. 12, 13):
    /// importance-weighted time pages are stale with Poisson crawls.
    pub binary: ExactSum,
    /// Binary staleness with fixed-interval crawls: sum mu (1 - (rho/lambda)(1 - e^(-lambda/rho)))
    /// (Cho & Garcia-Molina; PNAS'18 eq. 6), sum mu (1 - p) with complete observations.
    pub fixed_interval: ExactSum,
    /// Total importance (the staleness of a policy that never crawls, for binary costs).
    pub importance: ExactSum,
    /// Fetches per day the rates use.
    pub bandwidth: ExactSum,
    /// Pages that change but get rate zero (they are never refreshed).
    pub starved: u64,
    /// Pages valued.
    pub pages: u64,
}

/// Plain sums over one host's pages, in page order (deterministic: a host lives on one worker and its
/// pages are in canonical order), folded into a [`PolicyValue`] once per host: one exact addition
/// per host and figure instead of one per page.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostValue {
    harmonic: f64,
    binary: f64,
    fixed_interval: f64,
    importance: f64,
    bandwidth: f64,
    starved: u64,
    pages: u64,
}

impl HostValue {
    /// Adds one page at rate `rho` per day; `complete_obs` is the page's own observability.
    #[inline]
    pub fn add(&mut self, page: Page, rho: f64, complete_obs: bool) {
        let (mu, lambda) = (page.importance, page.change_rate);
        self.harmonic += harmonic_cost(mu, lambda, rho, complete_obs);
        self.binary += binary_cost(mu, lambda, rho, complete_obs);
        // Response::of(Objective::BinaryFixed, complete_obs).cost(page, rho), without the dispatch
        self.fixed_interval += if complete_obs {
            binary::complete_cost(mu, lambda, rho)
        } else {
            fixed_interval::cost(mu, lambda, rho)
        };
        self.importance += mu;
        self.bandwidth += rho;
        self.starved += (rho <= 0.0 && lambda > 0.0) as u64;
        self.pages += 1;
    }
}

impl PolicyValue {
    /// Adds one page at rate `rho` per day; `complete_obs` is the page's own observability.
    pub fn add(&mut self, page: Page, rho: f64, complete_obs: bool) {
        let mut one = HostValue::default();
        one.add(page, rho, complete_obs);
        self.add_host(&one);
    }

    /// Adds a host's sums.
    pub fn add_host(&mut self, h: &HostValue) {
        self.harmonic.add(h.harmonic);
        self.binary.add(h.binary);
        self.fixed_interval.add(h.fixed_interval);
        self.importance.add(h.importance);
        self.bandwidth.add(h.bandwidth);
        self.starved += h.starved;
        self.pages += h.pages;
    }

    /// J_h, or None when a starved page makes it infinite.
    pub fn harmonic_cost(&self) -> Option<f64> {
        Some(self.harmonic.value()).filter(|v| v.is_finite())
    }

    /// J_b.
    pub fn binary_cost(&self) -> f64 {
        self.binary.value()
    }

    /// Staleness with fixed-interval crawls at the same rates.
    pub fn fixed_interval_cost(&self) -> f64 {
        self.fixed_interval.value()
    }

    /// Importance-weighted share of time pages are fresh with Poisson crawls: 1 - J_b / sum mu.
    pub fn freshness_poisson(&self) -> f64 {
        1.0 - self.binary.value() / self.importance.value()
    }

    /// Importance-weighted share of time pages are fresh with evenly spaced crawls.
    pub fn freshness_fixed_interval(&self) -> f64 {
        1.0 - self.fixed_interval.value() / self.importance.value()
    }

    /// The cost of `objective` (one of the exact freshness objectives but binary-discrete), if finite.
    pub fn cost_of(&self, objective: Objective) -> Option<f64> {
        match objective {
            Objective::Harmonic => self.harmonic_cost(),
            _ => self.exact_cost_of(objective).map(ExactSum::value),
        }
    }

    /// The exact sum of the cost `objective` minimises, where it is one of the measures: the
    /// objective's response costs every page as the measure does (harmonic, binary and
    /// binary-fixed; [`super::Response::of`] with the page's own observability). None for the
    /// others.
    pub fn exact_cost_of(&self, objective: Objective) -> Option<&ExactSum> {
        match objective {
            Objective::Harmonic => Some(&self.harmonic),
            Objective::Binary => Some(&self.binary),
            Objective::BinaryFixed => Some(&self.fixed_interval),
            _ => None,
        }
    }

    /// Whether the cost `objective` minimises is one of the measures ([`PolicyValue::exact_cost_of`]).
    pub fn measures(objective: Objective) -> bool {
        PolicyValue::default().exact_cost_of(objective).is_some()
    }
}

/// A policy's value by every measure, as the numbers reports print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Harmonic staleness J_h (None: infinite, a changing page is never crawled).
    pub cost_harmonic: Option<f64>,
    /// Binary staleness J_b with Poisson crawls.
    pub cost_binary: f64,
    /// Binary staleness with evenly spaced crawls at the same rates.
    pub cost_fixed_interval: f64,
    /// Importance-weighted share of time fresh, Poisson crawls.
    pub freshness_poisson: f64,
    /// Importance-weighted share of time fresh, evenly spaced crawls.
    pub freshness_fixed_interval: f64,
    /// Pages that change and are never crawled.
    pub urls_starved: u64,
    /// Fetches per day the rates use.
    pub bandwidth: f64,
}

impl Figures {
    /// The cost a freshness objective measures: J_h for harmonic, J_b for binary, the evenly spaced
    /// staleness for the others.
    pub fn cost(&self, objective: Objective) -> Option<f64> {
        match objective {
            Objective::Harmonic => self.cost_harmonic,
            Objective::Binary => Some(self.cost_binary),
            _ => Some(self.cost_fixed_interval),
        }
    }
}

impl PolicyValue {
    /// The totals as [`Figures`].
    pub fn figures(&self) -> Figures {
        Figures {
            cost_harmonic: self.harmonic_cost(),
            cost_binary: self.binary_cost(),
            cost_fixed_interval: self.fixed_interval_cost(),
            freshness_poisson: self.freshness_poisson(),
            freshness_fixed_interval: self.freshness_fixed_interval(),
            urls_starved: self.starved,
            bandwidth: self.bandwidth.value(),
        }
    }
}

impl Combine for PolicyValue {
    fn combine(&mut self, o: Self) {
        self.harmonic.merge(&o.harmonic);
        self.binary.merge(&o.binary);
        self.fixed_interval.merge(&o.fixed_interval);
        self.importance.merge(&o.importance);
        self.bandwidth.merge(&o.bandwidth);
        self.starved += o.starved;
        self.pages += o.pages;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(mu: f64, lambda: f64) -> Page {
        Page {
            importance: mu,
            change_rate: lambda,
            slot_days: 0.0,
        }
    }

    #[test]
    fn one_page_matches_the_textbook_formulas() {
        // mu = 2, lambda = 0.5, rho = 1: Poisson fresh share rho/(rho+lambda) = 2/3; evenly spaced
        // crawls every day: fresh share (1 - e^-0.5)/0.5; harmonic cost mu ln(1 + lambda/rho).
        let mut v = PolicyValue::default();
        v.add(page(2.0, 0.5), 1.0, false);
        assert!((v.freshness_poisson() - 2.0 / 3.0).abs() < 1e-15);
        let fixed = (1.0 - (-0.5f64).exp()) / 0.5;
        assert!((v.freshness_fixed_interval() - fixed).abs() < 1e-15);
        assert!((v.harmonic_cost().unwrap() - 2.0 * 1.5f64.ln()).abs() < 1e-15);
        // evenly spaced crawls are fresher than Poisson ones at the same rate (Jensen)
        assert!(v.freshness_fixed_interval() > v.freshness_poisson());
    }

    #[test]
    fn starving_a_changing_page_makes_harmonic_infinite_and_is_counted() {
        let mut v = PolicyValue::default();
        v.add(page(1.0, 0.5), 0.0, false);
        v.add(page(1.0, 0.0), 0.0, false); // never changes: never stale, not starved
        assert_eq!(v.starved, 1);
        assert_eq!(v.harmonic_cost(), None);
        assert!((v.freshness_poisson() - 0.5).abs() < 1e-15);
    }

    /// The fixed-interval cost is the binary-fixed objective's own cost, for both observabilities.
    #[test]
    fn fixed_interval_staleness_is_the_binary_fixed_cost() {
        for complete in [false, true] {
            for (mu, lambda, rho) in [
                (2.0, 0.5, 1.0),
                (1.0, 3.0, 0.01),
                (0.3, 0.01, 5.0),
                (1.0, 0.0, 0.0),
            ] {
                let mut v = PolicyValue::default();
                v.add(page(mu, lambda), rho, complete);
                let own = crate::objective::Response::of(Objective::BinaryFixed, complete)
                    .cost(page(mu, lambda), rho);
                assert_eq!(v.fixed_interval_cost(), own);
            }
        }
    }

    #[test]
    fn complete_observations_cost_one_minus_p() {
        let mut v = PolicyValue::default();
        v.add(page(3.0, 2.0), 0.5, true); // p = 1/4
        assert!((v.binary_cost() - 3.0 * 0.75).abs() < 1e-15);
        assert!((v.fixed_interval_cost() - 3.0 * 0.75).abs() < 1e-15);
        assert!((v.harmonic_cost().unwrap() - 3.0 * 4f64.ln()).abs() < 1e-15);
    }
}
