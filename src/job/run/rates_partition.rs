//! A crawler's rates partition as the write phase makes it: sent in slices of the crawlers' hosts,
//! sized by counts every worker agrees on, and written slice by slice in canonical order.

use std::ops::Range;
use std::path::Path;

use anyhow::Result;
use revisit_core::reduce::Combine;
use serde::{Deserialize, Serialize};

use super::rated_pool::RatedPool;
use super::Phases;
use crate::io::manifest::FileEntry;
use crate::io::publish;
use crate::io::rates_out::{RatesWriter, Size};
use crate::job::heap;
use crate::job::wire::rated::{Place, RatedBatch};
use crate::plan::run::RunPlan;

/// Rows a crawler's writer takes in one round, about: the rates travel in slices of the crawlers'
/// rows, so a round holds a bounded share of the URLs (whole crawlers in one round held 40 bytes
/// a URL at the peak of the 10M-URL bench, a tenth of the URLs each round). A slice is 20-40 MB of
/// rows; a writer holds up to three at once (one written, one queued, one arriving).
pub const SLICE_ROWS: usize = 1 << 18;

/// A host of more pages than a slice holds, which the slices cut (every other host is whole in
/// one slice). Without the cuts, the largest host of a Zipf crawl (3.6M pages of 100M) travelled
/// as one slice of 580 MB.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct LargeHost {
    pub crawler: u32,
    pub id: u128,
    pub pages: u32,
}

/// The slices a round of crawlers is sent in, as the place each one starts at: ranges of host
/// identity of equal width, as many as the round's largest crawler needs for [`SLICE_ROWS`], and
/// within each [`LargeHost`] a cut every `slice_rows` pages. Every worker counts the same slices
/// (from the all-reduced sizes), and each sends, slice by slice, its rows whose place falls in the
/// slice: hosts are in canonical order (by identity) and their pages in page order, so a slice is
/// a run of each crawler's rows and the writer appends the slices in order.
pub struct Slices {
    starts: Vec<Place>,
}

impl Slices {
    /// The slices for crawlers of `rows` rows each, about `slice_rows` each, whose large hosts
    /// are `large`.
    pub fn of<'a>(
        rows: impl Iterator<Item = usize>,
        large: impl Iterator<Item = &'a LargeHost>,
        slice_rows: usize,
    ) -> Self {
        let slice_rows = slice_rows.max(1);
        let largest = rows.max().unwrap_or(0);
        // at most 2^32 ranges: the identity's top 64 bits split into `count` of them
        let count = largest.div_ceil(slice_rows).clamp(1, u32::MAX as usize) as u64;
        let mut starts: Vec<Place> = (0..count)
            .map(|s| Place {
                host: (((s as u128) << 64) / count as u128) << 64,
                page: 0,
            })
            .collect();
        for host in large {
            let cuts = (1..(host.pages as usize).div_ceil(slice_rows)).map(|j| Place {
                host: host.id,
                page: (j * slice_rows) as u32,
            });
            starts.extend(cuts);
        }
        starts.sort_unstable();
        starts.dedup();
        Slices { starts }
    }

    /// How many slices there are.
    pub fn count(&self) -> u32 {
        self.starts.len() as u32
    }

    /// The pages of `hosts` (sorted by their identity in `ids`; host `h` has `pages(h)` pages) in
    /// slice `s`: each host with some there, and the indices of its pages there.
    pub fn pages<'h, F: Fn(usize) -> usize>(
        &self,
        s: u32,
        hosts: &'h [usize],
        ids: &'h [u128],
        pages: F,
    ) -> SlicePages<'h, F> {
        let start = self.starts[s as usize];
        let next = self.starts.get(s as usize + 1).copied();
        let first = hosts.partition_point(|&h| ids[h] < start.host);
        let end = match next {
            None => hosts.len(),
            Some(next) => hosts.partition_point(|&h| {
                Place {
                    host: ids[h],
                    page: 0,
                } < next
            }),
        };
        SlicePages {
            hosts: &hosts[first..end.max(first)],
            at: 0,
            start,
            next,
            ids,
            pages,
        }
    }
}

/// The pages of some hosts in a slice ([`Slices::pages`]), host by host.
pub struct SlicePages<'h, F> {
    hosts: &'h [usize],
    /// The next host's place in `hosts`.
    at: usize,
    start: Place,
    next: Option<Place>,
    ids: &'h [u128],
    pages: F,
}

impl<F> SlicePages<'_, F> {
    /// The host `d` hosts after the one the iterator last gave (to fetch ahead what it needs).
    pub fn ahead(&self, d: usize) -> Option<usize> {
        self.hosts.get((self.at + d).checked_sub(1)?).copied()
    }
}

