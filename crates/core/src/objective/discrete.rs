//! Binary freshness in discrete time (Azar et al., PNAS'18 Problem 1, eq. 3): one fetch per slot,
//! page i fetched in a slot with probability p_i (sum p = 1) and changed with probability Delta_i;
//! utility mu p / (p + Delta - p Delta).
//!
//! Units: the solver works in fetches per day. One fetch per slot at R fetches per day makes a slot
//! `slot_days` = 1/R days long (the horizon cancels: R T fetches in T days), so p = rho * slot_days
//! and sum rho = R is sum p = 1. Changes are Poisson at lambda per day, so the change probability of
//! a slot is Delta = 1 - e^(-lambda slot_days), computed as -expm1 (no cancellation), and its
//! complement E = 1 - Delta = e^(-lambda slot_days) directly. The price of a unit of p is
//! theta' = theta / slot_days.
//!
//! When E is below half an ulp of 1 (lambda slot_days > ~37), Delta rounds to 1: the interior
//! prices (mu Delta, mu / Delta) of theta' collapse onto mu and the utility is linear, mu p. The
//! response is then the step it is in f64: p = 1 below theta' = mu, 0 above, ties split by the solver.

/// Per-slot change probability Delta = 1 - e^(-lambda slot) and its complement e^(-lambda slot).
#[inline]
pub fn slot_change(lambda: f64, slot_days: f64) -> (f64, f64) {
    let a = lambda * slot_days;
    (-(-a).exp_m1(), (-a).exp())
}

/// True when Delta rounds to 1, so the response is a step (see the module notes).
#[inline]
pub fn is_step(lambda: f64, slot_days: f64) -> bool {
    lambda > 0.0 && slot_change(lambda, slot_days).0 >= 1.0
}

/// Best response (PNAS'18 eq. 9 at one price): p = clip((sqrt(mu Delta/theta') - Delta)/(1-Delta), 0, 1),
/// as a rate per day p / slot_days; sqrt(q Delta) - Delta is written Delta (q - Delta)/(sqrt(q Delta) + Delta).
#[inline]
pub fn rate(mu: f64, lambda: f64, slot_days: f64, theta: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0; // a page that never changes is never stale
    }
    let (delta, keep) = slot_change(lambda, slot_days);
    let q = mu * slot_days / theta; // mu / theta'
    if delta >= 1.0 {
        return if theta < mu * slot_days {
            1.0 / slot_days
        } else {
            0.0
        };
    }
    if q <= delta {
        return 0.0;
    }
    if q.is_infinite() {
        return 1.0 / slot_days;
    }
    let excess = delta * (q - delta) / ((q * delta).sqrt() + delta); // p (1 - Delta)
    if excess >= keep {
        return 1.0 / slot_days; // p = 1: this page takes every slot
    }
    (excess / keep) / slot_days
}

/// The left limit of [`rate`]: differs only at the step of a page with Delta = 1.
#[inline]
pub fn rate_left(mu: f64, lambda: f64, slot_days: f64, theta: f64) -> f64 {
    if is_step(lambda, slot_days) && theta <= mu * slot_days {
        return 1.0 / slot_days;
    }
    rate(mu, lambda, slot_days, theta)
}

/// The step price mu * slot_days of a page whose Delta rounds to 1 (none otherwise).
#[inline]
pub fn jump(mu: f64, lambda: f64, slot_days: f64) -> Option<f64> {
    is_step(lambda, slot_days).then_some(mu * slot_days)
}

/// d rho / d theta of [`rate`] in its interior: -(rho + L)/(2 theta) with L = Delta/((1-Delta) slot),
/// the Poisson slope with lambda replaced by L (PNAS'18 eqs. 9 and 11 side by side); 0 at the clips.
#[inline]
pub fn slope(lambda: f64, slot_days: f64, theta: f64, rate: f64) -> f64 {
    if rate <= 0.0 || !rate.is_finite() || rate * slot_days >= 1.0 {
        return 0.0;
    }
    let (delta, keep) = slot_change(lambda, slot_days);
    if delta >= 1.0 {
        return 0.0;
    }
    -(rate + (delta / keep) / slot_days) / (2.0 * theta)
}

