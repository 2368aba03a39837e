//! The output tables built from the solved rows: rates per crawler, hosts, rejected rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray};
use arrow_buffer::{Buffer, OffsetBuffer};
use serde::{Deserialize, Serialize};

use crate::io::pages::Rejected;
use crate::io::parquet_out::{self, ROW_GROUP_ROWS};
use crate::io::rated::{HostRun, RatedBatch};
use crate::io::schema;

/// Writes the runs `order` (batch, run in batch) of `batches` as a rates file; returns (rows, bytes).
pub fn write_rates(
    path: &Path,
    batches: &[RatedBatch],
    order: &[(u32, u32)],
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let mut writer = parquet_out::Writer::create(path, schema::rates(), metadata, ROW_GROUP_ROWS)?;
    let total_rows: usize = batches.iter().map(RatedBatch::len).sum();
    let total_text: usize = batches.iter().map(RatedBatch::text_bytes).sum();
    let mut group = RatesGroup::default();
    let mut left = total_rows;
    for &(b, k) in order {
        let batch = &batches[b as usize];
        let run = &batch.runs[k as usize];
        for r in batch.run_rows(k as usize) {
            if group.rows() == 0 {
                let rows = left.min(ROW_GROUP_ROWS);
                // URL bytes of the group, from the mean length; a longer group grows once
                let text = (total_text as f64 / total_rows as f64 * rows as f64 * 1.05) as usize;
                group = RatesGroup::with_capacity(rows, text, text / 2);
            }
            group.push(batch, r, run);
            if group.rows() == ROW_GROUP_ROWS {
                left -= group.rows();
                writer.write(&std::mem::take(&mut group).finish()?)?;
            }
        }
    }
    if group.rows() > 0 {
        writer.write(&group.finish()?)?;
    }
    writer.finish()
}

/// The columns of one row group of a rates file, sized up front.
#[derive(Default)]
struct RatesGroup {
    url: Utf8Column,
    host: Utf8Column,
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    complete: Vec<bool>,
    rate: Vec<f64>,
    probability: Float64Builder,
    capped: Vec<bool>,
}

impl RatesGroup {
    fn with_capacity(rows: usize, url_text: usize, host_text: usize) -> Self {
        RatesGroup {
            url: Utf8Column::with_capacity(rows, url_text),
            host: Utf8Column::with_capacity(rows, host_text),
            importance: Vec::with_capacity(rows),
            change_rate: Vec::with_capacity(rows),
            complete: Vec::with_capacity(rows),
            rate: Vec::with_capacity(rows),
            probability: Float64Builder::with_capacity(rows),
            capped: Vec::with_capacity(rows),
        }
    }

    fn rows(&self) -> usize {
        self.rate.len()
    }

    fn push(&mut self, batch: &RatedBatch, r: usize, run: &HostRun) {
        self.url.push(batch.url_bytes(r));
        self.host.push(run.name.as_bytes());
        let (lambda, rate, complete) = (
            batch.change_rate[r],
            batch.crawl_rate[r],
            batch.complete_obs[r],
        );
        self.importance.push(batch.importance[r]);
        self.change_rate.push(lambda);
        self.complete.push(complete);
        self.rate.push(rate);
        if complete {
            // rho = p lambda (NeurIPS'19 §4.2): the chance of a fetch on each change notice
            self.probability.append_value(if lambda > 0.0 {
                (rate / lambda).min(1.0)
            } else {
                0.0
            });
        } else {
            self.probability.append_null();
        }
        self.capped.push(run.capped);
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
        ];
        Ok(RecordBatch::try_new(schema::rates(), columns)?)
    }
}

/// A UTF-8 column assembled from bytes and validated once, in bulk (not row by row).
#[derive(Default)]
struct Utf8Column {
    values: Vec<u8>,
    lengths: Vec<usize>,
}

impl Utf8Column {
    fn with_capacity(rows: usize, bytes: usize) -> Self {
        Utf8Column {
            values: Vec::with_capacity(bytes),
            lengths: Vec::with_capacity(rows),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.values.extend_from_slice(bytes);
        self.lengths.push(bytes.len());
    }

    fn finish(self) -> Result<StringArray> {
        let offsets = OffsetBuffer::<i32>::from_lengths(self.lengths);
        Ok(StringArray::try_new(
            offsets,
            Buffer::from_vec(self.values),
            None,
        )?)
    }
}

/// One row of the hosts table (cap, demand and budget in fetches per horizon).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostRow {
    pub host: String,
    pub crawler: u32,
    pub cap: f64,
    pub demand: f64,
    pub budget: f64,
    pub capped: bool,
    pub multiplier: f64,
}

