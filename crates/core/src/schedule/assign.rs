//! Hosts to crawlers: balanced loads, and sticky from night to night.
//!
//! Rendezvous (highest-random-weight) hashing ([`Rendezvous`]) gives every host a preference order
//! over crawlers that depends only on the host and the crawler, so a host keeps its crawler when
//! other hosts come or go.
//! Pure HRW balances host counts, not loads: a few capped giants would dominate. So hosts are placed
//! heaviest first, each on its most preferred crawler that stays within (1 + slack) x the mean load
//! ("consistent hashing with bounded loads", Mirrokni, Thorup, Zadimoghaddam 2018), falling back to
//! the least loaded crawler when none has room. Heavy hosts fill the crawlers first and the long tail
//! of light hosts evens them out.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use super::rendezvous::Rendezvous;
use crate::exact_sum::ExactSum;

/// Slack over the mean load a crawler may take before a host goes to its next choice.
pub const LOAD_SLACK: f64 = 0.01;

/// Assigns each host `(key, load)` to one of `crawlers`; returns the crawler of each host, in input
/// order. Deterministic: depends on the set of hosts, not on their order. Hosts given in
/// [`placement_order`] already are placed without a sort.
pub fn assign(hosts: &[(u64, f64)], crawlers: u32) -> Vec<u32> {
    let rendezvous = Rendezvous::new(crawlers);
    assign_with(hosts, &rendezvous)
}

/// Hosts in [`placement_order`], each with its first choice of crawler ([`Rendezvous::first_choice`]
/// of its key): one worker's share of the hosts, as [`assign_sorted`] takes them.
#[derive(Clone, Copy, Debug)]
pub struct SortedHosts<'a> {
    /// (key, load) of each host, in placement order.
    pub hosts: &'a [(u64, f64)],
    /// The first choice of `hosts[i]`.
    pub first: &'a [u32],
}

