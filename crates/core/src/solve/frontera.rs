//! The Frontera document's own method for its value objective sum f w (1 - e^(-lambda/f)), kept to
//! compare revisit's exact solution with it: the g(x) fixed point, golden-section search on the
//! multiplier alpha, and the clustering of page values that makes it scale.
//!
//! Notation as in the document: N pages, values w in (0, 1], mean frequency f̄ = R/N, constraint
//! (1/N) sum f = f̄, multiplier alpha in [-N max w, 0] (revisit's price is theta = -alpha/N).
//! Document typo: its clusters read W[k] = (2k-1)/(2N), I[k] = {(k-1)/N < w <= k/N}; with K
//! clusters on (0, 1] the N must be K, which is what we use.

/// g(x) = f*/lambda for -1 < x < 0 by the document's iteration u <- ln((1+u)/(1+x)), g = 1/u*.
///
/// The iteration contracts by 1/(1+u) per step, so it crawls where u* is small (x near 0); it stops
/// when u moves by less than 1e-15 relative, or after `max_iterations`.
pub fn g(x: f64, max_iterations: usize) -> f64 {
    if x <= -1.0 {
        return 0.0;
    }
    if x >= 0.0 {
        return f64::INFINITY;
    }
    let mut u: f64 = 1.0;
    for _ in 0..max_iterations {
        let next = ((1.0 + u) / (1.0 + x)).ln();
        let done = (next - u).abs() <= 1e-15 * next;
        u = next;
        if done {
            break;
        }
    }
    1.0 / u
}

/// h(x) = g(x) (1 - e^(-1/g(x)) + x), so that Q_i = lambda_i w_i h(alpha/(N w_i)) (document §"Approximation").
pub fn h(x: f64, max_iterations: usize) -> f64 {
    let gx = g(x, max_iterations);
    if gx <= 0.0 {
        return 0.0;
    }
    gx * (-(-1.0 / gx).exp_m1() + x)
}

/// Golden-section search for the minimum of a unimodal `f` on [a, b], to an interval of width `tol`.
pub fn golden_section(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64, tol: f64) -> f64 {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - r * (b - a);
    let mut d = a + r * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    while (b - a).abs() > tol {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - r * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + r * (b - a);
            fd = f(d);
        }
    }
    0.5 * (a + b)
}

/// The document's solution: alpha minimising Q(alpha) = sum_k Lambda[k] W[k] h(alpha/(N W[k])) - alpha f̄
/// over `clusters` equal-width clusters of w (0 clusters: every page its own cluster, no
/// approximation), then f_i = lambda_i g(alpha/(N w_i)). Returns (rates, alpha).
pub fn solve(
    values: &[f64],
    change_rate: &[f64],
    bandwidth: f64,
    clusters: usize,
    max_iterations: usize,
) -> (Vec<f64>, f64) {
    let n = values.len() as f64;
    let f_bar = bandwidth / n;
    // (cluster value W, summed change rate Lambda)
    let groups: Vec<(f64, f64)> = if clusters == 0 {
        values
            .iter()
            .zip(change_rate)
            .map(|(&w, &l)| (w, l))
            .collect()
    } else {
        let k = clusters as f64;
        let mut lambda_sum = vec![0.0; clusters];
        for (&w, &l) in values.iter().zip(change_rate) {
            let index = ((w * k).ceil() as usize).clamp(1, clusters) - 1; // (k-1)/K < w <= k/K
            lambda_sum[index] += l;
        }
        (0..clusters)
            .map(|c| ((2.0 * c as f64 + 1.0) / (2.0 * k), lambda_sum[c]))
            .collect()
    };
    let q = |alpha: f64| -> f64 {
        groups
            .iter()
            .map(|&(w, l)| l * w * h(alpha / (n * w), max_iterations))
            .sum::<f64>()
            - alpha * f_bar
    };
    let w_max = values.iter().cloned().fold(0.0, f64::max);
    let lo = -n * w_max;
    let alpha = golden_section(q, lo, 0.0, 1e-12 * lo.abs());
    let rates = values
        .iter()
        .zip(change_rate)
        .map(|(&w, &l)| l * g(alpha / (n * w), max_iterations))
        .collect();
    (rates, alpha)
}

/// The document's target T = sum f w (1 - e^(-lambda/f)): value gained per unit time.
pub fn value(values: &[f64], change_rate: &[f64], rates: &[f64]) -> f64 {
    values
        .iter()
        .zip(change_rate)
        .zip(rates)
        .map(|((&w, &l), &f)| {
            if f > 0.0 && l > 0.0 {
                f * w * -(-l / f).exp_m1()
            } else {
                0.0
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::fixed_interval;

    #[test]
    fn g_is_the_lambert_w_solution() {
        // f/lambda = 1/x with phi(x) = c = -x_doc (x_doc = alpha/(N w) = -theta/w)
        for &c in &[0.01, 0.3, 0.9] {
            let doc = g(-c, 1_000_000);
            let ours = 1.0 / fixed_interval::interval_ratio(c, 1.0 - c);
            assert!(((doc - ours) / ours).abs() < 1e-12, "{c}: {doc} vs {ours}");
        }
    }
}
