//! The state phase of a nightly `run`: the previous night's schedule (`--previous`) and the fetches
//! that happened (`--fetched`, else the previous night's visits taken as made), read by every
//! worker, sent to the worker of their URL's host and joined to its pages by URL. Every row is accounted for: used, about no page (a URL that left the
//! page set, counted), in the future, a repeat, or invalid (the first named by file and row).

use anyhow::{bail, Result};
use revisit_core::reduce::AllReduce;

use crate::io::fetched_in;
use crate::io::inputs;
use crate::io::rates_in::InvalidRate;
use crate::io::state_in;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::keys::UrlKey;
use crate::job::progress::Progress;
use crate::job::route::{route_keyed, sorted_pairs, ByHost, KeyedMessage, TableStatus};
use crate::job::share::ProcessShare;
use crate::plan::run::{Fetches, SchedulePlan};
use crate::report::clock::Moment;
use crate::report::run::StateCounts;
use crate::time::MICROS_PER_S;
use revisit_core::schedule::due::{anchor, last_planned_before, Anchor, Planned};

/// A URL's schedule in the previous output: last fetch (i64::MIN: never), next fetch (both
/// microseconds since the epoch), interval (seconds).
pub type StateValue = (i64, i64, f64);
/// A fetch of the log: when (microseconds since the epoch), and whether it succeeded.
pub type LogValue = (i64, bool);

/// No time: a URL never fetched, or no fetch planned (what the rates table writes as a null).
pub const NEVER: i64 = crate::io::rates_out::NEVER_FETCHED;

/// The dataflows of the state phase (built on every worker, in this order, when the plan asks).
pub struct StateChannels {
    pub state: Option<Shuffle<KeyedMessage<StateValue>>>,
    pub log: Option<Shuffle<KeyedMessage<LogValue>>>,
}

impl StateChannels {
    pub fn new(worker: &mut timely::worker::Worker, plan: &SchedulePlan) -> Self {
        StateChannels {
            state: plan.previous.is_some().then(|| {
                Shuffle::new(worker, "StateByHost", |m: &KeyedMessage<StateValue>| {
                    m.0 as u64
                })
            }),
            log: plan.fetches().has_rows().then(|| {
                Shuffle::new(worker, "LogByHost", |m: &KeyedMessage<LogValue>| m.0 as u64)
            }),
        }
    }
}

/// What the state and the logs say of this worker's pages, page by page, and the counts every
/// worker agrees on.
pub struct Known {
    /// The last fetch known before the night, microseconds since the epoch ([`NEVER`]); empty
    /// when the night knows no state (every page [`NEVER`]: 8 bytes a URL not held).
    last_us: Vec<i64>,
    /// Where each URL's clock stands ([`anchor`], microseconds since the epoch; None: a new URL);
    /// empty when the night knows no state.
    anchor: Vec<Option<Anchor>>,
    pub counts: StateCounts,
    /// When the state phase ended on this worker.
    pub done: Moment,
}

impl Known {
    /// The last fetch of page `i` known before the night ([`NEVER`]: none).
    #[inline]
    pub fn last_us(&self, i: usize) -> i64 {
        self.last_us.get(i).copied().unwrap_or(NEVER)
    }

    /// The last fetches of `pages` known before the night (None: there is no state, none of any
    /// page is known).
    #[inline]
    pub fn last_us_of(&self, pages: std::ops::Range<usize>) -> Option<&[i64]> {
        self.last_us.get(pages)
    }

    /// Where page `i`'s clock stands (None: a new URL).
    #[inline]
    pub fn anchor(&self, i: usize) -> Option<Anchor> {
        self.anchor.get(i).copied().flatten()
    }
}

