//! Change rates from observation histories (NeurIPS'19 §5, eqs. 10 and 11, with the paper's
//! smoothing), one URL at a time. Nothing here knows about files or workers.
//!
//! Time is in days and rates in changes per day, as everywhere in revisit: the smoothing terms are
//! the paper's 0.5 (its experiments crawled daily, so half a day).

pub mod complete;
pub mod incomplete;
pub mod synthetic;

/// Length (days) of each imaginary interval, and count of imaginary changes, that smooth the
/// estimates away from 0 and infinity (NeurIPS'19 §5, "Singularities of lambda estimators").
pub const SMOOTHING: f64 = 0.5;

use incomplete::Intervals;

/// One observation of a URL: when (days since the history's epoch), and whether the page had
/// changed since the previous observation (with complete observations: a change notice).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    pub at_days: f64,
    pub changed: bool,
}

/// The time the estimates look at, days since the history's epoch: observations in [from, to].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub from: f64,
    pub to: f64,
}

/// A URL's estimated change rate and what it rests on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Changes per day.
    pub change_rate: f64,
    /// Observations used: intervals between crawls, or change notices.
    pub observations: u64,
    /// Of those, the ones that saw a change.
    pub changes: u64,
}

/// Estimates one URL's change rate from its `observations` (any order) within `window`.
///
/// Complete observations: the notices in the window over the window's length (eq. 11). Incomplete:
/// the intervals between consecutive crawls that end in the window, the whole interval even when it
/// starts before (as the paper's reference code does: cutting it would bias the estimate), eq. 10.
/// A URL's first crawl only starts its first interval.
pub fn estimate(observations: &mut [Observation], complete: bool, window: Window) -> Estimate {
    let inside = |o: &Observation| (window.from..=window.to).contains(&o.at_days);
    if complete {
        let changes = observations
            .iter()
            .filter(|o| o.changed && inside(o))
            .count() as u64;
        return Estimate {
            change_rate: complete::rate(changes, window.to - window.from),
            observations: changes,
            changes,
        };
    }
    observations.sort_by(|a, b| a.at_days.total_cmp(&b.at_days));
    let mut seen = Intervals::default();
    let mut used = 0;
    for pair in observations.windows(2) {
        let (previous, o) = (pair[0], pair[1]);
        let length = o.at_days - previous.at_days;
        // two crawls at the same instant tell nothing about time
        if !inside(&o) || length <= 0.0 {
            continue;
        }
        used += 1;
        if o.changed {
            seen.changed.push(length);
        } else {
            seen.unchanged_days += length;
        }
    }
    Estimate {
        change_rate: seen.rate(),
        observations: used,
        changes: seen.changed.len() as u64,
    }
}
