//! Writing a crawler's rates partition: one row per scheduled URL, as the job hands them over.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::Float64Builder;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, TimestampMicrosecondArray};

use super::columns::Utf8Builder;
use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::schema;

/// One row of a rates table.
#[derive(Clone, Copy, Debug)]
pub struct RateRow<'a> {
    /// The URL's bytes, in pieces (scheme, host, rest) written one after the other.
    pub url: [&'a [u8]; 3],
    pub host: &'a [u8],
    /// Importance as read (the input's column, whatever the solver made of it).
    pub importance: f64,
    /// Changes per day.
    pub change_rate: f64,
    pub complete_obs: bool,
    /// Fetches per day.
    pub crawl_rate: f64,
    pub host_capped: bool,
    /// Seconds between fetches.
    pub fetch_interval_s: f64,
    /// Microseconds since the epoch (None: never fetched).
    pub last_fetch_us: Option<i64>,
    pub next_fetch_us: i64,
}

/// How many rows, and bytes of URL text, a file will hold (to size its row groups once).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Size {
    pub rows: usize,
    pub url_bytes: usize,
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
            writer: parquet_out::Writer::create(path, schema::rates(), metadata, ROW_GROUP_ROWS)?,
            group: RatesGroup::default(),
            left: size.rows,
            mean_url: size.url_bytes as f64 / size.rows.max(1) as f64,
        })
    }

    /// Appends `rows`, in order.
    pub fn write<'a>(&mut self, rows: impl IntoIterator<Item = RateRow<'a>>) -> Result<()> {
        for row in rows {
            if self.group.rows() == 0 {
                let rows = self.left.clamp(1, ROW_GROUP_ROWS);
                // a group of longer URLs than the mean grows once
                let text = (self.mean_url * rows as f64 * 1.05) as usize;
                self.group = RatesGroup::with_capacity(rows, text, text / 2);
            }
            self.group.push(&row);
            if self.group.rows() == ROW_GROUP_ROWS {
                self.left = self.left.saturating_sub(ROW_GROUP_ROWS);
                self.writer
                    .write(&std::mem::take(&mut self.group).finish()?)?;
            }
        }
        Ok(())
    }

    /// Writes the last row group and finishes the file; returns (rows, bytes written).
    pub fn finish(mut self) -> Result<(u64, u64)> {
        if self.group.rows() > 0 {
            self.writer
                .write(&std::mem::take(&mut self.group).finish()?)?;
        }
        self.writer.finish()
    }
}

/// The columns of one row group of a rates file, sized up front.
#[derive(Default)]
struct RatesGroup {
    url: Utf8Builder,
    host: Utf8Builder,
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    complete: Vec<bool>,
    rate: Vec<f64>,
    probability: Float64Builder,
    capped: Vec<bool>,
    interval: Vec<f64>,
    last: Vec<Option<i64>>,
    next: Vec<i64>,
}

impl RatesGroup {
    fn with_capacity(rows: usize, url_text: usize, host_text: usize) -> Self {
        RatesGroup {
            url: Utf8Builder::with_capacity(rows, url_text),
            host: Utf8Builder::with_capacity(rows, host_text),
            importance: Vec::with_capacity(rows),
            change_rate: Vec::with_capacity(rows),
            complete: Vec::with_capacity(rows),
            rate: Vec::with_capacity(rows),
            probability: Float64Builder::with_capacity(rows),
            capped: Vec::with_capacity(rows),
            interval: Vec::with_capacity(rows),
            last: Vec::with_capacity(rows),
            next: Vec::with_capacity(rows),
        }
    }

    fn rows(&self) -> usize {
        self.rate.len()
    }

    fn push(&mut self, r: &RateRow) {
        self.url.push_parts(r.url);
        self.host.push(r.host);
        self.importance.push(r.importance);
        self.change_rate.push(r.change_rate);
        self.complete.push(r.complete_obs);
        self.rate.push(r.crawl_rate);
        if r.complete_obs {
            // rho = p lambda (NeurIPS'19 §4.2): the chance of a fetch on each change notice
            self.probability.append_value(if r.change_rate > 0.0 {
                (r.crawl_rate / r.change_rate).min(1.0)
            } else {
                0.0
            });
        } else {
            self.probability.append_null();
        }
        self.capped.push(r.host_capped);
        self.interval.push(r.fetch_interval_s);
        self.last.push(r.last_fetch_us);
        self.next.push(r.next_fetch_us);
    }

    fn finish(mut self) -> Result<RecordBatch> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.url.finish()?),
            Arc::new(self.host.finish()?),
            Arc::new(Float64Array::from(self.importance)),
            Arc::new(Float64Array::from(self.change_rate)),
            Arc::new(BooleanArray::from(self.complete)),
            Arc::new(Float64Array::from(self.rate)),
            Arc::new(self.probability.finish()),
            Arc::new(BooleanArray::from(self.capped)),
            Arc::new(Float64Array::from(self.interval)),
            Arc::new(TimestampMicrosecondArray::from(self.last).with_timezone("UTC")),
            Arc::new(TimestampMicrosecondArray::from(self.next).with_timezone("UTC")),
        ];
        Ok(RecordBatch::try_new(schema::rates(), columns)?)
    }
}
