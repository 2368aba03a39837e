//! Direct checks of the Karush-Kuhn-Tucker conditions of a solution: what makes rates optimal,
//! tested without trusting the code that found them.

use super::problem::Problem;

/// Relative tolerance of the checks.
pub const KKT_TOLERANCE: f64 = 1e-9;

/// Every violated optimality or feasibility condition of `rates` with host prices `host_price`,
/// and global multiplier `nu` for `problem`; empty when the rates are optimal.
pub fn violations(problem: &Problem, rates: &[f64], host_price: &[f64], nu: f64) -> Vec<String> {
    let bandwidth = problem.bandwidth();
    let tol = KKT_TOLERANCE;
    let mut bad = Vec::new();
    let mut total = 0.0;
    for (h, &theta) in host_price.iter().enumerate().take(problem.hosts()) {
        let cap = problem.cap(h);
        let mut spend = 0.0;
        for i in problem.host_pages(h) {
            let (page, response) = (problem.page(i), problem.response(i));
            let (lo, hi) = problem.bounds(h, i);
            let r = rates[i];
            spend += r;
            if !(r >= lo * (1.0 - tol) && r <= hi * (1.0 + tol)) {
                bad.push(format!("page {i}: rate {r} outside [{lo}, {hi}]"));
                continue;
            }
            if hi <= lo {
                continue; // a fixed rate: nothing to choose
            }
            let marginal = response.marginal(page, r);
            let at_lower = r <= lo * (1.0 + tol);
            let at_upper = r >= hi * (1.0 - tol);
            if at_lower {
                if marginal > theta * (1.0 + tol) {
                    bad.push(format!("page {i}: at its floor {lo} with marginal utility {marginal} > price {theta}"));
                }
            } else if at_upper {
                if marginal < theta * (1.0 - tol) {
                    bad.push(format!(
                        "page {i}: at its bound with marginal utility {marginal} < price {theta}"
                    ));
                }
            } else if ((marginal - theta) / theta).abs() > tol {
                bad.push(format!(
                    "page {i}: interior rate {r} with marginal utility {marginal} != price {theta}"
                ));
            }
        }
        total += spend;
        if spend > cap * (1.0 + tol) {
            bad.push(format!("host {h}: spend {spend} above its cap {cap}"));
        }
        if theta < nu * (1.0 - tol) {
            bad.push(format!(
                "host {h}: price {theta} below the global multiplier {nu}"
            ));
        }
        if theta > nu * (1.0 + tol) && spend < cap * (1.0 - tol) {
            bad.push(format!(
                "host {h}: price {theta} above nu {nu} but spend {spend} under its cap {cap}"
            ));
        }
    }
    if nu > 0.0 && ((total - bandwidth) / bandwidth).abs() > 1e-12 {
        bad.push(format!("total spend {total} != bandwidth {bandwidth}"));
    }
    if nu == 0.0 && total > bandwidth * (1.0 + 1e-12) {
        bad.push(format!("total spend {total} above bandwidth {bandwidth}"));
    }
    bad
}
