//! The run summary: `summary.json` for machines and a short text for people, assembled from what
//! the workers measured ([`RunFacts`]).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::clock::Moment;
use super::format::{cost, count, num, percent};
use super::provenance::Provenance;
use super::rows::{by_reason, DefaultsUsed};
use crate::io::rates_in::InvalidRate;
use crate::plan::run::{RunPlan, StartSource, TimetableMode};
use revisit_core::exact_sum::ExactSum;
use revisit_core::objective::value::PolicyValue;
use revisit_core::objective::Objective;
use revisit_core::reduce::Combine;
use revisit_core::schedule::night::NightTotals;
use revisit_core::schedule::visits::{EvenlySpaced, VisitObjective, Visits};

pub use super::provenance::VERSION;

/// Seconds per phase (of the wall clock, or of the CPU), between the ends worker 0 saw.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PhaseSeconds {
    /// Reading and validating this worker's row groups (records are sent on while reading).
    pub read: f64,
    /// Waiting for every worker's records, then grouping by host and removing duplicates.
    pub exchange: f64,
    /// Reading the crawl history (and the previous learned table), joining it to the pages and
    /// estimating their change rates (0 without --history).
    pub learn: f64,
    /// Reading the previous night's schedule and the fetch logs, sending them to their hosts'
    /// workers and joining them to the pages (0 on a first night).
    pub state: f64,
    /// The multiplier rounds, the per-host solves and the rates.
    pub solve: f64,
    /// The rates valued by every measure (the summary's costs and freshness), and the URLs held
    /// at their refetch-interval bounds counted.
    pub value: f64,
    /// Crawler assignment, moving rows to their crawler's writer, Parquet, publishing.
    pub write: f64,
    pub total: f64,
}

/// Where worker 0 stood when the run started and when each of its phases ended.
#[derive(Clone, Copy, Debug)]
pub struct PhaseEnds {
    pub started: Moment,
    pub read: Moment,
    pub exchange: Moment,
    pub learn: Moment,
    pub state: Moment,
    pub solve: Moment,
    pub value: Moment,
    pub write: Moment,
}

impl PhaseSeconds {
    /// The phases between `ends`, each as `span(end, start)` measures it.
    pub fn between(ends: &PhaseEnds, span: impl Fn(&Moment, &Moment) -> f64) -> Self {
        PhaseSeconds {
            read: span(&ends.read, &ends.started),
            exchange: span(&ends.exchange, &ends.read),
            learn: span(&ends.learn, &ends.exchange),
            state: span(&ends.state, &ends.learn),
            solve: span(&ends.solve, &ends.state),
            value: span(&ends.value, &ends.solve),
            write: span(&ends.write, &ends.value),
            total: span(&ends.write, &ends.started),
        }
    }
}

/// The largest of `parts` shares of `total` (the largest being `max`) over their mean; 1 when there
/// is nothing to share.
fn max_over_mean(max: u64, total: u64, parts: usize) -> f64 {
    if total == 0 {
        return 1.0;
    }
    max as f64 * parts as f64 / total as f64
}

/// How many crawlers the static M/M/1/K indexer model recommends (Liu & Nain Prop. 1).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Recommendation {
    pub crawlers: usize,
    /// Its cost C (eq. 1.4): idle weight x P(idle) + pages lost, per day.
    pub cost: f64,
    /// Pages per day one crawler delivers at this run's bandwidth and crawler count.
    pub arrival_rate_per_crawler: f64,
    pub index_rate: f64,
    pub index_buffer: usize,
    pub index_gamma: f64,
}

/// The rolling schedule of a run: the night, where the URLs stand, what the state and the logs
/// gave, and the URLs held at their interval bounds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScheduleSummary {
    /// The night planned: its start (RFC 3339, UTC) and where that came from (`given`,
    /// `after_previous`, `today`).
    pub start: String,
    pub start_source: String,
    /// The previous run's output it continues from.
    pub previous: Option<String>,
    /// What told it which fetches happened: `fetched` (the logs given), `previous_visits` (the
    /// previous timetable, each fetch taken as made), `previous_due_times`, or `none`.
    pub fetches_from: String,
    #[serde(flatten)]
    pub counts: ScheduleCounts,
    #[serde(flatten)]
    pub state: StateCounts,
    /// The interval bounds of URLs without their own, seconds.
    pub min_interval_s: Option<f64>,
    pub max_interval_s: Option<f64>,
    #[serde(flatten)]
    pub intervals: IntervalCounts,
}

/// The timetable of a run: a rolling night (the default) or a cyclic one (--cyclic).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Timetable {
    Rolling(RollingSummary),
    Cyclic(TimetableSummary),
}

/// What `run --timetable` served of the night's due fetches.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RollingSummary {
    /// `rolling`.
    pub mode: String,
    /// Fetches per second of each crawler.
    pub crawler_rate_per_s: f64,
    /// Due times in the night, fetches in the visits tables, and those no crawler could serve
    /// politely before the night's end (they stay due).
    pub fetches_due: u64,
    pub fetches_scheduled: u64,
    pub fetches_dropped: u64,
    /// Largest served share of one crawler's floor(rate x horizon) fetches.
    pub crawler_utilisation_max: f64,
    /// Largest delay of a fetch behind its due time, seconds.
    pub delay_max_s: f64,
}

