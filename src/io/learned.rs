//! The learned table (`run --history`): one row per URL with evidence, its learned change rate
//! and what it rests on, and its evidence in the window ([`Evidence::to_bytes`]) that tomorrow's
//! run continues from instead of the whole crawl history. The first observation of the history
//! the estimates have seen is in every file's metadata, so that tomorrow's window starts where the
//! whole history's would.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::builder::BinaryBuilder;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, RecordBatch,
    TimestampMicrosecondArray, UInt64Array,
};
use parquet::arrow::ProjectionMask;
use revisit_core::estimate::Evidence;

use super::columns::{open_parquet, text, Utf8Builder};
use super::manifest::Manifest;
use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::publish::MANIFEST;
use super::rates_in::InvalidRate;
use super::schema;

/// The key of the history's first observation (days since the Unix epoch) in the files' metadata.
pub const FIRST_OBSERVATION_KEY: &str = "revisit.history_first_observation_days";
/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// One row of the learned table.
#[derive(Clone, Copy, Debug)]
pub struct LearnedRow<'a> {
    pub url: &'a [u8],
    pub host: &'a [u8],
    /// Changes per day.
    pub change_rate: f64,
    pub complete_obs: bool,
    pub observations: u64,
    pub changes: u64,
    /// Microseconds since the epoch.
    pub last_observed_us: Option<i64>,
    /// [`Evidence::to_bytes`].
    pub evidence: &'a [u8],
}

/// Writes `rows` (in order) as a learned file; returns (rows, bytes written).
pub fn write<'a>(
    path: &Path,
    rows: impl IntoIterator<Item = LearnedRow<'a>>,
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let schema = schema::learned();
    let mut writer = parquet_out::Writer::create(path, schema.clone(), metadata, ROW_GROUP_ROWS)?;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let (mut url, mut host) = (Utf8Builder::default(), Utf8Builder::default());
        let mut evidence = BinaryBuilder::new();
        let (mut rate, mut complete, mut obs, mut changes, mut last) =
            (vec![], vec![], vec![], vec![], vec![]);
        for r in rows.by_ref().take(ROW_GROUP_ROWS) {
            url.push(r.url);
            host.push(r.host);
            rate.push(r.change_rate);
            complete.push(r.complete_obs);
            obs.push(r.observations);
            changes.push(r.changes);
            last.push(r.last_observed_us);
            evidence.append_value(r.evidence);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(url.finish()?),
            Arc::new(host.finish()?),
            Arc::new(Float64Array::from(rate)),
            Arc::new(BooleanArray::from(complete)),
            Arc::new(UInt64Array::from(obs)),
            Arc::new(UInt64Array::from(changes)),
            Arc::new(TimestampMicrosecondArray::from(last).with_timezone("UTC")),
            Arc::new(evidence.finish()),
        ];
        writer.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
    }
    writer.finish()
}

/// The learned table of a published output: its files with their row groups' row counts, and the
/// first observation of the history they learned from (days since the epoch; None: no file, +inf:
/// nothing observed yet).
#[derive(Clone, Debug, Default)]
pub struct LearnedTable {
    pub files: Vec<(PathBuf, Vec<u64>)>,
    pub first_observation: Option<f64>,
}

/// A unit of reading work: one row group of one learned file.
pub type LearnedUnit = super::state_in::StateUnit;

/// Opens the learned table of the published output `dir` (its manifest was checked by the state
/// reader): empty when that run learned nothing.
pub fn open(dir: &Path) -> Result<LearnedTable> {
    let manifest: Manifest = std::fs::read_to_string(dir.join(MANIFEST))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .with_context(|| format!("--previous {}: no readable {MANIFEST}", dir.display()))?;
    let mut table = LearnedTable::default();
    for entry in manifest
        .files
        .iter()
        .filter(|f| f.path.starts_with("learned/"))
    {
        let path = dir.join(&entry.path);
        let builder = open_parquet(&path, "")?;
        let meta = builder.metadata().file_metadata().key_value_metadata();
        // inf: nothing observed yet
        let first = meta
            .and_then(|kv| kv.iter().find(|k| k.key == FIRST_OBSERVATION_KEY))
            .and_then(|k| k.value.as_deref())
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|d| !d.is_nan());
        match (first, table.first_observation) {
            (None, _) => bail!(
                "{}: no {FIRST_OBSERVATION_KEY} in its metadata: not a learned table of revisit",
                path.display()
            ),
            (Some(d), Some(seen)) if d != seen => bail!(
                "{}: {FIRST_OBSERVATION_KEY} {d}, another file of the same output {seen}: an altered output",
                path.display()
            ),
            (Some(d), _) => table.first_observation = Some(d),
        }
        let groups = super::row_groups::row_counts(builder.metadata());
        table.files.push((path, groups));
    }
    Ok(table)
}

/// Every row group of the table, in file order.
pub fn units(t: &LearnedTable) -> Vec<LearnedUnit> {
    super::state_in::row_groups(&t.files)
}

/// Reads one unit: `row(url, host, evidence)` for every row whose evidence decodes, `invalid` for
/// the others. Returns the rows read.
pub fn read_unit(
    t: &LearnedTable,
    unit: LearnedUnit,
    mut row: impl FnMut(&str, &str, Evidence),
    mut invalid: impl FnMut(InvalidRate),
) -> Result<u64> {
    let path = &t.files[unit.file].0;
    let builder = open_parquet(path, "")?;
    let wanted: Vec<usize> = builder
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.name().as_str(), "url" | "host" | "evidence"))
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(vec![unit.row_group])
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| {
            format!(
                "{}: cannot read row group {}",
                path.display(),
                unit.row_group
            )
        })?;
    let mut n = unit.first_row;
    for batch in reader {
        let batch = batch.with_context(|| {
            format!(
                "{}: row group {} (rows from {n}) is unreadable (truncated or corrupt?)",
                path.display(),
                unit.row_group
            )
        })?;
        let missing = |c: &str| anyhow::anyhow!("{}: no column '{c}'", path.display());
        let urls = text(&batch, "url").ok_or_else(|| missing("url"))?;
        let hosts = text(&batch, "host").ok_or_else(|| missing("host"))?;
        let evidence = batch
            .column_by_name("evidence")
            .and_then(|c| c.as_any().downcast_ref::<BinaryArray>())
            .ok_or_else(|| missing("evidence"))?;
        for i in 0..batch.num_rows() {
            let bad = |column: &str| InvalidRate {
                file: path.display().to_string(),
                row: n,
                column: column.to_owned(),
            };
            let e = (!evidence.is_null(i))
                .then(|| Evidence::from_bytes(evidence.value(i)))
                .flatten();
            match (urls.get(i), hosts.get(i), e) {
                (None, ..) => invalid(bad("url")),
                (_, None, _) => invalid(bad("host")),
                (_, _, None) => invalid(bad("evidence")),
                (Some(url), Some(host), Some(e)) => row(url, host, e),
            }
            n += 1;
        }
    }
    Ok(n - unit.first_row)
}
