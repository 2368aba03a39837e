//! Writing a crawler's rates partition: one row per scheduled URL, as the job hands them over.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::types::{Float64Type, TimestampMicrosecondType};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, TimestampMicrosecondArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};

use super::columns::{taken_back, Utf8Builder};
use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::schema;
use crate::append::extend_short;
use revisit_core::units::PerDay;

/// A last fetch time that says the URL was never fetched (written as a null).
pub const NEVER_FETCHED: i64 = i64::MIN;

/// A run of rows of one host, in columns of equal length: what a crawler's writer receives.
#[derive(Clone, Copy, Debug)]
pub struct RateRun<'a> {
    pub host: &'a [u8],
    pub host_capped: bool,
    /// Importance as read (the input's column, whatever the solver made of it).
    pub importance: &'a [f64],
    /// Changes per day.
    pub change_rate: &'a [f64],
    pub complete_obs: &'a [bool],
    /// Fetches per day (the seconds between fetches follow from it: the writer works them out).
    pub crawl_rate: &'a [f64],
    /// Microseconds since the epoch ([`NEVER_FETCHED`]: never).
    pub last_fetch_us: &'a [i64],
    pub next_fetch_us: &'a [i64],
}

impl<'a> RateRun<'a> {
    /// Rows in the run.
    pub(crate) fn len(&self) -> usize {
        self.crawl_rate.len()
    }

    /// Rows `range` of the run.
    pub fn rows(&self, range: std::ops::Range<usize>) -> RateRun<'a> {
        RateRun {
            host: self.host,
            host_capped: self.host_capped,
            importance: &self.importance[range.clone()],
            change_rate: &self.change_rate[range.clone()],
            complete_obs: &self.complete_obs[range.clone()],
            crawl_rate: &self.crawl_rate[range.clone()],
            last_fetch_us: &self.last_fetch_us[range.clone()],
            next_fetch_us: &self.next_fetch_us[range],
        }
    }
}

/// How many rows, bytes of URL text and hosts a file will hold (to size its row groups once, and
/// to encode its `host` column).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Size {
    pub rows: usize,
    pub url_bytes: usize,
    /// Hosts with a row in the file.
    pub hosts: usize,
    /// Bytes of their names.
    pub host_bytes: usize,
}

impl Size {
    /// Adds another worker's share of the same file.
    pub fn add(&mut self, o: &Size) {
        self.rows += o.rows;
        self.url_bytes += o.url_bytes;
        self.hosts += o.hosts;
        self.host_bytes += o.host_bytes;
    }

    /// Whether the `host` column takes a dictionary: only where a row group's hosts fit its page
    /// ([`parquet_out::dictionary_fits`]; rows come in runs of one host).
    fn host_dictionary(&self) -> bool {
        parquet_out::dictionary_fits(self.rows, self.hosts, self.host_bytes, ROW_GROUP_ROWS)
    }
}

/// A rates file written a slice of rows at a time, in row groups of [`ROW_GROUP_ROWS`] however
/// the slices fall: the same bytes as one call with every row.
pub struct RatesWriter {
    writer: parquet_out::Writer,
    group: RatesGroup,
    /// Rows not yet pushed, of the size the file was created for.
    left: usize,
    /// Mean URL bytes of a row.
    mean_url: f64,
}

impl RatesWriter {
    /// Creates the rates file `path` for rows coming to `size` (to size its row groups once), with
    /// `metadata` in its footer.
    pub fn create(path: &Path, size: Size, metadata: &[(String, String)]) -> Result<Self> {
        Ok(RatesWriter {
            writer: parquet_out::Writer::create_plain(
                path,
                schema::rates(),
                metadata,
                ROW_GROUP_ROWS,
                if size.host_dictionary() {
                    &[]
                } else {
                    &["host"]
                },
            )?,
            group: RatesGroup::default(),
            left: size.rows,
            mean_url: size.url_bytes as f64 / size.rows.max(1) as f64,
        })
    }

    /// Appends a run of a host's rows, whose row `i` has the URL `url(i)` (in pieces: scheme,
    /// host, rest, written one after the other). The numbers are copied a run at a time, not a
    /// row at a time (a run is a host's pages in one batch: 100 pages a host on average on the 10M
    /// Zipf set).
    pub fn write_run<'u>(
        &mut self,
        run: &RateRun<'_>,
        url: impl Fn(usize) -> [&'u [u8]; 3],
    ) -> Result<()> {
        let mut done = 0;
        while done < run.len() {
            if self.group.rows() == 0 {
                let rows = self.left.clamp(1, ROW_GROUP_ROWS);
                // a group of longer URLs than the mean grows once
                let text = (self.mean_url * rows as f64 * 1.05) as usize;
                self.group.reserve(rows, text, text / 2);
            }
            let take = (ROW_GROUP_ROWS - self.group.rows()).min(run.len() - done);
            self.group
                .push_run(&run.rows(done..done + take), |i| url(done + i));
            done += take;
            if self.group.rows() == ROW_GROUP_ROWS {
                self.left = self.left.saturating_sub(ROW_GROUP_ROWS);
                self.write_group()?;
            }
        }
        Ok(())
    }

