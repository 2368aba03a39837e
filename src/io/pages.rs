//! Reading page sets: footers and headers up front (so a bad file fails before any work), then row
//! groups (and whole text files) as units of work spread over workers, each row validated into a
//! page or a rejection. Parquet, CSV, TSV and seed lists are read into the same columns and
//! validated alike; a file without `importance` or `change_rate` gives its rows the defaults
//! ([`Defaults`]).

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use serde::{Deserialize, Serialize};

use super::columns::{boolean, check_column, number, open_parquet, text, Kind};
use super::host_dictionary::{self, HostKeys, HostToken, RowKey};
use super::host_name::is_blank;
use super::page_numbers::{NumberColumns, PageNumbers};
use super::page_text::{self, TextColumns, TextFormat};
use super::politeness_key::PolitenessKey;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// One input file, checked: its path, format, size, and the row counts of its row groups.
#[derive(Clone, Debug)]
pub struct PageFile {
    pub path: PathBuf,
    /// Parquet (None) or a text format, with the columns its header names.
    pub text: Option<(TextFormat, TextColumns)>,
    /// Size of the file, bytes.
    pub bytes: u64,
    /// Row counts of a Parquet file's row groups (a text file is one unit of unknown length).
    pub row_groups: Vec<u64>,
    /// Whether the file has a `host` column (else hosts come from the URLs).
    pub has_host: bool,
    /// Whether the file has a `complete_obs` column (else every page is incomplete).
    pub has_complete: bool,
    /// Whether the file has `min_interval_s` or `max_interval_s` columns (per-URL refetch bounds).
    pub has_intervals: bool,
    /// The politeness key of its rows.
    pub key: PolitenessKey,
}

impl PageFile {
    /// The format's name, for summaries: parquet, csv, tsv or seed list.
    pub fn format(&self) -> &'static str {
        self.text.as_ref().map_or("parquet", |t| t.0.name())
    }
}

/// What a row without an importance or a change rate takes.
///
/// A file without the column gives every row the default; a null in a file that has the column
/// is a missing value, rejected unless the default was asked for explicitly (`*_fills_nulls`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Defaults {
    /// Importance (relative weight > 0).
    pub importance: f64,
    pub importance_fills_nulls: bool,
    /// Change rate, changes per day (>= 0).
    pub change_rate: f64,
    pub change_rate_fills_nulls: bool,
}

/// Rows of one unit: read, and of the valid ones those that took a default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitCounts {
    pub rows: u64,
    pub default_importance: u64,
    pub default_change_rate: u64,
}

/// Where an input row came from: its file (index into the sorted input list) and row in that file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Origin {
    pub file: u32,
    pub row: u64,
}

/// A unit of reading work: one row group of one Parquet file, or one text file.
#[derive(Clone, Copy, Debug)]
pub struct Unit {
    pub file: u32,
    pub row_group: usize,
    /// Row number (in its file) of the row group's first row.
    pub first_row: u64,
    /// Rows of the row group read (None: a text file, counted as it is read).
    pub rows: Option<u64>,
}

impl Unit {
    /// The unit of this row group's first `rows` rows at most (a text file's stays whole).
    pub fn head(self, rows: u64) -> Unit {
        Unit {
            rows: self.rows.map(|r| r.min(rows)),
            ..self
        }
    }
}

/// Why an input row was not scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Reason {
    UrlMissing,
    HostUnresolvable,
    HostInvalid,
    PolitenessKeyMissing,
    ImportanceMissing,
    ImportanceInvalid,
    ChangeRateMissing,
    ChangeRateInvalid,
    MinIntervalInvalid,
    MaxIntervalInvalid,
    DuplicateUrl,
}

impl Reason {
    /// Every reason, in report order.
    pub const ALL: [Reason; 11] = [
        Reason::UrlMissing,
        Reason::HostUnresolvable,
        Reason::HostInvalid,
        Reason::PolitenessKeyMissing,
        Reason::ImportanceMissing,
        Reason::ImportanceInvalid,
        Reason::ChangeRateMissing,
        Reason::ChangeRateInvalid,
        Reason::MinIntervalInvalid,
        Reason::MaxIntervalInvalid,
        Reason::DuplicateUrl,
    ];

