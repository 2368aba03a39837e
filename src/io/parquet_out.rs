//! Writing Parquet files: ZSTD, bounded row groups, key-value metadata, fsync before returning.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{
    EnabledStatistics, WriterProperties, DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT,
};
use parquet::schema::types::ColumnPath;

/// Rows per row group: large enough for fast scans, small enough for readers to parallelise.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;
/// ZSTD level 1: most of the size win of ZSTD at close to Snappy's speed (10M rows of url, host
/// and two numbers: 253 MiB against Snappy's 336 MiB).
const ZSTD_LEVEL: i32 = 1;

/// Columns of measured or computed doubles, whose low bytes are mostly noise: ZSTD level 1 saved
/// 5-6% of their bytes (7.6 of 8 a value at 100M URLs) for a third of the writer's time. They take
/// ZSTD's fast level instead, which stores noise as is at little cost and still shrinks repeated
/// values (a default importance of 1.0 on every row: 630 bytes for 200K rows, against 1.6 MB
/// uncompressed).
///
/// Nor do they carry min/max statistics: their rows come in the order of their hosts' hashes (the
/// hosts table's in the order of their names), so a page's extremes span nearly all of the
/// column's and let a reader skip nothing, while finding them compared every value twice: 96M of
/// the 5.64G instructions of a run on 1M URLs of Zipf hosts, 110M of 7.90G on 1M hosts, all on
/// the writer threads, which the write phase waits for.
const MEASURED: [&str; 6] = [
    "importance",
    "change_rate",
    "crawl_rate",
    "fetch_interval_s",
    "demand",
    "budget",
];
/// ZSTD's level for [`MEASURED`] columns.
const MEASURED_ZSTD_LEVEL: i32 = -1;

/// Text columns without min/max statistics. URLs are distinct and rows come in the order of their
/// hosts' and URLs' hashes, so a page's smallest and largest URL span nearly all of them and let a
/// reader skip nothing, while finding them compared every URL written against both (1.1% of the
/// CPU of a run on 10M URLs). Host names likewise wherever rows are not in their order (the rates
/// by the hosts' hashes, the rejected rows by file and row: 1.7% of the write phase's CPU on 3.1M
/// hosts); a table keyed by host ([`Writer::create_keyed`]: the hosts table, sorted by name) keeps
/// them.
const UNORDERED_TEXT: [&str; 2] = ["url", "host"];

/// A Parquet file being written batch by batch.
pub struct Writer {
    path: PathBuf,
    inner: ArrowWriter<BufWriter<File>>,
    rows: u64,
}

impl Writer {
    /// Creates `path` for rows of `schema`, with `metadata` in the footer.
    pub fn create(
        path: &Path,
        schema: SchemaRef,
        metadata: &[(String, String)],
        row_group_rows: usize,
    ) -> Result<Writer> {
        Self::open(path, schema, metadata, row_group_rows, None, &[])
    }

    /// [`Self::create`] with the text columns `plain` taking no dictionary: columns whose
    /// distinct values in a row group would outgrow the dictionary's page, where the writer would
    /// hash every value, give up on the dictionary partway through the row group and store the
    /// rest plain (see [`dictionary_fits`]).
    pub fn create_plain(
        path: &Path,
        schema: SchemaRef,
        metadata: &[(String, String)],
        row_group_rows: usize,
        plain: &[&str],
    ) -> Result<Writer> {
        Self::open(path, schema, metadata, row_group_rows, None, plain)
    }

    /// [`Self::create`] for a table of one row per value of column `key` (the hosts table: one
    /// row per host), which therefore takes no dictionary: it could only grow to its page limit
    /// and be dropped, each value hashed on the way (on 3.1M hosts, a third of the hosts table's
    /// encoding).
    pub fn create_keyed(
        path: &Path,
        schema: SchemaRef,
        metadata: &[(String, String)],
        row_group_rows: usize,
        key: &str,
    ) -> Result<Writer> {
        Self::open(path, schema, metadata, row_group_rows, Some(key), &[])
    }

