//! Reading crawl histories: one row per observation of a URL, from Parquet files or CSV files
//! (`.csv`, header row).
//!
//! Columns: `url` (text); the time as `observed_at` (a timestamp; RFC 3339 text in CSV) or
//! `observed_at_s` (seconds since the Unix epoch); `changed` (bool: the page differed from the
//! previous observation; for a URL with complete observations, a row with `changed` true is one
//! change notice); optionally `complete_obs` (bool: the row comes from a feed that reports every
//! change, such as a sitemap or pings) and `host`.
//!
//! A history is read in time slices ([`slices`]): Parquet files whose row groups' statistics give
//! their time range, in time order, overlapping files together; so a log appended night after night
//! is never held whole. Files without statistics (CSV) are read in one slice.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::statistics::Statistics;

use super::columns::{boolean, check_column, number, open_parquet, text, timestamp_us, Kind};
pub use super::rates_in::InvalidRate as InvalidRow;
use crate::time::MICROS_PER_S;
use revisit_core::units::SECONDS_PER_DAY;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

const HINT: &str = "a crawl history needs url (text), observed_at (a timestamp; RFC 3339 text in \
                    CSV) or observed_at_s (seconds since the Unix epoch) and changed (bool); \
                    complete_obs (bool) and host are optional";

/// The time column of a history file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Time {
    /// `observed_at`: a timestamp.
    Stamp,
    /// `observed_at_s`: seconds since the Unix epoch.
    Seconds,
}

impl Time {
    fn column(self) -> &'static str {
        match self {
            Time::Stamp => "observed_at",
            Time::Seconds => "observed_at_s",
        }
    }
}

/// One history file, checked.
#[derive(Clone, Debug)]
pub enum HistoryFile {
    /// A Parquet file: its row groups' row counts, its time column, and the time range its
    /// statistics give (seconds since the epoch; None without statistics).
    Parquet {
        path: PathBuf,
        row_groups: Vec<u64>,
        time: Time,
        range: Option<(f64, f64)>,
    },
    /// A CSV file (one unit of work).
    Csv { path: PathBuf, time: Time },
}

impl HistoryFile {
    pub fn path(&self) -> &Path {
        match self {
            HistoryFile::Parquet { path, .. } | HistoryFile::Csv { path, .. } => path,
        }
    }

    fn range(&self) -> Option<(f64, f64)> {
        match self {
            HistoryFile::Parquet { range, .. } => *range,
            HistoryFile::Csv { .. } => None,
        }
    }
}

/// A unit of reading work: a row group of a Parquet file, or a whole CSV file.
#[derive(Clone, Copy, Debug)]
pub struct HistoryUnit {
    pub file: usize,
    pub part: usize,
    pub first_row: u64,
}

/// One observation of the history.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistoryRow<'a> {
    pub url: &'a str,
    pub host: Option<&'a str>,
    /// Seconds since the Unix epoch.
    pub at_s: f64,
    pub changed: bool,
    pub complete: bool,
}

/// Opens every history file named by `paths` and checks its columns.
pub fn open_all(paths: &[PathBuf]) -> Result<Vec<HistoryFile>> {
    paths.iter().map(|p| open(p)).collect()
}