/// What `run --timetable --cyclic` scheduled (PUC-Rio's three phases) and how stale it is, exactly.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TimetableSummary {
    /// `cyclic`.
    pub mode: String,
    /// merge, mp2, carousel or golden-ratio.
    pub sequencing: String,
    /// What the integer visits maximise: "harmonic" (a harmonic run whose budget visits every
    /// changing page) or "staleness" (binary freshness of evenly spaced visits).
    pub visits_objective: String,
    /// Fetches per second of each crawler.
    pub crawler_rate_per_s: f64,
    /// The integer problem's budget floor(R T) in visits per horizon.
    pub visits_budget: u64,
    /// Visits the integer solution hands out (<= budget: politeness caps may leave some unusable).
    pub visits_planned: u64,
    /// Fetches in the visits tables.
    pub visits_scheduled: u64,
    /// Planned visits dropped because their crawler could not serve them within the horizon at its
    /// rate without breaking politeness (crawler capacity; with mp2 also its impolite plans).
    pub visits_dropped: u64,
    /// Of those, visits their crawler had time for, but whose host, delayed behind other hosts'
    /// fetches, could not take them politely before its first fetch of the next night.
    pub visits_dropped_at_wrap: u64,
    /// Visits served after the horizon's end, in the next repetition's early hours (each crawler's
    /// sweep starts where it would be idle night after night, so a late backlog drains there).
    pub visits_served_round_the_cycle: u64,
    /// Largest served share of one crawler's floor(rate x horizon) fetches.
    pub crawler_utilisation_max: f64,
    /// Largest delay of a fetch behind its host's planned time, seconds.
    pub delay_max_s: f64,
    /// The integer problem's price nu (PUC-Rio Phase 1 threshold on marginal gains).
    pub multiplier: f64,
    /// Rounds of its search (each one all-reduce).
    pub rounds: u32,
    /// Importance-weighted mean staleness of the timetables as served, exact (Liu & Nain Lemma 3).
    pub staleness: f64,
    /// With visits for staleness: the Weak-Politeness lower bound, the integer visits evenly spaced
    /// (PUC-Rio Thm 1); None with visits for the harmonic penalty (no bound on staleness then).
    pub staleness_weak_politeness: Option<f64>,
    /// The same bound without politeness caps (PUC-Rio's NonPolite).
    pub staleness_non_polite: Option<f64>,
    /// Harmonic penalty of the timetables as served, sum mu E[H(N(t))] time-averaged, exact (the
    /// scale of J_h, NeurIPS'19 eq. 1); None (infinite) when a changing page gets no fetch.
    pub cost_harmonic: Option<f64>,
    /// With visits for the harmonic penalty: its Weak-Politeness bound, the integer visits evenly
    /// spaced (PUC-Rio Thm 1 holds for any penalty convex in the gap); else None.
    pub cost_harmonic_weak_politeness: Option<f64>,
    /// The same bound without politeness caps.
    pub cost_harmonic_non_polite: Option<f64>,
}

/// Relative bandwidth error above which the summary warns (the search aims at 1e-13).
pub const BANDWIDTH_ERROR_WARNING: f64 = 1e-9;
/// Share of the bandwidth unusable above which the summary warns: most of what was paid for
/// cannot be spent politely.
pub const UNUSABLE_WARNING_SHARE: f64 = 0.5;
/// Busiest crawler's load over the mean above which the summary warns.
pub const LOAD_WARNING_RATIO: f64 = 1.5;
/// Pages of the busiest worker over the mean above which the summary warns: the phases that
/// follow the pages then take half as long again as with even shares.
pub const WORKER_PAGES_WARNING_RATIO: f64 = 1.5;
/// Share of rejected rows above which the summary warns (more stops the job: --max-reject-share).
pub const REJECTED_WARNING_SHARE: f64 = 0.1;

/// What a run did, written to `summary.json` (rates per day, costs as in NeurIPS'19 eqs. 2, 12-13).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Version, run id, start time, inputs, hosts table, options.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub objective: String,
    /// The global Lagrange multiplier nu (0 when politeness leaves bandwidth unusable).
    pub multiplier: f64,
    /// Rounds of the global multiplier search (each one all-reduce).
    pub rounds: u32,
    /// Fetches per day asked for.
    pub bandwidth_requested: f64,
    /// Fetches per day the rates use.
    pub bandwidth_used: f64,
    /// Fetches per day that politeness (or complete observations) leave unusable: what the pages
    /// and hosts cannot take even at price 0.
    pub bandwidth_unusable: f64,
    /// (used - (requested - unusable)) / requested: how far the rates miss the usable bandwidth.
    /// Within 1e-12 when the multiplier search converged; larger only when it stopped at its round
    /// cap (a page whose rate jumps by more than the tolerance between adjacent floating-point
    /// prices), which the terminal summary then says.
    pub bandwidth_relative_error: f64,
    pub horizon_s: f64,
    pub crawlers: u32,
    /// Harmonic staleness J_h summed over scheduled and zero-rate URLs; null when infinite (some URL
    /// that changes is never crawled, as binary freshness allows).
    pub cost_harmonic: Option<f64>,
    /// Binary staleness J_b summed over URLs.
    pub cost_binary: f64,
    /// The run's own objective as a cost, summed over URLs, for the exact objectives (harmonic, binary:
    /// equal to the two above; binary-fixed: fixed-interval staleness sum mu (1 - (1 - e^-x)/x), whose
    /// complement sum mu - cost is Frontera's value; binary-discrete: per-slot staleness). Null for
    /// the approximation and the baselines (compare them by the two costs above), or when infinite.
    pub cost_objective: Option<f64>,
    /// URLs with change_rate > 0 that get no crawls (infinite harmonic cost each).
    pub urls_starved: u64,
    /// Valid URLs: scheduled and zero rate.
    pub urls: u64,
    pub rows_in: u64,
    pub rows_scheduled: u64,
    pub rows_zero_rate: u64,
    pub rows_rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// The defaults rows without an importance or a change rate took, and how many took them.
    pub defaults: DefaultsUsed,
    pub hosts: u64,
    pub hosts_capped: u64,
    /// Largest crawler load over the mean (1 = perfectly balanced).
    pub crawler_load_max_over_mean: f64,
    pub workers: usize,
    pub processes: usize,
    /// The most pages one worker (of all processes) holds over the mean: the hosts a sample of
    /// the input finds heavy are placed by size, the others go by a hash of their name, and every
    /// phase whose work follows the pages waits for the busiest (1 = balanced; the worker count
    /// at most).
    #[serde(default)]
    pub worker_pages_max_over_mean: f64,
    /// The crawler count the static indexer model recommends (with --index-rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommended_crawlers: Option<Recommendation>,
    /// Every URL's place in the rolling schedule.
    pub schedule: ScheduleSummary,
    /// The crawlers' timetables (with --timetable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timetable: Option<Timetable>,
    /// The change rates learned from the crawls (with --history).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<LearnCounts>,
    /// Peak resident memory of the largest process, bytes.
    pub peak_rss_bytes: u64,
    /// What looks wrong with the run, in words (the terminal summary prints them too).
    pub warnings: Vec<String>,
    /// Wall-clock seconds of each phase.
    pub seconds: PhaseSeconds,
    /// CPU seconds (user and system) of each phase, of every thread of the lead's process: its
    /// workers and their writers. Beside the wall clock it tells work from waiting, and it moves
    /// less than wall time when other jobs share the machine.
    #[serde(default)]
    pub seconds_cpu: PhaseSeconds,
}