/// [`assign`] on the hosts of `lists` (disjoint, each in [`placement_order`]), without merging
/// them into one list: the greedy takes the next host of all lists in placement order (of equals,
/// the earlier list's first, as a merge in list order would give them) and writes its crawler in
/// that host's place. Returns the crawlers of each list's hosts, and the max / mean of the
/// crawlers' loads ([`imbalance`]).
///
/// So one worker places every worker's hosts as they arrive: merged first, at 3.1M hosts every
/// worker held and filled 60 MB of fresh memory for the merged list alone.
pub fn assign_sorted(lists: &[SortedHosts<'_>], crawlers: u32) -> (Vec<Vec<u32>>, f64) {
    for l in lists {
        assert_eq!(
            l.first.len(),
            l.hosts.len(),
            "a first choice for every host"
        );
        debug_assert!(l
            .hosts
            .windows(2)
            .all(|w| placement_order(w[0].0, w[0].1) <= placement_order(w[1].0, w[1].1)));
    }
    assert!(crawlers > 0, "at least one crawler");
    let rendezvous = Rendezvous::new(crawlers);
    debug_assert!(lists.iter().all(|l| l
        .hosts
        .iter()
        .zip(l.first)
        .all(|(h, &f)| f == rendezvous.first_choice(h.0))));
    // exact: the same limit as for the hosts in one list, in any order
    let total = lists
        .iter()
        .flat_map(|l| l.hosts.iter().map(|h| h.1))
        .collect::<ExactSum>()
        .value();
    let mut placer = Placer {
        rendezvous: &rendezvous,
        load: vec![0.0; crawlers as usize],
        limit: (1.0 + LOAD_SLACK) * total / crawlers as f64,
    };
    let mut out: Vec<Vec<u32>> = lists.iter().map(|l| vec![0; l.hosts.len()]).collect();
    // each crawler's load, exactly, summed as the hosts are placed (for the balance)
    let mut sums = vec![ExactSum::new(); crawlers as usize];
    // the lists' next hosts, least first: (placement order, list), so that of equal hosts the
    // earlier list's comes first; each list's next host replaces the one taken (one sift-down)
    let mut next = vec![0usize; lists.len()];
    let head = |l: usize, at: usize| {
        let (key, w) = lists[l].hosts[at];
        Reverse((placement_order(key, w), l))
    };
    let mut heads: BinaryHeap<_> = (0..lists.len())
        .filter(|&l| !lists[l].hosts.is_empty())
        .map(|l| head(l, 0))
        .collect();
    while let Some(mut top) = heads.peek_mut() {
        let l = top.0 .1;
        let at = next[l];
        let (key, w) = lists[l].hosts[at];
        let crawler = placer.place(key, w, lists[l].first[at]);
        sums[crawler as usize].add(w);
        out[l][at] = crawler;
        next[l] += 1;
        if next[l] < lists[l].hosts.len() {
            *top = head(l, next[l]);
        } else {
            PeekMut::pop(top);
        }
    }
    (out, max_over_mean(&sums))
}

/// The greedy on the crawlers of `rendezvous`.
fn assign_with(hosts: &[(u64, f64)], rendezvous: &Rendezvous) -> Vec<u32> {
    let first = |i: usize| rendezvous.first_choice(hosts[i].0);
    let crawlers = rendezvous.crawlers();
    assert!(crawlers > 0, "at least one crawler");
    // exact: a rounded sum would depend on the order the hosts come in
    let total = hosts.iter().map(|h| h.1).collect::<ExactSum>().value();
    let mut placer = Placer {
        rendezvous,
        load: vec![0.0; crawlers as usize],
        limit: (1.0 + LOAD_SLACK) * total / crawlers as f64,
    };
    let mut out = vec![0u32; hosts.len()];
    let in_order = hosts
        .windows(2)
        .all(|w| placement_order(w[0].0, w[0].1) <= placement_order(w[1].0, w[1].1));
    if in_order {
        // hosts equal in both load and key are interchangeable, so this is the order a sort
        // would give; no copy of the hosts (at 3.1M hosts, 75 MB of fresh memory a worker)
        for (i, (crawler, &(key, w))) in out.iter_mut().zip(hosts).enumerate() {
            *crawler = placer.place(key, w, first(i));
        }
        return out;
    }
    // Heaviest first, ties by key. The records carry what the loop reads, so that neither the sort
    // nor the loop follows an index into `hosts`: at a million hosts each such step missed the
    // cache, and the indirect sort and the loop were most of the assignment's time.
    let mut order: Vec<(u64, u64, u32)> = hosts
        .iter()
        .enumerate()
        .map(|(i, &(key, w))| (heaviest_first(w), key, i as u32))
        .collect();
    // hosts equal in both load and key are interchangeable: an unstable sort gives the same answer
    order.sort_unstable();
    for (heavy, key, i) in order {
        out[i as usize] = placer.place(key, load_of(heavy), first(i as usize));
    }
    out
}

/// The greedy's state: the crawlers' scores, each crawler's load so far, and the most a crawler
/// may take.
struct Placer<'a> {
    rendezvous: &'a Rendezvous,
    load: Vec<f64>,
    limit: f64,
}

impl Placer<'_> {
    /// Places a host of `key`, load `w` and first choice `first`: on its most preferred crawler
    /// with room, else on the least loaded; returns the crawler.
    #[inline]
    fn place(&mut self, key: u64, w: f64, first: u32) -> u32 {
        // The first choice, when it has room, is the most preferred crawler with room. It has for
        // most hosts: 78% of the host-heavy 10M set's, 53% of its 1M set's (crawlers fill up
        // toward the end, with the long tail of light hosts).
        let chosen = if self.load[first as usize] + w <= self.limit {
            first
        } else {
            // The most preferred crawler with room, without ranking all: sorting each host's
            // ranking took as long as the rest of the loop (3.1M hosts, 10 crawlers).
            let (load, limit) = (&self.load, self.limit);
            let room = |c: u32| load[c as usize] + w <= limit;
            self.rendezvous
                .first_choice_among(key, room)
                .unwrap_or_else(|| least_loaded(load))
        };
        self.load[chosen as usize] += w;
        chosen
    }
}

/// The crawler of least `load` (the first of equals): where a host goes when none has room.
fn least_loaded(load: &[f64]) -> u32 {
    (0..load.len() as u32)
        .min_by(|&a, &b| {
            load[a as usize]
                .total_cmp(&load[b as usize])
                .then(a.cmp(&b))
        })
        .unwrap_or(0)
}

