//! From the rows a worker received to its solver arena: grouped by host in a canonical order
//! (independent of arrival order and worker count), duplicates removed, caps joined.

use super::flag_sort::{flag_pass, RADIX};
use super::heap;
use super::keys::host_id;
use super::prefetch::prefetch_at;
use super::url_text::{Form, Rests, Url};
use super::wire::rows::RowBatch;
use crate::io::hosts::HostDelays;
use crate::io::pages::{Reason, Rejected};
use crate::plan::PagesPlan;
use revisit_core::solve::pages::{Pages, PagesError};
use revisit_core::units::{politeness_cap, Seconds, SECONDS_PER_DAY};

/// A worker's pages in canonical order, grouped by host, in columns: the solver's pages plus what
/// the output needs (URLs, host names). URLs are held without the scheme and host their host
/// names ([`Rests`]).
pub struct Arranged {
    pub pages: Pages,
    /// The importance column as read, when the solver's importance differs from it
    /// (`--value-per-change`); empty otherwise.
    pub input_importance: Vec<f64>,
    /// Each page's URL past its scheme and host, in page order.
    rests: Rests,
    /// Name of each host, back to back (one allocation, not one per host).
    host_text: String,
    /// End of each host's name in `host_text`.
    host_end: Vec<usize>,
    /// Key of each host (for crawler assignment).
    pub host_keys: Vec<u64>,
    /// 128-bit identity of each host (for the canonical order of output rows).
    pub host_ids: Vec<u128>,
    /// Politeness delay of each host (from the hosts table, else the default).
    pub host_delays: Vec<Seconds>,
    /// Rows dropped as duplicates of an earlier row (first by file, then row).
    pub duplicates: Vec<Rejected>,
}

impl Arranged {
    /// Name of host `h`.
    #[inline]
    pub fn host_name(&self, h: usize) -> &str {
        let start = if h == 0 { 0 } else { self.host_end[h - 1] };
        &self.host_text[start..self.host_end[h]]
    }

    /// Asks the CPU to fetch the bounds of host `h`'s name (a hint, for passes over hosts in
    /// another order: [`Arranged::prefetch_host_name`] reads them).
    #[inline]
    pub fn prefetch_host_end(&self, h: usize) {
        prefetch_at(self.host_end.as_ptr().wrapping_add(h.saturating_sub(1)));
    }

    /// Asks the CPU to fetch host `h`'s name (a hint; reads its bounds, fetched a step earlier
    /// with [`Arranged::prefetch_host_end`]).
    #[inline]
    pub fn prefetch_host_name(&self, h: usize) {
        let start = if h == 0 { 0 } else { self.host_end[h - 1] };
        prefetch_at(self.host_text.as_ptr().wrapping_add(start));
    }

    /// URL of page `i`, of host `h`.
    #[inline]
    pub fn url(&self, h: usize, i: usize) -> Url<'_> {
        debug_assert!(self.pages.host_pages(h).contains(&i));
        let (form, rest) = self.rests.get(i);
        Url::new(form, self.host_name(h).as_bytes(), rest)
    }

    /// Every page's URL, in page order.
    pub fn urls(&self) -> impl Iterator<Item = Url<'_>> + '_ {
        (0..self.pages.hosts())
            .flat_map(move |h| self.pages.host_pages(h).map(move |i| self.url(h, i)))
    }

    /// Every page as (URL key, page index), sorted by key: the side of a merge-join with a table
    /// keyed by URL (a binary search per page missed the cache at every step of 10M-row tables).
    pub fn pages_by_url_key(&self) -> Vec<(u128, u32)> {
        let mut pages: Vec<(u128, u32)> = self
            .urls()
            .enumerate()
            .map(|(i, url)| (url.id(), i as u32))
            .collect();
        pages.sort_unstable();
        pages
    }
}

