//! The rolling schedule: every URL is due every tau = 1 / rho after its last fetch, and a night's
//! fetches are the due times in [start, start + T), for every URL, however long its interval.
//!
//! Evenly spaced fetches are optimal for a given rate (fixed-interval freshness beats Poisson,
//! PNAS'18; PUC-Rio), so a URL fetched at t is next due at t + tau, counted from the planned time
//! of the fetch ([`anchor`]): a crawler that serves each fetch a little after its time (politeness
//! and its own pace never let it serve one early) would otherwise push every URL's due times later
//! night after night, fetch it less often than its rate and leave bandwidth unused; a fetch that
//! came late still shortens nothing but the one gap after it. A URL whose due time has passed
//! (its rate moved, a fetch failed) is due tonight, spread over the night by its phase rather than
//! all at the start; a URL never fetched is due at start + phase x tau. Phases come from the
//! golden-ratio (Weyl) sequence, frac(offset + k / phi), k the URL's rank among the URLs of its host
//! and interval class (Liu & Nain §1.3.4): within a class they are equidistributed with
//! discrepancy O(log n / n), where independent hashes would scatter each night's count by its
//! square root; the offset, one per host, decorrelates hosts. Times here are seconds from the
//! night's start.

use super::timetable::INV_PHI;
use crate::units::Seconds;

/// Where a URL stands at the night's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Fetched before, next due at or after the start.
    OnTime,
    /// Due before the start (a failed or missing fetch, or a shorter interval): due tonight.
    Overdue,
    /// Never fetched: due at its phase of its interval.
    New,
}

/// The interval class of an interval in seconds, floor(log2 tau): the URLs of a host whose phases
/// come from one sequence (a class spans a factor of 2).
///
/// A normal tau = m 2^e (1 <= m < 2) is in class e; computed from its bits, with `log2` only for
/// m within 2^-40 of 1 or 2, where a logarithm's rounding could cross the integer, so that the
/// class is the logarithm's, bit for bit (the schedule runs this for every URL of every night).
#[inline]
pub fn interval_class(interval_s: f64) -> i32 {
    const MANTISSA: u64 = (1 << 52) - 1;
    const EDGE: u64 = 1 << 12;
    let bits = interval_s.to_bits();
    let (exponent, mantissa) = ((bits >> 52) as i32, bits & MANTISSA);
    if (1..0x7ff).contains(&exponent) && (EDGE..MANTISSA - EDGE).contains(&mantissa) {
        exponent - 1023
    } else {
        interval_s.log2().floor() as i32
    }
}

/// The phase, in [0, 1), of the `k`-th URL of a sequence starting at `offset`: frac(offset + k/phi).
#[inline]
pub fn phase(offset: f64, k: u64) -> f64 {
    // k / phi as k x (1/phi), reduced exactly enough: the fraction of a product of a u64 and an f64
    fract(offset + fract(k as f64 * INV_PHI))
}

/// `x.fract()`, bit for bit, without a call to the C library's `trunc` (which the portable build
/// makes for each one): below 2^52 in magnitude, x's integer part is the truncation to an integer
/// (with x's sign, as `trunc` gives it: -0.0 for -0.5).
#[inline]
fn fract(x: f64) -> f64 {
    const INTEGERS: f64 = 4503599627370496.0; // 2^52
    if x.abs() < INTEGERS {
        x - ((x as i64) as f64).copysign(x)
    } else {
        x.fract()
    }
}

/// The phases of one host's URLs, in their order, from their intervals (seconds; +inf for a URL
/// never due): the k-th URL of each interval class gets [`phase`] k of the host's sequence.
pub fn host_phases(intervals_s: &[f64], offset: f64) -> Vec<f64> {
    let mut phases = Vec::new();
    host_phases_into(intervals_s, offset, &mut Vec::new(), &mut phases);
    phases
}

