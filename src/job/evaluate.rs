//! `revisit evaluate`: the value of any rates table on a page set, and the gap to the optimum of each
//! freshness objective at the same bandwidth, with and without politeness.

use std::time::Instant;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;
use xxhash_rust::xxh3::xxh3_128;

use super::arrange::{route, Reading};
use super::channel::{Reducer, Shuffle};
use super::config::PageArgs;
use super::load::load;
use super::worker::{progress, VERSION};
use crate::io::host_name::{host_of, normalize};
use crate::io::inputs;
use crate::io::rates_in::{self, InvalidRate};
use crate::io::rows::RowBatch;
use crate::objective::value::{HostValue, PolicyValue};
use crate::objective::{Objective, Response};
use crate::solve::price;
use crate::solve::reduce::{AllReduce, Combine};
use crate::solve::spend::prelude;
use crate::solve::sweep::value_at;

/// The objectives whose optimum `evaluate` compares with (their cost is a freshness measure).
const OBJECTIVES: [Objective; 3] = [
    Objective::Harmonic,
    Objective::Binary,
    Objective::BinaryFixed,
];
/// (url key, crawl rate) pairs in one message between workers.
const PAIRS_PER_MESSAGE: usize = 1 << 16;

/// Parameters of `revisit evaluate`.
#[derive(Clone, Debug, clap::Args)]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// The rates to evaluate: Parquet files, folders or globs (e.g. a run's out/rates), or a CSV file
    /// (name ending in .csv, with a header row). Columns: url, crawl_rate (fetches per day), and
    /// optionally host. Pages without a row get rate 0.
    #[arg(long, required = true, num_args = 1.., value_name = "PATH")]
    pub rates: Vec<String>,
    /// Bandwidth for the optima, fetches per day (default: the sum of the evaluated rates).
    #[arg(long, value_name = "FETCHES_PER_DAY")]
    pub bandwidth: Option<f64>,
    /// Print the report as JSON (for machines) instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl EvaluateArgs {
    /// Checks the parameters before any work starts.
    pub fn validate(&self) -> Result<()> {
        self.pages.validate()?;
        if let Some(r) = self.bandwidth {
            if !(r.is_finite() && r > 0.0) {
                bail!("--bandwidth must be a positive number of fetches per day, got {r}");
            }
        }
        Ok(())
    }
}

/// A policy's value by every measure.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Value {
    /// Harmonic staleness J_h (None: infinite, a changing page is never crawled).
    pub cost_harmonic: Option<f64>,
    /// Binary staleness J_b with Poisson crawls.
    pub cost_binary: f64,
    /// Binary staleness with evenly spaced crawls at the same rates.
    pub cost_fixed_interval: f64,
    /// Importance-weighted share of time fresh, Poisson crawls.
    pub freshness_poisson: f64,
    /// Importance-weighted share of time fresh, evenly spaced crawls.
    pub freshness_fixed_interval: f64,
    /// Pages that change and are never crawled.
    pub urls_starved: u64,
    /// Fetches per day the rates use.
    pub bandwidth: f64,
}

impl Value {
    fn of(v: &PolicyValue) -> Value {
        Value {
            cost_harmonic: v.harmonic_cost(),
            cost_binary: v.binary_cost(),
            cost_fixed_interval: v.fixed_interval_cost(),
            freshness_poisson: v.freshness_poisson(),
            freshness_fixed_interval: v.freshness_fixed_interval(),
            urls_starved: v.starved,
            bandwidth: v.bandwidth.value(),
        }
    }

    /// The cost the objective measures.
    pub fn cost(&self, objective: Objective) -> Option<f64> {
        match objective {
            Objective::Harmonic => self.cost_harmonic,
            Objective::Binary => Some(self.cost_binary),
            _ => Some(self.cost_fixed_interval),
        }
    }
}

/// One objective's optima at the evaluated bandwidth, and the evaluated rates' gap to them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Optimum {
    pub objective: String,
    /// The evaluated rates' cost under this objective.
    pub cost: Option<f64>,
    /// The optimum with every host's politeness cap.
    pub polite_cost: Option<f64>,
    /// The optimum with no caps (a lower bound for any polite policy).
    pub non_polite_cost: Option<f64>,
    /// cost / polite_cost - 1 (how much the evaluated rates lose to the polite optimum).
    pub gap_to_polite: Option<f64>,
    /// cost / non_polite_cost - 1.
    pub gap_to_non_polite: Option<f64>,
    /// polite_cost / non_polite_cost - 1: the price of politeness.
    pub price_of_politeness: Option<f64>,
    pub polite_rounds: u32,
    pub non_polite_rounds: u32,
}