/// What the rates of one worker (or, combined, of all) add up to.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RatesTotals {
    /// Harmonic and binary costs of the rates, whatever the objective.
    pub value: PolicyValue,
    /// The run's own objective as a cost ([`revisit_core::objective::Response::cost`]).
    pub objective: ExactSum,
    pub scheduled: u64,
    pub zero_rate: u64,
    pub hosts: u64,
    pub hosts_capped: u64,
    /// Against the refetch-interval bounds.
    pub intervals: IntervalCounts,
    /// Peak resident memory of the largest process, bytes.
    pub peak_rss: u64,
}

impl Combine for RatesTotals {
    fn combine(&mut self, o: Self) {
        self.value.combine(o.value);
        self.objective.merge(&o.objective);
        self.scheduled += o.scheduled;
        self.zero_rate += o.zero_rate;
        self.hosts += o.hosts;
        self.hosts_capped += o.hosts_capped;
        self.intervals.combine(o.intervals);
        self.peak_rss = self.peak_rss.max(o.peak_rss);
    }
}

/// What a night learned of its pages' change rates (`run --history`): every history row and every
/// row of the previous learned table accounted for, summed over workers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LearnCounts {
    /// `host` or `paper`.
    pub prior: String,
    /// The window the estimates looked at, days since the epoch (its end is the night's start).
    pub window_from_days: f64,
    pub window_to_days: f64,
    /// History rows: used, of them before the window (they only close the interval after them),
    /// after the night's start (not used), of a URL that is no page, at or before their URL's
    /// last observation (a repeat, or older than the state: not used), unusable.
    pub history_rows: u64,
    pub history_used: u64,
    pub history_before_window: u64,
    pub history_future: u64,
    pub history_unknown_url: u64,
    pub history_repeated: u64,
    pub history_invalid: u64,
    /// Rows of the previous learned table: joined to a page, of a URL no longer a page, unusable.
    pub state_rows: u64,
    pub state_used: u64,
    pub state_dropped: u64,
    pub state_invalid: u64,
    /// The first unusable row of either, by file then row.
    pub first_invalid: Option<InvalidRate>,
    /// Pages with an observation in the window, and those that have none (their rate is the
    /// prior's).
    pub urls_observed: u64,
    pub urls_on_prior: u64,
}

impl Combine for LearnCounts {
    fn combine(&mut self, o: Self) {
        self.history_rows += o.history_rows;
        self.history_used += o.history_used;
        self.history_before_window += o.history_before_window;
        self.history_future += o.history_future;
        self.history_unknown_url += o.history_unknown_url;
        self.history_repeated += o.history_repeated;
        self.history_invalid += o.history_invalid;
        self.state_rows += o.state_rows;
        self.state_used += o.state_used;
        self.state_dropped += o.state_dropped;
        self.state_invalid += o.state_invalid;
        self.urls_observed += o.urls_observed;
        self.urls_on_prior += o.urls_on_prior;
        self.first_invalid = first_of(self.first_invalid.take(), o.first_invalid);
    }
}

/// The first of two unusable rows, by file then row.
fn first_of(a: Option<InvalidRate>, b: Option<InvalidRate>) -> Option<InvalidRate> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (&a.file, a.row) <= (&b.file, b.row) {
            a
        } else {
            b
        }),
        (a, b) => a.or(b),
    }
}

/// The rows of the state and the logs, accounted for (summed over workers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StateCounts {
    /// Rows of the previous rates table, those joined to a page, those whose URL is no longer a
    /// page (dropped), and unusable ones.
    pub state_rows: u64,
    pub state_used: u64,
    pub state_dropped: u64,
    pub state_invalid: u64,
    /// Rows of the fetch logs: used (a successful fetch of a page before the night), failed (the
    /// URL stays due), of a URL that is no page, at or after the night's start, repeating another
    /// row (same URL and time), invalid.
    pub log_rows: u64,
    pub log_used: u64,
    pub log_failed: u64,
    pub log_unknown_url: u64,
    pub log_future: u64,
    pub log_duplicate: u64,
    pub log_invalid: u64,
    /// The first unusable row of either, by file then row.
    pub first_invalid: Option<InvalidRate>,
}

