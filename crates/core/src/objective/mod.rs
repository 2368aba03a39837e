//! Objectives: each URL's best response to a price, its slope, its marginal utility, and policy costs.
//!
//! Every objective of revisit is separable and concave in a URL's crawl rate rho :
//! maximise sum_i mu_i u_i(rho_i) subject to the bandwidth and per-host caps. A URL answers a price
//! theta (the Lagrange multiplier) with its best response r_i(theta) = argmax mu u(rho) - theta rho,
//! clipped to its box; responses are non-increasing in theta, which is what makes one global multiplier
//! (and one per capped host) solve everything. Nothing here knows about hosts, workers or files.

pub mod binary;
pub mod discrete;
pub mod fixed_interval;
pub mod harmonic;
pub mod proportional;
pub mod value;

use serde::{Deserialize, Serialize};

/// The freshness objective of a run (what "fresh" means to the crawl team), or a baseline policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Harmonic staleness (NeurIPS'19 LambdaCrawl): penalises every missed change, never starves a page.
    Harmonic,
    /// Binary freshness with Poisson crawls (PNAS'18 Problem 2, BLC): fraction of time pages are fresh.
    Binary,
    /// Binary freshness with fixed-interval crawls (Cho & Garcia-Molina; Frontera's value objective
    /// with --value-per-change), exact via the Lambert W function.
    BinaryFixed,
    /// Binary freshness in discrete time, one fetch per slot of 1/bandwidth days (PNAS'18 Problem 1).
    BinaryDiscrete,
    /// Harmonic staleness approximated by rates proportional to importance (NeurIPS'19 Prop. 9, LCA);
    /// pages with complete observations keep their exact harmonic response.
    HarmonicApprox,
    /// Baseline: BLC as NeurIPS'19 §7 ran it, PNAS'18's binary optimum computed as if every page's
    /// changes were seen only by crawling (blind to complete observations), valued on the true ones.
    BinaryBlind,
    /// Baseline: the same rate for every page (UniformCrawl), shared by water-filling under caps.
    Uniform,
    /// Baseline: rates proportional to the change rate (ChangeRateCrawl), water-filled under caps.
    ChangeRate,
    /// Baseline: rates proportional to importance, water-filled under caps.
    Importance,
}

impl Objective {
    /// Every objective, in the order of the command line's help.
    pub const ALL: [Objective; 9] = [
        Objective::Harmonic,
        Objective::Binary,
        Objective::BinaryFixed,
        Objective::BinaryDiscrete,
        Objective::HarmonicApprox,
        Objective::BinaryBlind,
        Objective::Uniform,
        Objective::ChangeRate,
        Objective::Importance,
    ];

    /// The name written into summaries and Parquet metadata (the `--objective` value).
    pub fn name(self) -> &'static str {
        match self {
            Objective::Harmonic => "harmonic",
            Objective::Binary => "binary",
            Objective::BinaryFixed => "binary-fixed",
            Objective::BinaryDiscrete => "binary-discrete",
            Objective::HarmonicApprox => "harmonic-approx",
            Objective::BinaryBlind => "binary-blind",
            Objective::Uniform => "uniform",
            Objective::ChangeRate => "change-rate",
            Objective::Importance => "importance",
        }
    }

    /// Whether the rates are the exact optimum of a freshness objective (not an approximation or a
    /// baseline), so that [`Response::cost`] summed over pages is the objective's own value.
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            Objective::Harmonic
                | Objective::Binary
                | Objective::BinaryFixed
                | Objective::BinaryDiscrete
        )
    }
}

/// What a page's response depends on: its importance, its change rate, and the run's time slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Page {
    /// Importance mu > 0 of the page.
    pub importance: f64,
    /// Change rate lambda >= 0, changes per day.
    pub change_rate: f64,
    /// Slot of the discrete-time model in days (1 / bandwidth); only [`Response::BinaryDiscrete`] reads it.
    pub slot_days: f64,
}

/// Which best-response family a URL follows: the run's objective and the URL's observability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum Response {
    /// Harmonic staleness, changes seen only by crawling (NeurIPS'19 Prop. 2).
    HarmonicIncomplete,
    /// Harmonic staleness, every change notified; rho = p lambda <= lambda (NeurIPS'19 Prop. 5).
    HarmonicComplete,
    /// Binary freshness, Poisson crawls (PNAS'18 Problem 2, eq. 5).
    BinaryPoisson,
    /// Binary freshness, every change notified: linear utility mu rho / lambda (NeurIPS'19 eq. 13).
    BinaryComplete,
    /// Binary freshness, fixed-interval crawls (PNAS'18 eq. 6; Cho & Garcia-Molina; Frontera).
    FixedInterval,
    /// Binary freshness, one fetch per time slot (PNAS'18 Problem 1, eq. 3).
    BinaryDiscrete,
    /// rho ∝ mu: LambdaCrawlApprox (NeurIPS'19 Prop. 9) and the importance baseline.
    ImportanceProportional,
    /// rho ∝ lambda: ChangeRateCrawl (NeurIPS'19 supplement, after Cho & Garcia-Molina).
    ChangeRateProportional,
    /// rho ∝ 1: UniformCrawl (NeurIPS'19 supplement).
    Uniform,
}

