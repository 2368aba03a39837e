//! Binary freshness with fixed-interval (periodic) crawls (Cho & Garcia-Molina; the Frontera
//! document): utility mu (rho/lambda)(1 - e^-x), x = lambda/rho, i.e. mu times the time-average
//! freshness of a page crawled every 1/rho days (PNAS'18 eq. 6).
//!
//! Frontera's value objective sum f w (1 - exp(-lambda/f)) is this utility with mu = w lambda (the
//! value of a refresh w times the chance it finds new content, per unit time). The first-order
//! condition (mu/lambda) phi(x) = theta with phi(x) = 1 - (1 + x) e^-x is solved exactly by the lower
//! branch of the Lambert W function; every form here is cancellation-free for mu, lambda in
//! [1e-9, 1e9]: near the branch point (c -> 0, x small) phi and the solution use series in x.
//!
//! At the cut-off theta = mu/lambda the response leaves 0 with infinite slope: crawling far less
//! often than the page changes, every crawl finds a change and the utility is linear, mu rho/lambda.
//! In f64 the last price below the cut-off (1 - c = 2^-53) already asks for rho = lambda/X_MAX, so
//! the response is treated as what it is in f64: a step at mu/lambda from 0 to lambda/X_MAX (the
//! solver splits ties at steps exactly), continuous below it. Rates inside the step have marginal
//! utility mu/lambda to the last bit, so they meet the KKT conditions as interior rates.

/// The largest x = lambda/rho a price below the cut-off yields: (1 + x) e^-x = 2^-53.
pub const X_MAX: f64 = 40.461_567_483_087_465;
/// Below this x, phi(x) uses its Taylor series (the closed form cancels there).
const SERIES_BELOW: f64 = 0.5;
/// (-1)^(n+1) / (n+1)! for n = 1..=19, each rounded once: the Taylor coefficients of the staleness
/// (x + e^-x - 1)/x = x/2! - x^2/3! + ... below [`STALE_SERIES_BELOW`], so that [`cost`] sums the
/// series by Horner's rule without a division per term (a sweep values every page at every point).
const STALE_SERIES: [f64; 19] = [
    0.5,
    -0.16666666666666666,
    0.041666666666666664,
    -0.008333333333333333,
    0.001388888888888889,
    -0.0001984126984126984,
    2.48015873015873e-05,
    -2.7557319223985893e-06,
    2.755731922398589e-07,
    -2.505210838544172e-08,
    2.08767569878681e-09,
    -1.6059043836821613e-10,
    1.1470745597729725e-11,
    -7.647163731819816e-13,
    4.779477332387385e-14,
    -2.8114572543455206e-15,
    1.5619206968586225e-16,
    -8.22063524662433e-18,
    4.110317623312165e-19,
];
/// Below this x the staleness uses [`STALE_SERIES`] (alternating, terms decreasing from x/2, its 20th
/// term below 1e-19 of the sum), at and above it the closed form with e^-x (no cancellation there).
const STALE_SERIES_BELOW: f64 = 1.0;
/// Below this c = theta lambda / mu, the first guess of x is the branch-point series in sqrt(2c).
const BRANCH_SERIES_BELOW: f64 = 1e-6;

/// phi(x) = 1 - (1 + x) e^-x, the marginal freshness of one more crawl per change (Frontera's
/// dT/df over w), cancellation-free: sum_{n>=2} (-1)^n (n-1) x^n / n! for small x.
#[inline]
pub fn phi(x: f64) -> f64 {
    if x < SERIES_BELOW {
        let mut term = 0.5 * x * x; // n = 2
        let mut sum = 0.0;
        for n in 2..20 {
            sum += term;
            let n = n as f64;
            term *= -x * n / ((n - 1.0) * (n + 1.0));
        }
        sum
    } else {
        -(-x).exp_m1() - x * (-x).exp()
    }
}

/// The x = lambda/rho solving phi(x) = c, given c in (0, 1) and 1 - c computed without cancellation.
///
/// (1 + x) e^-x = 1 - c means y e^y = -(1 - c)/e with y = -(1 + x) < -1, so x = -1 - W_{-1}(-(1-c)/e).
/// The crate's W_{-1} (50 bits) is polished by Newton steps on a cancellation-free residual, because
/// near the branch point (small c) the argument -(1-c)/e has lost the digits of c.
#[inline]
pub fn interval_ratio(c: f64, one_minus_c: f64) -> f64 {
    let mut x = if c < BRANCH_SERIES_BELOW {
        // W_{-1} at the branch point: x = s + s^2/3 + 11 s^3/72 + ..., s = sqrt(2c) (Corless et al. 1996)
        let s = (2.0 * c).sqrt();
        s * (1.0 + s * (1.0 / 3.0 + s * (11.0 / 72.0)))
    } else {
        -1.0 - lambert_w::lambert_wm1(-one_minus_c * (-1.0f64).exp())
    };
    if !(x > 0.0 && x.is_finite()) {
        // The crate answers NaN only outside its domain, which 0 < c < 1 excludes; stay safe anyway.
        let s = (2.0 * c).sqrt();
        x = s.max(f64::MIN_POSITIVE);
    }
    for _ in 0..3 {
        // residual phi(x) - c, written as (1 - c) - (1 + x) e^-x where phi is near 1 (x large)
        let residual = if x < SERIES_BELOW {
            phi(x) - c
        } else {
            one_minus_c - (1.0 + x) * (-x).exp()
        };
        let step = residual / (x * (-x).exp()); // phi'(x) = x e^-x
        x -= step;
        if step.abs() <= 1e-15 * x {
            break;
        }
    }
    x
}

