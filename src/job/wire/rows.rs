//! Input rows in transit to their host's worker: columnar batches, so an exchange moves a few
//! large buffers instead of millions of small records with two Strings each (measured: 3-9 M
//! records/s with Strings, an order of magnitude more as buffers).

use serde::{Deserialize, Serialize};

use super::claims;
use super::origins::Origins;
use super::{BATCH_TEXT_BYTES, BATCH_TEXT_SLACK};
use crate::append::append_short;
use crate::io::pages::{Origin, PageRow};
use crate::job::heap::room_bytes;
use crate::job::url_text::{Form, Url};

/// A batch of input page rows bound for the worker of their hosts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RowBatch {
    /// The worker these rows go to.
    pub dest: u32,
    /// The part of its hosts that worker arranges them in (the index of a [`Part`] at the job's
    /// part bits: every row's host belongs to it).
    ///
    /// [`Part`]: crate::job::arrange::Part
    pub part: u32,
    /// The batch's hosts, each named once (most rows of a batch share their host with others:
    /// seven in ten on the Zipf bench), back to back.
    // one byte string between processes: bincode encodes a plain Vec<u8> byte by byte, which
    // took a third of the read phase of 2 processes
    #[serde(with = "serde_bytes")]
    host_text: Vec<u8>,
    /// End of each of the batch's hosts in `host_text`.
    #[serde(with = "crate::plain")]
    host_end: Vec<u32>,
    /// The rest of each row's URL after its scheme and host ([`Form`]; the whole URL when it does
    /// not start with them), back to back.
    #[serde(with = "serde_bytes")]
    rest_text: Vec<u8>,
    /// End of each row's rest in `rest_text`.
    #[serde(with = "crate::plain")]
    rest_end: Vec<u32>,
    /// Each row's host, an index into the batch's hosts.
    #[serde(with = "crate::plain")]
    host: Vec<u32>,
    /// Each row's [`Form`], as its `u8`, with [`URLS_OWN_KEY`] set where the row's key is its
    /// URL's own.
    #[serde(with = "serde_bytes")]
    form: Vec<u8>,
    #[serde(with = "crate::plain")]
    pub importance: Vec<f64>,
    /// Changes per day.
    #[serde(with = "crate::plain")]
    pub change_rate: Vec<f64>,
    #[serde(with = "crate::plain::bools")]
    pub complete_obs: Vec<bool>,
    /// Each row's own refetch-interval bounds, seconds (NaN: none); empty when no input file has
    /// them.
    #[serde(with = "crate::plain")]
    pub min_interval_s: Vec<f64>,
    #[serde(with = "crate::plain")]
    pub max_interval_s: Vec<f64>,
    /// Each row's origin, packed ([`claims::pack`]) and held as steps of a byte ([`Origins`]:
    /// a packed origin takes 8 bytes, an [`Origin`] 16).
    origin: Origins,
    /// While the batch is filled by [`RowBatch::push`] (a worker splitting its rows further; the
    /// readers keep a [`super::host_memo::HostMemo`] for all their batches instead): the hosts
    /// seen, by hash (a direct-mapped cache: a host evicted by another is named again, which costs
    /// bytes, never a wrong row), each slot the hash's top 32 bits over its entry + 1 (0: empty).
    #[serde(skip)]
    seen: Vec<u64>,
}

/// The bit of a row's form byte that says its key is the one its URL alone gives
/// ([`PageRow::key_is_urls_own`]); forms take the low [`Form::BITS`].
const URLS_OWN_KEY: u8 = 0x80;
const _: () = assert!(URLS_OWN_KEY >> Form::BITS != 0);

/// Slots of a batch's cache of hosts seen.
const SEEN_SLOTS: usize = 1 << 14;

impl RowBatch {
    /// An empty batch for worker `dest`.
    pub fn new(dest: u32) -> Self {
        RowBatch {
            dest,
            ..Default::default()
        }
    }

    /// An empty batch for worker `dest` with room for `text` bytes and `rows` input rows: a batch
    /// grown by doubling copies its buffers about once over and faults in fresh pages for every
    /// copy (a tenth of the read phase on the 10M-URL bench).
    pub fn with_capacity(dest: u32, text: usize, rows: usize) -> Self {
        RowBatch {
            dest,
            part: 0,
            host_text: Vec::new(),
            host_end: Vec::new(),
            rest_text: Vec::with_capacity(text),
            rest_end: Vec::with_capacity(rows),
            host: Vec::with_capacity(rows),
            form: Vec::with_capacity(rows),
            importance: Vec::with_capacity(rows),
            change_rate: Vec::with_capacity(rows),
            complete_obs: Vec::with_capacity(rows),
            min_interval_s: Vec::new(),
            max_interval_s: Vec::new(),
            origin: Origins::with_capacity(rows),
            seen: Vec::new(),
        }
    }

