//! Incomplete change observations: a crawl only tells whether the page changed at least once since
//! the previous crawl. For intervals a_j between crawls, z_j = 1 if a change was seen, the
//! log-likelihood is sum_{z=1} ln(1 - e^{-lambda a_j}) - lambda sum_{z=0} a_j, and its derivative
//! vanishes where (NeurIPS'19 eq. 10, Cho & Garcia-Molina's estimator, the Frontera document)
//!
//! ```text
//! sum_{z_j = 1} a_j / (e^{lambda a_j} - 1) = sum_{z_j = 0} a_j.
//! ```
//!
//! The left side falls from +inf to 0 as lambda grows, so with one unchanged interval the root is
//! unique; with none (every crawl saw a change) it is +inf, and with no changed interval 0. The paper
//! smooths both away by adding one imaginary interval of each kind, of length 1/2 ([`super::Prior`];
//! its reference code then clips the estimate to [5e-4, 7] per day; we do not: the smoothed root is
//! finite and positive).

/// The bracket on ln lambda: e^-700 to e^700, about f64's whole range.
const LOG_RATE_RANGE: (f64, f64) = (-700.0, 700.0);

/// The root lambda of sum_{a in changed} a / (e^{lambda a} - 1) = unchanged_days (both sides > 0),
/// by Newton's method on ln lambda inside a bisection bracket, to the last bits.
pub fn mle(changed: &[f64], unchanged_days: f64) -> f64 {
    mle_of(changed, None, unchanged_days)
}

/// [`mle`] with one more changed interval of `smoothing` days after `changed` (the smoothing's
/// imaginary one, [`super::Prior`]): the same sums in the same order as on `changed` with it
/// appended, without a copy of `changed` a URL to append it to.
pub fn mle_smoothed(changed: &[f64], smoothing: f64, unchanged_days: f64) -> f64 {
    mle_of(changed, Some(smoothing), unchanged_days)
}

fn mle_of(changed: &[f64], extra: Option<f64>, unchanged_days: f64) -> f64 {
    let all = || changed.iter().copied().chain(extra);
    if changed.is_empty() && extra.is_none() {
        return 0.0;
    }
    if unchanged_days <= 0.0 {
        return f64::INFINITY;
    }
    // g(x) = ln(sum_changed a / expm1(a e^x)) - ln(unchanged): decreasing in x = ln lambda
    let g = |x: f64| -> (f64, f64) {
        let lambda = x.exp();
        let (mut s, mut ds) = (0.0, 0.0);
        for a in all() {
            let e = (a * lambda).exp_m1();
            let term = a / e;
            s += term;
            // d/dlambda a / (e^{a lambda} - 1) = -a^2 e^{a lambda} / (e^{a lambda} - 1)^2
            ds -= term * term * (e + 1.0);
        }
        // d/dx ln s = lambda s' / s
        (s.ln() - unchanged_days.ln(), lambda * ds / s)
    };
    // Equal intervals a give lambda = ln(1 + k a / U) / a with k changed: a first guess.
    let k = (changed.len() + usize::from(extra.is_some())) as f64;
    let a_mean = all().sum::<f64>() / k;
    let mut x = ((k * a_mean / unchanged_days).ln_1p() / a_mean).ln();
    let (mut lo, mut hi) = LOG_RATE_RANGE;
    if !(lo..=hi).contains(&x) {
        x = 0.0;
    }
    for _ in 0..200 {
        let (v, dv) = g(x);
        if v.is_nan() {
            // e^{a lambda} overflowed (lambda far too large) or underflowed to 0: too far out
            hi = x;
            x = 0.5 * (lo + hi);
            continue;
        }
        if v > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        if v == 0.0 || hi - lo <= 4.0 * f64::EPSILON * x.abs().max(1.0) {
            break;
        }
        let newton = x - v / dv;
        let next = if newton.is_finite() && newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if next == x {
            break;
        }
        x = next;
    }
    x.exp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The root by plain bisection on lambda itself (no logs, no derivative).
    fn by_bisection(changed: &[f64], unchanged: f64) -> f64 {
        let f = |l: f64| changed.iter().map(|&a| a / (a * l).exp_m1()).sum::<f64>() - unchanged;
        let (mut lo, mut hi) = (1e-300f64, 1e300f64);
        for _ in 0..5000 {
            let mid = (lo * hi).sqrt();
            if mid <= lo || mid >= hi {
                break;
            }
            if f(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo * hi).sqrt()
    }

    #[test]
    fn equal_intervals_give_the_closed_form() {
        // Cho & Garcia-Molina / the Frontera document: lambda = ln(1 + |U| / |S|) / I
        for (changed, same, interval) in [
            (1usize, 1usize, 1.0),
            (3, 95, 1.0),
            (90, 8, 1.0),
            (5, 5, 0.25),
            (1, 1000, 7.0),
        ] {
            let want = (changed as f64 / same as f64).ln_1p() / interval;
            let got = mle(&vec![interval; changed], same as f64 * interval);
            assert!(
                ((got - want) / want).abs() < 1e-14,
                "{changed} {same} {interval}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn the_smoothing_keeps_the_extremes_finite() {
        use crate::estimate::{evidence::Seen, Prior, SMOOTHING};
        let all_changed = Seen {
            changed: vec![1.0; 98],
            ..Seen::default()
        };
        let none_changed = Seen {
            unchanged: 98,
            unchanged_days: 98.0,
            ..Seen::default()
        };
        let (a, b) = (
            Prior::Paper.incomplete_rate(&all_changed),
            Prior::Paper.incomplete_rate(&none_changed),
        );
        assert!(a.is_finite() && a > 1.0, "{a}");
        assert!(b > 0.0 && b < 0.02, "{b}");
        // no history at all: one changed and one unchanged half day, ln 2 / 0.5
        let prior = Prior::Paper.incomplete_rate(&Seen::default());
        assert!((prior - 2f64.ln() / SMOOTHING).abs() < 1e-15, "{prior}");
        assert_eq!(mle(&[], 1.0), 0.0);
        assert_eq!(mle(&[1.0], 0.0), f64::INFINITY);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]
        #[test]
        fn newton_agrees_with_bisection(
            changed in prop::collection::vec(1e-4f64..1e3, 1..30),
            unchanged in 1e-4f64..1e4,
        ) {
            let (got, want) = (mle(&changed, unchanged), by_bisection(&changed, unchanged));
            prop_assert!(((got - want) / want).abs() < 1e-10, "{} vs {}", got, want);
        }
    }
}
