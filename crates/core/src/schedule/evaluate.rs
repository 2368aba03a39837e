//! Exact value of a cyclic timetable: expected staleness, harmonic penalty and missed changes of a
//! page visited at given times every horizon, its changes Poisson(lambda).
//!
//! Each visit starts a fresh interval and changes are memoryless, so the expectation is the sum of
//! the closed forms of [`super::interval`] over the intervals between visits, the wrap-around one
//! (last visit to the first of the next horizon) included (Liu & Nain Lemma 3; PUC-Rio A_i(x) when
//! the intervals are equal).

use serde::{Deserialize, Serialize};

use super::interval::{harmonic_share, missed_changes, stale_share};
use super::timetable::cyclic_gaps;
use crate::exact_sum::ExactSum;
use crate::reduce::Combine;
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

/// Time-average staleness over [from, to) (seconds on any one clock) of a page changing `change_rate`
/// times a day and fetched at `fetches` (sorted; those outside the window are ignored), its last
/// fetch before the window at `before` (None: no copy yet, stale until the first fetch): over each
/// stretch since a fetch at f, P(stale at t) = 1 - e^(-lambda (t - f)) (Liu & Nain Lemma 3 over the
/// realized gaps rather than a cycle's).
pub fn window_staleness(
    change_rate: f64,
    before: Option<f64>,
    fetches: &[f64],
    from: f64,
    to: f64,
) -> f64 {
    let lambda_per_s = change_rate.max(0.0) / crate::units::SECONDS_PER_DAY;
    if to <= from || lambda_per_s == 0.0 {
        return 0.0;
    }
    // stale time in [a, b) since a fetch at f <= a: stale time in [f, b) less that in [f, a)
    let stale_since = |f: f64, a: f64, b: f64| {
        let upto = |t: f64| (t - f) * stale_share(lambda_per_s * (t - f));
        upto(b) - upto(a)
    };
    let mut last = before;
    let mut t = from;
    let mut stale = 0.0;
    for &f in fetches.iter().filter(|&&f| f >= from && f < to) {
        stale += match last {
            Some(l) => stale_since(l, t, f),
            None => f - t,
        };
        last = Some(f);
        t = f;
    }
    stale += match last {
        Some(l) => stale_since(l, t, to),
        None => to - t,
    };
    stale / (to - from)
}

/// The value of many pages' visit times, summed exactly (so workers' partials combine to the same
/// figures whatever the sharding): what a timetable is worth, page by page, by [`evaluate_page`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TimetableValue {
    /// sum mu S_i: importance-weighted time-average staleness (the scale of J_b).
    pub stale: ExactSum,
    /// sum mu E[H] over the pages whose harmonic penalty is finite (the scale of J_h).
    pub harmonic: ExactSum,
    /// sum mu.
    pub weight: ExactSum,
    /// Pages with at least one visit, and without.
    pub visited: u64,
    pub unvisited: u64,
    /// Pages that change and have no visit: stale from their first change on, and an infinite
    /// harmonic penalty.
    pub starved: u64,
}

impl TimetableValue {
    /// Adds page (`importance`, `change_rate` per day) visited at `at_s` (sorted, in [0, T)) every
    /// `horizon`; returns its value.
    pub fn add_page(
        &mut self,
        importance: f64,
        change_rate: f64,
        at_s: &[f64],
        horizon: Seconds,
    ) -> PageValue {
        let v = evaluate_page(at_s, change_rate, horizon);
        self.weight.add(importance);
        self.stale.add(importance * v.stale);
        if v.harmonic.is_finite() {
            self.harmonic.add(importance * v.harmonic);
        }
        if at_s.is_empty() {
            self.unvisited += 1;
            self.starved += u64::from(change_rate > 0.0);
        } else {
            self.visited += 1;
        }
        v
    }

    /// Importance-weighted mean staleness sum mu S / sum mu.
    pub fn staleness(&self) -> f64 {
        self.stale.value() / self.weight.value()
    }

    /// The harmonic penalty sum mu E[H], None (infinite) when a changing page has no visit.
    pub fn cost_harmonic(&self) -> Option<f64> {
        (self.starved == 0).then(|| self.harmonic.value())
    }
}

impl Combine for TimetableValue {
    fn combine(&mut self, o: Self) {
        self.stale.merge(&o.stale);
        self.harmonic.merge(&o.harmonic);
        self.weight.merge(&o.weight);
        self.visited += o.visited;
        self.unvisited += o.unvisited;
        self.starved += o.starved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_of_realized_fetches_is_valued_as_its_gaps() {
        let day = 86_400.0;
        // fetched every 6 hours for ever: each window is the cycle's value
        let cyclic = evaluate_page(&[0.0, 21_600.0, 43_200.0, 64_800.0], 2.0, Seconds(day)).stale;
        let window = window_staleness(
            2.0,
            Some(-21_600.0),
            &[0.0, 21_600.0, 43_200.0, 64_800.0],
            0.0,
            day,
        );
        assert!((window - cyclic).abs() < 1e-14, "{window} vs {cyclic}");
        // no copy until the first fetch at noon: stale half the day, then as fetched at noon
        let half = window_staleness(1.0, None, &[43_200.0], 0.0, day);
        let after = window_staleness(1.0, Some(0.0), &[], 0.0, 43_200.0);
        assert!((half - (0.5 + 0.5 * after)).abs() < 1e-14);
        // a page that never changes is never stale
        assert_eq!(window_staleness(0.0, None, &[], 0.0, day), 0.0);
    }

    #[test]
    fn a_timetable_sums_its_pages_and_flags_the_starved() {
        let day = Seconds(86_400.0);
        let mut t = TimetableValue::default();
        let a = t.add_page(2.0, 1.0, &[0.0, 43_200.0], day);
        let b = t.add_page(1.0, 0.0, &[], day);
        assert_eq!((t.visited, t.unvisited, t.starved), (1, 1, 0));
        assert_eq!(b.stale, 0.0);
        assert!((t.staleness() - 2.0 * a.stale / 3.0).abs() < 1e-15);
        assert_eq!(t.cost_harmonic(), Some(2.0 * a.harmonic));
        let mut other = TimetableValue::default();
        let c = other.add_page(1.0, 3.0, &[], day);
        assert_eq!((c.stale, c.harmonic), (1.0, f64::INFINITY));
        t.combine(other);
        assert_eq!((t.starved, t.cost_harmonic()), (1, None));
        assert!((t.staleness() - (2.0 * a.stale + 1.0) / 4.0).abs() < 1e-15);
    }
}