    /// The name used in summaries and the rejected table.
    pub fn name(self) -> &'static str {
        match self {
            Reason::UrlMissing => "url_missing",
            Reason::HostUnresolvable => "host_unresolvable",
            Reason::HostInvalid => "host_invalid",
            Reason::PolitenessKeyMissing => "politeness_key_missing",
            Reason::ImportanceMissing => "importance_missing",
            Reason::ImportanceInvalid => "importance_not_positive_finite",
            Reason::ChangeRateMissing => "change_rate_missing",
            Reason::ChangeRateInvalid => "change_rate_negative_or_not_finite",
            Reason::MinIntervalInvalid => "min_interval_not_positive_finite",
            Reason::MaxIntervalInvalid => "max_interval_not_positive_finite_or_below_min",
            Reason::DuplicateUrl => "duplicate_url",
        }
    }

    /// The input column at fault.
    pub fn column(self) -> &'static str {
        match self {
            Reason::UrlMissing | Reason::DuplicateUrl => "url",
            Reason::HostUnresolvable | Reason::HostInvalid => "host",
            Reason::PolitenessKeyMissing => super::politeness_key::IP_COLUMN,
            Reason::ImportanceMissing | Reason::ImportanceInvalid => "importance",
            Reason::ChangeRateMissing | Reason::ChangeRateInvalid => "change_rate",
            Reason::MinIntervalInvalid => "min_interval_s",
            Reason::MaxIntervalInvalid => "max_interval_s",
        }
    }
}

/// A rejected input row with whatever values it had.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Rejected {
    pub origin: Origin,
    pub reason: Reason,
    pub url: Option<String>,
    pub host: Option<String>,
    pub importance: Option<f64>,
    pub change_rate: Option<f64>,
}

/// A valid page row, borrowed from the decoded batch.
#[derive(Clone, Copy)]
pub struct PageRow<'a> {
    pub url: &'a str,
    /// The politeness key.
    pub host: &'a str,
    /// Whether the key is the one the URL alone gives ([`PolitenessKey::is_urls_own`]): only a row
    /// whose key is not can list its URL under another host.
    pub key_is_urls_own: bool,
    pub importance: f64,
    pub change_rate: f64,
    pub complete_obs: bool,
    /// The URL's own refetch-interval bounds, seconds (NaN: none).
    pub min_interval_s: f64,
    pub max_interval_s: f64,
    pub origin: Origin,
    /// Set when the key came from a host dictionary's value: rows of equal tokens have equal keys.
    pub host_token: Option<HostToken>,
}

/// Opens every input file's footer and checks its schema (with the column `key` needs); fails on
/// the first unreadable file.
pub fn open_all(paths: &[PathBuf], key: PolitenessKey) -> Result<Vec<PageFile>> {
    paths.iter().map(|p| open(p, key)).collect()
}

fn open(path: &Path, key: PolitenessKey) -> Result<PageFile> {
    let bytes = std::fs::metadata(path)
        .with_context(|| format!("{}: cannot open", path.display()))?
        .len();
    if let Some(format) = TextFormat::of(path) {
        let columns = page_text::open(path, format)?;
        if let Some(column) = key.column() {
            anyhow::bail!(
                "{}: --politeness-key ip-column reads the `{column}` column of Parquet page sets; \
                 give this one as Parquet",
                path.display()
            );
        }
        return Ok(PageFile {
            path: path.to_path_buf(),
            bytes,
            row_groups: Vec::new(),
            has_host: columns.has("host"),
            has_complete: columns.has("complete_obs"),
            has_intervals: false,
            key,
            text: Some((format, columns)),
        });
    }
    let builder = open_parquet(
        path,
        "; re-export it or leave it out (CSV and TSV page sets must end in .csv or .tsv, seed lists in .txt)",
    )?;
    let schema = builder.schema();
    check_column(path, schema, "url", Kind::Text, true)?;
    check_column(path, schema, "importance", Kind::Number, false)?;
    check_column(path, schema, "change_rate", Kind::Number, false)?;
    let has_host = check_column(path, schema, "host", Kind::Text, false)?;
    let has_complete = check_column(path, schema, "complete_obs", Kind::Bool, false)?;
    let has_min = check_column(path, schema, "min_interval_s", Kind::Number, false)?;
    let has_max = check_column(path, schema, "max_interval_s", Kind::Number, false)?;
    if let Some(column) = key.column() {
        check_column(path, schema, column, Kind::Text, true)?;
    }
    let row_groups = super::row_groups::row_counts(builder.metadata());
    Ok(PageFile {
        path: path.to_path_buf(),
        text: None,
        bytes,
        row_groups,
        has_host,
        has_complete,
        has_intervals: has_min || has_max,
        key,
    })
}