/// Reads the state and the logs of `plan` (their units shared by the process's workers as `share`
/// hands them out), sends every row to its host's worker and joins them to `arranged`'s pages.
/// Every worker calls it; it fails alike on every worker.
pub fn known(
    reducer: &mut Reducer<'_>,
    share: &ProcessShare,
    channels: &mut StateChannels,
    plan: &SchedulePlan,
    by_host: ByHost<'_>,
    arranged: &Arranged,
    progress: &Progress,
) -> Result<Known> {
    let n = arranged.pages.len();
    let mut known = Known {
        last_us: Vec::new(),
        anchor: Vec::new(),
        counts: StateCounts::default(),
        done: Moment::now(),
    };
    let fetches = plan.fetches();
    if fetches == Fetches::Unknown {
        return Ok(known);
    }
    known.last_us = vec![NEVER; n];
    known.anchor = vec![None; n];
    let mut counts = StateCounts::default();
    let mut first_invalid: Option<InvalidRate> = None;
    let mut note = |status: &TableStatus| {
        if let Some((_, bad)) = &status.first_invalid {
            if first_invalid.is_none() {
                first_invalid = Some(bad.clone());
            }
        }
    };
    // Every worker opens the files first: a bad one fails everywhere before any data moves.
    let previous = match &plan.previous {
        Some(p) => Some(state_in::open(&p.dir)?),
        None => None,
    };
    let logs = match fetches {
        Fetches::Logged(paths) => fetched_in::open_all(&inputs::expand(paths)?)?,
        Fetches::PlannedVisits(paths) => fetched_in::open_planned(paths)?,
        Fetches::Unknown | Fetches::PlannedDueTimes => Vec::new(),
    };
    let mut state: Vec<(UrlKey, StateValue)> = Vec::new();
    if let (Some(prev), Some(channel)) = (&previous, channels.state.as_mut()) {
        let units = state_in::units(prev);
        let (received, status) = route_keyed(
            by_host,
            reducer,
            share,
            channel,
            &units,
            |u| u.file,
            |unit, row, invalid| {
                state_in::read_unit(
                    prev,
                    unit,
                    |r| {
                        row(
                            r.url,
                            Some(r.host),
                            (
                                r.last_fetch_us.unwrap_or(NEVER),
                                r.next_fetch_us,
                                r.interval_s,
                            ),
                        )
                    },
                    invalid,
                )
            },
        )?;
        counts.state_rows = status.rows;
        counts.state_invalid = status.invalid + status.unmatched;
        note(&status);
        state = one_row_per_url(received);
    }
    let mut log: Vec<(UrlKey, LogValue)> = Vec::new();
    if let Some(channel) = channels.log.as_mut() {
        let units = fetched_in::units(&logs);
        let (received, status) = route_keyed(
            by_host,
            reducer,
            share,
            channel,
            &units,
            |u| u.file,
            |unit, row, invalid| {
                fetched_in::read_unit(
                    &logs[unit.file],
                    unit,
                    |f| row(f.url, f.host, (f.at_us, f.ok)),
                    invalid,
                )
            },
        )?;
        counts.log_rows = status.rows;
        counts.log_invalid = status.invalid;
        counts.log_unknown_url = status.unmatched;
        note(&status);
        // a total order (equal rows are the same row)
        log = sorted_pairs(received, |a, b| a.cmp(b));
        let before = log.len();
        log.dedup_by(|a, b| a.0 == b.0 && a.1 .0 == b.1 .0);
        counts.log_duplicate = (before - log.len()) as u64;
    }
    counts.first_invalid = first_invalid;
    progress.say(format!(
        "read {} state rows and {} fetch log rows; joining to pages",
        counts.state_rows, counts.log_rows
    ));

    // Join: the pages in key order against the state and the log, sorted by key too (a merge;
    // a binary search per page missed the cache at every step of 10M-row tables).
    let start = plan.start_us;
    let due_times_as_fetched = fetches == Fetches::PlannedDueTimes;
    let pages = arranged.pages_by_url_key();
    let (mut state_used, mut log_matched) = (0u64, 0u64);
    let (mut at_state, mut at_log) = (0usize, 0usize);
    for &(key, i) in &pages {
        let i = i as usize;
        while at_state < state.len() && state[at_state].0 < key {
            at_state += 1;
        }
        let s = state.get(at_state).filter(|e| e.0 == key).map(|e| e.1);
        state_used += s.is_some() as u64;
        while at_log < log.len() && log[at_log].0 < key {
            at_log += 1;
        }
        let mut latest = NEVER;
        for &(_, (at, ok)) in log[at_log..].iter().take_while(|e| e.0 == key) {
            log_matched += 1;
            if at >= start {
                counts.log_future += 1;
            } else if !ok {
                counts.log_failed += 1;
            } else {
                counts.log_used += 1;
                latest = latest.max(at);
            }
        }
        let previous_last = s.map_or(NEVER, |s| s.0);
        let plan_of = s.map(|(_, next, tau)| Planned {
            next: next as f64,
            interval: tau * MICROS_PER_S,
        });
        if due_times_as_fetched {
            // no log, no timetable: the previous night's due times count as fetched as planned
            latest = plan_of
                .and_then(|p| last_planned_before(p.next, p.interval, start as f64))
                .map_or(NEVER, |t| t.round() as i64);
        }
        // a fetch the log does not show did not happen
        let last = previous_last.max(latest);
        known.last_us[i] = last;
        known.anchor[i] = anchor(
            plan_of,
            (last != NEVER).then_some(last as f64),
            start as f64,
        );
    }
    // what the routing counted is global already; what the join counted is this worker's
    let mut joined = StateCounts {
        state_used,
        state_dropped: state.len() as u64 - state_used,
        log_unknown_url: log.len() as u64 - log_matched,
        log_used: counts.log_used,
        log_failed: counts.log_failed,
        log_future: counts.log_future,
        log_duplicate: counts.log_duplicate,
        ..StateCounts::default()
    };
    joined = reducer.all_reduce(joined);
    counts.state_used = joined.state_used;
    counts.state_dropped = joined.state_dropped;
    counts.log_unknown_url += joined.log_unknown_url;
    counts.log_used = joined.log_used;
    counts.log_failed = joined.log_failed;
    counts.log_future = joined.log_future;
    counts.log_duplicate = joined.log_duplicate;
    if counts.state_rows > 0 && counts.state_invalid == counts.state_rows {
        let first = counts
            .first_invalid
            .as_ref()
            .map_or_else(String::new, |bad| format!(" (the first: {bad})"));
        bail!(
            "--previous: none of its {} rows can be used{first}; give the output folder of a \
             revisit run",
            counts.state_rows
        );
    }
    known.counts = counts;
    known.done = Moment::now();
    Ok(known)
}

