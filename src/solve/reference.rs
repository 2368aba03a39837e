//! Independent reference solvers for cross-checks: the papers' sort-based algorithm and brute force.
//!
//! They share nothing with the production search except the per-page response formulas (which are
//! checked against their first-order conditions on their own).

use super::arena::Arena;

/// Azar et al. Algorithm 2 (PNAS'18): the exact optimum of binary freshness with Poisson crawls
/// (Problem 2), no host caps, by sorting pages by mu/lambda. Pages with lambda = 0 get rate 0.
///
/// The printed algorithm (OCR) reads: sort by ascending mu_i/lambda_i; T = sum sqrt(mu_i lambda_i),
/// S = sum lambda_i; for i = 1..n: if mu_i/lambda_i < (T/(R+S))^2 then rho_i = 0, T -= sqrt(mu_i
/// lambda_i), S -= lambda_i; else rho_i = sqrt(mu_i lambda_i)(R+S)/T - lambda_i. Once the first page
/// passes the test all later ones do (the threshold only falls as pages leave), so the final T and S
/// are those of the kept pages and every kept rate uses them; we compute the threshold first and then
/// the rates, which is the same thing written in two passes.
pub fn azar_problem2(importance: &[f64], change_rate: &[f64], bandwidth: f64) -> Vec<f64> {
    let n = importance.len();
    let mut order: Vec<usize> = (0..n).filter(|&i| change_rate[i] > 0.0).collect();
    order.sort_by(|&a, &b| {
        (importance[a] / change_rate[a]).total_cmp(&(importance[b] / change_rate[b]))
    });
    let mut t: f64 = order
        .iter()
        .map(|&i| (importance[i] * change_rate[i]).sqrt())
        .sum();
    let mut s: f64 = order.iter().map(|&i| change_rate[i]).sum();
    let mut first_kept = order.len();
    for (k, &i) in order.iter().enumerate() {
        let threshold = (t / (bandwidth + s)).powi(2);
        if importance[i] / change_rate[i] < threshold {
            t -= (importance[i] * change_rate[i]).sqrt();
            s -= change_rate[i];
        } else {
            first_kept = k;
            break;
        }
    }
    let mut rates = vec![0.0; n];
    for &i in &order[first_kept..] {
        rates[i] = (importance[i] * change_rate[i]).sqrt() * (bandwidth + s) / t - change_rate[i];
    }
    rates
}

/// Brute force: nested bisection (200 halvings each) on the global price and on each capped host's
/// price, evaluating plain sums. Slow and simple; returns (rates, host prices, nu).
pub fn bisection(arena: &Arena, bandwidth: f64) -> (Vec<f64>, Vec<f64>, f64) {
    let host_demand = |h: usize, price: f64| -> f64 {
        arena
            .host_pages(h)
            .map(|i| arena.response[i].rate(arena.importance[i], arena.change_rate[i], price))
            .sum()
    };
    let host_price = |h: usize, nu: f64| -> f64 {
        if host_demand(h, nu) <= arena.cap[h] {
            return nu;
        }
        bisect(nu, |p| host_demand(h, p) > arena.cap[h])
    };
    let spend = |nu: f64| -> f64 {
        (0..arena.hosts())
            .map(|h| host_demand(h, nu).min(arena.cap[h]))
            .sum()
    };
    let max_spend = spend(0.0);
    let nu = if max_spend <= bandwidth {
        0.0
    } else {
        bisect(0.0, |p| spend(p) > bandwidth)
    };
    let prices: Vec<f64> = (0..arena.hosts()).map(|h| host_price(h, nu)).collect();
    let mut rates = vec![0.0; arena.pages()];
    for h in 0..arena.hosts() {
        for i in arena.host_pages(h) {
            rates[i] = arena.response[i].rate(arena.importance[i], arena.change_rate[i], prices[h]);
        }
    }
    (rates, prices, nu)
}

/// The boundary of a monotone predicate `above(p)` (true for small p) found by bisection in log space.
fn bisect(from: f64, above: impl Fn(f64) -> bool) -> f64 {
    let mut lo = from.max(1e-300);
    let mut hi = lo.max(1.0);
    while above(hi) {
        lo = hi;
        hi *= 16.0;
    }
    while !above(lo) && lo > 1e-300 {
        hi = lo;
        lo /= 16.0;
    }
    for _ in 0..200 {
        let mid = if hi / lo > 4.0 {
            (lo * hi).sqrt()
        } else {
            0.5 * (lo + hi)
        };
        if mid <= lo || mid >= hi {
            break;
        }
        if above(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}