/// Bytes a row of a text page set is taken to hold when its rows are estimated (a URL, a host and
/// two numbers; fewer bytes than most rows take, so the estimate errs high).
const TEXT_BYTES_PER_ROW: u64 = 64;

/// The rows `files` hold: Parquet's counts, and for a text file its size over
/// [`TEXT_BYTES_PER_ROW`]. An estimate to plan work by, never a count.
pub fn rows_estimate(files: &[PageFile]) -> u64 {
    files
        .iter()
        .map(|f| match f.text {
            Some(_) => f.bytes.div_ceil(TEXT_BYTES_PER_ROW),
            None => f.row_groups.iter().sum(),
        })
        .sum()
}

/// All row groups of all files (and every text file whole), in file order.
pub fn units(files: &[PageFile]) -> Vec<Unit> {
    let mut out = Vec::new();
    for (f, file) in files.iter().enumerate() {
        if file.text.is_some() {
            out.push(Unit {
                file: f as u32,
                row_group: 0,
                first_row: 0,
                rows: None,
            });
            continue;
        }
        out.extend(
            super::row_groups::nonempty(&file.row_groups).map(|(g, first_row)| Unit {
                file: f as u32,
                row_group: g,
                first_row,
                rows: Some(file.row_groups[g]),
            }),
        );
    }
    out
}

/// Valid rows handed over at a time, at most: enough for a caller to look a few rows ahead (to
/// ask for what each row's host needs while the rows before it are handled), with nothing copied
/// (the rows borrow the reader's batch).
pub const CHUNK_ROWS: usize = 64;

/// Reads one unit, calling `pages` with its valid rows in order, up to [`CHUNK_ROWS`] at a time,
/// and `reject` for every invalid one; returns its row count and how many valid rows took a
/// default.
pub fn read_unit(
    file: &PageFile,
    unit: Unit,
    defaults: &Defaults,
    mut pages: impl FnMut(&[PageRow<'_>]),
    mut reject: impl FnMut(Rejected),
) -> Result<UnitCounts> {
    let path = &file.path;
    let mut counts = UnitCounts::default();
    let mut row = unit.first_row;
    let mut host_keys = HostKeys::default();
    let mut numbers = PageNumbers::default();
    let mut rows = |batch: &RecordBatch, row: u64| {
        read_batch(
            path,
            file.key,
            unit.file,
            batch,
            row,
            defaults,
            &mut host_keys,
            &mut numbers,
            &mut counts,
            &mut pages,
            &mut reject,
        )
    };
    if let Some((format, columns)) = &file.text {
        page_text::read(path, *format, columns, BATCH_ROWS, |batch| {
            row = rows(&batch, row)?;
            Ok(())
        })?;
    } else {
        for batch in parquet_batches(path, unit, file.key)? {
            let batch = batch.with_context(|| {
                format!(
                    "{}: row group {} (rows from {}) is unreadable (truncated or corrupt?)",
                    path.display(),
                    unit.row_group,
                    row
                )
            })?;
            row = rows(&batch, row)?;
        }
    }
    counts.rows = row - unit.first_row;
    Ok(counts)
}

/// The page columns of one row group of a Parquet page file, batch by batch.
fn parquet_batches(
    path: &Path,
    unit: Unit,
    key: PolitenessKey,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let metadata = ArrowReaderMetadata::load(&f, host_dictionary::reader_options())
        .with_context(|| format!("{}: cannot read footer", path.display()))?;
    let metadata = host_dictionary::hinted(metadata, unit.row_group, key);
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(f, metadata);
    let wanted: Vec<usize> = builder
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            matches!(
                f.name().as_str(),
                "url"
                    | "host"
                    | "importance"
                    | "change_rate"
                    | "complete_obs"
                    | "min_interval_s"
                    | "max_interval_s"
            ) || Some(f.name().as_str()) == key.column()
        })
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
    let builder = builder
        .with_projection(mask)
        .with_row_groups(vec![unit.row_group])
        .with_batch_size(BATCH_ROWS);
    // a unit of the head of its row group ends there: the pages past it are not decoded
    let builder = match unit.rows {
        Some(rows) => builder.with_limit(rows as usize),
        None => builder,
    };
    builder.build().with_context(|| {
        format!(
            "{}: cannot read row group {}",
            path.display(),
            unit.row_group
        )
    })
}