/// Best response: 0 if c = theta lambda/mu >= 1, else lambda / x with
/// x = -1 - W_{-1}(-(1-c)/e).
#[inline]
pub fn rate(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0; // a page that never changes is never stale
    }
    if theta >= mu / lambda {
        return 0.0; // the first crawl is worth mu/lambda at most (phi < 1)
    }
    let t = theta * lambda;
    let c = t / mu;
    if c <= 0.0 {
        return f64::INFINITY;
    }
    // below the cut-off, 1 - c >= 2^-53 keeps x <= X_MAX; the min only absorbs rounding of t
    let x = interval_ratio(
        c.min(1.0 - f64::EPSILON / 2.0),
        ((mu - t) / mu).max(f64::EPSILON / 2.0),
    );
    lambda / x.min(X_MAX)
}

/// The left limit of [`rate`]: lambda / X_MAX at the cut-off mu/lambda (the step), else the rate.
#[inline]
pub fn rate_left(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda > 0.0 && theta == mu / lambda {
        return lambda / X_MAX;
    }
    rate(mu, lambda, theta)
}

/// The cut-off mu/lambda, where the response steps from lambda / X_MAX down to 0.
#[inline]
pub fn jump(mu: f64, lambda: f64) -> Option<f64> {
    (lambda > 0.0).then(|| mu / lambda)
}

/// d rho / d theta of [`rate`] by implicit differentiation of (mu/lambda) phi(lambda/rho) = theta:
/// -(rho/theta) c e^x / x^2 (elasticity -1/2 for frequent crawls, steep near the cut-off).
#[inline]
pub fn slope(mu: f64, lambda: f64, theta: f64, rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() || lambda <= 0.0 {
        return 0.0;
    }
    let x = lambda / rate;
    let c = theta * lambda / mu;
    -(rate / theta) * (c / (x * x)) * x.exp()
}

/// Marginal utility (mu/lambda) phi(lambda/rho): mu/lambda for the first crawl, 0 as rho grows.
#[inline]
pub fn marginal(mu: f64, lambda: f64, rho: f64) -> f64 {
    if rho <= 0.0 {
        return mu / lambda;
    }
    (mu / lambda) * phi(lambda / rho)
}

/// Time-average freshness (1 - e^-x)/x of a page crawled every 1/rho days (Cho & Garcia-Molina).
#[inline]
pub fn freshness(lambda: f64, rho: f64) -> f64 {
    if lambda <= 0.0 {
        return 1.0;
    }
    if rho <= 0.0 {
        return 0.0;
    }
    let x = lambda / rho;
    -(-x).exp_m1() / x
}