/// A URL's rest in the received text: batch, first byte, length.
#[derive(Clone, Copy, Debug, Default)]
struct RestAt {
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
    // sorted, then scattered into at random (as the records that take over this buffer)
    heap::huge_pages(&keys);
    let mut hosts: Vec<[u64; 2]> = Vec::new();
    for (b, batch) in batches.iter().enumerate() {
        // each of the batch's hosts hashed once
        hosts.clear();
        hosts.extend((0..batch.hosts()).map(|e| split(host_id(batch.entry_bytes(e)))));
        for r in 0..batch.len() {
            let url_key = batch.url(r).id();
            keys.push(RowKey {
                host: hosts[batch.host_entry_of(r)],
                url_high: (url_key >> 64) as u64,
                url_low: (url_key >> 32) as u32,
                row: starts[b] + r as u32,
            });
        }
    }
    // Equal keys are duplicates: the first by origin (file, then row) sorts first and is kept.
    let origin = |k: &RowKey| {
        let (b, r) = locate(starts, k.row);
        batches[b].packed_origin(r)
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

/// A row on its way to the arranged columns: its numbers and its URL's rest in the text.
#[derive(Clone, Copy, Default)]
struct Record {
    importance: f64,
    change_rate: f64,
    rest_at: RestAt,
    form: Form,
    complete_obs: bool,
}

// A record reuses a key's place (see `arrange`).
const _: () = assert!(
    std::mem::size_of::<Record>() == std::mem::size_of::<RowKey>()
        && std::mem::align_of::<Record>() == std::mem::align_of::<RowKey>()
);

/// Arranges `batches` as `plan` reads them, with per-host delays (the plan's default for the hosts
/// the table does not list), without the rows in `lost` (packed origins: their URL came earlier
/// under another host: they are rejected as duplicates).
///
/// Rows are scattered into their canonical positions batch by batch, and each batch is freed once
/// copied: the sorted store is written while the unsorted one shrinks, so memory stays near one copy,
/// and every later pass (solve, output) reads the store in order instead of gathering rows from
/// all over the received batches.
pub fn arrange(
    mut batches: Vec<RowBatch>,
    delays: &HostDelays,
    plan: &PagesPlan,
    lost: &std::collections::HashSet<u64>,
) -> Result<Arranged, PagesError> {
    let starts = row_starts(&batches);
    let keys = canonical_order(&batches, &starts);
    // by row number: whether the row lost its URL to another host's row (usually none)
    let lost_rows: Vec<bool> = if lost.is_empty() {
        Vec::new()
    } else {
        batches
            .iter()
            .flat_map(|b| b.packed_origins().map(|o| lost.contains(&o)))
            .collect()
    };
    let is_lost = |row: u32| lost_rows.get(row as usize).copied().unwrap_or(false);
    // Where each row goes in the arranged store, by row number (u32::MAX: a dropped duplicate).
    let mut dest: Vec<u32> = Vec::with_capacity(keys.len());
    heap::huge_pages(&dest);
    dest.resize(keys.len(), u32::MAX);
    let mut offsets = vec![0usize];
    let mut caps = Vec::new();
    // where each kept host's first row is (batch, row), for its name
    let mut named_by = Vec::new();
    let (mut host_keys, mut host_ids) = (Vec::new(), Vec::new());
    let mut host_delays = Vec::new();
    let mut duplicates = Vec::new();
    // hosts come in increasing identity, as the table's delays are sorted: a merge
    let mut delays = delays.in_order();
    let mut n = 0usize;
    let mut i = 0;
    while i < keys.len() {
        let host = keys[i].host;
        let first = locate(&starts, keys[i].row);
        let delay = delays.get(join(host)).unwrap_or(plan.default_delay);
        let cap = if delay.0 > 0.0 {
            politeness_cap(delay).0
        } else {
            f64::INFINITY
        };
        let mut pages = 0;
        let mut previous_url: Option<(u64, u32)> = None;
        while i < keys.len() && keys[i].host == host {
            let k = keys[i];
            if previous_url == Some(k.url()) || is_lost(k.row) {
                let (b, r) = locate(&starts, k.row);
                let batch = &batches[b];
                duplicates.push(Rejected {
                    origin: batch.origin(r),
                    reason: Reason::DuplicateUrl,
                    url: Some(batch.url(r).to_string_lossy()),
                    host: Some(batch.host(r).to_owned()),
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
        if pages == 0 {
            continue; // every row of this host repeats a URL of another host
        }
        // the host's pages are filled in below; only the boundary and the cap are known here
        offsets.push(offsets.last().copied().unwrap_or(0) + pages);
        caps.push(cap);
        named_by.push(first);
        let id = join(host);
        host_keys.push(id as u64);
        host_ids.push(id);
        host_delays.push(delay);
    }
    let (host_text, host_end) = host_names(&batches, &named_by);
    drop(named_by);
    let mut texts = Vec::with_capacity(batches.len());
    // Scattered writes miss the cache once per row and column, so a row's numbers and its URL's
    // place travel together in one record (one miss) and are split into columns afterwards, in
    // order, once the batches are freed. The records take over the keys' buffer (same size and
    // alignment: collect works in place), whose pages are resident already: a fresh array faulted
    // in ~50,000 pages per worker on the 10M bench.
    let mut records: Vec<Record> = keys
        .into_iter()
        .take(n)
        .map(|_| Record::default())
        .collect();
    // per-URL refetch bounds, as rates per day (NaN: none), when the input has them
    let with_intervals = batches.iter().any(RowBatch::has_intervals);
    let (mut min_rate, mut max_rate) = if with_intervals {
        (vec![f64::NAN; n], vec![f64::NAN; n])
    } else {
        (Vec::new(), Vec::new())
    };
    for (b, batch) in batches.iter_mut().enumerate() {
        let mine = &dest[starts[b] as usize..starts[b + 1] as usize];
        for (r, &d) in mine.iter().enumerate() {
            if d == u32::MAX {
                continue;
            }
            let d = d as usize;
            let (form, start, end) = batch.rest_at(r);
            records[d] = Record {
                importance: batch.importance[r],
                change_rate: batch.change_rate[r],
                rest_at: RestAt {
                    batch: b as u32,
                    start: start as u32,
                    len: (end - start) as u32,
                },
                form,
                complete_obs: batch.complete_obs[r],
            };
            if batch.has_intervals() {
                // a visit at least every max interval, at most every min interval
                min_rate[d] = SECONDS_PER_DAY / batch.max_interval_s[r];
                max_rate[d] = SECONDS_PER_DAY / batch.min_interval_s[r];
            }
        }
        // keep the text until the URLs are copied out in order, free the rest of this batch now
        texts.push(batch.take_rest_text());
        *batch = RowBatch::default();
    }
    // the rows' numbers are freed; the rests' copy would grow past them, not into them (measured
    // on the 10M-URL benches, median of 3: the peak from 125 to 114 bytes a URL on 100k hosts, from
    // 197 to 193 on 3.1M, the run no slower)
    heap::give_back_freed();
    let rests = rests_in_order(&records, &texts);
    drop(texts);
    let importance: Vec<f64> = records
        .iter()
        .map(|r| plan.importance(r.importance, r.change_rate))
        .collect();
    // the input's own importance, for the output, where the solver reads it differently
    let input_importance: Vec<f64> = if plan.value_per_change {
        records.iter().map(|r| r.importance).collect()
    } else {
        Vec::new()
    };
    let change_rate: Vec<f64> = records.iter().map(|r| r.change_rate).collect();
    let complete_obs: Vec<bool> = records.iter().map(|r| r.complete_obs).collect();
    drop(records);
    drop(dest);
    // Rows were validated when read, but --value-per-change's products can still overflow
    let mut pages = Pages::from_columns(importance, change_rate, complete_obs, offsets, caps)?;
    if with_intervals {
        pages = pages.with_rate_bounds(min_rate, max_rate)?;
    }
    Ok(Arranged {
        input_importance,
        pages,
        rests,
        host_text,
        host_end,
        host_keys,
        host_ids,
        host_delays,
        duplicates,
    })
}

/// The URL rests of `records` (in page order) copied out of the received `texts`, back to back: a
/// copy of a third of the text, read once at random here so that every later reader (the writers
/// above all) reads in order, and the received text with its hosts repeated goes.
fn rests_in_order(records: &[Record], texts: &[Vec<u8>]) -> Rests {
    let bytes = records.iter().map(|r| r.rest_at.len as usize).sum();
    let mut rests = Rests::with_capacity(records.len(), bytes);
    for (i, r) in records.iter().enumerate() {
        if let Some(ahead) = records.get(i + URL_PREFETCH_DISTANCE) {
            prefetch(texts, ahead.rest_at);
        }
        let at = r.rest_at;
        let start = at.start as usize;
        rests.push(
            r.form,
            &texts[at.batch as usize][start..start + at.len as usize],
        );
    }
    rests
}

/// How many rows ahead a pass reading rests at random prefetches (enough to cover a miss to
/// memory at a few nanoseconds per rest copied).
const URL_PREFETCH_DISTANCE: usize = 16;

/// Asks the CPU to fetch the rest at `at` into cache: the pass copying rests out in page order
/// would wait on one cache miss per URL unless it looked a few rows ahead.
#[inline]
fn prefetch(texts: &[Vec<u8>], at: RestAt) {
    if let Some(text) = texts.get(at.batch as usize) {
        prefetch_at(text.as_ptr().wrapping_add(at.start as usize));
    }
}

/// Hosts ahead a gather of host names prefetches, at each of its three steps.
const NAME_PREFETCH_DISTANCE: usize = 8;

/// The names of the hosts whose first rows are `named_by` ((batch, row), in host order), back to
/// back, with the end of each. A name is three dependent reads away at random (the row's host
/// entry, the entry's end, its bytes), a cache miss each on host-heavy sets (a tenth of the
/// run's CPU on 3.1M hosts): each is prefetched a few hosts ahead of the read that needs it.
fn host_names(batches: &[RowBatch], named_by: &[(usize, usize)]) -> (String, Vec<usize>) {
    let d = NAME_PREFETCH_DISTANCE;
    let mut text = String::new();
    let mut ends = Vec::with_capacity(named_by.len());
    for (k, &(b, r)) in named_by.iter().enumerate() {
        if let Some(&(b, r)) = named_by.get(k + 3 * d) {
            prefetch_at(batches[b].host_entry_ptr(r));
        }
        if let Some(&(b, r)) = named_by.get(k + 2 * d) {
            prefetch_at(batches[b].entry_end_ptr(batches[b].host_entry_of(r)));
        }
        if let Some(&(b, r)) = named_by.get(k + d) {
            prefetch_at(batches[b].host_bytes(r).as_ptr());
        }
        text.push_str(batches[b].host(r));
        ends.push(text.len());
    }
    (text, ends)
}
