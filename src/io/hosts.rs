//! The hosts table: each host's politeness delay (robots.txt Crawl-delay or an operator's choice).

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::columns::{check_column, number, text, Kind};
use super::politeness_key::PolitenessKey;
use revisit_core::units::Seconds;

/// Minimum delay between two requests to a host, for the hosts the table names.
pub type HostDelays = HashMap<String, Seconds>;

/// Reads a hosts table (`host` utf8, `min_delay_s` number >= 0; 0 means no limit), its hosts
/// normalised as the pages' politeness keys are.
pub fn read(path: &Path, key: PolitenessKey) -> Result<HostDelays> {
    let f =
        File::open(path).with_context(|| format!("hosts table {}: cannot open", path.display()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).with_context(|| {
        format!(
            "hosts table {}: not a readable Parquet file",
            path.display()
        )
    })?;
    check_column(path, builder.schema(), "host", Kind::Text, true).map_err(|e| {
        anyhow::anyhow!("hosts table: {e:#}")
            .context("a hosts table needs columns host and min_delay_s")
    })?;
    if !check_column(path, builder.schema(), "min_delay_s", Kind::Number, false)? {
        bail!(
            "hosts table {}: no column 'min_delay_s' (the minimum delay between requests, seconds)",
            path.display()
        );
    }
    let reader = builder
        .build()
        .with_context(|| format!("hosts table {}: unreadable", path.display()))?;
    let mut delays = HostDelays::new();
    let mut first_row: HashMap<String, u64> = HashMap::new();
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.with_context(|| {
            format!("hosts table {}: unreadable from row {row}", path.display())
        })?;
        let hosts = text(&batch, "host").context("hosts table: column host")?;
        let delay = number(&batch, "min_delay_s").context("hosts table: column min_delay_s")?;
        for i in 0..batch.num_rows() {
            let Some(host) = hosts.get(i).and_then(|h| key.table_value(h)) else {
                bail!(
                    "hosts table {}: row {row}, column host: {:?} names no host (empty, null, or not a host name)",
                    path.display(),
                    hosts.get(i).unwrap_or("")
                );
            };
            let Some(d) = delay.get(i) else {
                bail!("hosts table {}: row {row}, column min_delay_s: null (give seconds, 0 for no limit)", path.display());
            };
            if !(d.is_finite() && d >= 0.0) {
                bail!("hosts table {}: row {row}, column min_delay_s: {d} is not a delay in seconds >= 0", path.display());
            }
            if let Some(first) = first_row.insert(host.clone(), row) {
                bail!(
                    "hosts table {}: host {host} appears twice (rows {first} and {row}); keep one",
                    path.display()
                );
            }
            delays.insert(host, Seconds(d));
            row += 1;
        }
    }
    Ok(delays)
}
