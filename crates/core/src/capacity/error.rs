//! What the capacity models refuse, said in the chapter's quantities: a command line maps each
//! [`Quantity`] to the option that sets it (`plan-crawlers` and `run` set them differently).

use std::fmt;

/// An input quantity of the indexer models (Liu & Nain §1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// λ: pages per unit time one active crawler hands to the indexer.
    ArrivalRate,
    /// μ: pages per unit time the busy indexer completes.
    IndexRate,
    /// K: pages the indexer holds, the one being indexed included.
    Buffer,
    /// γ: the cost of an idle indexer, in lost pages per unit time.
    IdleCost,
    /// N: crawlers available to switch on (the dynamic model).
    Crawlers,
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Quantity::ArrivalRate => "the arrival rate λ (pages per unit time from one crawler)",
            Quantity::IndexRate => "the index rate μ (pages per unit time the indexer completes)",
            Quantity::Buffer => "the buffer K (pages, the one being indexed included)",
            Quantity::IdleCost => "the idle cost γ (lost pages per unit time)",
            Quantity::Crawlers => "the crawler count N",
        })
    }
}

/// Why a capacity model cannot be built or solved.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("{quantity} must be a finite number > 0, got {value}")]
    NotPositive { quantity: Quantity, value: f64 },
    #[error("{0} must be at least 1")]
    BelowOne(Quantity),
    #[error(
        "the arrival rate λ = {arrival_rate} is too small next to the index rate μ = {index_rate}: \
         the optimum could need up to {worst:.3e} crawlers (limit {limit:e}); check that both rates \
         use the same time unit"
    )]
    RatesOutOfScale {
        arrival_rate: f64,
        index_rate: f64,
        worst: f64,
        limit: f64,
    },
    #[error(
        "the dynamic model has {states} states (3·(K+1)·(N+1)), above the limit of {limit}: lower \
         the buffer K or the crawler count N"
    )]
    TooManyStates { states: usize, limit: usize },
    #[error("relative value iteration needs {0}")]
    BadSettings(String),
    #[error(
        "relative value iteration did not converge in {iterations} iterations (K = {buffer}, N = \
         {crawlers}, {states} states); large buffers make the queue mix slowly: try a smaller \
         buffer K or crawler count N"
    )]
    NotConverged {
        iterations: usize,
        buffer: usize,
        crawlers: usize,
        states: usize,
    },
    #[error("the optimal policy's stationary distribution did not converge in {0} iterations")]
    StationaryNotConverged(usize),
}

impl ModelError {
    /// The input quantities this error is about (to name the options that set them).
    pub fn quantities(&self) -> Vec<Quantity> {
        match self {
            ModelError::NotPositive { quantity, .. } => vec![*quantity],
            ModelError::BelowOne(q) => vec![*q],
            ModelError::RatesOutOfScale { .. } => vec![Quantity::ArrivalRate, Quantity::IndexRate],
            ModelError::TooManyStates { .. } | ModelError::NotConverged { .. } => {
                vec![Quantity::Buffer, Quantity::Crawlers]
            }
            ModelError::BadSettings(_) | ModelError::StationaryNotConverged(_) => vec![],
        }
    }
}

/// Fails unless `value` is finite and > 0 (NaN included: it would slip through `value <= 0.0`).
pub(crate) fn check_positive(quantity: Quantity, value: f64) -> Result<(), ModelError> {
    if !value.is_finite() || value <= 0.0 {
        return Err(ModelError::NotPositive { quantity, value });
    }
    Ok(())
}
