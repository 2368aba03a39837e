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
use revisit_core::exact_sum::ExactSum;
use crate::io::host_name::{host_of, normalize};
use crate::io::inputs;
use crate::io::rates_in::{self, InvalidRate, RatesUnit};
use crate::io::rows::RowBatch;
use revisit_core::objective::value::{HostValue, PolicyValue};
use revisit_core::objective::{Objective, Response};
use revisit_core::fetch_time::{set_figures, FetchTime, PageTerms, SetFigures};
use revisit_core::solve::price;
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::solve::spend::prelude;
use revisit_core::solve::sweep::value_at;
use revisit_core::units::SECONDS_PER_DAY;

/// The objectives whose optimum `evaluate` compares with (their cost is a freshness measure).
pub(super) const OBJECTIVES: [Objective; 3] = [
    Objective::Harmonic,
    Objective::Binary,
    Objective::BinaryFixed,
];
/// (url key, crawl rate) pairs in one message between workers.
pub(super) const PAIRS_PER_MESSAGE: usize = 1 << 16;

/// Parameters of `revisit evaluate`: exactly one table to value, rates or visits.
#[derive(Clone, Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("table").required(true).multiple(false).args(["rates", "visits"])))]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// The rates to evaluate: Parquet files, folders or globs (e.g. a run's out/rates), or a CSV file
    /// (name ending in .csv, with a header row). Columns: url, crawl_rate (fetches per day), and
    /// optionally host. Pages without a row get rate 0.
    #[arg(long, num_args = 1.., value_name = "PATH")]
    pub rates: Vec<String>,
    /// A timetable to evaluate instead of rates: Parquet files, folders or globs (e.g. a run's
    /// out/visits from `run --timetable`). Columns: at_s (seconds from the horizon start, in
    /// [0, horizon)), url, and optionally host; the visits repeat every horizon. The horizon is the
    /// files' revisit.horizon_s metadata, else --horizon-s. Valued exactly per URL (Liu & Nain
    /// Lemma 3), with the hosts' politeness checked on the visit times (the wrap-around included).
    #[arg(long, num_args = 1.., value_name = "PATH")]
    pub visits: Vec<String>,
    /// Bandwidth for the optima, fetches per day (default: the sum of the evaluated rates, or the
    /// visits per day of a timetable).
    #[arg(long, value_name = "FETCHES_PER_DAY")]
    pub bandwidth: Option<f64>,
    /// Print the report as JSON (for machines) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also value the rates when every fetch takes a random time (Liu & Nain §1.3): SPEC is
    /// const:SECONDS, exp:MEAN_SECONDS, or a CSV (.csv, header row) or Parquet file of measured
    /// fetch durations in seconds (column fetch_time_s, or the file's only column). The model is
    /// one crawler fetching back to back: it does 86400/E[X] fetches per day whatever the table's
    /// total, and gives page i the share f_i = crawl_rate_i / (sum of crawl_rate) of them (with
    /// --visits: visits_i / (sum of visits)); change
    /// rates are taken per second (change_rate / 86400). Reports the obsolescence (share of time
    /// out of date), per URL and weighted by change rate, under randomized accessing (Lemma 4),
    /// its lower bound for any accessing order (Prop. 9), the best bound over all shares
    /// (f_i ~ ln(1/h_i), eq. 1.30; eq. 1.26) and the best randomized shares (f_i ~ 1/h_i - 1,
    /// eq. 1.31). Pages without a rate are never fetched: obsolete all the time. An empirical law
    /// costs a pass over its sample per page: a few thousand durations are plenty.
    #[arg(long, value_name = "SPEC")]
    pub fetch_time: Option<String>,
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

/// What `evaluate` prints: a rates table's report or a timetable's (same top-level keys).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Report {
    Rates(Evaluation),
    Visits(super::evaluate_visits::VisitsEvaluation),
}

impl Report {
    /// A report a person reads.
    pub fn human(&self) -> String {
        match self {
            Report::Rates(r) => r.human(),
            Report::Visits(v) => v.human(),
        }
    }
}

/// A policy's value by every measure.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
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
    /// With `--fetch-time`: the rates valued under random fetch times (None without the flag).
    pub fetch_time: Option<FetchTimeReport>,
    pub workers: usize,
    pub processes: usize,
    pub seconds: f64,
}

