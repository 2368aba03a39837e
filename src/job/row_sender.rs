//! A reader's rows on their way to their host's worker: batches by worker and part of its hosts,
//! the memo of each host's entry in them, and the URL claims of rows that may repeat a URL.
//!
//! The reader hands rows over a chunk at a time ([`crate::io::pages::CHUNK_ROWS`]), borrowed from
//! its batch. The hosts the memo must look up by identity (plain host text, or a dictionary value
//! not met yet) are hashed for the whole chunk first and their memo slots asked for, so that each
//! is in cache when its row is placed. Without it, on 1M hosts read in random order (a host column
//! stored plain: its dictionary outgrew its page), the slot's cache miss was a sixth of the read
//! phase. A lookahead of the sender's own, before, had to copy each held row's text: the reader's
//! batch moved on under it.

use crate::io::pages::{PageRow, CHUNK_ROWS};
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
        }
    }

    /// Sends `rows` on: first the identity of every host the memo must look up by it, its slot
    /// asked for; then each row to its batch.
    pub fn push(&mut self, rows: &[PageRow<'_>]) {
        for chunk in rows.chunks(CHUNK_ROWS) {
            let mut hosts = [None; CHUNK_ROWS];
            for (row, host) in chunk.iter().zip(&mut hosts) {
                if !row.host_token.is_some_and(|t| self.memo.knows(t)) {
                    let id = host_id(row.host.as_bytes());
                    self.memo.prefetch(id);
                    *host = Some(id);
                }
            }
            for (row, &host) in chunk.iter().zip(&hosts) {
                self.place(row, host);
            }
        }
    }

    /// Sends every batch not yet sent.
    pub fn finish(self) {
        for batch in self.outgoing.into_iter().filter(|b| !b.is_empty()) {
            self.rows.send(batch.sealed());
        }
        for batch in self.claimed.into_iter().filter(|b| !b.claims.is_empty()) {
            self.claims.send(batch);
        }
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