    /// This batch, for rows of the hosts of part `part` (see [`RowBatch::part`]).
    pub fn in_part(mut self, part: u32) -> Self {
        self.part = part;
        self
    }

    /// An empty batch for the same worker and part as this one, with room for its text and a few
    /// more rows and hosts than it holds, and its cache of hosts, emptied: the batch that takes
    /// over when this one is sent on full (a fresh cache faulted in new pages for every batch;
    /// host names grown from nothing were 1.7% of the read phase of 100M URLs on 1M hosts).
    pub fn successor(&mut self) -> Self {
        let rows = self.len();
        let (hosts, host_bytes) = (self.hosts(), self.host_text.len());
        let mut seen = std::mem::take(&mut self.seen);
        seen.fill(0);
        RowBatch {
            seen,
            host_text: Vec::with_capacity(host_bytes + host_bytes / 8),
            host_end: Vec::with_capacity(hosts + hosts / 8),
            ..RowBatch::with_capacity(
                self.dest,
                BATCH_TEXT_BYTES + BATCH_TEXT_SLACK,
                rows + rows / 8,
            )
            .in_part(self.part)
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rest_end.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rest_end.is_empty()
    }

    /// Number of distinct hosts named (a host evicted from the cache counts again).
    pub fn hosts(&self) -> usize {
        self.host_end.len()
    }

    /// Appends an input row; `host_hash` is any well-mixed 64-bit hash of its host.
    /// Its refetch-interval bounds go with [`RowBatch::push_intervals`].
    pub fn push(&mut self, row: &PageRow<'_>, host_hash: u64) {
        let entry = self.host_entry(row.host.as_bytes(), host_hash);
        self.push_under(row, entry);
    }

    /// Names `host` in the batch: its new entry (for rows pushed with [`RowBatch::push_under`]).
    pub fn name_host(&mut self, host: &[u8]) -> u32 {
        append_short(&mut self.host_text, host);
        self.host_end.push(self.host_text.len() as u32);
        (self.host_end.len() - 1) as u32
    }

    /// Appends an input row under the batch's host entry `entry`, which names its host (kept by
    /// the caller, as [`super::host_memo::HostMemo`] does).
    pub fn push_under(&mut self, row: &PageRow<'_>, entry: u32) {
        debug_assert_eq!(self.entry_bytes(entry as usize), row.host.as_bytes());
        let (form, rest) = Form::of(row.url, row.host);
        let own = if row.key_is_urls_own { URLS_OWN_KEY } else { 0 };
        self.push_row(
            entry,
            &row.url.as_bytes()[rest..],
            form as u8 | own,
            row.importance,
            row.change_rate,
            row.complete_obs,
            claims::pack(row.origin),
        );
    }

    /// Appends a row's every column but the refetch bounds: the one place that lists them.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn push_row(
        &mut self,
        entry: u32,
        rest: &[u8],
        form: u8,
        importance: f64,
        change_rate: f64,
        complete_obs: bool,
        packed_origin: u64,
    ) {
        self.host.push(entry);
        append_short(&mut self.rest_text, rest);
        self.rest_end.push(self.rest_text.len() as u32);
        self.form.push(form);
        self.importance.push(importance);
        self.change_rate.push(change_rate);
        self.complete_obs.push(complete_obs);
        self.origin.push(packed_origin);
    }

    /// The batch's entry of `host`: the one seen last under its hash if it is the same host, else
    /// a new one.
    #[inline]
    fn host_entry(&mut self, host: &[u8], hash: u64) -> u32 {
        if self.seen.is_empty() {
            self.seen = vec![0; SEEN_SLOTS];
        }
        // not the hash's low bits: a worker's hosts share them when they are its route
        let slot = (hash >> 16) as usize % SEEN_SLOTS;
        let tag = hash >> 32 << 32;
        let seen = self.seen[slot];
        if seen != 0 && seen & !(u32::MAX as u64) == tag {
            let entry = seen as u32 - 1;
            if self.entry_bytes(entry as usize) == host {
                return entry;
            }
        }
        let entry = self.name_host(host);
        self.seen[slot] = tag | (entry as u64 + 1);
        entry
    }

    /// Appends row `r` of `from` as it is, under this batch's host entry `entry` (its host's,
    /// from [`RowBatch::entry_of`]).
    pub fn push_from(&mut self, from: &RowBatch, r: usize, entry: u32) {
        let (_, start, end) = from.rest_at(r);
        self.push_row(
            entry,
            &from.rest_text[start..end],
            from.form[r],
            from.importance[r],
            from.change_rate[r],
            from.complete_obs[r],
            from.packed_origin(r),
        );
        if from.has_intervals() {
            self.push_intervals(from.min_interval_s[r], from.max_interval_s[r]);
        }
    }

