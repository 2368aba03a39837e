//! Writing a crawl history in the format [`super::history`] reads: what `simulate --learn`'s
//! crawlers saw, for the next night's `run --history`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::columns::Utf8Builder;
use super::parquet_out;

/// Writes `rows` of (url, observed_at_s, changed, complete_obs) as one history file.
pub fn write(path: &Path, rows: &[(String, f64, bool, bool)]) -> Result<()> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("observed_at_s", DataType::Float64, false),
        Field::new("changed", DataType::Boolean, false),
        Field::new("complete_obs", DataType::Boolean, false),
    ]));
    let mut url = Utf8Builder::default();
    for r in rows {
        url.push(r.0.as_bytes());
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(url.finish()?),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(BooleanArray::from(
            rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        )),
        Arc::new(BooleanArray::from(
            rows.iter().map(|r| r.3).collect::<Vec<_>>(),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    parquet_out::write(path, schema, &[batch], &[])?;
    Ok(())
}