/// What `evaluate` reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Evaluation {
    pub version: String,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    /// Rows of the rates table(s), valid or not.
    pub rates_rows: u64,
    /// Rates rows joined to a page.
    pub rates_matched: u64,
    /// Valid rates rows with no page of that URL (on the host the row names or its URL implies).
    pub rates_unmatched: u64,
    /// Rates rows repeating a URL (one of them is used: the lowest rate, whatever the file order).
    pub rates_duplicate: u64,
    /// Rates rows with no url or a crawl_rate that is missing, negative or not finite.
    pub rates_invalid: u64,
    /// The first invalid rates row, to fix.
    pub first_invalid: Option<InvalidRate>,
    /// Pages with no rates row (evaluated at rate 0).
    pub pages_without_rate: u64,
    /// Hosts whose evaluated rates exceed their politeness cap, and the largest rates/cap ratio.
    pub hosts_over_cap: u64,
    pub max_cap_ratio: f64,
    /// Bandwidth of the optima, fetches per day.
    pub bandwidth: f64,
    /// The evaluated rates' value.
    pub value: Value,
    pub optima: Vec<Optimum>,
    pub workers: usize,
    pub processes: usize,
    pub seconds: f64,
}

impl Evaluation {
    /// A report a person reads.
    pub fn human(&self) -> String {
        let show = |c: Option<f64>| c.map(|c| format!("{c:.6e}")).unwrap_or("inf".into());
        let pct = |g: Option<f64>| {
            g.map(|g| format!("{:+.4}%", 100.0 * g))
                .unwrap_or("-".into())
        };
        let v = &self.value;
        let mut s = format!(
            "revisit evaluate: {} pages, {} rates rows ({} matched, {} unmatched, {} duplicate, {} invalid); {} pages without a rate\n\
             evaluated rates: {:.6e} fetches/day; {} hosts over their cap (max rates/cap {:.4})\n\
             \x20 harmonic staleness J_h        {}\n\
             \x20 binary staleness J_b (Poisson) {:.6e}   fresh share {:.6}\n\
             \x20 binary staleness, even spacing {:.6e}   fresh share {:.6}\n\
             \x20 starved URLs (change, never crawled) {}\n\
             optima at {:.6e} fetches/day:\n  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>11}\n",
            self.urls,
            self.rates_rows,
            self.rates_matched,
            self.rates_unmatched,
            self.rates_duplicate,
            self.rates_invalid,
            self.pages_without_rate,
            v.bandwidth,
            self.hosts_over_cap,
            self.max_cap_ratio,
            show(v.cost_harmonic),
            v.cost_binary,
            v.freshness_poisson,
            v.cost_fixed_interval,
            v.freshness_fixed_interval,
            v.urls_starved,
            self.bandwidth,
            "objective",
            "these rates",
            "polite opt.",
            "no-caps opt.",
            "gap polite",
            "gap no caps",
            "politeness",
        );
        for o in &self.optima {
            s += &format!(
                "  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>11}\n",
                o.objective,
                show(o.cost),
                show(o.polite_cost),
                show(o.non_polite_cost),
                pct(o.gap_to_polite),
                pct(o.gap_to_non_polite),
                pct(o.price_of_politeness),
            );
        }
        if let Some(b) = &self.first_invalid {
            s += &format!(
                "first invalid rates row: {} row {} column {}\n",
                b.file, b.row, b.column
            );
        }
        s
    }
}

