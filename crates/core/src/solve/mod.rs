//! The solver core: the global multiplier, per-host caps, and rates, on plain columns.
//!
//! A [`Problem`] (an objective, a bandwidth, caps or none, floors) on [`Pages`] built once; [`solve`]
//! is the whole method: one global multiplier nu with sum_h min(C_h, D_h(nu)) = R, then each capped
//! host's own theta_h >= nu with D_h(theta_h) = C_h. It asks its environment only for all-reduces,
//! so the same code runs on plain slices in tests ([`crate::reduce::Alone`]) and inside the
//! distributed job. [`optimum`] is an objective's optimum with and without politeness, valued;
//! [`sweep`] runs it over policies and bandwidths.

pub mod demand;
#[cfg(test)]
pub mod frontera;
pub mod host_cap;
pub mod host_prices;
pub mod kkt;
pub mod multiplier;
pub mod optimum;
pub mod pages;
pub mod problem;
#[cfg(test)]
pub mod reference;
pub mod sketch;
pub mod spend;
pub mod sweep;

use serde::{Deserialize, Serialize};

use crate::exact_sum::ExactSum;
use crate::memory::huge_pages;
use demand::{page_rate, rates_at, Demand};
use host_cap::{price_host, price_host_from};
use host_prices::{CappedHost, HostPrices};
use multiplier::{MultiplierSearch, Next};
use spend::{SpendPair, SpendPartial};

use crate::reduce::{AllReduce, Combine};
pub use pages::{Pages, PagesBuilder, PagesError};
pub use problem::{Problem, ProblemError};

/// Why a problem has no solution.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    #[error(transparent)]
    Problem(#[from] ProblemError),
    /// The pages' least rates (BLC-eps floors, max refetch intervals) take the whole bandwidth.
    #[error(
        "the pages' least rates (max refetch intervals, floors) need {needed:.1} fetches per \
         day within the hosts' caps, and the bandwidth is {bandwidth:.1}: raise the bandwidth \
         (--bandwidth) or the max interval (--max-interval, or the pages' max_interval_s)"
    )]
    Infeasible { needed: f64, bandwidth: f64 },
}

/// The solution on one worker's pages, with the global figures every worker agrees on.
#[derive(Clone, Debug)]
pub struct Solution {
    /// The global multiplier nu (0 when the bandwidth cannot all be used).
    pub multiplier: f64,
    /// Share of the steps at nu that is taken (binary objective with complete observations).
    pub fill: f64,
    /// Rounds of the global search (each one all-reduce).
    pub rounds: u32,
    /// Whether every search met its target (the global one, and every capped host's on every
    /// worker); false: a search stopped at its round cap, and the rates are not a solution.
    pub converged: bool,
    /// Fetches per day that pages and hosts could take at price 0 (may be +inf).
    pub max_spend: f64,
    /// Fetches per day the rates use in total (exact sum over all workers).
    pub bandwidth_used: f64,
    /// Per local host: its price, share, whether capped.
    pub hosts: HostPrices,
    /// Per local host: its budget (sum of its pages' rates), fetches per day.
    pub budgets: Vec<f64>,
    /// Per local page: its crawl rate per day.
    pub rates: Vec<f64>,
}

impl Solution {
    /// Local host `h`'s demand at nu (with nu's step share), fetches per day: its budget unless its
    /// cap binds.
    pub fn demand(&self, h: usize) -> f64 {
        self.hosts
            .capped_host(h)
            .map_or(self.budgets[h], |c| c.demand)
    }
}

/// Global figures of a solve, combined across workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Totals {
    used: ExactSum,
    /// Capped hosts whose own search stopped at its round cap.
    hosts_not_converged: u64,
}

impl Combine for Totals {
    fn combine(&mut self, other: Self) {
        self.used.merge(&other.used);
        self.hosts_not_converged += other.hosts_not_converged;
    }
}

/// Solves `problem` for this worker's rates (every worker calls it: the rounds are all-reduces).
///
/// `on_round(round, price, relative_gap)` is called after every global round (for progress reports).
pub fn solve<R: AllReduce>(
    problem: &Problem,
    reduce: &mut R,
    on_round: impl FnMut(u32, f64, f64),
) -> Result<Solution, SolveError> {
    let pre = reduce.all_reduce(spend::prelude(problem));
    let guess = pre.guess(problem.bandwidth());
    solve_from(problem, &pre, guess, reduce, on_round)
}