    /// This batch's entry of `host` (`hash`: any well-mixed 64-bit hash of it), named now if the
    /// batch has not named it lately.
    pub fn entry_of(&mut self, host: &[u8], hash: u64) -> u32 {
        self.host_entry(host, hash)
    }

    /// Appends the refetch-interval bounds of the row just pushed (seconds, NaN: none); every row
    /// of a batch has them or none does.
    pub fn push_intervals(&mut self, min_s: f64, max_s: f64) {
        self.min_interval_s.push(min_s);
        self.max_interval_s.push(max_s);
    }

    /// Whether the rows carry refetch-interval bounds.
    pub fn has_intervals(&self) -> bool {
        !self.min_interval_s.is_empty()
    }

    /// Gives back spare capacity before the batch is sent: a received batch lives until the end of
    /// the run, and doubling growth would leave up to half of it unused.
    pub fn sealed(mut self) -> Self {
        self.seen = Vec::new();
        self.host_text.shrink_to_fit();
        self.host_end.shrink_to_fit();
        self.rest_text.shrink_to_fit();
        self.rest_end.shrink_to_fit();
        self.host.shrink_to_fit();
        self.form.shrink_to_fit();
        self.importance.shrink_to_fit();
        self.change_rate.shrink_to_fit();
        self.complete_obs.shrink_to_fit();
        self.min_interval_s.shrink_to_fit();
        self.max_interval_s.shrink_to_fit();
        self.origin.shrink_to_fit();
        self
    }

    /// Where row `i` came from, packed ([`claims::pack`]: ordered as the origins are).
    #[inline]
    pub fn packed_origin(&self, i: usize) -> u64 {
        self.origin.get(i)
    }