/// Staleness cost mu (1 - freshness) = mu (x + e^-x - 1)/x, series x/2 - x^2/6 + ... for small x.
#[inline]
pub fn cost(mu: f64, lambda: f64, rho: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    if rho <= 0.0 {
        return mu;
    }
    let x = lambda / rho;
    let stale = if x < STALE_SERIES_BELOW {
        x * STALE_SERIES.iter().rev().fold(0.0, |p, &c| p * x + c)
    } else {
        // x + e^-x - 1 >= 1/e here: exp's rounding costs < 1e-15 relative, and exp is cheaper
        // than exp_m1
        (x + ((-x).exp() - 1.0)) / x
    };
    mu * stale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rate solving the first-order condition by bisection on rho alone (no Lambert W).
    fn rate_by_bisection(mu: f64, lambda: f64, theta: f64) -> f64 {
        let (mut lo, mut hi) = (1e-300f64, 1e300f64);
        for _ in 0..3000 {
            let mid = (lo * hi).sqrt();
            if mid <= lo || mid >= hi {
                break;
            }
            if marginal(mu, lambda, mid) > theta {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    #[test]
    fn x_max_is_where_one_minus_c_reaches_half_an_ulp() {
        let x = interval_ratio(1.0 - f64::EPSILON / 2.0, f64::EPSILON / 2.0);
        assert!(((x - X_MAX) / X_MAX).abs() < 1e-13, "{x}");
        let (mu, lambda) = (3.0, 0.7);
        let below = rate(mu, lambda, (mu / lambda) * (1.0 - f64::EPSILON));
        assert!(
            below >= lambda / X_MAX && below < 1.1 * lambda / X_MAX,
            "{below}"
        );
        assert_eq!(rate(mu, lambda, mu / lambda), 0.0);
        assert_eq!(rate_left(mu, lambda, mu / lambda), lambda / X_MAX);
        assert_eq!(marginal(mu, lambda, 0.5 * lambda / X_MAX), mu / lambda);
    }

    #[test]
    fn phi_series_and_closed_form_agree_at_the_switch() {
        let x = SERIES_BELOW;
        let closed = 1.0 - (1.0 + x) * (-x).exp();
        assert!(((phi(x) - closed) / closed).abs() < 1e-14);
        assert!(((phi(x * (1.0 - 1e-12)) - closed) / closed).abs() < 1e-11);
        // deep in the series, phi ~ x^2/2 - x^3/3
        let x = 1e-6;
        assert!(((phi(x) - (0.5 * x * x - x * x * x / 3.0)) / phi(x)).abs() < 1e-12);
    }

    #[test]
    fn rate_solves_its_first_order_condition_over_the_whole_range() {
        for &c in &[
            1e-300,
            1e-30,
            1e-12,
            1e-7,
            1e-6,
            2e-6,
            1e-3,
            0.1,
            0.5,
            0.9,
            0.999,
            1.0 - 1e-12,
            1.0 - 1e-15,
        ] {
            for &(mu, lambda) in &[(1.0, 1.0), (1e-9, 1e9), (1e9, 1e-9), (3.7, 0.02)] {
                let theta = c * mu / lambda;
                let rho = rate(mu, lambda, theta);
                assert!(rho.is_finite() && rho > 0.0, "{c} {mu} {lambda}: {rho}");
                let m = marginal(mu, lambda, rho);
                assert!(
                    ((m - theta) / theta).abs() < 1e-12,
                    "c {c} mu {mu} lambda {lambda}: marginal {m} vs {theta}"
                );
            }
        }
        assert_eq!(rate(1.0, 2.0, 0.5), 0.0);
        assert_eq!(rate(1.0, 0.0, 0.5), 0.0);
    }

    #[test]
    fn rate_equals_an_independent_bisection() {
        for &(mu, lambda, theta) in &[
            (1.0, 1.0, 0.3),
            (5.0, 0.1, 1e-4),
            (1e-3, 40.0, 1e-7),
            (2.0, 3.0, 0.6),
        ] {
            let (ours, bisected) = (
                rate(mu, lambda, theta),
                rate_by_bisection(mu, lambda, theta),
            );
            assert!(
                ((ours - bisected) / bisected).abs() < 1e-12,
                "{ours} vs {bisected}"
            );
        }
    }

    #[test]
    fn slope_matches_a_finite_difference() {
        for &(mu, lambda, theta) in &[
            (3.0, 0.7, 0.2),
            (1.0, 1.0, 1e-5),
            (1.0, 1.0, 0.95),
            (2e5, 1e-3, 1e5),
        ] {
            let h = theta * 1e-6;
            let fd = (rate(mu, lambda, theta + h) - rate(mu, lambda, theta - h)) / (2.0 * h);
            let an = slope(mu, lambda, theta, rate(mu, lambda, theta));
            assert!(
                ((fd - an) / an).abs() < 1e-6,
                "{mu} {lambda} {theta}: {fd} vs {an}"
            );
        }
    }

    #[test]
    fn cost_is_one_minus_freshness_without_cancellation() {
        let (mu, lambda) = (2.0, 0.5);
        for &rho in &[0.1, 1.0, 10.0] {
            let x: f64 = lambda / rho;
            let direct = mu * (1.0 - (1.0 - (-x).exp()) / x);
            assert!(((cost(mu, lambda, rho) - direct) / direct).abs() < 1e-12);
            assert!((cost(mu, lambda, rho) + mu * freshness(lambda, rho) - mu).abs() < 1e-15);
        }
        // on both sides of the switch from the series to the closed form, against libm's expm1
        for x in [0.3f64, 0.5, 0.999_999, 1.0, 1.000_001, 2.0, 30.0, 1e3] {
            let expm1 = (x + (-x).exp_m1()) / x;
            let ours = cost(1.0, x, 1.0);
            assert!(((ours - expm1) / expm1).abs() < 4.0 * f64::EPSILON, "{x}");
        }
        // rho = 1e9 lambda: staleness ~ x/2, where 1 - (1 - e^-x)/x would cancel to noise
        assert!(((cost(1.0, 1.0, 1e9) - 0.5e-9) / 0.5e-9).abs() < 1e-8);
        assert_eq!(cost(1.0, 1.0, 0.0), 1.0);
    }
}