/// [`host_phases`] into `phases`, with `classes` for scratch: both reused from host to host (two
/// allocations a host were most of the work on hosts of one page).
pub fn host_phases_into(
    intervals_s: &[f64],
    offset: f64,
    classes: &mut Vec<(i32, u64)>,
    phases: &mut Vec<f64>,
) {
    classes.clear();
    phases.clear();
    phases.extend(intervals_s.iter().map(|&tau| {
        if !tau.is_finite() {
            return 0.0;
        }
        let class = interval_class(tau);
        let k = match classes.iter_mut().find(|c| c.0 == class) {
            Some(c) => {
                c.1 += 1;
                c.1
            }
            None => {
                classes.push((class, 0));
                0
            }
        };
        phase(offset, k)
    }));
}

/// The previous night's plan of a URL: its first due time in that night or after (`next`) and its
/// interval then, in the unit and from the origin of the times it is compared with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Planned {
    pub next: f64,
    pub interval: f64,
}

/// Where a URL's clock stands at a night's start: the due time its next one counts from, and
/// whether a fetch served it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub at: f64,
    pub served: bool,
}

/// A URL's [`Anchor`], given the previous night's plan (None: a first night) and its latest
/// successful fetch before `start` (None: none known).
///
/// If the plan had the URL due before `start`: its last such due time, served if a fetch came
/// after it, late or less than half an interval early. If nothing was due: the plan's own clock,
/// `next - interval`, served (a URL the plan phased in and never fetched keeps its phase). Without
/// a plan: the fetch, or None for a URL never fetched.
pub fn anchor(plan: Option<Planned>, fetched: Option<f64>, start: f64) -> Option<Anchor> {
    let Some(plan) = plan else {
        return fetched.map(|at| Anchor { at, served: true });
    };
    Some(match last_planned_before(plan.next, plan.interval, start) {
        Some(due) => Anchor {
            at: due,
            served: fetched.is_some_and(|f| f >= due - 0.5 * plan.interval),
        },
        None => Anchor {
            at: plan.next - plan.interval,
            served: true,
        },
    })
}

/// A URL's next due time (seconds from the night's start) and standing, from its [`anchor`]
/// (seconds from the start), its interval `tau` in seconds and its phase in [0, 1).
///
/// On time: the due time after a served anchor, at or after the start. Otherwise the URL is
/// overdue (a missed fetch, or an interval shortened past the start), late by L = the start - its
/// earliest missed due time: due at phase x min(L, T), so that a fetch the last night had no time
/// for comes early tonight and the backlog of an outage spreads over the night rather than
/// bursting at its start; or at its clock's next due time if that comes first (the missed fetch is
/// skipped, not crowded in before it). Its clock then restarts from tonight's fetch. No anchor:
/// new, due at phase x tau.
pub fn next_due(
    anchor: Option<Anchor>,
    interval_s: f64,
    phase: f64,
    horizon: Seconds,
) -> (f64, Standing) {
    let Some(a) = anchor else {
        return (phase * interval_s, Standing::New);
    };
    let steps = (-a.at / interval_s).ceil().max(1.0);
    let mut next_on_clock = a.at + steps * interval_s;
    if next_on_clock < 0.0 {
        // rounding in the step count
        next_on_clock += interval_s;
    }
    if a.served && steps == 1.0 {
        return (next_on_clock, Standing::OnTime);
    }
    let missed = if a.served { a.at + interval_s } else { a.at };
    let late = (-missed).max(0.0);
    (
        (phase * late.min(horizon.0)).min(next_on_clock),
        Standing::Overdue,
    )
}

/// The due times in [0, T) of a URL first due at `first`, every `interval_s` seconds.
pub fn due_in_night(first: f64, interval_s: f64, horizon: Seconds) -> impl Iterator<Item = f64> {
    let n = if first < horizon.0 && interval_s > 0.0 {
        ((horizon.0 - first) / interval_s).ceil().max(1.0) as u64
    } else {
        0
    };
    (0..n)
        .map(move |k| first + k as f64 * interval_s)
        .filter(move |&t| (0.0..horizon.0).contains(&t))
}