/// The rates valued under random fetch times (Liu & Nain §1.3; `--fetch-time`).
///
/// Mapping from a rates table to the chapter's model of ONE crawler fetching back to back with
/// i.i.d. fetch times X (seconds): page i gets the share f_i = crawl_rate_i / Σ crawl_rate of the
/// fetches (over pages with a rate; pages without one get f_i = 0 and are obsolete all the time),
/// and changes at μ_i = change_rate_i / 86400 per second. The crawler's throughput is fixed by X,
/// 86400 / E[X] fetches per day; only the table's shares matter, so a table planned for a different
/// bandwidth is valued at this one: compare `throughput_per_day` with `table_rate_per_day`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FetchTimeReport {
    /// The `--fetch-time` spec as given.
    pub spec: String,
    /// `constant`, `exponential` or `empirical`.
    pub law: String,
    /// Measured durations of an empirical law.
    pub samples: Option<u64>,
    /// E[X], seconds.
    pub mean_fetch_s: f64,
    /// Fetches per day of one crawler fetching back to back: 86400 / E[X].
    pub throughput_per_day: f64,
    /// Σ crawl_rate of the evaluated table, fetches per day.
    pub table_rate_per_day: f64,
    /// Obsolescence figures: `randomized` (Lemma 4), `lower_bound` (Prop. 9), `optimal_bound`
    /// (eq. 1.30), `optimal_bound_eq126`, `randomized_optimal` (eq. 1.31).
    #[serde(flatten)]
    pub figures: SetFigures,
    /// Pages that change.
    pub pages_changing: u64,
    /// Changing pages with no rate (or rate 0): never fetched, obsolete all the time (r_i = 1).
    pub pages_without_rate: u64,
}

impl FetchTimeReport {
    pub(super) fn human(&self) -> String {
        let show = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.6}"));
        let law = match self.samples {
            Some(n) => format!("{} ({n} measured durations)", self.law),
            None => self.law.clone(),
        };
        let f = &self.figures;
        let mut s = format!(
            "random fetch times (Liu & Nain §1.3; one crawler fetching back to back, page shares from the table):\n\
             \x20 --fetch-time {}: {law}, mean {:.6} s -> {:.6e} fetches/day; the table plans {:.6e} fetches/day ({:.4}x)\n\
             \x20 obsolescence (share of time out of date)       per URL   by change rate\n",
            self.spec,
            self.mean_fetch_s,
            self.throughput_per_day,
            self.table_rate_per_day,
            self.table_rate_per_day / self.throughput_per_day,
        );
        for (name, o) in [
            ("randomized, table's shares (Lemma 4)", f.randomized),
            ("lower bound, table's shares (Prop. 9)", f.lower_bound),
            ("best bound, f ~ ln(1/h) (eq. 1.30)", f.optimal_bound),
            (
                "best randomized, f ~ 1/h - 1 (eq. 1.31)",
                f.randomized_optimal,
            ),
        ] {
            s += &format!(
                "  {name:<44} {:>9} {:>14}\n",
                show(o.per_url),
                show(o.change_weighted)
            );
        }
        s += &format!(
            "  {:<44} {:>9} {:>14}\n\
             \x20 {} of {} changing pages have no rate: never fetched, obsolete all the time\n",
            "floor for any policy and shares (eq. 1.26)",
            "-",
            show(f.optimal_bound_eq126),
            self.pages_without_rate,
            self.pages_changing,
        );
        s
    }
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
        if let Some(f) = &self.fetch_time {
            s += &f.human();
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
    fetch: Option<&FetchTime>,
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
    let mine: Vec<RatesUnit> = units.iter().copied().skip(index).step_by(peers).collect();
    let (received, status) = route_keyed(
        &mut reducer,
        &mut rates_channel,
        &mine,
        |u| u.file,
        |unit, row, invalid| rates_in::read_unit(&rate_files[unit.file], unit, row, invalid),
    )?;
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

    // Under random fetch times the table only gives shares, so Σρ (all-reduced above) must be
    // known before any page's f_i: one more pass over my pages, then one all-reduce.
    let fetch_sums = match fetch {
        Some(fetch) => {
            let sums = reducer.all_reduce(fetch_time_sums(fetch, &arena, &rates, given.bandwidth));
            // Every worker fails together after the all-reduce: one failing alone would leave
            // the others waiting in it.
            if let Some(e) = sums.error {
                bail!(e);
            }
            Some(sums)
        }
        None => None,
    };

    // The optima of each objective at that bandwidth, with and without the hosts' caps.
    let (optima, _) = optima(
        &mut arena,
        &arranged.complete_obs,
        bandwidth,
        &mut reducer,
        |o| given.cost(o),
        &say,
    );
    if !lead {
        return Ok(None);
    }
    let first_invalid = status.first_invalid.map(|(_, b)| b);
    let fetch_time = match (fetch, fetch_sums) {
        (Some(fetch), Some(sums)) => Some(fetch_time_report(
            args,
            fetch,
            &sums,
            loaded.pages,
            given.bandwidth,
        )),
        _ => None,
    };
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
        fetch_time,
        workers: peers / processes,
        processes,
        seconds: started.elapsed().as_secs_f64(),
    }))
}

