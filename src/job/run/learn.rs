//! The learn phase of `run --history`: the previous night's learned table and tonight's crawl
//! history, read by every worker, sent to the worker of their URL's host and folded into each
//! page's evidence by URL; then every page's change rate estimated with the stand-alone
//! `estimate`'s code ([`revisit_core::estimate::learn`]). The history is read in time slices (see
//! [`history::slices`]), so only one slice's rows are ever held. Every row is accounted for.

use crate::report::clock::Moment;

use anyhow::{bail, Result};
use revisit_core::estimate::{learn, Estimate, Evidence, Observation, Window};
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::units::SECONDS_PER_DAY;
use serde::{Deserialize, Serialize};

use crate::io::history;
use crate::io::inputs;
use crate::io::learned;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::keys::UrlKey;
use crate::job::progress::Progress;
use crate::job::route::{
    collected_pairs, route_keyed, sorted_pairs, ByHost, KeyedMessage, TableStatus,
};
use crate::job::share::ProcessShare;
use crate::plan::run::LearnPlan;
use crate::report::run::LearnCounts;

/// An observation in transit: days since the epoch, and its flags ([`CHANGED`], [`COMPLETE`]).
pub type ObservationValue = (f64, u8);
const CHANGED: u8 = 1;
const COMPLETE: u8 = 2;

/// The dataflows of the learn phase (built on every worker, in this order, when the plan learns).
pub struct LearnChannels {
    pub state: Shuffle<KeyedMessage<Vec<u8>>>,
    pub history: Shuffle<KeyedMessage<ObservationValue>>,
}

impl LearnChannels {
    pub fn new(worker: &mut timely::worker::Worker) -> Self {
        LearnChannels {
            state: Shuffle::new(worker, "LearnedByHost", |m: &KeyedMessage<Vec<u8>>| {
                m.0 as u64
            }),
            history: Shuffle::new(
                worker,
                "HistoryByHost",
                |m: &KeyedMessage<ObservationValue>| m.0 as u64,
            ),
        }
    }
}

/// What this worker's pages learned, page by page, and the counts every worker agrees on.
pub struct Learned {
    /// Each page's evidence in the window (what tomorrow continues from).
    pub evidence: Vec<Evidence>,
    pub estimates: Vec<Estimate>,
    /// The history's first observation, days since the epoch (every worker's).
    pub first_observation: f64,
    pub counts: LearnCounts,
    /// When learning ended, on this worker.
    pub done: Moment,
}

/// The smallest first observation of every worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct First(f64);

impl Combine for First {
    fn combine(&mut self, o: Self) {
        self.0 = self.0.min(o.0);
    }
}

