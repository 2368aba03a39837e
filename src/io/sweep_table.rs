//! Writing a sweep's points as CSV (for spreadsheets and plotting scripts) and Parquet (for analytics).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::builder::{
    BooleanBuilder, Float64Builder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};

use super::parquet_out::{Writer, ROW_GROUP_ROWS};
use super::schema;
use revisit_core::solve::sweep::SweepPoint;

/// Writes `points` as CSV with a header (columns as in [`schema::sweep`]; an empty cost_harmonic is
/// infinite). Numbers are written in the shortest form that reads back to the same f64.
pub fn write_csv(path: &Path, points: &[SweepPoint]) -> Result<(u64, u64)> {
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?;
    let header: Vec<String> = schema::sweep()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    w.write_record(&header)?;
    for p in points {
        w.write_record([
            p.policy.name().to_owned(),
            p.polite.to_string(),
            p.bandwidth_fraction.to_string(),
            p.bandwidth.to_string(),
            p.bandwidth_used.to_string(),
            p.multiplier.to_string(),
            p.rounds.to_string(),
            p.cost_harmonic.map(|c| c.to_string()).unwrap_or_default(),
            p.cost_binary.to_string(),
            p.cost_fixed_interval.to_string(),
            p.freshness_poisson.to_string(),
            p.freshness_fixed_interval.to_string(),
            p.urls_starved.to_string(),
            p.hosts_capped.to_string(),
        ])?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    let bytes = std::fs::metadata(path)?.len();
    Ok((points.len() as u64, bytes))
}

/// Writes `points` as Parquet with `metadata` in the footer.
pub fn write_parquet(
    path: &Path,
    points: &[SweepPoint],
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let mut policy = StringBuilder::new();
    let mut polite = BooleanBuilder::new();
    let mut numbers: Vec<Float64Builder> = (0..9).map(|_| Float64Builder::new()).collect();
    let mut rounds = UInt32Builder::new();
    let (mut starved, mut capped) = (UInt64Builder::new(), UInt64Builder::new());
    for p in points {
        policy.append_value(p.policy.name());
        polite.append_value(p.polite);
        rounds.append_value(p.rounds);
        starved.append_value(p.urls_starved);
        capped.append_value(p.hosts_capped);
        let values = [
            Some(p.bandwidth_fraction),
            Some(p.bandwidth),
            Some(p.bandwidth_used),
            Some(p.multiplier),
            p.cost_harmonic,
            Some(p.cost_binary),
            Some(p.cost_fixed_interval),
            Some(p.freshness_poisson),
            Some(p.freshness_fixed_interval),
        ];
        for (b, v) in numbers.iter_mut().zip(values) {
            b.append_option(v);
        }
    }
    let mut n = numbers
        .into_iter()
        .map(|mut b| Arc::new(b.finish()) as ArrayRef);
    let mut next = || n.next().context("internal: sweep column count");
    let columns: Vec<ArrayRef> = vec![
        Arc::new(policy.finish()),
        Arc::new(polite.finish()),
        next()?,
        next()?,
        next()?,
        next()?,
        Arc::new(rounds.finish()),
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        Arc::new(starved.finish()),
        Arc::new(capped.finish()),
    ];
    let mut writer = Writer::create(path, schema::sweep(), metadata, ROW_GROUP_ROWS)?;
    writer.write(&RecordBatch::try_new(schema::sweep(), columns)?)?;
    writer.finish()
}
