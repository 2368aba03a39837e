//! Capacity planning (issue 5), after Liu & Nain, "Optimization issues in web search engines".
//!
//! Independent of the timely job. Two questions:
//!
//! * How many crawlers should feed the indexer (§1.2)? Crawlers deliver pages to one
//!   indexer with a finite buffer; too few starve it, too many overflow it. [`queue`] solves
//!   the static problem (all crawlers always on: M/M/1/K cost eq. 1.4, optimum Prop. 1,
//!   large-buffer approximation eq. 1.12); [`dynamic`] the dynamic one (switch crawlers on
//!   and off with the buffer level: an MDP solved by relative value iteration, Prop. 6).
//!   [`cli`] is the `revisit plan-crawlers` subcommand and the one-call
//!   [`recommended_crawlers`] for `revisit run`'s summary.
//! * How stale do pages get when fetch times are random (§1.3)? [`obsolescence`] gives
//!   h_i = E[exp(−μ_i X)], the per-page bound (Prop. 9), randomized accessing (Lemma 4),
//!   the optimal frequencies (eq. 1.30) and the cost bound (eq. 1.26); [`set_figures`] the
//!   same over a page set from per-page sums (`revisit evaluate --fetch-time`).
//!
//! The module only uses `super::`/`self::` paths, so it can be moved as a whole.

pub mod cli;
pub mod dynamic;
pub mod obsolescence;
#[cfg(test)]
mod paper;
pub mod queue;
mod validate;

pub use cli::{recommended_crawlers, run, PlanCrawlersArgs};
pub use dynamic::{solve, solve_unrestricted, DynamicPlan, RviSettings, SwitchingCurve};
pub use obsolescence::{
    cost_lower_bound, obsolescence_lower_bound, optimal_frequencies, randomized_obsolescence,
    randomized_optimal_frequencies, set_figures, FetchTime, Obsolescence, PageTerms, SetFigures,
};
pub use queue::{queue_length_distribution, QueueModel, StaticPerformance};
