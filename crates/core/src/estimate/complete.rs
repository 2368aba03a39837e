//! Complete change observations: every change is notified, so the change count over the observed
//! time is Poisson(lambda t) and its MLE is the observation rate (NeurIPS'19 eq. 11).

use super::SMOOTHING;

/// lambda = (changes + 1/2) / (observed days + 1/2): eq. 11 with the paper's half an imaginary
/// change over half an imaginary day, finite and positive even with no change or no time.
pub fn rate(changes: u64, observed_days: f64) -> f64 {
    (changes as f64 + SMOOTHING) / (observed_days.max(0.0) + SMOOTHING)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_the_smoothed_observation_rate() {
        assert_eq!(rate(0, 0.0), 1.0);
        assert_eq!(rate(9, 9.0), 1.0);
        assert_eq!(rate(3, 99.5), 0.035);
        // without history the estimate is the prior's 1 change a day; it tends to changes / days
        assert!((rate(3_000, 10_000.0) - 0.3).abs() < 1e-4);
    }
}
