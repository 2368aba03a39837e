//! What `evaluate` reports: a rates table's value and its gap to each objective's optimum, or a
//! timetable's exact value, politeness and bounds; for machines (`--json`) and people.

use serde::{Deserialize, Serialize};

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
    pub value: Figures,
    pub optima: Vec<OptimumGap>,
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

/// What `evaluate --visits` reports: the same top level as the rates report ([`super::evaluate::Evaluation`]),
/// the timetable's figures under `visits`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VisitsEvaluation {
    pub version: String,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
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
    pub seconds: f64,
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
        let show = |c: Option<f64>| c.map(|c| format!("{c:.6e}")).unwrap_or("inf".into());
        let pct = |g: Option<f64>| {
            g.map(|g| format!("{:+.4}%", 100.0 * g))
                .unwrap_or("-".into())
        };
        let mut s = format!(
            "revisit evaluate: {} pages, {} visits rows in {} files ({} matched, {} unmatched, {} duplicate, {} invalid)\n\
             timetable: horizon {} s (from {}), {:.6e} fetches/day; {} pages visited, {} not ({} of them change)\n\
             \x20 staleness (importance-weighted, exact) {:.9}   fresh share {:.6}\n\
             \x20 binary cost J_b   {:.6e}\n\
             \x20 harmonic cost J_h {}\n",
            self.urls,
            v.rows,
            v.files,
            v.matched,
            v.unmatched,
            v.duplicate,
            v.invalid,
            v.horizon_s,
            v.horizon_source,
            v.visits_per_day,
            v.pages_visited,
            v.pages_unvisited,
            v.pages_starved,
            v.staleness,
            v.freshness,
            v.cost_binary,
            show(v.cost_harmonic),
        );
        s += &format!(
            "  bounds for {} integer visits (PUC-Rio Thm 1): Weak-Politeness {:.9} ({:+.4}% to it), non-polite {:.9}\n",
            v.matched,
            v.staleness_weak_politeness,
            100.0 * v.gap_to_weak_politeness,
            v.staleness_non_polite,
        );
        if let Some(r) = v.freshness_of_fixed_interval_optimum {
            s += &format!(
                "  freshness {:.4}% of the polite fixed-interval optimum's at {:.6e} fetches/day (which may visit a page less than once a horizon)\n",
                100.0 * r,
                self.bandwidth
            );
        }
        s += &format!(
            "politeness: {} hosts visited, shortest gap {} s; {} hosts ({} gaps) below their min_delay_s\n",
            v.hosts_visited,
            v.host_gap_min_s
                .map_or("-".to_owned(), |g| format!("{g:.6}")),
            v.hosts_impolite,
            v.gaps_impolite,
        );
        if let Some(w) = &v.worst_host {
            s += &format!(
                "  worst: {} visited {:.6} s apart, min_delay_s {}\n",
                w.host, w.gap_s, w.min_delay_s
            );
        }
        s += &format!(
            "optima at {:.6e} fetches/day (binary rows: the timetable's exact cost against Poisson and fixed-interval optima):\n  {:<14} {:>14} {:>14} {:>14} {:>12} {:>12} {:>11}\n",
            self.bandwidth,
            "objective",
            "timetable",
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
        if let Some(m) = &v.monte_carlo {
            s += &format!(
                "  Monte Carlo, {} horizons (seed {}): staleness {:.6} +- {:.6} (95%), exact {:.6}: {}\n",
                m.horizons,
                m.seed,
                m.simulated,
                1.96 * m.std_err,
                v.staleness,
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