    fn open(
        path: &Path,
        schema: SchemaRef,
        metadata: &[(String, String)],
        row_group_rows: usize,
        key: Option<&str>,
        plain: &[&str],
    ) -> Result<Writer> {
        let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut props = WriterProperties::builder();
        // Dictionaries only where values repeat (hosts, reasons, file names): for URLs and measured
        // numbers the writer would hash every value only to give up on a dictionary that never fits.
        for field in schema.fields() {
            let name = field.name().as_str();
            let repeats = matches!(name, "host" | "reason" | "column" | "file")
                && key != Some(name)
                && !plain.contains(&name);
            props = props.set_column_dictionary_enabled(ColumnPath::from(name), repeats);
            if MEASURED.contains(&name) {
                let fast = Compression::ZSTD(ZstdLevel::try_new(MEASURED_ZSTD_LEVEL)?);
                props = props.set_column_compression(ColumnPath::from(name), fast);
            }
            if (UNORDERED_TEXT.contains(&name) && key != Some(name)) || MEASURED.contains(&name) {
                props = props
                    .set_column_statistics_enabled(ColumnPath::from(name), EnabledStatistics::None);
            }
        }
        let props = props
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_max_row_group_row_count(Some(row_group_rows))
            .set_key_value_metadata(Some(
                metadata
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                    .collect(),
            ))
            .build();
        let inner =
            ArrowWriter::try_new(BufWriter::with_capacity(1 << 20, file), schema, Some(props))
                .with_context(|| format!("writing {}", path.display()))?;
        Ok(Writer {
            path: path.to_path_buf(),
            inner,
            rows: 0,
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        self.inner
            .write(batch)
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Finishes the file and syncs it to disk; returns (rows, bytes).
    pub fn finish(self) -> Result<(u64, u64)> {
        let path = self.path;
        let buffered = self
            .inner
            .into_inner()
            .with_context(|| format!("finishing {}", path.display()))?;
        let file = buffered
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("flushing {}", path.display()))?;
        file.sync_all()
            .with_context(|| format!("syncing {}", path.display()))?;
        Ok((self.rows, file.metadata()?.len()))
    }
}

/// Whether a text column's dictionary holds every distinct value of a row group of
/// `group_rows` rows, for `distinct` values of `bytes` bytes in all spread evenly over `rows`
/// rows (a table whose rows come in runs of one value, as the rates' hosts do).
///
/// Why: the writer stores a dictionary value with a 4-byte length, and stores the rest of a row
/// group plain once the dictionary reaches its page limit ([`DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT`]),
/// having hashed every value up to there. On the host-heavy 10M set (310K hosts a crawler, some
/// 40K a row group) 40 of 82 row groups did so. Runs of one host compress as well plain: ZSTD
/// stores a run as repeats of its first row.
pub fn dictionary_fits(rows: usize, distinct: usize, bytes: usize, group_rows: usize) -> bool {
    let dictionary = (bytes + 4 * distinct) as f64;
    let groups = (rows as f64 / group_rows.max(1) as f64).max(1.0);
    dictionary / groups < DEFAULT_DICTIONARY_PAGE_SIZE_LIMIT as f64
}

/// Writes `batches` of `schema` to `path` in one go; returns (rows, bytes).
pub fn write(
    path: &Path,
    schema: SchemaRef,
    batches: &[RecordBatch],
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let mut w = Writer::create(path, schema, metadata, ROW_GROUP_ROWS)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Float64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use std::sync::Arc;

    /// Compressed bytes of each column of `path`'s first row group, by name.
    fn column_sizes(path: &Path) -> Vec<(String, i64)> {
        let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        let group = reader.metadata().row_group(0);
        group
            .columns()
            .iter()
            .map(|c| (c.column_path().string(), c.compressed_size()))
            .collect()
    }

    #[test]
    fn measured_columns_take_the_fast_level_and_repeated_values_still_shrink() {
        let rows = 100_000;
        // a constant importance (the default on every row), a noisy change rate, URLs
        let importance = Float64Array::from(vec![1.0; rows]);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let change_rate = Float64Array::from_iter_values((0..rows).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // spread over a few octaves, as change rates are: level 1 finds 4% in the exponents
            ((x >> 11) as f64 / (1u64 << 53) as f64 * 8.0 - 4.0).exp()
        }));
        let urls =
            StringArray::from_iter_values((0..rows).map(|i| format!("https://a.example/{i}")));
        let probability = Float64Array::from_iter_values((0..rows).map(|i| i as f64 / rows as f64));
        let schema = Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("importance", DataType::Float64, false),
            Field::new("change_rate", DataType::Float64, false),
            Field::new("crawl_probability", DataType::Float64, false),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(urls),
            Arc::new(importance),
            Arc::new(change_rate),
            Arc::new(probability),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write(&path, schema, &[batch], &[]).unwrap();
        let sizes = column_sizes(&path);
        // URLs and measured numbers carry no min/max (they could skip nothing); other numbers
        // keep theirs
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let group = reader.metadata().row_group(0);
        for (c, name) in [(0, "url"), (1, "importance"), (2, "change_rate")] {
            assert!(
                group.column(c).statistics().is_none(),
                "{name} has statistics"
            );
        }
        assert!(group
            .column(3)
            .statistics()
            .is_some_and(|s| s.min_bytes_opt().is_some()));
        let raw = (rows * 8) as i64;
        assert!(
            sizes[1].1 < raw / 100,
            "a constant column shrinks: {sizes:?}"
        );
        // level 1 wins 4% of these at a cost; the fast level stores them as they are
        assert!(sizes[2].1 >= raw, "noise is not worked on: {sizes:?}");
        assert!(sizes[0].1 < raw / 10, "URLs compress at level 1: {sizes:?}");
    }

