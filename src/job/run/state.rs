//! The state phase of a nightly `run`: the previous night's schedule (`--previous`) and the fetches
//! that happened (`--fetched`, else the previous night's visits taken as made), read by every
//! worker, sent to the worker of their URL's host and joined to its pages by URL. Every row is accounted for: used, about no page (a URL that left the
//! page set, counted), in the future, a repeat, or invalid (the first named by file and row).

use std::cmp::Ordering;

use anyhow::{bail, Result};
use revisit_core::reduce::AllReduce;

use crate::io::fetched_in;
use crate::io::inputs;
use crate::io::rates_in::InvalidRate;
use crate::io::state_in;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::flag_sort::sort_by_wide_key;
use crate::job::keys::UrlKey;
use crate::job::progress::Progress;
use crate::job::route::{
    route_keyed, route_keyed_folding, sorted_pairs, ByHost, KeyedMessage, Pairs, TableStatus,
    PAIRS_PER_MESSAGE,
};
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
/// worker agrees on. 24 bytes a page when the night knows a state, none otherwise.
pub struct Known {
    /// The last fetch known before the night, microseconds since the epoch ([`NEVER`]); empty
    /// when the night knows no state (every page [`NEVER`]: 8 bytes a URL not held).
    last_us: Vec<i64>,
    /// The previous night's plan of each page: its next due time (microseconds since the epoch)
    /// and interval (seconds; NaN: no plan, a new URL); empty without `--previous`. Each page's
    /// [`Anchor`] is worked out from them when asked, not held beside them.
    next_us: Vec<i64>,
    interval_s: Vec<f64>,
    /// The night's start, microseconds since the epoch (the anchors' reference).
    start_us: i64,
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

    /// Page `i`'s plan in the previous night (None: a new URL, or no previous night).
    #[inline]
    fn planned(&self, i: usize) -> Option<Planned> {
        let interval_s = *self.interval_s.get(i)?;
        (!interval_s.is_nan()).then(|| Planned {
            next: self.next_us[i] as f64,
            interval: interval_s * MICROS_PER_S,
        })
    }

    /// Where page `i`'s clock stands ([`anchor`], microseconds since the epoch; None: a new URL,
    /// or a night that knows no state).
    #[inline]
    pub fn anchor(&self, i: usize) -> Option<Anchor> {
        if self.last_us.is_empty() {
            return None;
        }
        let last = self.last_us[i];
        anchor(
            self.planned(i),
            (last != NEVER).then_some(last as f64),
            self.start_us as f64,
        )
    }

