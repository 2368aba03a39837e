//! One row per URL, whatever the host columns say: the worker judging a URL's claims keeps the
//! first row by (file, row) and names the others, which their host's worker then rejects as
//! `duplicate_url`. (Rows of one URL under one host are also found when arranging the host; a row
//! listed under two hosts is found only here.)

use super::flag_sort::{flag_pass, RADIX};
use super::wire::claims::Claim;

/// The rows that lose their URL to an earlier row, as packed origins per worker holding them.
pub fn judge(mut claims: Vec<Claim>, peers: usize) -> Vec<Vec<u64>> {
    let mut losers = vec![Vec::new(); peers];
    if claims.len() < 2 {
        return losers;
    }
    // by URL then origin: two in-place radix passes on the URL's top 16 bits, then small sorts
    let key = |c: &Claim| (c.url_high, c.url_low, c.origin);
    let top = flag_pass(&mut claims, |c| (c.url_high >> 56) as usize);
    for d in 0..RADIX {
        let bucket = &mut claims[top[d]..top[d + 1]];
        let inner = flag_pass(bucket, |c| ((c.url_high >> 48) & 0xff) as usize);
        for e in 0..RADIX {
            bucket[inner[e]..inner[e + 1]].sort_unstable_by_key(key);
        }
    }
    for pair in claims.windows(2) {
        if (pair[0].url_high, pair[0].url_low) == (pair[1].url_high, pair[1].url_low) {
            losers[pair[1].holder as usize].push(pair[1].origin);
        }
    }
    losers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::pages::Origin;
    use crate::job::wire::claims::pack;

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
