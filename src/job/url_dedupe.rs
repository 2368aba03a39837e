//! One row per URL, whatever the host columns say: the worker judging a URL's claims keeps the
//! first row by (file, row) and names the others, which their host's worker then rejects as
//! `duplicate_url`. (Rows of one URL under one host are also found when arranging the host; a row
//! listed under two hosts is found only here.)
//!
//! Only rows whose key is not their URL's own ([`PageRow::key_is_urls_own`]) can list a URL under
//! two hosts: every other row of a URL has the URL's own key, so they meet on one worker and
//! arranging finds them. So only those rows claim their URL as they are read, and the judge of a
//! URL is the worker holding the rows of its own key, which adds its own rows of the URLs claimed
//! there ([`own_claims`]). A crawl whose host column is the URL's host sends no claims at all (a
//! claim of every row took 9% of the time of a 10M-URL run and 13% of a 100M one).
//!
//! [`PageRow::key_is_urls_own`]: crate::io::pages::PageRow::key_is_urls_own

use super::flag_sort::{flag_pass, RADIX};
use super::keys::worker_of_host;
use super::wire::claims::Claim;
use super::wire::rows::RowBatch;
use crate::io::politeness_key::PolitenessKey;
use revisit_core::balance::Routes;

/// The worker that judges the claims on `url` (identity `url_id`): the one holding the rows whose
/// key is the URL's own under `policy`, or one by the URL's identity when it has none (no row can
/// then have it).
pub fn judge_of(policy: PolitenessKey, url: &str, url_id: u128, routes: &Routes) -> u32 {
    match policy.of(url, None, None) {
        Ok(own) => worker_of_host(routes, own.as_bytes()),
        Err(_) => ((url_id >> 32) as u32) % routes.peers() as u32,
    }
}

/// The claims of the rows in `held` (this worker's, `me`) whose keys are their URLs' own, on the
/// URLs of `claimed` (the claims this worker judges): with them, the judge sees every row of a URL
/// some row lists under another host. None when nothing was claimed here.
///
/// The URLs claimed are looked up in a bitmap of [`FILTER_BITS_PER_CLAIM`] bits a claim, not a set
/// (a few bytes a claim instead of a set's 20 or more): a row it takes for claimed when its URL was
/// not (one in 16 at most) only claims in vain. Such a URL's claims are all this worker's rows of
/// the URL's own key, and the judge rejects the ones arranging rejects anyway, all but the first.
pub fn own_claims(held: &[RowBatch], claimed: &[Claim], me: u32) -> Vec<Claim> {
    if claimed.is_empty() {
        return Vec::new();
    }
    let bits = (claimed.len() * FILTER_BITS_PER_CLAIM).next_power_of_two();
    // the URL identity's top bits are uniform (xxh3): the bit of a URL is its top log2(bits)
    let shift = u64::BITS - bits.trailing_zeros();
    let bit = |c: &Claim| (c.url_high.checked_shr(shift).unwrap_or(0)) as usize;
    let mut filter = vec![0u64; bits.div_ceil(64)];
    for c in claimed {
        filter[bit(c) / 64] |= 1 << (bit(c) % 64);
    }
    let mut own = Vec::new();
    for batch in held {
        for r in (0..batch.len()).filter(|&r| batch.key_is_urls_own(r)) {
            let claim = Claim::new(batch.url(r).id(), batch.origin(r), me);
            if filter[bit(&claim) / 64] & (1 << (bit(&claim) % 64)) != 0 {
                own.push(claim);
            }
        }
    }
    own
}

/// Bits of [`own_claims`]'s filter a claimed URL: at most one row in 16 whose URL was not claimed
/// claims it.
const FILTER_BITS_PER_CLAIM: usize = 16;

/// The rows that lose their URL to an earlier row, as packed origins per worker holding them.
pub fn judge(mut claims: Vec<Claim>, peers: usize) -> Vec<Vec<u64>> {
    let mut losers = vec![Vec::new(); peers];
    if claims.len() < 2 {
        return losers;
    }
    // by URL then origin: two in-place radix passes on the URL's top 16 bits, then small sorts
    let key = |c: &Claim| (c.url(), c.origin);
    let top = flag_pass(&mut claims, |c| (c.url_high >> 56) as usize);
    for d in 0..RADIX {
        let bucket = &mut claims[top[d]..top[d + 1]];
        let inner = flag_pass(bucket, |c| ((c.url_high >> 48) & 0xff) as usize);
        for e in 0..RADIX {
            bucket[inner[e]..inner[e + 1]].sort_unstable_by_key(key);
        }
    }
    for pair in claims.windows(2) {
        if pair[0].url() == pair[1].url() {
            losers[pair[1].holder as usize].push(pair[1].origin);
        }
    }
    losers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::pages::{Origin, PageRow};
    use crate::job::keys::{host_key, url_id};
    use crate::job::wire::claims::{pack, unpack};

    #[test]
    fn the_judge_adds_its_own_rows_of_every_url_claimed_there_and_few_others() {
        let urls: Vec<String> = (0..1000)
            .map(|i| format!("https://a.example/{i}"))
            .collect();
        let mut held = RowBatch::new(0);
        for (i, url) in urls.iter().enumerate() {
            let row = PageRow {
                url,
                host: "a.example",
                // every tenth row's key is not its URL's own: it claimed already
                key_is_urls_own: i % 10 != 0,
                importance: 1.0,
                change_rate: 1.0,
                complete_obs: false,
                min_interval_s: f64::NAN,
                max_interval_s: f64::NAN,
                origin: Origin {
                    file: 1,
                    row: i as u64,
                },
                host_token: None,
            };
            held.push(&row, host_key(b"a.example"));
        }
        // rows elsewhere claim URLs 0, 7, ..., 994 under other hosts
        let claimed: Vec<Claim> = (0..1000)
            .step_by(7)
            .map(|i| Claim::new(url_id(urls[i].as_bytes()), Origin { file: 0, row: 0 }, 1))
            .collect();
        let own = own_claims(std::slice::from_ref(&held), &claimed, 0);
        let wanted: Vec<Claim> = (0..1000)
            .step_by(7)
            .filter(|i| i % 10 != 0)
            .map(|i| {
                Claim::new(
                    url_id(urls[i].as_bytes()),
                    Origin {
                        file: 1,
                        row: i as u64,
                    },
                    0,
                )
            })
            .collect();
        for w in &wanted {
            assert!(own.contains(w), "{w:?}");
        }
        // no row that claimed already, and at most one in 16 of the unclaimed URLs' rows
        assert!(own.iter().all(|c| !unpack(c.origin).row.is_multiple_of(10)));
        assert!(own.len() <= wanted.len() + 900 / 16, "{}", own.len());
        assert!(own_claims(std::slice::from_ref(&held), &[], 0).is_empty());
    }

    #[test]
    fn the_first_row_of_a_url_wins_whatever_worker_holds_it() {
        let o = |file, row| Origin { file, row };
        let claims = vec![
            Claim::new(7 << 32, o(1, 5), 0),
            Claim::new(9 << 32, o(0, 1), 1),
            Claim::new(7 << 32, o(0, 3), 1), // first of URL 7
            Claim::new(7 << 32, o(2, 0), 1),
            Claim::new(8 << 64, o(0, 0), 0),
        ];
        let losers = judge(claims, 2);
        assert_eq!(losers[0], vec![pack(o(1, 5))]);
        assert_eq!(losers[1], vec![pack(o(2, 0))]);
    }
}
