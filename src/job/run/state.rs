//! The state phase of a nightly `run`: the previous night's schedule (`--previous`) and the fetches
//! that happened (`--fetched`, else the previous night's visits taken as made), read by every
//! worker, sent to the worker of their URL's host and joined to its pages by (host, URL). Every
//! row is accounted for: used, about no page (a URL that left the page set, or whose politeness
//! key is no longer the one it had: counted), in the future, a repeat, or invalid (the first named
//! by file and row).

use anyhow::{bail, Result};
use revisit_core::reduce::AllReduce;

use crate::io::fetched_in;
use crate::io::inputs;
use crate::io::rates_in::InvalidRate;
use crate::io::state_in;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
use crate::job::keys::UrlKey;
use crate::job::page_key::{PageFinder, PageKey};
use crate::job::progress::Progress;
use crate::job::route::{route_keyed, sorted_by_page, ByHost, KeyedMessage, TableStatus};
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
    pub state: Option<Shuffle<KeyedMessage<StateValue, PageKey>>>,
    pub log: Option<Shuffle<KeyedMessage<LogValue, PageKey>>>,
}

impl StateChannels {
    pub fn new(worker: &mut timely::worker::Worker, plan: &SchedulePlan) -> Self {
        StateChannels {
            state: plan.previous.is_some().then(|| {
                Shuffle::new(
                    worker,
                    "StateByHost",
                    |m: &KeyedMessage<StateValue, PageKey>| m.0 as u64,
                )
            }),
            log: plan.fetches().has_rows().then(|| {
                Shuffle::new(
                    worker,
                    "LogByHost",
                    |m: &KeyedMessage<LogValue, PageKey>| m.0 as u64,
                )
            }),
        }
    }
}

/// What the state and the logs say of this worker's pages, page by page, and the counts every
/// worker agrees on: each page's last fetch and [`Anchor`], 16 bytes a page and a bit when the
/// night knows a state, none otherwise.
pub struct Known {
    /// The last fetch known before the night, microseconds since the epoch ([`NEVER`]); empty
    /// when the night knows no state (every page [`NEVER`]: 8 bytes a URL not held).
    last_us: Vec<i64>,
    /// Where each page's clock stands: its anchor's time (microseconds since the epoch; NaN: a
    /// new URL), worked out once when the state and the logs are in; empty when the night knows
    /// no state.
    anchor_at: Vec<f64>,
    /// Whether each page's anchor was served, a bit a page.
    served: Vec<u64>,
    pub counts: StateCounts,
    /// When the state phase ended on this worker.
    pub done: Moment,
}

impl Known {
    /// A night that knows no state: no page was fetched before, none has an anchor.
    fn nothing() -> Self {
        Known {
            last_us: Vec::new(),
            anchor_at: Vec::new(),
            served: Vec::new(),
            counts: StateCounts::default(),
            done: Moment::now(),
        }
    }

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

    /// Where page `i`'s clock stands ([`anchor`], microseconds since the epoch; None: a new URL,
    /// or a night that knows no state).
    #[inline]
    pub fn anchor(&self, i: usize) -> Option<Anchor> {
        let at = *self.anchor_at.get(i)?;
        (!at.is_nan()).then(|| Anchor {
            at,
            served: (self.served[i / 64] >> (i % 64)) & 1 == 1,
        })
    }
}

/// What the state and the logs said of each page while they are read: its plan in the previous
/// night and its last fetch, 24 bytes a page; [`Said::known`] keeps what the night needs of them.
struct Said {
    /// The last fetch, as [`Known`] holds it.
    last_us: Vec<i64>,
    /// The previous night's plan of each page: its next due time (microseconds since the epoch)
    /// and interval (seconds; NaN: no plan, a new URL); empty without `--previous`.
    next_us: Vec<i64>,
    interval_s: Vec<f64>,
}

