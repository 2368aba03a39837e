//! Proportional policies as best responses: LambdaCrawlApprox (NeurIPS'19 Prop. 9, rho ∝ mu) and the
//! baselines UniformCrawl (rho ∝ 1), ChangeRateCrawl (rho ∝ lambda) and importance-proportional.
//!
//! A proportional policy rho_i = R w_i / sum w is the maximiser of sum w_i ln rho_i under sum rho = R:
//! its best response to a price is w/theta. Written that way it goes through the same multiplier
//! machinery as every other objective, and that defines what a politeness cap means for it: a capped
//! host gets exactly its cap, shared among its pages in proportion to w (its own price theta_h), and
//! the bandwidth the cap frees is shared by the other hosts, still in proportion to w (water-filling).
//! Without binding caps this is exactly the papers' R w / sum w.

/// Best response w/theta of the utility w ln rho (NeurIPS'19 Prop. 9 with w = mu); 0 for w = 0.
#[inline]
pub fn rate(weight: f64, theta: f64) -> f64 {
    if weight <= 0.0 {
        return 0.0;
    }
    weight / theta
}

/// d rho / d theta = -w/theta^2 (elasticity exactly -1).
#[inline]
pub fn slope(weight: f64, theta: f64) -> f64 {
    if weight <= 0.0 {
        return 0.0;
    }
    -(weight / theta) / theta
}

/// Marginal utility w/rho of w ln rho.
#[inline]
pub fn marginal(weight: f64, rho: f64) -> f64 {
    weight / rho
}

/// Cost -w ln rho whose minimiser under sum rho = R is the proportional policy; 0 for w = 0.
///
/// It is the policy's own objective, not a freshness measure: compare proportional policies with the
/// optimal ones by their harmonic and binary costs.
#[inline]
pub fn cost(weight: f64, rho: f64) -> f64 {
    if weight <= 0.0 {
        return 0.0;
    }
    -weight * rho.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_proportional_and_solve_the_first_order_condition() {
        assert_eq!(rate(3.0, 0.5), 6.0);
        assert_eq!(rate(0.0, 0.5), 0.0);
        assert_eq!(marginal(3.0, rate(3.0, 0.5)), 0.5);
        assert_eq!(slope(3.0, 0.5), -12.0);
        let (w, theta) = (1e9, 1e-9);
        assert!(rate(w, theta).is_finite() && slope(w, theta).is_finite());
    }
}
