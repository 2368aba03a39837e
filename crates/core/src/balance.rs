//! Hosts to workers. The job's work after the read follows pages, and a host's pages stay on one
//! worker. Hashing hosts to workers evens their counts, not their pages: on 10M URLs of Zipf-sized
//! hosts one of 2 workers held 54.5% of the pages, and one of 16 twice the mean. So the hosts that
//! a sample of the input finds heavy are placed first, the heaviest on the least loaded worker
//! (longest processing time first), and every other host goes by its hash into an interval of the
//! hash space sized to what each worker has left of an even share.
//!
//! A sample from one place of an input sorted by host would take that place's hosts for heavy. So
//! a host is heavy only where every sample keeps it (at a quarter of the heavy share or more): in
//! an input sorted by host, samples from spread places see different hosts, none qualifies, and
//! every host goes by its hash alone.

use serde::{Deserialize, Serialize};

use crate::reduce::Combine;

/// A host is heavy from this fraction of one worker's even share of the sampled rows (so at most
/// this many heavy hosts a worker). On 10M Zipf URLs (100K hosts, samples of 32K rows a worker),
/// the busiest of 2, 4 and 8 workers held 1.015, 1.033 and 1.062 times the mean, against 1.089,
/// 1.218 and 1.327 by hash alone; at 1/16 (and samples keeping 1/64), 1.016, 1.067 and 1.036.
pub const HEAVY_SHARE_OF_WORKER: u64 = 64;

/// A sample keeps the hosts at a quarter of the heavy share or more: a heavy host, expected at
/// 32 rows in a sample of 32K rows for 16 workers, falls below 8 once in 10^7 samples.
const KEPT_BELOW_HEAVY: u64 = 4;

/// Hosts counted in samples of the input, combined over workers: how many rows the samples held,
/// how many samples there were, and the hosts each sample found at a kept share.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub rows: u64,
    /// Samples with at least one row.
    pub samples: u32,
    /// Sorted by identity.
    pub hosts: Vec<SampledHost>,
}

/// A host of a [`Sample`]: its identity, its rows in the samples that kept it, and how many did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampledHost {
    pub id: u128,
    pub rows: u64,
    pub samples: u32,
}

impl Sample {
    /// One sample of `rows` rows, from each host's (identity, rows) in it, for `peers` workers:
    /// only the hosts at a quarter of the heavy share or more are kept.
    pub fn of(counts: impl IntoIterator<Item = (u128, u64)>, rows: u64, peers: usize) -> Sample {
        if rows == 0 {
            return Sample::default();
        }
        // rows / (peers x HEAVY x KEPT) <= count, without a division's rounding
        let kept = |count: u64| {
            count as u128 * peers as u128 * (HEAVY_SHARE_OF_WORKER * KEPT_BELOW_HEAVY) as u128
                >= rows as u128
        };
        let mut hosts: Vec<SampledHost> = counts
            .into_iter()
            .filter(|&(_, count)| kept(count))
            .map(|(id, rows)| SampledHost {
                id,
                rows,
                samples: 1,
            })
            .collect();
        hosts.sort_unstable_by_key(|h| h.id);
        Sample {
            rows,
            samples: 1,
            hosts,
        }
    }
}

impl Combine for Sample {
    fn combine(&mut self, other: Self) {
        self.rows += other.rows;
        self.samples += other.samples;
        // a merge of two lists sorted by identity, adding up a host's entries
        let mine = std::mem::take(&mut self.hosts);
        let mut merged = Vec::with_capacity(mine.len() + other.hosts.len());
        let (mut a, mut b) = (
            mine.into_iter().peekable(),
            other.hosts.into_iter().peekable(),
        );
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.id == y.id => {
                    let (x, y) = (a.next(), b.next());
                    x.zip(y).map(|(x, y)| SampledHost {
                        id: x.id,
                        rows: x.rows + y.rows,
                        samples: x.samples + y.samples,
                    })
                }
                (Some(x), Some(y)) if x.id < y.id => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(h) => merged.push(h),
                None => break,
            }
        }
        self.hosts = merged;
    }
}