/// The order in which [`assign`] places hosts, as a sort key of `(key, load)`: heaviest first,
/// ties by key.
#[inline]
pub fn placement_order(key: u64, load: f64) -> (u64, u64) {
    (heaviest_first(load), key)
}

/// A sort key under which larger loads come first, in the order of [`f64::total_cmp`] reversed.
#[inline]
fn heaviest_first(w: f64) -> u64 {
    let bits = w.to_bits();
    // total_cmp's own mapping of a float to an integer of the same order (negatives reversed),
    // with the sign bit flipped so that it orders as unsigned; then complemented: heaviest first
    let ordered = bits ^ ((((bits as i64) >> 63) as u64) >> 1);
    !(ordered ^ (1 << 63))
}

/// The load of a [`heaviest_first`] key (the mapping is its own inverse on the bits).
#[inline]
fn load_of(heavy: u64) -> f64 {
    let ordered = !heavy ^ (1 << 63);
    f64::from_bits(ordered ^ ((((ordered as i64) >> 63) as u64) >> 1))
}

/// max / mean of the crawlers' loads (1 = perfect balance), the same for any order of `hosts`.
pub fn imbalance(hosts: &[(u64, f64)], assignment: &[u32], crawlers: u32) -> f64 {
    // exact sums: the same ratio whatever order the hosts come in
    let mut sums = vec![ExactSum::new(); crawlers as usize];
    for (h, &c) in hosts.iter().zip(assignment) {
        sums[c as usize].add(h.1);
    }
    max_over_mean(&sums)
}

