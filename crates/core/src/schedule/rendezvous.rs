//! Rendezvous (highest-random-weight) scores of hosts on crawlers: XXH3-64 of a host's 64-bit key,
//! seeded by the crawler. A host prefers the crawler of its greatest score, and that preference
//! depends on nothing but the host and the crawler, so it survives other hosts coming and going.

/// The seed of crawler 0's scores; crawler `c` seeds with this xor `c`.
pub const SEED: u64 = 0x5EED_C4A7;

/// Words 8..16 and 16..24 of XXH3's default secret (the XXH3 specification's `kSecret`), whose
/// xor its 4-to-8-byte path mixes with the seed. The tests hold every score to the `xxhash-rust`
/// crate's own `xxh3_64_with_seed`.
const SECRET_8: u64 = 0x1cad_21f7_2c81_017c;
const SECRET_16: u64 = 0xdb97_9083_e96d_d4de;

/// Scores of hosts on a fixed set of crawlers.
///
/// Each score is `xxh3_64_with_seed(&key.to_le_bytes(), SEED ^ crawler)`, computed here with each
/// crawler's seed mixed once, so that a host's first choice is a loop over the crawlers' mixed
/// seeds: with the crate's call in a loop over a crawler count known only at run time, ranking
/// 1.55M hosts on 10 crawlers took 80-100 ms, and 35-55 ms this way.
pub struct Rendezvous {
    /// Per crawler: the secret's words mixed with its seed, as XXH3 xors them into an input.
    flips: Vec<u64>,
}

impl Rendezvous {
    /// The scores on `crawlers` crawlers (numbered from 0).
    pub fn new(crawlers: u32) -> Self {
        let flips = (0..crawlers as u64)
            .map(|c| {
                let mut seed = SEED ^ c;
                seed ^= ((seed as u32).swap_bytes() as u64) << 32;
                (SECRET_8 ^ SECRET_16).wrapping_sub(seed)
            })
            .collect();
        Rendezvous { flips }
    }

    /// How many crawlers the scores are on.
    pub fn crawlers(&self) -> u32 {
        self.flips.len() as u32
    }

    /// The score of host `key` on `crawler` (higher is preferred): what the tests hold to the
    /// crate's.
    #[cfg(test)]
    fn score(&self, key: u64, crawler: u32) -> u64 {
        score_of(input(key), self.flips[crawler as usize])
    }

    /// The crawler host `key` prefers above all others: of its greatest score (ties, which
    /// 64-bit scores all but never have, to the higher crawler). Crawler 0 when there are none.
    #[inline]
    pub fn first_choice(&self, key: u64) -> u32 {
        self.first_choice_among(key, |_| true).unwrap_or(0)
    }

    /// The crawler host `key` prefers among those `allowed` (as [`Rendezvous::first_choice`]);
    /// None when none is.
    #[inline]
    pub fn first_choice_among(&self, key: u64, allowed: impl Fn(u32) -> bool) -> Option<u32> {
        let x = input(key);
        let (mut best, mut first) = (0, None);
        // a score and two conditional moves a crawler, on the flips in place, whether allowed or
        // not: as a `max_by_key` over the crawlers' numbers (a bounds check, a branch on the
        // crawler's room, and a two-part comparison each) this took twice as long
        for (c, &flip) in self.flips.iter().enumerate() {
            let s = score_of(x, flip);
            let better = allowed(c as u32) & (s >= best);
            best = if better { s } else { best };
            first = if better { Some(c as u32) } else { first };
        }
        first
    }
}

/// The word XXH3 reads an 8-byte input as: its two little-endian halves, swapped.
#[inline(always)]
fn input(key: u64) -> u64 {
    key.rotate_left(32)
}

/// The score of a key whose input word is `x` on the crawler whose mixed seed is `flip`.
#[inline(always)]
fn score_of(x: u64, flip: u64) -> u64 {
    strong_avalanche(x ^ flip)
}

/// XXH3's final mix of an input of 8 bytes.
#[inline(always)]
fn strong_avalanche(mut v: u64) -> u64 {
    const PRIME: u64 = 0x9FB2_1C65_1E98_DF25;
    const LEN: u64 = 8;
    v ^= v.rotate_left(49) ^ v.rotate_left(24);
    v = v.wrapping_mul(PRIME);
    v ^= (v >> 35).wrapping_add(LEN);
    v = v.wrapping_mul(PRIME);
    v ^ (v >> 28)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    proptest::proptest! {
        #[test]
        fn a_score_is_the_crates_xxh3_of_the_key_seeded_by_crawler(
            key in proptest::num::u64::ANY,
            crawler in 0u32..1000,
        ) {
            let r = Rendezvous::new(crawler + 1);
            let want = xxh3_64_with_seed(&key.to_le_bytes(), SEED ^ crawler as u64);
            proptest::prop_assert_eq!(r.score(key, crawler), want);
        }

        #[test]
        fn the_first_choice_is_the_crawler_of_greatest_score(
            key in proptest::num::u64::ANY,
            crawlers in 1u32..40,
        ) {
            let r = Rendezvous::new(crawlers);
            let best = (0..crawlers)
                .map(|c| xxh3_64_with_seed(&key.to_le_bytes(), SEED ^ c as u64))
                .max()
                .unwrap();
            let first = r.first_choice(key);
            proptest::prop_assert_eq!(r.score(key, first), best);
        }
    }

    proptest::proptest! {
        #[test]
        fn the_first_choice_among_some_is_the_allowed_crawler_of_greatest_score(
            key in proptest::num::u64::ANY,
            allowed in proptest::collection::vec(proptest::bool::ANY, 0..20),
        ) {
            let r = Rendezvous::new(allowed.len() as u32);
            let want = (0..allowed.len() as u32)
                .filter(|&c| allowed[c as usize])
                .max_by_key(|&c| xxh3_64_with_seed(&key.to_le_bytes(), SEED ^ c as u64));
            proptest::prop_assert_eq!(r.first_choice_among(key, |c| allowed[c as usize]), want);
        }
    }

    #[test]
    fn keys_at_the_edges_score_as_the_crate_does() {
        let r = Rendezvous::new(70);
        for key in [
            0,
            1,
            u32::MAX as u64,
            1 << 32,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
        ] {
            for c in [0, 1, 2, 63, 64, 69] {
                let want = xxh3_64_with_seed(&key.to_le_bytes(), SEED ^ c as u64);
                assert_eq!(r.score(key, c), want, "key {key:#x} crawler {c}");
            }
        }
        assert_eq!(Rendezvous::new(0).first_choice(7), 0);
    }
}
