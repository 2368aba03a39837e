//! Writing the hosts table: one row per host with its crawler, cap, demand and budget.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int32Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use serde::{Deserialize, Serialize};

use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::schema;

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

/// Writes the hosts table (rows already sorted); returns (rows, bytes written).
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
            // no inf in a published column: an unbounded cap or demand is null
            cap.append_option(Some(h.cap).filter(|c| c.is_finite()));
            demand.append_option(Some(h.demand).filter(|d| d.is_finite()));
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