/// Runs worker `worker`'s share of an evaluation; worker 0 returns the report.
pub fn run_evaluate_worker(
    worker: &mut Worker,
    args: &EvaluateArgs,
    processes: usize,
) -> Result<Option<Evaluation>> {
    let started = Instant::now();
    let index = worker.index();
    let peers = worker.peers();
    let lead = index == 0;
    let say = progress(lead && !args.pages.quiet, started);
    let mut pages_channel = Shuffle::<RowBatch>::new(worker, "ByHost", |b| b.dest as u64);
    let mut rates_channel = Shuffle::<RatesMessage>::new(worker, "RatesByHost", |m| m.0 as u64);
    let mut reducer = Reducer::new(worker);
    let reading = Reading {
        objective: Objective::Harmonic,
        value_per_change: args.pages.value_per_change,
    };
    // Every worker opens the rates files first: a bad one fails everywhere before any data moves.
    let rate_files = rates_in::open_all(&inputs::expand(&args.rates)?)?;
    let loaded = load(&mut reducer, &mut pages_channel, &args.pages, reading, &say)?;

    // Read my units of the rates table; send each (url key, rate) to its host's worker.
    let units = rates_in::units(&rate_files);
    let mut outgoing: Vec<Vec<(u128, f64)>> = vec![Vec::new(); peers];
    let mut status = RatesStatus::default();
    for &unit in units.iter().skip(index).step_by(peers) {
        let result = rates_in::read_unit(
            &rate_files[unit.file],
            unit,
            |url, host, rate| {
                let host = match host {
                    Some(h) => normalize(h),
                    None => match host_of(url) {
                        Some(h) => h,
                        None => {
                            status.unmatched += 1; // no host: it cannot be any page's URL
                            return;
                        }
                    },
                };
                let dest = route(host.as_bytes(), peers) as usize;
                outgoing[dest].push((url_key(url.as_bytes()), rate));
                if outgoing[dest].len() >= PAIRS_PER_MESSAGE {
                    rates_channel.send((dest as u32, std::mem::take(&mut outgoing[dest])));
                }
            },
            |bad| {
                status.invalid += 1;
                if status.first_invalid.is_none() {
                    status.first_invalid = Some((unit.file as u64, bad));
                }
            },
        );
        match result {
            Ok(rows) => status.rows += rows,
            Err(e) => {
                status.error = Some(format!("{e:#}"));
                break;
            }
        }
        reducer.worker.step();
    }
    for (dest, pairs) in outgoing.into_iter().enumerate() {
        if !pairs.is_empty() {
            rates_channel.send((dest as u32, pairs));
        }
    }
    let received = rates_channel.finish_round(reducer.worker);
    let status = reducer.all_reduce(status);
    if let Some(e) = status.error {
        bail!(e);
    }
    say(format!("read {} rates rows; joining to pages", status.rows));

    // Join: the rates of my pages, by URL key, in a canonical order so duplicates resolve alike.
    let mut pairs: Vec<(u128, f64)> = received.into_iter().flat_map(|m| m.1).collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let before = pairs.len();
    pairs.dedup_by_key(|p| p.0);
    let mut join = Join {
        duplicate: (before - pairs.len()) as u64,
        ..Default::default()
    };
    let mut arranged = loaded.arranged;
    let mut arena = std::mem::take(&mut arranged.arena);
    let mut rates = vec![0.0; arena.pages()];
    let mut matched = vec![false; pairs.len()];
    let mut value = PolicyValue::default();
    for h in 0..arena.hosts() {
        let mut host = HostValue::default();
        let mut spend = 0.0;
        for i in arena.host_pages(h) {
            let key = url_key(arranged.url_bytes(i));
            if let Ok(k) = pairs.binary_search_by(|p| p.0.cmp(&key)) {
                rates[i] = pairs[k].1;
                matched[k] = true;
            } else {
                join.pages_without_rate += 1;
            }
            host.add(arena.page(i), rates[i], arranged.complete_obs[i]);
            spend += rates[i];
        }
        value.add_host(&host);
        let cap = arena.cap[h];
        // a relative margin of 1e-9: rates that meet a cap exactly are polite
        if spend > cap * (1.0 + 1e-9) {
            join.hosts_over_cap += 1;
        }
        if cap.is_finite() && cap > 0.0 {
            join.max_cap_ratio = join.max_cap_ratio.max(spend / cap);
        }
    }
    join.matched = matched.iter().filter(|&&m| m).count() as u64;
    join.unmatched = pairs.len() as u64 - join.matched;
    join.value = value;
    let join = reducer.all_reduce(join);
    let given = Value::of(&join.value);
    let bandwidth = args.bandwidth.unwrap_or(given.bandwidth);
    if bandwidth.is_nan() || bandwidth <= 0.0 {
        bail!(
            "the evaluated rates sum to {} fetches per day: nothing to compare with (give --bandwidth, or check that the rates table's URLs are the pages' URLs)",
            given.bandwidth
        );
    }

    // The optima of each objective at that bandwidth, with and without the hosts' caps.
    let polite_caps = arena.cap.clone();
    arena.slot_days = 1.0 / bandwidth;
    let mut optima = Vec::new();
    for objective in OBJECTIVES {
        for (k, &c) in arranged.complete_obs.iter().enumerate() {
            arena.response[k] = Response::of(objective, c);
        }
        let mut costs = [None, None];
        let mut rounds = [0, 0];
        for (slot, polite) in [true, false].into_iter().enumerate() {
            arena.cap = if polite {
                polite_caps.clone()
            } else {
                vec![f64::INFINITY; polite_caps.len()]
            };
            let pre = reducer.all_reduce(prelude(&arena));
            let s = price(
                &arena,
                bandwidth,
                &pre,
                pre.guess(bandwidth),
                &mut reducer,
                |_, _, _| {},
            );
            let v = value_at(&arena, &s, &arranged.complete_obs);
            let v = reducer.all_reduce(v);
            costs[slot] = Value::of(&v).cost(objective);
            rounds[slot] = s.rounds;
            say(format!(
                "{} optimum {}: {} rounds",
                objective.name(),
                if polite { "polite" } else { "without caps" },
                s.rounds
            ));
        }
        let cost = given.cost(objective);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b - 1.0),
            _ => None,
        };
        optima.push(Optimum {
            objective: objective.name().to_owned(),
            cost,
            polite_cost: costs[0],
            non_polite_cost: costs[1],
            gap_to_polite: ratio(cost, costs[0]),
            gap_to_non_polite: ratio(cost, costs[1]),
            price_of_politeness: ratio(costs[0], costs[1]),
            polite_rounds: rounds[0],
            non_polite_rounds: rounds[1],
        });
    }
    if !lead {
        return Ok(None);
    }
    let first_invalid = status.first_invalid.map(|(_, b)| b);
    Ok(Some(Evaluation {
        version: VERSION.to_owned(),
        urls: loaded.pages,
        rows_in: loaded.rows_in,
        rows_rejected: loaded.rejected_by_reason.iter().sum(),
        rates_rows: status.rows,
        rates_matched: join.matched,
        rates_unmatched: join.unmatched + status.unmatched,
        rates_duplicate: join.duplicate,
        rates_invalid: status.invalid,
        first_invalid,
        pages_without_rate: join.pages_without_rate,
        hosts_over_cap: join.hosts_over_cap,
        max_cap_ratio: join.max_cap_ratio,
        bandwidth,
        value: given,
        optima,
        workers: peers / processes,
        processes,
        seconds: started.elapsed().as_secs_f64(),
    }))
}