/// Marginal utility per unit of rate: slot mu Delta / (p (1 - Delta) + Delta)^2 (PNAS'18 eq. 8).
#[inline]
pub fn marginal(mu: f64, lambda: f64, slot_days: f64, rho: f64) -> f64 {
    let (delta, keep) = slot_change(lambda, slot_days);
    let p = (rho * slot_days).min(1.0);
    let den = p * keep + delta;
    (mu * slot_days) * (delta / den) / den
}

/// Binary staleness mu (1 - p/(p + Delta - p Delta)) = mu Delta (1 - p) / (p (1 - Delta) + Delta).
#[inline]
pub fn cost(mu: f64, lambda: f64, slot_days: f64, rho: f64) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    let (delta, keep) = slot_change(lambda, slot_days);
    let p = (rho * slot_days).clamp(0.0, 1.0);
    mu * delta * (1.0 - p) / (p * keep + delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_equals_the_papers_form() {
        let slot = 0.01;
        for &(mu, lambda, theta) in &[
            (1.0f64, 0.3f64, 0.05f64),
            (4.0, 2.0, 0.002),
            (1e3, 20.0, 1e-2),
        ] {
            let delta = 1.0 - (-lambda * slot).exp();
            let theta_slot = theta / slot;
            let p = (((mu * delta / theta_slot).sqrt() - delta) / (1.0 - delta)).clamp(0.0, 1.0);
            let ours = rate(mu, lambda, slot, theta) * slot;
            assert!((p - ours).abs() <= 1e-12 * p.max(1e-300), "{p} vs {ours}");
        }
    }

    #[test]
    fn rate_solves_its_first_order_condition() {
        for &(mu, lambda, slot, theta) in &[
            (1.0, 0.3, 0.01, 0.05),
            (1e9, 1e-9, 1e-9, 1e-3),
            (1e-9, 1e9, 1e-9, 9e-19),
        ] {
            let rho = rate(mu, lambda, slot, theta);
            assert!(rho > 0.0 && rho * slot < 1.0, "{rho}");
            let m = marginal(mu, lambda, slot, rho);
            assert!(((m - theta) / theta).abs() < 1e-12, "{m} vs {theta}");
        }
    }

    #[test]
    fn slope_matches_a_finite_difference() {
        let (mu, lambda, slot, theta) = (3.0, 0.7, 0.05, 0.02);
        let h = theta * 1e-6;
        let fd =
            (rate(mu, lambda, slot, theta + h) - rate(mu, lambda, slot, theta - h)) / (2.0 * h);
        let an = slope(lambda, slot, theta, rate(mu, lambda, slot, theta));
        assert!(((fd - an) / an).abs() < 1e-7, "{fd} vs {an}");
    }

    #[test]
    fn a_page_changing_every_slot_is_a_step() {
        let (mu, lambda, slot) = (2.0, 1e3, 1.0);
        assert_eq!(jump(mu, lambda, slot), Some(2.0));
        assert_eq!(rate(mu, lambda, slot, 1.999), 1.0);
        assert_eq!(rate(mu, lambda, slot, 2.0), 0.0);
        assert_eq!(rate_left(mu, lambda, slot, 2.0), 1.0);
        assert!(jump(mu, 1.0, slot).is_none());
    }

    #[test]
    fn cost_matches_the_definition() {
        let (mu, lambda, slot, rho) = (2.0f64, 0.5f64, 0.1f64, 3.0f64);
        let (delta, p) = (1.0 - (-lambda * slot).exp(), rho * slot);
        let direct = mu * (1.0 - p / (p + delta - p * delta));
        assert!(((cost(mu, lambda, slot, rho) - direct) / direct).abs() < 1e-14);
    }
}
