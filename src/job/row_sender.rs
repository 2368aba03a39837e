//! A reader's rows on their way to their host's worker: batches by worker and part of its hosts,
//! the memo of each host's entry in them, and the URL claims of rows that may repeat a URL.
//!
//! Rows the memo must look up by their host's identity (plain host text, or a dictionary value not
//! met yet) wait a few rows in a short lookahead: the identity is hashed when they arrive and its
//! memo slot fetched then, so that it is in cache when the row is placed. Without it, on 1M hosts
//! read in random order (a host column stored plain: its dictionary outgrew its page), the slot's
//! cache miss was a sixth of the read phase. Rows of a batch may so go out in another order than read; nothing downstream depends on
//! it (arranging orders every worker's rows by host, URL and origin).

use crate::io::host_dictionary::HostToken;
use crate::io::pages::{Origin, PageRow};
use crate::io::politeness_key::PolitenessKey;
use revisit_core::balance::Routes;

use super::arrange::Part;
use super::channel::Shuffle;
use super::keys::{host_id, url_id};
use super::url_dedupe;
use super::wire::claims::{Claim, ClaimBatch};
use super::wire::host_memo::HostMemo;
use super::wire::rows::RowBatch;
use super::wire::BATCH_TEXT_BYTES;

/// Claims gathered before they are sent (about 1.5 MB).
const CLAIMS_PER_BATCH: usize = 1 << 16;

/// Rows held back so that their memo slots arrive in cache before they are placed: enough to
/// cover a miss to memory at the time a row takes.
const LOOKAHEAD_ROWS: usize = 16;

/// Where the rows of a reader go: the workers, and the parts each arranges its hosts in.
#[derive(Clone, Copy)]
pub struct Destinations<'r> {
    pub routes: &'r Routes,
    /// Bits of the host identity that name its part ([`Part::of`]).
    pub part_bits: u32,
}

impl Destinations<'_> {
    /// Batches a reader fills: one per worker and part.
    pub fn batches(self) -> usize {
        self.routes.peers() << self.part_bits
    }

    /// The batch of the host of identity `host`.
    fn batch_of(self, host: u128) -> usize {
        let dest = self.routes.worker_of(host) as usize;
        (dest << self.part_bits) + Part::of(host, self.part_bits).index as usize
    }
}

/// A reader's outgoing rows and claims.
pub struct RowSender<'c> {
    to: Destinations<'c>,
    politeness: PolitenessKey,
    /// Whether rows carry their own refetch bounds.
    with_intervals: bool,
    outgoing: Vec<RowBatch>,
    memo: HostMemo,
    claimed: Vec<ClaimBatch>,
    rows: &'c mut Shuffle<RowBatch>,
    claims: &'c mut Shuffle<ClaimBatch>,
    ahead: Lookahead,
}

impl<'c> RowSender<'c> {
    /// A sender of rows over `rows` and claims over `claims`.
    pub fn new(
        to: Destinations<'c>,
        politeness: PolitenessKey,
        with_intervals: bool,
        rows: &'c mut Shuffle<RowBatch>,
        claims: &'c mut Shuffle<ClaimBatch>,
    ) -> Self {
        let parts = 1usize << to.part_bits;
        let outgoing: Vec<RowBatch> = (0..to.batches())
            .map(|k| RowBatch::new((k / parts) as u32).in_part((k % parts) as u32))
            .collect();
        RowSender {
            to,
            politeness,
            with_intervals,
            memo: HostMemo::new(outgoing.len()),
            outgoing,
            claimed: (0..to.routes.peers() as u32)
                .map(|dest| ClaimBatch {
                    dest,
                    claims: Vec::new(),
                })
                .collect(),
            rows,
            claims,
            ahead: Lookahead::default(),
        }
    }

    /// Sends `row` on (now, or after a few more rows).
    pub fn push(&mut self, row: &PageRow<'_>) {
        if row.host_token.is_some_and(|t| self.memo.knows(t)) {
            // known by its token: no look at the memo's slots
            self.place(row, None);
            return;
        }
        let host = host_id(row.host.as_bytes());
        self.memo.prefetch(host);
        self.ahead.hold(row, host);
        if self.ahead.len() == LOOKAHEAD_ROWS {
            self.place_held();
        }
    }

    /// Sends every row held and every batch not yet sent.
    pub fn finish(mut self) {
        self.place_held();
        for batch in self.outgoing.into_iter().filter(|b| !b.is_empty()) {
            self.rows.send(batch.sealed());
        }
        for batch in self.claimed.into_iter().filter(|b| !b.claims.is_empty()) {
            self.claims.send(batch);
        }
    }

    fn place_held(&mut self) {
        let mut ahead = std::mem::take(&mut self.ahead);
        ahead.for_each(|row, host| self.place(row, Some(host)));
        ahead.clear();
        self.ahead = ahead;
    }