/// The optimum of every objective of [`OBJECTIVES`] at `bandwidth`, polite (the arena's caps) and
/// without caps, beside `cost(objective)`, the evaluated policy's cost by that objective's measure.
/// Also returns each optimum's full value, [polite, without caps] per objective. Every worker calls
/// it (the multiplier searches are all-reduces); `arena`'s responses are left at the last objective.
pub(super) fn optima(
    arena: &mut revisit_core::solve::arena::Arena,
    complete_obs: &[bool],
    bandwidth: f64,
    reducer: &mut Reducer<'_>,
    cost: impl Fn(Objective) -> Option<f64>,
    say: &dyn Fn(String),
) -> (Vec<Optimum>, Vec<[Value; 2]>) {
    let polite_caps = arena.cap.clone();
    arena.slot_days = 1.0 / bandwidth;
    let mut optima = Vec::new();
    let mut values = Vec::new();
    for objective in OBJECTIVES {
        for (k, &c) in complete_obs.iter().enumerate() {
            arena.response[k] = Response::of(objective, c);
        }
        let mut costs = [None, None];
        let mut rounds = [0, 0];
        let mut both: [Value; 2] = Default::default();
        for (slot, polite) in [true, false].into_iter().enumerate() {
            arena.cap = if polite {
                polite_caps.clone()
            } else {
                vec![f64::INFINITY; polite_caps.len()]
            };
            let pre = reducer.all_reduce(prelude(arena));
            let s = price(
                arena,
                bandwidth,
                &pre,
                pre.guess(bandwidth),
                reducer,
                |_, _, _| {},
            );
            let v = value_at(arena, &s, complete_obs);
            let v = Value::of(&reducer.all_reduce(v));
            costs[slot] = v.cost(objective);
            rounds[slot] = s.rounds;
            both[slot] = v;
            say(format!(
                "{} optimum {}: {} rounds",
                objective.name(),
                if polite { "polite" } else { "without caps" },
                s.rounds
            ));
        }
        arena.cap = polite_caps.clone();
        let cost = cost(objective);
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
        values.push(both);
    }
    (optima, values)
}

/// My pages' §1.3 terms, summed in page order per host and exactly across hosts (so every worker
/// count gives the same figures); `total_rate` is the table's Σρ over all workers.
pub(super) fn fetch_time_sums(
    fetch: &FetchTime,
    arena: &revisit_core::solve::arena::Arena,
    rates: &[f64],
    total_rate: f64,
) -> FetchSums {
    let mut sums = FetchSums::default();
    for h in 0..arena.hosts() {
        let mut host = PageTerms::default();
        for i in arena.host_pages(h) {
            // f_i is page i's share of the one crawler's fetches; μ_i per second to match X.
            let share = if total_rate > 0.0 {
                (rates[i] / total_rate).min(1.0)
            } else {
                0.0
            };
            let per_second = arena.change_rate[i] / SECONDS_PER_DAY;
            match PageTerms::of(fetch, per_second, share) {
                Ok(terms) => host.add(&terms),
                Err(e) => {
                    sums.error.get_or_insert(format!("--fetch-time: {e:#}"));
                }
            }
        }
        for (sum, x) in sums.terms.iter_mut().zip(host.to_array()) {
            sum.add(x);
        }
    }
    sums
}

