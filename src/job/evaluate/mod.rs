//! `revisit evaluate`, one worker's program: the value of a rates table ([`rates`]) or a timetable
//! ([`visits`]) on a page set, beside each freshness objective's optimum at the same bandwidth, with
//! and without politeness. Table rows travel to their host's worker like page rows do.

mod rates;
mod visits;

use anyhow::{bail, Result};
use revisit_core::fetch_time::{FetchTime, TableTerms};
use revisit_core::reduce::AllReduce;
use revisit_core::solve::optimum::{optima as optimum_pair, Warm};
use revisit_core::solve::{Pages, Problem};
use timely::worker::Worker;

use super::channel::Reducer;
use super::progress::Progress;
pub(crate) use super::route::{route_keyed, sorted_by_page, KeyedMessage, Pairs};
use super::share::ProcessShare;
use crate::plan::evaluate::{EvaluatePlan, Table, OBJECTIVES};
use crate::report::evaluate::{FetchTimeReport, OptimumGap, Report};

/// Runs worker `worker`'s share of `plan`; worker 0 returns the report.
pub fn worker(
    worker: &mut Worker,
    share: &ProcessShare,
    plan: &EvaluatePlan,
) -> Result<Option<Report>> {
    match &plan.table {
        Table::Rates(specs) => {
            rates::worker(worker, share, plan, specs).map(|r| r.map(Report::Rates))
        }
        Table::Visits {
            files,
            horizon_source,
        } => visits::worker(worker, share, plan, files, *horizon_source)
            .map(|r| r.map(Report::Visits)),
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
        let both = optimum_pair(&problem, &mut Warm::default(), reducer)?;
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
