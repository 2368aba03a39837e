//! What a URL's observations say, kept compactly and in time order: one 32-bit event per
//! observation (its day, whether it saw a change, the length of the interval it closed), so that a
//! night can continue from the last night's evidence plus its new observations instead of the
//! whole history, and get the same estimate to the bit.
//!
//! An interval length is kept as the nearest of 4096 log-spaced values per octave (a factor
//! c = 2^(1/8192) either way). Every estimate is made from the kept lengths, so the evidence of
//! yesterday plus tonight's rows gives exactly the estimate of the whole history. Against the
//! textbook estimator on the raw lengths the error is bounded: if every length (changed or not) is
//! off by a factor within [1/c, c], the root of eq. 10 is off by a factor within [1/c^3, c^3]
//! (t(a) = a / (e^(lambda a) - 1) obeys t_lambda(s a) = s t_(lambda s)(a), and
//! t_(mu/k)(a) >= k t_mu(a) for k >= 1, so both sides of eq. 10 move by at most c and the root by
//! at most c^3): 2^(3/8192) - 1 = 2.5e-4 relative, far inside the sampling error of any history.

use super::{Observation, Window};

/// Log-spaced length values per octave.
const BINS_PER_OCTAVE: f64 = 4096.0;
/// The shortest length kept, 2^-20 days (0.08 s): shorter intervals (two crawls at one instant)
/// tell nothing about time and close no interval.
const LOG2_SHORTEST: f64 = -20.0;
/// Bits of an event: the length's bin (0: no interval), the change flag, the day offset.
const LENGTH_BITS: u32 = 17;
const CHANGED_BIT: u32 = 1 << LENGTH_BITS;
const DAY_SHIFT: u32 = LENGTH_BITS + 1;
/// Days after a URL's base day an event can be: 2^14 - 1, about 45 years.
pub const MAX_DAY_OFFSET: i64 = (1 << (32 - DAY_SHIFT)) - 1;
/// The largest length bin, 2^(17 - 1 - 20 + ...) : lengths up to 2^12 days (11 years) are kept,
/// longer ones as 2^12 days.
const MAX_BIN: u32 = (1 << LENGTH_BITS) - 1;

/// The bin of an interval of `days` (> 0): 1 + round(4096 (log2 days + 20)), clamped.
#[inline]
fn bin_of(days: f64) -> u32 {
    let b = (BINS_PER_OCTAVE * (days.log2() - LOG2_SHORTEST)).round() + 1.0;
    b.clamp(1.0, MAX_BIN as f64) as u32
}

/// The length (days) a bin stands for.
#[inline]
pub fn length_of(bin: u32) -> f64 {
    ((bin - 1) as f64 / BINS_PER_OCTAVE + LOG2_SHORTEST).exp2()
}

/// The day (since the epoch, floored) of a time in days.
#[inline]
pub fn day_of(at_days: f64) -> i64 {
    at_days.floor() as i64
}

/// One kept observation, decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    pub day: i64,
    pub changed: bool,
    /// The length (days) of the interval this observation closed, as kept (None: it closed none,
    /// as a URL's first observation).
    pub interval: Option<f64>,
}

/// Why an observation was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// At or before the URL's last observation: the evidence is in time order.
    NotAfterLast,
    /// More than [`MAX_DAY_OFFSET`] days after the URL's oldest kept day.
    TooFarAhead,
}

/// Bytes of [`Evidence::to_bytes`] before the events.
const HEADER_BYTES: usize = 17;

/// A URL's evidence: its observations, oldest first, as 32-bit events from a base day.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Some observation marked the URL's changes completely observed.
    pub complete: bool,
    /// The last observation (days since the epoch), where the next interval starts.
    pub last_at: Option<f64>,
    /// The day events count from.
    pub base_day: i64,
    pub events: Vec<u32>,
}

impl Evidence {
    /// Adds an observation later than every one before.
    pub fn observe(&mut self, o: Observation) -> Result<(), Refused> {
        if self.last_at.is_some_and(|last| o.at_days <= last) {
            return Err(Refused::NotAfterLast);
        }
        let day = day_of(o.at_days);
        if self.events.is_empty() {
            self.base_day = day;
        }
        let offset = day - self.base_day;
        if offset > MAX_DAY_OFFSET {
            return Err(Refused::TooFarAhead);
        }
        let length = self.last_at.map(|last| o.at_days - last);
        let bin = match length {
            Some(l) if l.log2() >= LOG2_SHORTEST - 0.5 / BINS_PER_OCTAVE => bin_of(l),
            _ => 0,
        };
        self.events
            .push(((offset as u32) << DAY_SHIFT) | if o.changed { CHANGED_BIT } else { 0 } | bin);
        self.complete |= o.complete;
        self.last_at = Some(o.at_days);
        Ok(())
    }

