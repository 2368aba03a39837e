//! How many crawlers should feed one indexer, after Liu & Nain, "Optimization issues in web search
//! engines" §1.2.
//!
//! Crawlers deliver pages to one indexer with a finite buffer; too few starve it, too many
//! overflow it. [`queue`] solves the static problem (all crawlers always on: M/M/1/K cost eq. 1.4,
//! optimum Prop. 1, large-buffer approximation eq. 1.12); [`dynamic`] the dynamic one (switch
//! crawlers on and off with the buffer level: an MDP solved by relative value iteration, Prop. 6).
//! [`recommended_crawlers`] is the one call `revisit run`'s summary makes.

pub mod dynamic;
pub mod error;
#[cfg(test)]
mod paper;
pub mod queue;

pub use dynamic::{solve, solve_unrestricted, DynamicPlan, RviSettings, SwitchingCurve};
pub use error::{ModelError, Quantity};
pub use queue::{queue_length_distribution, QueueModel, StaticPerformance};

/// The static optimum (Prop. 1): (crawlers, cost in lost pages per unit time).
pub fn recommended_crawlers(
    arrival_rate_per_crawler: f64,
    index_rate: f64,
    buffer: usize,
    gamma: f64,
) -> Result<(usize, f64), ModelError> {
    let best =
        QueueModel::new(arrival_rate_per_crawler, index_rate, buffer, gamma)?.optimal_crawlers();
    Ok((best.crawlers, best.cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recommended_crawlers_is_the_static_optimum() {
        // Table 1.2, first row: N_s = 73, C_s = 0.17541.
        let (n, cost) = recommended_crawlers(0.01, 1.0, 5, 0.4).unwrap();
        assert_eq!(n, 73);
        assert!((cost - 0.17541).abs() < 0.5e-5);
        assert_eq!(
            recommended_crawlers(0.01, 1.0, 0, 0.4).unwrap_err(),
            ModelError::BelowOne(Quantity::Buffer)
        );
    }
}
