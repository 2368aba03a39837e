//! Writing the rejected rows: every input row that was not scheduled, with its reason.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};

use super::pages::Rejected;
use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::schema;

/// Writes the rejected rows (sorted by origin), naming their files; returns (rows, bytes written).
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