/// Reads the previous learned table and the history of `plan` (their units shared by the
/// process's workers as `share` hands them out), sends every row to its host's worker, folds them
/// into `arranged`'s pages' evidence and estimates every page's change rate at the night's start
/// `start_us`. Every worker calls it; it fails alike on every worker.
#[allow(clippy::too_many_arguments)]
pub fn learn_rates(
    reducer: &mut Reducer<'_>,
    share: &ProcessShare,
    channels: &mut LearnChannels,
    plan: &LearnPlan,
    start_us: i64,
    by_host: ByHost<'_>,
    arranged: &Arranged,
    progress: &Progress,
) -> Result<Learned> {
    let n = arranged.pages.len();
    let to = start_us as f64 / 1e6 / SECONDS_PER_DAY;
    // rows before this only close the interval after them: counted apart
    let window_start = plan.window_days.map_or(f64::NEG_INFINITY, |d| to - d);
    let mut counts = LearnCounts {
        prior: plan.prior.name().to_owned(),
        ..LearnCounts::default()
    };
    // Each page's evidence is built in URL-key order, the order the previous night's rows and
    // every slice of the history are sorted in, so that folding them in walks forward through
    // both (in page order, each row's page was a cache miss: a tenth of the phase's CPU on 1M
    // URLs with 30 days of history); it is put in page order once all are in.
    let mut by_key = vec![Evidence::default(); n];
    let mut pages = arranged.pages_by_url_key();
    let mut first = f64::INFINITY;
    // Every worker opens the files first: a bad one fails everywhere before any data moves.
    let previous = match &plan.previous {
        Some(dir) => learned::open(dir)?,
        None => learned::LearnedTable::default(),
    };
    let files = history::open_all(&inputs::expand(&plan.history)?)?;

    // The previous night's evidence, joined to the pages by URL.
    let units = learned::units(&previous);
    let mut received = Vec::new();
    let status = route_keyed(
        by_host,
        reducer,
        share,
        &mut channels.state,
        &units,
        |u| u.file,
        |unit, row, invalid| {
            learned::read_unit(
                &previous,
                unit,
                |url, host, e| row(url, Some(host), e.to_bytes()),
                invalid,
            )
        },
        |message| received.push(message),
    )?;
    counts.state_rows = status.rows;
    counts.state_invalid = status.invalid + status.unmatched;
    note_invalid(&mut counts, &status);
    // a byte vector is not `Copy`, which the radix passes need (they carry rows by copying)
    let mut state = collected_pairs(received);
    state.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    state.dedup_by_key(|s| s.0);
    let mut at = 0;
    let mut state_used = 0u64;
    for (&(key, _), page) in pages.iter().zip(&mut by_key) {
        while at < state.len() && state[at].0 < key {
            at += 1;
        }
        if let Some((_, bytes)) = state.get(at).filter(|s| s.0 == key) {
            // decoded by the reader already: it cannot fail here
            if let Some(e) = Evidence::from_bytes(bytes) {
                *page = e;
                state_used += 1;
            }
        }
    }
    let state_dropped = state.len() as u64 - state_used;
    drop(state);

    // Tonight's history, one time slice at a time.
    let slices = history::slices(&files);
    let mut local = LearnCounts::default();
    for (s, slice) in slices.iter().enumerate() {
        let units = history::units(&files, slice);
        let mut received = Vec::new();
        let status = route_keyed(
            by_host,
            reducer,
            share,
            &mut channels.history,
            &units,
            |u| u.file,
            |unit, row, invalid| {
                history::read_unit(
                    &files[unit.file],
                    unit,
                    |r| {
                        let at_days = r.at_s / SECONDS_PER_DAY;
                        if at_days <= to {
                            first = first.min(at_days);
                        }
                        let flags = if r.changed { CHANGED } else { 0 }
                            | if r.complete { COMPLETE } else { 0 };
                        row(r.url, r.host, (at_days, flags))
                    },
                    invalid,
                )
            },
            |message| received.push(message),
        )?;
        counts.history_rows += status.rows;
        counts.history_invalid += status.invalid;
        counts.history_unknown_url += status.unmatched;
        note_invalid(&mut counts, &status);
        // by time, then flags: a total order, so arrival order never decides which of two
        // observations at one time comes first
        let rows = sorted_pairs(received, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut at = 0;
        let mut matched = 0u64;
        for (&(key, _), e) in pages.iter().zip(&mut by_key) {
            while at < rows.len() && rows[at].0 < key {
                at += 1;
            }
            for &(_, (at_days, flags)) in rows[at..].iter().take_while(|r| r.0 == key) {
                matched += 1;
                if at_days > to {
                    local.history_future += 1;
                    continue;
                }
                let o = Observation {
                    at_days,
                    changed: flags & CHANGED != 0,
                    complete: flags & COMPLETE != 0,
                };
                if e.observe(o).is_ok() {
                    local.history_used += 1;
                    local.history_before_window += (at_days < window_start) as u64;
                } else {
                    local.history_repeated += 1;
                }
            }
        }
        local.history_unknown_url += rows.len() as u64 - matched;
        progress.say(format!(
            "history slice {} of {}: {} rows folded into the pages' evidence",
            s + 1,
            slices.len(),
            rows.len()
        ));
    }

    let mut evidence = in_page_order(by_key, &mut pages);

    // A page the input marks as completely observed is one even on a night its feed had no notice
    // (a page that never changes sends none): its rate is then its notices over the window.
    for (e, &complete) in evidence.iter_mut().zip(arranged.pages.complete_obs()) {
        e.complete |= complete;
    }
    // The window, from the first observation of the whole history (kept with the state).
    let first = reducer.all_reduce(First(first)).0;
    let first = previous.first_observation.map_or(first, |p| p.min(first));
    let window = Window::ending(
        to,
        plan.window_days,
        if first.is_finite() { first } else { to },
    );
    let mut host_of = vec![0u32; n];
    for h in 0..arranged.pages.hosts() {
        for i in arranged.pages.host_pages(h) {
            host_of[i] = h as u32;
        }
    }
    let estimates = learn(
        &evidence,
        &host_of,
        arranged.pages.hosts(),
        window,
        plan.prior,
        reducer,
    );
    // what the window has moved past is never needed again
    let first_day = window.first_day();
    for e in &mut evidence {
        e.forget_before(first_day);
    }
    local.urls_observed = estimates.iter().filter(|e| e.observations > 0).count() as u64;
    local.urls_on_prior = n as u64 - local.urls_observed;
    local.state_used = state_used;
    local.state_dropped = state_dropped;
    let local = reducer.all_reduce(local);
    counts.combine(local);
    counts.window_from_days = window.from;
    counts.window_to_days = window.to;
    if counts.history_rows > 0 && counts.history_used == 0 && counts.state_used == 0 {
        let first = counts
            .first_invalid
            .as_ref()
            .map_or_else(String::new, |bad| format!(" (the first unusable: {bad})"));
        bail!(
            "--history: none of its {} rows is about a page before the night's start{first}; \
             give the crawl log of these pages",
            counts.history_rows
        );
    }
    progress.say(format!(
        "learned change rates: {} pages observed, {} on the {} prior",
        counts.urls_observed, counts.urls_on_prior, counts.prior
    ));
    Ok(Learned {
        evidence,
        estimates,
        first_observation: first,
        counts,
        done: Moment::now(),
    })
}

/// The evidence `by_key` (page `pages[j].1`'s at `j`) in page order, moved in place: a cycle at a
/// time, each swap putting one page's evidence where it belongs (no second vector of them at the
/// phase's end). `pages` is left in page order.
fn in_page_order(mut by_key: Vec<Evidence>, pages: &mut [(UrlKey, u32)]) -> Vec<Evidence> {
    for j in 0..pages.len() {
        loop {
            let to = pages[j].1 as usize;
            if to == j {
                break;
            }
            by_key.swap(j, to);
            pages.swap(j, to);
        }
    }
    by_key
}

/// Keeps the first unusable row a routing found.
fn note_invalid(counts: &mut LearnCounts, status: &TableStatus) {
    if let Some((_, bad)) = &status.first_invalid {
        if counts.first_invalid.is_none() {
            counts.first_invalid = Some(bad.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use revisit_core::estimate::Observation;

    proptest! {
        /// Whatever the keys' order, every page gets the evidence built under its key.
        #[test]
        fn evidence_built_by_key_lands_on_its_page(order in Just((0..300u32).collect::<Vec<_>>()).prop_shuffle()) {
            // page i's evidence: one observation on day i, so each is told from the others
            let mut pages: Vec<(UrlKey, u32)> =
                order.iter().map(|&i| (UrlKey::from(u128::from(i) << 70), i)).collect();
            let by_key: Vec<Evidence> = pages
                .iter()
                .map(|&(_, i)| {
                    let mut e = Evidence::default();
                    e.observe(Observation { at_days: f64::from(i), changed: false, complete: false })
                        .expect("a first observation");
                    e
                })
                .collect();
            let evidence = in_page_order(by_key, &mut pages);
            for (i, e) in evidence.iter().enumerate() {
                prop_assert_eq!(e.last_at, Some(i as f64));
            }
            prop_assert!(pages.iter().enumerate().all(|(j, p)| p.1 as usize == j));
        }
    }
}
