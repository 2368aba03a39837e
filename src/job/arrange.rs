//! From the rows a worker received to its solver arena: grouped by host in a canonical order
//! (independent of arrival order and worker count), duplicates removed, caps joined.

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64_with_seed};

use crate::io::hosts::HostDelays;
use crate::io::pages::{Reason, Rejected};
use crate::io::rows::{Origin, RowBatch};
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

/// A stable 64-bit key of a URL (the low bits of the identity that orders a host's pages): the
/// same on every worker count, so the integer visits split their ties by it.
#[inline]
pub fn url_key(url: &[u8]) -> u64 {
    xxh3_128_with_seed(url, URL_KEY_SEED) as u64
}

/// The worker a host's pages go to.
#[inline]
pub fn route(host: &[u8], peers: usize) -> u32 {
    (xxh3_64_with_seed(host, ROUTE_SEED) % peers as u64) as u32
}

/// A worker's pages in canonical order, grouped by host, in columns: the solver's arena plus what
/// the output needs (URL text, observability, origin, host names). The received batches are gone.
pub struct Arranged {
    pub arena: Arena,
    /// The importance column as read, when the solver's importance differs from it
    /// (`--value-per-change`); empty otherwise.
    pub input_importance: Vec<f64>,
    /// URL bytes of every page, back to back, in arena order.
    pub url_text: Vec<u8>,
    /// End of each page's URL in `url_text`.
    pub url_end: Vec<u64>,
    pub complete_obs: Vec<bool>,
    pub origin: Vec<Origin>,
    /// Name of each arena host.
    pub host_names: Vec<String>,
    /// Key of each arena host (for crawler assignment).
    pub host_keys: Vec<u64>,
    /// 128-bit identity of each arena host (for the canonical order of output rows).
    pub host_ids: Vec<u128>,
    /// Politeness delay of each arena host (from the hosts table, else the default).
    pub host_delays: Vec<Seconds>,
    /// Rows dropped as duplicates of an earlier row (first by file, then row).
    pub duplicates: Vec<Rejected>,
}

impl Arranged {
    /// URL bytes of page `i`.
    #[inline]
    pub fn url_bytes(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.url_end[i - 1] as usize
        };
        &self.url_text[start..self.url_end[i] as usize]
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
            keys.push((
                host_key128(batch.host_bytes(r)),
                xxh3_128_with_seed(batch.url_bytes(r), URL_KEY_SEED),
                b as u32,
                r as u32,
            ));
        }
    }
    // Equal keys are duplicates: the first by origin (file, then row) sorts first and is kept.
    let order = |a: &RowKey, b: &RowKey| {
        a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then_with(|| {
            batches[a.2 as usize].origin[a.3 as usize]
                .cmp(&batches[b.2 as usize].origin[b.3 as usize])
        })
    };
    // One counting pass on the top bits of the host key, then small sorts that fit in cache: about
    // twice as fast as one comparison sort of millions of 40-byte keys.
    let mut sorted: Vec<RowKey> = vec![(0, 0, 0, 0); keys.len()];
    let mut start = vec![0usize; BUCKETS + 1];
    for k in &keys {
        start[bucket(k) + 1] += 1;
    }
    for b in 0..BUCKETS {
        start[b + 1] += start[b];
    }
    let mut next = start.clone();
    for k in keys {
        let b = bucket(&k);
        sorted[next[b]] = k;
        next[b] += 1;
    }
    for b in 0..BUCKETS {
        sorted[start[b]..start[b + 1]].sort_unstable_by(order);
    }
    sorted
}

/// Buckets of the counting pass of [`canonical_order`] (by the top 16 bits of the host key).
const BUCKETS: usize = 1 << 16;

#[inline]
fn bucket(k: &RowKey) -> usize {
    (k.0 >> 112) as usize
}