    /// Adds `row` to its host's batch (given its host's identity if known), and its URL claim
    /// where the row's key is not its URL's own.
    fn place(&mut self, row: &PageRow<'_>, host: Option<u128>) {
        let to = self.to;
        let outgoing = &mut self.outgoing;
        let (k, entry) = self.memo.entry_of(
            row.host_token,
            || {
                let host = host.unwrap_or_else(|| host_id(row.host.as_bytes()));
                (host, to.batch_of(host))
            },
            |k| outgoing[k].name_host(row.host.as_bytes()),
        );
        let dest = k >> to.part_bits;
        // only a row whose key is not its URL's own can list the URL under another host
        if !row.key_is_urls_own {
            let url = url_id(row.url.as_bytes());
            let judge = url_dedupe::judge_of(self.politeness, row.url, url, to.routes);
            let judge = &mut self.claimed[judge as usize];
            judge.claims.push(Claim::new(url, row.origin, dest as u32));
            if judge.claims.len() >= CLAIMS_PER_BATCH {
                let next = ClaimBatch {
                    dest: judge.dest,
                    claims: Vec::with_capacity(CLAIMS_PER_BATCH),
                };
                self.claims.send(std::mem::replace(judge, next));
            }
        }
        let batch = &mut self.outgoing[k];
        batch.push_under(row, entry);
        if self.with_intervals {
            batch.push_intervals(row.min_interval_s, row.max_interval_s);
        }
        if batch.text_bytes() >= BATCH_TEXT_BYTES {
            let next = batch.successor();
            self.rows.send(std::mem::replace(batch, next).sealed());
            self.memo.sent(k);
        }
    }
}

/// Rows held back, their text copied (the reader's batch they borrow from moves on).
#[derive(Default)]
struct Lookahead {
    /// Each held row's URL then host, back to back.
    text: String,
    rows: Vec<Held>,
}

/// A held row: everything of a [`PageRow`] but its text, and its host's identity.
struct Held {
    url_end: usize,
    host_end: usize,
    host: u128,
    key_is_urls_own: bool,
    importance: f64,
    change_rate: f64,
    complete_obs: bool,
    min_interval_s: f64,
    max_interval_s: f64,
    origin: Origin,
    host_token: Option<HostToken>,
}

impl Lookahead {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn hold(&mut self, row: &PageRow<'_>, host: u128) {
        self.text.push_str(row.url);
        let url_end = self.text.len();
        self.text.push_str(row.host);
        self.rows.push(Held {
            url_end,
            host_end: self.text.len(),
            host,
            key_is_urls_own: row.key_is_urls_own,
            importance: row.importance,
            change_rate: row.change_rate,
            complete_obs: row.complete_obs,
            min_interval_s: row.min_interval_s,
            max_interval_s: row.max_interval_s,
            origin: row.origin,
            host_token: row.host_token,
        });
    }

    /// Calls `f` on every held row, in the order held, with its host's identity.
    fn for_each(&self, mut f: impl FnMut(&PageRow<'_>, u128)) {
        let mut start = 0;
        for h in &self.rows {
            let row = PageRow {
                url: &self.text[start..h.url_end],
                host: &self.text[h.url_end..h.host_end],
                key_is_urls_own: h.key_is_urls_own,
                importance: h.importance,
                change_rate: h.change_rate,
                complete_obs: h.complete_obs,
                min_interval_s: h.min_interval_s,
                max_interval_s: h.max_interval_s,
                origin: h.origin,
                host_token: h.host_token,
            };
            f(&row, h.host);
            start = h.host_end;
        }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.rows.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_rows_come_back_as_they_were_read() {
        let rows: Vec<(String, String, u128)> = (0..40u32)
            .map(|i| {
                let host = format!("h{}.example", i % 7);
                (format!("https://{host}/p/{i}"), host, u128::from(i) << 70)
            })
            .collect();
        fn page((url, host, _): &(String, String, u128), i: u32) -> PageRow<'_> {
            PageRow {
                url,
                host,
                key_is_urls_own: i.is_multiple_of(3),
                importance: f64::from(i) + 0.5,
                change_rate: f64::from(i) / 8.0,
                complete_obs: i % 2 == 1,
                min_interval_s: if i.is_multiple_of(5) {
                    f64::NAN
                } else {
                    f64::from(i)
                },
                max_interval_s: f64::from(i) * 10.0,
                origin: Origin {
                    file: i % 4,
                    row: u64::from(i) * 3,
                },
                host_token: i.is_multiple_of(2).then_some(HostToken {
                    dictionary: 7,
                    index: i / 2,
                }),
            }
        }
        let mut ahead = Lookahead::default();
        for round in 0..2 {
            for (i, r) in rows.iter().enumerate() {
                ahead.hold(&page(r, i as u32), r.2);
            }
            let mut i = 0;
            ahead.for_each(|got, host| {
                let want = page(&rows[i], i as u32);
                assert_eq!((got.url, got.host, host), (want.url, want.host, rows[i].2));
                assert_eq!(got.key_is_urls_own, want.key_is_urls_own);
                assert_eq!(got.importance, want.importance);
                assert_eq!(got.change_rate, want.change_rate);
                assert_eq!(got.complete_obs, want.complete_obs);
                assert_eq!(got.min_interval_s.to_bits(), want.min_interval_s.to_bits());
                assert_eq!(got.max_interval_s, want.max_interval_s);
                assert_eq!(got.origin, want.origin);
                assert_eq!(got.host_token, want.host_token);
                i += 1;
            });
            assert_eq!(i, rows.len(), "round {round}");
            ahead.clear();
            assert_eq!(ahead.len(), 0);
        }
    }
}
