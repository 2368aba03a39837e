//! From the rows a worker received to its solver arena: grouped by host in a canonical order
//! (independent of arrival order and worker count), duplicates removed, caps joined.

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64_with_seed};

use super::flag_sort::{flag_pass, RADIX};
use crate::io::hosts::HostDelays;
use crate::io::pages::{Reason, Rejected};
use crate::io::rows::RowBatch;
use revisit_core::objective::{Objective, Response};
use revisit_core::solve::arena::Arena;
use revisit_core::units::{politeness_cap, Seconds};

/// Seed of the host key (crawler assignment, canonical order).
const HOST_KEY_SEED: u64 = 0x686f_7374;
/// Seed of URL hashes (canonical order inside a host).
const URL_KEY_SEED: u64 = 0x0075_726c;
/// Seed of the routing hash: independent of the host key, so the worker a host lands on says
/// nothing about its crawler (STACK.md gotcha 4).
const ROUTE_SEED: u64 = 0x0072_6f75_7465;

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
/// the output needs (URL text, observability, host names). Of the received batches only the text
/// is kept (the URLs point into it).
pub struct Arranged {
    pub arena: Arena,
    /// The importance column as read, when the solver's importance differs from it
    /// (`--value-per-change`); empty otherwise.
    pub input_importance: Vec<f64>,
    /// The text of the received batches, kept where it arrived: copying every URL into canonical
    /// order faulted in a fresh buffer the size of all URLs (the largest single cost of arranging),
    /// while readers of URLs (the writers, the timetable) copy them out once anyway.
    texts: Vec<Vec<u8>>,
    /// Where each page's URL is in `texts`, in arena order.
    url_at: Vec<UrlAt>,
    pub complete_obs: Vec<bool>,
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
        let at = self.url_at[i];
        let start = at.start as usize;
        &self.texts[at.batch as usize][start..start + at.len as usize]
    }

    /// Asks the CPU to fetch page `i`'s URL into cache ahead of a [`Arranged::url_bytes`]: URLs in
    /// arena order are scattered over the received text, and a pass copying them out waits on one
    /// cache miss per URL unless it looks a few pages ahead.
    #[inline]
    pub fn prefetch_url(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(at) = self.url_at.get(i) {
            if let Some(text) = self.texts.get(at.batch as usize) {
                let p = text.as_ptr().wrapping_add(at.start as usize);
                // SAFETY: a prefetch is a hint; it never faults nor reads into the program.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        p as *const i8,
                    )
                }
            }
        }
    }
}

/// How many pages ahead a pass over URLs in arena order prefetches (enough to cover a miss to
/// memory at a few nanoseconds per URL copied).
pub const URL_PREFETCH_DISTANCE: usize = 16;

/// A URL's place in the received text: batch, first byte, length.
#[derive(Clone, Copy, Debug, Default)]
struct UrlAt {
    batch: u32,
    start: u32,
    len: u32,
}

/// A row's identity and place in canonical order, in 32 bytes: the host's 128-bit key as (high,
/// low) halves, since a u128 field would align the record to 48; the top 96 bits of the URL's
/// 128-bit key (two URLs of one host agreeing there: probability below 10^-11 even for 10^9
/// URLs, and the order is that of the full keys whenever they differ); `row` numbers the rows of
/// all batches in turn. A smaller key is less to fault in and less for the sort to move.
#[derive(Clone, Copy, Debug, Default)]
pub struct RowKey {
    pub host: [u64; 2],
    pub url_high: u64,
    pub url_low: u32,
    pub row: u32,
}

impl RowKey {
    /// The URL's 96-bit identity (high, low), in the order of the full key.
    #[inline]
    fn url(&self) -> (u64, u32) {
        (self.url_high, self.url_low)
    }

    /// The host's 128-bit identity.
    #[inline]
    pub fn host_id(&self) -> u128 {
        join(self.host)
    }
}

#[inline]
fn split(x: u128) -> [u64; 2] {
    [(x >> 64) as u64, x as u64]
}

#[inline]
fn join(x: [u64; 2]) -> u128 {
    ((x[0] as u128) << 64) | x[1] as u128
}

/// The first row number of each batch (and the total at the end), for [`RowKey::row`].
pub fn row_starts(batches: &[RowBatch]) -> Vec<u32> {
    let mut starts = Vec::with_capacity(batches.len() + 1);
    let mut n = 0u32;
    starts.push(0);
    for b in batches {
        n += b.len() as u32;
        starts.push(n);
    }
    starts
}

/// (batch, row in batch) of row number `row`.
#[inline]
fn locate(starts: &[u32], row: u32) -> (usize, usize) {
    let b = starts.partition_point(|&s| s <= row) - 1;
    (b, (row - starts[b]) as usize)
}

