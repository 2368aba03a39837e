//! Objectives: each URL's best response to a price, its slope, its marginal utility, and policy costs.
//!
//! Every objective of revisit is separable and concave in a URL's crawl rate rho (DESIGN §2):
//! maximise sum_i mu_i u_i(rho_i) subject to the bandwidth and per-host caps. A URL answers a price
//! theta (the Lagrange multiplier) with its best response r_i(theta) = argmax mu u(rho) - theta rho,
//! clipped to its box; responses are non-increasing in theta, which is what makes one global multiplier
//! (and one per capped host) solve everything. Nothing here knows about hosts, workers or files.

pub mod binary;
pub mod harmonic;

use serde::{Deserialize, Serialize};

/// The freshness objective of a run (what "fresh" means to the crawl team).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Harmonic staleness (NeurIPS'19 LambdaCrawl): penalises every missed change, never starves a page.
    Harmonic,
    /// Binary freshness with Poisson crawls (PNAS'18 Problem 2, BLC): fraction of time pages are fresh.
    Binary,
}

impl Objective {
    /// The name written into summaries and Parquet metadata.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Harmonic => "harmonic",
            Objective::Binary => "binary",
        }
    }
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
}

impl Response {
    /// The response family of a URL under `objective` given whether its changes are all observed.
    pub fn of(objective: Objective, complete_obs: bool) -> Self {
        match (objective, complete_obs) {
            (Objective::Harmonic, false) => Response::HarmonicIncomplete,
            (Objective::Harmonic, true) => Response::HarmonicComplete,
            (Objective::Binary, false) => Response::BinaryPoisson,
            (Objective::Binary, true) => Response::BinaryComplete,
        }
    }

    /// The largest useful rate: with complete observations there is no point in crawling more often
    /// than the page changes (rho = p lambda, p <= 1).
    #[inline]
    pub fn upper(self, change_rate: f64) -> f64 {
        match self {
            Response::HarmonicComplete | Response::BinaryComplete => change_rate,
            Response::HarmonicIncomplete | Response::BinaryPoisson => f64::INFINITY,
        }
    }

    /// Best response r(theta) per day, right-continuous: at a jump it is the value just above theta.
    #[inline]
    pub fn rate(self, mu: f64, lambda: f64, theta: f64) -> f64 {
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_rate(mu, lambda, theta),
            Response::HarmonicComplete => harmonic::complete_rate(mu, lambda, theta),
            Response::BinaryPoisson => binary::poisson_rate(mu, lambda, theta),
            Response::BinaryComplete => binary::complete_rate(mu, lambda, theta),
        }
    }

    /// Best response just below theta: differs from [`Response::rate`] only at a jump.
    #[inline]
    pub fn rate_left(self, mu: f64, lambda: f64, theta: f64) -> f64 {
        match self {
            Response::BinaryComplete => binary::complete_rate_left(mu, lambda, theta),
            _ => self.rate(mu, lambda, theta),
        }
    }

    /// dr/dtheta of the continuous part at theta (<= 0; zero where the response is clipped or a step).
    #[inline]
    pub fn slope(self, mu: f64, lambda: f64, theta: f64, rate: f64) -> f64 {
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_slope(lambda, theta, rate),
            Response::HarmonicComplete => harmonic::complete_slope(mu, lambda, theta),
            Response::BinaryPoisson => binary::poisson_slope(lambda, theta, rate),
            Response::BinaryComplete => 0.0,
        }
    }

    /// The price at which the response jumps (a step response), if it has one.
    #[inline]
    pub fn jump(self, mu: f64, lambda: f64) -> Option<f64> {
        match self {
            Response::BinaryComplete if lambda > 0.0 => Some(mu / lambda),
            _ => None,
        }
    }

    /// Marginal utility mu u'(rho) at rho: the KKT price a URL with this interior rate answers.
    pub fn marginal(self, mu: f64, lambda: f64, rho: f64) -> f64 {
        match self {
            Response::HarmonicIncomplete => harmonic::incomplete_marginal(mu, lambda, rho),
            Response::HarmonicComplete => harmonic::complete_marginal(mu, rho),
            Response::BinaryPoisson => binary::poisson_marginal(mu, lambda, rho),
            Response::BinaryComplete => binary::complete_marginal(mu, lambda),
        }
    }

    /// True when changes of this URL are all observed (the crawl rate is then p times the change rate).
    pub fn complete_obs(self) -> bool {
        matches!(self, Response::HarmonicComplete | Response::BinaryComplete)
    }
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