fn open(path: &Path) -> Result<HistoryFile> {
    if is_csv(path) {
        let mut reader = csv::Reader::from_path(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        let headers = reader
            .headers()
            .with_context(|| format!("{}: cannot read the header row", path.display()))?;
        let has = |c: &str| headers.iter().any(|h| h.trim() == c);
        let time = if has("observed_at") {
            Time::Stamp
        } else {
            Time::Seconds
        };
        if !has("url") || !has(time.column()) || !has("changed") {
            bail!(
                "{}: the header ({}) lacks a column; {HINT}",
                path.display(),
                headers.iter().collect::<Vec<_>>().join(", ")
            );
        }
        return Ok(HistoryFile::Csv {
            path: path.to_path_buf(),
            time,
        });
    }
    let builder = open_parquet(path, "; CSV files must end in .csv")?;
    let schema = builder.schema().clone();
    let time = if schema.field_with_name("observed_at").is_ok() {
        check_column(path, &schema, "observed_at", Kind::Timestamp, true)?;
        Time::Stamp
    } else if check_column(path, &schema, "observed_at_s", Kind::Number, false)? {
        Time::Seconds
    } else {
        bail!(
            "{}: no column observed_at or observed_at_s; {HINT}",
            path.display()
        );
    };
    check_column(path, &schema, "url", Kind::Text, true).context(HINT)?;
    check_column(path, &schema, "changed", Kind::Bool, true).context(HINT)?;
    check_column(path, &schema, "complete_obs", Kind::Bool, false)?;
    check_column(path, &schema, "host", Kind::Text, false)?;
    let meta = builder.metadata();
    let column = builder
        .parquet_schema()
        .columns()
        .iter()
        .position(|c| c.name() == time.column());
    let mut range: Option<(f64, f64)> = Some((f64::INFINITY, f64::NEG_INFINITY));
    for rg in meta.row_groups() {
        let bounds = column.and_then(|c| match rg.column(c).statistics() {
            Some(Statistics::Double(s)) => Some((*s.min_opt()?, *s.max_opt()?)),
            Some(Statistics::Float(s)) => Some((*s.min_opt()? as f64, *s.max_opt()? as f64)),
            Some(Statistics::Int64(s)) => {
                let scale = match time {
                    Time::Stamp => stamp_scale(&schema),
                    Time::Seconds => 1.0,
                };
                Some((*s.min_opt()? as f64 * scale, *s.max_opt()? as f64 * scale))
            }
            Some(Statistics::Int32(s)) if time == Time::Seconds => {
                Some((*s.min_opt()? as f64, *s.max_opt()? as f64))
            }
            _ => None,
        });
        range = match (range, bounds) {
            (Some((lo, hi)), Some((a, b))) => Some((lo.min(a), hi.max(b))),
            _ => None,
        };
    }
    Ok(HistoryFile::Parquet {
        path: path.to_path_buf(),
        row_groups: super::row_groups::row_counts(meta),
        time,
        range,
    })
}

/// Seconds per unit of the file's `observed_at` timestamps.
fn stamp_scale(schema: &arrow_schema::Schema) -> f64 {
    use arrow_schema::{DataType, TimeUnit};
    match schema.field_with_name("observed_at").map(|f| f.data_type()) {
        Ok(DataType::Timestamp(TimeUnit::Second, _)) => 1.0,
        Ok(DataType::Timestamp(TimeUnit::Millisecond, _)) => 1e-3,
        Ok(DataType::Timestamp(TimeUnit::Microsecond, _)) => 1e-6,
        _ => 1e-9,
    }
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// The files of a history grouped into slices to read one after another: in time order, files whose
/// time ranges overlap in one slice, so that every observation of a slice is later than every
/// observation of the slices before it. A file without a range (CSV, or Parquet without
/// statistics) could overlap anything: then every file is one slice.
pub fn slices(files: &[HistoryFile]) -> Vec<Vec<usize>> {
    let mut ranged: Vec<(f64, f64, usize)> = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        match f.range() {
            Some((lo, hi)) if lo <= hi => ranged.push((lo, hi, i)),
            Some(_) => {} // no rows
            None => return vec![(0..files.len()).collect()],
        }
    }
    ranged.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut end = f64::NEG_INFINITY;
    for (lo, hi, i) in ranged {
        match out.last_mut() {
            Some(slice) if lo <= end => slice.push(i),
            _ => out.push(vec![i]),
        }
        end = end.max(hi);
    }
    out
}

/// Every unit of work of `files` (those listed in `which`), in their order.
pub fn units(files: &[HistoryFile], which: &[usize]) -> Vec<HistoryUnit> {
    let mut out = Vec::new();
    for &f in which {
        match &files[f] {
            HistoryFile::Csv { .. } => out.push(HistoryUnit {
                file: f,
                part: 0,
                first_row: 0,
            }),
            HistoryFile::Parquet { row_groups, .. } => out.extend(
                super::row_groups::nonempty(row_groups).map(|(part, first_row)| HistoryUnit {
                    file: f,
                    part,
                    first_row,
                }),
            ),
        }
    }
    out
}

/// Reads one unit: `row` for every usable row, `invalid` (file, row, column) for the others (no
/// url; no time, not finite or before the epoch; no changed flag). Returns the rows read.
pub fn read_unit(
    file: &HistoryFile,
    unit: HistoryUnit,
    mut row: impl FnMut(HistoryRow<'_>),
    mut invalid: impl FnMut(InvalidRow),
) -> Result<u64> {
    let path = file.path();
    let name = path.display().to_string();
    let mut n = unit.first_row;
    let time_column = match file {
        HistoryFile::Parquet { time, .. } | HistoryFile::Csv { time, .. } => time.column(),
    };
    let mut take = |url: Option<&str>,
                    host: Option<&str>,
                    at_s: Option<f64>,
                    changed: Option<bool>,
                    complete: Option<bool>,
                    at: u64| {
        let bad = |column: &str| InvalidRow {
            file: name.clone(),
            row: at,
            column: column.to_owned(),
        };
        match (url.filter(|u| !u.is_empty()), at_s, changed) {
            (None, ..) => invalid(bad("url")),
            (_, None, _) => invalid(bad(time_column)),
            (_, Some(t), _) if !(t.is_finite() && t >= 0.0) => invalid(bad(time_column)),
            (_, _, None) => invalid(bad("changed")),
            (Some(u), Some(t), Some(c)) => row(HistoryRow {
                url: u,
                host: host.filter(|h| !h.trim().is_empty()),
                at_s: t,
                changed: c,
                complete: complete.unwrap_or(false),
            }),
        }
    };
    match file {
        HistoryFile::Csv { path, .. } => {
            let mut reader = csv::Reader::from_path(path)
                .with_context(|| format!("{}: cannot open", path.display()))?;
            let headers = reader.headers()?.clone();
            let at = |c: &str| headers.iter().position(|h| h.trim() == c);
            let (url, stamp, seconds, changed, complete, host) = (
                at("url"),
                at("observed_at"),
                at("observed_at_s"),
                at("changed"),
                at("complete_obs"),
                at("host"),
            );
            for record in reader.records() {
                let record = record.with_context(|| {
                    format!(
                        "{}: row {n} is not valid CSV (quote or field count)",
                        path.display()
                    )
                })?;
                let field = |c: Option<usize>| c.and_then(|c| record.get(c)).map(str::trim);
                let time = match field(stamp).filter(|s| !s.is_empty()) {
                    Some(s) => crate::time::parse_timestamp_us(s)
                        .ok()
                        .map(|us| us as f64 / MICROS_PER_S),
                    None => field(seconds).and_then(|s| s.parse::<f64>().ok()),
                };
                take(
                    field(url),
                    field(host),
                    time,
                    field(changed).and_then(parse_bool),
                    field(complete).and_then(parse_bool),
                    n,
                );
                n += 1;
            }
        }
        HistoryFile::Parquet { path, time, .. } => {
            let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(f)
                .with_context(|| format!("{}: cannot read footer", path.display()))?;
            let wanted: Vec<usize> = builder
                .schema()
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| {
                    let name = f.name().as_str();
                    matches!(name, "url" | "host" | "changed" | "complete_obs")
                        || name == time.column()
                })
                .map(|(i, _)| i)
                .collect();
            let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
            let reader = builder
                .with_projection(mask)
                .with_row_groups(vec![unit.part])
                .with_batch_size(BATCH_ROWS)
                .build()
                .with_context(|| {
                    format!("{}: cannot read row group {}", path.display(), unit.part)
                })?;
            for batch in reader {
                let batch = batch.with_context(|| {
                    format!(
                        "{}: row group {} (rows from {n}) is unreadable (truncated or corrupt?)",
                        path.display(),
                        unit.part
                    )
                })?;
                let missing =
                    |c: &str| anyhow::anyhow!("{}: column '{c}' vanished", path.display());
                let urls = text(&batch, "url").ok_or_else(|| missing("url"))?;
                let hosts = text(&batch, "host");
                let changed = boolean(&batch, "changed").ok_or_else(|| missing("changed"))?;
                let complete = boolean(&batch, "complete_obs");
                let times: Vec<Option<f64>> = match time {
                    Time::Seconds => {
                        let s = number(&batch, "observed_at_s")
                            .ok_or_else(|| missing("observed_at_s"))?;
                        (0..batch.num_rows()).map(|i| s.get(i)).collect()
                    }
                    Time::Stamp => timestamp_us(&batch, "observed_at")
                        .ok_or_else(|| missing("observed_at"))?
                        .into_iter()
                        .map(|us| us.map(|us| us as f64 / MICROS_PER_S))
                        .collect(),
                };
                use arrow_array::Array;
                for (i, &t) in times.iter().enumerate() {
                    take(
                        urls.get(i),
                        hosts.as_ref().and_then(|h| h.get(i)),
                        t,
                        changed.is_valid(i).then(|| changed.value(i)),
                        complete.and_then(|c| c.is_valid(i).then(|| c.value(i))),
                        n,
                    );
                    n += 1;
                }
            }
        }
    }
    Ok(n - unit.first_row)
}

/// true/false, 1/0, yes/no (any case).
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "t" => Some(true),
        "false" | "0" | "no" | "f" => Some(false),
        _ => None,
    }
}

