//! One crawler's night: its hosts' timetables served at the crawler's rate, never impolitely
//! (PUC-Rio Phase 3, §2.3).
//!
//! A planned visit is free at time t when its planned time is <= t and its host's previous fetch was
//! at least P_h ago. Whenever the crawler can fetch (at least 1/c after its previous fetch) it takes
//! a free visit: the paper takes the most delayed one (ties by host index); we take the one with the
//! least slack, planned time + the host's spare time (shortest planned gap - P_h), ties by host
//! index. Why: a host at its cap has gaps of exactly P_h, so a delay can never be caught up and
//! ratchets through the night until its last visits no longer fit before the wrap-around; a host
//! with spare time absorbs a delay at its next gap. With no spare anywhere the rule is the paper's.
//! [`crawler_phases`] also puts the hosts' slots on distinct crawler ticks so that hosts at their
//! caps do not collide in the first place. A visit is never moved earlier
//! than planned, nor earlier than its host's previous fetch + P_h. Because the timetable repeats every
//! horizon, a host's last fetch must also be at least P_h before its first fetch of the next night,
//! and the crawler's last fetch 1/c before its first: a visit that cannot meet these before the
//! horizon ends is dropped (and counted, by cause) rather than spilled into the next night. The
//! horizon's end is the sweep's: it starts at the crawler's quiet point of the cycle
//! ([`quiet_start`]), so a backlog built up late in the horizon drains in its early hours.
//!
//! Fetches take a crawler tick and are not preempted, so a visit taken at t can delay one that
//! becomes free just after it. The crawler therefore idles (less than a tick) for a visit about to
//! become free that has less slack than the one at hand and too little to absorb the tick: without
//! this, a host at its cap slips by a fraction of a tick for good, and its last visit of the night
//! no longer fits before the wrap-around.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::units::Seconds;

/// Times are sums of f64 seconds (ticks of 1/c, delays P_h): a fetch this late for a deadline is
/// rounding, not lateness (well inside the 1e-6 s to which the README promises politeness).
const ROUNDING_S: f64 = 1e-7;

/// The default crawler rate: this much more than a crawler's mean share of the bandwidth.
pub const RATE_HEADROOM: f64 = 1.25;

/// The default crawler rate: at least this many fetches per politeness delay. A crawler that cannot
/// fetch twice within a host's delay cannot serve anything between two visits of a host at its cap
/// without delaying it: the capped host slips, night after night, and loses visits at the
/// wrap-around (10 crawlers at their mean share of 4,000 fetches a day ticked every 173 s against a
/// 300 s Crawl-delay, and dropped 59 of 4,000 visits at 83% utilisation).
pub const FETCHES_PER_DELAY: f64 = 2.0;

/// A crawler's rate in fetches per second when none is given: [`RATE_HEADROOM`] x its share of
/// `bandwidth_per_day` among `crawlers`, and at least [`FETCHES_PER_DELAY`] per `min_delay` (no
/// such floor when `min_delay` is 0: no limit, no host to interleave around).
pub fn default_rate(bandwidth_per_day: f64, crawlers: u32, min_delay: Seconds) -> f64 {
    let share = bandwidth_per_day / crawlers.max(1) as f64 / crate::units::SECONDS_PER_DAY;
    let floor = if min_delay.0 > 0.0 {
        FETCHES_PER_DELAY / min_delay.0
    } else {
        0.0
    };
    (RATE_HEADROOM * share).max(floor)
}

/// One host as the crawler sees it: its planned visit times (sorted, in [0, T)) and its delay.
#[derive(Clone, Copy, Debug)]
pub struct CrawlerHost<'a> {
    /// Planned times of the host's visits, seconds from the horizon start, non-decreasing.
    pub planned_s: &'a [f64],
    /// Minimum delay between two requests to the host.
    pub min_delay: Seconds,
}