impl Response {
    /// The response family of a URL under `objective` given whether its changes are all observed.
    ///
    /// With complete observations a crawl right after each notified change makes the page fresh, so
    /// every binary variant's utility is the linear mu p of NeurIPS'19 eq. 13 (fixed intervals or time
    /// slots change nothing about that); LambdaCrawlApprox keeps LC-ComplObs for such pages, as the
    /// paper's LLCA does. The baselines treat all pages alike, as in the paper's experiments; so does
    /// `binary-blind`, the paper's BLC, which answers every page with the Poisson response.
    pub fn of(objective: Objective, complete_obs: bool) -> Self {
        match (objective, complete_obs) {
            (Objective::BinaryBlind, _) => Response::BinaryPoisson,
            (Objective::Harmonic, false) => Response::HarmonicIncomplete,
            (Objective::Harmonic | Objective::HarmonicApprox, true) => Response::HarmonicComplete,
            (Objective::Binary, false) => Response::BinaryPoisson,
            (Objective::Binary | Objective::BinaryFixed | Objective::BinaryDiscrete, true) => {
                Response::BinaryComplete
            }
            (Objective::BinaryFixed, false) => Response::FixedInterval,
            (Objective::BinaryDiscrete, false) => Response::BinaryDiscrete,
            (Objective::HarmonicApprox, false) | (Objective::Importance, _) => {
                Response::ImportanceProportional
            }
            (Objective::ChangeRate, _) => Response::ChangeRateProportional,
            (Objective::Uniform, _) => Response::Uniform,
        }
    }

    /// The weight w of a proportional family (rho = w / theta), None for the others.
    #[inline]
    fn weight(self, page: Page) -> Option<f64> {
        match self {
            Response::ImportanceProportional => Some(page.importance),
            Response::ChangeRateProportional => Some(page.change_rate),
            Response::Uniform => Some(1.0),
            _ => None,
        }
    }

    /// The largest useful rate per day. With complete observations there is no point in crawling more
    /// often than the page changes (rho = p lambda, p <= 1); a time slot holds one fetch (p <= 1); a
    /// page that never changes is never stale, except for the policies that do not look at changes.
    #[inline]
    pub fn upper(self, page: Page) -> f64 {
        let changes = page.change_rate > 0.0;
        match self {
            Response::HarmonicComplete | Response::BinaryComplete => page.change_rate.max(0.0),
            Response::BinaryDiscrete if changes => 1.0 / page.slot_days,
            Response::ImportanceProportional | Response::Uniform => f64::INFINITY,
            _ if changes => f64::INFINITY,
            _ => 0.0,
        }
    }