    /// The day of the oldest kept observation (None: none kept).
    pub fn first_day(&self) -> Option<i64> {
        self.events
            .first()
            .map(|&e| self.base_day + (e >> DAY_SHIFT) as i64)
    }

    /// The evidence as bytes, to keep between nights: a flag byte (complete, has a last
    /// observation), the last observation (f64 days), the base day (i64) and the events (u32), all
    /// little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + 4 * self.events.len());
        out.push(self.complete as u8 | (self.last_at.is_some() as u8) << 1);
        out.extend_from_slice(&self.last_at.unwrap_or(0.0).to_le_bytes());
        out.extend_from_slice(&self.base_day.to_le_bytes());
        for e in &self.events {
            out.extend_from_slice(&e.to_le_bytes());
        }
        out
    }

    /// The evidence [`Evidence::to_bytes`] wrote; None if `bytes` are not such evidence.
    pub fn from_bytes(bytes: &[u8]) -> Option<Evidence> {
        if bytes.len() < HEADER_BYTES
            || !(bytes.len() - HEADER_BYTES).is_multiple_of(4)
            || bytes[0] > 3
        {
            return None;
        }
        let last_at = f64::from_le_bytes(bytes[1..9].try_into().ok()?);
        let evidence = Evidence {
            complete: bytes[0] & 1 != 0,
            last_at: (bytes[0] & 2 != 0).then_some(last_at),
            base_day: i64::from_le_bytes(bytes[9..17].try_into().ok()?),
            events: bytes[HEADER_BYTES..]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        };
        // a last observation is what every interval is measured from: one must be there and be
        // finite whenever an event is
        let consistent = evidence.events.is_empty() || evidence.last_at.is_some_and(f64::is_finite);
        consistent.then_some(evidence)
    }

    /// The kept observations, oldest first.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.events.iter().map(move |&e| Event {
            day: self.base_day + (e >> DAY_SHIFT) as i64,
            changed: e & CHANGED_BIT != 0,
            interval: match e & MAX_BIN {
                0 => None,
                bin => Some(length_of(bin)),
            },
        })
    }

    /// Forgets the observations of days before `day` (the window moved past them); the last
    /// observation, where the next interval starts, stays.
    pub fn forget_before(&mut self, day: i64) {
        let keep = self
            .events
            .iter()
            .position(|&e| self.base_day + (e >> DAY_SHIFT) as i64 >= day)
            .unwrap_or(self.events.len());
        if keep == 0 {
            return;
        }
        self.events.drain(..keep);
        if let Some(&first) = self.events.first() {
            let shift = first >> DAY_SHIFT;
            self.base_day += shift as i64;
            for e in &mut self.events {
                *e -= shift << DAY_SHIFT;
            }
        }
    }

    /// What the observations in `window` saw: the intervals that ended in it (the whole
    /// interval, as the paper's reference code counts it) and the change notices in it.
    pub fn seen(&self, window: Window) -> Seen {
        let mut seen = Seen::default();
        self.seen_into(window, &mut seen);
        seen
    }

    /// [`Evidence::seen`] into `seen`, whose room is reused: a URL's changed intervals grown in a
    /// fresh vector, twice a URL (its host's pool, its estimate), were a tenth of the learn
    /// phase's CPU on 1M URLs with 30 days of history.
    pub fn seen_into(&self, window: Window, seen: &mut Seen) {
        let first_day = window.first_day();
        seen.changed.clear();
        seen.unchanged = 0;
        seen.unchanged_days = 0.0;
        seen.notices = 0;
        for e in self.events().filter(|e| e.day >= first_day) {
            seen.notices += e.changed as u64;
            if let Some(length) = e.interval {
                if e.changed {
                    seen.changed.push(length);
                } else {
                    seen.unchanged += 1;
                    seen.unchanged_days += length;
                }
            }
        }
    }
}

/// The sufficient statistics of eq. 10 and 11 in a window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    /// Lengths (days) of the intervals that ended in a seen change, in time order.
    pub changed: Vec<f64>,
    /// How many did not, and their total length, summed in time order.
    pub unchanged: u64,
    pub unchanged_days: f64,
    /// Observations that saw a change (for a URL with complete observations, its notices).
    pub notices: u64,
}