impl Combine for StateCounts {
    fn combine(&mut self, o: Self) {
        self.state_rows += o.state_rows;
        self.state_used += o.state_used;
        self.state_dropped += o.state_dropped;
        self.state_invalid += o.state_invalid;
        self.log_rows += o.log_rows;
        self.log_used += o.log_used;
        self.log_failed += o.log_failed;
        self.log_unknown_url += o.log_unknown_url;
        self.log_future += o.log_future;
        self.log_duplicate += o.log_duplicate;
        self.log_invalid += o.log_invalid;
        self.first_invalid = first_of(self.first_invalid.take(), o.first_invalid);
    }
}

/// Where the URLs stand at the night's start (summed over workers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ScheduleCounts {
    /// Fetched before and due at or after the start.
    pub urls_on_time: u64,
    /// Due before the start (a failed or missing fetch, a shorter interval): due tonight.
    pub urls_overdue: u64,
    /// Never fetched: phased in.
    pub urls_new: u64,
    /// URLs due at least once tonight, and their due times.
    pub urls_due_tonight: u64,
    pub fetches_due_tonight: u64,
}

impl Combine for ScheduleCounts {
    fn combine(&mut self, o: Self) {
        self.urls_on_time += o.urls_on_time;
        self.urls_overdue += o.urls_overdue;
        self.urls_new += o.urls_new;
        self.urls_due_tonight += o.urls_due_tonight;
        self.fetches_due_tonight += o.fetches_due_tonight;
    }
}

/// Where a run's URLs stand against their refetch-interval bounds (summed over workers).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IntervalCounts {
    /// URLs fetched once per max interval (no more), once per min interval (no less often), and
    /// those whose host's cap cannot give them one fetch per max interval.
    pub urls_at_max_interval: u64,
    pub urls_at_min_interval: u64,
    pub urls_max_interval_unmet: u64,
}

impl Combine for IntervalCounts {
    fn combine(&mut self, o: Self) {
        self.urls_at_max_interval += o.urls_at_max_interval;
        self.urls_at_min_interval += o.urls_at_min_interval;
        self.urls_max_interval_unmet += o.urls_max_interval_unmet;
    }
}

/// The rolling schedule of a run, as the workers measured it.
pub struct ScheduleFacts<'a> {
    pub counts: &'a ScheduleCounts,
    pub state: &'a StateCounts,
}

/// The rolling night's fetches, as the writers served them.
pub struct RollingFacts<'a> {
    pub crawler_rate_per_s: f64,
    pub totals: &'a NightTotals,
}

/// The integer visits of a run and their bounds, as every worker agrees on them.
pub struct VisitsFacts<'a> {
    /// What the integer visits pursued.
    pub objective: VisitObjective,
    pub visits: &'a Visits,
    /// The integer visits evenly spaced (the Weak-Politeness bound), and the best without caps.
    pub weak_politeness: &'a EvenlySpaced,
    pub non_polite: &'a EvenlySpaced,
    /// Fetches per second of each crawler.
    pub crawler_rate_per_s: f64,
    pub totals: &'a NightTotals,
}

/// A night's fetches, cyclic or rolling.
pub enum TimetableFacts<'a> {
    Cyclic(VisitsFacts<'a>),
    Rolling(RollingFacts<'a>),
}

/// Everything a run's summary is made of, as the workers measured it.
pub struct RunFacts<'a> {
    pub plan: &'a RunPlan,
    pub provenance: Provenance,
    /// Fetches per day asked for.
    pub bandwidth: f64,
    /// The global multiplier, its rounds, the fetches per day used, and the most the pages and
    /// hosts could take at price 0 (+inf: no limit).
    pub multiplier: f64,
    pub rounds: u32,
    pub bandwidth_used: f64,
    pub max_spend: f64,
    pub rows_in: u64,
    /// Rejected rows by reason, in [`crate::io::pages::Reason::ALL`] order.
    pub rejected_by_reason: &'a [u64],
    pub defaults: DefaultsUsed,
    pub rates: &'a RatesTotals,
    pub crawler_load_max_over_mean: f64,
    /// The largest budget of one host, fetches per day.
    pub largest_host: f64,
    pub schedule: ScheduleFacts<'a>,
    pub timetable: Option<TimetableFacts<'a>>,
    pub learned: Option<LearnCounts>,
    pub workers: usize,
    pub processes: usize,
    /// Valid pages on all workers, on the worker that holds the most, and of the largest host.
    pub pages: u64,
    pub pages_on_busiest_worker: u64,
    pub pages_of_largest_host: u64,
    pub phase_ends: PhaseEnds,
}