impl CrawlerHost<'_> {
    /// How long a visit may slip without delaying the next: shortest planned gap - P_h, the gaps of
    /// a cycle (the last visit to the next night's first) or of one night.
    fn spare_s(&self, horizon: Seconds, cyclic: bool) -> f64 {
        let shortest = if cyclic {
            crate::schedule::timetable::cyclic_gaps(self.planned_s, horizon)
                .fold(f64::INFINITY, f64::min)
        } else {
            self.planned_s
                .windows(2)
                .map(|w| w[1] - w[0])
                .fold(horizon.0, f64::min)
        };
        (shortest - self.min_delay.0).max(0.0)
    }
}

/// Phases (shares of one slot, for [`crate::schedule::timetable::host_timetable`]) for the hosts of
/// one crawler given each host's slot length T / X_h: the n-th host by slot length (busiest first)
/// starts at tick n / c, modulo its slot. Hosts whose slots are equal multiples of 1/c then never
/// ask for the same tick, as long as there are fewer than c x slot of them (more would overload the
/// crawler anyway).
pub fn crawler_phases(slot_s: &[f64], rate_per_s: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..slot_s.len()).collect();
    order.sort_by(|&a, &b| slot_s[a].total_cmp(&slot_s[b]).then(a.cmp(&b)));
    let mut phases = vec![0.0; slot_s.len()];
    for (n, &h) in order.iter().enumerate() {
        let slot = slot_s[h];
        if slot > 0.0 && slot.is_finite() && rate_per_s > 0.0 {
            phases[h] = ((n as f64 / rate_per_s) % slot / slot).clamp(0.0, 1.0 - f64::EPSILON);
        }
    }
    phases
}

/// A crawler's timetable for the horizon, sorted by time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrawlerTimetable {
    /// Fetch times, seconds from the horizon start, increasing.
    pub at_s: Vec<f64>,
    /// The host (index into the crawler's hosts) of each fetch.
    pub host: Vec<u32>,
    /// The visit (index into the host's planned times) of each fetch.
    pub visit: Vec<u32>,
    /// Planned visits that could not be served within the horizon.
    pub dropped: u64,
    /// Of those, visits the crawler had time for but not their host's politeness: served, they would
    /// come less than P_h before the host's first fetch of the next night.
    pub dropped_at_wrap: u64,
    /// Visits served after the horizon's end, in the early hours of the next repetition (the
    /// sweep starts at its quiet point, so a late backlog drains there): fetch times before their
    /// planned time.
    pub served_round_the_cycle: u64,
    /// Fetches served per fetch the crawler could make in the horizon (floor(c T)).
    pub utilisation: f64,
    /// Largest delay of a served visit behind its plan, seconds.
    pub max_delay_s: f64,
}

impl CrawlerTimetable {
    /// Visits served.
    pub fn scheduled(&self) -> u64 {
        self.at_s.len() as u64
    }
}

/// Serves `hosts`' planned visits with one crawler fetching at most `rate_per_s` pages per second.
///
/// The night is a cycle, so the sweep may start anywhere: it starts at [`quiet_start`], where a
/// crawler that had been serving these visits night after night would have nothing left to do, so
/// that a backlog built up late in the cycle drains in its early hours instead of being dropped.
pub fn sequence_crawler(
    hosts: &[CrawlerHost],
    rate_per_s: f64,
    horizon: Seconds,
) -> CrawlerTimetable {
    let gap = 1.0 / rate_per_s;
    let start = if gap.is_finite() && gap > 0.0 && horizon.0 > 0.0 {
        quiet_start(hosts, gap, horizon.0)
    } else {
        0.0
    };
    if start == 0.0 {
        return sweep_night(hosts, rate_per_s, horizon, None);
    }
    // the hosts' plans seen from `start`: each rotated so that its visits from `start` come first
    let t = horizon.0;
    let firsts: Vec<usize> = hosts
        .iter()
        .map(|h| h.planned_s.partition_point(|&p| p < start))
        .collect();
    let rotated: Vec<Vec<f64>> = hosts
        .iter()
        .zip(&firsts)
        .map(|(h, &r)| {
            let (before, after) = h.planned_s.split_at(r);
            after
                .iter()
                .map(|&p| p - start)
                .chain(before.iter().map(|&p| p + t - start))
                .collect()
        })
        .collect();
    let seen: Vec<CrawlerHost> = hosts
        .iter()
        .zip(&rotated)
        .map(|(h, planned_s)| CrawlerHost {
            planned_s,
            min_delay: h.min_delay,
        })
        .collect();
    let mut out = sweep_night(&seen, rate_per_s, horizon, None);
    // back to the horizon's clock, in time order
    let mut fetches: Vec<(f64, u32, u32)> = (0..out.at_s.len())
        .map(|k| {
            let (h, j) = (out.host[k], out.visit[k] as usize);
            let len = hosts[h as usize].planned_s.len();
            let at = (out.at_s[k] + start).rem_euclid(t);
            (at, h, ((j + firsts[h as usize]) % len) as u32)
        })
        .collect();
    out.served_round_the_cycle = fetches
        .iter()
        .filter(|&&(at, h, j)| at < hosts[h as usize].planned_s[j as usize])
        .count() as u64;
    fetches.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    out.at_s = fetches.iter().map(|f| f.0).collect();
    out.host = fetches.iter().map(|f| f.1).collect();
    out.visit = fetches.iter().map(|f| f.2).collect();
    out
}

