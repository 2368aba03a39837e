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