    /// Takes a state row (last fetch, next due time, interval) of page `i`, unless the page holds
    /// one that comes first (by next due time, then last fetch, then interval: a revisit output
    /// has one row a URL; another table may repeat one, and then the rows' arrival order must not
    /// decide).
    #[inline]
    fn offer(&mut self, i: usize, (last, next, interval_s): StateValue) {
        let held = self.interval_s[i];
        let first = held.is_nan()
            || (next, last)
                .cmp(&(self.next_us[i], self.last_us[i]))
                .then(interval_s.total_cmp(&held))
                .is_lt();
        if first {
            self.last_us[i] = last;
            self.next_us[i] = next;
            self.interval_s[i] = interval_s;
        }
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
        next_us: Vec::new(),
        interval_s: Vec::new(),
        start_us: plan.start_us,
        counts: StateCounts::default(),
        done: Moment::now(),
    };
    let fetches = plan.fetches();
    if fetches == Fetches::Unknown {
        return Ok(known);
    }
    known.last_us = vec![NEVER; n];
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
    // The pages by URL key: both tables are merge-joined against them (a binary search per row
    // missed the cache at every step of 10M-row tables).
    let pages = arranged.pages_by_url_key();
    // URLs of the state that are no page's (left the page set), each counted once
    let mut dropped: Vec<UrlKey> = Vec::new();
    if let (Some(prev), Some(channel)) = (&previous, channels.state.as_mut()) {
        known.next_us = vec![0; n];
        known.interval_s = vec![f64::NAN; n];
        let units = state_in::units(prev);
        // Folded into the pages as the rows arrive, FOLD_ROWS at a time: held whole, the state
        // (40 bytes a row) and its sorted copy were the peak of a nightly run.
        let mut buffer: Pairs<StateValue> = Vec::with_capacity(FOLD_ROWS + PAIRS_PER_MESSAGE);
        let status = route_keyed_folding(
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
            |rows| {
                buffer.extend(rows);
                if buffer.len() >= FOLD_ROWS {
                    fold_state(&mut known, &pages, &mut buffer, &mut dropped);
                }
            },
        )?;
        fold_state(&mut known, &pages, &mut buffer, &mut dropped);
        counts.state_rows = status.rows;
        counts.state_invalid = status.invalid + status.unmatched;
        note(&status);
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

    // The log: each page's latest successful fetch before the start.
    let start = plan.start_us;
    let mut log_matched = 0u64;
    merge_join(&pages, &log, |i, &(_, (at, ok))| {
        let Some(i) = i else { return };
        log_matched += 1;
        if at >= start {
            counts.log_future += 1;
        } else if !ok {
            counts.log_failed += 1;
        } else {
            counts.log_used += 1;
            // a fetch the log does not show did not happen
            known.last_us[i] = known.last_us[i].max(at);
        }
    });
    drop(pages);
    let state_used = known.interval_s.iter().filter(|tau| !tau.is_nan()).count() as u64;
    if fetches == Fetches::PlannedDueTimes {
        // no log, no timetable: the previous night's due times count as fetched as planned
        for i in 0..n {
            let latest = known
                .planned(i)
                .and_then(|p| last_planned_before(p.next, p.interval, start as f64))
                .map_or(NEVER, |t| t.round() as i64);
            known.last_us[i] = known.last_us[i].max(latest);
        }
    }
    dropped.sort_unstable();
    dropped.dedup();
    // what the routing counted is global already; what the join counted is this worker's
    let mut joined = StateCounts {
        state_used,
        state_dropped: dropped.len() as u64,
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

/// How many state rows are folded into the pages at once: sorted and merge-joined, they sweep the
/// pages by key once. Folded a message (65,536 rows) at a time instead, each row's page was a cache miss
/// or more away from the last one's, and the state phase took twice as long as with the whole
/// table sorted at once; 2^20 rows hold 40 MB.
const FOLD_ROWS: usize = 1 << 20;

/// Folds the state's `rows` into `known`'s pages (`pages` by URL key), the keys of rows of no
/// page into `dropped`; empties `rows`, keeping its room.
fn fold_state(
    known: &mut Known,
    pages: &[(UrlKey, u32)],
    rows: &mut Pairs<StateValue>,
    dropped: &mut Vec<UrlKey>,
) {
    sort_by_wide_key(rows, |r| r.0.halves(), |_, _| Ordering::Equal);
    merge_join(pages, rows, |i, r| match i {
        Some(i) => known.offer(i, r.1),
        None => dropped.push(r.0),
    });
    rows.clear();
}

/// Joins `rows` (sorted by URL key) to `pages` (sorted by key, [`Arranged::pages_by_url_key`]):
/// `row(Some(page), r)` for each row of a page, `row(None, r)` for each row of no page. Each
/// row's page is found by galloping forward from the last one's, so a few rows against many
/// pages touch only the pages near theirs.
fn merge_join<V>(
    pages: &[(UrlKey, u32)],
    rows: &[(UrlKey, V)],
    mut row: impl FnMut(Option<usize>, &(UrlKey, V)),
) {
    let mut at = 0;
    for r in rows {
        at = seek(pages, at, r.0);
        let page = pages.get(at).filter(|p| p.0 == r.0).map(|p| p.1 as usize);
        row(page, r);
    }
}

/// The first place at or after `from` in `sorted` whose key is not below `key` (its length if
/// none): doubling steps from `from`, then a binary search in the last step.
#[inline]
fn seek(sorted: &[(UrlKey, u32)], from: usize, key: UrlKey) -> usize {
    let rest = &sorted[from..];
    let mut bound = 1;
    while bound <= rest.len() && rest[bound - 1].0 < key {
        bound *= 2;
    }
    // every place below bound / 2 holds a smaller key; the first that does not is below bound
    let (lo, hi) = (bound / 2, bound.min(rest.len()));
    from + lo + rest[lo..hi].partition_point(|p| p.0 < key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known_of(pages: usize) -> Known {
        Known {
            last_us: vec![NEVER; pages],
            next_us: vec![0; pages],
            interval_s: vec![f64::NAN; pages],
            start_us: 0,
            counts: StateCounts::default(),
            done: Moment::now(),
        }
    }

    #[test]
    fn the_state_keeps_one_row_per_url_whatever_order_the_rows_arrive_in() {
        let (one, two, gone) = (UrlKey::from(1u128 << 64), UrlKey::from(2), UrlKey::from(7));
        // page 0 is URL one, page 1 URL two
        let pages = vec![(two, 1), (one, 0)];
        // URL one three times with the same next due time, URL two with an earlier and a later
        // one, and a URL of no page twice
        let rows = vec![
            (one, (30, 100, 7.0)),
            (two, (5, 300, 1.0)),
            (gone, (1, 1, 1.0)),
            (one, (10, 100, 7.0)),
            (two, (9, 200, 2.0)),
            (gone, (2, 2, 2.0)),
            (one, (10, 100, 3.0)),
        ];
        let mut orders = vec![rows.clone(), rows.iter().rev().copied().collect()];
        orders.push(vec![
            rows[6], rows[0], rows[3], rows[5], rows[2], rows[1], rows[4],
        ]);
        for order in orders {
            // in messages of one, two and seven rows, as workers would send them
            for size in [1, 2, 7] {
                let (mut known, mut dropped) = (known_of(2), Vec::new());
                for message in order.chunks(size) {
                    fold_state(&mut known, &pages, &mut message.to_vec(), &mut dropped);
                }
                assert_eq!(known.last_us, [10, 9]);
                assert_eq!(known.next_us, [100, 200]);
                assert_eq!(known.interval_s, [3.0, 2.0]);
                dropped.sort_unstable();
                dropped.dedup();
                assert_eq!(dropped, [gone]);
            }
        }
    }

    #[test]
    fn a_page_without_a_state_row_has_no_plan_and_no_anchor_from_it() {
        let mut known = known_of(2);
        known.offer(1, (NEVER, 5_000_000, 2.0));
        assert!(known.planned(0).is_none());
        assert_eq!(known.anchor(0), None);
        let plan = known.planned(1).expect("page 1 has a plan");
        assert_eq!((plan.next, plan.interval), (5e6, 2e6));
        // due at 5 s, start 0: nothing was due yet, so the clock is the plan's own, served
        assert_eq!(
            known.anchor(1),
            Some(Anchor {
                at: 3e6,
                served: true
            })
        );
        // a night without state knows no anchor at all
        assert_eq!(
            Known {
                last_us: Vec::new(),
                ..known_of(0)
            }
            .anchor(0),
            None
        );
    }

    proptest::proptest! {
        #[test]
        fn the_merge_join_finds_each_row_s_page_as_a_binary_search_does(
            page_keys in proptest::collection::btree_set(0u128..400, 0..120),
            mut row_keys in proptest::collection::vec(0u128..400, 0..200),
        ) {
            // keys near the halves' boundary too
            let key = |k: u128| UrlKey::from(k.rotate_right(4));
            let mut pages: Vec<(UrlKey, u32)> =
                page_keys.iter().enumerate().map(|(i, &k)| (key(k), i as u32)).collect();
            pages.sort_unstable();
            row_keys.sort_unstable_by_key(|&k| key(k));
            let rows: Vec<(UrlKey, ())> = row_keys.iter().map(|&k| (key(k), ())).collect();
            let mut found = Vec::new();
            merge_join(&pages, &rows, |i, r| found.push((i, r.0)));
            let expected: Vec<(Option<usize>, UrlKey)> = rows
                .iter()
                .map(|r| {
                    let at = pages.binary_search_by(|p| p.0.cmp(&r.0)).ok();
                    (at.map(|a| pages[a].1 as usize), r.0)
                })
                .collect();
            proptest::prop_assert_eq!(found, expected);
        }
    }
}