impl Summary {
    /// The summary of a run from what it measured; fails if the counts do not add up (a bug: the
    /// run then publishes nothing).
    pub fn assemble(f: RunFacts) -> Result<Summary> {
        let plan = f.plan;
        let c = f.rates;
        let rejected_by_reason = by_reason(f.rejected_by_reason);
        let rows_rejected = rejected_by_reason.values().sum();
        let recommended_crawlers = match &plan.index {
            Some(index) => {
                let arrival = f.bandwidth_used / plan.crawlers as f64;
                let (crawlers, cost) = index.recommend(arrival)?;
                Some(Recommendation {
                    crawlers,
                    cost,
                    arrival_rate_per_crawler: arrival,
                    index_rate: index.index_rate,
                    index_buffer: index.buffer,
                    index_gamma: index.gamma,
                })
            }
            None => None,
        };
        let timetable = match &f.timetable {
            Some(TimetableFacts::Cyclic(t)) => Some(Timetable::Cyclic(timetable_summary(plan, t))),
            Some(TimetableFacts::Rolling(t)) => {
                Some(Timetable::Rolling(rolling_summary(t, f.schedule.counts)))
            }
            None => None,
        };
        let (planned, scheduled, dropped) = match &timetable {
            Some(Timetable::Cyclic(t)) => (t.visits_planned, t.visits_scheduled, t.visits_dropped),
            Some(Timetable::Rolling(t)) => (t.fetches_due, t.fetches_scheduled, t.fetches_dropped),
            None => (0, 0, 0),
        };
        if scheduled + dropped != planned {
            bail!(
                "internal error: fetches do not add up ({planned} planned, {scheduled} scheduled, {dropped} dropped); nothing published"
            );
        }
        // what no price can place: the pages' and hosts' total room at price 0 falls short of R
        let unusable = if f.max_spend.is_finite() {
            (f.bandwidth - f.max_spend).max(0.0)
        } else {
            0.0
        };
        let mut summary = Summary {
            provenance: f.provenance,
            objective: plan.objective.name().to_owned(),
            multiplier: f.multiplier,
            rounds: f.rounds,
            bandwidth_requested: f.bandwidth,
            bandwidth_used: f.bandwidth_used,
            bandwidth_unusable: unusable,
            bandwidth_relative_error: (f.bandwidth_used - (f.bandwidth - unusable)) / f.bandwidth,
            horizon_s: plan.pages.horizon.0,
            crawlers: plan.crawlers,
            cost_harmonic: c.value.harmonic_cost(),
            cost_binary: c.value.binary_cost(),
            cost_objective: Some(c.objective.value())
                .filter(|v| v.is_finite() && plan.objective.is_exact()),
            urls_starved: c.value.starved,
            urls: c.scheduled + c.zero_rate,
            rows_in: f.rows_in,
            rows_scheduled: c.scheduled,
            rows_zero_rate: c.zero_rate,
            rows_rejected,
            rejected_by_reason,
            defaults: f.defaults,
            hosts: c.hosts,
            hosts_capped: c.hosts_capped,
            crawler_load_max_over_mean: f.crawler_load_max_over_mean,
            recommended_crawlers,
            schedule: schedule_summary(plan, &f.schedule, &c.intervals),
            timetable,
            learned: f.learned,
            workers: f.workers,
            processes: f.processes,
            worker_pages_max_over_mean: max_over_mean(
                f.pages_on_busiest_worker,
                f.pages,
                f.workers * f.processes,
            ),
            peak_rss_bytes: c.peak_rss,
            warnings: Vec::new(),
            seconds: PhaseSeconds::between(&f.phase_ends, Moment::wall_s_since),
            seconds_cpu: PhaseSeconds::between(&f.phase_ends, Moment::cpu_s_since),
        };
        summary.warnings =
            summary.find_warnings(f.max_spend, f.largest_host, f.pages_of_largest_host);
        if summary.rows_in
            != summary.rows_scheduled + summary.rows_zero_rate + summary.rows_rejected
        {
            bail!(
                "internal error: rows do not add up ({} in, {} scheduled, {} zero rate, {} rejected); nothing published",
                summary.rows_in,
                summary.rows_scheduled,
                summary.rows_zero_rate,
                summary.rows_rejected
            );
        }
        Ok(summary)
    }
}

/// The schedule part of a run's summary.
fn schedule_summary(
    plan: &RunPlan,
    f: &ScheduleFacts,
    intervals: &IntervalCounts,
) -> ScheduleSummary {
    let s = &plan.schedule;
    ScheduleSummary {
        start: crate::time::format_timestamp(s.start_us),
        start_source: match s.start_source {
            StartSource::Given => "given",
            StartSource::AfterPrevious => "after_previous",
            StartSource::Today => "today",
        }
        .to_owned(),
        previous: s.previous.as_ref().map(|p| p.dir.display().to_string()),
        fetches_from: s.fetches().name().to_owned(),
        counts: f.counts.clone(),
        state: f.state.clone(),
        min_interval_s: s.min_interval_s,
        max_interval_s: s.max_interval_s,
        intervals: intervals.clone(),
    }
}

/// The rolling timetable part of a run's summary.
fn rolling_summary(t: &RollingFacts, counts: &ScheduleCounts) -> RollingSummary {
    RollingSummary {
        mode: "rolling".to_owned(),
        crawler_rate_per_s: t.crawler_rate_per_s,
        fetches_due: counts.fetches_due_tonight,
        fetches_scheduled: t.totals.scheduled,
        fetches_dropped: t.totals.dropped,
        crawler_utilisation_max: t.totals.utilisation_max,
        delay_max_s: t.totals.delay_max_s,
    }
}

/// The cyclic timetable part of a run's summary.
fn timetable_summary(plan: &RunPlan, t: &VisitsFacts) -> TimetableSummary {
    let for_staleness = t.objective == VisitObjective::Staleness;
    let (wp, np, totals) = (t.weak_politeness, t.non_polite, t.totals);
    TimetableSummary {
        mode: "cyclic".to_owned(),
        sequencing: match plan.timetable.as_ref().map(|p| p.mode) {
            Some(TimetableMode::Cyclic(s)) => s.name().to_owned(),
            _ => String::new(),
        },
        visits_objective: t.objective.name().into(),
        crawler_rate_per_s: t.crawler_rate_per_s,
        visits_budget: t.visits.budget,
        visits_planned: t.visits.used,
        visits_scheduled: totals.scheduled,
        visits_dropped: totals.dropped,
        visits_dropped_at_wrap: totals.dropped_at_wrap,
        visits_served_round_the_cycle: totals.served_round_the_cycle,
        crawler_utilisation_max: totals.utilisation_max,
        delay_max_s: totals.delay_max_s,
        multiplier: t.visits.multiplier,
        rounds: t.visits.rounds,
        staleness: totals.value.staleness(),
        staleness_weak_politeness: for_staleness.then(|| wp.mean()),
        staleness_non_polite: for_staleness.then(|| np.mean()),
        // unvisited changing pages are starved in the plan, unserved ones in the timetable
        cost_harmonic: totals.value.cost_harmonic(),
        cost_harmonic_weak_politeness: wp.harmonic_cost().filter(|_| !for_staleness),
        cost_harmonic_non_polite: np.harmonic_cost().filter(|_| !for_staleness),
    }
}