    /// Writes the row group filled so far; its columns' buffers then hold the next one.
    fn write_group(&mut self) -> Result<()> {
        let batch = self.group.finish()?;
        self.writer.write(&batch)?;
        self.group.take_back(batch);
        Ok(())
    }

    /// Writes the last row group and finishes the file; returns (rows, bytes written).
    pub fn finish(mut self) -> Result<(u64, u64)> {
        if self.group.rows() > 0 {
            self.write_group()?;
        }
        self.writer.finish()
    }
}

/// The columns of one row group of a rates file, sized up front, and the buffers of the ones
/// worked out from them. A file's row groups are written one after another in the same buffers:
/// made afresh for each, they were faulted in afresh (a tenth of a 10M-URL run's page faults).
#[derive(Default)]
struct RatesGroup {
    url: Utf8Builder,
    host: Utf8Builder,
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    complete: Vec<bool>,
    rate: Vec<f64>,
    capped: Vec<bool>,
    last: Vec<i64>,
    next: Vec<i64>,
    probability: Vec<f64>,
    interval: Vec<f64>,
    fetched: Vec<bool>,
}

impl RatesGroup {
    /// Makes room for `rows` rows of `url_text` and `host_text` bytes.
    fn reserve(&mut self, rows: usize, url_text: usize, host_text: usize) {
        self.url.reserve(rows, url_text);
        self.host.reserve(rows, host_text);
        for v in [
            &mut self.importance,
            &mut self.change_rate,
            &mut self.rate,
            &mut self.probability,
            &mut self.interval,
        ] {
            v.reserve(rows);
        }
        for v in [&mut self.complete, &mut self.capped, &mut self.fetched] {
            v.reserve(rows);
        }
        self.last.reserve(rows);
        self.next.reserve(rows);
    }

    fn rows(&self) -> usize {
        self.rate.len()
    }

    fn push_run<'u>(&mut self, run: &RateRun<'_>, url: impl Fn(usize) -> [&'u [u8]; 3]) {
        for i in 0..run.len() {
            self.url.push_parts(url(i));
            self.host.push(run.host);
        }
        extend_short(&mut self.importance, run.importance);
        extend_short(&mut self.change_rate, run.change_rate);
        extend_short(&mut self.complete, run.complete_obs);
        extend_short(&mut self.rate, run.crawl_rate);
        self.capped
            .resize(self.capped.len() + run.len(), run.host_capped);
        extend_short(&mut self.last, run.last_fetch_us);
        extend_short(&mut self.next, run.next_fetch_us);
    }