/// Validates the rows of `batch` (the first is row `row` of file `file`); returns the next row.
#[allow(clippy::too_many_arguments)]
fn read_batch(
    path: &Path,
    key: PolitenessKey,
    file: u32,
    batch: &RecordBatch,
    mut row: u64,
    defaults: &Defaults,
    host_keys: &mut HostKeys,
    numbers: &mut PageNumbers,
    counts: &mut UnitCounts,
    pages: &mut impl FnMut(&[PageRow<'_>]),
    reject: &mut impl FnMut(Rejected),
) -> Result<u64> {
    let missing =
        |c: &str| anyhow::anyhow!("{}: column '{c}' vanished from a row group", path.display());
    let urls = text(batch, "url").ok_or_else(|| missing("url"))?;
    let hosts = text(batch, "host");
    let importance = number(batch, "importance");
    let change_rate = number(batch, "change_rate");
    let complete = boolean(batch, "complete_obs");
    let min_interval = number(batch, "min_interval_s");
    let max_interval = number(batch, "max_interval_s");
    let ips = key.column().and_then(|c| text(batch, c));
    let known = hosts
        .as_ref()
        .and_then(|h| Some((h, host_keys.of(h, key)?)));
    numbers.check(
        batch.num_rows(),
        NumberColumns {
            importance: importance.as_ref(),
            change_rate: change_rate.as_ref(),
            min_interval_s: min_interval.as_ref(),
            max_interval_s: max_interval.as_ref(),
        },
        defaults,
    );
    let mut chunk = Chunk::default();
    for i in 0..batch.num_rows() {
        let origin = Origin { file, row };
        row += 1;
        let url = urls.get(i);
        if let Some((h, keys)) = &known {
            keys.prefetch(h, i);
        }
        let dictionary_key = known.as_ref().map(|(h, keys)| keys.row(h, i));
        let host_value = || {
            hosts
                .as_ref()
                .and_then(|h| h.get(i))
                .filter(|h| !is_blank(h))
        };
        // the row's host value; where its host dictionary gave the key, the key stands in for it
        // (only whether there is one matters then), saving a look at the dictionary's text
        let given_host = match dictionary_key {
            Some(RowKey::Known(k, _)) => Some(k),
            _ => host_value(),
        };
        let reject_as = |reason| Rejected {
            origin,
            reason,
            url: url.map(str::to_owned),
            host: host_value().map(str::to_owned),
            importance: importance.as_ref().and_then(|c| c.get(i)),
            change_rate: change_rate.as_ref().and_then(|c| c.get(i)),
        };
        let Some(url) = url.filter(|u| !u.is_empty()) else {
            reject(reject_as(Reason::UrlMissing));
            continue;
        };
        let ip = ips.as_ref().and_then(|c| c.get(i));
        let (host, host_token) = match dictionary_key {
            Some(RowKey::Known(k, token)) => (Ok(Cow::Borrowed(k)), Some(token)),
            Some(RowKey::Invalid(reason)) => (Err(reason), None),
            Some(RowKey::Absent) | None => (key.of(url, given_host, ip), None),
        };
        let host = match host {
            Ok(h) => h,
            Err(reason) => {
                reject(reject_as(reason));
                continue;
            }
        };
        let verdict = numbers.verdict(i);
        if let Some(reason) = verdict.reason() {
            reject(reject_as(reason));
            continue;
        }
        let complete_obs = complete
            .map(|c| c.is_valid(i) && c.value(i))
            .unwrap_or(false);
        let (min_s, max_s) = numbers.intervals_s(i);
        counts.default_importance += u64::from(verdict.importance_defaulted());
        counts.default_change_rate += u64::from(verdict.change_rate_defaulted());
        let page = PageRow {
            url,
            key_is_urls_own: key.is_urls_own(url, given_host, &host),
            host: "", // the chunk sets it: a key of the row's own stays there until handed over
            importance: numbers.importance(i),
            change_rate: numbers.change_rate(i),
            complete_obs,
            min_interval_s: min_s,
            max_interval_s: max_s,
            origin,
            host_token,
        };
        chunk.push(page, host, pages);
    }
    chunk.hand_over(pages);
    Ok(row)
}

/// Valid rows of a batch not yet handed over, up to [`CHUNK_ROWS`]; a key the batch does not
/// hold (a host normalised, or taken from its URL) is kept here until then.
#[derive(Default)]
struct Chunk<'a> {
    rows: Vec<PageRow<'a>>,
    /// Keys of their own: the row (its index in `rows`) and its key.
    owned: Vec<(usize, String)>,
}

impl<'a> Chunk<'a> {
    /// Adds `row` with its politeness key `host`; hands the chunk over when it is full.
    fn push(
        &mut self,
        mut row: PageRow<'a>,
        host: Cow<'a, str>,
        pages: &mut impl FnMut(&[PageRow<'_>]),
    ) {
        match host {
            Cow::Borrowed(h) => row.host = h,
            Cow::Owned(h) => self.owned.push((self.rows.len(), h)),
        }
        self.rows.push(row);
        if self.rows.len() == CHUNK_ROWS {
            self.hand_over(pages);
        }
    }

    /// Calls `pages` with the rows held, if any, and empties the chunk.
    fn hand_over(&mut self, pages: &mut impl FnMut(&[PageRow<'_>])) {
        if self.owned.is_empty() {
            if !self.rows.is_empty() {
                pages(&self.rows);
            }
        } else {
            let mut rows: Vec<PageRow<'_>> = self.rows.clone();
            for (i, key) in &self.owned {
                rows[*i].host = key;
            }
            pages(&rows);
            self.owned.clear();
        }
        self.rows.clear();
    }
}

/// The valid rows of `files` as (url, importance, change rate, complete_obs), in file order, as
/// `run` reads them (duplicates included).
pub fn read_all(files: &[PageFile], defaults: &Defaults) -> Result<Vec<(String, f64, f64, bool)>> {
    let mut rows = Vec::new();
    for unit in units(files) {
        read_unit(
            &files[unit.file as usize],
            unit,
            defaults,
            |chunk| {
                rows.extend(chunk.iter().map(|row| {
                    (
                        row.url.to_owned(),
                        row.importance,
                        row.change_rate,
                        row.complete_obs,
                    )
                }))
            },
            |_| {},
        )?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_hands_rows_over_in_order_with_their_own_keys_and_never_too_many() {
        let urls: Vec<String> = (0..150)
            .map(|i| format!("https://h{}.example/{i}", i % 9))
            .collect();
        let row = |i: usize| PageRow {
            url: &urls[i],
            host: "",
            key_is_urls_own: i.is_multiple_of(2),
            importance: i as f64 + 0.5,
            change_rate: i as f64 / 4.0,
            complete_obs: i.is_multiple_of(3),
            min_interval_s: f64::NAN,
            max_interval_s: i as f64,
            origin: Origin {
                file: 1,
                row: i as u64,
            },
            host_token: None,
        };
        // every fifth key is the row's own (a host normalised), the rest borrow the URL's text
        let key = |i: usize| -> Cow<'_, str> {
            if i.is_multiple_of(5) {
                Cow::Owned(format!("own{i}.example"))
            } else {
                Cow::Borrowed(&urls[i][8..20])
            }
        };
        let mut got: Vec<(String, String, f64, u64)> = Vec::new();
        let mut sizes = Vec::new();
        let mut take = |rows: &[PageRow<'_>]| {
            sizes.push(rows.len());
            got.extend(rows.iter().map(|r| {
                (
                    r.url.to_owned(),
                    r.host.to_owned(),
                    r.importance,
                    r.origin.row,
                )
            }));
        };
        let mut chunk = Chunk::default();
        for i in 0..urls.len() {
            chunk.push(row(i), key(i), &mut take);
        }
        chunk.hand_over(&mut take);
        chunk.hand_over(&mut take); // empty: nothing handed over
        assert_eq!(sizes, [CHUNK_ROWS, CHUNK_ROWS, 150 - 2 * CHUNK_ROWS]);
        let want: Vec<(String, String, f64, u64)> = (0..urls.len())
            .map(|i| {
                (
                    urls[i].clone(),
                    key(i).into_owned(),
                    i as f64 + 0.5,
                    i as u64,
                )
            })
            .collect();
        assert_eq!(got, want);
    }
}
