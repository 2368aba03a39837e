//! A change-rate estimator with O(1) state, kept for comparison with the MLE over kept evidence:
//! stochastic approximation (Robbins & Monro) on the estimating equation of a crawl, E[z] =
//! 1 - e^(-lambda a) for an interval a, with natural-gradient (Fisher scoring) steps on
//! x = ln lambda and step sizes 1/k, the family of online schemes Avrachenkov, Patil & Thoppe
//! (2020) analyse. This is our own derivation, not a transcription of their schemes: per interval,
//! x += (z - (1 - e^(-lambda a))) / (k lambda a e^(-lambda a)), the step clipped to +-1 so that a
//! surprising early observation cannot throw the estimate out of range.

/// The estimator's whole state: the current rate's logarithm and the observations folded in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Online {
    log_rate: f64,
    steps: u64,
}

/// Largest change of ln lambda per observation.
const MAX_STEP: f64 = 1.0;

impl Online {
    /// Starts from a prior rate (changes per day, > 0).
    pub fn new(prior: f64) -> Self {
        Online {
            log_rate: prior.ln(),
            steps: 0,
        }
    }

    /// Folds in one interval of `days` that did or did not see a change.
    pub fn observe(&mut self, days: f64, changed: bool) {
        if days <= 0.0 {
            return;
        }
        self.steps += 1;
        let x = self.rate() * days;
        let unchanged = (-x).exp();
        let z = if changed { 1.0 } else { 0.0 };
        let step = (z - (1.0 - unchanged)) / (x * unchanged) / self.steps as f64;
        self.log_rate += if step.is_finite() {
            step.clamp(-MAX_STEP, MAX_STEP)
        } else {
            MAX_STEP
        };
    }

    /// The current estimate, changes per day.
    pub fn rate(&self) -> f64 {
        self.log_rate.exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn converges_to_the_rate_on_regular_crawls() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for (lambda, a) in [(0.3f64, 1.0f64), (2.0, 0.25), (0.05, 7.0)] {
            let mut e = Online::new(1.0);
            for _ in 0..20_000 {
                let changed = rng.random::<f64>() < 1.0 - (-lambda * a).exp();
                e.observe(a, changed);
            }
            assert!(
                (e.rate() / lambda - 1.0).abs() < 0.1,
                "{lambda}: {}",
                e.rate()
            );
        }
    }
}
