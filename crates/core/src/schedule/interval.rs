//! Closed forms for one interval between two visits of a page whose changes are Poisson(lambda).
//!
//! A visit makes the copy fresh; over the next interval of length tau the page changes at Poisson
//! times. Every form here is the integral over the interval of an expectation, so a cyclic timetable
//! is evaluated exactly by summing its intervals (Liu & Nain Lemma 3 with a deterministic access
//! time; PUC-Rio A_i(x) is the equal-interval case). All take c = lambda * tau (dimensionless) and
//! return a fraction of the interval, so units never mix: multiply by tau for a time.

/// Euler-Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;
/// Below this c the forms use their Taylor series, where the closed forms cancel.
const SERIES_BELOW: f64 = 0.5;

/// Share of an interval the copy is stale: 1 - (1 - e^-c)/c (Liu & Nain Lemma 3: E[Z] = tau -
/// (1 - e^-lambda tau)/lambda, divided by tau). Series c/2 - c^2/6 + c^3/24 - ... for small c.
#[inline]
pub fn stale_share(c: f64) -> f64 {
    if c <= 0.0 {
        return 0.0;
    }
    if c < SERIES_BELOW {
        // sum_{n>=1} (-1)^(n+1) c^n / (n+1)!
        let mut term = 0.5 * c;
        let mut sum = 0.0;
        for n in 1..24 {
            sum += term;
            if term.abs() <= 1e-17 * sum {
                break; // alternating and decreasing: the rest is below the last bit
            }
            term *= -c / (n as f64 + 2.0);
        }
        sum
    } else {
        1.0 + (-c).exp_m1() / c
    }
}

/// Share of an interval the copy is fresh: (1 - e^-c)/c (1 at c = 0).
#[inline]
pub fn fresh_share(c: f64) -> f64 {
    if c <= 0.0 {
        return 1.0;
    }
    if c < SERIES_BELOW {
        1.0 - stale_share(c)
    } else {
        -(-c).exp_m1() / c
    }
}

/// The entire exponential integral Ein(x) = int_0^x (1 - e^-s)/s ds = E[H(N)] for N ~ Poisson(x),
/// the expected harmonic penalty of NeurIPS'19 eq. 2 after x expected changes.
///
/// Why it equals E[H(N)]: H(n) = int_0^1 (1 - u^n)/(1 - u) du and E[u^N] = e^{-x(1-u)}; substitute
/// s = x(1 - u). Series for x <= 1, gamma + ln x + E1(x) with E1 by continued fraction above.
pub fn ein(x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x <= 1.0 {
        // sum_{k>=1} (-1)^(k+1) x^k / (k k!)
        let mut power = x; // (-1)^(k+1) x^k / k!
        let mut sum = 0.0;
        for k in 1..40 {
            let term = power / k as f64;
            sum += term;
            if term.abs() < 1e-17 * sum.abs() {
                break;
            }
            power *= -x / (k as f64 + 1.0);
        }
        sum
    } else {
        EULER_GAMMA + x.ln() + e1(x)
    }
}

/// The exponential integral E1(x) for x >= 1, by the continued fraction (modified Lentz).
fn e1(x: f64) -> f64 {
    let tiny = 1e-300;
    let mut b = x + 1.0;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..200 {
        let a = -((i * i) as f64);
        b += 2.0;
        d = 1.0 / (a * d + b);
        c = b + a / c;
        let delta = c * d;
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h * (-x).exp()
}

/// Time-average harmonic penalty over an interval: (1/c) int_0^c Ein(s) ds = Ein(c) - stale_share(c).
///
/// NeurIPS'19 eq. 1 with C(n) = H(n) for periodic crawls. The paper gives it only for Poisson crawls
/// (Prop. 1: ln((lambda + rho)/rho)); for a fixed interval, integrate E[H(N(t))] = Ein(lambda t) by
/// parts: int_0^c Ein = c Ein(c) - int_0^c (1 - e^-s) ds = c Ein(c) - c + 1 - e^-c.
#[inline]
pub fn harmonic_share(c: f64) -> f64 {
    if c <= 0.0 {
        return 0.0;
    }
    ein(c) - stale_share(c)
}

/// Expected changes in an interval that no visit observes: c - (1 - e^-c) = c * stale_share(c).
///
/// A visit sees the latest version only, so of the N changes in an interval N - 1{N > 0} are
/// missed (the versions in between were never fetched).
#[inline]
pub fn missed_changes(c: f64) -> f64 {
    c * stale_share(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trapezoid-free check: Simpson's rule on a smooth integrand, many panels.
    fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
        let h = (b - a) / n as f64;
        let mut s = f(a) + f(b);
        for k in 1..n {
            s += f(a + k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    }

    #[test]
    fn stale_share_matches_the_integral_of_the_change_probability() {
        for &c in &[1e-9, 1e-4, 0.1, 0.49, 0.51, 1.0, 3.0, 40.0] {
            let by_quadrature = simpson(|t| 1.0 - (-t).exp(), 0.0, c, 2000) / c;
            let rel = (stale_share(c) - by_quadrature).abs() / by_quadrature;
            assert!(rel < 1e-9, "c={c}: {} vs {by_quadrature}", stale_share(c));
            assert!((stale_share(c) + fresh_share(c) - 1.0).abs() < 1e-15);
        }
    }

    #[test]
    fn ein_equals_the_expected_harmonic_number_of_a_poisson_count() {
        // E[H(N)] summed over the Poisson pmf directly, independent of the series and E1.
        for &x in &[1e-6f64, 0.3, 1.0, 1.0001, 2.5, 7.0, 30.0] {
            let (mut p, mut h, mut e) = ((-x).exp(), 0.0, 0.0);
            for n in 1..400 {
                p *= x / n as f64;
                h += 1.0 / n as f64;
                e += p * h;
            }
            let rel = (ein(x) - e).abs() / e;
            assert!(rel < 1e-12, "x={x}: {} vs {e}", ein(x));
        }
    }

    #[test]
    fn harmonic_share_matches_the_integral_of_ein() {
        for &c in &[1e-5, 0.2, 1.0, 4.0, 25.0] {
            let by_quadrature = simpson(ein, 0.0, c, 4000) / c;
            let rel = (harmonic_share(c) - by_quadrature).abs() / by_quadrature;
            assert!(
                rel < 1e-9,
                "c={c}: {} vs {by_quadrature}",
                harmonic_share(c)
            );
        }
    }
}
