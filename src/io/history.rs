//! Reading crawl histories for `revisit estimate`: one row per observation of a URL, from Parquet
//! files or CSV files (`.csv`, header row).
//!
//! Columns: `url` (text), `observed_at_s` (seconds since any fixed epoch, e.g. Unix time),
//! `changed` (bool: the page differed from the previous observation; for a URL with complete
//! observations, a row with `changed` true is one change notice), and optionally `complete_obs`
//! (bool: the row comes from a feed that reports every change, such as a sitemap or pings).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::columns::{boolean, check_column, number, open_parquet, text, Kind};
use revisit_core::estimate::Observation;
use revisit_core::units::SECONDS_PER_DAY;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// Everything the history says about one URL.
#[derive(Clone, Debug, Default)]
pub struct UrlHistory {
    /// In file order (not sorted).
    pub observations: Vec<Observation>,
    /// Some row marks the URL's observations complete.
    pub complete: bool,
}

/// A row that cannot be used: its file, row (data rows from 0) and the column at fault.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InvalidRow {
    pub file: String,
    pub row: u64,
    pub column: String,
}

/// The histories of every URL in a set of files.
#[derive(Debug, Default)]
pub struct History {
    pub by_url: HashMap<String, UrlHistory>,
    /// Rows read, and of those rows unusable (no url, no finite time, no changed flag).
    pub rows: u64,
    pub invalid: u64,
    pub first_invalid: Option<InvalidRow>,
    /// Earliest and latest valid observation, days since the epoch.
    pub first_days: f64,
    pub last_days: f64,
}

impl History {
    fn take(&mut self, file: &Path, row: u64, fields: Fields) {
        self.rows += 1;
        let bad = match fields {
            Fields { url: None, .. } => Some("url"),
            Fields { at_s: None, .. } => Some("observed_at_s"),
            Fields { changed: None, .. } => Some("changed"),
            Fields {
                url: Some(url),
                at_s: Some(at_s),
                changed: Some(changed),
                complete,
            } => {
                let at_days = at_s / SECONDS_PER_DAY;
                let h = self.by_url.entry(url).or_default();
                h.observations.push(Observation { at_days, changed });
                h.complete |= complete;
                self.first_days = self.first_days.min(at_days);
                self.last_days = self.last_days.max(at_days);
                None
            }
        };
        if let Some(column) = bad {
            self.invalid += 1;
            self.first_invalid.get_or_insert_with(|| InvalidRow {
                file: file.display().to_string(),
                row,
                column: column.to_owned(),
            });
        }
    }
}

/// One row's usable fields (None: missing or invalid).
struct Fields {
    url: Option<String>,
    at_s: Option<f64>,
    changed: Option<bool>,
    complete: bool,
}

/// Reads every file of `paths` (Parquet, or CSV by its `.csv` name).
pub fn read_all(paths: &[PathBuf]) -> Result<History> {
    let mut history = History {
        first_days: f64::INFINITY,
        last_days: f64::NEG_INFINITY,
        ..History::default()
    };
    for path in paths {
        if is_csv(path) {
            read_csv(path, &mut history)?;
        } else {
            read_parquet(path, &mut history)?;
        }
    }
    Ok(history)
}

const HINT: &str = "a crawl history needs url (text), observed_at_s (seconds since an epoch) and changed (bool); complete_obs (bool) is optional";

fn read_parquet(path: &Path, history: &mut History) -> Result<()> {
    let builder = open_parquet(path, "; CSV files must end in .csv")?;
    let schema = builder.schema().clone();
    for (column, kind) in [
        ("url", Kind::Text),
        ("observed_at_s", Kind::Number),
        ("changed", Kind::Bool),
    ] {
        if schema.field_with_name(column).is_err() {
            bail!("{}: no column '{column}'; {HINT}", path.display());
        }
        check_column(path, &schema, column, kind, true)?;
    }
    check_column(path, &schema, "complete_obs", Kind::Bool, false)?;
    let reader = builder
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let mut row = 0u64;
    for batch in reader {
        let batch =
            batch.with_context(|| format!("{}: cannot decode row {row}", path.display()))?;
        let (Some(url), Some(at), Some(changed)) = (
            text(&batch, "url"),
            number(&batch, "observed_at_s"),
            boolean(&batch, "changed"),
        ) else {
            bail!("{}: a batch lost its columns", path.display());
        };
        let complete = boolean(&batch, "complete_obs");
        for i in 0..batch.num_rows() {
            use arrow_array::Array;
            let fields = Fields {
                url: url.get(i).filter(|u| !u.is_empty()).map(str::to_owned),
                at_s: at.get(i).filter(|t| t.is_finite()),
                changed: changed.is_valid(i).then(|| changed.value(i)),
                complete: complete.is_some_and(|c| c.is_valid(i) && c.value(i)),
            };
            history.take(path, row, fields);
            row += 1;
        }
    }
    Ok(())
}

fn read_csv(path: &Path, history: &mut History) -> Result<()> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let headers = reader
        .headers()
        .with_context(|| format!("{}: cannot read the header row", path.display()))?
        .clone();
    let at = |c: &str| headers.iter().position(|h| h.trim() == c);
    let (Some(u), Some(t), Some(c)) = (at("url"), at("observed_at_s"), at("changed")) else {
        bail!(
            "{}: the header ({}) lacks a column; {HINT}",
            path.display(),
            headers.iter().collect::<Vec<_>>().join(", ")
        );
    };
    let complete = at("complete_obs");
    for (row, record) in reader.records().enumerate() {
        let record = record.with_context(|| {
            format!(
                "{}: row {row} is not valid CSV (quote or field count)",
                path.display()
            )
        })?;
        let fields = Fields {
            url: record
                .get(u)
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned),
            at_s: record
                .get(t)
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|t| t.is_finite()),
            changed: record.get(c).and_then(parse_bool),
            complete: complete
                .and_then(|k| record.get(k))
                .and_then(parse_bool)
                .unwrap_or(false),
        };
        history.take(path, row as u64, fields);
    }
    Ok(())
}

/// true/false, 1/0, yes/no (any case).
fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "t" => Some(true),
        "false" | "0" | "no" | "f" => Some(false),
        _ => None,
    }
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}