impl Summary {
    /// What looks wrong with the run: most of the bandwidth unusable, crawler loads far apart,
    /// workers' shares of the pages far apart, many rows rejected, a multiplier search that
    /// stopped short. `max_spend` is the most the pages and hosts can take (fetches per day),
    /// `largest_host` the largest host budget, `largest_host_pages` its page count.
    fn find_warnings(
        &self,
        max_spend: f64,
        largest_host: f64,
        largest_host_pages: u64,
    ) -> Vec<String> {
        let mut w = Vec::new();
        let requested = self.bandwidth_requested;
        if requested > 0.0 && self.bandwidth_unusable > UNUSABLE_WARNING_SHARE * requested {
            w.push(format!(
                "{} of the bandwidth is unusable ({} of {} fetches/day): the pages and the hosts' politeness caps take at most {} a day; lower --bandwidth, or relax politeness (--min-delay-s, the hosts table)",
                percent(self.bandwidth_unusable / requested),
                num(self.bandwidth_unusable),
                num(requested),
                num(max_spend)
            ));
        }
        if self.crawler_load_max_over_mean > LOAD_WARNING_RATIO {
            let mean = self.bandwidth_used / self.crawlers.max(1) as f64;
            let why = if largest_host > mean {
                format!(
                    ": one host alone needs {} fetches/day, more than a crawler's mean share of {}, and a host has one crawler; fewer crawlers (--crawlers) even the loads out",
                    num(largest_host),
                    num(mean)
                )
            } else {
                String::new()
            };
            w.push(format!(
                "crawler loads are unbalanced: the busiest crawler has {}x the mean load{why}",
                num(self.crawler_load_max_over_mean)
            ));
        }
        if self.worker_pages_max_over_mean > WORKER_PAGES_WARNING_RATIO {
            let peers = (self.workers * self.processes).max(1);
            let mean = (self.rows_scheduled + self.rows_zero_rate) as f64 / peers as f64;
            let why = if largest_host_pages as f64 > mean {
                format!(
                    ": one host alone has {} pages, more than a worker's mean share of {}, and a host's pages stay on one worker; more workers will not even them out",
                    count(largest_host_pages),
                    num(mean)
                )
            } else {
                ": hosts go to workers by a hash of their name unless a sample of the input finds them heavy, and in an input sorted by host the samples, taken from a few places, find none".to_owned()
            };
            w.push(format!(
                "workers hold the pages unevenly: the busiest holds {}x the mean, and the phases that follow the pages wait for it{why}",
                num(self.worker_pages_max_over_mean)
            ));
        }
        if self.rows_in > 0
            && self.rows_rejected as f64 > REJECTED_WARNING_SHARE * self.rows_in as f64
        {
            let reasons: Vec<String> = self
                .rejected_by_reason
                .iter()
                .map(|(r, n)| format!("{r} {}", count(*n)))
                .collect();
            w.push(format!(
                "{} of the rows were rejected ({}): see rejected/ for each row and its reason",
                percent(self.rows_rejected as f64 / self.rows_in as f64),
                reasons.join(", ")
            ));
        }
        if self.bandwidth_relative_error.abs() > BANDWIDTH_ERROR_WARNING {
            w.push(format!(
                "the rates miss the usable bandwidth by {:+.3e} (relative): the multiplier search stopped at its round cap",
                self.bandwidth_relative_error
            ));
        }
        w
    }

    /// The costs on one line, each named as in every command (harmonic, binary, fixed-interval,
    /// discrete-slot), the run's own objective marked.
    fn costs(&self) -> String {
        let mark = |is: bool| if is { " (the objective)" } else { "" };
        let objective = Objective::ALL
            .into_iter()
            .find(|o| o.name() == self.objective);
        let mut parts = vec![
            format!(
                "harmonic {}{}",
                cost(self.cost_harmonic),
                mark(objective == Some(Objective::Harmonic))
            ),
            format!(
                "binary {}{}",
                num(self.cost_binary),
                mark(objective == Some(Objective::Binary))
            ),
        ];
        match objective {
            Some(Objective::BinaryFixed) => parts.push(format!(
                "fixed-interval {} (the objective)",
                cost(self.cost_objective)
            )),
            Some(Objective::BinaryDiscrete) => parts.push(format!(
                "discrete-slot {} (the objective)",
                cost(self.cost_objective)
            )),
            _ => {}
        }
        parts.join(", ")
    }

