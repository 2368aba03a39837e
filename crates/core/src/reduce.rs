//! The one thing the solver asks of its environment: combine a partial result with every worker's.

use serde::{de::DeserializeOwned, Serialize};

/// A partial result that can be combined with another worker's, exactly and in any order.
pub trait Combine: Sized {
    /// Folds `other` into `self`; must be associative and commutative bit for bit.
    fn combine(&mut self, other: Self);
}

/// An all-reduce: every worker contributes a partial and gets back the same combined total.
///
/// In unit tests and single-threaded use this is [`Alone`]; in the job it is a timely round.
pub trait AllReduce {
    /// Combines `partial` with every other worker's and returns the total (identical on every worker).
    fn all_reduce<M: Combine + Serialize + DeserializeOwned + Clone + 'static>(
        &mut self,
        partial: M,
    ) -> M;
}

/// The all-reduce of a single worker: the partial is already the total.
pub struct Alone;

impl AllReduce for Alone {
    fn all_reduce<M: Combine + Serialize + DeserializeOwned + Clone + 'static>(
        &mut self,
        partial: M,
    ) -> M {
        partial
    }
}

impl Combine for crate::exact_sum::ExactSum {
    fn combine(&mut self, other: Self) {
        self.merge(&other);
    }
}