    /// Every row's packed origin, in row order.
    pub fn packed_origins(&self) -> impl Iterator<Item = u64> + '_ {
        self.origin.iter()
    }

    /// Where row `i` came from.
    pub fn origin(&self, i: usize) -> Origin {
        claims::unpack(self.origin.get(i))
    }

    /// Bytes of text held (to cut batches at a bounded size).
    pub fn text_bytes(&self) -> usize {
        self.host_text.len() + self.rest_text.len()
    }

    /// Bytes the batch holds on the heap (its buffers' room, used or not).
    pub fn room_bytes(&self) -> usize {
        room_bytes(&self.host_text)
            + room_bytes(&self.host_end)
            + room_bytes(&self.rest_text)
            + room_bytes(&self.rest_end)
            + room_bytes(&self.host)
            + room_bytes(&self.form)
            + room_bytes(&self.importance)
            + room_bytes(&self.change_rate)
            + room_bytes(&self.complete_obs)
            + room_bytes(&self.min_interval_s)
            + room_bytes(&self.max_interval_s)
            + self.origin.room_bytes()
            + room_bytes(&self.seen)
    }

    /// The rests' text (arranging keeps it until the rests are copied out).
    pub fn take_rest_text(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.rest_text)
    }

    /// The batch's entry of every row's host, in row order.
    #[inline]
    pub fn host_entries(&self) -> &[u32] {
        &self.host
    }

    /// The batch's entry of row `i`'s host.
    #[inline]
    pub fn host_entry_of(&self, i: usize) -> usize {
        self.host[i] as usize
    }

    /// Where row `i`'s host entry is held (to prefetch it).
    #[inline]
    pub fn host_entry_ptr(&self, i: usize) -> *const u32 {
        self.host.as_ptr().wrapping_add(i)
    }

    /// Where host entry `e`'s bounds are held (to prefetch them).
    #[inline]
    pub fn entry_end_ptr(&self, e: usize) -> *const u32 {
        self.host_end.as_ptr().wrapping_add(e.saturating_sub(1))
    }

    /// Bytes of the batch's host entry `e`.
    #[inline]
    pub fn entry_bytes(&self, e: usize) -> &[u8] {
        let start = if e == 0 {
            0
        } else {
            self.host_end[e - 1] as usize
        };
        &self.host_text[start..self.host_end[e] as usize]
    }

    /// Host bytes of row `i`.
    #[inline]
    pub fn host_bytes(&self, i: usize) -> &[u8] {
        self.entry_bytes(self.host_entry_of(i))
    }

    /// Row `i`'s URL form and where its rest is in the rests' text: (form, first byte, end).
    #[inline]
    pub fn rest_at(&self, i: usize) -> (Form, usize, usize) {
        let start = if i == 0 {
            0
        } else {
            self.rest_end[i - 1] as usize
        };
        (
            Form::from_bits(self.form[i] & !URLS_OWN_KEY),
            start,
            self.rest_end[i] as usize,
        )
    }

    /// Whether row `i`'s key is the one its URL alone gives ([`PageRow::key_is_urls_own`]).
    #[inline]
    pub fn key_is_urls_own(&self, i: usize) -> bool {
        self.form[i] & URLS_OWN_KEY != 0
    }

    /// URL of row `i`.
    #[inline]
    pub fn url(&self, i: usize) -> Url<'_> {
        let (form, start, end) = self.rest_at(i);
        Url::new(form, self.host_bytes(i), &self.rest_text[start..end])
    }

    /// Host of row `i`. The bytes were pushed from a &str (and bincode moves them unchanged), so the
    /// check cannot fail; an empty string would show a broken invariant rather than panic a worker.
    pub fn host(&self, i: usize) -> &str {
        std::str::from_utf8(self.host_bytes(i)).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::keys::host_key;

    /// A row of `url` under `host`, with importance 1 and change rate 0.5.
    fn page<'a>(url: &'a str, host: &'a str, key_is_urls_own: bool) -> PageRow<'a> {
        PageRow {
            url,
            host,
            key_is_urls_own,
            importance: 1.0,
            change_rate: 0.5,
            complete_obs: false,
            min_interval_s: f64::NAN,
            max_interval_s: f64::NAN,
            origin: Origin { file: 0, row: 0 },
            host_token: None,
        }
    }

    #[test]
    fn a_host_is_named_once_and_not_again_in_its_urls() {
        let mut b = RowBatch::new(0);
        let rows = [
            ("https://a.example/x", "a.example"),
            ("https://A.example/y", "a.example"), // case differs: the URL is held whole
            ("urn:isbn:123", "books.example"),
            ("http://b.example:8080/", "b.example"),
            ("http://c.example", "c.example"),
            ("https://d.example/", "other.example"),
        ];
        for (i, (url, host)) in rows.into_iter().enumerate() {
            b.push(&page(url, host, i % 2 == 0), host_key(host.as_bytes()));
        }
        for (i, (url, host)) in rows.iter().enumerate() {
            // the key's flag beside the form changes neither the URL nor the host
            assert_eq!(b.url(i).to_string_lossy(), *url);
            assert_eq!(b.host(i), *host);
            assert_eq!(b.key_is_urls_own(i), i % 2 == 0);
        }
        // a.example named once
        let hosts: usize = rows[1..].iter().map(|r| r.1.len()).sum();
        assert_eq!(b.hosts(), rows.len() - 1);
        // the URLs whose scheme and host were not held twice
        let rests = [
            "/x",
            "https://A.example/y",
            "urn:isbn:123",
            ":8080/",
            "",
            "https://d.example/",
        ];
        assert_eq!(
            b.text_bytes(),
            hosts + rests.iter().map(|r| r.len()).sum::<usize>()
        );
    }

    #[test]
    fn hosts_sharing_a_hash_or_a_slot_keep_their_own_names() {
        let mut b = RowBatch::new(0);
        // the same hash for two hosts, and a hash a slot apart: every row reads back its host
        let rows = [
            ("https://a.example/1", "a.example", 7),
            ("https://b.example/2", "b.example", 7),
            ("https://a.example/3", "a.example", 7),
            (
                "https://c.example/4",
                "c.example",
                7 + ((SEEN_SLOTS as u64) << 16),
            ),
            ("https://a.example/5", "a.example", 7),
        ];
        for (url, host, hash) in rows {
            b.push(&page(url, host, true), hash);
        }
        for (i, (url, host, _)) in rows.iter().enumerate() {
            assert_eq!(b.url(i).to_string_lossy(), *url);
            assert_eq!(b.host(i), *host);
        }
        // each eviction names its host again
        assert_eq!(b.hosts(), 5);
    }

    #[test]
    fn a_worker_s_hosts_use_the_whole_cache() {
        // the hashes of the hosts routed to worker 0 of 4 share their two low bits
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let hosts: Vec<(String, u64)> = (0..4000)
            .map(|i| (format!("h{i}.example"), rng.random::<u64>() & !3))
            .collect();
        let mut b = RowBatch::new(0);
        for _ in 0..2 {
            for (host, hash) in &hosts {
                let url = format!("https://{host}/");
                b.push(&page(&url, host, true), *hash);
            }
        }
        // named again only where a later host took its slot: about 1 - e^(-4000/16384) = 22% of
        // hosts with every slot in use, 62% with a quarter of them
        assert!(
            b.hosts() < 4000 * 14 / 10,
            "{} names for 4000 hosts",
            b.hosts()
        );
    }
}