    /// A few lines for the terminal.
    pub fn human(&self, out: &std::path::Path) -> String {
        let mut s = String::new();
        let p = &self.provenance;
        let cluster = if self.processes > 1 {
            format!(
                "{} workers ({} threads x {} processes)",
                self.workers * self.processes,
                self.workers,
                self.processes
            )
        } else {
            format!("{} workers", self.workers)
        };
        s += &format!(
            "revisit {} run: {} objective, {cluster}\n",
            p.version, self.objective
        );
        let bytes: u64 = p.inputs.iter().map(|f| f.bytes).sum();
        let hosts_table = match &p.hosts_table {
            Some(h) => format!(
                "; hosts table {} ({} hosts)",
                h.path,
                count(h.hosts.unwrap_or(0))
            ),
            None => String::new(),
        };
        s += &format!(
            "  run {}, started {}; {}, {}{hosts_table}\n",
            p.run_id,
            p.started_at,
            super::format::counted(p.inputs.len() as u64, "input file"),
            super::format::bytes(bytes)
        );
        s += &format!(
            "  rows: {} in = {} scheduled + {} zero rate + {} rejected\n",
            count(self.rows_in),
            count(self.rows_scheduled),
            count(self.rows_zero_rate),
            count(self.rows_rejected)
        );
        for (reason, n) in &self.rejected_by_reason {
            s += &format!("    rejected {reason}: {}\n", count(*n));
        }
        s += &self.defaults.human();
        let used_share = if self.bandwidth_requested > 0.0 {
            self.bandwidth_used / self.bandwidth_requested
        } else {
            0.0
        };
        s += &format!(
            "  bandwidth: {} fetches/day used of {} ({}); unusable {}\n",
            num(self.bandwidth_used),
            num(self.bandwidth_requested),
            percent(used_share),
            num(self.bandwidth_unusable)
        );
        s += &format!(
            "  multiplier {} after {} rounds; {} of {} hosts held at their politeness cap\n",
            num(self.multiplier),
            self.rounds,
            count(self.hosts_capped),
            count(self.hosts)
        );
        s += &format!(
            "  cost: {}{}\n",
            self.costs(),
            if self.urls_starved > 0 {
                format!("; {} changing URLs never crawled", count(self.urls_starved))
            } else {
                String::new()
            }
        );
        s += &format!(
            "  crawlers: {}, the busiest at {}x the mean load\n",
            self.crawlers,
            num(self.crawler_load_max_over_mean)
        );
        if let Some(r) = &self.recommended_crawlers {
            s += &format!(
                "  indexer ({} pages/day, buffer {}): the static model recommends {} crawlers at {} pages/day each (cost {} lost pages/day)\n",
                num(r.index_rate),
                count(r.index_buffer as u64),
                r.crawlers,
                num(r.arrival_rate_per_crawler),
                num(r.cost)
            );
        }
        let c = &self.schedule;
        s += &format!(
            "  schedule from {} ({}): {} URLs on time, {} overdue (due tonight), {} new (phased in); {} URLs due tonight, {} fetches\n",
            c.start,
            c.start_source.replace('_', " "),
            count(c.counts.urls_on_time),
            count(c.counts.urls_overdue),
            count(c.counts.urls_new),
            count(c.counts.urls_due_tonight),
            count(c.counts.fetches_due_tonight),
        );
        if c.state.state_rows > 0 || c.state.log_rows > 0 {
            s += &format!(
                "    state: {} rows ({} used, {} dropped: no longer pages, {} invalid); fetch log: {} rows ({} used, {} failed, {} unknown URL, {} at or after the start, {} repeated, {} invalid)\n",
                count(c.state.state_rows),
                count(c.state.state_used),
                count(c.state.state_dropped),
                count(c.state.state_invalid),
                count(c.state.log_rows),
                count(c.state.log_used),
                count(c.state.log_failed),
                count(c.state.log_unknown_url),
                count(c.state.log_future),
                count(c.state.log_duplicate),
                count(c.state.log_invalid),
            );
        }
        if let Some(bad) = &c.state.first_invalid {
            s += &format!(
                "    first unusable row: {} row {} column {}\n",
                bad.file, bad.row, bad.column
            );
        }
        if c.min_interval_s.is_some()
            || c.max_interval_s.is_some()
            || c.intervals.urls_at_max_interval + c.intervals.urls_at_min_interval > 0
        {
            s += &format!(
                "    intervals: {} URLs fetched once per max interval, {} once per min interval\n",
                count(c.intervals.urls_at_max_interval),
                count(c.intervals.urls_at_min_interval),
            );
        }
        if c.intervals.urls_max_interval_unmet > 0 {
            s += &format!(
                "  WARNING: {} URLs get less than one fetch per max interval: their hosts' politeness caps cannot fit them\n",
                count(c.intervals.urls_max_interval_unmet)
            );
        }
        if let Some(l) = &self.learned {
            s += &format!(
                "  learned: change rates of {} URLs from their crawls over {} days ({} prior for {} without any); history: {} rows ({} used, {} before the window, {} after the start, {} unknown URL, {} repeated, {} invalid); previous learned: {} rows ({} used, {} dropped, {} invalid)\n",
                count(l.urls_observed),
                num(l.window_to_days - l.window_from_days),
                l.prior,
                count(l.urls_on_prior),
                count(l.history_rows),
                count(l.history_used),
                count(l.history_before_window),
                count(l.history_future),
                count(l.history_unknown_url),
                count(l.history_repeated),
                count(l.history_invalid),
                count(l.state_rows),
                count(l.state_used),
                count(l.state_dropped),
                count(l.state_invalid),
            );
            if let Some(bad) = &l.first_invalid {
                s += &format!(
                    "    first unusable row: {} row {} column {}\n",
                    bad.file, bad.row, bad.column
                );
            }
        }
        if let Some(Timetable::Rolling(t)) = &self.timetable {
            s += &format!(
                "  timetable (rolling, {:.4} fetches/s per crawler): {} fetches scheduled, {} of {} due tonight stay due (no polite slot on a free crawler before the night ends); max crawler utilisation {:.4}, largest delay {:.0} s\n",
                t.crawler_rate_per_s,
                count(t.fetches_scheduled),
                count(t.fetches_dropped),
                count(t.fetches_due),
                t.crawler_utilisation_max,
                t.delay_max_s,
            );
        }
        if let Some(Timetable::Cyclic(t)) = &self.timetable {
            // the served timetable against a bound, in per cent
            let over = |value: Option<f64>, bound: Option<f64>| match (value, bound) {
                (Some(v), Some(b)) if b > 0.0 => format!("{:+.2}%", 100.0 * (v / b - 1.0)),
                _ => "-".to_owned(),
            };
            s += &format!(
                "  timetable (cyclic, {}, integer visits for {}, {} fetches/s per crawler): {} visits scheduled, {} dropped ({} for want of crawler time, {} by a host's politeness across the wrap-around), of {} planned (budget {}); busiest crawler {} utilised\n",
                t.sequencing,
                t.visits_objective,
                num(t.crawler_rate_per_s),
                count(t.visits_scheduled),
                count(t.visits_dropped),
                count(t.visits_dropped - t.visits_dropped_at_wrap),
                count(t.visits_dropped_at_wrap),
                count(t.visits_planned),
                count(t.visits_budget),
                percent(t.crawler_utilisation_max)
            );
            if t.cost_harmonic_weak_politeness.is_some() {
                s += &format!(
                    "    timetable harmonic cost {}, Weak-Politeness bound {} ({}), non-polite bound {} ({}); staleness {}\n",
                    cost(t.cost_harmonic),
                    cost(t.cost_harmonic_weak_politeness),
                    over(t.cost_harmonic, t.cost_harmonic_weak_politeness),
                    cost(t.cost_harmonic_non_polite),
                    over(t.cost_harmonic, t.cost_harmonic_non_polite),
                    num(t.staleness),
                );
            } else {
                s += &format!(
                    "    timetable staleness {}, Weak-Politeness bound {} ({}), non-polite bound {} ({})\n",
                    num(t.staleness),
                    cost(t.staleness_weak_politeness),
                    over(Some(t.staleness), t.staleness_weak_politeness),
                    cost(t.staleness_non_polite),
                    over(Some(t.staleness), t.staleness_non_polite),
                );
            }
            s += &format!(
                "    integer multiplier {} after {} rounds\n",
                num(t.multiplier),
                t.rounds
            );
        }
        s += &format!(
            "  seconds: read {:.2}, exchange {:.2}, {}state {:.2}, solve {:.2}, value {:.2}, write {:.2}, total {:.2}; peak RSS {}\n",
            self.seconds.read,
            self.seconds.exchange,
            if self.learned.is_some() {
                format!("learn {:.2}, ", self.seconds.learn)
            } else {
                String::new()
            },
            self.seconds.state,
            self.seconds.solve,
            self.seconds.value,
            self.seconds.write,
            self.seconds.total,
            super::format::bytes(self.peak_rss_bytes)
        );
        s += &format!("  output: {}\n", super::format::path(out));
        for w in &self.warnings {
            s += &format!("  WARNING: {w}\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> Summary {
        Summary {
            objective: "harmonic".into(),
            bandwidth_requested: 100.0,
            bandwidth_used: 100.0,
            crawlers: 10,
            crawler_load_max_over_mean: 1.01,
            rows_in: 100,
            rows_scheduled: 100,
            ..Summary::default()
        }
    }

    #[test]
    fn a_sound_run_has_no_warning() {
        let s = summary();
        assert!(s.find_warnings(100.0, 1.0, 1).is_empty());
        assert!(!s.human(std::path::Path::new("out")).contains("WARNING"));
    }

    #[test]
    fn the_summary_warns_when_the_rates_miss_the_bandwidth() {
        let mut s = summary();
        s.bandwidth_used = 99.9;
        s.bandwidth_relative_error = -1e-3;
        s.warnings = s.find_warnings(100.0, 1.0, 1);
        let text = s.human(std::path::Path::new("out"));
        assert!(
            text.contains("WARNING") && text.contains("-1.000e-3"),
            "{text}"
        );
    }

    #[test]
    fn unusable_bandwidth_unbalanced_crawlers_and_rejected_rows_are_warned_of() {
        let mut s = summary();
        s.bandwidth_requested = 1000.0;
        s.bandwidth_unusable = 970.0;
        s.bandwidth_used = 30.0;
        s.crawler_load_max_over_mean = 2.35;
        s.rows_in = 5;
        s.rows_scheduled = 1;
        s.rows_rejected = 4;
        s.rejected_by_reason = [("change_rate_missing".to_owned(), 4)].into();
        let w = s.find_warnings(30.0, 12.0, 1);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].starts_with("97% of the bandwidth is unusable (970 of 1,000"),
            "{}",
            w[0]
        );
        // a host of 12 a day is more than the mean crawler's 3: the imbalance is the host's
        assert!(
            w[1].contains("2.35x") && w[1].contains("one host alone needs 12"),
            "{}",
            w[1]
        );
        assert!(
            w[2].starts_with("80% of the rows") && w[2].contains("change_rate_missing 4"),
            "{}",
            w[2]
        );
    }

