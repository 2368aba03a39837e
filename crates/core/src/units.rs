//! Newtypes that say what a number is: rates per day and durations in seconds.
//!
//! Hot loops work on plain `f64` columns whose names carry the unit (`change_rate`, `crawl_rate`: per
//! day); these types guard the boundaries where a unit mix-up would be silent: parameters, caps, budgets.

use serde::{Deserialize, Serialize};

/// Seconds in one day: rates are per day, politeness delays and horizons are in seconds.
pub const SECONDS_PER_DAY: f64 = 86_400.0;

/// A number of events (fetches, changes) per day.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct PerDay(pub f64);

/// A duration in seconds.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Seconds(pub f64);

impl PerDay {
    /// The time between events at this rate: a day over the rate; infinite at a rate of 0 (never).
    pub fn interval(self) -> Seconds {
        Seconds(if self.0 > 0.0 {
            SECONDS_PER_DAY / self.0
        } else {
            f64::INFINITY
        })
    }
}

impl Seconds {
    /// This duration in days.
    pub fn days(self) -> f64 {
        self.0 / SECONDS_PER_DAY
    }
}

/// The politeness cap of a host as a rate: one fetch per `min_delay` at most, i.e. T/P fetches per
/// horizon T, which is `SECONDS_PER_DAY / min_delay` per day whatever the horizon (PUC-Rio §2.1).
pub fn politeness_cap(min_delay: Seconds) -> PerDay {
    PerDay(SECONDS_PER_DAY / min_delay.0)
}

/// Fetches per horizon for a rate per day.
pub fn per_horizon(rate: PerDay, horizon: Seconds) -> f64 {
    rate.0 * horizon.days()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_a_day_over_the_rate_and_never_at_none() {
        assert_eq!(PerDay(2.0).interval(), Seconds(43_200.0));
        assert_eq!(
            PerDay(86_400.0 / 7.0).interval().0,
            86_400.0 / (86_400.0 / 7.0)
        );
        assert_eq!(PerDay(1e-300).interval().0, 86_400.0 / 1e-300);
        for none in [0.0, -0.0] {
            assert_eq!(PerDay(none).interval(), Seconds(f64::INFINITY), "{none:?}");
        }
    }
}