    /// The row group's columns; the group is left empty, its buffers now the columns'.
    fn finish(&mut self) -> Result<RecordBatch> {
        // rho = p lambda (NeurIPS'19 §4.2): the chance of a fetch on each change notice, only
        // where changes are observed completely
        // (values for every row in one pass, the nulls from the flags: collected as options a row
        // at a time through a builder, this and the last fetches below took 53 instructions a row
        // more on 1M URLs of Zipf hosts)
        self.probability
            .extend(
                (self.rate.iter().zip(&self.change_rate)).map(|(&rate, &change)| {
                    if change > 0.0 {
                        (rate / change).min(1.0)
                    } else {
                        0.0
                    }
                }),
            );
        let probability = Float64Array::new(
            std::mem::take(&mut self.probability).into(),
            Some(nulls(&self.complete)),
        );
        // the seconds between fetches, from the rate here rather than carried beside it from the
        // solving worker (8 of about 84 bytes a row in transit)
        self.interval
            .extend(self.rate.iter().map(|&rate| PerDay(rate).interval().0));
        self.fetched
            .extend(self.last.iter().map(|&t| t != NEVER_FETCHED));
        let last = TimestampMicrosecondArray::new(
            std::mem::take(&mut self.last).into(),
            Some(nulls(&self.fetched)),
        );
        let flags = |v: &[bool]| BooleanArray::new(BooleanBuffer::from(v), None);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.url.finish()?),
            Arc::new(self.host.finish()?),
            Arc::new(Float64Array::from(std::mem::take(&mut self.importance))),
            Arc::new(Float64Array::from(std::mem::take(&mut self.change_rate))),
            Arc::new(flags(&self.complete)),
            Arc::new(Float64Array::from(std::mem::take(&mut self.rate))),
            Arc::new(probability),
            Arc::new(flags(&self.capped)),
            Arc::new(Float64Array::from(std::mem::take(&mut self.interval))),
            Arc::new(last.with_timezone("UTC")),
            Arc::new(
                TimestampMicrosecondArray::from(std::mem::take(&mut self.next))
                    .with_timezone("UTC"),
            ),
        ];
        for v in [&mut self.complete, &mut self.capped, &mut self.fetched] {
            v.clear();
        }
        Ok(RecordBatch::try_new(schema::rates(), columns)?)
    }

    /// Takes back the buffers of `batch`, a row group this group finished and the file has
    /// written, as room for the next row group (a buffer still held elsewhere stays there).
    fn take_back(&mut self, batch: RecordBatch) {
        // each column once the batch no longer holds it, so that ours is its only holder
        let mut columns = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .zip(batch.columns().to_vec())
            .collect::<Vec<_>>();
        drop(batch);
        let mut take = |name: &str| {
            let at = columns.iter().position(|(n, _)| n == name)?;
            Some(columns.swap_remove(at).1)
        };
        if let Some(url) = take("url") {
            self.url.take_back(url);
        }
        if let Some(host) = take("host") {
            self.host.take_back(host);
        }
        let numbers = [
            (&mut self.importance, "importance"),
            (&mut self.change_rate, "change_rate"),
            (&mut self.rate, "crawl_rate"),
            (&mut self.probability, "crawl_probability"),
            (&mut self.interval, "fetch_interval_s"),
        ];
        for (v, name) in numbers {
            if let Some(room) = take(name).and_then(taken_back::<Float64Type>) {
                *v = room;
            }
        }
        for (v, name) in [
            (&mut self.last, "last_fetch_at"),
            (&mut self.next, "next_fetch_at"),
        ] {
            if let Some(room) = take(name).and_then(taken_back::<TimestampMicrosecondType>) {
                *v = room;
            }
        }
    }
}