impl Seen {
    /// Intervals seen (incomplete observations).
    pub fn intervals(&self) -> u64 {
        self.changed.len() as u64 + self.unchanged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn obs(at_days: f64, changed: bool) -> Observation {
        Observation {
            at_days,
            changed,
            complete: false,
        }
    }

    #[test]
    fn evidence_survives_its_bytes() {
        let mut e = Evidence::default();
        assert_eq!(Evidence::from_bytes(&e.to_bytes()), Some(e.clone()));
        for (t, c) in [(10.25, false), (11.5, true), (13.0, false)] {
            e.observe(obs(t, c)).unwrap();
        }
        e.complete = true;
        let bytes = e.to_bytes();
        assert_eq!(Evidence::from_bytes(&bytes), Some(e.clone()));
        assert_eq!(e.first_day(), Some(10));
        assert_eq!(Evidence::from_bytes(&bytes[..bytes.len() - 1]), None);
        assert_eq!(Evidence::from_bytes(b"x"), None);
    }

    #[test]
    fn lengths_are_kept_within_the_bin_factor() {
        let c = (0.5 / BINS_PER_OCTAVE).exp2();
        for days in [1e-6, 1.0 / 86_400.0, 0.3, 1.0, 7.0, 365.25, 4000.0] {
            let kept = length_of(bin_of(days));
            assert!(kept / days <= c * (1.0 + 1e-15) && days / kept <= c * (1.0 + 1e-15));
        }
        assert_eq!(length_of(bin_of(1e9)), length_of(MAX_BIN));
    }

    #[test]
    fn seen_into_room_used_before_is_what_fresh_room_sees() {
        let mut busy = Evidence::default();
        for (at, changed) in [(1.0, true), (2.0, false), (3.5, true), (4.0, true)] {
            busy.observe(obs(at, changed)).unwrap();
        }
        let mut quiet = Evidence::default();
        quiet.observe(obs(5.0, false)).unwrap();
        quiet.observe(obs(7.0, false)).unwrap();
        let window = Window { from: 0.0, to: 8.0 };
        let mut room = Seen::default();
        busy.seen_into(window, &mut room);
        assert_eq!(room, busy.seen(window));
        quiet.seen_into(window, &mut room);
        assert_eq!(room, quiet.seen(window));
        assert_eq!(
            (room.changed.len(), room.unchanged, room.notices),
            (0, 1, 0)
        );
    }

    #[test]
    fn observations_become_intervals_in_time_order() {
        let mut e = Evidence::default();
        e.observe(obs(10.25, true)).unwrap();
        e.observe(obs(11.25, false)).unwrap();
        e.observe(obs(13.5, true)).unwrap();
        assert_eq!(e.observe(obs(13.5, true)), Err(Refused::NotAfterLast));
        let events: Vec<Event> = e.events().collect();
        assert_eq!(events[0].interval, None);
        assert_eq!((events[1].day, events[1].changed), (11, false));
        assert!((events[2].interval.unwrap() - 2.25).abs() < 2.25 * 2e-4);
        let all = e.seen(Window {
            from: f64::NEG_INFINITY,
            to: 14.0,
        });
        assert_eq!(all.changed.len(), 1);
        assert_eq!(all.notices, 2);
        // a window from day 12 keeps the interval that ended on day 13
        let late = e.seen(Window {
            from: 12.0,
            to: 14.0,
        });
        assert_eq!((late.changed.len(), late.unchanged), (1, 0));
        e.forget_before(12);
        assert_eq!(e.base_day, 13);
        assert_eq!(e.events().count(), 1);
        assert_eq!(e.last_at, Some(13.5));
    }

    proptest! {
        /// Evidence built in two parts (the first forgotten up to a day, as a window moves) sees
        /// in every window after that day exactly what evidence built at once sees.
        #[test]
        fn in_two_parts_as_at_once(
            gaps in prop::collection::vec((0.01f64..9.0, any::<bool>()), 1..60),
            split in 0usize..60, forget in 0.0f64..200.0, from in 0.0f64..300.0,
        ) {
            let mut at = 0.0;
            let observations: Vec<Observation> = gaps
                .iter()
                .map(|&(g, changed)| {
                    at += g;
                    obs(at, changed)
                })
                .collect();
            let split = split.min(observations.len());
            let mut whole = Evidence::default();
            for &o in &observations {
                whole.observe(o).unwrap();
            }
            let mut parts = Evidence::default();
            for &o in &observations[..split] {
                parts.observe(o).unwrap();
            }
            let forget_day = day_of(forget);
            parts.forget_before(forget_day);
            for &o in &observations[split..] {
                parts.observe(o).unwrap();
            }
            let window = Window { from: from.max(forget_day as f64), to: at + 1.0 };
            prop_assert_eq!(parts.seen(window), whole.seen(window));
            prop_assert_eq!(parts.last_at, whole.last_at);
        }
    }
}