/// Everything a history says about one URL, for the one-process `estimate`.
#[derive(Clone, Debug, Default)]
pub struct UrlHistory {
    /// (days since the epoch, changed, complete), in file order.
    pub observations: Vec<(f64, bool, bool)>,
    /// The host its rows give (the first), if any.
    pub host: Option<String>,
}

/// The histories of every URL in a set of files, read in one process.
#[derive(Debug, Default)]
pub struct History {
    pub by_url: HashMap<String, UrlHistory>,
    /// Rows read, and of those rows unusable; the first unusable one.
    pub rows: u64,
    pub invalid: u64,
    pub first_invalid: Option<InvalidRow>,
    /// Earliest and latest valid observation, days since the epoch.
    pub first_days: f64,
    pub last_days: f64,
}

/// Reads every file of `paths` whole, grouping rows by URL.
pub fn read_all(paths: &[PathBuf]) -> Result<History> {
    let files = open_all(paths)?;
    let mut history = History {
        first_days: f64::INFINITY,
        last_days: f64::NEG_INFINITY,
        ..History::default()
    };
    let all: Vec<usize> = (0..files.len()).collect();
    for unit in units(&files, &all) {
        let (mut invalid, mut first) = (0, None);
        let rows = read_unit(
            &files[unit.file],
            unit,
            |r| {
                let at_days = r.at_s / SECONDS_PER_DAY;
                let h = history.by_url.entry(r.url.to_owned()).or_default();
                h.observations.push((at_days, r.changed, r.complete));
                if h.host.is_none() {
                    h.host = r.host.map(str::to_owned);
                }
                history.first_days = history.first_days.min(at_days);
                history.last_days = history.last_days.max(at_days);
            },
            |bad| {
                invalid += 1;
                first.get_or_insert(bad);
            },
        )?;
        history.rows += rows;
        history.invalid += invalid;
        if history.first_invalid.is_none() {
            history.first_invalid = first;
        }
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_are_read_or_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.csv");
        std::fs::write(
            &path,
            "url,observed_at_s,changed,complete_obs\n\
             http://a.com/x,86400,true,\n\
             http://a.com/x,172800.5,0,no\n\
             ,86400,true,\n\
             http://a.com/y,NaN,true,\n\
             http://a.com/y,-1,true,\n\
             http://a.com/y,5,maybe,\n",
        )
        .unwrap();
        let h = read_all(&[path]).unwrap();
        assert_eq!((h.rows, h.invalid), (6, 4));
        let bad = h.first_invalid.unwrap();
        assert_eq!((bad.row, bad.column.as_str()), (2, "url"));
        assert_eq!(h.by_url["http://a.com/x"].observations.len(), 2);
        assert_eq!((h.first_days, h.last_days), (1.0, 172800.5 / 86400.0));
    }

    #[test]
    fn overlapping_files_share_a_slice_and_slices_run_in_time_order() {
        let file = |lo: f64, hi: f64| HistoryFile::Parquet {
            path: PathBuf::from("x"),
            row_groups: vec![1],
            time: Time::Seconds,
            range: Some((lo, hi)),
        };
        let files = [
            file(20.0, 30.0),
            file(0.0, 10.0),
            file(25.0, 40.0),
            file(41.0, 50.0),
        ];
        assert_eq!(slices(&files), vec![vec![1], vec![0, 2], vec![3]]);
        let mut with_csv = files.to_vec();
        with_csv.push(HistoryFile::Csv {
            path: PathBuf::from("y.csv"),
            time: Time::Seconds,
        });
        assert_eq!(slices(&with_csv), vec![vec![0, 1, 2, 3, 4]]);
    }
}