/// Where a crawler serving `hosts`' plans every night would have been idle longest just before a
/// planned visit: the workload (seconds of fetching owed) of a queue fed one tick per planned visit
/// and drained at one second per second, run for two laps of the cycle so that the second lap is in
/// its steady state. 0 when the queue never empties (more visits than ticks) or nothing is planned.
pub fn quiet_start(hosts: &[CrawlerHost], gap_s: f64, horizon_s: f64) -> f64 {
    let mut planned: Vec<f64> = hosts
        .iter()
        .flat_map(|h| h.planned_s.iter().copied())
        .collect();
    if planned.is_empty() {
        return 0.0;
    }
    planned.sort_by(f64::total_cmp);
    let (mut owed, mut previous) = (0.0f64, planned[0]);
    let mut best: Option<(f64, f64)> = None; // (idle seconds before the visit, its time)
    for lap in 0..2 {
        for &p in &planned {
            let at = p + lap as f64 * horizon_s;
            let idle = (at - previous) - owed;
            owed = (-idle).max(0.0) + gap_s;
            previous = at;
            if lap == 1 && idle > 0.0 && best.is_none_or(|(b, _)| idle > b) {
                best = Some((idle, p));
            }
        }
    }
    best.map_or(0.0, |(_, p)| p)
}

/// Serves `hosts`' visits due tonight (a rolling schedule, not a cycle) with one crawler fetching at
/// most `rate_per_s` pages per second: never earlier than due, a host's first fetch no earlier than
/// its `not_before_s` (its last fetch of the previous night + P_h), consecutive fetches of a host
/// at least P_h apart, the crawler's last fetch 1/c before the next night; what does not fit before
/// the night's end is dropped (and counted), to be due again tomorrow.
pub fn sequence_rolling(
    hosts: &[CrawlerHost],
    not_before_s: &[f64],
    rate_per_s: f64,
    horizon: Seconds,
) -> CrawlerTimetable {
    sweep_night(hosts, rate_per_s, horizon, Some(not_before_s))
}

