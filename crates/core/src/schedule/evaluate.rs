//! Exact value of a cyclic timetable: expected staleness, harmonic penalty and missed changes of a
//! page visited at given times every horizon, its changes Poisson(lambda).
//!
//! Each visit starts a fresh interval and changes are memoryless, so the expectation is the sum of
//! the closed forms of [`super::interval`] over the intervals between visits, the wrap-around one
//! (last visit to the first of the next horizon) included (Liu & Nain Lemma 3; PUC-Rio A_i(x) when
//! the intervals are equal).

use super::interval::{harmonic_share, missed_changes, stale_share};
use super::timetable::cyclic_gaps;
use crate::units::Seconds;

/// The expected value of one page's cyclic timetable.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageValue {
    /// Time-average probability the copy is stale (binary staleness, PUC-Rio a_i / T).
    pub stale: f64,
    /// Time-average harmonic penalty E[H(N(t))] (NeurIPS'19 eq. 1 with C = H); +inf if never visited.
    pub harmonic: f64,
    /// Expected changes per horizon that no visit observes (all of them if never visited).
    pub missed_changes: f64,
}

/// Exact expected value of visiting a page at `at_s` (sorted, in [0, T)) every horizon, its changes
/// Poisson with `change_rate` per day.
pub fn evaluate_page(at_s: &[f64], change_rate: f64, horizon: Seconds) -> PageValue {
    let lambda_per_s = change_rate.max(0.0) / crate::units::SECONDS_PER_DAY;
    if lambda_per_s == 0.0 {
        return PageValue {
            stale: 0.0,
            harmonic: 0.0,
            missed_changes: 0.0,
        };
    }
    if at_s.is_empty() {
        return PageValue {
            stale: 1.0,
            harmonic: f64::INFINITY,
            missed_changes: lambda_per_s * horizon.0,
        };
    }
    let (mut stale, mut harmonic, mut missed) = (0.0, 0.0, 0.0);
    for tau in cyclic_gaps(at_s, horizon) {
        let c = lambda_per_s * tau;
        stale += tau * stale_share(c);
        harmonic += tau * harmonic_share(c);
        missed += missed_changes(c);
    }
    PageValue {
        stale: stale / horizon.0,
        harmonic: harmonic / horizon.0,
        missed_changes: missed,
    }
}