/// The fetches that a night planned before `start` (its due times every `interval_s` from `next`,
/// seconds since any epoch) had made by `start`: the last of them, if any.
pub fn last_planned_before(next: f64, interval_s: f64, start: f64) -> Option<f64> {
    if next >= start {
        return None;
    }
    let k = ((start - next) / interval_s).ceil() - 1.0;
    let last = next + k.max(0.0) * interval_s;
    // rounding in k can land on start itself: step back one interval
    Some(if last >= start {
        last - interval_s
    } else {
        last
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DAY: Seconds = Seconds(86_400.0);

    #[test]
    fn standings_and_due_times() {
        let served = |at| Some(Anchor { at, served: true });
        let missed = |at| Some(Anchor { at, served: false });
        let due = |a, tau, phase| next_due(a, tau, phase, DAY);
        assert_eq!(
            due(served(-3600.0), 7200.0, 0.5),
            (3600.0, Standing::OnTime)
        );
        // a missed fetch an hour late: within the hour, by its phase
        assert_eq!(
            due(missed(-3600.0), 7200.0, 0.5),
            (1800.0, Standing::Overdue)
        );
        // ... unless its clock's next due time comes first: then it is skipped
        assert_eq!(
            due(missed(-3600.0), 4000.0, 0.5),
            (400.0, Standing::Overdue)
        );
        // a fetch the last night had no time for, 20 s before its end: early tonight
        assert_eq!(due(missed(-20.0), 7200.0, 0.5), (10.0, Standing::Overdue));
        // an outage: a fetch missed by more than a night is spread over the whole night
        assert_eq!(
            due(missed(-2e5), 8.64e6, 0.25),
            (21_600.0, Standing::Overdue)
        );
        // an interval shortened past the start: late since its first due time on the new clock
        assert_eq!(
            due(served(-9000.0), 7200.0, 0.5),
            (900.0, Standing::Overdue)
        );
        assert_eq!(due(None, 8.64e5, 0.25), (216_000.0, Standing::New));
        let times: Vec<f64> = due_in_night(1000.0, 30_000.0, DAY).collect();
        assert_eq!(times, vec![1000.0, 31_000.0, 61_000.0]);
        assert_eq!(due_in_night(90_000.0, 10.0, DAY).count(), 0);
        assert_eq!(last_planned_before(100.0, 50.0, 260.0), Some(250.0));
        assert_eq!(last_planned_before(100.0, 50.0, 250.0), Some(200.0));
        assert_eq!(last_planned_before(300.0, 50.0, 250.0), None);
    }

    #[test]
    fn a_fetch_counts_from_the_due_time_it_served() {
        let plan = Some(Planned {
            next: 100.0,
            interval: 50.0,
        });
        let at = |at, served| Some(Anchor { at, served });
        // due at 100, 150, 200, 250 before the start at 260: the fetch at 251 served 250
        assert_eq!(anchor(plan, Some(251.0), 260.0), at(250.0, true));
        // late, or early by less than half an interval: it still served 250
        assert_eq!(anchor(plan, Some(259.0), 260.0), at(250.0, true));
        assert_eq!(anchor(plan, Some(226.0), 260.0), at(250.0, true));
        // the last fetch served 200: 250 was missed, the URL is overdue
        assert_eq!(anchor(plan, Some(210.0), 260.0), at(250.0, false));
        assert_eq!(anchor(plan, None, 260.0), at(250.0, false));
        // nothing was due before the start: the plan's own clock, whatever the log says
        assert_eq!(anchor(plan, Some(40.0), 90.0), at(50.0, true));
        assert_eq!(anchor(plan, None, 90.0), at(50.0, true));
        // no plan: the fetch itself, or nothing
        assert_eq!(anchor(None, Some(80.0), 90.0), at(80.0, true));
        assert_eq!(anchor(None, None, 90.0), None);
    }

    proptest! {
        /// A served clock's next due time is the first of its due times at or after the start; an
        /// overdue URL is due tonight, no later than its clock's next due time nor than its
        /// lateness.
        #[test]
        fn the_clock_keeps_its_due_times(
            at in -3e5f64..0.0, tau in 60.0f64..2e5, served: bool, phase in 0.0f64..1.0,
        ) {
            let (next, standing) = next_due(Some(Anchor { at, served }), tau, phase, DAY);
            prop_assert!(next >= 0.0);
            let k = ((next - at) / tau).round();
            let on_clock = (next - (at + k * tau)).abs() <= 1e-9 * (1.0 + at.abs());
            prop_assert_eq!(standing == Standing::OnTime, served && at + tau >= 0.0);
            if standing == Standing::OnTime {
                prop_assert!(on_clock && next - tau < 1e-9 * (1.0 + at.abs()));
            } else {
                let missed = if served { at + tau } else { at };
                prop_assert!(next < DAY.0 && next <= -missed);
                let first_on_clock = at + (-at / tau).ceil().max(1.0) * tau;
                prop_assert!(next <= first_on_clock + 1e-9 * (1.0 + at.abs()));
            }
        }
    }

    #[test]
    fn classes_and_fractions_are_the_library_s_bit_for_bit() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut taus: Vec<f64> = (0..200_000)
            .map(|_| rng.random::<f64>() * 10f64.powi(rng.random_range(-30..30)))
            .collect();
        // powers of two and their neighbours, where the logarithm's rounding decides
        for e in -60..60 {
            let p = 2f64.powi(e);
            let mut x = p;
            for _ in 0..40 {
                x = f64::from_bits(x.to_bits() - 1);
                taus.push(x);
            }
            let mut x = p;
            for _ in 0..40 {
                taus.push(x);
                x = f64::from_bits(x.to_bits() + 1);
            }
        }
        taus.extend([f64::MIN_POSITIVE, 5e-324, 1e300, f64::MAX]);
        for &tau in &taus {
            assert_eq!(interval_class(tau), tau.log2().floor() as i32, "{tau:e}");
        }
        for &x in taus
            .iter()
            .chain(&[0.0, -0.0, -1.5, -3e15, 4.6e15, 1e20, f64::INFINITY])
        {
            for x in [x, -x, x * INV_PHI] {
                let (a, b) = (fract(x), x.fract());
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "{x:e}"
                );
            }
        }
    }

    #[test]
    fn phases_of_a_class_are_spread_evenly() {
        // 1000 URLs of one class: the share with phase below x is x to within (log n) / n
        let phases = host_phases(&vec![86_400.0 * 10.0; 1000], 0.3);
        for x in [0.1, 0.25, 0.5, 0.9] {
            let below = phases.iter().filter(|&&p| p < x).count() as f64;
            assert!((below - 1000.0 * x).abs() <= 4.0, "{x}: {below}");
        }
        // two classes interleaved: each is its own sequence
        let mixed: Vec<f64> = (0..100)
            .map(|k| if k % 2 == 0 { 1e4 } else { 1e6 })
            .collect();
        let p = host_phases(&mixed, 0.0);
        assert_eq!((p[0], p[1]), (0.0, 0.0));
        assert_eq!(p[2], phase(0.0, 1));
    }

    proptest! {
        /// Every due time of a night is in [0, T), evenly spaced, and the first is the URL's next.
        #[test]
        fn due_times_are_in_the_night_and_evenly_spaced(
            first in -1e5f64..2e5, interval in 1.0f64..3e5,
        ) {
            let times: Vec<f64> = due_in_night(first, interval, DAY).collect();
            prop_assert!(times.iter().all(|&t| t < DAY.0));
            if (0.0..DAY.0).contains(&first) {
                prop_assert_eq!(times[0], first);
                let expected = ((DAY.0 - first) / interval).ceil() as usize;
                prop_assert!(times.len() == expected || times.len() + 1 == expected);
            }
        }
    }
}
