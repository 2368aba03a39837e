//! Independent reference solvers for cross-checks: the papers' sort-based algorithm and brute force.
//!
//! They share nothing with the production search except the per-page response formulas (which are
//! checked against their first-order conditions on their own).

use super::problem::Problem;

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

/// Azar et al. Algorithm 1 (PNAS'18): the exact optimum of discrete-time binary freshness
/// (Problem 1: maximise sum mu_i p_i / (p_i + Delta_i - p_i Delta_i), sum p = 1, p >= 0) by sorting
/// pages by mu/Delta. Takes per-slot change probabilities 0 < Delta_i < 1; returns p per slot.
///
/// OCR: our copy lost lines 4-9 of Algorithm 1 (only "4. if mu_i/Delta_i < (T/(1+S))^2 then 5. p_i
/// <- 0" survives, itself garbled) and step 2's sums and Eq. 10 are unreadable. Restored from Eq. 9,
/// p_i = (sqrt(mu_i Delta_i / L) - Delta_i)/(1 - Delta_i) with multiplier L, and sum p = 1, which give
/// L = (T/(1+S))^2 with T = sum sqrt(mu_i Delta_i)/(1-Delta_i), S = sum Delta_i/(1-Delta_i), and the
/// loop of Algorithm 2 (printed whole) with R replaced by 1:
///   for i = 1..n: if mu_i/Delta_i < (T/(1+S))^2 then p_i = 0, T -= sqrt(mu_i Delta_i)/(1-Delta_i),
///   S -= Delta_i/(1-Delta_i); else p_i = (sqrt(mu_i Delta_i)(1+S)/T - Delta_i)/(1-Delta_i).
/// Written as printed, one pass: once a page passes the test every later page does (the threshold
/// only falls as pages leave), so T and S are final when the first rate is computed. p_i <= 1 needs
/// no clip: the p are non-negative and sum to 1.
pub fn azar_problem1(importance: &[f64], change_prob: &[f64]) -> Vec<f64> {
    let n = importance.len();
    let mut order: Vec<usize> = (0..n).filter(|&i| change_prob[i] > 0.0).collect();
    order.sort_by(|&a, &b| {
        (importance[a] / change_prob[a]).total_cmp(&(importance[b] / change_prob[b]))
    });
    let root = |i: usize| (importance[i] * change_prob[i]).sqrt() / (1.0 - change_prob[i]);
    let odds = |i: usize| change_prob[i] / (1.0 - change_prob[i]);
    let mut t: f64 = order.iter().map(|&i| root(i)).sum();
    let mut s: f64 = order.iter().map(|&i| odds(i)).sum();
    let mut p = vec![0.0; n];
    for &i in &order {
        if importance[i] / change_prob[i] < (t / (1.0 + s)).powi(2) {
            p[i] = 0.0;
            t -= root(i);
            s -= odds(i);
        } else {
            let d = change_prob[i];
            p[i] = ((importance[i] * d).sqrt() * (1.0 + s) / t - d) / (1.0 - d);
        }
    }
    p
}

/// Fixed-interval binary freshness without caps (mu (rho/lambda)(1 - e^(-lambda/rho))) by nested
/// bisection on the first-order condition alone: no Lambert W, no series, nothing shared with the
/// production response. Returns (rates, nu).
pub fn fixed_interval_bisection(
    importance: &[f64],
    change_rate: &[f64],
    bandwidth: f64,
) -> (Vec<f64>, f64) {
    // marginal utility (mu/lambda)(1 - (1+x)e^-x), x = lambda/rho, written with expm1
    let marginal = |i: usize, rho: f64| -> f64 {
        let x = change_rate[i] / rho;
        (importance[i] / change_rate[i]) * (-(-x).exp_m1() - x * (-x).exp())
    };
    let rate = |i: usize, theta: f64| -> f64 {
        if change_rate[i] <= 0.0 || theta >= importance[i] / change_rate[i] {
            return 0.0;
        }
        bisect(1e-300, |rho| marginal(i, rho) > theta)
    };
    let spend = |theta: f64| -> f64 { (0..importance.len()).map(|i| rate(i, theta)).sum() };
    let nu = bisect(0.0, |p| spend(p) > bandwidth);
    ((0..importance.len()).map(|i| rate(i, nu)).collect(), nu)
}