/// [`solve`] given the problem's global prelude (it depends on the pages and caps, not the bandwidth,
/// so a sweep computes it once) and a first price to try (a warm start from a nearby bandwidth).
pub fn solve_from<R: AllReduce>(
    problem: &Problem,
    pre: &spend::Prelude,
    guess: f64,
    reduce: &mut R,
    on_round: impl FnMut(u32, f64, f64),
) -> Result<Solution, SolveError> {
    let priced = price(problem, pre, guess, reduce, on_round)?;
    // fresh memory, written once in order: with 4 KiB pages the kernel's faults cost more than
    // the rates themselves on hosts of one page
    let mut rates: Vec<f64> = Vec::with_capacity(problem.pages().len());
    huge_pages(&rates);
    rates.resize(problem.pages().len(), 0.0);
    let mut budgets = Vec::with_capacity(problem.hosts());
    huge_pages(&budgets);
    let mut used = ExactSum::new();
    for (run, capped) in priced.hosts.runs() {
        let host_price = priced.hosts.get(run.start);
        let (price, fill) = (host_price.price, host_price.fill);
        if problem.is_bounded() {
            for h in run.clone() {
                for i in problem.host_pages(h) {
                    rates[i] = page_rate(problem, h, i, price, fill);
                }
            }
        } else {
            // a run of hosts at one price in one pass: on hosts of one page, a pass per host
            // costs more than the page
            let pages = problem.host_pages(run.start).start..problem.host_pages(run.end - 1).end;
            rates_at(problem, pages.clone(), price, fill, &mut rates[pages]);
        }
        let mut h = run.start;
        while h < run.end {
            // hosts of one page (the web's long tail) in a stretch: each budget is its page's
            // rate (0.0 + r, as the sum below gives), with no range to set up per host, and
            // summed a slice at a time
            let singles = match capped {
                None => one_page_hosts(problem.pages().offsets(), h..run.end),
                Some(_) => 0,
            };
            let first = problem.host_pages(h).start;
            let start = budgets.len();
            budgets.extend(rates[first..first + singles].iter().map(|&r| 0.0 + r));
            used.add_slice(&budgets[start..]);
            h += singles;
            if h == run.end {
                break;
            }
            let pages = problem.host_pages(h);
            let mut budget = 0.0;
            for &r in &rates[pages.clone()] {
                budget += r;
            }
            if capped.is_some() && budget > problem.cap(h) {
                budget = within_cap(&mut rates[pages], problem.cap(h));
            }
            used.add(budget);
            budgets.push(budget);
            h += 1;
        }
    }
    let hosts_not_converged = priced
        .hosts
        .capped()
        .iter()
        .filter(|c| !c.price.converged)
        .count() as u64;
    let totals = reduce.all_reduce(Totals {
        used,
        hosts_not_converged,
    });
    Ok(Solution {
        multiplier: priced.multiplier,
        fill: priced.fill,
        rounds: priced.rounds,
        converged: priced.converged && totals.hosts_not_converged == 0,
        max_spend: priced.max_spend,
        bandwidth_used: totals.used.value(),
        hosts: priced.hosts,
        budgets,
        rates,
    })
}

/// How many of `hosts`, from the first, have one page each (`offsets` as [`Pages::offsets`]).
pub(crate) fn one_page_hosts(offsets: &[usize], hosts: std::ops::Range<usize>) -> usize {
    let first = offsets[hosts.start];
    offsets[hosts.start + 1..=hosts.end]
        .iter()
        .zip(first + 1..)
        .take_while(|&(&o, k)| o == k)
        .count()
}

/// Scales a capped host's `rates` down until their sum, in order, is at most `cap` (rounding can put
/// the sum of rates priced exactly at the cap a few ulps above it); returns that sum.
fn within_cap(rates: &mut [f64], cap: f64) -> f64 {
    let original: Vec<f64> = rates.to_vec();
    let total: f64 = original.iter().sum();
    let mut factor = cap / total;
    loop {
        let mut sum = 0.0;
        for (r, &o) in rates.iter_mut().zip(&original) {
            *r = o * factor;
            sum += *r;
        }
        if sum <= cap {
            return sum;
        }
        factor = f64::from_bits(factor.to_bits() - 1);
    }
}

/// The prices of a solve: the global multiplier and every local host's own price.
#[derive(Clone, Debug)]
pub struct Priced {
    /// The global multiplier nu (0 when the bandwidth cannot all be used).
    pub multiplier: f64,
    /// Share of the steps at nu that is taken.
    pub fill: f64,
    /// Rounds of the global search.
    pub rounds: u32,
    /// Whether the global search met its target (false: it stopped at its round cap).
    pub converged: bool,
    /// Fetches per day that pages and hosts could take at price 0 (may be +inf).
    pub max_spend: f64,
    /// Per local host: its price, share, whether capped.
    pub hosts: HostPrices,
    /// The same hosts without their caps, evaluated at nu (None if nu was not the last price the
    /// search evaluated, or is 0): a free first observation for a solve without caps.
    pub uncapped: Option<Seed>,
}