/// Which worker holds each host, by its 128-bit identity: listed heavy hosts where placed, every
/// other host by bits 64 to 95 of its identity (its hash point) in its worker's interval. (The
/// crawler assignment takes the low 64 bits and the arranging parts the top bits, so a host's
/// worker says nothing about either.)
#[derive(Clone, Debug, PartialEq)]
pub struct Routes {
    /// The heavy hosts and their workers, sorted by identity.
    heavy: Vec<(u128, u32)>,
    /// A bit per slot of the identity's low bits, set where a heavy host has them: most hosts,
    /// not heavy, are told so by one look.
    filter: Vec<u64>,
    /// The end (exclusive) of each worker's interval of hash points, in worker order; the last is
    /// 2^32.
    ends: Vec<u64>,
}

/// Hash points: 32 bits.
const POINTS: u64 = 1 << 32;

impl Routes {
    /// Every host by its hash point, in even intervals.
    pub fn even(peers: usize) -> Routes {
        let peers = peers.max(1) as u64;
        Routes {
            heavy: Vec::new(),
            filter: vec![0],
            ends: (1..=peers).map(|w| w * POINTS / peers).collect(),
        }
    }

    /// The routes `sample` suggests for `peers` workers: its heavy hosts (seen in every sample,
    /// at [`HEAVY_SHARE_OF_WORKER`]'s share or more) heaviest first on the least loaded worker
    /// (ties by identity, then the lower worker), every other host by its hash point in intervals
    /// proportional to what each worker lacks of an even share of the sampled rows once its heavy
    /// hosts are counted.
    pub fn balanced(sample: &Sample, peers: usize) -> Routes {
        let peers = peers.max(1);
        let rows = sample.rows as u128;
        let heavy_at = |h: &SampledHost| {
            h.samples == sample.samples
                && h.rows as u128 * peers as u128 * HEAVY_SHARE_OF_WORKER as u128 >= rows
        };
        let mut heavy: Vec<SampledHost> = sample.hosts.iter().copied().filter(heavy_at).collect();
        if peers == 1 || heavy.is_empty() {
            return Routes::even(peers);
        }
        heavy.sort_unstable_by_key(|h| (std::cmp::Reverse(h.rows), h.id));
        // loads in sampled rows times peers, so that an even share is `rows` exactly
        let mut load = vec![0u128; peers];
        let mut placed: Vec<(u128, u32)> = Vec::with_capacity(heavy.len());
        for h in &heavy {
            let w = (0..peers).min_by_key(|&w| (load[w], w)).unwrap_or(0);
            load[w] += h.rows as u128 * peers as u128;
            placed.push((h.id, w as u32));
        }
        placed.sort_unstable();
        let lacking: Vec<u128> = load.iter().map(|&l| rows.saturating_sub(l)).collect();
        let total: u128 = lacking.iter().sum();
        if total == 0 {
            // the heavy hosts fill every worker's share: the rest (too little to count) evenly
            return Routes {
                heavy: placed,
                ..Routes::even(peers)
            }
            .with_filter();
        }
        let mut ends = Vec::with_capacity(peers);
        let mut so_far = 0u128;
        for l in &lacking {
            so_far += l;
            ends.push((so_far * POINTS as u128 / total) as u64);
        }
        Routes {
            heavy: placed,
            filter: Vec::new(),
            ends,
        }
        .with_filter()
    }

    /// Sets the filter's bits for the heavy hosts: 64 bits a heavy host (a host not heavy passes
    /// it in 1 of 64 lookups at most).
    fn with_filter(mut self) -> Routes {
        let bits = (self.heavy.len() * 64).next_power_of_two().max(64);
        self.filter = vec![0; bits / 64];
        for &(id, _) in &self.heavy {
            let slot = self.slot(id);
            self.filter[slot / 64] |= 1 << (slot % 64);
        }
        self
    }

    #[inline]
    fn slot(&self, id: u128) -> usize {
        (id as usize) & (self.filter.len() * 64 - 1)
    }

