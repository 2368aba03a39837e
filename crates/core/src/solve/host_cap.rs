//! A capped host's own multiplier: theta_h >= nu with D_h(theta_h) = C_h (the local 1-D
//! solve), found by the same search as the global multiplier, on the host's pages alone.

use super::demand::{demand, Demand};
use super::host_prices::CappedHost;
use super::multiplier::{MultiplierSearch, Next, Observation};
use super::problem::Problem;

/// The price and step share at which a host's pages are rated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostPrice {
    /// The host's multiplier theta_h (= nu unless capped).
    pub price: f64,
    /// Share of the steps sitting exactly at `price` that is taken.
    pub fill: f64,
    /// Whether the politeness cap binds (theta_h >= nu solves D_h = C_h).
    pub capped: bool,
    /// Local evaluations used to find theta_h.
    pub rounds: u32,
    /// Whether theta_h met the cap (false: its search stopped at its round cap).
    pub converged: bool,
}

/// Prices host `h` given the global multiplier `nu` and the global step share `fill`: None if its
/// cap does not bind (it is priced at nu).
pub fn price_host(problem: &Problem, h: usize, nu: f64, fill: f64) -> Option<CappedHost> {
    price_host_from(problem, h, nu, fill, &demand(problem, h, nu))
}

/// [`price_host`] given the host's demand `d` at `nu` (as the last round of the search computed it:
/// the local search starts from it, without a pass over the host's pages to find it again).
pub fn price_host_from(
    problem: &Problem,
    h: usize,
    nu: f64,
    fill: f64,
    d: &Demand,
) -> Option<CappedHost> {
    let cap = problem.cap(h);
    // (no step at nu: the demand as it is, also when it is unbounded, at nu = 0)
    let at_nu = if d.left == d.right {
        d.right
    } else {
        d.right + fill * (d.left - d.right)
    };
    if at_nu <= cap {
        return None;
    }
    let observation = |price: f64, d: &Demand| Observation {
        price,
        right: d.right,
        left: d.left,
        slope: d.slope,
        next_above: d.next_above,
        next_below: d.next_below,
    };
    let observe = |price: f64| observation(price, &demand(problem, h, price));
    let (mut search, mut next) = MultiplierSearch::from_below(cap, observation(nu, d));
    loop {
        match next {
            Next::Evaluate(price) => next = search.observe(observe(price)),
            Next::Converged(o) => {
                let local_fill = if o.left > o.right {
                    ((cap - o.right) / (o.left - o.right)).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                return Some(CappedHost {
                    host: h,
                    price: HostPrice {
                        price: o.price,
                        fill: local_fill,
                        capped: true,
                        rounds: search.rounds(),
                        converged: !search.exhausted(),
                    },
                    demand: at_nu,
                });
            }
        }
    }
}
