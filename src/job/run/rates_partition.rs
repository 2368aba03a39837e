//! A crawler's rates partition as the write phase makes it: sent in slices of the crawlers' hosts,
//! sized by counts every worker agrees on, and written slice by slice in canonical order.

use std::path::Path;

use anyhow::Result;
use revisit_core::reduce::Combine;
use serde::{Deserialize, Serialize};

use super::state::NEVER;
use super::Phases;
use crate::io::manifest::FileEntry;
use crate::io::publish;
use crate::io::rates_out::{RateRow, RatesWriter, Size};
use crate::job::wire::rated::RatedBatch;
use crate::plan::run::RunPlan;

/// Rows a crawler's writer takes in one round, about: the rates travel in slices of the crawlers'
/// hosts, so a round holds a bounded share of the URLs (whole crawlers in one round held 40 bytes
/// a URL at the peak of the 10M-URL bench, a tenth of the URLs each round). A slice is 20-40 MB of
/// rows; a writer holds up to three at once (one written, one queued, one arriving).
pub const SLICE_ROWS: usize = 1 << 18;

/// The slices a round of crawlers is sent in: ranges of host identity of equal width, as many as
/// the round's largest crawler needs for [`SLICE_ROWS`]. Every worker counts the same slices (from
/// the all-reduced sizes), and each sends, slice by slice, its hosts whose identity falls in the
/// slice: hosts are in canonical order (by identity), so a slice is a run of each crawler's hosts
/// and the writer appends the slices in order.
pub struct Slices {
    pub count: u32,
}

impl Slices {
    /// The slices for crawlers of `rows` rows each, about `slice_rows` each.
    pub fn of(rows: impl Iterator<Item = usize>, slice_rows: usize) -> Self {
        let largest = rows.max().unwrap_or(0);
        // at most 2^32 slices: the identity's top 64 bits split into `count` ranges
        let count = largest
            .div_ceil(slice_rows.max(1))
            .clamp(1, u32::MAX as usize) as u32;
        Slices { count }
    }

    /// The least host identity of slice `s` (0 for the first).
    fn start(&self, s: u32) -> u128 {
        (((s as u128) << 64) / self.count as u128) << 64
    }

    /// The hosts of `hosts` (sorted by their identity in `ids`) in slice `s`.
    pub fn hosts<'h>(&self, s: u32, hosts: &'h [usize], ids: &[u128]) -> &'h [usize] {
        let first = hosts.partition_point(|&h| ids[h] < self.start(s));
        let end = if s + 1 == self.count {
            hosts.len()
        } else {
            hosts.partition_point(|&h| ids[h] < self.start(s + 1))
        };
        &hosts[first..end]
    }
}

/// Rows and URL bytes of every crawler's rates partition, summed over the workers (to size the
/// files' row groups and count the slices).
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct RatesSizes(pub Vec<Size>);

impl RatesSizes {
    /// This worker's share: the rows it sends (its pages with a rate), by crawler.
    pub fn of(plan: &RunPlan, p: &Phases) -> Self {
        let a = &p.loaded.arranged;
        let rates = &p.solved.solution.rates;
        let mut sizes = vec![Size::default(); plan.crawlers as usize];
        for (h, &crawler) in p.assigned.crawler_of.iter().enumerate() {
            let size = &mut sizes[crawler as usize];
            for i in a.pages.host_pages(h).filter(|&i| rates[i] > 0.0) {
                size.rows += 1;
                size.url_bytes += a.url(h, i).len();
            }
        }
        RatesSizes(sizes)
    }
}

impl Combine for RatesSizes {
    fn combine(&mut self, o: Self) {
        if self.0.len() < o.0.len() {
            self.0.resize(o.0.len(), Size::default());
        }
        for (a, b) in self.0.iter_mut().zip(o.0) {
            a.rows += b.rows;
            a.url_bytes += b.url_bytes;
        }
    }
}