/// Proportional rates rho_i = w_i / nu under host caps, by sorting hosts (no multiplier search):
/// hosts are capped in decreasing order of W_h / C_h (W_h = their pages' total weight); with the k
/// first capped, nu = (sum of the others' W) / (R - sum of the first k caps), and k is the first
/// count at which the next host fits under its cap. A capped host shares its cap in proportion to w.
pub fn water_filling(problem: &Problem, weight: impl Fn(usize) -> f64) -> Vec<f64> {
    let bandwidth = problem.bandwidth();
    let w_host: Vec<f64> = (0..problem.hosts())
        .map(|h| problem.host_pages(h).map(&weight).sum())
        .collect();
    let mut order: Vec<usize> = (0..problem.hosts()).filter(|&h| w_host[h] > 0.0).collect();
    order.sort_by(|&a, &b| (w_host[b] / problem.cap(b)).total_cmp(&(w_host[a] / problem.cap(a))));
    let mut capped_caps = 0.0;
    let mut free_weight: f64 = order.iter().map(|&h| w_host[h]).sum();
    let mut capped = vec![false; problem.hosts()];
    let mut nu = 0.0;
    for &h in &order {
        let left = bandwidth - capped_caps;
        if left <= 0.0 {
            nu = 0.0;
            capped[h] = true;
            continue;
        }
        let candidate = free_weight / left;
        if w_host[h] / candidate <= problem.cap(h) {
            nu = candidate;
            break;
        }
        capped[h] = true;
        capped_caps += problem.cap(h);
        free_weight -= w_host[h];
        nu = 0.0; // every host so far capped: nu stays 0 unless a later host fits
    }
    let mut rates = vec![0.0; problem.pages().len()];
    for h in 0..problem.hosts() {
        for i in problem.host_pages(h) {
            rates[i] = if w_host[h] <= 0.0 {
                0.0
            } else if capped[h] || nu == 0.0 {
                problem.cap(h) * (weight(i) / w_host[h])
            } else {
                weight(i) / nu
            };
        }
    }
    rates
}

/// BLC-eps as the NeurIPS'19 supplement (§9) describes it: solve BLC (Algorithm 2), give every page
/// below eps R/|W| exactly that floor, and re-solve BLC once over the other pages with what is left.
///
/// One pass, not a fixed point: a page kept in the re-solve gets a lower rate than before (less
/// bandwidth for it) and may end below the floor, even at 0. revisit's `--floor` instead solves
/// max J subject to rho >= eps R/|W| exactly (box constraints in the one multiplier search); both
/// give the same rates when no re-solved page falls under the floor.
pub fn blc_eps_one_pass(
    importance: &[f64],
    change_rate: &[f64],
    bandwidth: f64,
    eps: f64,
) -> Vec<f64> {
    let n = importance.len();
    let floor = eps * bandwidth / n as f64;
    let first = azar_problem2(importance, change_rate, bandwidth);
    let low: Vec<bool> = first.iter().map(|&r| r < floor).collect();
    let kept: Vec<usize> = (0..n).filter(|&i| !low[i]).collect();
    let left = bandwidth - floor * (n - kept.len()) as f64;
    let mu: Vec<f64> = kept.iter().map(|&i| importance[i]).collect();
    let lambda: Vec<f64> = kept.iter().map(|&i| change_rate[i]).collect();
    let second = azar_problem2(&mu, &lambda, left);
    let mut rates = vec![floor; n];
    for (k, &i) in kept.iter().enumerate() {
        rates[i] = second[k];
    }
    rates
}

/// Brute force: nested bisection (200 halvings each) on the global price and on each capped host's
/// price, evaluating plain sums of the responses clipped to each page's box. Slow and simple;
/// returns (rates, host prices, nu).
pub fn bisection(problem: &Problem) -> (Vec<f64>, Vec<f64>, f64) {
    let bandwidth = problem.bandwidth();
    let rate = |h: usize, i: usize, price: f64| -> f64 {
        let (lo, hi) = problem.bounds(h, i);
        problem
            .response(i)
            .rate(problem.page(i), price)
            .max(lo)
            .min(hi)
    };
    let host_demand =
        |h: usize, price: f64| -> f64 { problem.host_pages(h).map(|i| rate(h, i, price)).sum() };
    let host_price = |h: usize, nu: f64| -> f64 {
        if host_demand(h, nu) <= problem.cap(h) {
            return nu;
        }
        bisect(nu, |p| host_demand(h, p) > problem.cap(h))
    };
    let spend = |nu: f64| -> f64 {
        (0..problem.hosts())
            .map(|h| host_demand(h, nu).min(problem.cap(h)))
            .sum()
    };
    let max_spend = spend(0.0);
    let nu = if max_spend <= bandwidth {
        0.0
    } else {
        bisect(0.0, |p| spend(p) > bandwidth)
    };
    let prices: Vec<f64> = (0..problem.hosts()).map(|h| host_price(h, nu)).collect();
    let mut rates = vec![0.0; problem.pages().len()];
    for (h, &price) in prices.iter().enumerate() {
        for i in problem.host_pages(h) {
            rates[i] = rate(h, i, price);
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
