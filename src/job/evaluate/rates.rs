//! `revisit evaluate --rates`: the value of any rates table on a page set, and its gap to the
//! optimum of each freshness objective at the same bandwidth, with and without politeness.

use std::time::Instant;

use anyhow::{bail, Result};
use revisit_core::objective::value::{HostValue, PolicyValue};
use revisit_core::objective::Page;
use revisit_core::reduce::{AllReduce, Combine};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::{fetch_time, optima, route_keyed, sorted_pairs, KeyedMessage, Pairs};
use crate::io::inputs;
use crate::io::rates_in;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::keys::UrlKey;
use crate::job::load::{load, LoadChannels};
use crate::job::progress::Progress;
use crate::job::share::ProcessShare;
use crate::plan::evaluate::EvaluatePlan;
use crate::report::evaluate::Evaluation;
use crate::report::provenance::{InputFile, Provenance};
use crate::report::rows::{by_reason, DefaultsUsed};
use crate::report::TotalSeconds;

/// Runs worker `worker`'s share of a rates evaluation; worker 0 returns the report.
pub fn worker(
    worker: &mut Worker,
    share: &ProcessShare,
    plan: &EvaluatePlan,
    specs: &[String],
) -> Result<Option<Evaluation>> {
    let started = Instant::now();
    let (index, peers) = (worker.index(), worker.peers());
    let progress = Progress::of_worker(!plan.quiet, index, peers, started);
    let mut pages_channel = LoadChannels::new(worker);
    let mut rates_channel = Shuffle::<KeyedMessage>::new(worker, "RatesByHost", |m| m.0 as u64);
    let mut reducer = Reducer::new(worker);
    let identity = crate::job::identity::agree(&mut reducer);
    // Every worker opens the rates files first: a bad one fails everywhere before any data moves.
    let rate_files = rates_in::open_all(&inputs::expand(specs)?)?;
    let loaded = load(
        &mut reducer,
        &mut pages_channel,
        share,
        &plan.pages,
        &progress,
    )?;

    // Read my units of the rates table; send each (url key, rate) to its host's worker.
    let units = rates_in::units(&rate_files);
    let (received, status) = route_keyed(
        loaded.by_host(plan.pages.politeness),
        &mut reducer,
        share,
        &mut rates_channel,
        &units,
        |u| u.file,
        |unit, row, invalid| rates_in::read_unit(&rate_files[unit.file], unit, row, invalid),
    )?;
    progress.say(format!("read {} rates rows; joining to pages", status.rows));

    let (arranged, pages) = (&loaded.arranged, &loaded.arranged.pages);
    let (join, rates) = join(received, arranged);
    let join = reducer.all_reduce(join);
    let given = join.value.figures();
    let bandwidth = plan.bandwidth.unwrap_or(given.bandwidth);
    if bandwidth.is_nan() || bandwidth <= 0.0 {
        bail!(
            "the evaluated rates sum to {} fetches per day: nothing to compare with (give --bandwidth, or check that the rates table's URLs are the pages' URLs)",
            given.bandwidth
        );
    }
    // Under random fetch times the table only gives shares, so the sum of rates (all-reduced
    // above) must be known before any page's share.
    let fetch_time = fetch_time(
        &mut reducer,
        plan,
        pages,
        (&rates, given.bandwidth),
        given.bandwidth,
        loaded.pages,
    )?;
    let (optima, _) = optima(pages, bandwidth, &mut reducer, |o| given.cost(o), &progress)?;
    if index != 0 {
        return Ok(None);
    }
    let mut inputs = loaded.inputs.clone();
    inputs.extend(
        rate_files
            .iter()
            .map(|f| InputFile::new(f.path(), "rates", inputs::size(f.path()))),
    );
    Ok(Some(Evaluation {
        provenance: Provenance::new(
            "evaluate",
            identity,
            inputs,
            loaded.hosts_table.clone(),
            &plan.options,
        ),
        urls: loaded.pages,
        rows_in: loaded.rows_in,
        rows_rejected: loaded.rows_rejected(),
        rejected_by_reason: by_reason(&loaded.rejected_by_reason),
        defaults: DefaultsUsed::new(
            &plan.pages.defaults,
            loaded.default_importance,
            loaded.default_change_rate,
        ),
        rates_rows: status.rows,
        rates_matched: join.matched,
        rates_unmatched: join.unmatched + status.unmatched,
        rates_duplicate: join.duplicate,
        rates_invalid: status.invalid,
        first_invalid: status.first_invalid.map(|(_, b)| b),
        pages_without_rate: join.pages_without_rate,
        hosts_over_cap: join.hosts_over_cap,
        max_cap_ratio: join.max_cap_ratio,
        bandwidth,
        value: given,
        optima,
        fetch_time,
        workers: peers / plan.cluster.processes(),
        processes: plan.cluster.processes(),
        seconds: TotalSeconds {
            total: started.elapsed().as_secs_f64(),
        },
    }))
}

/// Joins the received (url key, rate) pairs to this worker's pages: the rates' value and each
/// host's spend against its cap; also each page's rate (0 without a row).
fn join(received: Vec<Pairs>, arranged: &Arranged) -> (Join, Vec<f64>) {
    // by URL key, in a canonical order so duplicates resolve alike (the lowest rate)
    // a total order (equal pairs are the same bits)
    let mut pairs = sorted_pairs(received, f64::total_cmp);
    let before = pairs.len();
    pairs.dedup_by_key(|p| p.0);
    let pages = &arranged.pages;
    let mut join = Join {
        duplicate: (before - pairs.len()) as u64,
        ..Default::default()
    };
    let mut rates = vec![0.0; pages.len()];
    let mut matched = vec![false; pairs.len()];
    for h in 0..pages.hosts() {
        let mut host = HostValue::default();
        let mut spend = 0.0;
        for i in pages.host_pages(h) {
            let key = UrlKey::from(arranged.url(h, i).id());
            if let Ok(k) = pairs.binary_search_by(|p| p.0.cmp(&key)) {
                rates[i] = pairs[k].1;
                matched[k] = true;
            } else {
                join.pages_without_rate += 1;
            }
            let page = Page {
                importance: pages.importance()[i],
                change_rate: pages.change_rate()[i],
                slot_days: 0.0,
            };
            host.add(page, rates[i], pages.complete_obs()[i]);
            spend += rates[i];
        }
        join.value.add_host(&host);
        let cap = pages.cap(h);
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
    (join, rates)
}

/// A worker's share of the join of rates to pages.
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
