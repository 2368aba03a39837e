//! What `evaluate` reports: a rates table's value and its gap to each objective's optimum, or a
//! timetable's exact value, politeness and bounds; for machines (`--json`) and people.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::format::{cost, count, num, percent};
use super::provenance::Provenance;
use super::rows::DefaultsUsed;
use super::TotalSeconds;
use crate::io::rates_in::InvalidRate;
use revisit_core::fetch_time::{set_figures, FetchTime, PageTerms, SetFigures};
use revisit_core::objective::value::Figures;
use revisit_core::objective::Objective;
use revisit_core::solve::optimum::Optimum;
use revisit_core::units::SECONDS_PER_DAY;

/// What `evaluate` prints: a rates table's report or a timetable's (same top-level keys).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Report {
    Rates(Evaluation),
    Visits(VisitsEvaluation),
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

/// One objective's optima at the evaluated bandwidth, and the evaluated rates' gap to them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OptimumGap {
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

impl OptimumGap {
    /// `objective`'s optima (its `cost` by that objective's measure) beside `cost`, the evaluated
    /// policy's.
    pub fn new(
        objective: Objective,
        cost: Option<f64>,
        [polite, free]: &[Optimum; 2],
    ) -> OptimumGap {
        let (polite_cost, non_polite_cost) =
            (polite.figures.cost(objective), free.figures.cost(objective));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b - 1.0),
            _ => None,
        };
        OptimumGap {
            objective: objective.name().to_owned(),
            cost,
            polite_cost,
            non_polite_cost,
            gap_to_polite: ratio(cost, polite_cost),
            gap_to_non_polite: ratio(cost, non_polite_cost),
            price_of_politeness: ratio(polite_cost, non_polite_cost),
            polite_rounds: polite.rounds,
            non_polite_rounds: free.rounds,
        }
    }
}

/// What `evaluate` reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Evaluation {
    /// Version, run id, start time, inputs (the page set's and the table's), hosts table, options.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// The defaults page rows without an importance or a change rate took.
    pub defaults: DefaultsUsed,
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
    pub value: Figures,
    pub optima: Vec<OptimumGap>,
    /// With `--fetch-time`: the rates valued under random fetch times (None without the flag).
    pub fetch_time: Option<FetchTimeReport>,
    pub workers: usize,
    pub processes: usize,
    pub seconds: TotalSeconds,
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
    /// The report of a table valued under random fetch times: `totals` are the table's page terms,
    /// `urls` its pages and `table_rate` its sum of rates, fetches per day.
    pub fn new(
        spec: &str,
        fetch: &FetchTime,
        totals: &PageTerms,
        urls: u64,
        table_rate: f64,
    ) -> FetchTimeReport {
        let (law, samples) = match fetch {
            FetchTime::Constant { .. } => ("constant", None),
            FetchTime::Exponential { .. } => ("exponential", None),
            FetchTime::Empirical { samples } => ("empirical", Some(samples.len() as u64)),
        };
        FetchTimeReport {
            spec: spec.to_owned(),
            law: law.to_owned(),
            samples,
            mean_fetch_s: fetch.mean(),
            throughput_per_day: SECONDS_PER_DAY / fetch.mean(),
            table_rate_per_day: table_rate,
            figures: set_figures(fetch, totals, urls),
            // The counts are sums of 0/1 terms, exact in f64 far beyond 2^32 pages.
            pages_changing: totals.changing as u64,
            pages_without_rate: totals.never_fetched as u64,
        }
    }

    pub fn human(&self) -> String {
        let show = |x: Option<f64>| x.map_or("-".to_owned(), num);
        let law = match self.samples {
            Some(n) => format!("{} ({} measured durations)", self.law, count(n)),
            None => self.law.clone(),
        };
        let f = &self.figures;
        let mut s = format!(
            "random fetch times (Liu & Nain §1.3; one crawler fetching back to back, page shares from the table):\n\
             \x20 --fetch-time {}: {law}, mean {} s -> {} fetches/day; the table plans {} fetches/day ({}x)\n\
             \x20 obsolescence (share of time out of date)       per URL   by change rate\n",
            self.spec,
            num(self.mean_fetch_s),
            num(self.throughput_per_day),
            num(self.table_rate_per_day),
            num(self.table_rate_per_day / self.throughput_per_day),
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
            count(self.pages_without_rate),
            count(self.pages_changing),
        );
        s
    }
}