    /// The worker of the host of identity `id`.
    #[inline]
    pub fn worker_of(&self, id: u128) -> u32 {
        let slot = self.slot(id);
        if self.filter[slot / 64] & (1 << (slot % 64)) != 0 {
            if let Ok(i) = self.heavy.binary_search_by_key(&id, |h| h.0) {
                return self.heavy[i].1;
            }
        }
        let point = (id >> 64) as u32 as u64;
        self.ends.partition_point(|&end| end <= point) as u32
    }

    /// Workers.
    pub fn peers(&self) -> usize {
        self.ends.len()
    }

    /// Hosts placed by their sampled size.
    pub fn heavy_hosts(&self) -> usize {
        self.heavy.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A host identity whose hash point is `point` and low bits `low`.
    fn id(point: u32, low: u64) -> u128 {
        ((point as u128) << 64) | low as u128
    }

    #[test]
    fn even_routes_cut_the_hash_points_in_equal_intervals() {
        let r = Routes::even(4);
        assert_eq!(r.peers(), 4);
        assert_eq!(r.worker_of(id(0, 7)), 0);
        assert_eq!(r.worker_of(id((1 << 30) - 1, 7)), 0);
        assert_eq!(r.worker_of(id(1 << 30, 7)), 1);
        assert_eq!(r.worker_of(id(3 << 30, 7)), 3);
        assert_eq!(r.worker_of(id(u32::MAX, 7)), 3);
        // the bits above and below the hash point do not move a host
        assert_eq!(r.worker_of(id(1 << 31, 0) | (u128::MAX << 96)), 2);
        assert_eq!(Routes::even(1).worker_of(u128::MAX), 0);
    }

    #[test]
    fn a_sample_keeps_hosts_from_a_quarter_of_the_heavy_share() {
        // 2 workers: heavy from 1/128 of the rows, kept from 1/512
        let s = Sample::of([(5, 2), (3, 1), (9, 100)], 1024, 2);
        let kept: Vec<u128> = s.hosts.iter().map(|h| h.id).collect();
        assert_eq!(kept, vec![5, 9]);
        assert_eq!((s.rows, s.samples), (1024, 1));
        assert_eq!(Sample::of([(1, 0)], 0, 2), Sample::default());
    }

    #[test]
    fn samples_combine_by_host_in_any_order() {
        let a = Sample::of([(1, 50), (4, 30)], 100, 2);
        let b = Sample::of([(4, 10), (2, 60)], 100, 2);
        let c = Sample::of([(4, 20), (1, 40)], 100, 2);
        let mut abc = a.clone();
        abc.combine(b.clone());
        abc.combine(c.clone());
        let mut cba = c;
        cba.combine(b);
        cba.combine(a);
        assert_eq!(abc, cba);
        assert_eq!((abc.rows, abc.samples), (300, 3));
        let four = abc.hosts.iter().find(|h| h.id == 4).copied();
        assert_eq!(
            four,
            Some(SampledHost {
                id: 4,
                rows: 60,
                samples: 3
            })
        );
    }

    #[test]
    fn the_heaviest_host_goes_first_and_its_worker_takes_less_of_the_rest() {
        // one host of 40% of the rows on 2 workers: worker 0 takes it and 10% of the rest's
        // points (1/6 of them), worker 1 the other 5/6
        let big = id(0, 1);
        let s = Sample::of([(big, 400), (id(1, 2), 1), (id(2, 3), 1)], 1000, 2);
        let r = Routes::balanced(&s, 2);
        assert_eq!(r.heavy_hosts(), 1);
        assert_eq!(r.worker_of(big), 0);
        let ends = r.ends.clone();
        assert_eq!(ends, vec![POINTS / 6, POINTS]);
        assert_eq!(r.worker_of(id((POINTS / 6) as u32 - 1, 9)), 0);
        assert_eq!(r.worker_of(id((POINTS / 6) as u32, 9)), 1);
    }

    #[test]
    fn a_host_missing_from_one_sample_is_not_heavy() {
        // as in an input sorted by host: each sample sees its own hosts
        let mut s = Sample::of([(id(5, 1), 900)], 1000, 2);
        s.combine(Sample::of([(id(6, 2), 900)], 1000, 2));
        assert_eq!(Routes::balanced(&s, 2), Routes::even(2));
    }

    #[test]
    fn heavy_hosts_past_every_share_leave_the_rest_even() {
        let s = Sample::of([(id(1, 1), 500), (id(2, 2), 500)], 1000, 2);
        let r = Routes::balanced(&s, 2);
        assert_eq!(r.heavy_hosts(), 2);
        assert_ne!(r.worker_of(id(1, 1)), r.worker_of(id(2, 2)));
        assert_eq!(r.ends, Routes::even(2).ends);
    }

    /// Pages per worker when each host of `sizes` (identity, pages) goes where `routes` says.
    fn loads(routes: &Routes, sizes: &[(u128, u64)]) -> Vec<u64> {
        let mut load = vec![0; routes.peers()];
        for &(id, pages) in sizes {
            load[routes.worker_of(id) as usize] += pages;
        }
        load
    }

    /// Hosts of Zipf sizes (1M / rank pages) at random identities.
    fn zipf_hosts(seed: u64, hosts: usize) -> Vec<(u128, u64)> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (1..=hosts)
            .map(|r| (rng.random::<u128>(), (1_000_000 / r as u64).max(1)))
            .collect()
    }

