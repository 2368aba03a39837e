//! From the rows a worker received to its solver arena: grouped by host in a canonical order
//! (independent of arrival order and worker count), duplicates removed, caps joined.

use xxhash_rust::xxh3::xxh3_64_with_seed;

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

/// The key of a host (stable across runs, machines and worker counts).
#[inline]
pub fn host_key(host: &[u8]) -> u64 {
    xxh3_64_with_seed(host, HOST_KEY_SEED)
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
    /// Key of each arena host.
    pub host_keys: Vec<u64>,
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

/// How the solver reads the rows: the objective, and whether `importance` is a value per change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    pub objective: Objective,
    /// The importance column is Frontera's w, the value of a new version: mu = w x change_rate.
    pub value_per_change: bool,
}

impl Reading {
    /// The solver's importance mu of a row.
    #[inline]
    pub fn importance(self, importance: f64, change_rate: f64) -> f64 {
        if self.value_per_change {
            importance * change_rate
        } else {
            importance
        }
    }
}

/// Arranges `batches` for `reading`, with per-host delays and the default delay.
pub fn arrange(
    batches: Vec<RowBatch>,
    delays: &HostDelays,
    default_delay: Seconds,
    reading: Reading,
) -> Arranged {
    // (host key, url key, batch, row): sorted numerically, bytes compared only on equal keys.
    let mut keys: Vec<(u64, u64, u32, u32)> =
        Vec::with_capacity(batches.iter().map(RowBatch::len).sum());
    for (b, batch) in batches.iter().enumerate() {
        for r in 0..batch.len() {
            keys.push((
                host_key(batch.host_bytes(r)),
                xxh3_64_with_seed(batch.url_bytes(r), URL_KEY_SEED),
                b as u32,
                r as u32,
            ));
        }
    }
    let row = |k: &(u64, u64, u32, u32)| (&batches[k.2 as usize], k.3 as usize);
    let full_order = |a: &(u64, u64, u32, u32), b: &(u64, u64, u32, u32)| {
        let ((ba, ra), (bb, rb)) = (row(a), row(b));
        ba.host_bytes(ra)
            .cmp(bb.host_bytes(rb))
            .then(a.1.cmp(&b.1))
            .then_with(|| ba.url_bytes(ra).cmp(bb.url_bytes(rb)))
            .then(ba.origin[ra].cmp(&bb.origin[rb]))
    };
    keys.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then_with(|| full_order(a, b))
    });
    // Two hosts whose keys collide interleave: re-sort such runs by host name (rare; keeps it exact).
    let mut start = 0;
    while start < keys.len() {
        let mut end = start + 1;
        let mut mixed = false;
        while end < keys.len() && keys[end].0 == keys[start].0 {
            let ((b0, r0), (b1, r1)) = (row(&keys[start]), row(&keys[end]));
            mixed |= b0.host_bytes(r0) != b1.host_bytes(r1);
            end += 1;
        }
        if mixed {
            keys[start..end].sort_by(full_order);
        }
        start = end;
    }

    let mut arena = Arena::new();
    let mut pages = Vec::with_capacity(keys.len());
    let mut host_keys = Vec::new();
    let mut duplicates = Vec::new();
    let mut i = 0;
    while i < keys.len() {
        let (b0, r0) = row(&keys[i]);
        let host = b0.host_bytes(r0);
        let delay = std::str::from_utf8(host)
            .ok()
            .and_then(|h| delays.get(h))
            .copied()
            .unwrap_or(default_delay);
        let cap = if delay.0 > 0.0 {
            politeness_cap(delay).0
        } else {
            f64::INFINITY
        };
        let first_page = pages.len();
        let mut members = Vec::new();
        let mut previous_url: Option<&[u8]> = None;
        while i < keys.len() {
            let (b, r) = row(&keys[i]);
            if b.host_bytes(r) != host {
                break;
            }
            let url = b.url_bytes(r);
            if previous_url == Some(url) {
                duplicates.push(Rejected {
                    origin: b.origin[r],
                    reason: Reason::DuplicateUrl,
                    url: Some(b.url(r).to_owned()),
                    host: Some(b.host(r).to_owned()),
                    importance: Some(b.importance[r]),
                    change_rate: Some(b.change_rate[r]),
                });
            } else {
                let mu = reading.importance(b.importance[r], b.change_rate[r]);
                members.push((
                    mu,
                    b.change_rate[r],
                    Response::of(reading.objective, b.complete_obs[r]),
                ));
                pages.push((keys[i].2, keys[i].3));
                previous_url = Some(url);
            }
            i += 1;
        }
        debug_assert!(pages.len() > first_page);
        arena.push_host(cap, members);
        host_keys.push(keys[i - 1].0);
    }
    Arranged {
        batches,
        pages,
        host_keys,
        arena,
        duplicates,
    }
}