/// Writes the hosts table (rows already sorted).
pub fn write_hosts(
    path: &Path,
    rows: &[HostRow],
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let mut writer = parquet_out::Writer::create(path, schema::hosts(), metadata, ROW_GROUP_ROWS)?;
    for chunk in rows.chunks(ROW_GROUP_ROWS) {
        let mut host = StringBuilder::new();
        let mut crawler = Int32Builder::new();
        let (mut cap, mut demand, mut budget, mut mult) = (
            Float64Builder::new(),
            Float64Builder::new(),
            Float64Builder::new(),
            Float64Builder::new(),
        );
        let mut capped = BooleanBuilder::new();
        for h in chunk {
            host.append_value(&h.host);
            crawler.append_value(h.crawler as i32);
            cap.append_value(h.cap);
            demand.append_value(h.demand);
            budget.append_value(h.budget);
            capped.append_value(h.capped);
            mult.append_value(h.multiplier);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(host.finish()),
            Arc::new(crawler.finish()),
            Arc::new(cap.finish()),
            Arc::new(demand.finish()),
            Arc::new(budget.finish()),
            Arc::new(capped.finish()),
            Arc::new(mult.finish()),
        ];
        writer.write(&RecordBatch::try_new(schema::hosts(), columns)?)?;
    }
    writer.finish()
}

/// Writes the rejected rows (sorted by origin), naming their files.
pub fn write_rejected(
    path: &Path,
    rows: &[Rejected],
    files: &[PathBuf],
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let mut writer =
        parquet_out::Writer::create(path, schema::rejected(), metadata, ROW_GROUP_ROWS)?;
    for chunk in rows.chunks(ROW_GROUP_ROWS) {
        let (mut file, mut column, mut reason, mut url, mut host) = (
            StringBuilder::new(),
            StringBuilder::new(),
            StringBuilder::new(),
            StringBuilder::new(),
            StringBuilder::new(),
        );
        let mut row = Int64Builder::new();
        let (mut mu, mut lambda) = (Float64Builder::new(), Float64Builder::new());
        for r in chunk {
            file.append_value(
                files
                    .get(r.origin.file as usize)
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            );
            row.append_value(r.origin.row as i64);
            column.append_value(r.reason.column());
            reason.append_value(r.reason.name());
            url.append_option(r.url.as_deref());
            host.append_option(r.host.as_deref());
            mu.append_option(r.importance);
            lambda.append_option(r.change_rate);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(file.finish()),
            Arc::new(row.finish()),
            Arc::new(column.finish()),
            Arc::new(reason.finish()),
            Arc::new(url.finish()),
            Arc::new(host.finish()),
            Arc::new(mu.finish()),
            Arc::new(lambda.finish()),
        ];
        writer.write(&RecordBatch::try_new(schema::rejected(), columns)?)?;
    }
    writer.finish()
}

/// Writes a crawler's visits table: `fetches` (at_s, host, page) in time order, with the `at`
/// timestamp column when the horizon start is known (microseconds since the epoch).
pub fn write_visits(
    path: &Path,
    hosts: &[crate::job::visits::VisitHost],
    fetches: &[(f64, u32, u32)],
    start_us: Option<i64>,
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let schema = schema::visits(start_us.is_some());
    let mut writer = parquet_out::Writer::create(path, schema.clone(), metadata, ROW_GROUP_ROWS)?;
    for chunk in fetches.chunks(ROW_GROUP_ROWS) {
        let (mut url, mut host) = (Utf8Column::default(), Utf8Column::default());
        let mut at_s = Float64Builder::new();
        let mut at = Vec::with_capacity(chunk.len());
        for &(t, h, page) in chunk {
            let hh = &hosts[h as usize];
            at_s.append_value(t);
            url.push(hh.urls[page as usize].as_bytes());
            host.push(hh.name.as_bytes());
            if let Some(s) = start_us {
                at.push(s + (t * 1e6).round() as i64);
            }
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(at_s.finish()),
            Arc::new(url.finish()?),
            Arc::new(host.finish()?),
        ];
        if start_us.is_some() {
            columns.push(Arc::new(
                arrow_array::TimestampMicrosecondArray::from(at).with_timezone("UTC"),
            ));
        }
        writer.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
    }
    writer.finish()
}