/// max / mean of the crawlers' exact loads `sums` (1 when every load is 0).
fn max_over_mean(sums: &[ExactSum]) -> f64 {
    let load: Vec<f64> = sums.iter().map(ExactSum::value).collect();
    let mean = sums
        .iter()
        .fold(ExactSum::new(), |mut all, s| {
            all.merge(s);
            all
        })
        .value()
        / sums.len() as f64;
    if mean == 0.0 {
        return 1.0;
    }
    load.iter().cloned().fold(0.0, f64::max) / mean
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, Zipf};
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    use crate::schedule::rendezvous::SEED;

    /// Web-like host loads: Zipf(1) sizes, capped at a politeness limit.
    fn web_hosts(n: usize, seed: u64) -> Vec<(u64, f64)> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let zipf = Zipf::new(n as f64, 1.0).unwrap();
        let mut size = vec![0.0; n];
        for _ in 0..n * 100 {
            size[zipf.sample(&mut rng) as usize - 1] += 0.2;
        }
        (0..n)
            .map(|i| (rng.random::<u64>(), f64::min(size[i], 5760.0)))
            .collect()
    }

    #[test]
    fn loads_are_balanced() {
        for seed in 0..5 {
            let hosts = web_hosts(20_000, seed);
            let a = assign(&hosts, 10);
            let imb = imbalance(&hosts, &a, 10);
            assert!(imb <= 1.02, "seed {seed}: max/mean {imb}");
        }
    }

    #[test]
    fn hosts_keep_their_crawler_when_others_leave() {
        let hosts = web_hosts(20_000, 7);
        let before = assign(&hosts, 10);
        // 1% of the hosts leave
        let kept: Vec<usize> = (0..hosts.len()).filter(|i| i % 100 != 37).collect();
        let after = assign(&kept.iter().map(|&i| hosts[i]).collect::<Vec<_>>(), 10);
        let moved = kept
            .iter()
            .zip(&after)
            .filter(|(&i, &c)| before[i] != c)
            .count();
        let share = moved as f64 / kept.len() as f64;
        eprintln!("{:.2}% of the remaining hosts moved", 100.0 * share);
        assert!(share < 0.05, "{:.1}% of hosts moved", 100.0 * share);
    }

    /// The assignment as first written: an index sort comparing loads, then the same greedy.
    fn assign_by_index(hosts: &[(u64, f64)], crawlers: u32) -> Vec<u32> {
        let total = hosts.iter().map(|h| h.1).collect::<ExactSum>().value();
        let limit = (1.0 + LOAD_SLACK) * total / crawlers as f64;
        let mut order: Vec<usize> = (0..hosts.len()).collect();
        order.sort_by(|&a, &b| {
            hosts[b]
                .1
                .total_cmp(&hosts[a].1)
                .then(hosts[a].0.cmp(&hosts[b].0))
        });
        let mut load = vec![0.0f64; crawlers as usize];
        let mut out = vec![0u32; hosts.len()];
        for i in order {
            let (key, w) = hosts[i];
            let mut prefs: Vec<(u64, u32)> = (0..crawlers)
                .map(|c| (xxh3_64_with_seed(&key.to_le_bytes(), SEED ^ c as u64), c))
                .collect();
            prefs.sort_by(|a, b| b.cmp(a));
            let chosen = prefs
                .iter()
                .map(|&(_, c)| c)
                .find(|&c| load[c as usize] + w <= limit)
                .unwrap_or_else(|| least_loaded(&load));
            load[chosen as usize] += w;
            out[i] = chosen;
        }
        out
    }

    #[test]
    fn heaviest_first_orders_as_total_cmp_reversed() {
        let xs = [
            0.0,
            -0.0,
            1.0,
            0.5,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::NAN,
            -f64::NAN,
        ];
        for a in xs {
            assert_eq!(load_of(heaviest_first(a)).to_bits(), a.to_bits());
            for b in xs {
                assert_eq!(
                    heaviest_first(a).cmp(&heaviest_first(b)),
                    b.total_cmp(&a),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn the_sorted_records_assign_as_the_index_sort_did() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for (n, crawlers) in [(0, 3), (1, 1), (50, 7), (3000, 10), (20_000, 13)] {
            // few distinct loads and keys: ties in load, in key, and in both
            let hosts: Vec<(u64, f64)> = (0..n)
                .map(|_| {
                    let w = [0.0, 1.0, 2.5, 40.0, 5760.0][rng.random_range(0..5)];
                    (rng.random_range(0..(n as u64 / 2 + 1)), w)
                })
                .collect();
            assert_eq!(assign(&hosts, crawlers), assign_by_index(&hosts, crawlers));
            if n > 0 {
                let web = web_hosts(n, n as u64);
                assert_eq!(assign(&web, crawlers), assign_by_index(&web, crawlers));
            }
        }
    }

    proptest::proptest! {
        /// A host goes to its first choice when that has room, and the greedy scores the others
        /// only when not: each host placed as ranking every crawler does, in any order, with the
        /// first choices computed inside or given. Loads drawn from few hosts against many
        /// crawlers, so that crawlers fill up early, and near-equal, so that room is decided in
        /// the last bit.
        #[test]
        fn the_first_choice_with_room_is_where_ranking_every_crawler_places_a_host(
            loads in proptest::collection::vec((0u64..40, 0u32..6), 1..60),
            crawlers in 1u32..12,
            sorted in proptest::bool::ANY,
        ) {
            let mut hosts: Vec<(u64, f64)> = loads
                .iter()
                .map(|&(key, w)| (key, [1.0, 1.0 + f64::EPSILON, 3.0, 0.1, 0.2, 0.3][w as usize]))
                .collect();
            if sorted {
                hosts.sort_by_key(|h| placement_order(h.0, h.1));
            }
            let placed = assign(&hosts, crawlers);
            proptest::prop_assert_eq!(&placed, &assign_by_index(&hosts, crawlers));
            let r = Rendezvous::new(crawlers);
            let first: Vec<u32> = hosts.iter().map(|h| r.first_choice(h.0)).collect();
            if sorted {
                let given = assign_sorted(&[SortedHosts { hosts: &hosts, first: &first }], crawlers);
                proptest::prop_assert_eq!(&placed, &given.0[0]);
            }
        }
    }

    proptest::proptest! {
        /// Hosts dealt to a few lists, each sorted, are placed as the one list of them all is,
        /// merged in list order (of equal hosts, the earlier list's first): every host on the
        /// same crawler, the same balance to the bit. Few keys and loads, so that hosts tie
        /// within and across lists, and crawlers fill up early.
        #[test]
        fn hosts_in_sorted_lists_are_placed_as_their_merge_is(
            loads in proptest::collection::vec((0u64..30, 0u32..6, 0usize..4), 0..80),
            lists in 1usize..5,
            crawlers in 1u32..9,
        ) {
            let r = Rendezvous::new(crawlers);
            let mut dealt: Vec<Vec<(u64, f64)>> = vec![Vec::new(); lists];
            for &(key, w, l) in &loads {
                dealt[l % lists].push((key, [1.0, 1.0 + f64::EPSILON, 3.0, 0.1, 0.2, 7.5][w as usize]));
            }
            for d in &mut dealt {
                d.sort_by_key(|h| placement_order(h.0, h.1));
            }
            let firsts: Vec<Vec<u32>> = dealt
                .iter()
                .map(|d| d.iter().map(|h| r.first_choice(h.0)).collect())
                .collect();
            let sorted: Vec<SortedHosts> = dealt
                .iter()
                .zip(&firsts)
                .map(|(h, f)| SortedHosts { hosts: h, first: f })
                .collect();
            let (placed, ratio) = assign_sorted(&sorted, crawlers);
            // the merge: every list's hosts in list order, then a stable sort
            let mut merged: Vec<((u64, f64), (usize, usize))> = dealt
                .iter()
                .enumerate()
                .flat_map(|(l, d)| d.iter().enumerate().map(move |(i, &h)| (h, (l, i))))
                .collect();
            merged.sort_by_key(|&(h, _)| placement_order(h.0, h.1));
            let hosts: Vec<(u64, f64)> = merged.iter().map(|m| m.0).collect();
            let want = assign(&hosts, crawlers);
            for (&(_, (l, i)), &c) in merged.iter().zip(&want) {
                proptest::prop_assert_eq!(placed[l][i], c, "list {} host {}", l, i);
            }
            let want_ratio = imbalance(&hosts, &want, crawlers);
            proptest::prop_assert_eq!(ratio.to_bits(), want_ratio.to_bits());
        }
    }

    #[test]
    fn a_host_that_fits_nowhere_goes_to_the_least_loaded_crawler() {
        // limit 1.01 x 210: the first two hosts fill one crawler each, the third fits neither
        let hosts = [(11, 150.0), (22, 140.0), (33, 130.0)];
        let a = assign(&hosts, 2);
        assert_ne!(a[0], a[1]);
        assert_eq!(a[2], a[1], "the crawler holding 140, not 150");
        // equal loads: the first crawler
        let a = assign(&[(11, 150.0), (22, 150.0), (33, 150.0)], 2);
        assert_eq!(a[2], 0);
    }

    #[test]
    fn hosts_in_placement_order_assign_as_any_other_order() {
        let mut hosts = web_hosts(5000, 9);
        // ties in load among the light hosts
        for h in hosts.iter_mut().step_by(3) {
            h.1 = 0.2;
        }
        let unsorted = assign(&hosts, 10);
        let mut order: Vec<usize> = (0..hosts.len()).collect();
        order.sort_by_key(|&i| placement_order(hosts[i].0, hosts[i].1));
        let sorted: Vec<(u64, f64)> = order.iter().map(|&i| hosts[i]).collect();
        let placed = assign(&sorted, 10);
        for (k, &i) in order.iter().enumerate() {
            assert_eq!(placed[k], unsorted[i], "host {i}");
        }
        assert_eq!(placed, assign_by_index(&sorted, 10));
    }

    #[test]
    fn the_assignment_and_its_balance_ignore_input_order() {
        for seed in 0..8 {
            // loads of every magnitude and mantissa: rounded sums in two orders differ
            let hosts: Vec<(u64, f64)> = web_hosts(2000, seed)
                .into_iter()
                .enumerate()
                .map(|(i, (k, w))| (k, w * (1.0 + (i as f64).sqrt() / 7.0)))
                .collect();
            let a = assign(&hosts, 7);
            let mut reversed = hosts.clone();
            reversed.reverse();
            let mut b = assign(&reversed, 7);
            let (ratio_a, ratio_b) = (imbalance(&hosts, &a, 7), imbalance(&reversed, &b, 7));
            assert_eq!(ratio_a.to_bits(), ratio_b.to_bits(), "seed {seed}");
            b.reverse();
            assert_eq!(a, b, "seed {seed}");
        }
    }
}