/// The rows of `batches` in canonical order: by 128-bit host key, then 128-bit URL key, then origin.
/// The order depends only on the rows, not on which batch holds them.
///
/// Hosts and URLs are identified by their 128-bit xxh3 hashes: comparing bytes instead cost 13% of
/// a run in cache misses (sorted rows are scattered over the batches), and a collision among 10^9
/// distinct values has probability below 10^-20.
pub fn canonical_order(batches: &[RowBatch], starts: &[u32]) -> Vec<RowKey> {
    let mut keys: Vec<RowKey> = Vec::with_capacity(batches.iter().map(RowBatch::len).sum());
    for (b, batch) in batches.iter().enumerate() {
        for r in 0..batch.len() {
            let url_key = xxh3_128_with_seed(batch.url_bytes(r), URL_KEY_SEED);
            keys.push(RowKey {
                host: split(host_key128(batch.host_bytes(r))),
                url_high: (url_key >> 64) as u64,
                url_low: (url_key >> 32) as u32,
                row: starts[b] + r as u32,
            });
        }
    }
    // Equal keys are duplicates: the first by origin (file, then row) sorts first and is kept.
    let origin = |k: &RowKey| {
        let (b, r) = locate(starts, k.row);
        batches[b].origin[r]
    };
    let order = |a: &RowKey, b: &RowKey| {
        a.host
            .cmp(&b.host)
            .then(a.url().cmp(&b.url()))
            .then_with(|| origin(a).cmp(&origin(b)))
    };
    // Two in-place radix passes on the top 16 bits of the host key, then small sorts in cache.
    let top = flag_pass(&mut keys, |k| (k.host[0] >> 56) as usize);
    for d in 0..RADIX {
        let bucket = &mut keys[top[d]..top[d + 1]];
        let inner = flag_pass(bucket, |k| ((k.host[0] >> 48) & 0xff) as usize);
        for e in 0..RADIX {
            bucket[inner[e]..inner[e + 1]].sort_unstable_by(order);
        }
    }
    keys
}

/// The 128-bit identity of a host (its low 64 bits are [`host_key`]).
#[inline]
fn host_key128(host: &[u8]) -> u128 {
    xxh3_128_with_seed(host, HOST_KEY_SEED)
}

/// The numbers of a row on their way to the arranged columns: importance, change rate, complete
/// observation, and padding to the size of a key, whose buffer records reuse.
type Record = (f64, f64, bool, u64);

const EMPTY_RECORD: Record = (0.0, 0.0, false, 0);

// A record reuses a key's place (see `arrange`).
const _: () = assert!(
    std::mem::size_of::<Record>() == std::mem::size_of::<RowKey>()
        && std::mem::align_of::<Record>() == std::mem::align_of::<RowKey>()
);

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
    let starts = row_starts(&batches);
    let keys = canonical_order(&batches, &starts);
    // Where each row goes in the arranged store, by row number (u32::MAX: a dropped duplicate).
    let mut dest: Vec<u32> = vec![u32::MAX; keys.len()];
    let mut arena = Arena::new();
    let (mut host_names, mut host_keys, mut host_ids) = (Vec::new(), Vec::new(), Vec::new());
    let mut host_delays = Vec::new();
    let mut duplicates = Vec::new();
    let mut n = 0usize;
    let mut i = 0;
    while i < keys.len() {
        let host = keys[i].host;
        let (fb, fr) = locate(&starts, keys[i].row);
        let name = batches[fb].host(fr).to_owned();
        let delay = delays.get(&name).copied().unwrap_or(default_delay);
        let cap = if delay.0 > 0.0 {
            politeness_cap(delay).0
        } else {
            f64::INFINITY
        };
        let mut pages = 0;
        let mut previous_url: Option<(u64, u32)> = None;
        while i < keys.len() && keys[i].host == host {
            let k = keys[i];
            if previous_url == Some(k.url()) {
                let (b, r) = locate(&starts, k.row);
                let batch = &batches[b];
                duplicates.push(Rejected {
                    origin: batch.origin[r],
                    reason: Reason::DuplicateUrl,
                    url: Some(batch.url(r).to_owned()),
                    host: Some(name.clone()),
                    importance: Some(batch.importance[r]),
                    change_rate: Some(batch.change_rate[r]),
                });
            } else {
                dest[k.row as usize] = n as u32;
                n += 1;
                previous_url = Some(k.url());
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
        let id = join(host);
        host_keys.push(id as u64);
        host_ids.push(id);
        host_delays.push(delay);
    }
    let mut url_at = vec![UrlAt::default(); n];
    let mut texts = Vec::with_capacity(batches.len());
    // Scattered writes miss the cache once per row and column, so the numbers travel together in
    // one record per row (one miss) and are split into columns afterwards, in order. The records
    // take over the keys' buffer (same size and alignment: collect works in place), whose pages
    // are resident already: a fresh array faulted in ~50,000 pages per worker on the 10M bench.
    let mut records: Vec<Record> = keys.into_iter().take(n).map(|_| EMPTY_RECORD).collect();
    for (b, batch) in batches.iter_mut().enumerate() {
        let mine = &dest[starts[b] as usize..starts[b + 1] as usize];
        for (r, &d) in mine.iter().enumerate() {
            if d == u32::MAX {
                continue;
            }
            let d = d as usize;
            let (start, end) = batch.url_range(r);
            url_at[d] = UrlAt {
                batch: b as u32,
                start: start as u32,
                len: (end - start) as u32,
            };
            records[d] = (
                batch.importance[r],
                batch.change_rate[r],
                batch.complete_obs[r],
                0,
            );
        }
        // keep the text, free the rest of this batch now
        texts.push(std::mem::take(&mut batch.text));
        *batch = RowBatch::default();
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
    let complete_obs: Vec<bool> = records.iter().map(|r| r.2).collect();
    let response: Vec<Response> = complete_obs
        .iter()
        .map(|&c| Response::of(reading.objective, c))
        .collect();
    drop(records);
    drop(dest);
    arena.importance = importance;
    arena.change_rate = change_rate;
    arena.response = response;
    Arranged {
        input_importance,
        arena,
        texts,
        url_at,
        complete_obs,
        host_names,
        host_keys,
        host_ids,
        host_delays,
        duplicates,
    }
}