/// The optima table of a report: each objective's cost for the evaluated table (`what`) beside
/// its optima, polite and without caps, and the gaps.
fn optima_table(optima: &[OptimumGap], what: &str) -> String {
    let gap = |g: Option<f64>| g.map_or_else(|| "-".to_owned(), |g| format!("{:+.2}%", 100.0 * g));
    let mut s = format!(
        "  {:<16} {:>12} {:>12} {:>12} {:>11} {:>11} {:>11}\n",
        "cost", what, "polite opt.", "free opt.", "gap polite", "gap free", "politeness"
    );
    for o in optima {
        s += &format!(
            "  {:<16} {:>12} {:>12} {:>12} {:>11} {:>11} {:>11}\n",
            cost_name(&o.objective),
            cost(o.cost),
            cost(o.polite_cost),
            cost(o.non_polite_cost),
            gap(o.gap_to_polite),
            gap(o.gap_to_non_polite),
            gap(o.price_of_politeness),
        );
    }
    s
}

/// The name of the cost an objective minimises, as every command prints it.
pub fn cost_name(objective: &str) -> &str {
    match objective {
        "harmonic" => "harmonic",
        "binary" => "binary",
        "binary-fixed" => "fixed-interval",
        "binary-discrete" => "discrete-slot",
        other => other,
    }
}

