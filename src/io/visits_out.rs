//! Writing a crawler's visits table: one row per fetch of its timetable, in time order.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::Float64Builder;
use arrow_array::{ArrayRef, RecordBatch, TimestampMicrosecondArray};

use super::columns::Utf8Builder;
use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::schema;

/// One fetch of a timetable.
#[derive(Clone, Copy, Debug)]
pub struct VisitRow<'a> {
    /// Seconds from the horizon start.
    pub at_s: f64,
    pub url: &'a [u8],
    pub host: &'a [u8],
}

/// Writes `rows` (in time order) as a visits table, `fetch_at` counted from the night's start
/// (microseconds since the epoch); returns (rows, bytes written).
pub fn write_visits<'a>(
    path: &Path,
    rows: impl IntoIterator<Item = VisitRow<'a>>,
    start_us: i64,
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let schema = schema::visits();
    let mut writer = parquet_out::Writer::create(path, schema.clone(), metadata, ROW_GROUP_ROWS)?;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let (mut url, mut host) = (Utf8Builder::default(), Utf8Builder::default());
        let mut at_s = Float64Builder::new();
        let mut at = Vec::new();
        for row in rows.by_ref().take(ROW_GROUP_ROWS) {
            at_s.append_value(row.at_s);
            url.push(row.url);
            host.push(row.host);
            at.push(start_us + (row.at_s * 1e6).round() as i64);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(at_s.finish()),
            Arc::new(url.finish()?),
            Arc::new(host.finish()?),
            Arc::new(TimestampMicrosecondArray::from(at).with_timezone("UTC")),
        ];
        writer.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
    }
    writer.finish()
}
