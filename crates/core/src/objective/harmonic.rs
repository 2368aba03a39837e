//! Harmonic staleness (Kolobov et al., NeurIPS'19): utility mu ln(rho/(rho+lambda)) for incomplete
//! observations (Prop. 1) and mu ln(rho/lambda) = mu ln p for complete ones (Prop. 4).
//!
//! All forms are written to avoid cancellation and overflow for mu, lambda in [1e-9, 1e9].

/// Best response to price theta under incomplete observations (NeurIPS'19 Prop. 2, eq. 5):
/// the root of rho (rho + lambda) = mu lambda / theta, as 2q / (1 + sqrt(1 + 4q/lambda)), q = mu/theta.
#[inline]
pub fn incomplete_rate(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0; // a page that never changes is never stale
    }
    let q = mu / theta;
    if q.is_infinite() {
        return f64::INFINITY;
    }
    incomplete_root(q, lambda)
}

/// [`incomplete_rate`] of a page that changes (lambda > 0) at a finite q = mu/theta, without the
/// checks: for loops without a branch a page.
#[inline(always)]
pub fn incomplete_root(q: f64, lambda: f64) -> f64 {
    2.0 * q / (1.0 + (1.0 + 4.0 * q / lambda).sqrt())
}

/// d rho / d theta of [`incomplete_rate`], from differentiating rho (rho + lambda) = mu lambda / theta.
#[inline]
pub fn incomplete_slope(lambda: f64, theta: f64, rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() {
        return 0.0;
    }
    -rate * (rate + lambda) / (theta * (2.0 * rate + lambda))
}

/// Marginal utility mu lambda / (rho (rho + lambda)) of the incomplete-observation harmonic utility.
#[inline]
pub fn incomplete_marginal(mu: f64, lambda: f64, rho: f64) -> f64 {
    (mu / rho) * (lambda / (rho + lambda))
}

/// Harmonic cost -mu ln(rho/(rho+lambda)) = mu ln(1 + lambda/rho) (NeurIPS'19 Prop. 1); +inf if starved.
#[inline]
pub fn incomplete_cost(mu: f64, lambda: f64, rho: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    if rho <= 0.0 {
        return f64::INFINITY;
    }
    mu * ln_1p(lambda / rho)
}

/// ln(1 + x) for x > -1, to a few ulps: Kahan's ln(u) x / (u - 1) with u = 1 + x rounded, the
/// quotient correcting u's rounding (Goldberg 1991, Theorem 4). Written without branches on the
/// data it takes half the time of libm's log1p, which dominated the valuation of a sweep.
#[inline]
pub fn ln_1p(x: f64) -> f64 {
    let u = 1.0 + x;
    let d = u - 1.0;
    let correction = if d == 0.0 || d.is_infinite() {
        1.0
    } else {
        x / d
    };
    let corrected = u.ln() * correction;
    if d == 0.0 {
        x // u rounded to 1: ln(1 + x) = x to the last bit
    } else {
        corrected
    }
}

/// Best response under complete observations: min(lambda, mu/theta) (NeurIPS'19 Prop. 5 with the
/// p <= 1 box of Problem 2; LambdaCrawl-ComplObs' iterative clipping is exactly this clip at one price).
#[inline]
pub fn complete_rate(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    lambda.min(mu / theta)
}

/// d rho / d theta of [`complete_rate`]: -mu/theta^2 where unclipped, 0 at the p = 1 clip.
#[inline]
pub fn complete_slope(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda <= 0.0 || mu / theta >= lambda {
        return 0.0;
    }
    -(mu / theta) / theta
}

/// Marginal utility mu / rho of mu ln(rho / lambda).
#[inline]
pub fn complete_marginal(mu: f64, rho: f64) -> f64 {
    mu / rho
}

/// Harmonic cost -mu ln p with p = min(1, rho/lambda) (NeurIPS'19 Prop. 4); +inf if starved.
#[inline]
pub fn complete_cost(mu: f64, lambda: f64, rho: f64) -> f64 {
    if lambda <= 0.0 || rho >= lambda {
        return 0.0;
    }
    if rho <= 0.0 {
        return f64::INFINITY;
    }
    mu * (lambda / rho).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_rate_solves_its_first_order_condition() {
        for &(mu, lambda, theta) in &[
            (1.0, 0.3, 0.5),
            (1e-9, 1e9, 1e-3),
            (1e9, 1e-9, 7.0),
            (2.0, 5.0, 1e-12),
        ] {
            let rho = incomplete_rate(mu, lambda, theta);
            let marginal = incomplete_marginal(mu, lambda, rho);
            assert!(
                ((marginal - theta) / theta).abs() < 1e-13,
                "{mu} {lambda} {theta}: {marginal}"
            );
        }
    }

    #[test]
    fn incomplete_slope_matches_a_finite_difference() {
        let (mu, lambda, theta) = (3.0, 0.7, 0.2);
        let h = theta * 1e-6;
        let fd = (incomplete_rate(mu, lambda, theta + h) - incomplete_rate(mu, lambda, theta - h))
            / (2.0 * h);
        let an = incomplete_slope(lambda, theta, incomplete_rate(mu, lambda, theta));
        assert!(((fd - an) / an).abs() < 1e-8, "{fd} vs {an}");
    }

    #[test]
    fn ln_1p_agrees_with_libm_to_a_few_ulps() {
        let mut x: f64 = 1e-300;
        while x < 1e300 {
            for y in [x, -x.min(0.99), 1.0 / 3.0 * x] {
                let (ours, libm) = (ln_1p(y), y.ln_1p());
                assert!(
                    (ours - libm).abs() <= 8.0 * f64::EPSILON * libm.abs(),
                    "{y}: {ours} vs {libm}"
                );
            }
            x *= 1.0 + std::f64::consts::PI / 7.0;
        }
        assert_eq!(ln_1p(0.0), 0.0);
        assert_eq!(ln_1p(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln_1p(f64::MAX), f64::MAX.ln());
    }

    #[test]
    fn complete_rate_is_clipped_at_the_change_rate() {
        assert_eq!(complete_rate(1.0, 0.5, 1.0), 0.5);
        assert_eq!(complete_rate(1.0, 5.0, 1.0), 1.0);
        assert_eq!(complete_slope(1.0, 0.5, 1.0), 0.0);
        assert_eq!(complete_slope(1.0, 5.0, 2.0), -0.25);
    }

    #[test]
    fn costs_match_the_definitions() {
        let (mu, lambda, rho) = (2.0, 0.5, 1.5);
        assert!(
            (incomplete_cost(mu, lambda, rho) + mu * (rho / (rho + lambda)).ln()).abs() < 1e-15
        );
        assert!((complete_cost(mu, lambda, 0.25) + mu * 0.5f64.ln()).abs() < 1e-15);
        assert_eq!(incomplete_cost(mu, 0.0, 0.0), 0.0);
        assert_eq!(incomplete_cost(mu, lambda, 0.0), f64::INFINITY);
    }
}
