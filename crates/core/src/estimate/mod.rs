//! Change rates from observation histories (NeurIPS'19 §5, eqs. 10 and 11, with the paper's
//! smoothing or a pooled prior), one URL at a time, from compact evidence that a night extends
//! with its new observations. Nothing here knows about files or workers.
//!
//! Time is in days and rates in changes per day, as everywhere in revisit: the smoothing terms are
//! the paper's 0.5 (its experiments crawled daily, so half a day).

pub mod evidence;
pub mod incomplete;
pub mod learn;
pub mod online;
pub mod pooled;
pub mod prior;
pub mod synthetic;

pub use evidence::{Evidence, Seen};
pub use learn::{learn, PriorKind};
pub use prior::Prior;

/// Length (days) of each imaginary interval, and count of imaginary changes, that smooth the
/// estimates away from 0 and infinity (NeurIPS'19 §5, "Singularities of lambda estimators").
pub const SMOOTHING: f64 = 0.5;

/// One observation of a URL: when (days since the epoch), whether the page had changed since the
/// previous observation (with complete observations: a change notice), and whether it comes from
/// a feed that reports every change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    pub at_days: f64,
    pub changed: bool,
    pub complete: bool,
}

/// The time the estimates look at, days since the epoch: the observations of the days from
/// `from`'s (evidence is kept by day) to `to`; complete observations are counted over `to - from`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub from: f64,
    pub to: f64,
}

impl Window {
    /// The window of the last `days` (None: all the history) up to `to`, starting no earlier than
    /// the first observation.
    pub fn ending(to: f64, days: Option<f64>, first_observation: f64) -> Window {
        Window {
            from: days.map_or(first_observation, |d| (to - d).max(first_observation)),
            to,
        }
    }

    /// The first day whose observations count.
    pub fn first_day(&self) -> i64 {
        if self.from.is_finite() {
            evidence::day_of(self.from)
        } else {
            i64::MIN
        }
    }

    /// Days watched: the length of the window.
    pub fn days(&self) -> f64 {
        self.to - self.from
    }
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

/// A URL's evidence from its observations in any order (ties keep their order): those at the
/// same instant as the one before are refused, and counted.
pub fn evidence_of(observations: &mut [Observation]) -> (Evidence, u64) {
    observations.sort_by(|a, b| a.at_days.total_cmp(&b.at_days));
    let mut evidence = Evidence::default();
    let refused = observations
        .iter()
        .filter(|&&o| evidence.observe(o).is_err())
        .count() as u64;
    (evidence, refused)
}

/// Estimates one URL's change rate from its evidence within `window`, leaning on `prior`.
///
/// Complete observations: the notices in the window over the window's length (eq. 11). Incomplete:
/// the intervals between consecutive crawls that end in the window, the whole interval even when it
/// starts before (as the paper's reference code does: cutting it would bias the estimate), eq. 10.
/// A URL's first crawl only starts its first interval.
pub fn estimate(evidence: &Evidence, window: Window, prior: Prior) -> Estimate {
    estimate_with(evidence, window, prior, &mut Seen::default())
}

/// [`estimate`] with `seen` as room for the URL's intervals (reused from URL to URL).
pub fn estimate_with(
    evidence: &Evidence,
    window: Window,
    prior: Prior,
    seen: &mut Seen,
) -> Estimate {
    evidence.seen_into(window, seen);
    let seen = &*seen;
    if evidence.complete {
        Estimate {
            change_rate: prior.complete_rate(seen.notices, window.days()),
            observations: seen.notices,
            changes: seen.notices,
        }
    } else {
        Estimate {
            change_rate: prior.incomplete_rate(seen),
            observations: seen.intervals(),
            changes: seen.changed.len() as u64,
        }
    }
}
