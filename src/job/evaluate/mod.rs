//! `revisit evaluate`, one worker's program: the value of a rates table ([`rates`]) or a timetable
//! ([`visits`]) on a page set, beside each freshness objective's optimum at the same bandwidth, with
//! and without politeness. Table rows travel to their host's worker like page rows do.

mod rates;
mod visits;

use anyhow::{bail, Result};
use revisit_core::fetch_time::{FetchTime, TableTerms};
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::solve::optimum::{optima as optimum_pair, Warm};
use revisit_core::solve::{Pages, Problem};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::channel::{Reducer, Shuffle};
use super::keys::{route, url_id};
use super::progress::Progress;
use crate::io::politeness_key::PolitenessKey;
use crate::io::rates_in::InvalidRate;
use crate::plan::evaluate::{EvaluatePlan, Table, OBJECTIVES};
use crate::report::evaluate::{FetchTimeReport, OptimumGap, Report};

/// (url key, value) pairs in one message between workers.
const PAIRS_PER_MESSAGE: usize = 1 << 16;

/// Runs worker `worker`'s share of `plan`; worker 0 returns the report.
pub fn worker(worker: &mut Worker, plan: &EvaluatePlan) -> Result<Option<Report>> {
    match &plan.table {
        Table::Rates(specs) => rates::worker(worker, plan, specs).map(|r| r.map(Report::Rates)),
        Table::Visits {
            files,
            horizon_source,
        } => visits::worker(worker, plan, files, *horizon_source).map(|r| r.map(Report::Visits)),
    }
}

/// Each objective of [`OBJECTIVES`]'s optima at `bandwidth`, polite and without caps, beside
/// `cost(objective)`, the evaluated policy's cost by that objective's measure; also each optimum's
/// figures. Every worker calls it (the searches are all-reduces).
fn optima(
    pages: &Pages,
    bandwidth: f64,
    reducer: &mut Reducer<'_>,
    cost: impl Fn(revisit_core::objective::Objective) -> Option<f64>,
    progress: &Progress,
) -> Result<(
    Vec<OptimumGap>,
    Vec<[revisit_core::solve::optimum::Optimum; 2]>,
)> {
    let mut gaps = Vec::new();
    let mut all = Vec::new();
    for objective in OBJECTIVES {
        let problem = Problem::new(pages, objective, bandwidth)?;
        let both = optimum_pair(&problem, &mut Warm::default(), reducer);
        for o in &both {
            progress.say(format!(
                "{} optimum {}: {} rounds",
                objective.name(),
                if o.polite { "polite" } else { "without caps" },
                o.rounds
            ));
        }
        gaps.push(OptimumGap::new(objective, cost(objective), &both));
        all.push(both);
    }
    Ok((gaps, all))
}

/// The table valued under random fetch times: every worker's pages' terms (`rates` per page, their
/// sum over all workers `total_rate`), then the report on the lead, which gives the table's
/// `per_day` fetches. Fails alike on every worker.
fn fetch_time(
    reducer: &mut Reducer<'_>,
    plan: &EvaluatePlan,
    pages: &Pages,
    (rates, total_rate): (&[f64], f64),
    per_day: f64,
    urls: u64,
) -> Result<Option<FetchTimeReport>> {
    let Some((spec, fetch)) = &plan.fetch_time else {
        return Ok(None);
    };
    let sums = reducer.all_reduce(table_terms(fetch, pages, rates, total_rate));
    // every worker fails together, after the all-reduce
    if let Some(e) = sums.error {
        bail!("--fetch-time: {e}");
    }
    Ok(Some(FetchTimeReport::new(
        spec,
        fetch,
        &sums.totals(),
        urls,
        per_day,
    )))
}

/// This worker's pages' terms, summed per host in page order.
fn table_terms(fetch: &FetchTime, pages: &Pages, rates: &[f64], total_rate: f64) -> TableTerms {
    let mut sums = TableTerms::default();
    for h in 0..pages.hosts() {
        let r = pages.host_pages(h);
        sums.add_host(
            fetch,
            &pages.change_rate()[r.clone()],
            &rates[r],
            total_rate,
        );
    }
    sums
}

/// A message of (url key, value) pairs for one worker.
type KeyedMessage = (u32, Vec<(u128, f64)>);

/// Reads `units` of a (url, host, value) table with `read_unit` and sends each (url key, value) to
/// the worker of its host (the host column, else the URL's); returns what this worker received
/// and the read status every worker agrees on. Fails alike on every worker.
fn route_keyed<U: Copy>(
    politeness: PolitenessKey,
    reducer: &mut Reducer<'_>,
    channel: &mut Shuffle<KeyedMessage>,
    units: &[U],
    file_of: impl Fn(&U) -> usize,
    mut read_unit: impl FnMut(
        U,
        &mut dyn FnMut(&str, Option<&str>, f64),
        &mut dyn FnMut(InvalidRate),
    ) -> Result<u64>,
) -> Result<(Vec<KeyedMessage>, TableStatus)> {
    let peers = reducer.worker.peers();
    let mut outgoing: Vec<Vec<(u128, f64)>> = vec![Vec::new(); peers];
    let mut status = TableStatus::default();
    for &unit in units {
        let file = file_of(&unit) as u64;
        let (mut unmatched, mut invalid, mut first_invalid) = (0, 0, None);
        let result = read_unit(
            unit,
            &mut |url, host, value| {
                // the politeness key the pages were routed by (a table's own host column holds
                // the key when it came from `run`; with ip-column, it must)
                let host = match politeness {
                    PolitenessKey::IpColumn => host.and_then(|h| politeness.table_value(h)),
                    key => key.of(url, host, None).ok().map(|k| k.into_owned()),
                };
                let Some(host) = host else {
                    unmatched += 1; // no key: it cannot be any page's URL
                    return;
                };
                let dest = route(host.as_bytes(), peers) as usize;
                outgoing[dest].push((url_id(url.as_bytes()), value));
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

/// The rows of a table read by every worker: how many, how many unusable, the first of those.
#[derive(Clone, Default, Serialize, Deserialize)]
struct TableStatus {
    error: Option<String>,
    rows: u64,
    invalid: u64,
    unmatched: u64,
    /// The first invalid row by (file, row).
    first_invalid: Option<(u64, InvalidRate)>,
}

impl Combine for TableStatus {
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