/// A crawler's rates partition, written slice by slice in canonical order (grouped by host; the
/// same bytes whatever the worker count and the slices).
///
/// Each host lives on one worker, which sent its rows as one contiguous run in canonical order, so
/// ordering a slice's runs by host identity orders its rows: no per-row hashing or sorting here.
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
        let mut runs: Vec<(u128, u32, u32)> = Vec::new(); // (host, batch, run in batch)
        for (b, batch) in batches.iter().enumerate() {
            runs.extend((0..batch.runs.len()).map(|k| (batch.runs[k].id, b as u32, k as u32)));
        }
        runs.sort_unstable_by_key(|r| r.0);
        let rows = runs.iter().flat_map(|&(_, b, k)| {
            let batch = &batches[b as usize];
            let run = &batch.runs[k as usize];
            batch.run_rows(k as usize).map(move |r| RateRow {
                url: batch.url(k as usize, r).parts(),
                host: batch.run_host(k as usize),
                importance: batch.importance[r],
                change_rate: batch.change_rate[r],
                complete_obs: batch.complete_obs[r],
                crawl_rate: batch.crawl_rate[r],
                host_capped: run.capped,
                fetch_interval_s: batch.interval_s[r],
                last_fetch_us: Some(batch.last_fetch_us[r]).filter(|&t| t != NEVER),
                next_fetch_us: batch.next_fetch_us[r],
            })
        });
        self.writer.write(rows)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::parquet_out::ROW_GROUP_ROWS;
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

    #[test]
    fn slices_cut_every_crawler_into_runs_of_identity_in_order() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let ids = sorted_ids(500, &mut rng);
        // a crawler's hosts: every other host
        let hosts: Vec<usize> = (0..ids.len()).step_by(2).collect();
        for count in [1, 2, 3, 7, 64, 1000] {
            let slices = Slices { count };
            let mut joined = Vec::new();
            for s in 0..count {
                let part = slices.hosts(s, &hosts, &ids);
                for &h in part {
                    assert!(ids[h] >= slices.start(s), "slice {s} of {count}");
                    if s + 1 < count {
                        assert!(ids[h] < slices.start(s + 1), "slice {s} of {count}");
                    }
                }
                joined.extend_from_slice(part);
            }
            assert_eq!(joined, hosts, "{count} slices");
        }
    }

    #[test]
    fn slices_are_as_many_as_the_largest_crawler_needs() {
        assert_eq!(Slices::of([0, 0].into_iter(), 10).count, 1);
        assert_eq!(Slices::of(std::iter::empty(), 10).count, 1);
        assert_eq!(Slices::of([10, 3].into_iter(), 10).count, 1);
        assert_eq!(Slices::of([11, 3].into_iter(), 10).count, 2);
        assert_eq!(Slices::of([3, 95].into_iter(), 10).count, 10);
    }

    /// Two workers' hosts (alternating, each in identity order) with 0 to 40 rows each.
    struct Workers {
        ids: Vec<u128>,
        rows: Vec<usize>,
        hosts: [Vec<usize>; 2],
    }

    impl Workers {
        fn new(rng: &mut ChaCha8Rng, n: usize) -> Self {
            let ids = sorted_ids(n, rng);
            let rows = ids.iter().map(|_| rng.random_range(0..40)).collect();
            let hosts = [
                (0..ids.len()).filter(|h| h % 2 == 0).collect(),
                (0..ids.len()).filter(|h| h % 2 == 1).collect(),
            ];
            Workers { ids, rows, hosts }
        }

        /// A worker's batches of `hosts`, cut after 50 rows or more as a sender cuts them.
        fn batches(&self, hosts: &[usize]) -> Vec<RatedBatch> {
            let mut batches = vec![RatedBatch::default()];
            for &h in hosts {
                let batch = batches.last_mut().expect("one batch at least");
                let host = format!("h{h}.example");
                batch.start_host(self.ids[h], &host, h % 3 == 0);
                for r in 0..self.rows[h] {
                    let x = (h * 64 + r) as f64;
                    let row = RatedRow {
                        importance: x,
                        change_rate: x / 7.0,
                        complete_obs: r % 2 == 0,
                        crawl_rate: 1.0 + x / 3.0,
                        interval_s: 86_400.0 / (1.0 + x / 3.0),
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
                }
                if batch.len() >= 50 {
                    batches.push(RatedBatch::default());
                }
            }
            batches
        }

        fn size(&self) -> Size {
            let mut size = Size::default();
            for (h, &rows) in self.rows.iter().enumerate() {
                size.rows += rows;
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

        /// The file written in `count` slices.
        fn written(&self, dir: &Path, count: u32) -> Vec<u8> {
            let rel = format!("rates-{count}.parquet");
            let meta = [("k".to_owned(), "v".to_owned())];
            let mut partition = RatesPartition::create(dir, &rel, self.size(), &meta).unwrap();
            let slices = Slices { count };
            for s in 0..count {
                // what both workers sent for the slice, the second worker's first
                let mut round = self.batches(slices.hosts(s, &self.hosts[1], &self.ids));
                round.extend(self.batches(slices.hosts(s, &self.hosts[0], &self.ids)));
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
        let whole = workers.written(dir.path(), 1);
        for count in [2, 5, 13] {
            assert!(
                workers.written(dir.path(), count) == whole,
                "{count} slices"
            );
        }
        // and the rows are in host identity order: the first rows are the least identity's
        let file = std::fs::File::open(dir.path().join("rates-1.parquet")).unwrap();
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
}