impl<F: Fn(usize) -> usize> Iterator for SlicePages<'_, F> {
    type Item = (usize, Range<u32>);

    fn next(&mut self) -> Option<Self::Item> {
        let h = *self.hosts.get(self.at)?;
        self.at += 1;
        let (id, n) = (self.ids[h], (self.pages)(h) as u32);
        let to = match self.next {
            Some(next) if next.host == id => next.page.min(n),
            _ => n,
        };
        let from = if self.start.host == id {
            self.start.page
        } else {
            0
        };
        Some((h, from.min(to)..to))
    }
}

/// Rows and URL bytes of every crawler's rates partition, and the hosts larger than a slice,
/// summed over the workers (to size the files' row groups and cut the slices).
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct RatesSizes {
    pub crawlers: Vec<Size>,
    pub large_hosts: Vec<LargeHost>,
}

impl RatesSizes {
    /// This worker's share: the rows it sends (its pages with a rate) by crawler, and its hosts of
    /// more than [`SLICE_ROWS`] pages.
    pub fn of(plan: &RunPlan, p: &Phases) -> Self {
        let a = &p.loaded.arranged;
        let rates = &p.solved.solution.rates;
        let mut sizes = RatesSizes {
            crawlers: vec![Size::default(); plan.crawlers as usize],
            large_hosts: Vec::new(),
        };
        for (h, &crawler) in p.assigned.crawler_of.iter().enumerate() {
            let size = &mut sizes.crawlers[crawler as usize];
            let pages = a.pages.host_pages(h);
            if pages.len() > SLICE_ROWS {
                sizes.large_hosts.push(LargeHost {
                    crawler,
                    id: a.host_ids[h],
                    pages: pages.len() as u32,
                });
            }
            // the host's name looked up once, not once a page
            let host = a.host_name(h);
            let (mut rows, mut url_bytes) = (0, 0);
            for i in pages.filter(|&i| rates[i] > 0.0) {
                rows += 1;
                url_bytes += a.url_of(host, i).len();
            }
            if rows > 0 {
                size.add(&Size {
                    rows,
                    url_bytes,
                    hosts: 1,
                    host_bytes: host.len(),
                });
            }
        }
        sizes
    }

    /// Every crawler's rows, by crawler.
    pub fn rows_by_crawler(&self) -> Vec<u64> {
        self.crawlers.iter().map(|s| s.rows as u64).collect()
    }

    /// The large hosts of crawlers in `round`.
    pub fn large_in<'a>(&'a self, round: &'a [u32]) -> impl Iterator<Item = &'a LargeHost> + 'a {
        self.large_hosts
            .iter()
            .filter(move |h| round.contains(&h.crawler))
    }
}

impl Combine for RatesSizes {
    fn combine(&mut self, o: Self) {
        if self.crawlers.len() < o.crawlers.len() {
            self.crawlers.resize(o.crawlers.len(), Size::default());
        }
        for (a, b) in self.crawlers.iter_mut().zip(&o.crawlers) {
            a.add(b);
        }
        self.large_hosts.extend(o.large_hosts);
    }
}

/// A crawler's rates partition, written slice by slice in canonical order (grouped by host; the
/// same bytes whatever the worker count and the slices).
///
/// Each host lives on one worker, which sent its rows in runs in page order, each run saying the
/// page it starts at, so ordering a slice's runs by (host identity, first page) orders its rows:
/// no per-row hashing or sorting here.
pub struct RatesPartition {
    rel: String,
    writer: RatesWriter,
}

impl RatesPartition {
    /// Creates the partition at `rel` in `staging` for rows coming to `size`.
    pub fn create(
        staging: &Path,
        rel: &str,
        size: Size,
        metadata: &[(String, String)],
    ) -> Result<Self> {
        let path = publish::staged_file(staging, rel)?;
        Ok(RatesPartition {
            rel: rel.to_owned(),
            writer: RatesWriter::create(&path, size, metadata)?,
        })
    }

    /// Appends a slice: the rows every worker sent for it.
    pub fn append(&mut self, batches: &[RatedBatch]) -> Result<()> {
        let mut runs: Vec<(Place, u32, u32)> = Vec::new(); // (place, batch, run in batch)
        for (b, batch) in batches.iter().enumerate() {
            runs.extend((0..batch.runs.len()).map(|k| (batch.runs[k].place(), b as u32, k as u32)));
        }
        // Each batch's runs come in order (a sender walks its hosts and their pages in order), so
        // this is a merge of sorted stretches, which the stable sort finds and merges and the
        // unstable one sorts afresh (the places are distinct: both give the same order).
        runs.sort_by_key(|r| r.0);
        for (_, b, k) in runs {
            let (batch, k) = (&batches[b as usize], k as usize);
            let first = batch.run_rows(k).start;
            self.writer
                .write_run(&batch.rate_run(k), |i| batch.url(k, first + i).parts())?;
        }
        Ok(())
    }