/// A message of (url key, crawl rate) pairs for one worker.
type RatesMessage = (u32, Vec<(u128, f64)>);

/// The join key of a URL: its 128-bit hash (a collision among 10^12 URLs has odds below 10^-14).
fn url_key(url: &[u8]) -> u128 {
    xxh3_128(url)
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct RatesStatus {
    error: Option<String>,
    rows: u64,
    invalid: u64,
    unmatched: u64,
    /// The first invalid row by (file, row).
    first_invalid: Option<(u64, InvalidRate)>,
}

impl Combine for RatesStatus {
    fn combine(&mut self, o: Self) {
        self.error = self.error.take().or(o.error);
        self.rows += o.rows;
        self.invalid += o.invalid;
        self.unmatched += o.unmatched;
        self.first_invalid = match (self.first_invalid.take(), o.first_invalid) {
            (Some(a), Some(b)) => Some(if (a.0, a.1.row) <= (b.0, b.1.row) {
                a
            } else {
                b
            }),
            (a, b) => a.or(b),
        };
    }
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct Join {
    value: PolicyValue,
    matched: u64,
    unmatched: u64,
    duplicate: u64,
    pages_without_rate: u64,
    hosts_over_cap: u64,
    max_cap_ratio: f64,
}

impl Combine for Join {
    fn combine(&mut self, o: Self) {
        self.value.combine(o.value);
        self.matched += o.matched;
        self.unmatched += o.unmatched;
        self.duplicate += o.duplicate;
        self.pages_without_rate += o.pages_without_rate;
        self.hosts_over_cap += o.hosts_over_cap;
        self.max_cap_ratio = self.max_cap_ratio.max(o.max_cap_ratio);
    }
}
