//! From the rows a worker received to its solver arena: grouped by host in a canonical order
//! (independent of arrival order and worker count), duplicates removed, caps joined.

use super::flag_sort::{flag_pass, sort_by_wide_key, RADIX};
use super::heap;
use super::keys::{host_id, UrlKey};
use super::page_key::PageFinder;
use super::url_text::{Form, Rests, Url};
use super::wire::rows::RowBatch;
use super::wire::BATCH_TEXT_BYTES;
use crate::io::hosts::HostDelays;
use crate::io::pages::{Reason, Rejected};
use crate::plan::PagesPlan;
use crate::prefetch::prefetch_at;
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
        let name = &self.host_text.as_bytes()[start..self.host_end[h]];
        // SAFETY: `host_names` pushes each name whole (a &str) and ends it there, so the bounds
        // are character boundaries and the bytes UTF-8. (A &str slice tests both, for every
        // name and every URL: 4% of the write phase on 3M hosts.)
        unsafe { std::str::from_utf8_unchecked(name) }
    }

    /// Bytes of every host's name together.
    pub fn host_text_bytes(&self) -> usize {
        self.host_text.len()
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

    /// Asks the CPU to fetch host `h`'s bounds, identity, key and the bounds of its name: the
    /// first of two steps ahead of a pass over some of the hosts in canonical order (a crawler's,
    /// a tenth of a worker's: otherwise each host is a miss in every per-host array).
    #[inline]
    pub fn prefetch_host_bounds(&self, h: usize) {
        prefetch_at(self.pages.offsets().as_ptr().wrapping_add(h));
        prefetch_at(self.host_ids.as_ptr().wrapping_add(h));
        prefetch_at(self.host_keys.as_ptr().wrapping_add(h));
        self.prefetch_host_end(h);
    }

    /// The second step: host `h`'s name, and its first page's numbers, rest bounds and entry in
    /// each of `page_columns` (reads the bounds fetched by the first).
    #[inline]
    pub fn prefetch_host_first_page(&self, h: usize, page_columns: &[&[f64]]) {
        self.prefetch_host_name(h);
        let first = self.pages.offsets()[h];
        for column in page_columns {
            prefetch_at(column.as_ptr().wrapping_add(first));
        }
        prefetch_at(self.pages.importance().as_ptr().wrapping_add(first));
        prefetch_at(self.pages.change_rate().as_ptr().wrapping_add(first));
        prefetch_at(self.pages.complete_obs().as_ptr().wrapping_add(first));
        self.rests.prefetch_end(first);
    }

    /// The third step: the text of host `h`'s first URL (reads its bounds, fetched by the
    /// second). A crawler's hosts are scattered over the worker's: the text of a host of one page
    /// was a miss to memory at each URL written.
    #[inline]
    pub fn prefetch_host_first_rest(&self, h: usize) {
        self.rests.prefetch_text(self.pages.offsets()[h]);
    }

    /// URL of page `i`, of host `h`.
    #[inline]
    pub fn url(&self, h: usize, i: usize) -> Url<'_> {
        debug_assert!(self.pages.host_pages(h).contains(&i));
        self.url_of(self.host_name(h), i)
    }

    /// URL of page `i` of the host named `host` (its [`Arranged::host_name`], looked up once for
    /// a pass over its pages).
    #[inline]
    pub fn url_of<'a>(&'a self, host: &'a str, i: usize) -> Url<'a> {
        let (form, rest) = self.rests.get(i);
        Url::new(form, host.as_bytes(), rest)
    }

    /// Every page's URL, in page order.
    pub fn urls(&self) -> impl Iterator<Item = Url<'_>> + '_ {
        (0..self.pages.hosts())
            .flat_map(move |h| self.pages.host_pages(h).map(move |i| self.url(h, i)))
    }

    /// Every page's URL key in page order, ascending within each host (canonical order): with
    /// [`Arranged::finder`], the pages' side of a join with a table keyed by
    /// [`super::page_key::PageKey`]. 16 bytes a page, and no sort.
    pub fn url_keys(&self) -> Vec<UrlKey> {
        let mut keys = Vec::with_capacity(self.pages.len());
        keys.extend(self.urls().map(|url| UrlKey::from(url.id())));
        keys
    }

    /// A finder of this worker's pages by [`super::page_key::PageKey`], `urls` their
    /// [`Arranged::url_keys`].
    pub fn finder<'a>(&'a self, urls: &'a [UrlKey]) -> PageFinder<'a> {
        PageFinder::new(&self.host_ids, self.pages.offsets(), urls)
    }

    /// Every page as (URL key, page index), sorted by key: the side of a merge-join with a table
    /// keyed by URL (a binary search per page missed the cache at every step of 10M-row tables).
    /// 24 bytes a page; sorted by radix passes (the keys are hashes).
    pub fn pages_by_url_key(&self) -> Vec<(UrlKey, u32)> {
        let mut pages: Vec<(UrlKey, u32)> = Vec::with_capacity(self.pages.len());
        pages.extend(
            self.urls()
                .enumerate()
                .map(|(i, url)| (UrlKey::from(url.id()), i as u32)),
        );
        sort_by_wide_key(&mut pages, |p| p.0.halves(), |a, b| a.1.cmp(&b.1));
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

/// A row's place in canonical order, in 16 bytes: its host's rank among the part's hosts (by
/// 128-bit identity: [`Ordered::hosts`]), the top 64 bits of its URL's 128-bit identity (rows
/// agreeing there are told apart by the whole identity), and `row`, which numbers the rows of all
/// batches in turn. Half the 32 bytes of a key that held the host's identity itself: half the
/// memory the sort moves.
#[derive(Clone, Copy, Debug, Default)]
pub struct RowKey {
    pub url_high: u64,
    pub host: u32,
    pub row: u32,
}

/// A part's rows in canonical order: their keys, and the identities of the part's hosts by rank
/// (ascending).
pub struct Ordered {
    pub keys: Vec<RowKey>,
    pub hosts: Vec<u128>,
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

/// The 128-bit identity of the URL of row number `row` (hashed again: needed only where the top
/// 64 bits of two rows' identities agree).
fn url_identity(batches: &[RowBatch], starts: &[u32], row: u32) -> u128 {
    let (b, r) = locate(starts, row);
    batches[b].url(r).id()
}

/// The rows of `batches` in canonical order: by 128-bit host identity, then 128-bit URL
/// identity, then origin. The order depends only on the rows, not on which batch holds them.
///
/// Hosts and URLs are identified by their 128-bit xxh3 hashes: comparing bytes instead cost 13% of
/// a run in cache misses (sorted rows are scattered over the batches), and a collision among 10^9
/// distinct values has probability below 10^-20.
///
/// Every row's host must belong to `part`: a row in another part would be arranged out of the
/// canonical order, and could miss its delay in the hosts table (panics, naming the host).
///
/// How: the part's hosts are ranked by identity ([`rank_hosts`]), so that a key is 16 bytes;
/// then one in-place radix pass on the top byte of the rank, and sorts in cache by (rank, URL).
/// In profiles of the 10M-URL bench on Zipf hosts, sorting took 111 samples against 176 for keys
/// of 32 bytes holding the host's identity, sorted by two radix passes on it. (Rows placed
/// straight into their host's run, a counting sort, missed the cache at every row on the
/// host-heavy set, 194K hosts a part: slower there than the 32-byte keys.)
///
/// The keys are written into `keys` (emptied first; its room is kept, and grown to the rows if
/// need be), the hosts' identities into the room of `room.hosts` (which it gives up).
pub fn canonical_order(
    batches: &[RowBatch],
    starts: &[u32],
    part: Part,
    mut keys: Vec<RowKey>,
    room: &mut RankRoom,
) -> Ordered {
    let (hosts, entry_rank) = rank_hosts(batches, part, room);
    keys.clear();
    keys.reserve_exact(batches.iter().map(RowBatch::len).sum());
    for (b, (batch, ranks)) in batches.iter().zip(&entry_rank).enumerate() {
        for (r, &e) in batch.host_entries().iter().enumerate() {
            keys.push(RowKey {
                url_high: (batch.url(r).id() >> 64) as u64,
                host: ranks[e as usize],
                row: starts[b] + r as u32,
            });
        }
    }
    // the top byte of the largest rank's bits
    let rank_bits = usize::BITS - hosts.len().saturating_sub(1).leading_zeros();
    let shift = rank_bits.saturating_sub(8);
    let top = flag_pass(&mut keys, |k| (k.host >> shift) as usize);
    let whole = |row: u32| {
        let (b, r) = locate(starts, row);
        (batches[b].url(r).id(), batches[b].packed_origin(r))
    };
    for d in 0..RADIX {
        sort_by_host_and_url(&mut keys[top[d]..top[d + 1]], whole);
    }
    Ordered { keys, hosts }
}

/// Sorts keys by host rank, then URL identity, then origin: by the rank and the top 64 bits of
/// the URL's identity, then, where those agree, by `whole(row)` (the whole identity and the
/// origin). Rows of one URL are duplicates: the first by origin (file, then row) sorts first and
/// is kept. Rows whose identities agree in their top 64 bits are duplicates, or with a chance of
/// 3 in 10^8, two of 10^6 URLs of one host.
fn sort_by_host_and_url(keys: &mut [RowKey], whole: impl Fn(u32) -> (u128, u64)) {
    // (rank, URL) as one u128: the order of the pair, compared without a branch between its two
    // words (buckets of 2.3K keys: 34-38 ns a key against 40-42; on 1M URLs of Zipf hosts the
    // sort's instructions from 207M to 168M)
    keys.sort_unstable_by_key(|k| ((k.host as u128) << 64) | k.url_high as u128);
    for equal in keys.chunk_by_mut(|a, b| (a.host, a.url_high) == (b.host, b.url_high)) {
        if equal.len() > 1 {
            equal.sort_by_cached_key(|k| whole(k.row));
        }
    }
}

/// The identities of the hosts of `batches` (all of `part`; panics naming one that is not),
/// ascending, and the rank among them of each batch's host entries.
///
/// The entries are sorted by identity (a host of many pages has an entry in most batches: 94K
/// entries of 6.3K hosts for a part of 600K rows on Zipf hosts; 290K of 194K on the host-heavy
/// set). Found in a hash map instead, they missed the cache at every entry, and took longer than
/// the sort of every row by host they replaced on the host-heavy set.
fn rank_hosts(batches: &[RowBatch], part: Part, room: &mut RankRoom) -> (Vec<u128>, Vec<Vec<u32>>) {
    let entries = &mut room.entries;
    entries.clear();
    entries.reserve_exact(batches.iter().map(RowBatch::hosts).sum());
    for (b, batch) in batches.iter().enumerate() {
        // each of the batch's hosts hashed once
        entries.extend((0..batch.hosts()).map(|e| {
            let id = host_id(batch.entry_bytes(e));
            assert!(
                part.holds(id),
                "host {:?} reached arranging part {part:?}, not its own: the workers disagree on \
                 the parts",
                String::from_utf8_lossy(batch.entry_bytes(e))
            );
            HostEntry {
                id: [(id >> 64) as u64, id as u64],
                batch: b as u32,
                entry: e as u32,
            }
        }));
    }
    // In-place radix passes on the two bytes below the part's bits (a second only where a
    // bucket is large: each pass sets up 256 buckets), then small sorts in cache.
    let byte = |x: &HostEntry, k: u32| ((x.id[0] >> (56 - part.bits - 8 * k)) & 0xff) as usize;
    let top = flag_pass(entries, |x| byte(x, 0));
    for d in 0..RADIX {
        let bucket = &mut entries[top[d]..top[d + 1]];
        if bucket.len() <= SECOND_PASS_PAST {
            bucket.sort_unstable_by_key(|x| x.id);
            continue;
        }
        let inner = flag_pass(bucket, |x| byte(x, 1));
        for e in 0..RADIX {
            bucket[inner[e]..inner[e + 1]].sort_unstable_by_key(|x| x.id);
        }
    }
    let mut entry_rank: Vec<Vec<u32>> = batches.iter().map(|b| vec![0; b.hosts()]).collect();
    // at most an identity an entry: no growth, whose copies were fresh pages each
    let mut hosts = std::mem::take(&mut room.hosts);
    hosts.clear();
    hosts.reserve_exact(entries.len());
    let mut last = None;
    for x in entries.iter() {
        if last != Some(x.id) {
            hosts.push(((x.id[0] as u128) << 64) | x.id[1] as u128);
            last = Some(x.id);
        }
        entry_rank[x.batch as usize][x.entry as usize] = hosts.len() as u32 - 1;
    }
    (hosts, entry_rank)
}

/// The buffers [`canonical_order`] ranks a part's hosts in, kept from part to part: its hosts'
/// entries, and room for their identities (given back with [`RankRoom::take_back`]). Allocated
/// afresh for every part, they were a fifth of the pages faulted in while arranging the host-heavy
/// set (and given back to the system after each part, see `heap::give_back_freed`).
#[derive(Default)]
pub struct RankRoom {
    entries: Vec<HostEntry>,
    hosts: Vec<u128>,
}

impl RankRoom {
    /// Takes back the room of `hosts` (an [`Ordered`]'s, used up).
    pub fn take_back(&mut self, hosts: Vec<u128>) {
        self.hosts = hosts;
    }
}

/// A batch's host entry and its host's identity, as (high, low) halves (a u128 would align the
/// entry to 32 bytes).
#[derive(Clone, Copy)]
struct HostEntry {
    id: [u64; 2],
    batch: u32,
    entry: u32,
}

/// Entries in a bucket of the first radix pass past which [`rank_hosts`] makes a second (the
/// tests' sets are small: there, both ways are taken).
const SECOND_PASS_PAST: usize = if cfg!(test) { 64 } else { 4096 };

/// A row on its way to the arranged columns: its numbers and its URL's rest in the text.
#[derive(Clone, Copy, Default)]
struct Record {
    importance: f64,
    change_rate: f64,
    rest_at: RestAt,
    form: Form,
    complete_obs: bool,
}

// A part's records take over its keys' buffer, which has room for them (see `Scratch`).
const _: () = assert!(
    std::mem::size_of::<Record>() == KEYS_PER_RECORD * std::mem::size_of::<RowKey>()
        && std::mem::align_of::<Record>() == std::mem::align_of::<RowKey>()
);

/// Keys whose room a record takes.
const KEYS_PER_RECORD: usize = 2;

/// Arranges `batches` as `plan` reads them, with per-host delays (the plan's default for the hosts
/// the table does not list), without the rows in `lost` (packed origins: their URL came earlier
/// under another host: they are rejected as duplicates).
///
/// More rows than the plan's `arrange_part_bytes` of records and places (36 bytes a row; the
/// sort keys are held in the records' room first) are arranged in parts by the top bits of their
/// host's identity, which follow one another in canonical order: one part's keys, records and
/// places are held at a time, in buffers kept from part to part. Held for every row at once
/// beside every row in transit, they were the peak of a 100M-URL run (94 bytes a URL; 77 in
/// parts). The senders cut their batches by part at `sent_bits` ([`RowBatch::part`], from the
/// input's row count: [`sent_part_bits`]); a worker whose parts came larger than [`SPLIT_PAST`]
/// times the plan's size on average (it received more than an even share) splits every part
/// further here ([`arranged_bits`]), which copies its rows once more.
pub fn arrange(
    batches: Vec<RowBatch>,
    sent_bits: u32,
    delays: &HostDelays,
    plan: &PagesPlan,
    lost: &std::collections::HashSet<u64>,
) -> Result<Arranged, PagesError> {
    let rows = batches.iter().map(RowBatch::len).sum();
    let bits = arranged_bits(rows, sent_bits, plan.arrange_part_bytes);
    arrange_in_parts(batches, sent_bits, bits, delays, plan, lost)
}

/// A worker cuts the parts its rows were sent in further only when they are on average larger
/// than this many parts of the plan's size (it received more than an even share).
const SPLIT_PAST: usize = 8;

/// The part bits a worker arranges its `rows` in, sent in parts of `sent_bits` bits: those, or,
/// past [`SPLIT_PAST`] parts of `part_bytes` each on average, parts of `part_bytes` (the split
/// copies every row once more).
pub fn arranged_bits(rows: usize, sent_bits: u32, part_bytes: usize) -> u32 {
    if part_bits(rows, part_bytes.saturating_mul(SPLIT_PAST)) > sent_bits {
        part_bits(rows, part_bytes).max(sent_bits)
    } else {
        sent_bits
    }
}

/// Batches a reader fills at once, at most (one per worker and part): each grows to a batch's
/// text before it is sent, so the rows a reader holds in flight grow with their count, and each
/// row goes to one of them at random. (At 100M URLs on 2 workers, 128 batches a reader took
/// 34.7 s to read against 27.0 s for 16 in one pair of runs, but the read phase of one build
/// spans as much from run to run: not a measured cost.)
const MAX_OUTGOING_BATCHES: usize = 32;

/// The part bits senders cut their batches by, for `rows_each` rows a worker among `peers`:
/// [`part_bits`] for that even share, but no finer than keeps a reader's batches to
/// [`MAX_OUTGOING_BATCHES`] unless parts would pass [`SPLIT_PAST`] times `part_bytes` (which
/// the workers would have to cut further, copying every row).
pub fn sent_part_bits(rows_each: usize, peers: usize, part_bytes: usize) -> u32 {
    let few_batches = (MAX_OUTGOING_BATCHES / peers.max(1)).max(1).ilog2();
    let fewest = part_bits(rows_each, part_bytes.saturating_mul(SPLIT_PAST));
    part_bits(rows_each, part_bytes).min(few_batches.max(fewest))
}

/// At most 2^this many parts.
const MAX_PART_BITS: u32 = 8;

/// log2 of the parts `rows` rows are arranged in, with at most `part_bytes` of records and
/// places (36 bytes a row; the sort keys take the records' room first) held at once.
pub fn part_bits(rows: usize, part_bytes: usize) -> u32 {
    let per_row = std::mem::size_of::<Record>() + std::mem::size_of::<u32>();
    let parts = (rows * per_row).div_ceil(part_bytes.max(1)).max(1);
    parts
        .next_power_of_two()
        .trailing_zeros()
        .min(MAX_PART_BITS)
}

/// The hosts arranged together: those whose identity's top `bits` bits are `index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub bits: u32,
    pub index: u32,
}

impl Part {
    /// The part of the host of identity `host`, of 2^`bits` parts.
    #[inline]
    pub fn of(host: u128, bits: u32) -> Part {
        let index = host.checked_shr(u128::BITS - bits).unwrap_or(0) as u32;
        Part { bits, index }
    }

    /// Whether the host of identity `host` belongs to this part.
    #[inline]
    fn holds(&self, host: u128) -> bool {
        Part::of(host, self.bits) == *self
    }
}

/// [`arrange`] of batches cut into 2^`sent_bits` parts by their senders, in 2^`bits` parts
/// (`bits` >= `sent_bits`).
fn arrange_in_parts(
    batches: Vec<RowBatch>,
    sent_bits: u32,
    bits: u32,
    delays: &HostDelays,
    plan: &PagesPlan,
    lost: &std::collections::HashSet<u64>,
) -> Result<Arranged, PagesError> {
    debug_assert!(bits >= sent_bits);
    let mut out = Columns::for_rows(&batches, plan.value_per_change);
    let sent = by_part(batches, sent_bits);
    // every part fits the buffers of the largest part as sent (a finer cut only makes parts smaller)
    let mut scratch = Scratch::for_rows(sent.iter().map(|p| p.iter().map(RowBatch::len).sum()));
    for (index, sent) in sent.into_iter().enumerate() {
        // as sent, or in the 2^(bits - sent_bits) consecutive parts of the finer cut they land in
        let parts = if bits == sent_bits {
            vec![(index, sent)]
        } else {
            split_by_host(sent, bits).into_iter().enumerate().collect()
        };
        for (index, batches) in parts.into_iter().filter(|(_, b)| !b.is_empty()) {
            let part = Part {
                bits,
                index: index as u32,
            };
            arrange_part(batches, part, delays, plan, lost, &mut scratch, &mut out);
        }
    }
    drop(scratch);
    out.arranged()
}

/// The buffers every part is arranged in, kept from part to part: each part's sort keys (whose
/// buffer, with room for as many records, its records take over) and places. Allocated afresh
/// for every part of 32 MiB, they were faulted in again each time: the kernel clearing fresh
/// pages took 4 times the samples of a profile of the 10M-URL bench (on this project's VMs a
/// first touch costs 0.5-3 s a GiB).
struct Scratch {
    keys: Vec<RowKey>,
    places: Vec<u32>,
    rank: RankRoom,
    /// Where each kept host's first row is (batch, row), for its name.
    named_by: Vec<(usize, usize)>,
}

impl Scratch {
    /// Buffers for parts of at most the largest of `rows` rows each, allocated once (a buffer
    /// grown by doubling as larger parts came would be faulted in again).
    fn for_rows(rows: impl Iterator<Item = usize>) -> Self {
        let largest = rows.max().unwrap_or(0);
        let scratch = Scratch {
            keys: Vec::with_capacity(KEYS_PER_RECORD * largest),
            places: Vec::with_capacity(largest),
            rank: RankRoom::default(),
            named_by: Vec::new(),
        };
        // sorted, then scattered into at random (the keys as the records that take over their
        // buffer; the places by row number)
        revisit_core::memory::huge_pages(&scratch.keys);
        revisit_core::memory::huge_pages(&scratch.places);
        scratch
    }
}

/// `batches` grouped by the part their senders cut them for ([`RowBatch::part`], of 2^`bits`).
fn by_part(batches: Vec<RowBatch>, bits: u32) -> Vec<Vec<RowBatch>> {
    let mut parts: Vec<Vec<RowBatch>> = (0..1usize << bits).map(|_| Vec::new()).collect();
    for batch in batches {
        let p = batch.part as usize;
        assert!(
            p < parts.len(),
            "a batch for part {p} of {} reached arranging: the workers disagree on the parts",
            parts.len()
        );
        parts[p].push(batch);
    }
    parts
}

/// The rows of `batches` in 2^`bits` parts by the top `bits` bits of their host's identity, each
/// batch freed once split and its pages given back as the parts grow (so the rows are held about
/// once: kept by the allocator, the freed batches held 0.8 GiB beside the parts at the peak of a
/// 100M-URL run).
fn split_by_host(batches: Vec<RowBatch>, bits: u32) -> Vec<Vec<RowBatch>> {
    let parts_n = 1 << bits;
    let mut parts: Vec<Vec<RowBatch>> = (0..parts_n).map(|_| Vec::new()).collect();
    let mut filling: Vec<RowBatch> = (0..parts_n as u32)
        .map(|p| RowBatch::new(0).in_part(p))
        .collect();
    // how many times each part's filling batch was sent on: an entry's place in it holds while
    // the batch does
    let mut epoch = vec![0u32; parts_n];
    let mut entries: Vec<Entry> = Vec::new();
    let mut freed = 0;
    for batch in batches {
        // each of the batch's hosts hashed once: its part, and a hash for the part's host cache
        entries.clear();
        entries.extend((0..batch.hosts()).map(|e| {
            let id = host_id(batch.entry_bytes(e));
            Entry {
                part: Part::of(id, bits).index as usize,
                hash: id as u64,
                epoch: u32::MAX,
                there: 0,
            }
        }));
        for r in 0..batch.len() {
            let e = batch.host_entry_of(r);
            let Entry { part: p, hash, .. } = entries[e];
            let part = &mut filling[p];
            // a host's entry in its part's batch is looked up once per batch split, not per row
            if entries[e].epoch != epoch[p] {
                entries[e].there = part.entry_of(batch.entry_bytes(e), hash);
                entries[e].epoch = epoch[p];
            }
            part.push_from(&batch, r, entries[e].there);
            if part.text_bytes() >= BATCH_TEXT_BYTES {
                let next = part.successor();
                parts[p].push(std::mem::replace(part, next).sealed());
                epoch[p] += 1;
            }
        }
        freed += batch.room_bytes();
        drop(batch);
        if freed >= heap::GIVE_BACK_EVERY_BYTES {
            heap::give_back_freed();
            freed = 0;
        }
    }
    for (p, part) in filling.into_iter().enumerate() {
        if !part.is_empty() {
            parts[p].push(part.sealed());
        }
    }
    parts
}

/// A host entry of a batch being split: its part, its hash, and its entry in the part's filling
/// batch (`there`, valid while that batch's epoch is `epoch`).
#[derive(Clone, Copy)]
struct Entry {
    part: usize,
    hash: u64,
    epoch: u32,
    there: u32,
}

/// The arranged columns of a worker's pages, filled part by part ([`arrange`]).
struct Columns {
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    complete_obs: Vec<bool>,
    /// Per-URL refetch bounds as rates per day (NaN: none); empty when the input has none.
    min_rate: Vec<f64>,
    max_rate: Vec<f64>,
    with_intervals: bool,
    /// The importance column as read, when the solver reads it otherwise.
    input_importance: Vec<f64>,
    value_per_change: bool,
    offsets: Vec<usize>,
    caps: Vec<f64>,
    rests: Rests,
    host_text: String,
    host_end: Vec<usize>,
    host_keys: Vec<u64>,
    host_ids: Vec<u128>,
    host_delays: Vec<Seconds>,
    duplicates: Vec<Rejected>,
}

impl Columns {
    /// Columns with room for every row of `batches` (room not filled is never touched).
    fn for_rows(batches: &[RowBatch], value_per_change: bool) -> Self {
        let rows: usize = batches.iter().map(RowBatch::len).sum();
        // every host is named in a batch it has rows in: at most this many, often far fewer (a
        // host of many pages is named in most batches). Room reserved is not touched until
        // filled, so the per-host columns never grow by doubling: on 3.1M hosts their copies
        // and the pages faulted in afresh at each were a twentieth of the run's page faults.
        // The unfilled room costs address space only (and commit charge where the system
        // refuses to overcommit: about 56 bytes a host entry, 15 entries a host on Zipf hosts).
        let hosts: usize = batches.iter().map(RowBatch::hosts).sum();
        let with_intervals = batches.iter().any(RowBatch::has_intervals);
        let per_row = |on: bool| Vec::with_capacity(if on { rows } else { 0 });
        Columns {
            importance: Vec::with_capacity(rows),
            change_rate: Vec::with_capacity(rows),
            complete_obs: Vec::with_capacity(rows),
            min_rate: per_row(with_intervals),
            max_rate: per_row(with_intervals),
            with_intervals,
            input_importance: per_row(value_per_change),
            value_per_change,
            offsets: {
                let mut offsets = Vec::with_capacity(hosts + 1);
                offsets.push(0);
                offsets
            },
            caps: Vec::with_capacity(hosts),
            rests: Rests::with_capacity(rows),
            host_text: String::new(),
            host_end: Vec::with_capacity(hosts),
            host_keys: Vec::with_capacity(hosts),
            host_ids: Vec::with_capacity(hosts),
            host_delays: Vec::with_capacity(hosts),
            duplicates: Vec::new(),
        }
    }

    /// The solver's pages and the rest, checked (rows were validated when read, but
    /// --value-per-change's products can still overflow).
    fn arranged(mut self) -> Result<Arranged, PagesError> {
        self.rests.drop_spare();
        let mut pages = Pages::from_columns(
            self.importance,
            self.change_rate,
            self.complete_obs,
            self.offsets,
            self.caps,
        )?;
        if self.with_intervals {
            pages = pages.with_rate_bounds(self.min_rate, self.max_rate)?;
        }
        Ok(Arranged {
            input_importance: self.input_importance,
            pages,
            rests: self.rests,
            host_text: self.host_text,
            host_end: self.host_end,
            host_keys: self.host_keys,
            host_ids: self.host_ids,
            host_delays: self.host_delays,
            duplicates: self.duplicates,
        })
    }
}

/// Rows are scattered into their canonical positions batch by batch, and each batch is freed once
/// copied: the sorted store is written while the unsorted one shrinks, so memory stays near one copy,
/// and every later pass (solve, output) reads the store in order instead of gathering rows from
/// all over the received batches. The part's columns are appended to `out`.
fn arrange_part(
    mut batches: Vec<RowBatch>,
    part: Part,
    delays: &HostDelays,
    plan: &PagesPlan,
    lost: &std::collections::HashSet<u64>,
    scratch: &mut Scratch,
    out: &mut Columns,
) {
    let starts = row_starts(&batches);
    let Ordered { keys, hosts } = canonical_order(
        &batches,
        &starts,
        part,
        std::mem::take(&mut scratch.keys),
        &mut scratch.rank,
    );
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
    let mut dest = std::mem::take(&mut scratch.places);
    dest.clear();
    dest.resize(keys.len(), u32::MAX);
    // where each kept host's first row is (batch, row), for its name
    let mut named_by = std::mem::take(&mut scratch.named_by);
    named_by.clear();
    // hosts come in increasing identity, as the table's delays are sorted: a merge
    let mut delays = delays.in_order();
    let mut n = 0usize;
    let mut i = 0;
    while i < keys.len() {
        let host = keys[i].host;
        let id = hosts[host as usize];
        let first = locate(&starts, keys[i].row);
        let delay = delays.get(id).unwrap_or(plan.default_delay);
        let cap = if delay.0 > 0.0 {
            politeness_cap(delay).0
        } else {
            f64::INFINITY
        };
        let mut pages = 0;
        // the host's last row kept
        let mut previous: Option<RowKey> = None;
        while i < keys.len() && keys[i].host == host {
            if let Some(ahead) = keys.get(i + SCATTER_PREFETCH_DISTANCE) {
                prefetch_at(dest.as_ptr().wrapping_add(ahead.row as usize));
            }
            let k = keys[i];
            let repeats = previous.is_some_and(|p| {
                p.url_high == k.url_high
                    && url_identity(&batches, &starts, p.row)
                        == url_identity(&batches, &starts, k.row)
            });
            if repeats || is_lost(k.row) {
                let (b, r) = locate(&starts, k.row);
                let batch = &batches[b];
                out.duplicates.push(Rejected {
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
                previous = Some(k);
                pages += 1;
            }
            i += 1;
        }
        if pages == 0 {
            continue; // every row of this host repeats a URL of another host
        }
        // the host's pages are filled in below; only the boundary and the cap are known here
        out.offsets
            .push(out.offsets.last().copied().unwrap_or(0) + pages);
        out.caps.push(cap);
        named_by.push(first);
        out.host_keys.push(id as u64);
        out.host_ids.push(id);
        out.host_delays.push(delay);
    }
    host_names(&batches, &named_by, &mut out.host_text, &mut out.host_end);
    scratch.named_by = named_by;
    scratch.rank.take_back(hosts);
    let mut texts = Vec::with_capacity(batches.len());
    // Scattered writes miss the cache once per row and column, so a row's numbers and its URL's
    // place travel together in one record (one miss) and are split into columns afterwards, in
    // order, once the batches are freed. The records take over the keys' buffer, whose pages are
    // resident already: a fresh array faulted in ~50,000 pages per worker on the 10M bench.
    let mut records: Vec<Record> = recycled(keys);
    records.resize(n, Record::default());
    // per-URL refetch bounds, as rates per day (NaN: none), when the input has them
    let first = out.min_rate.len();
    if out.with_intervals {
        out.min_rate.resize(first + n, f64::NAN);
        out.max_rate.resize(first + n, f64::NAN);
    }
    let (min_rate, max_rate) = (&mut out.min_rate[first..], &mut out.max_rate[first..]);
    for (b, batch) in batches.iter_mut().enumerate() {
        let mine = &dest[starts[b] as usize..starts[b + 1] as usize];
        for (r, &d) in mine.iter().enumerate() {
            if let Some(&ahead) = mine.get(r + SCATTER_PREFETCH_DISTANCE) {
                // a dropped duplicate's u32::MAX points past the records: a hint, never a read
                prefetch_at(records.as_ptr().wrapping_add(ahead as usize));
            }
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
    scratch.places = dest;
    // the rows' numbers are freed; the rests' copy would grow past them, not into them (measured
    // on the 10M-URL benches, median of 3: the peak from 125 to 114 bytes a URL on 100k hosts, from
    // 197 to 193 on 3.1M, the run no slower)
    heap::give_back_freed();
    rests_in_order(&records, &texts, &mut out.rests);
    // the next part's rests are written into these texts' pages, already resident
    out.rests.recycle(texts);
    out.importance.extend(
        records
            .iter()
            .map(|r| plan.importance(r.importance, r.change_rate)),
    );
    // the input's own importance, for the output, where the solver reads it differently
    if out.value_per_change {
        out.input_importance
            .extend(records.iter().map(|r| r.importance));
    }
    out.change_rate
        .extend(records.iter().map(|r| r.change_rate));
    out.complete_obs
        .extend(records.iter().map(|r| r.complete_obs));
    scratch.keys = recycled(records);
}

/// An empty vector in the allocation of `v`, for values of another type of the same alignment
/// (a fresh one, where `v`'s room is not a whole number of them).
fn recycled<T: Copy, U: Copy>(v: Vec<T>) -> Vec<U> {
    const {
        assert!(
            std::mem::align_of::<T>() == std::mem::align_of::<U>()
                && std::mem::size_of::<T>() > 0
                && std::mem::size_of::<U>() > 0
        )
    };
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes == 0 || !bytes.is_multiple_of(std::mem::size_of::<U>()) {
        return Vec::new();
    }
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: the allocation is `v`'s own, no longer `v`'s (ManuallyDrop), and held as `bytes`
    // bytes at the alignment of U, which is T's: the layout `Vec::from_raw_parts` asks for. It
    // holds no U (length 0), and T needs no drop (Copy).
    unsafe {
        Vec::from_raw_parts(
            v.as_mut_ptr().cast::<U>(),
            0,
            bytes / std::mem::size_of::<U>(),
        )
    }
}

/// The URL rests of `records` (in page order) copied out of the received `texts` onto `rests`,
/// back to back: a copy of a third of the text, read once at random here so that every later
/// reader (the writers above all) reads in order, and the received text with its hosts repeated
/// goes.
fn rests_in_order(records: &[Record], texts: &[Vec<u8>], rests: &mut Rests) {
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
}

/// How many rows ahead a pass writing rows' places or records at random asks for their cache line:
/// the two scatters of arranging waited on a miss at every row (over half of arranging's time on
/// the 10M-URL benches).
const SCATTER_PREFETCH_DISTANCE: usize = 16;

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
/// back onto `text`, with the end of each onto `ends`. A name is three dependent reads away at
/// random (the row's host entry, the entry's end, its bytes), a cache miss each on host-heavy sets
/// (a tenth of the run's CPU on 3.1M hosts): each is prefetched a few hosts ahead of the read that
/// needs it.
fn host_names(
    batches: &[RowBatch],
    named_by: &[(usize, usize)],
    text: &mut String,
    ends: &mut Vec<usize>,
) {
    let d = NAME_PREFETCH_DISTANCE;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::pages::{Origin, PageRow};
    use crate::io::politeness_key::PolitenessKey;
    use crate::job::keys::{host_key, url_id};
    use rand::{Rng, SeedableRng};

    /// Batches of random rows on a few hosts, URLs repeating within and across hosts, some rows
    /// with refetch bounds; cut as a sender cuts them for 2^`sent_bits` parts (the same rows in
    /// the same order for any `sent_bits`).
    fn random_batches(seed: u64, sent_bits: u32) -> Vec<RowBatch> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut row = 0;
        let mut sent = Vec::new();
        for _ in 0..6 {
            let mut batches: Vec<RowBatch> = (0..1u32 << sent_bits)
                .map(|p| RowBatch::new(0).in_part(p))
                .collect();
            for _ in 0..rng.random_range(1..400) {
                let h = rng.random_range(0..40);
                let host = format!("h{h}.example");
                let url = if rng.random_bool(0.1) {
                    format!("HTTPS://H{h}.example/{}", rng.random_range(0..30))
                } else {
                    format!("https://{host}/{}", rng.random_range(0..30))
                };
                let page = PageRow {
                    url: &url,
                    host: &host,
                    key_is_urls_own: true,
                    importance: rng.random_range(0.5..2.0),
                    change_rate: rng.random_range(0.0..3.0),
                    complete_obs: rng.random_bool(0.3),
                    min_interval_s: f64::NAN,
                    max_interval_s: f64::NAN,
                    origin: Origin {
                        file: rng.random_range(0..3),
                        row,
                    },
                    host_token: None,
                };
                row += 1;
                let part = Part::of(host_id(host.as_bytes()), sent_bits).index as usize;
                batches[part].push(&page, host_key(host.as_bytes()));
                batches[part].push_intervals(60.0, rng.random_range(60.0..1e6));
            }
            sent.extend(
                batches
                    .into_iter()
                    .filter(|b| !b.is_empty())
                    .map(RowBatch::sealed),
            );
        }
        sent
    }

    /// What an arrangement shows its readers, page by page and host by host.
    fn shown(a: &Arranged) -> impl PartialEq + std::fmt::Debug {
        let p = &a.pages;
        let pages: Vec<_> = (0..p.len())
            .map(|i| {
                let (min, max) = p.rate_bounds(i);
                let bits = |x: f64| x.to_bits();
                (
                    bits(p.importance()[i]),
                    bits(p.change_rate()[i]),
                    p.complete_obs()[i],
                    bits(min),
                    bits(max),
                )
            })
            .collect();
        let hosts: Vec<_> = (0..p.hosts())
            .map(|h| {
                (
                    a.host_name(h).to_owned(),
                    p.host_pages(h),
                    p.cap(h).to_bits(),
                    a.host_ids[h],
                    a.host_keys[h],
                    a.host_delays[h].0.to_bits(),
                )
            })
            .collect();
        let urls: Vec<String> = a.urls().map(|u| u.to_string_lossy()).collect();
        let duplicates: Vec<_> = a
            .duplicates
            .iter()
            .map(|d| (d.origin, d.url.clone()))
            .collect();
        (pages, hosts, urls, duplicates)
    }

    /// The plan of the arranging tests.
    fn plan() -> PagesPlan {
        PagesPlan {
            inputs: Vec::new(),
            hosts: None,
            default_delay: Seconds(1.0),
            horizon: Seconds(SECONDS_PER_DAY),
            value_per_change: true,
            politeness: PolitenessKey::Host,
            defaults: crate::plan::pages::resolve_defaults(None, None).unwrap(),
            max_reject_share: 0.0,
            arrange_part_bytes: crate::plan::pages::DEFAULT_ARRANGE_PART_BYTES,
        }
    }

    #[test]
    fn arranged_in_parts_as_in_one() {
        let plan = plan();
        for seed in 0..4 {
            // a few rows lose their URL to another host's row
            let lost: std::collections::HashSet<u64> = random_batches(seed, 0)
                .iter()
                .flat_map(|b| b.packed_origins().step_by(17).collect::<Vec<_>>())
                .collect();
            let arranged = |sent_bits, bits| {
                let batches = random_batches(seed, sent_bits);
                let delays = HostDelays::default();
                arrange_in_parts(batches, sent_bits, bits, &delays, &plan, &lost).unwrap()
            };
            let whole = arranged(0, 0);
            assert!(!whole.duplicates.is_empty() && whole.pages.hosts() > 10);
            // the per-host columns were reserved once for every host the batches name, and
            // never grew (grown, their room would be a doubling of some earlier room)
            let named: usize = random_batches(seed, 0).iter().map(RowBatch::hosts).sum();
            assert!(named > whole.pages.hosts());
            assert_eq!(
                (whole.host_ids.capacity(), whole.host_keys.capacity()),
                (named, named)
            );
            // cut by the senders, split here, or both
            for (sent_bits, bits) in [(0, 1), (0, 3), (0, 6), (1, 1), (3, 3), (1, 3), (2, 6)] {
                assert_eq!(
                    shown(&arranged(sent_bits, bits)),
                    shown(&whole),
                    "seed {seed}, sent in {sent_bits} bits, arranged in {bits}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "not its own")]
    fn a_row_in_another_host_s_part_is_refused() {
        let mut batches = random_batches(0, 1);
        // the rows of the first part sent as the second part's
        let first = batches.iter().position(|b| b.part == 0).unwrap();
        batches[first].part = 1;
        let delays = HostDelays::default();
        let _ = arrange_in_parts(batches, 1, 1, &delays, &plan(), &Default::default());
    }

    /// Batches of rows on hosts of `sizes` rows each, one URL in 50 repeated (by the same host or
    /// another), in a shuffled order, cut into batches of 1000 rows.
    fn batches_of_hosts(seed: u64, sizes: &[usize]) -> Vec<RowBatch> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut rows: Vec<(String, String)> = Vec::new();
        for (h, &n) in sizes.iter().enumerate() {
            for p in 0..n {
                let page = if rng.random_bool(0.02) { p / 2 } else { p };
                rows.push((
                    format!("h{h}.example"),
                    format!("https://h{h}.example/{page}"),
                ));
            }
        }
        // the same URL under another host, too
        rows.push(("h0.example".into(), "https://h1.example/3".into()));
        for i in (1..rows.len()).rev() {
            rows.swap(i, rng.random_range(0..=i));
        }
        rows.chunks(1000)
            .enumerate()
            .map(|(c, chunk)| {
                let mut batch = RowBatch::new(0);
                for (i, (host, url)) in chunk.iter().enumerate() {
                    let page = PageRow {
                        url,
                        host,
                        key_is_urls_own: true,
                        importance: 1.0,
                        change_rate: 1.0,
                        complete_obs: false,
                        min_interval_s: f64::NAN,
                        max_interval_s: f64::NAN,
                        origin: Origin {
                            file: (i % 3) as u32,
                            row: (c * 1000 + i) as u64,
                        },
                        host_token: None,
                    };
                    batch.push(&page, host_key(host.as_bytes()));
                }
                batch.sealed()
            })
            .collect()
    }

    #[test]
    fn canonical_order_is_a_full_sort_by_identity_then_origin() {
        // hosts of many pages, and many small ones
        let mut sizes = vec![12_000, 4_097, 160_000];
        sizes.extend((0..300).map(|h| 1 + h % 40));
        // the hosts' room of every seed after the first holds the seed before's entries and hosts
        let mut rank_room = RankRoom::default();
        for seed in 0..3 {
            let batches = batches_of_hosts(seed, &sizes);
            let starts = row_starts(&batches);
            let whole = Part { bits: 0, index: 0 };
            // a buffer kept from an earlier part: its keys and its room
            let mut kept = vec![RowKey::default(); 1000];
            kept.reserve(500_000);
            let room = kept.capacity();
            let Ordered { keys, hosts } =
                canonical_order(&batches, &starts, whole, kept, &mut rank_room);
            assert_eq!(keys.capacity(), room);
            // the order of a plain sort of every row by (host identity, URL identity, origin),
            // from the rows' names
            let mut expected: Vec<(u128, u128, u64, u32)> = Vec::new();
            for (b, batch) in batches.iter().enumerate() {
                for r in 0..batch.len() {
                    let host = host_id(batch.host(r).as_bytes());
                    let url = url_id(batch.url(r).to_string_lossy().as_bytes());
                    let row = starts[b] + r as u32;
                    expected.push((host, url, batch.packed_origin(r), row));
                }
            }
            expected.sort_unstable();
            let rows: Vec<u32> = keys.iter().map(|k| k.row).collect();
            let expected_rows: Vec<u32> = expected.iter().map(|e| e.3).collect();
            assert_eq!(rows, expected_rows, "seed {seed}");
            // hosts by rank, each row's host its own
            let mut ids: Vec<u128> = expected.iter().map(|e| e.0).collect();
            ids.dedup();
            assert_eq!(hosts, ids);
            assert!(keys
                .iter()
                .zip(&expected)
                .all(|(k, e)| hosts[k.host as usize] == e.0));
            // with duplicates among them
            assert!(expected.windows(2).any(|w| w[0].1 == w[1].1));
            rank_room.take_back(hosts);
        }
    }

    #[test]
    fn urls_agreeing_in_their_top_64_bits_are_ordered_by_their_whole_identity() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..50 {
            // identities of 4 top halves only, some repeated whole (duplicates), with origins
            let rows: Vec<(u128, u64)> = (0..rng.random_range(2..200))
                .map(|_| {
                    let high = rng.random_range(0..4u128);
                    let low = rng.random_range(0..3u128);
                    (
                        (high << 64) | (low * 0x9e37_79b9_7f4a_7c15),
                        rng.random_range(0..1000),
                    )
                })
                .collect();
            let mut keys: Vec<RowKey> = (0..rows.len() as u32)
                .map(|row| RowKey {
                    url_high: (rows[row as usize].0 >> 64) as u64,
                    host: 0,
                    row,
                })
                .collect();
            sort_by_host_and_url(&mut keys, |row| rows[row as usize]);
            let got: Vec<(u128, u64)> = keys.iter().map(|k| rows[k.row as usize]).collect();
            let mut expected = rows.clone();
            expected.sort_unstable();
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn records_take_the_keys_buffer_and_give_it_back() {
        let mut keys = vec![RowKey::default(); 1000];
        keys.truncate(10);
        let (at, room) = (keys.as_ptr() as usize, keys.capacity());
        let records: Vec<Record> = recycled(keys);
        // the same memory, all of it: a new buffer would be faulted in afresh for every part
        assert!(records.is_empty());
        assert_eq!(
            (records.as_ptr() as usize, records.capacity()),
            (at, room / 2)
        );
        let keys: Vec<RowKey> = recycled(records);
        assert_eq!((keys.as_ptr() as usize, keys.capacity()), (at, room));
        // room for a whole number of records only
        let odd: Vec<Record> = recycled(vec![RowKey::default(); 3]);
        assert_eq!(odd.capacity(), 0);
    }

    #[test]
    fn few_rows_are_arranged_whole_and_many_in_parts_of_bounded_keys() {
        let bytes = crate::plan::pages::DEFAULT_ARRANGE_PART_BYTES;
        assert_eq!(part_bits(0, bytes), 0);
        assert_eq!(part_bits(900_000, bytes), 0);
        // 5M rows: 180 MB of keys and places in 8 parts of at most 32 MiB
        assert_eq!(part_bits(5_000_000, bytes), 3);
        // 50M rows: 1.8 GB in 64 parts
        assert_eq!(part_bits(50_000_000, bytes), 6);
        assert_eq!(part_bits(usize::MAX / 64, bytes), MAX_PART_BITS);
        // 1000 rows with 10 KB at once: 36 KB in 4 parts
        assert_eq!(part_bits(1000, 10_000), 2);
    }

    #[test]
    fn senders_cut_as_many_parts_as_keep_their_batches_few() {
        let bytes = crate::plan::pages::DEFAULT_ARRANGE_PART_BYTES;
        // 10M URLs on 2 workers: the 8 parts of 32 MiB, 16 batches a reader
        assert_eq!(sent_part_bits(5_000_000, 2, bytes), 3);
        // 100M: 16 parts of the 64 (32 batches a reader), cut no further (each 112 MB of keys
        // and places)
        assert_eq!(sent_part_bits(50_000_000, 2, bytes), 4);
        // on 32 workers, 8 parts (256 batches a reader): none larger than 8 parts of 32 MiB, so
        // that no worker copies its rows to cut them further
        assert_eq!(sent_part_bits(50_000_000, 32, bytes), 3);
        assert_eq!(sent_part_bits(50_000_000, 1000, bytes), 3);
        assert_eq!(sent_part_bits(100, 2, bytes), 0);
    }

    #[test]
    fn workers_cut_their_parts_further_only_past_eight_times_their_size() {
        // 30K rows on 4 workers at 3000 bytes a part: sent in 16 parts (7.5K rows a worker)
        assert_eq!(sent_part_bits(7_500, 4, 3000), 4);
        // the workers' rows of tests/determinism.rs: only the one of 11.4K rows splits
        for (rows, bits) in [(6_992, 4), (9_153, 4), (11_425, 8), (2_430, 4)] {
            assert_eq!(arranged_bits(rows, 4, 3000), bits, "{rows} rows");
        }
        // a worker with an even share of 100M URLs on 2 or 32 workers never splits
        let bytes = crate::plan::pages::DEFAULT_ARRANGE_PART_BYTES;
        for peers in [2, 32] {
            let sent = sent_part_bits(50_000_000, peers, bytes);
            assert_eq!(arranged_bits(50_000_000, sent, bytes), sent);
        }
        // nor past the most parts there are
        assert_eq!(
            arranged_bits(usize::MAX / 64, MAX_PART_BITS, 1),
            MAX_PART_BITS
        );
    }
}