pub(super) fn fetch_time_report(
    args: &EvaluateArgs,
    fetch: &FetchTime,
    sums: &FetchSums,
    urls: u64,
    table_rate: f64,
) -> FetchTimeReport {
    let totals = PageTerms::from_array(std::array::from_fn(|k| sums.terms[k].value()));
    let (law, samples) = match fetch {
        FetchTime::Constant { .. } => ("constant", None),
        FetchTime::Exponential { .. } => ("exponential", None),
        FetchTime::Empirical { samples } => ("empirical", Some(samples.len() as u64)),
    };
    FetchTimeReport {
        spec: args.fetch_time.clone().unwrap_or_default(),
        law: law.to_owned(),
        samples,
        mean_fetch_s: fetch.mean(),
        throughput_per_day: SECONDS_PER_DAY / fetch.mean(),
        table_rate_per_day: table_rate,
        figures: set_figures(fetch, &totals, urls),
        // The counts are sums of 0/1 terms, exact in f64 far beyond 2^32 pages.
        pages_changing: totals.changing as u64,
        pages_without_rate: totals.never_fetched as u64,
    }
}

/// Exact sums of every [`PageTerms`] field, one accumulator per field.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(super) struct FetchSums {
    terms: [ExactSum; PageTerms::LEN],
    /// A page whose terms could not be computed (an invalid change rate or share).
    pub(super) error: Option<String>,
}

impl Combine for FetchSums {
    fn combine(&mut self, o: Self) {
        self.error = self.error.take().or(o.error);
        for (a, b) in self.terms.iter_mut().zip(&o.terms) {
            a.merge(b);
        }
    }
}

/// A message of (url key, crawl rate) pairs for one worker.
pub(super) type RatesMessage = (u32, Vec<(u128, f64)>);

/// The join key of a URL: its 128-bit hash (a collision among 10^12 URLs has odds below 10^-14).
pub(super) fn url_key(url: &[u8]) -> u128 {
    xxh3_128(url)
}

/// Reads `units` of a (url, host, value) table with `read_unit` and sends each (url key, value) to
/// the worker of its host (the host column, else the URL's); returns what this worker received
/// and the read status every worker agrees on. Fails alike on every worker.
pub(super) fn route_keyed<U: Copy>(
    reducer: &mut Reducer<'_>,
    channel: &mut Shuffle<RatesMessage>,
    units: &[U],
    file_of: impl Fn(&U) -> usize,
    mut read_unit: impl FnMut(
        U,
        &mut dyn FnMut(&str, Option<&str>, f64),
        &mut dyn FnMut(InvalidRate),
    ) -> Result<u64>,
) -> Result<(Vec<RatesMessage>, RatesStatus)> {
    let peers = reducer.worker.peers();
    let mut outgoing: Vec<Vec<(u128, f64)>> = vec![Vec::new(); peers];
    let mut status = RatesStatus::default();
    for &unit in units {
        let file = file_of(&unit) as u64;
        let (mut unmatched, mut invalid, mut first_invalid) = (0, 0, None);
        let result = read_unit(
            unit,
            &mut |url, host, value| {
                let host = match host {
                    Some(h) => normalize(h),
                    None => match host_of(url) {
                        Some(h) => h,
                        None => {
                            unmatched += 1; // no host: it cannot be any page's URL
                            return;
                        }
                    },
                };
                let dest = route(host.as_bytes(), peers) as usize;
                outgoing[dest].push((url_key(url.as_bytes()), value));
                if outgoing[dest].len() >= PAIRS_PER_MESSAGE {
                    channel.send((dest as u32, std::mem::take(&mut outgoing[dest])));
                }
            },
            &mut |bad| {
                invalid += 1;
                if first_invalid.is_none() {
                    first_invalid = Some((file, bad));
                }
            },
        );
        status.unmatched += unmatched;
        status.invalid += invalid;
        if status.first_invalid.is_none() {
            status.first_invalid = first_invalid;
        }
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
            channel.send((dest as u32, pairs));
        }
    }
    let received = channel.finish_round(reducer.worker);
    let status = reducer.all_reduce(status);
    if let Some(e) = status.error {
        bail!(e);
    }
    Ok((received, status))
}

#[derive(Clone, Default, Serialize, Deserialize)]
pub(super) struct RatesStatus {
    pub(super) error: Option<String>,
    pub(super) rows: u64,
    pub(super) invalid: u64,
    pub(super) unmatched: u64,
    /// The first invalid row by (file, row).
    pub(super) first_invalid: Option<(u64, InvalidRate)>,
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
