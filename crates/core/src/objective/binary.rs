//! Binary freshness (Azar et al., PNAS'18; NeurIPS'19 eqs. 12-13): utility mu rho/(rho+lambda) with
//! Poisson crawls and incomplete observations, mu rho/lambda = mu p with complete observations.

/// Best response with Poisson crawls (PNAS'18 eq. 11: rho = sqrt(mu lambda / theta) - lambda, floored
/// at 0), written as lambda (q - lambda) / (sqrt(q lambda) + lambda) with q = mu/theta: no cancellation.
#[inline]
pub fn poisson_rate(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    let q = mu / theta;
    if q <= lambda {
        return 0.0;
    }
    if q.is_infinite() {
        return f64::INFINITY;
    }
    fed_rate(q, lambda)
}

/// [`poisson_rate`] of a page that is fed (lambda > 0 and finite q = mu/theta > lambda), without
/// the checks: for loops that select starved pages instead of branching on them.
#[inline(always)]
pub fn fed_rate(q: f64, lambda: f64) -> f64 {
    lambda * (q - lambda) / ((q * lambda).sqrt() + lambda)
}

/// d rho / d theta of [`poisson_rate`]: -sqrt(mu lambda)/(2 theta^1.5) = -(rho + lambda)/(2 theta).
#[inline]
pub fn poisson_slope(lambda: f64, theta: f64, rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() {
        return 0.0;
    }
    -(rate + lambda) / (2.0 * theta)
}

/// Marginal utility mu lambda / (rho + lambda)^2.
#[inline]
pub fn poisson_marginal(mu: f64, lambda: f64, rho: f64) -> f64 {
    let s = rho + lambda;
    (mu / s) * (lambda / s)
}

/// Binary staleness mu lambda / (rho + lambda) (NeurIPS'19 eq. 12; one minus PNAS'18 eq. 5's term).
#[inline]
pub fn poisson_cost(mu: f64, lambda: f64, rho: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    mu * (lambda / (rho + lambda))
}

/// Best response with complete observations: lambda while theta < mu/lambda, 0 above (a step at
/// mu/lambda; right-continuous, so 0 at the step itself: see [`complete_rate_left`]).
#[inline]
pub fn complete_rate(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda > 0.0 && theta < mu / lambda {
        lambda
    } else {
        0.0
    }
}

/// The left limit of [`complete_rate`]: lambda up to and including the step price mu/lambda.
#[inline]
pub fn complete_rate_left(mu: f64, lambda: f64, theta: f64) -> f64 {
    if lambda > 0.0 && theta <= mu / lambda {
        lambda
    } else {
        0.0
    }
}

/// Marginal utility mu / lambda of the linear utility mu rho / lambda.
#[inline]
pub fn complete_marginal(mu: f64, lambda: f64) -> f64 {
    mu / lambda
}

/// Binary staleness mu (1 - p), p = min(1, rho/lambda) (NeurIPS'19 eq. 13).
#[inline]
pub fn complete_cost(mu: f64, lambda: f64, rho: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    mu * (1.0 - (rho / lambda).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_rate_equals_the_papers_form() {
        for &(mu, lambda, theta) in &[(1.0f64, 0.3f64, 0.5f64), (4.0, 0.01, 0.2), (1e3, 2.0, 1e-2)]
        {
            let paper = ((mu * lambda / theta).sqrt() - lambda).max(0.0);
            let ours = poisson_rate(mu, lambda, theta);
            assert!(
                (paper - ours).abs() <= 1e-14 * paper.max(1e-300),
                "{paper} vs {ours}"
            );
        }
        assert_eq!(poisson_rate(1.0, 2.0, 1.0), 0.0);
    }

    #[test]
    fn poisson_rate_solves_its_first_order_condition() {
        let (mu, lambda, theta) = (1e9, 1e-9, 1e-3);
        let rho = poisson_rate(mu, lambda, theta);
        assert!(((poisson_marginal(mu, lambda, rho) - theta) / theta).abs() < 1e-12);
    }

    #[test]
    fn complete_rate_steps_at_mu_over_lambda() {
        assert_eq!(complete_rate(1.0, 0.5, 1.99), 0.5);
        assert_eq!(complete_rate(1.0, 0.5, 2.0), 0.0);
        assert_eq!(complete_rate_left(1.0, 0.5, 2.0), 0.5);
        assert_eq!(complete_rate_left(1.0, 0.5, 2.01), 0.0);
    }
}