/// The state's rows by URL key, one a URL: a revisit output has no repeats; if another table does,
/// the first by next due time wins, then by last fetch and interval, so that the rows' arrival
/// order (which worker read which unit) never decides.
fn one_row_per_url(received: Vec<KeyedMessage<StateValue>>) -> Vec<(UrlKey, StateValue)> {
    let mut state = sorted_pairs(received, |a, b| {
        a.1.cmp(&b.1).then(a.0.cmp(&b.0)).then(a.2.total_cmp(&b.2))
    });
    state.dedup_by_key(|s| s.0);
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_keeps_one_row_per_url_whatever_order_the_rows_arrive_in() {
        let (one, two) = (UrlKey::from(1u128 << 64), UrlKey::from(2));
        // URL one three times with the same next due time, URL two with an earlier and a later one
        let rows = vec![
            (one, (30, 100, 7.0)),
            (two, (5, 300, 1.0)),
            (one, (10, 100, 7.0)),
            (two, (9, 200, 2.0)),
            (one, (10, 100, 3.0)),
        ];
        let want = vec![(two, (9, 200, 2.0)), (one, (10, 100, 3.0))];
        let mut orders = vec![rows.clone(), rows.iter().rev().copied().collect()];
        orders.push(vec![rows[4], rows[0], rows[3], rows[2], rows[1]]);
        for order in orders {
            // in messages of two rows, as workers would send them
            let received = order.chunks(2).map(|c| (0, c.to_vec())).collect();
            assert_eq!(one_row_per_url(received), want);
        }
    }
}
