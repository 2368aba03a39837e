//! Per-host cyclic timetables: when, within the horizon, each visit of a host's pages happens.
//!
//! Every sequencing but MP2 places the host's X = sum x_i visits in X equally spaced slots
//! (phase + r) T / X, r = 0..X, and only decides which page takes which slot. Spacing T / X >= P
//! holds because X <= floor(T / P) (PUC-Rio constraint (2)), across the wrap-around too (the
//! timetable repeats every horizon), so politeness holds by construction. The phase, a share of one
//! slot, differs between hosts so that the hosts of a crawler do not all fire at the same instants.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::units::Seconds;

/// How a host's visits are ordered in time (the `--sequencing` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Sequencing {
    /// PUC-Rio Phase 2 MERGE: each page's ideal evenly spaced times, merged into the host's slots.
    Merge,
    /// PUC-Rio's MP2 baseline: each page evenly spaced on its own, no merge (may break politeness).
    Mp2,
    /// Earliest-deadline carousel over the host's slots (PNAS'18 Alg. 3).
    Carousel,
    /// Golden-ratio sequence over the host's slots (Liu & Nain §1.3.4, after Itai & Rosberg).
    GoldenRatio,
}

impl Sequencing {
    /// Every sequencing, for tests and experiments.
    pub const ALL: [Sequencing; 4] = [
        Sequencing::Merge,
        Sequencing::Mp2,
        Sequencing::Carousel,
        Sequencing::GoldenRatio,
    ];

    /// The name summaries and file metadata use (the `--sequencing` value).
    pub fn name(self) -> &'static str {
        match self {
            Sequencing::Merge => "merge",
            Sequencing::Mp2 => "mp2",
            Sequencing::Carousel => "carousel",
            Sequencing::GoldenRatio => "golden-ratio",
        }
    }
}

/// 1 / golden ratio = (sqrt 5 - 1) / 2.
pub const INV_PHI: f64 = 0.618_033_988_749_894_8;

/// A host's cyclic timetable: visit times in [0, T) and the page (index within the host) of each,
/// sorted by time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostTimetable {
    /// Seconds from the horizon start, non-decreasing, in [0, T).
    pub at_s: Vec<f64>,
    /// The page of each visit: its index among the host's pages.
    pub page: Vec<u32>,
}

/// A host's phase as a share of one slot in [0, 1), from its key (stable from night to night).
pub fn host_phase(host_key: u64) -> f64 {
    (xxh3_64_with_seed(&host_key.to_le_bytes(), 0x000F_F5E7) >> 11) as f64 / (1u64 << 53) as f64
}

/// The timetable of one host whose pages take `visits[i]` visits per horizon.
///
/// `phase` in [0, 1) shifts the host's slots by that share of one slot ([`host_phase`]).
pub fn host_timetable(
    visits: &[u32],
    horizon: Seconds,
    phase: f64,
    sequencing: Sequencing,
) -> HostTimetable {
    let total: u64 = visits.iter().map(|&x| x as u64).sum();
    if total == 0 {
        return HostTimetable::default();
    }
    let phase = if (0.0..1.0).contains(&phase) {
        phase
    } else {
        0.0
    };
    let order = match sequencing {
        Sequencing::Merge => merge_order(visits),
        Sequencing::Carousel => carousel_order(visits, total),
        Sequencing::GoldenRatio => golden_order(visits, total),
        Sequencing::Mp2 => return mp2(visits, horizon, phase / total as f64),
    };
    let slot = horizon.0 / total as f64;
    HostTimetable {
        at_s: (0..total).map(|r| (r as f64 + phase) * slot).collect(),
        page: order,
    }
}

/// The ideal time of page i's j-th visit as a share of the horizon, (j + s_i) / x_i, with a stagger
/// s_i = frac((i + 1) / phi) per page.
///
/// PUC-Rio's MERGE uses t*_ij = j T / (x_i + 1) for every page: in a non-cyclic horizon that starts
/// fresh it is the even spacing, but cyclically it leaves a double gap at the wrap, and it puts the
/// visits of all pages with equal x_i at the same instant, which clumps them in the merged order (a
/// host with 100 single-visit pages and one frequent page would see the frequent page wait 100 slots
/// in the middle of the night). A low-discrepancy stagger spreads equal pages over the horizon.
#[inline]
fn ideal_share(page: usize, j: u32, x: u32) -> f64 {
    let stagger = ((page as f64 + 1.0) * INV_PHI).fract();
    (j as f64 + stagger) / x as f64
}

/// MERGE (PUC-Rio §2.2 steps 1-3): sort all ideal times, the rank is the slot.
fn merge_order(visits: &[u32]) -> Vec<u32> {
    let mut ideal: Vec<(f64, u32)> = visits
        .iter()
        .enumerate()
        .flat_map(|(i, &x)| (0..x).map(move |j| (ideal_share(i, j, x), i as u32)))
        .collect();
    // ties by page index, as the paper
    ideal.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ideal.into_iter().map(|(_, i)| i).collect()
}