/// One lap of the night from time 0: the sweep [`sequence_crawler`] runs from its quiet start, or
/// with `rolling` (each host's earliest first fetch), the night of [`sequence_rolling`].
pub(crate) fn sweep_night(
    hosts: &[CrawlerHost],
    rate_per_s: f64,
    horizon: Seconds,
    rolling: Option<&[f64]>,
) -> CrawlerTimetable {
    let mut out = CrawlerTimetable::default();
    let planned: u64 = hosts.iter().map(|h| h.planned_s.len() as u64).sum();
    if rate_per_s.is_nan() || rate_per_s <= 0.0 || horizon.0.is_nan() || horizon.0 <= 0.0 {
        out.dropped = planned;
        return out;
    }
    let gap = 1.0 / rate_per_s;
    let capacity = (rate_per_s * horizon.0).floor();
    // The last fetch must leave 1/c before the next night's first fetch (at >= T).
    let crawler_end = horizon.0 - gap;

    let mut next = vec![0usize; hosts.len()]; // next planned visit of each host
    let mut first = vec![f64::NAN; hosts.len()]; // first fetch of each host tonight
    let mut waiting = Waiting::default();
    // free: hosts whose next visit is free, by planned time + spare (least slack first), then host
    let mut free: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    // Times as ordered bit patterns: all are finite and >= 0, where f64 bits order like the values.
    let key = |t: f64| t.max(0.0).to_bits();
    let spare: Vec<f64> = hosts
        .iter()
        .map(|h| h.spare_s(horizon, rolling.is_none()))
        .collect();
    for (h, host) in hosts.iter().enumerate() {
        if let Some(&t) = host.planned_s.first() {
            let not_before = rolling.and_then(|r| r.get(h)).copied().unwrap_or(0.0);
            waiting.push((key(t.max(not_before)), h as u32));
        }
    }
    let mut scratch = Vec::new();
    let mut t = 0.0f64;
    loop {
        while let Some((ready, h)) = waiting.peek() {
            if f64::from_bits(ready) > t {
                break;
            }
            waiting.pop();
            let planned = hosts[h as usize].planned_s[next[h as usize]];
            free.push(Reverse((key(planned + spare[h as usize]), h)));
        }
        let Some(Reverse((slack, h))) = free.pop() else {
            match waiting.peek() {
                Some((ready, _)) => {
                    t = t.max(f64::from_bits(ready));
                    continue;
                }
                None => break,
            }
        };
        if let Some(ready) = tighter_soon(
            &mut waiting,
            &mut scratch,
            &next,
            hosts,
            &spare,
            t + gap,
            slack,
        ) {
            free.push(Reverse((slack, h)));
            t = ready;
            continue;
        }
        let hi = h as usize;
        let host = hosts[hi];
        // a cycle's host must leave P_h before its first fetch of the next night; a rolling
        // night's next night starts from this one's last fetch (NaN before the first fetch)
        let wrap = if rolling.is_some() {
            f64::INFINITY
        } else {
            first[hi] + horizon.0 - host.min_delay.0
        };
        if t > crawler_end.min(wrap) + ROUNDING_S {
            // later visits of this host would be later still: drop them all
            let left = (host.planned_s.len() - next[hi]) as u64;
            out.dropped += left;
            if t <= crawler_end + ROUNDING_S {
                out.dropped_at_wrap += left;
            }
            continue;
        }
        let j = next[hi];
        out.at_s.push(t);
        out.host.push(h);
        out.visit.push(j as u32);
        out.max_delay_s = out.max_delay_s.max(t - host.planned_s[j]);
        if first[hi].is_nan() {
            first[hi] = t;
        }
        next[hi] += 1;
        if let Some(&p) = host.planned_s.get(next[hi]) {
            waiting.push((key(p.max(t + host.min_delay.0)), h));
        }
        t += gap;
    }
    out.utilisation = if capacity > 0.0 {
        out.scheduled() as f64 / capacity
    } else {
        0.0
    };
    out
}

/// The time a waiting host's next visit becomes free, if that is before `busy_until` (the end of a
/// fetch started now), its slack (planned time + spare) ends before `busy_until` too (the fetch
/// would push it past what it can absorb) and is less than `slack` (the visit at hand's).
///
/// Looks at the hosts ready before `busy_until` (about one per tick on a busy crawler) by popping
/// them into `scratch` and putting them back.
fn tighter_soon(
    waiting: &mut Waiting,
    scratch: &mut Vec<(u64, u32)>,
    next: &[usize],
    hosts: &[CrawlerHost],
    spare: &[f64],
    busy_until: f64,
    slack: u64,
) -> Option<f64> {
    let mut best: Option<(u64, f64)> = None;
    while let Some((ready, w)) = waiting.peek() {
        let ready = f64::from_bits(ready);
        if ready >= busy_until {
            break;
        }
        scratch.push(waiting.pop().expect("peeked"));
        let wi = w as usize;
        let end = hosts[wi].planned_s[next[wi]] + spare[wi];
        let key = end.max(0.0).to_bits();
        if end < busy_until && key < slack && best.is_none_or(|(b, _)| key < b) {
            best = Some((key, ready));
        }
    }
    waiting.put_back(scratch);
    best.map(|(_, ready)| ready)
}