impl Evaluation {
    /// A report a person reads.
    pub fn human(&self) -> String {
        let v = &self.value;
        let mut s = format!(
            "revisit {} evaluate: {} pages, {} rates rows ({} matched, {} unmatched, {} duplicate, {} invalid); {} pages without a rate\n",
            self.provenance.version,
            count(self.urls),
            count(self.rates_rows),
            count(self.rates_matched),
            count(self.rates_unmatched),
            count(self.rates_duplicate),
            count(self.rates_invalid),
            count(self.pages_without_rate),
        );
        s += &self.defaults.human();
        s += &format!(
            "evaluated rates: {} fetches/day; {} hosts over their cap (max rates/cap {})\n\
             \x20 harmonic cost        {}\n\
             \x20 binary cost          {}   fresh {} of the time (Poisson crawls)\n\
             \x20 fixed-interval cost  {}   fresh {} of the time (evenly spaced crawls)\n\
             \x20 changing URLs never crawled: {}\n\
             optima at {} fetches/day:\n",
            num(v.bandwidth),
            count(self.hosts_over_cap),
            num(self.max_cap_ratio),
            cost(v.cost_harmonic),
            num(v.cost_binary),
            percent(v.freshness_poisson),
            num(v.cost_fixed_interval),
            percent(v.freshness_fixed_interval),
            count(v.urls_starved),
            num(self.bandwidth),
        );
        s += &optima_table(&self.optima, "these rates");
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

/// What `evaluate --visits` reports: the same top level as the rates report ([`super::evaluate::Evaluation`]),
/// the timetable's figures under `visits`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VisitsEvaluation {
    /// Version, run id, start time, inputs (the page set's and the timetable's), hosts table,
    /// options.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// The defaults page rows without an importance or a change rate took.
    pub defaults: DefaultsUsed,
    /// Bandwidth of the optima, fetches per day (default: the timetable's `visits.visits_per_day`).
    pub bandwidth: f64,
    pub visits: VisitsReport,
    /// Each objective's optima at `bandwidth`; `cost` is the timetable's exact cost by that
    /// objective's measure (harmonic: J_h; binary and binary-fixed: the timetable's binary cost).
    pub optima: Vec<OptimumGap>,
    /// With `--fetch-time`: the timetable's shares f_i = visits_i / Σ visits valued under random
    /// fetch times (None without the flag).
    pub fetch_time: Option<FetchTimeReport>,
    pub workers: usize,
    pub processes: usize,
    pub seconds: TotalSeconds,
}

/// The timetable's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VisitsReport {
    /// The horizon the timetable repeats over, seconds, and where it came from (`metadata`: the
    /// files' revisit.horizon_s; `flag`: --horizon-s).
    pub horizon_s: f64,
    pub horizon_source: String,
    pub files: u64,
    /// Rows of the visits tables; rows = matched + unmatched + duplicate + invalid.
    pub rows: u64,
    /// Rows joined to a page (the visits valued).
    pub matched: u64,
    /// Valid rows whose URL is no page (on the host the row names or its URL implies).
    pub unmatched: u64,
    /// Rows repeating another row's URL and at_s exactly (one of them is used).
    pub duplicate: u64,
    /// Rows with no url, or an at_s that is missing, not a number or outside [0, horizon_s).
    pub invalid: u64,
    /// The first invalid row by file then row, to fix.
    pub first_invalid: Option<InvalidRate>,
    /// Fetches per day the timetable implies: matched × 86400 / horizon_s.
    pub visits_per_day: f64,
    /// Pages with at least one visit, and without.
    pub pages_visited: u64,
    pub pages_unvisited: u64,
    /// Pages that change and have no visit: stale from their first change on.
    pub pages_starved: u64,
    /// Importance-weighted mean binary staleness Σ μ S_i / Σ μ of the cyclic timetable, exact
    /// (Liu & Nain Lemma 3: S over a gap τ is 1 − (1 − e^{−λτ})/(λτ)); the run summary's
    /// `timetable.staleness` measures the same.
    pub staleness: f64,
    /// 1 − staleness.
    pub freshness: f64,
    /// Σ μ S_i (the scale of J_b).
    pub cost_binary: f64,
    /// Σ μ E[H(N(t))], time-averaged (NeurIPS'19 eq. 1 with the harmonic penalty; the scale of
    /// J_h); None (infinite) when a changing page has no visit.
    pub cost_harmonic: Option<f64>,
    /// freshness / the polite binary-fixed optimum's freshness at `bandwidth` (PNAS'18 Fig. 1 puts
    /// its timetable at 99% of that optimum).
    pub freshness_of_fixed_interval_optimum: Option<f64>,
    /// The best staleness of as many integer visits, evenly spaced, within the hosts' caps
    /// floor(T / min_delay_s): the Weak-Politeness lower bound (PUC-Rio Thm 1); and without caps.
    pub staleness_weak_politeness: f64,
    pub staleness_non_polite: f64,
    /// staleness / staleness_weak_politeness - 1 (PUC-Rio: MERGE 3% above).
    pub gap_to_weak_politeness: f64,
    /// Hosts with at least one matched visit.
    pub hosts_visited: u64,
    /// The smallest gap between consecutive visits of one host, wrap-around included, seconds
    /// (None: no visit).
    pub host_gap_min_s: Option<f64>,
    /// Hosts with a gap below their min_delay_s (less 1e-6 s), and such gaps in all.
    pub hosts_impolite: u64,
    pub gaps_impolite: u64,
    /// The impolite host with the shortest gap.
    pub worst_host: Option<ImpoliteHost>,
    /// With --simulate: the staleness of Poisson changes drawn against the timetable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monte_carlo: Option<MonteCarlo>,
}

/// Simulated importance-weighted staleness of a timetable beside its exact value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MonteCarlo {
    pub horizons: u64,
    pub seed: u64,
    /// Monte Carlo estimate of the staleness and its standard error.
    pub simulated: f64,
    pub std_err: f64,
    /// Whether the exact value lies in the simulation's 95% confidence interval (+-1.96 s.e.).
    pub exact_in_95_ci: bool,
}