/// The 128-bit identity of a host (its low 64 bits are [`host_key`]).
#[inline]
fn host_key128(host: &[u8]) -> u128 {
    xxh3_128_with_seed(host, HOST_KEY_SEED)
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
///
/// Rows are scattered into their canonical positions batch by batch, and each batch is freed once
/// copied: the sorted store is written while the unsorted one shrinks, so memory stays near one copy,
/// and every later pass (solve, output) reads the store in order instead of gathering rows from
/// all over the received batches.
pub fn arrange(
    mut batches: Vec<RowBatch>,
    delays: &HostDelays,
    default_delay: Seconds,
    reading: Reading,
) -> Arranged {
    let keys = canonical_order(&batches);
    let mut dest: Vec<Vec<u32>> = batches.iter().map(|b| vec![u32::MAX; b.len()]).collect();
    let mut arena = Arena::new();
    let (mut host_names, mut host_keys, mut host_ids) = (Vec::new(), Vec::new(), Vec::new());
    let mut host_delays = Vec::new();
    let mut duplicates = Vec::new();
    let mut url_end: Vec<u64> = Vec::with_capacity(keys.len());
    let mut text_len = 0u64;
    let mut i = 0;
    while i < keys.len() {
        let host = keys[i].0;
        let first = &batches[keys[i].2 as usize];
        let name = first.host(keys[i].3 as usize).to_owned();
        let delay = delays.get(&name).copied().unwrap_or(default_delay);
        let cap = if delay.0 > 0.0 {
            politeness_cap(delay).0
        } else {
            f64::INFINITY
        };
        let mut pages = 0;
        let mut previous_url: Option<u128> = None;
        while i < keys.len() && keys[i].0 == host {
            let (b, r) = (keys[i].2 as usize, keys[i].3 as usize);
            let batch = &batches[b];
            if previous_url == Some(keys[i].1) {
                duplicates.push(Rejected {
                    origin: batch.origin[r],
                    reason: Reason::DuplicateUrl,
                    url: Some(batch.url(r).to_owned()),
                    host: Some(name.clone()),
                    importance: Some(batch.importance[r]),
                    change_rate: Some(batch.change_rate[r]),
                });
            } else {
                dest[b][r] = url_end.len() as u32;
                text_len += batch.url_bytes(r).len() as u64;
                url_end.push(text_len);
                previous_url = Some(keys[i].1);
                pages += 1;
            }
            i += 1;
        }
        // the host's pages are filled in below; only the boundary and the cap are known here
        arena
            .offsets
            .push(arena.offsets.last().copied().unwrap_or(0) + pages);
        arena.cap.push(cap);
        host_names.push(name);
        host_keys.push(host as u64);
        host_ids.push(host);
        host_delays.push(delay);
    }
    drop(keys);
    let n = url_end.len();
    // Zeroed allocations come from the OS untouched: pages become resident as they are written.
    let mut url_text = vec![0u8; text_len as usize];
    // Scattered writes miss the cache once per row and column, so the numbers travel together in
    // one record per row (one miss) and are split into columns afterwards, in order.
    let mut records = vec![(0.0f64, 0.0f64, Origin { file: 0, row: 0 }, false); n];
    for (b, batch) in batches.iter_mut().enumerate() {
        for (r, &d) in dest[b].iter().enumerate() {
            if d == u32::MAX {
                continue;
            }
            let d = d as usize;
            let start = if d == 0 { 0 } else { url_end[d - 1] as usize };
            url_text[start..url_end[d] as usize].copy_from_slice(batch.url_bytes(r));
            records[d] = (
                batch.importance[r],
                batch.change_rate[r],
                batch.origin[r],
                batch.complete_obs[r],
            );
        }
        *batch = RowBatch::default(); // free this batch now
        dest[b] = Vec::new();
    }
    let importance: Vec<f64> = records
        .iter()
        .map(|r| reading.importance(r.0, r.1))
        .collect();
    // the input's own importance, for the output, where the solver reads it differently
    let input_importance: Vec<f64> = if reading.value_per_change {
        records.iter().map(|r| r.0).collect()
    } else {
        Vec::new()
    };
    let change_rate: Vec<f64> = records.iter().map(|r| r.1).collect();
    let origin: Vec<Origin> = records.iter().map(|r| r.2).collect();
    let complete_obs: Vec<bool> = records.iter().map(|r| r.3).collect();
    let response: Vec<Response> = complete_obs
        .iter()
        .map(|&c| Response::of(reading.objective, c))
        .collect();
    drop(records);
    arena.importance = importance;
    arena.change_rate = change_rate;
    arena.response = response;
    Arranged {
        input_importance,
        arena,
        url_text,
        url_end,
        complete_obs,
        origin,
        host_names,
        host_keys,
        host_ids,
        host_delays,
        duplicates,
    }
}