/// The hosts whose next visit is not free yet, by (the time it becomes free, host): a binary heap,
/// and in front of it the hosts [`tighter_soon`] looked at and put back, in order.
///
/// Why: those hosts become free within the tick, so the next turn of the sweep takes them out
/// again. Pushed back into the heap, each cost a push and a pop of log(hosts) steps; in front they
/// cost a step each way (a quarter of the sweep's time on the 10M bench's next night).
#[derive(Default)]
struct Waiting {
    /// Put back by [`Waiting::put_back`]: ascending (so the least entry is `soon`'s first or
    /// `later`'s least).
    soon: VecDeque<(u64, u32)>,
    later: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Waiting {
    fn push(&mut self, item: (u64, u32)) {
        self.later.push(Reverse(item));
    }

    /// The least entry.
    fn peek(&self) -> Option<(u64, u32)> {
        match (self.soon.front(), self.later.peek()) {
            (Some(&a), Some(&Reverse(b))) => Some(a.min(b)),
            (Some(&a), None) => Some(a),
            (None, b) => b.map(|&Reverse(b)| b),
        }
    }

    /// Takes the least entry.
    fn pop(&mut self) -> Option<(u64, u32)> {
        let from_soon = match (self.soon.front(), self.later.peek()) {
            (Some(a), Some(Reverse(b))) => a < b,
            (a, _) => a.is_some(),
        };
        if from_soon {
            self.soon.pop_front()
        } else {
            self.later.pop().map(|Reverse(b)| b)
        }
    }

    /// Puts back `popped`, entries just taken by [`Waiting::pop`] in the order taken (each no
    /// greater than any entry left), and empties it.
    fn put_back(&mut self, popped: &mut Vec<(u64, u32)>) {
        for &item in popped.iter().rev() {
            self.soon.push_front(item);
        }
        popped.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An operation on the waiting hosts, as the sweep makes them.
    #[derive(Clone, Debug)]
    enum Op {
        Push(u64, u32),
        Pop,
        /// Take every entry below this time, then put them back ([`tighter_soon`]).
        LookBelow(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..50, 0u32..1000).prop_map(|(t, h)| Op::Push(t, h)),
            Just(Op::Pop),
            (0u64..50).prop_map(Op::LookBelow),
        ]
    }

    proptest! {
        /// The waiting hosts come out in the order a plain binary heap gives, whatever was looked
        /// at and put back: so the sweep's every choice is the heap's.
        #[test]
        fn waiting_hosts_come_out_in_heap_order(ops in prop::collection::vec(op(), 0..300)) {
            let mut waiting = Waiting::default();
            let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
            let mut scratch = Vec::new();
            for op in ops {
                match op {
                    Op::Push(t, h) => {
                        waiting.push((t, h));
                        heap.push(Reverse((t, h)));
                    }
                    Op::Pop => prop_assert_eq!(waiting.pop(), heap.pop().map(|r| r.0)),
                    Op::LookBelow(until) => {
                        while waiting.peek().is_some_and(|(t, _)| t < until) {
                            scratch.push(waiting.pop().expect("peeked"));
                        }
                        let mut seen = Vec::new();
                        while heap.peek().is_some_and(|r| r.0 .0 < until) {
                            seen.push(heap.pop().expect("peeked").0);
                        }
                        prop_assert_eq!(&scratch, &seen);
                        heap.extend(seen.into_iter().map(Reverse));
                        waiting.put_back(&mut scratch);
                        prop_assert!(scratch.is_empty());
                    }
                }
                prop_assert_eq!(waiting.peek(), heap.peek().map(|r| r.0));
            }
            while let Some(Reverse(want)) = heap.pop() {
                prop_assert_eq!(waiting.pop(), Some(want));
            }
            prop_assert_eq!(waiting.pop(), None);
        }
    }
}