/// MP2: every page evenly spaced at its own ideal times, no merge; the result is sorted by time.
fn mp2(visits: &[u32], horizon: Seconds, shift: f64) -> HostTimetable {
    let mut v: Vec<(f64, u32)> = visits
        .iter()
        .enumerate()
        .flat_map(|(i, &x)| {
            (0..x).map(move |j| (((ideal_share(i, j, x) + shift) % 1.0) * horizon.0, i as u32))
        })
        .collect();
    v.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    HostTimetable {
        at_s: v.iter().map(|p| p.0).collect(),
        page: v.iter().map(|p| p.1).collect(),
    }
}

/// A page's next visit in the carousel: its deadline (count + 1) X / x_i as the fraction
/// (count + 1) / x_i, compared exactly by cross-multiplication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Deadline {
    next: u64,
    of: u64,
    page: u32,
}

impl Ord for Deadline {
    fn cmp(&self, other: &Self) -> Ordering {
        ((self.next as u128) * (other.of as u128))
            .cmp(&((other.next as u128) * (self.of as u128)))
            .then(self.page.cmp(&other.page))
    }
}
impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Earliest-deadline carousel (PNAS'18 Alg. 3). The j-th visit of page i (j = 0..x_i) is released at
/// slot j X / x_i and due by slot (j + 1) X / x_i; each slot takes the released visit with the
/// earliest deadline (ties by page index). Integer arithmetic only, so it is exact and deterministic.
///
/// Our copy of Alg. 3 lost steps 4-5 to OCR (only "s_k <- s_k + p_k" and "s_k0 <- s_k0 - 1" survive);
/// we implement the earliest-deadline rule the text names. Every slot has a released visit (at slot
/// s, sum_i (floor(s x_i / X) + 1) > s visits are released), so every page gets exactly x_i slots.
fn carousel_order(visits: &[u32], total: u64) -> Vec<u32> {
    // pending: pages waiting for their next release, by release slot ceil(j X / x_i)
    let mut pending: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut ready: BinaryHeap<Reverse<Deadline>> = BinaryHeap::new();
    let mut count = vec![0u64; visits.len()];
    for (i, &x) in visits.iter().enumerate() {
        if x > 0 {
            pending.push(Reverse((0, i as u32)));
        }
    }
    let mut order = Vec::with_capacity(total as usize);
    for s in 0..total {
        while let Some(&Reverse((release, i))) = pending.peek() {
            if release > s {
                break;
            }
            pending.pop();
            let x = visits[i as usize] as u64;
            ready.push(Reverse(Deadline {
                next: count[i as usize] + 1,
                of: x,
                page: i,
            }));
        }
        let Some(Reverse(d)) = ready.pop() else {
            break; // cannot happen (see above); stop rather than loop
        };
        let i = d.page as usize;
        order.push(d.page);
        count[i] += 1;
        let x = visits[i] as u64;
        if count[i] < x {
            let release = (count[i] * total).div_ceil(x);
            pending.push(Reverse((release, d.page)));
        }
    }
    order
}

/// Golden-ratio sequence (Liu & Nain §1.3.4): page i owns the block of indices j with
/// sum_{m<i} x_m <= j < sum_{m<=i} x_m; the s-th slot goes to the owner of the s-th smallest
/// frac(j / phi). Liu & Nain take X a Fibonacci number; any X works (three-gap theorem), with the
/// even spacing guarantee only approximate.
fn golden_order(visits: &[u32], total: u64) -> Vec<u32> {
    let mut owner = Vec::with_capacity(total as usize);
    for (i, &x) in visits.iter().enumerate() {
        owner.extend(std::iter::repeat_n(i as u32, x as usize));
    }
    let mut js: Vec<(f64, u64)> = (0..total)
        .map(|j| ((j as f64 * INV_PHI).fract(), j))
        .collect();
    js.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    js.into_iter().map(|(_, j)| owner[j as usize]).collect()
}

/// Consecutive gaps of a cyclic timetable, the wrap-around (first + T - last) included.
pub fn cyclic_gaps(at_s: &[f64], horizon: Seconds) -> impl Iterator<Item = f64> + '_ {
    let wrap = match (at_s.first(), at_s.last()) {
        (Some(&first), Some(&last)) if at_s.len() > 1 => Some(first + horizon.0 - last),
        (Some(_), Some(_)) => Some(horizon.0),
        _ => None,
    };
    at_s.windows(2).map(|w| w[1] - w[0]).chain(wrap)
}

/// Politeness of a cyclic host timetable: (gaps shorter than `min_delay` minus `tolerance`, the
/// shortest gap). MP2 is reported this way; the other sequencings have no violations by construction.
pub fn politeness_violations(
    at_s: &[f64],
    horizon: Seconds,
    min_delay: Seconds,
    tolerance: Seconds,
) -> (u64, f64) {
    let mut count = 0;
    let mut shortest = f64::INFINITY;
    for g in cyclic_gaps(at_s, horizon) {
        if g < min_delay.0 - tolerance.0 {
            count += 1;
        }
        shortest = shortest.min(g);
    }
    (count, shortest)
}