/// The null buffer of a column whose rows are valid where `valid` is true.
fn nulls(valid: &[bool]) -> NullBuffer {
    NullBuffer::new(BooleanBuffer::from(valid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    /// A run of `host`'s rows whose importance, change rate and crawl rate are all `numbers`,
    /// last and next fetches `times`.
    fn run_of<'a>(
        host: &'a [u8],
        host_capped: bool,
        numbers: &'a [f64],
        complete_obs: &'a [bool],
        times: &'a [i64],
    ) -> RateRun<'a> {
        RateRun {
            host,
            host_capped,
            importance: numbers,
            change_rate: numbers,
            complete_obs,
            crawl_rate: numbers,
            last_fetch_us: times,
            next_fetch_us: times,
        }
    }

    /// The batches of the Parquet file at `path`.
    fn read_back(path: &Path) -> Vec<RecordBatch> {
        let file = std::fs::File::open(path).unwrap();
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    }

    /// Writes `hosts` hosts of `pages` pages each, names of 100 bytes; whether the file's `host`
    /// column has a dictionary.
    fn host_dictionary(hosts: usize, pages: usize) -> bool {
        let name = |h: usize| format!("{h:0>92}.example");
        let size = Size {
            rows: hosts * pages,
            url_bytes: hosts * pages * 110,
            hosts,
            host_bytes: hosts * 100,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rates.parquet");
        let mut w = RatesWriter::create(&path, size, &[]).unwrap();
        let numbers = vec![1.0; pages];
        let times = vec![0; pages];
        let complete = vec![false; pages];
        for h in 0..hosts {
            let host = name(h);
            let run = run_of(host.as_bytes(), false, &numbers, &complete, &times);
            let rests: Vec<String> = (0..pages).map(|i| format!("/{i}")).collect();
            w.write_run(&run, |i| {
                [b"https://", host.as_bytes(), rests[i].as_bytes()]
            })
            .unwrap();
        }
        w.finish().unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let group = reader.metadata().row_group(0);
        let host = group
            .columns()
            .iter()
            .find(|c| c.column_path().string() == "host");
        host.unwrap().dictionary_page_offset().is_some()
    }

    #[test]
    fn a_written_row_group_s_buffers_hold_the_next_and_its_rows_are_the_same() {
        use arrow_array::cast::AsArray;
        // three row groups' worth of rows (the last one short), each row different
        let rows = 2 * ROW_GROUP_ROWS + 1000;
        let size = Size {
            rows,
            url_bytes: rows * 30,
            hosts: 1,
            host_bytes: 9,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rates.parquet");
        let mut w = RatesWriter::create(&path, size, &[]).unwrap();
        let numbers: Vec<f64> = (0..rows).map(|i| 1.0 + i as f64 / 7.0).collect();
        let times: Vec<i64> = (0..rows as i64)
            .map(|i| if i % 3 == 0 { NEVER_FETCHED } else { i })
            .collect();
        let complete: Vec<bool> = (0..rows).map(|i| i % 5 == 0).collect();
        let rests: Vec<String> = (0..rows).map(|i| format!("/page/{i}")).collect();
        let run = run_of(b"a.example", true, &numbers, &complete, &times);
        let url = |i: usize| [&b"https://"[..], b"a.example", rests[i].as_bytes()];
        // the first group, then the buffers it was written from
        w.write_run(&run.rows(0..ROW_GROUP_ROWS), url).unwrap();
        let buffers = |g: &RatesGroup| {
            let numbers = [
                &g.importance,
                &g.change_rate,
                &g.rate,
                &g.probability,
                &g.interval,
            ];
            let times = [&g.last, &g.next];
            let mut at: Vec<usize> = numbers.iter().map(|v| v.as_ptr() as usize).collect();
            at.extend(times.iter().map(|v| v.as_ptr() as usize));
            at.extend([g.url.values_ptr() as usize, g.host.values_ptr() as usize]);
            // every one came back, with room for a whole group
            assert!(numbers.iter().all(|v| v.capacity() >= ROW_GROUP_ROWS));
            assert!(times.iter().all(|v| v.capacity() >= ROW_GROUP_ROWS));
            at
        };
        let first = buffers(&w.group);
        w.write_run(&run.rows(ROW_GROUP_ROWS..rows), |i| url(ROW_GROUP_ROWS + i))
            .unwrap();
        // the third group is being written into the first's buffers
        assert_eq!(buffers(&w.group), first);
        w.finish().unwrap();
        // every row as pushed, whichever buffers held it
        let mut i = 0;
        for batch in read_back(&path) {
            let urls = batch.column_by_name("url").unwrap().as_string::<i32>();
            let rate = batch
                .column_by_name("crawl_rate")
                .unwrap()
                .as_primitive::<Float64Type>();
            let last = batch.column_by_name("last_fetch_at").unwrap();
            for r in 0..batch.num_rows() {
                assert_eq!(urls.value(r), format!("https://a.example/page/{i}"));
                assert_eq!(rate.value(r), numbers[i]);
                assert_eq!(last.is_null(r), times[i] == NEVER_FETCHED, "row {i}");
                i += 1;
            }
        }
        assert_eq!(i, rows);
    }

    #[test]
    fn the_host_column_takes_a_dictionary_only_where_a_row_group_s_hosts_fit_it() {
        // 1.3 MB of names in the one row group: no dictionary; 52 KB: one
        assert!(!host_dictionary(12_500, 2));
        assert!(host_dictionary(500, 50));
    }

    #[test]
    fn the_seconds_between_fetches_are_a_day_over_each_row_s_rate() {
        use arrow_array::cast::AsArray;
        use arrow_array::types::Float64Type;
        let rates = [0.5, 2.0, 3.0, 86_400.0 / 7.0, 1e-3, 0.0];
        let size = Size {
            rows: rates.len(),
            url_bytes: rates.len() * 22,
            hosts: 1,
            host_bytes: 9,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rates.parquet");
        let mut w = RatesWriter::create(&path, size, &[]).unwrap();
        let (ones, times, flags) = (vec![1.0; 6], vec![0; 6], vec![false; 6]);
        let run = RateRun {
            host: b"a.example",
            host_capped: false,
            importance: &ones,
            change_rate: &ones,
            complete_obs: &flags,
            crawl_rate: &rates,
            last_fetch_us: &times,
            next_fetch_us: &times,
        };
        let rests: Vec<String> = (0..rates.len()).map(|i| format!("/{i}")).collect();
        w.write_run(&run, |i| [b"https://", b"a.example", rests[i].as_bytes()])
            .unwrap();
        w.finish().unwrap();
        let mut got = Vec::new();
        for batch in read_back(&path) {
            let column = batch.column_by_name("fetch_interval_s").unwrap();
            got.extend(
                column
                    .as_primitive::<Float64Type>()
                    .values()
                    .iter()
                    .copied(),
            );
        }
        // a rate of 0 is never fetched: no interval
        let want: Vec<f64> = rates
            .iter()
            .map(|&r| if r > 0.0 { 86_400.0 / r } else { f64::INFINITY })
            .collect();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
    }
}