    #[test]
    fn workers_holding_the_pages_unevenly_are_warned_of_and_told_why() {
        let mut s = summary();
        (s.workers, s.processes) = (2, 2);
        s.rows_scheduled = 1000;
        s.worker_pages_max_over_mean = 1.5;
        assert!(
            s.find_warnings(100.0, 1.0, 900).is_empty(),
            "1.5x is tolerated"
        );
        s.worker_pages_max_over_mean = 3.6;
        // 4 workers, 250 pages each on average: a host of 900 is the reason
        let w = s.find_warnings(100.0, 1.0, 900);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("3.6x the mean") && w[0].contains("one host alone has 900 pages"),
            "{}",
            w[0]
        );
        let w = s.find_warnings(100.0, 1.0, 200);
        assert!(w[0].contains("by a hash of their name"), "{}", w[0]);
    }

    #[test]
    fn each_cost_is_printed_once_by_its_name() {
        let mut s = summary();
        s.cost_harmonic = Some(63_950.25);
        s.cost_binary = 1234.6;
        s.cost_objective = Some(63_950.25);
        assert_eq!(s.costs(), "harmonic 63,950 (the objective), binary 1,235");
        s.objective = "binary-fixed".into();
        s.cost_harmonic = None;
        s.cost_objective = Some(1100.0);
        assert_eq!(
            s.costs(),
            "harmonic inf, binary 1,235, fixed-interval 1,100 (the objective)"
        );
    }
}