    /// The busiest worker's pages over the mean, or over the largest host where that is more
    /// (no routing of whole hosts can do better), by `routes`.
    fn excess(routes: &Routes, sizes: &[(u128, u64)]) -> f64 {
        let load = loads(routes, sizes);
        let total: u64 = sizes.iter().map(|s| s.1).sum();
        let largest = sizes.iter().map(|s| s.1).max().unwrap_or(0) as f64;
        let floor = largest.max(total as f64 / routes.peers() as f64);
        *load.iter().max().unwrap_or(&0) as f64 / floor
    }

    /// On 100 sets of Zipf hosts (the sample being the whole set), the busiest of 2 to 11 workers
    /// holds within 5% of the mean or of the largest host in the median set, against more than
    /// 20% by hash alone; the rest, hashed, varies from set to set, by 20% at most.
    #[test]
    fn balanced_routes_even_the_pages_of_zipf_hosts() {
        let (mut balanced, mut hashed) = (Vec::new(), Vec::new());
        for seed in 0..100u64 {
            let peers = 2 + (seed % 10) as usize;
            let sizes = zipf_hosts(seed, 2000 + 40 * seed as usize);
            let total = sizes.iter().map(|s| s.1).sum();
            let routes = Routes::balanced(&Sample::of(sizes.iter().copied(), total, peers), peers);
            assert_eq!(loads(&routes, &sizes).iter().sum::<u64>(), total);
            balanced.push(excess(&routes, &sizes));
            hashed.push(excess(&Routes::even(peers), &sizes));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let worst = balanced.iter().copied().fold(0.0, f64::max);
        let (balanced, hashed) = (median(&mut balanced), median(&mut hashed));
        assert!(balanced < 1.05, "median {balanced}, by hash {hashed}");
        assert!(hashed > 1.2, "median by hash {hashed}");
        assert!(worst < 1.2, "worst {worst}");
    }

    proptest! {
        /// Any sample's routes send every identity to one of the workers, and a heavy host's
        /// filter bit is set.
        #[test]
        fn every_host_has_a_worker(
            counts in proptest::collection::vec((any::<u128>(), 1u64..1000), 0..200),
            peers in 1usize..9,
            probes in proptest::collection::vec(any::<u128>(), 1..100),
        ) {
            let rows = counts.iter().map(|c| c.1).sum::<u64>().max(1);
            let routes = Routes::balanced(&Sample::of(counts.iter().copied(), rows, peers), peers);
            prop_assert_eq!(routes.peers(), peers);
            for id in probes.iter().chain(counts.iter().map(|c| &c.0)) {
                prop_assert!((routes.worker_of(*id) as usize) < peers);
            }
            for &(id, w) in &routes.heavy {
                prop_assert_eq!(routes.worker_of(id), w);
            }
        }
    }
}
