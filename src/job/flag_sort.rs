//! In-place most-significant-digit radix passes (American flag sort, McIlroy, Bostic & McIlroy
//! 1993): sorting millions of rows by a key without a second array of them.
//!
//! A pass moves every element straight to its bucket by swap cycles, so it reads and writes at only
//! 256 places at a time (cache and TLB friendly), and needs no scratch copy: the canonical order of
//! a worker's rows used to scatter 40-byte keys into 65,536 buckets of a second array, which cost
//! more than the sorting itself (one cache and TLB miss per row) and a second copy of the keys.

use std::cmp::Ordering;

/// Buckets of one pass (one byte of the key).
pub const RADIX: usize = 256;

/// Reorders `v` by `digit` (0..256; stable order is not kept inside a bucket) and returns the
/// bucket boundaries: bucket `d` is `v[bounds[d]..bounds[d + 1]]`.
pub fn flag_pass<T: Copy>(v: &mut [T], digit: impl Fn(&T) -> usize) -> [usize; RADIX + 1] {
    let mut bounds = [0usize; RADIX + 1];
    for x in v.iter() {
        bounds[digit(x) + 1] += 1;
    }
    for d in 0..RADIX {
        bounds[d + 1] += bounds[d];
    }
    // next[d]: the first place of bucket d not yet holding one of its own elements
    let mut next = [0usize; RADIX];
    next.copy_from_slice(&bounds[..RADIX]);
    for d in 0..RADIX {
        let end = bounds[d + 1];
        while next[d] < end {
            // Carry the element at next[d] around its cycle: each step drops it at the first free
            // place of its bucket and picks up the element that was there, until one of bucket d
            // comes back. One read and one write a step (a swap with next[d]'s place took two of
            // each).
            let mut carried = v[next[d]];
            let mut k = digit(&carried);
            while k != d {
                carried = std::mem::replace(&mut v[next[k]], carried);
                next[k] += 1;
                k = digit(&carried);
            }
            v[next[d]] = carried;
            next[d] += 1;
        }
    }
    bounds
}

/// Sorts `v` by a 16-byte key (`key(x)`: its two big-endian halves), then by `tie` where keys
/// agree: radix passes on the first byte where the keys of a bucket differ (bytes all of them
/// share, such as a "www." every host name starts with, cost one look), and comparison sorts
/// once buckets are small. On 310K host names of which the first 8 bytes are all alike, the
/// comparison sort of the same keys it replaced took 253M instructions, 133M more than this.
pub fn sort_by_wide_key<T: Copy>(
    v: &mut [T],
    key: impl Fn(&T) -> (u64, u64) + Copy,
    tie: impl Fn(&T, &T) -> Ordering + Copy,
) {
    let Some(first) = v.first().map(key) else {
        return;
    };
    if v.len() <= COMPARISON_SORT_AT_MOST {
        v.sort_unstable_by(|a, b| key(a).cmp(&key(b)).then_with(|| tie(a, b)));
        return;
    }
    // the bits where some key differs from the first
    let differ = v.iter().fold((0, 0), |(high, low), x| {
        let k = key(x);
        (high | (k.0 ^ first.0), low | (k.1 ^ first.1))
    });
    let byte = match differ {
        (0, 0) => {
            v.sort_unstable_by(tie);
            return;
        }
        (0, low) => 8 + low.leading_zeros() / 8,
        (high, _) => high.leading_zeros() / 8,
    };
    let digit = |x: &T| {
        let k = key(x);
        let half = if byte < 8 { k.0 } else { k.1 };
        ((half >> (56 - 8 * (byte % 8))) & 0xff) as usize
    };
    let bounds = flag_pass(v, digit);
    for d in 0..RADIX {
        sort_by_wide_key(&mut v[bounds[d]..bounds[d + 1]], key, tie);
    }
}

/// Buckets of up to this many elements are sorted by comparison: a radix pass sets up 256
/// buckets, more work than a comparison sort of a few dozen.
const COMPARISON_SORT_AT_MOST: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn a_pass_groups_by_digit_and_keeps_every_element() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [0usize, 1, 2, 255, 256, 1000, 70_000] {
            let original: Vec<u32> = (0..n).map(|_| rng.random()).collect();
            let mut v = original.clone();
            let digit = |x: &u32| (x >> 24) as usize;
            let bounds = flag_pass(&mut v, digit);
            assert_eq!(bounds[0], 0);
            assert_eq!(bounds[RADIX], n);
            for d in 0..RADIX {
                assert!(v[bounds[d]..bounds[d + 1]].iter().all(|x| digit(x) == d));
            }
            let (mut a, mut b) = (original, v);
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn two_passes_and_small_sorts_equal_a_full_sort() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // few distinct top bytes: big buckets, many equal digits
        let mut v: Vec<u64> = (0..50_000)
            .map(|_| (rng.random_range(0..4u64) << 56) | rng.random_range(0..1u64 << 52))
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        let top = flag_pass(&mut v, |x| (x >> 56) as usize);
        for d in 0..RADIX {
            let bucket = &mut v[top[d]..top[d + 1]];
            let inner = flag_pass(bucket, |x| ((x >> 48) & 0xff) as usize);
            for e in 0..RADIX {
                bucket[inner[e]..inner[e + 1]].sort_unstable();
            }
        }
        assert_eq!(v, expected);
    }

    proptest::proptest! {
        #[test]
        fn a_wide_key_sort_equals_a_comparison_sort(
            // keys drawn from few bytes, so that prefixes are shared and whole keys tie
            bytes in proptest::collection::vec(
                (proptest::collection::vec(proptest::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xff]), 16), 0u32..4),
                0..600,
            ),
            shared in 0usize..16,
        ) {
            // the first `shared` bytes alike in every key, as "www." is in host names
            let key_of = |b: &[u8]| {
                let mut k = [0u8; 16];
                k[shared..].copy_from_slice(&b[shared..]);
                (u64::from_be_bytes(k[..8].try_into().unwrap()), u64::from_be_bytes(k[8..].try_into().unwrap()))
            };
            let mut v: Vec<((u64, u64), u32)> = bytes.iter().map(|(b, t)| (key_of(b), *t)).collect();
            let mut expected = v.clone();
            expected.sort();
            sort_by_wide_key(&mut v, |x| x.0, |a, b| a.1.cmp(&b.1));
            proptest::prop_assert_eq!(v, expected);
        }
    }
}
