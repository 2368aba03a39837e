//! `revisit evaluate --rates`: the value of any rates table on a page set, and its gap to the
//! optimum of each freshness objective at the same bandwidth, with and without politeness.

use std::time::Instant;

use anyhow::{bail, Result};
use revisit_core::objective::value::{HostValue, PolicyValue};
use revisit_core::objective::Page;
use revisit_core::reduce::{AllReduce, Combine};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::{fetch_time, optima, KeyedMessage};
use crate::io::inputs;
use crate::io::rates_in;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::keys::UrlKey;
use crate::job::load::{load, LoadChannels};
use crate::job::page_key::{PageFinder, PageKey};
use crate::job::progress::Progress;
use crate::job::route::route_keyed;
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
    let mut rates_channel =
        Shuffle::<KeyedMessage<f64, PageKey>>::new(worker, "RatesByHost", |m| m.0 as u64);
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

    // Read my units of the rates table; send each ((host, URL) key, rate) to its host's worker,
    // which folds it into its pages' rates as it arrives.
    let (arranged, pages) = (&loaded.arranged, &loaded.arranged.pages);
    let urls = arranged.url_keys();
    let mut rated = Rated::new(arranged, &urls);
    let units = rates_in::units(&rate_files);
    let status = route_keyed(
        loaded.by_host(plan.pages.politeness),
        &mut reducer,
        share,
        &mut rates_channel,
        &units,
        |u| u.file,
        |unit, row, invalid| rates_in::read_unit(&rate_files[unit.file], unit, row, invalid),
        |rows| rated.fold(&rows),
    )?;
    progress.say(format!("read {} rates rows; valuing them", status.rows));
    let (join, rates) = join(rated, arranged);
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

/// Each page's rate from the rates table's rows as they arrive: the lowest of a URL's rows,
/// whatever their order. Rows come keyed by (host, URL) identity, so a table in the pages'
/// canonical order (every one a run writes) is folded in walking the pages forward, and no row
/// is held: the rows were once collected and sorted by URL, and each page binary-searched them,
/// a cache miss at every step (the join's time on 10M pages).
struct Rated<'a> {
    finder: PageFinder<'a>,
    rates: Vec<f64>,
    /// Whether each page has a row.
    seen: Vec<bool>,
    matched: u64,
    duplicate: u64,
    /// The keys of rows of no page of this worker.
    no_page: Vec<PageKey>,
}

impl<'a> Rated<'a> {
    /// No rates yet for the pages of `arranged` (`urls` their URL keys).
    fn new(arranged: &'a Arranged, urls: &'a [UrlKey]) -> Self {
        let n = arranged.pages.len();
        Rated {
            finder: arranged.finder(urls),
            rates: vec![0.0; n],
            seen: vec![false; n],
            matched: 0,
            duplicate: 0,
            no_page: Vec::new(),
        }
    }

    /// Folds in `rows` ((host, URL) key, rate).
    fn fold(&mut self, rows: &[(PageKey, f64)]) {
        for &(key, rate) in rows {
            match self.finder.find(key) {
                Some(i) if self.seen[i] => {
                    self.duplicate += 1;
                    if rate.total_cmp(&self.rates[i]).is_lt() {
                        self.rates[i] = rate;
                    }
                }
                Some(i) => {
                    self.seen[i] = true;
                    self.rates[i] = rate;
                    self.matched += 1;
                }
                None => self.no_page.push(key),
            }
        }
    }
}

/// This worker's share of the rates' value and each host's spend against its cap, from the rates
/// `rated` (0 for a page without a row); also each page's rate.
fn join(rated: Rated<'_>, arranged: &Arranged) -> (Join, Vec<f64>) {
    let Rated {
        rates,
        matched,
        mut duplicate,
        mut no_page,
        ..
    } = rated;
    // rows of no page, each URL counted once, its repeats as duplicates
    no_page.sort_unstable();
    let before = no_page.len();
    no_page.dedup();
    duplicate += (before - no_page.len()) as u64;
    let pages = &arranged.pages;
    let mut join = Join {
        matched,
        unmatched: no_page.len() as u64,
        duplicate,
        pages_without_rate: pages.len() as u64 - matched,
        ..Default::default()
    };
    for h in 0..pages.hosts() {
        let mut host = HostValue::default();
        let mut spend = 0.0;
        for i in pages.host_pages(h) {
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
