//! From the rows a worker received to its solver arena: grouped by host in a canonical order
//! (independent of arrival order and worker count), duplicates removed, caps joined.

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64_with_seed};

use crate::io::hosts::HostDelays;
use crate::io::pages::{Reason, Rejected};
use crate::io::rows::RowBatch;
use crate::objective::{Objective, Response};
use crate::solve::arena::Arena;
use crate::units::{politeness_cap, Seconds};

/// Seed of the host key (crawler assignment, canonical order).
const HOST_KEY_SEED: u64 = 0x686f_7374;
/// Seed of URL hashes (canonical order inside a host).
const URL_KEY_SEED: u64 = 0x7572_6c;
/// Seed of the routing hash: independent of the host key, so the worker a host lands on says
/// nothing about its crawler (STACK.md gotcha 4).
const ROUTE_SEED: u64 = 0x726f_7574_65;

/// The 64-bit key of a host (stable across runs, machines and worker counts), for crawler
/// assignment: the low bits of its 128-bit identity.
#[inline]
pub fn host_key(host: &[u8]) -> u64 {
    host_key128(host) as u64
}

/// The worker a host's pages go to.
#[inline]
pub fn route(host: &[u8], peers: usize) -> u32 {
    (xxh3_64_with_seed(host, ROUTE_SEED) % peers as u64) as u32
}

/// A worker's pages, grouped by host, ready to solve.
pub struct Arranged {
    pub batches: Vec<RowBatch>,
    /// (batch, row) of each arena page, in arena order.
    pub pages: Vec<(u32, u32)>,
    /// Key of each arena host (for crawler assignment).
    pub host_keys: Vec<u64>,
    /// 128-bit identity of each arena host (for the canonical order of output rows).
    pub host_ids: Vec<u128>,
    pub arena: Arena,
    /// Rows dropped as duplicates of an earlier row (first by file, then row).
    pub duplicates: Vec<Rejected>,
}

impl Arranged {
    /// Host name of arena host `h`.
    pub fn host_name(&self, h: usize) -> &str {
        let (b, r) = self.pages[self.arena.offsets[h]];
        self.batches[b as usize].host(r as usize)
    }
}

/// A row's identity and place in canonical order: (host key, URL key, batch, row).
pub type RowKey = (u128, u128, u32, u32);

/// The rows of `batches` in canonical order: by 128-bit host key, then 128-bit URL key, then origin.
/// The order depends only on the rows, not on which batch holds them.
///
/// Hosts and URLs are identified by their 128-bit xxh3 hashes: comparing bytes instead cost 13% of
/// a run in cache misses (sorted rows are scattered over the batches), and a collision among 10^9
/// distinct values has probability below 10^-20.
pub fn canonical_order(batches: &[RowBatch]) -> Vec<RowKey> {
    let mut keys: Vec<RowKey> = Vec::with_capacity(batches.iter().map(RowBatch::len).sum());
    for (b, batch) in batches.iter().enumerate() {
        for r in 0..batch.len() {
            keys.push((host_key128(batch.host_bytes(r)), xxh3_128_with_seed(batch.url_bytes(r), URL_KEY_SEED), b as u32, r as u32));
        }
    }
    // Equal keys are duplicates: the first by origin (file, then row) sorts first and is kept.
    keys.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then_with(|| batches[a.2 as usize].origin[a.3 as usize].cmp(&batches[b.2 as usize].origin[b.3 as usize]))
    });
    keys
}

/// The 128-bit identity of a host (its low 64 bits are [`host_key`]).
#[inline]
fn host_key128(host: &[u8]) -> u128 {
    xxh3_128_with_seed(host, HOST_KEY_SEED)
}

/// Arranges `batches` for `objective`, with per-host delays and the default delay.
pub fn arrange(batches: Vec<RowBatch>, delays: &HostDelays, default_delay: Seconds, objective: Objective) -> Arranged {
    let keys = canonical_order(&batches);
    let row = |k: &RowKey| (&batches[k.2 as usize], k.3 as usize);

    let mut arena = Arena::new();
    let mut pages = Vec::with_capacity(keys.len());
    let mut host_keys = Vec::new();
    let mut host_ids = Vec::new();
    let mut duplicates = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let host = keys[i].0;
        let (b0, r0) = row(&keys[i]);
        let delay = std::str::from_utf8(b0.host_bytes(r0)).ok().and_then(|h| delays.get(h)).copied().unwrap_or(default_delay);
        let cap = if delay.0 > 0.0 { politeness_cap(delay).0 } else { f64::INFINITY };
        let mut members = Vec::new();
        let mut previous_url: Option<u128> = None;
        while i < keys.len() && keys[i].0 == host {
            let (b, r) = row(&keys[i]);
            if previous_url == Some(keys[i].1) {
                duplicates.push(Rejected {
                    origin: b.origin[r],
                    reason: Reason::DuplicateUrl,
                    url: Some(b.url(r).to_owned()),
                    host: Some(b.host(r).to_owned()),
                    importance: Some(b.importance[r]),
                    change_rate: Some(b.change_rate[r]),
                });
            } else {
                members.push((b.importance[r], b.change_rate[r], Response::of(objective, b.complete_obs[r])));
                pages.push((keys[i].2, keys[i].3));
                previous_url = Some(keys[i].1);
            }
            i += 1;
        }
        arena.push_host(cap, members);
        host_keys.push(host as u64);
        host_ids.push(host);
    }
    Arranged { batches, pages, host_keys, host_ids, arena, duplicates }
}