/// A host visited faster than its politeness delay allows.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ImpoliteHost {
    pub host: String,
    pub gap_s: f64,
    pub min_delay_s: f64,
}

impl VisitsEvaluation {
    /// A report a person reads.
    pub fn human(&self) -> String {
        let v = &self.visits;
        let mut s = format!(
            "revisit {} evaluate: {} pages, {} visits rows in {} files ({} matched, {} unmatched, {} duplicate, {} invalid)\n",
            self.provenance.version,
            count(self.urls),
            count(v.rows),
            count(v.files),
            count(v.matched),
            count(v.unmatched),
            count(v.duplicate),
            count(v.invalid),
        );
        s += &self.defaults.human();
        s += &format!(
            "timetable: horizon {} s (from {}), {} fetches/day; {} pages visited, {} not ({} of them change)\n\
             \x20 staleness (importance-weighted, exact) {:.9}   fresh {} of the time\n\
             \x20 binary cost   {}\n\
             \x20 harmonic cost {}\n",
            num(v.horizon_s),
            v.horizon_source,
            num(v.visits_per_day),
            count(v.pages_visited),
            count(v.pages_unvisited),
            count(v.pages_starved),
            v.staleness,
            percent(v.freshness),
            num(v.cost_binary),
            cost(v.cost_harmonic),
        );
        s += &format!(
            "  bounds for {} integer visits (PUC-Rio Thm 1): Weak-Politeness {:.9} ({:+.4}% to it), non-polite {:.9}\n",
            count(v.matched),
            v.staleness_weak_politeness,
            100.0 * v.gap_to_weak_politeness,
            v.staleness_non_polite,
        );
        if let Some(r) = v.freshness_of_fixed_interval_optimum {
            s += &format!(
                "  freshness {} of the polite fixed-interval optimum's at {} fetches/day (which may visit a page less than once a horizon)\n",
                percent(r),
                num(self.bandwidth)
            );
        }
        s += &format!(
            "politeness: {} hosts visited, shortest gap {} s; {} hosts ({} gaps) below their min_delay_s\n",
            count(v.hosts_visited),
            v.host_gap_min_s.map_or("-".to_owned(), num),
            count(v.hosts_impolite),
            count(v.gaps_impolite),
        );
        if let Some(w) = &v.worst_host {
            s += &format!(
                "  worst: {} visited {} s apart, min_delay_s {}\n",
                w.host,
                num(w.gap_s),
                num(w.min_delay_s)
            );
        }
        s += &format!(
            "optima at {} fetches/day (binary and fixed-interval rows: the timetable's exact binary cost against Poisson and fixed-interval optima):\n",
            num(self.bandwidth),
        );
        s += &optima_table(&self.optima, "timetable");
        if let Some(m) = &v.monte_carlo {
            s +=
                &format!(
                "  Monte Carlo, {} horizons (seed {}): staleness {} +- {} (95%), exact {}: {}\n",
                count(m.horizons),
                m.seed,
                num(m.simulated),
                num(1.96 * m.std_err),
                num(v.staleness),
                if m.exact_in_95_ci { "inside" } else { "OUTSIDE" }
            );
        }
        if let Some(f) = &self.fetch_time {
            // the shared block speaks of a rates table; here a page's share is its visits
            s += &f.human().replace("have no rate", "have no visit");
        }
        if let Some(b) = &v.first_invalid {
            s += &format!(
                "first invalid visits row: {} row {} column {}\n",
                b.file, b.row, b.column
            );
        }
        s
    }
}

/// The worse of two impolite hosts: the shorter gap, then the name (the same whatever the workers).
pub fn worse(a: Option<ImpoliteHost>, b: Option<ImpoliteHost>) -> Option<ImpoliteHost> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (a.gap_s, &a.host) <= (b.gap_s, &b.host) {
            a
        } else {
            b
        }),
        (a, b) => a.or(b),
    }
}
