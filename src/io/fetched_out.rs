//! Writing a fetch log (the format `run --fetched` reads): one row per fetch, `url`, `fetched_at`
//! (UTC, microseconds) and `ok`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::{ArrayRef, BooleanArray, RecordBatch, TimestampMicrosecondArray};

use super::columns::Utf8Builder;
use super::{parquet_out, schema};

/// Writes `fetches` (url, microseconds since the epoch, ok) to `path`; returns (rows, bytes).
pub fn write(path: &Path, fetches: &[(String, i64, bool)]) -> Result<(u64, u64)> {
    let mut url =
        Utf8Builder::with_capacity(fetches.len(), fetches.iter().map(|f| f.0.len()).sum());
    for f in fetches {
        url.push(f.0.as_bytes());
    }
    let at = TimestampMicrosecondArray::from(fetches.iter().map(|f| f.1).collect::<Vec<_>>())
        .with_timezone("UTC");
    let ok = BooleanArray::from(fetches.iter().map(|f| f.2).collect::<Vec<_>>());
    let columns: Vec<ArrayRef> = vec![Arc::new(url.finish()?), Arc::new(at), Arc::new(ok)];
    let batch = RecordBatch::try_new(schema::fetched(), columns)?;
    parquet_out::write(path, schema::fetched(), &[batch], &[])
}