    /// Whether `path`'s first column, first row group, stored data pages plain, and whether it
    /// has a dictionary page.
    fn plain_and_dictionary(path: &Path) -> (bool, bool) {
        use parquet::basic::{Encoding, PageType};
        // page encoding statistics as counts, as the page set's reader loads them
        let options = crate::io::host_dictionary::reader_options();
        let metadata = parquet::arrow::arrow_reader::ArrowReaderMetadata::load(
            &File::open(path).unwrap(),
            options,
        )
        .unwrap();
        let column = metadata.metadata().row_group(0).column(0).clone();
        let stats = column
            .page_encoding_stats()
            .expect("page encoding statistics");
        let plain = stats.iter().any(|s| {
            s.page_type == PageType::DATA_PAGE && s.encoding == Encoding::PLAIN && s.count > 0
        });
        (plain, column.dictionary_page_offset().is_some())
    }

    #[test]
    fn a_dictionary_fits_where_the_writer_keeps_it_for_the_whole_row_group() {
        // one row group of 16K rows in runs of one name, names of 200 bytes: runs of 2 give 8K
        // names (1.7 MB of dictionary), runs of 4 give 4K (0.8 MB); the limit is 1 MiB
        let rows = 16 * 1024;
        let schema = Arc::new(Schema::new(vec![Field::new("host", DataType::Utf8, false)]));
        let dir = tempfile::tempdir().unwrap();
        for run in [2, 3, 4, 8] {
            let name = |i: usize| format!("{:0>200}", i / run);
            let hosts = StringArray::from_iter_values((0..rows).map(name));
            let batch =
                RecordBatch::try_new(schema.clone(), vec![Arc::new(hosts) as ArrayRef]).unwrap();
            let path = dir.path().join(format!("{run}.parquet"));
            write(&path, schema.clone(), &[batch], &[]).unwrap();
            let distinct = rows.div_ceil(run);
            let fits = dictionary_fits(rows, distinct, 200 * distinct, rows);
            // the writer fell back to plain pages exactly where the dictionary does not fit
            assert_eq!(plain_and_dictionary(&path), (!fits, true), "runs of {run}");
            assert_eq!(fits, run >= 4, "runs of {run}");
        }
        // the rows of a file in several row groups: a group's share of the names counts
        assert!(!dictionary_fits(1 << 20, 8 * 1024, 200 * 8 * 1024, 1 << 20));
        assert!(dictionary_fits(1 << 20, 8 * 1024, 200 * 8 * 1024, 1 << 19));
        assert!(dictionary_fits(0, 0, 0, ROW_GROUP_ROWS));
    }

    /// A `host` column of 1000 rows naming 10 hosts in turn, and its schema.
    fn ten_hosts() -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(vec![Field::new("host", DataType::Utf8, false)]));
        let hosts =
            StringArray::from_iter_values((0..1000).map(|i| format!("h{}.example", i % 10)));
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(hosts) as ArrayRef]).unwrap();
        (schema, batch)
    }

    #[test]
    fn plain_columns_take_no_dictionary() {
        let (schema, batch) = ten_hosts();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain.parquet");
        let mut w =
            Writer::create_plain(&path, schema.clone(), &[], ROW_GROUP_ROWS, &["host"]).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        assert_eq!(plain_and_dictionary(&path), (true, false));
    }

    #[test]
    fn a_tables_key_takes_no_dictionary_and_keeps_its_statistics_other_hosts_the_reverse() {
        use parquet::basic::Encoding;
        let (schema, batch) = ten_hosts();
        let dir = tempfile::tempdir().unwrap();
        let written = |keyed: bool| {
            let path = dir.path().join(format!("{keyed}.parquet"));
            let mut w = if keyed {
                Writer::create_keyed(&path, schema.clone(), &[], ROW_GROUP_ROWS, "host")
            } else {
                Writer::create(&path, schema.clone(), &[], ROW_GROUP_ROWS)
            }
            .unwrap();
            w.write(&batch).unwrap();
            w.finish().unwrap();
            let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
            let column = reader.metadata().row_group(0).column(0).clone();
            let dictionary = column.encodings().any(|e| e == Encoding::RLE_DICTIONARY);
            let min_max = column
                .statistics()
                .is_some_and(|s| s.min_bytes_opt().is_some());
            (dictionary, min_max)
        };
        // hosts in a table of other rows (the rates): a dictionary, no min/max
        assert_eq!(written(false), (true, false));
        // the hosts table's own column, sorted by name: no dictionary, min/max kept
        assert_eq!(written(true), (false, true));
    }
}
