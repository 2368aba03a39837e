//! What a URL's estimate leans on while its own observations are few. The paper smooths eq. 10 with
//! one imaginary changed and one imaginary unchanged interval of half a day (a prior of 2 ln 2
//! changes a day) and eq. 11 with half an imaginary change over half a day (one a day). A prior
//! rate p enters the same way, through imaginary observations whose own estimate is p: the changed
//! half day beside 0.5 / (e^(p/2) - 1) unchanged days, half a change over 0.5 / p days. A prior
//! therefore weighs as one seen change and about 1/p days watched without one: a URL's own history
//! takes over once it has seen a few changes or watched for longer than that.

use super::evidence::Seen;
use super::incomplete::mle_smoothed;
use super::SMOOTHING;

/// The prior of an estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Prior {
    /// The paper's fixed smoothing (NeurIPS'19 Alg. 4, lines 11 and 13).
    Paper,
    /// A rate in changes per day (> 0), e.g. a host's pooled rate ([`super::pooled`]).
    Rate(f64),
}

impl Prior {
    /// The imaginary unchanged days beside the imaginary changed half day.
    fn unchanged_days(self) -> f64 {
        match self {
            Prior::Paper => SMOOTHING,
            Prior::Rate(p) => SMOOTHING / (SMOOTHING * p).exp_m1(),
        }
    }

    /// The imaginary days over which half an imaginary change is seen.
    fn complete_days(self) -> f64 {
        match self {
            Prior::Paper => SMOOTHING,
            Prior::Rate(p) => SMOOTHING / p,
        }
    }

    /// Eq. 10 on what the crawls saw, smoothed: the root of
    /// sum_changed a / (e^(lambda a) - 1) = sum_unchanged a, with the imaginary intervals.
    pub fn incomplete_rate(self, seen: &Seen) -> f64 {
        mle_smoothed(
            &seen.changed,
            SMOOTHING,
            seen.unchanged_days + self.unchanged_days(),
        )
    }

    /// Eq. 11, smoothed: (notices + 1/2) / (days watched + the imaginary days).
    pub fn complete_rate(self, notices: u64, days: f64) -> f64 {
        (notices as f64 + SMOOTHING) / (days.max(0.0) + self.complete_days())
    }

    /// The estimate of a URL with no observation.
    pub fn rate(self, complete: bool) -> f64 {
        if complete {
            self.complete_rate(0, 0.0)
        } else {
            self.incomplete_rate(&Seen::default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_observations_the_estimate_is_the_prior() {
        // the paper's: 2 ln 2 a day for crawls, 1 a day for notices
        assert!((Prior::Paper.rate(false) - 2.0 * 2f64.ln()).abs() < 1e-15);
        assert_eq!(Prior::Paper.rate(true), 1.0);
        for p in [1e-3, 0.05, 0.7, 3.0, 40.0] {
            let (a, b) = (Prior::Rate(p).rate(false), Prior::Rate(p).rate(true));
            assert!(((a - p) / p).abs() < 1e-12, "{p}: {a}");
            assert!(((b - p) / p).abs() < 1e-15, "{p}: {b}");
        }
    }

    #[test]
    fn a_long_history_outweighs_the_prior() {
        // 200 daily crawls, a change seen on 60: the MLE is ln(1 + 60/140) a day
        let seen = Seen {
            changed: vec![1.0; 60],
            unchanged: 140,
            unchanged_days: 140.0,
            notices: 60,
        };
        let want = (60.0f64 / 140.0).ln_1p();
        let got = Prior::Paper.incomplete_rate(&seen);
        assert!(((got - want) / want).abs() < 0.02, "{got} vs {want}");
        // priors 36 times too low or 14 times too high: the history moves the estimate most of
        // the way (in log) from the prior to its own rate
        for p in [0.01, 5.0] {
            let got = Prior::Rate(p).incomplete_rate(&seen);
            let (from, left) = ((p / want).ln().abs(), (got / want).ln().abs());
            assert!(left < 0.15 * from, "{p}: {got} vs {want}");
        }
    }
}