    /// Finishes the file; says what it holds.
    pub fn finish(self) -> Result<FileEntry> {
        let (rows, bytes) = self.writer.finish()?;
        Ok(FileEntry {
            path: self.rel,
            rows,
            bytes,
        })
    }
}

/// What a worker's partition writer is handed: the next partition, or a slice of the current one's
/// rows (all every worker sent for it).
pub enum ToWriter {
    Partition(Box<RatesPartition>),
    Slice(Vec<RatedBatch>),
}

/// Writes the partitions and slices handed over `work`, in order, until the sender hangs up, each
/// slice's batches emptied into `pool` once written; says what each partition holds, or stops at
/// the first error.
pub fn write_partitions(
    work: std::sync::mpsc::Receiver<ToWriter>,
    pool: &RatedPool,
) -> Result<Vec<FileEntry>> {
    let mut written = Vec::new();
    let mut current: Option<RatesPartition> = None;
    let mut freed = 0;
    for message in work {
        match message {
            ToWriter::Partition(next) => {
                if let Some(done) = current.replace(*next) {
                    written.push(done.finish()?);
                }
            }
            ToWriter::Slice(slice) => {
                if let Some(partition) = current.as_mut() {
                    partition.append(&slice)?;
                }
                // The batches go to the pool for the sender to fill again; those it has no room
                // for are freed, and given back every so often: they were allocated on the
                // sending workers' threads, whose allocator kept them once freed here (the write
                // phase grew by 0.9 GiB at 100M URLs).
                for batch in slice {
                    if let Some(unkept) = pool.give(batch) {
                        freed += unkept.room_bytes();
                    }
                }
                if freed >= heap::GIVE_BACK_EVERY_BYTES {
                    heap::give_back_freed();
                    freed = 0;
                }
            }
        }
    }
    if let Some(done) = current {
        written.push(done.finish()?);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parquet_out::ROW_GROUP_ROWS;
    use crate::job::run::state::NEVER;
    use crate::job::url_text::{Form, Url};
    use crate::job::wire::rated::RatedRow;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Host identities, sorted, with the extremes of the identity space among them.
    fn sorted_ids(n: usize, rng: &mut ChaCha8Rng) -> Vec<u128> {
        let mut ids: Vec<u128> = (0..n).map(|_| rng.random()).collect();
        ids.extend([0, u128::MAX, 1 << 127, (1 << 127) - 1]);
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Hosts of `slice_rows` pages or more among `pages`, as the sizes list them.
    fn large(ids: &[u128], pages: &[usize], slice_rows: usize) -> Vec<LargeHost> {
        (0..ids.len())
            .filter(|&h| pages[h] > slice_rows)
            .map(|h| LargeHost {
                crawler: 0,
                id: ids[h],
                pages: pages[h] as u32,
            })
            .collect()
    }

    #[test]
    fn slices_cut_every_crawler_into_runs_of_its_rows_in_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let ids = sorted_ids(500, &mut rng);
        // most hosts small, one in ten up to ten slices' worth
        let pages: Vec<usize> = (0..ids.len())
            .map(|_| match rng.random_range(0..10) {
                0 => rng.random_range(0..1000),
                _ => rng.random_range(0..20),
            })
            .collect();
        // a crawler's hosts: every other host
        let hosts: Vec<usize> = (0..ids.len()).step_by(2).collect();
        let total: usize = hosts.iter().map(|&h| pages[h]).sum();
        for slice_rows in [1, 7, 100, 1000, 100_000] {
            let large = large(&ids, &pages, slice_rows);
            let slices = Slices::of([total].into_iter(), large.iter(), slice_rows);
            let mut joined: Vec<(usize, u32)> = Vec::new();
            for s in 0..slices.count() {
                let start = slices.starts[s as usize];
                let next = slices.starts.get(s as usize + 1);
                let mut large_rows = 0;
                for (h, range) in slices.pages(s, &hosts, &ids, |h| pages[h]) {
                    for page in range.clone() {
                        let place = Place { host: ids[h], page };
                        assert!(place >= start, "slice {s} at {slice_rows} rows");
                        assert!(next.is_none_or(|&n| place < n), "slice {s}");
                        joined.push((h, page));
                    }
                    if pages[h] > slice_rows {
                        large_rows += range.len();
                    }
                }
                // a large host's share of a slice is at most a slice
                assert!(
                    large_rows <= 2 * slice_rows,
                    "slice {s} at {slice_rows} rows"
                );
            }
            // every page of every host once, in canonical order
            let expected: Vec<(usize, u32)> = hosts
                .iter()
                .flat_map(|&h| (0..pages[h] as u32).map(move |k| (h, k)))
                .collect();
            assert_eq!(joined, expected, "{slice_rows} rows a slice");
        }
    }

    #[test]
    fn slices_are_as_many_as_the_largest_crawler_and_the_large_hosts_need() {
        let none: [LargeHost; 0] = [];
        let count = |rows: &[usize], large: &[LargeHost]| {
            Slices::of(rows.iter().copied(), large.iter(), 10).count()
        };
        assert_eq!(count(&[0, 0], &none), 1);
        assert_eq!(count(&[], &none), 1);
        assert_eq!(count(&[10, 3], &none), 1);
        assert_eq!(count(&[11, 3], &none), 2);
        assert_eq!(count(&[3, 95], &none), 10);
        let host = |pages| LargeHost {
            crawler: 1,
            id: 5 << 64,
            pages,
        };
        // a host of 25 pages is cut at 10 and 20; one of 30 at 10 and 20 as well
        assert_eq!(count(&[95, 25], &[host(25)]), 12);
        assert_eq!(count(&[95, 30], &[host(30)]), 12);
        assert_eq!(count(&[95, 31], &[host(31)]), 13);
    }

    /// Two workers' hosts (alternating, each in identity order) with 0 to 40 rows each, but for
    /// some large ones.
    struct Workers {
        ids: Vec<u128>,
        rows: Vec<usize>,
        hosts: [Vec<usize>; 2],
    }

    impl Workers {
        fn new(rng: &mut ChaCha8Rng, n: usize) -> Self {
            let ids = sorted_ids(n, rng);
            // one host in a hundred up to a hundred times larger
            let rows = (0..ids.len())
                .map(|_| match rng.random_range(0..100) {
                    0 => rng.random_range(0..4000),
                    _ => rng.random_range(0..40),
                })
                .collect();
            let hosts = [
                (0..ids.len()).filter(|h| h % 2 == 0).collect(),
                (0..ids.len()).filter(|h| h % 2 == 1).collect(),
            ];
            Workers { ids, rows, hosts }
        }

        /// A worker's batches of `pages` (hosts, each with the indices of its pages to send),
        /// cut after 50 rows anywhere, as a sender cuts them.
        fn batches(&self, pages: impl Iterator<Item = (usize, Range<u32>)>) -> Vec<RatedBatch> {
            let mut batches = vec![RatedBatch::default()];
            for (h, range) in pages {
                let host = format!("h{h}.example");
                let mut in_run = false;
                for r in range.map(|k| k as usize) {
                    let batch = batches.last_mut().expect("one batch at least");
                    if !in_run {
                        batch.start_host(self.ids[h], &host, h % 3 == 0, r as u32);
                        in_run = true;
                    }
                    let x = (h * 64 + r) as f64;
                    let row = RatedRow {
                        importance: x,
                        change_rate: x / 7.0,
                        complete_obs: r % 2 == 0,
                        crawl_rate: 1.0 + x / 3.0,
                        last_fetch_us: if r % 5 == 0 { NEVER } else { x as i64 },
                        next_fetch_us: 2 * x as i64,
                    };
                    // most URLs held as their host's rest, some whole
                    let rest = format!("/{r}");
                    let url = if r % 4 == 3 {
                        Url::whole(b"urn:whole")
                    } else {
                        Url::new(Form::Https, host.as_bytes(), rest.as_bytes())
                    };
                    batch.push(url, row);
                    if batch.len() >= 50 {
                        batches.push(RatedBatch::default());
                        in_run = false;
                    }
                }
            }
            batches
        }

        fn size(&self) -> Size {
            let mut size = Size::default();
            for (h, &rows) in self.rows.iter().enumerate() {
                size.rows += rows;
                if rows > 0 {
                    size.hosts += 1;
                    size.host_bytes += format!("h{h}.example").len();
                }
                size.url_bytes += (0..rows)
                    .map(|r| {
                        if r % 4 == 3 {
                            "urn:whole".len()
                        } else {
                            format!("https://h{h}.example/{r}").len()
                        }
                    })
                    .sum::<usize>();
            }
            size
        }

        /// The partition at `rel` in `dir`, created for these rows.
        fn partition(&self, dir: &Path, rel: &str) -> RatesPartition {
            let meta = [("k".to_owned(), "v".to_owned())];
            RatesPartition::create(dir, rel, self.size(), &meta).unwrap()
        }

        /// What both workers send for each slice of about `slice_rows` rows (the second
        /// worker's first), slice by slice.
        fn slices(&self, slice_rows: usize) -> Vec<Vec<RatedBatch>> {
            let large = large(&self.ids, &self.rows, slice_rows);
            let slices = Slices::of([self.size().rows].into_iter(), large.iter(), slice_rows);
            let rows = |h| self.rows[h];
            (0..slices.count())
                .map(|s| {
                    let mut round = self.batches(slices.pages(s, &self.hosts[1], &self.ids, rows));
                    round.extend(self.batches(slices.pages(s, &self.hosts[0], &self.ids, rows)));
                    round
                })
                .collect()
        }

        /// The file written in slices of about `slice_rows` rows.
        fn written(&self, dir: &Path, slice_rows: usize) -> Vec<u8> {
            let rel = format!("rates-{slice_rows}.parquet");
            let mut partition = self.partition(dir, &rel);
            for round in self.slices(slice_rows) {
                partition.append(&round).unwrap();
            }
            let entry = partition.finish().unwrap();
            assert_eq!(entry.rows as usize, self.size().rows);
            std::fs::read(dir.join(rel)).unwrap()
        }
    }

    #[test]
    fn a_partition_written_in_slices_is_the_partition_written_whole() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // about 20 rows a host: more rows than a row group, so that groups span slices
        let workers = Workers::new(&mut rng, 2 * ROW_GROUP_ROWS / 20);
        assert!(workers.size().rows > ROW_GROUP_ROWS);
        let dir = tempfile::tempdir().unwrap();
        let whole = workers.written(dir.path(), usize::MAX);
        // from a few slices of whole hosts to many that cut the large hosts
        for slice_rows in [workers.size().rows / 3, 10_000, 1000, 333] {
            assert!(
                workers.written(dir.path(), slice_rows) == whole,
                "slices of {slice_rows} rows"
            );
        }
        // and the rows are in host identity order: the first rows are the least identity's
        let file = std::fs::File::open(dir.path().join(format!("rates-{}.parquet", usize::MAX)));
        let file = file.unwrap();
        let mut reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
        let batch = reader.next().unwrap().unwrap();
        let text = |name: &str| {
            batch
                .column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap()
                .clone()
        };
        let hosts = text("host");
        let first = (0..workers.ids.len())
            .find(|&h| workers.rows[h] > 0)
            .unwrap();
        assert_eq!(hosts.value(0), format!("h{first}.example"));
        // each URL written whole again from its host and rest
        let urls = text("url");
        for r in 0..workers.rows[first].min(batch.num_rows()) {
            let url = if r % 4 == 3 {
                "urn:whole".to_owned()
            } else {
                format!("https://h{first}.example/{r}")
            };
            assert_eq!(urls.value(r), url, "row {r}");
        }
    }

    #[test]
    fn a_writer_thread_writes_partition_after_partition_each_of_its_own_slices() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let first = Workers::new(&mut rng, 3000);
        let second = Workers::new(&mut rng, 2000);
        let dir = tempfile::tempdir().unwrap();
        let (to_writer, work) = std::sync::mpsc::sync_channel(1);
        let pool = std::sync::Arc::new(RatedPool::default());
        let writer = {
            let pool = pool.clone();
            std::thread::spawn(move || write_partitions(work, &pool))
        };
        // the partitions follow one another without a pause: the second's arrives while the
        // first's last slices are still queued
        for (workers, rel) in [(&first, "first.parquet"), (&second, "second.parquet")] {
            let partition = Box::new(workers.partition(dir.path(), rel));
            to_writer.send(ToWriter::Partition(partition)).unwrap();
            for slice in workers.slices(1000) {
                to_writer.send(ToWriter::Slice(slice)).unwrap();
            }
        }
        drop(to_writer);
        let entries = writer.join().unwrap().unwrap();
        // every batch written was emptied into the pool
        assert!(pool.take(0, 0).is_some_and(|b| b.is_empty()));
        let paths: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["first.parquet", "second.parquet"]);
        for (entry, workers) in entries.iter().zip([&first, &second]) {
            assert_eq!(entry.rows as usize, workers.size().rows);
            // the same bytes as the partition written on its own, whole
            let alone = workers.written(dir.path(), usize::MAX);
            assert!(std::fs::read(dir.path().join(&entry.path)).unwrap() == alone);
        }
    }
}