impl Said {
    /// Page `i`'s plan in the previous night (None: a new URL, or no previous night).
    #[inline]
    fn planned(&self, i: usize) -> Option<Planned> {
        let interval_s = *self.interval_s.get(i)?;
        (!interval_s.is_nan()).then(|| Planned {
            next: self.next_us[i] as f64,
            interval: interval_s * MICROS_PER_S,
        })
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

    /// Each page's last fetch and its [`anchor`] for a night starting at `start_us`
    /// (microseconds since the epoch). Held instead of the plans they come from, they take 16
    /// bytes a page and a bit where the plans took 24, through the write phase, a nightly run's
    /// peak; and the schedule reads an anchor instead of working it out.
    fn known(self, start_us: i64) -> Known {
        let n = self.last_us.len();
        let mut anchor_at = Vec::with_capacity(n);
        let mut served = vec![0u64; n.div_ceil(64)];
        for (i, &last) in self.last_us.iter().enumerate() {
            let fetched = (last != NEVER).then_some(last as f64);
            match anchor(self.planned(i), fetched, start_us as f64) {
                Some(a) => {
                    debug_assert!(!a.at.is_nan(), "page {i}: an anchor at NaN");
                    anchor_at.push(a.at);
                    served[i / 64] |= u64::from(a.served) << (i % 64);
                }
                None => anchor_at.push(f64::NAN),
            }
        }
        Known {
            last_us: self.last_us,
            anchor_at,
            served,
            ..Known::nothing()
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
    let fetches = plan.fetches();
    if fetches == Fetches::Unknown {
        return Ok(Known::nothing());
    }
    let mut said = Said {
        last_us: vec![NEVER; n],
        next_us: Vec::new(),
        interval_s: Vec::new(),
    };
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
    // Both tables are joined to the pages by (host, URL) identity, the pages' canonical order:
    // the state as a run wrote it comes in that order, a host's rows together and its pages in
    // order, so each message is folded in as it arrives by walking the pages forward. Joined by
    // URL identity alone, the pages and each million state rows were sorted by it first (40% of
    // the phase's time), and every row's page was a cache miss away from the last one's.
    let urls = arranged.url_keys();
    let mut finder = arranged.finder(&urls);
    // URLs of the state that are no page's (left the page set, or now pages of another host),
    // each counted once
    let mut dropped: Vec<UrlKey> = Vec::new();
    if let (Some(prev), Some(channel)) = (&previous, channels.state.as_mut()) {
        said.next_us = vec![0; n];
        said.interval_s = vec![f64::NAN; n];
        let units = state_in::units(prev);
        let status = route_keyed(
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
            |rows| fold_state(&mut said, &mut finder, &rows, &mut dropped),
        )?;
        counts.state_rows = status.rows;
        counts.state_invalid = status.invalid + status.unmatched;
        note(&status);
    }
    let mut log: Vec<(PageKey, LogValue)> = Vec::new();
    if let Some(channel) = channels.log.as_mut() {
        let units = fetched_in::units(&logs);
        let mut received = Vec::new();
        let status = route_keyed(
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
            |message| received.push(message),
        )?;
        counts.log_rows = status.rows;
        counts.log_invalid = status.invalid;
        counts.log_unknown_url = status.unmatched;
        note(&status);
        // in canonical order, then by value: a total order (equal rows are the same row)
        log = sorted_by_page(received, |a, b| a.cmp(b));
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
    for &(key, (at, ok)) in &log {
        let Some(i) = finder.find(key) else { continue };
        log_matched += 1;
        if at >= start {
            counts.log_future += 1;
        } else if !ok {
            counts.log_failed += 1;
        } else {
            counts.log_used += 1;
            // a fetch the log does not show did not happen
            said.last_us[i] = said.last_us[i].max(at);
        }
    }
    drop(urls);
    let state_used = said.interval_s.iter().filter(|tau| !tau.is_nan()).count() as u64;
    if fetches == Fetches::PlannedDueTimes {
        // no log, no timetable: the previous night's due times count as fetched as planned
        for i in 0..n {
            let latest = said
                .planned(i)
                .and_then(|p| last_planned_before(p.next, p.interval, start as f64))
                .map_or(NEVER, |t| t.round() as i64);
            said.last_us[i] = said.last_us[i].max(latest);
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
    let mut known = said.known(plan.start_us);
    known.counts = counts;
    known.done = Moment::now();
    Ok(known)
}

/// Folds the state's `rows` into what is `said` of the pages (found by `finder`), the URL keys of
/// rows of no page into `dropped`.
fn fold_state(
    said: &mut Said,
    finder: &mut PageFinder<'_>,
    rows: &[(PageKey, StateValue)],
    dropped: &mut Vec<UrlKey>,
) {
    for &(key, value) in rows {
        match finder.find(key) {
            Some(i) => said.offer(i, value),
            None => dropped.push(key.url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said_of(pages: usize) -> Said {
        Said {
            last_us: vec![NEVER; pages],
            next_us: vec![0; pages],
            interval_s: vec![f64::NAN; pages],
        }
    }

    #[test]
    fn the_state_keeps_one_row_per_url_whatever_order_the_rows_arrive_in() {
        let (one, two, gone) = (UrlKey::from(1u128 << 64), UrlKey::from(2), UrlKey::from(7));
        // host 5 has pages 0 and 1, URLs two and one (ascending keys); host 9 has none of these
        let (hosts, offsets, urls) = ([5u128], [0, 2], [two, one]);
        let key = |host, url| PageKey::new(host, url);
        // URL one three times with the same next due time, URL two with an earlier and a later
        // one, a URL of no page twice, and URL one under a host that is not its page's
        let rows = vec![
            (key(5, one), (30, 100, 7.0)),
            (key(5, two), (5, 300, 1.0)),
            (key(5, gone), (1, 1, 1.0)),
            (key(5, one), (10, 100, 7.0)),
            (key(5, two), (9, 200, 2.0)),
            (key(5, gone), (2, 2, 2.0)),
            (key(5, one), (10, 100, 3.0)),
            (key(9, one), (0, 50, 1.0)),
        ];
        let mut orders = vec![rows.clone(), rows.iter().rev().copied().collect()];
        orders.push(vec![
            rows[6], rows[0], rows[7], rows[3], rows[5], rows[2], rows[1], rows[4],
        ]);
        for order in orders {
            // in messages of one, two and seven rows, as workers would send them
            for size in [1, 2, 7] {
                let (mut said, mut dropped) = (said_of(2), Vec::new());
                let mut finder = PageFinder::new(&hosts, &offsets, &urls);
                for message in order.chunks(size) {
                    fold_state(&mut said, &mut finder, message, &mut dropped);
                }
                assert_eq!(said.last_us, [9, 10]);
                assert_eq!(said.next_us, [200, 100]);
                assert_eq!(said.interval_s, [2.0, 3.0]);
                dropped.sort_unstable();
                dropped.dedup();
                assert_eq!(dropped, [gone, one]);
            }
        }
    }

    #[test]
    fn a_page_without_a_state_row_has_no_plan_and_no_anchor_from_it() {
        let mut said = said_of(2);
        said.offer(1, (NEVER, 5_000_000, 2.0));
        assert!(said.planned(0).is_none());
        let plan = said.planned(1).expect("page 1 has a plan");
        assert_eq!((plan.next, plan.interval), (5e6, 2e6));
        let known = said.known(0);
        assert_eq!(known.anchor(0), None);
        // due at 5 s, start 0: nothing was due yet, so the clock is the plan's own, served
        assert_eq!(
            known.anchor(1),
            Some(Anchor {
                at: 3e6,
                served: true
            })
        );
        // a night without state knows no anchor at all
        assert_eq!(Known::nothing().anchor(0), None);
    }

    #[test]
    fn each_page_keeps_the_anchor_its_plan_and_last_fetch_give() {
        // 150 pages (three words of served bits): plans due before and after the start, fetched
        // on time, early, late or never, and pages without a plan, fetched or not
        let (pages, start) = (150, 1_000_000_000i64);
        let mut said = said_of(pages);
        for i in 0..pages {
            let interval_s = 100.0 + (i % 7) as f64;
            let next = start + ((i % 5) as i64 - 2) * 60_000_000;
            let last = match i % 4 {
                0 => NEVER,
                1 => next - 10_000_000,
                2 => next - 90_000_000,
                _ => start - 1,
            };
            if i % 6 == 0 {
                said.last_us[i] = last; // a fetch the log shows, no plan
            } else {
                said.offer(i, (last, next, interval_s));
            }
        }
        let expected: Vec<Option<Anchor>> = (0..pages)
            .map(|i| {
                let last = said.last_us[i];
                anchor(
                    said.planned(i),
                    (last != NEVER).then_some(last as f64),
                    start as f64,
                )
            })
            .collect();
        assert!(expected.iter().any(|a| a.is_some_and(|a| !a.served)));
        assert!(expected.iter().any(|a| a.is_some_and(|a| a.served)));
        assert!(expected.iter().any(Option::is_none));
        let known = said.known(start);
        for (i, want) in expected.iter().enumerate() {
            assert_eq!(known.anchor(i), *want, "page {i}");
        }
    }
}