    /// Best response r(theta) per day, right-continuous: at a jump it is the value just above theta.
    #[inline]
    pub fn rate(self, page: Page, theta: f64) -> f64 {
        let (mu, lambda) = (page.importance, page.change_rate);
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_rate(mu, lambda, theta),
            Response::HarmonicComplete => harmonic::complete_rate(mu, lambda, theta),
            Response::BinaryPoisson => binary::poisson_rate(mu, lambda, theta),
            Response::BinaryComplete => binary::complete_rate(mu, lambda, theta),
            Response::FixedInterval => fixed_interval::rate(mu, lambda, theta),
            Response::BinaryDiscrete => discrete::rate(mu, lambda, page.slot_days, theta),
            Response::ImportanceProportional
            | Response::ChangeRateProportional
            | Response::Uniform => proportional::rate(self.weight(page).unwrap_or(0.0), theta),
        }
    }

    /// Best response just below theta: differs from [`Response::rate`] only at a jump.
    #[inline]
    pub fn rate_left(self, page: Page, theta: f64) -> f64 {
        match self {
            Response::BinaryComplete => {
                binary::complete_rate_left(page.importance, page.change_rate, theta)
            }
            Response::BinaryDiscrete => {
                discrete::rate_left(page.importance, page.change_rate, page.slot_days, theta)
            }
            Response::FixedInterval => {
                fixed_interval::rate_left(page.importance, page.change_rate, theta)
            }
            _ => self.rate(page, theta),
        }
    }

    /// dr/dtheta of the continuous part at theta (<= 0; zero where the response is clipped or a step).
    #[inline]
    pub fn slope(self, page: Page, theta: f64, rate: f64) -> f64 {
        let (mu, lambda) = (page.importance, page.change_rate);
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_slope(lambda, theta, rate),
            Response::HarmonicComplete => harmonic::complete_slope(mu, lambda, theta),
            Response::BinaryPoisson => binary::poisson_slope(lambda, theta, rate),
            Response::BinaryComplete => 0.0,
            Response::FixedInterval => fixed_interval::slope(mu, lambda, theta, rate),
            Response::BinaryDiscrete => discrete::slope(lambda, page.slot_days, theta, rate),
            Response::ImportanceProportional
            | Response::ChangeRateProportional
            | Response::Uniform => proportional::slope(self.weight(page).unwrap_or(0.0), theta),
        }
    }

    /// The price at which the response jumps, if it has one: a step response (complete observations,
    /// a page changing every slot) or the cut-off of fixed-interval crawls (see [`fixed_interval`]).
    #[inline]
    pub fn jump(self, page: Page) -> Option<f64> {
        match self {
            Response::BinaryComplete if page.change_rate > 0.0 => {
                Some(page.importance / page.change_rate)
            }
            Response::BinaryDiscrete => {
                discrete::jump(page.importance, page.change_rate, page.slot_days)
            }
            Response::FixedInterval => fixed_interval::jump(page.importance, page.change_rate),
            _ => None,
        }
    }

    /// Marginal utility mu u'(rho) at rho: the KKT price a URL with this interior rate answers.
    pub fn marginal(self, page: Page, rho: f64) -> f64 {
        let (mu, lambda) = (page.importance, page.change_rate);
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_marginal(mu, lambda, rho),
            Response::HarmonicComplete => harmonic::complete_marginal(mu, rho),
            Response::BinaryPoisson => binary::poisson_marginal(mu, lambda, rho),
            Response::BinaryComplete => binary::complete_marginal(mu, lambda),
            Response::FixedInterval => fixed_interval::marginal(mu, lambda, rho),
            Response::BinaryDiscrete => discrete::marginal(mu, lambda, page.slot_days, rho),
            Response::ImportanceProportional
            | Response::ChangeRateProportional
            | Response::Uniform => proportional::marginal(self.weight(page).unwrap_or(0.0), rho),
        }
    }

    /// The cost this family's best response minimises, at rate rho: harmonic or binary staleness
    /// (NeurIPS'19 eqs. 2, 12, 13), fixed-interval staleness, discrete-time staleness, or -w ln rho for
    /// the proportional policies (their own objective, not a freshness measure).
    pub fn cost(self, page: Page, rho: f64) -> f64 {
        let (mu, lambda) = (page.importance, page.change_rate);
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_cost(mu, lambda, rho),
            Response::HarmonicComplete => harmonic::complete_cost(mu, lambda, rho),
            Response::BinaryPoisson => binary::poisson_cost(mu, lambda, rho),
            Response::BinaryComplete => binary::complete_cost(mu, lambda, rho),
            Response::FixedInterval => fixed_interval::cost(mu, lambda, rho),
            Response::BinaryDiscrete => discrete::cost(mu, lambda, page.slot_days, rho),
            Response::ImportanceProportional
            | Response::ChangeRateProportional
            | Response::Uniform => proportional::cost(self.weight(page).unwrap_or(0.0), rho),
        }
    }

    /// True when this family assumes every change of the page is observed (the crawl rate is then p
    /// times the change rate). The baselines ignore observability, so this is the family's view, not
    /// the page's: read the page's own flag for policy costs.
    pub fn complete_obs(self) -> bool {
        matches!(self, Response::HarmonicComplete | Response::BinaryComplete)
    }

    /// Every family, for exhaustive tests.
    pub const ALL: [Response; 9] = [
        Response::HarmonicIncomplete,
        Response::HarmonicComplete,
        Response::BinaryPoisson,
        Response::BinaryComplete,
        Response::FixedInterval,
        Response::BinaryDiscrete,
        Response::ImportanceProportional,
        Response::ChangeRateProportional,
        Response::Uniform,
    ];
}

/// Harmonic staleness cost of one URL at rate rho (NeurIPS'19 Props. 1 and 4), +inf if starved.
pub fn harmonic_cost(mu: f64, lambda: f64, rho: f64, complete_obs: bool) -> f64 {
    if complete_obs {
        harmonic::complete_cost(mu, lambda, rho)
    } else {
        harmonic::incomplete_cost(mu, lambda, rho)
    }
}

/// Binary staleness cost of one URL at rate rho (NeurIPS'19 eqs. 12 and 13).
pub fn binary_cost(mu: f64, lambda: f64, rho: f64, complete_obs: bool) -> f64 {
    if complete_obs {
        binary::complete_cost(mu, lambda, rho)
    } else {
        binary::poisson_cost(mu, lambda, rho)
    }
}