/// A search's first observation obtained without a round: the global spend at a price and this
/// worker's host demands there.
#[derive(Clone, Debug)]
pub struct Seed {
    /// The combined spend of all workers at the price.
    pub spend: spend::SpendPartial,
    /// This worker's hosts whose caps the price may reach, with their demands there, by ascending
    /// host (as [`spend::spend_partial_keeping`] keeps them; more is harmless, each is priced
    /// against its cap, so the polite problem's list serves the problem without caps).
    pub binding: Vec<(usize, Demand)>,
}

/// Finds the global multiplier for the problem's bandwidth (rounds of all-reduce from `guess`),
/// then prices every local host: nu if its cap does not bind, else its own theta_h >= nu.
pub fn price<R: AllReduce>(
    problem: &Problem,
    pre: &spend::Prelude,
    guess: f64,
    reduce: &mut R,
    on_round: impl FnMut(u32, f64, f64),
) -> Result<Priced, SolveError> {
    price_seeded(problem, pre, guess, None, reduce, on_round)
}

/// [`price`], starting from `seed`: an observation of this problem's spend already made (it must be
/// exactly what [`spend::spend_partial_keeping`] would give at its price on this problem). The seed
/// saves the first round; the answer is the same as from any other start (within the tolerance).
pub fn price_seeded<R: AllReduce>(
    problem: &Problem,
    pre: &spend::Prelude,
    guess: f64,
    seed: Option<Seed>,
    reduce: &mut R,
    mut on_round: impl FnMut(u32, f64, f64),
) -> Result<Priced, SolveError> {
    let bandwidth = problem.bandwidth();
    let max_spend = pre.max_spend.value();
    let min_spend = pre.min_spend.value();
    // every worker sees the same totals, so every worker fails alike
    if min_spend >= bandwidth {
        return Err(SolveError::Infeasible {
            needed: min_spend,
            bandwidth,
        });
    }
    let (mut search, mut next) = MultiplierSearch::new(bandwidth, max_spend, guess);
    // the hosts a cap may bind at the latest price evaluated, reused when that price is the answer
    let mut binding = Vec::new();
    let mut evaluated = f64::NAN;
    // an observation in hand (the seed) is taken before any round
    let mut pending = None;
    let mut seeded = 0;
    if let (Next::Evaluate(_), Some(seed)) = (next, seed) {
        let p = seed.spend.price;
        if p > 0.0 && p.is_finite() {
            binding = seed.binding;
            evaluated = p;
            pending = Some(SpendPair {
                capped: seed.spend,
                uncapped: SpendPartial::default(),
            });
            seeded = 1;
        }
    }
    let mut last: Option<SpendPair> = None;
    let (multiplier, fill) = loop {
        let total = match (pending.take(), next) {
            (Some(total), _) => total,
            (None, Next::Evaluate(price)) => {
                let total =
                    reduce.all_reduce(spend::spend_partial_keeping(problem, price, &mut binding));
                evaluated = price;
                on_round(
                    search.rounds() + 1 - seeded,
                    price,
                    (total.capped.right.value() - bandwidth) / bandwidth,
                );
                total
            }
            (None, Next::Converged(o)) => break (o.price, 1.0), // price 0: every page at its largest rate
        };
        let price = total.capped.price;
        next = search.observe(total.capped.observation());
        if let Next::Converged(c) = next {
            // at the round cap the search answers its best observation, maybe an earlier one
            let fill = if c.price == price {
                total.capped.tie_fill(bandwidth)
            } else {
                reduce
                    .all_reduce(spend::spend_partial(problem, c.price))
                    .tie_fill(bandwidth)
            };
            last = Some(total);
            break (c.price, fill);
        }
    };
    let capped: Vec<CappedHost> = if evaluated == multiplier {
        binding
            .iter()
            .filter_map(|(h, d)| price_host_from(problem, *h, multiplier, fill, d))
            .collect()
    } else {
        binding.clear();
        (0..problem.hosts())
            .filter_map(|h| price_host(problem, h, multiplier, fill))
            .collect()
    };
    let hosts = HostPrices::new(problem.hosts(), multiplier, fill, capped);
    // the seed's pair carries no uncapped half: a seeded search ending on its seed gives no seed on
    let uncapped = match last {
        Some(pair) if evaluated == multiplier && multiplier > 0.0 && pair.uncapped.price > 0.0 => {
            Some(Seed {
                spend: pair.uncapped,
                binding,
            })
        }
        _ => None,
    };
    Ok(Priced {
        multiplier,
        fill,
        rounds: search.rounds() - seeded,
        converged: !search.exhausted(),
        max_spend,
        hosts,
        uncapped,
    })
}

// the tests compare rates page by page against references indexed alike
#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod objectives_tests;
#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests;
