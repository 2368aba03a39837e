//! Reading fetch logs: the fetches that actually happened, for the next night to continue from.
//! Parquet or CSV (`.csv`, header row); one row per fetch: `url`, its time as `fetched_at` (a
//! timestamp; in CSV, RFC 3339 text) or `fetched_at_s` (seconds since the Unix epoch), optionally
//! `ok` (false: the fetch failed, the URL stays due) and `host` (else taken from the URL).

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::columns::{boolean, check_column, number, open_parquet, text, timestamp_us, Kind};
use super::rates_in::InvalidRate;
use super::schema::VISITS_TIME;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;
/// What a log needs, for messages.
const HINT: &str = "a fetch log needs url and fetched_at (a timestamp; RFC 3339 text in CSV) or \
                    fetched_at_s (seconds since the Unix epoch); ok and host are optional";

/// One log file, checked.
#[derive(Clone, Debug)]
pub enum LogFile {
    /// A Parquet file, the row counts of its row groups, and its time column.
    Parquet {
        path: PathBuf,
        row_groups: Vec<u64>,
        time: Time,
    },
    /// A CSV file with a header row (one unit of work), and the time column a row's fault is
    /// named by (`fetched_at` if it has one; a row may give either).
    Csv { path: PathBuf, time: Time },
}

impl LogFile {
    pub fn path(&self) -> &Path {
        match self {
            LogFile::Parquet { path, .. } | LogFile::Csv { path, .. } => path,
        }
    }
}

/// The time column of a Parquet log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Time {
    /// A timestamp column of this name.
    Stamp(&'static str),
    /// `fetched_at_s`: seconds since the Unix epoch.
    Seconds,
}

impl Time {
    fn column(self) -> &'static str {
        match self {
            Time::Stamp(name) => name,
            Time::Seconds => "fetched_at_s",
        }
    }
}

/// A unit of reading work: a row group of a Parquet file, or a whole CSV file.
#[derive(Clone, Copy, Debug)]
pub struct LogUnit {
    pub file: usize,
    pub part: usize,
    pub first_row: u64,
}

/// One fetch of the log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fetch<'a> {
    pub url: &'a str,
    pub host: Option<&'a str>,
    /// Microseconds since the epoch.
    pub at_us: i64,
    pub ok: bool,
}

/// Opens every log file named by `paths` and checks its columns.
pub fn open_all(paths: &[PathBuf]) -> Result<Vec<LogFile>> {
    paths.iter().map(|p| open(p)).collect()
}

/// Opens a run's visits files as the log of the fetches it planned (every one taken as made).
pub fn open_planned(paths: &[PathBuf]) -> Result<Vec<LogFile>> {
    paths
        .iter()
        .map(|path| {
            let builder = open_parquet(path, "")?;
            let schema = builder.schema();
            check_column(path, schema, "url", Kind::Text, true)?;
            check_column(path, schema, "host", Kind::Text, true)?;
            check_column(path, schema, VISITS_TIME, Kind::Timestamp, true)?;
            Ok(LogFile::Parquet {
                path: path.clone(),
                row_groups: super::row_groups::row_counts(builder.metadata()),
                time: Time::Stamp(VISITS_TIME),
            })
        })
        .collect()
}

fn open(path: &Path) -> Result<LogFile> {
    if is_csv(path) {
        let mut reader = csv::Reader::from_path(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        let headers = reader
            .headers()
            .with_context(|| format!("{}: cannot read the header row", path.display()))?;
        let has = |c: &str| headers.iter().any(|h| h.trim() == c);
        if !has("url") || !(has("fetched_at") || has("fetched_at_s")) {
            bail!(
                "{}: header ({}) lacks a column; {HINT}",
                path.display(),
                headers.iter().collect::<Vec<_>>().join(", ")
            );
        }
        return Ok(LogFile::Csv {
            path: path.to_path_buf(),
            time: if has("fetched_at") {
                Time::Stamp("fetched_at")
            } else {
                Time::Seconds
            },
        });
    }
    let builder = open_parquet(path, "; CSV files must end in .csv")?;
    let schema = builder.schema();
    check_column(path, schema, "url", Kind::Text, true).context(HINT)?;
    let time = if schema.field_with_name("fetched_at").is_ok() {
        check_column(path, schema, "fetched_at", Kind::Timestamp, true)?;
        Time::Stamp("fetched_at")
    } else if check_column(path, schema, "fetched_at_s", Kind::Number, false)? {
        Time::Seconds
    } else {
        bail!(
            "{}: no column fetched_at or fetched_at_s; {HINT}",
            path.display()
        );
    };
    check_column(path, schema, "ok", Kind::Bool, false)?;
    check_column(path, schema, "host", Kind::Text, false)?;
    Ok(LogFile::Parquet {
        path: path.to_path_buf(),
        row_groups: super::row_groups::row_counts(builder.metadata()),
        time,
    })
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// Every unit of work of `files`, in file order.
pub fn units(files: &[LogFile]) -> Vec<LogUnit> {
    let mut out = Vec::new();
    for (f, file) in files.iter().enumerate() {
        match file {
            LogFile::Csv { .. } => out.push(LogUnit {
                file: f,
                part: 0,
                first_row: 0,
            }),
            LogFile::Parquet { row_groups, .. } => out.extend(
                super::row_groups::nonempty(row_groups).map(|(part, first_row)| LogUnit {
                    file: f,
                    part,
                    first_row,
                }),
            ),
        }
    }
    out
}

/// Reads one unit: `row` for every row with a url and a time at or after the epoch, `invalid`
/// (file, row, column) for the others. Returns the rows read.
pub fn read_unit(
    file: &LogFile,
    unit: LogUnit,
    mut row: impl FnMut(Fetch<'_>),
    mut invalid: impl FnMut(InvalidRate),
) -> Result<u64> {
    let path = file.path();
    let name = path.display().to_string();
    let mut n = unit.first_row;
    let time_column = match file {
        LogFile::Parquet { time, .. } | LogFile::Csv { time, .. } => time.column(),
    };
    // `ok` is Err for a value that is no boolean
    let mut take = |url: Option<&str>,
                    host: Option<&str>,
                    at_us: Option<i64>,
                    ok: Result<Option<bool>, ()>,
                    at: u64| {
        let bad = |column: &str| InvalidRate {
            file: name.clone(),
            row: at,
            column: column.to_owned(),
        };
        match (url.filter(|u| !u.is_empty()), at_us, ok) {
            (None, ..) => invalid(bad("url")),
            (_, _, Err(())) => invalid(bad("ok")),
            // before the epoch: no crawler fetched then
            (Some(u), Some(t), Ok(ok)) if t >= 0 => row(Fetch {
                url: u,
                host: host.filter(|h| !h.trim().is_empty()),
                at_us: t,
                ok: ok.unwrap_or(true),
            }),
            (Some(_), ..) => invalid(bad(time_column)),
        }
    };
    match file {
        LogFile::Csv { path, .. } => {
            let mut reader = csv::Reader::from_path(path)
                .with_context(|| format!("{}: cannot open", path.display()))?;
            let headers = reader.headers()?.clone();
            let at = |c: &str| headers.iter().position(|h| h.trim() == c);
            let (url, stamp, seconds, ok, host) = (
                at("url"),
                at("fetched_at"),
                at("fetched_at_s"),
                at("ok"),
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
                    Some(s) => crate::time::parse_timestamp_us(s).ok(),
                    None => field(seconds)
                        .and_then(|s| s.parse::<f64>().ok())
                        .filter(|s| s.is_finite())
                        .map(|s| crate::time::add_seconds_us(0, s)),
                };
                let okay = match field(ok) {
                    None | Some("") => Ok(None),
                    Some(v) => match v.to_ascii_lowercase().as_str() {
                        "true" | "1" | "yes" => Ok(Some(true)),
                        "false" | "0" | "no" => Ok(Some(false)),
                        _ => Err(()),
                    },
                };
                take(field(url), field(host), time, okay, n);
                n += 1;
            }
        }
        LogFile::Parquet { path, time, .. } => {
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
                    matches!(name, "url" | "host" | "ok") || name == time.column()
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
                let ok = boolean(&batch, "ok");
                let column = time.column();
                let times: Vec<Option<i64>> = match time {
                    Time::Seconds => {
                        let s = number(&batch, column).ok_or_else(|| missing(column))?;
                        (0..batch.num_rows())
                            .map(|i| {
                                s.get(i)
                                    .filter(|s| s.is_finite())
                                    .map(|s| crate::time::add_seconds_us(0, s))
                            })
                            .collect()
                    }
                    Time::Stamp(_) => {
                        timestamp_us(&batch, column).ok_or_else(|| missing(column))?
                    }
                };
                for (i, &time) in times.iter().enumerate() {
                    let okay =
                        Ok(ok.and_then(|o| arrow_array::Array::is_valid(o, i).then(|| o.value(i))));
                    take(
                        urls.get(i),
                        hosts.as_ref().and_then(|h| h.get(i)),
                        time,
                        okay,
                        n,
                    );
                    n += 1;
                }
            }
        }
    }
    Ok(n - unit.first_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_logs_take_timestamps_or_seconds_and_name_bad_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        std::fs::write(
            &path,
            "url,fetched_at,fetched_at_s,ok\n\
             http://a.com/x,2026-11-23T01:00:00Z,,true\n\
             http://a.com/y,,1795395600.5,0\n\
             http://a.com/z,,,\n\
             ,2026-11-23T01:00:00Z,,\n\
             http://a.com/w,,-5,\n\
             http://a.com/v,2026-11-23T01:00:00Z,,maybe\n",
        )
        .unwrap();
        let files = open_all(&[path]).unwrap();
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        let n = read_unit(
            &files[0],
            units(&files)[0],
            |f| good.push((f.url.to_owned(), f.at_us, f.ok)),
            |b| bad.push((b.row, b.column)),
        )
        .unwrap();
        assert_eq!(n, 6);
        assert_eq!(
            good,
            vec![
                ("http://a.com/x".to_owned(), 1_795_395_600_000_000, true),
                ("http://a.com/y".to_owned(), 1_795_395_600_500_000, false),
            ]
        );
        assert_eq!(
            bad,
            vec![
                (2, "fetched_at".to_owned()),
                (3, "url".to_owned()),
                (4, "fetched_at".to_owned()),
                (5, "ok".to_owned())
            ]
        );
    }

    #[test]
    fn a_log_without_a_time_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        std::fs::write(&path, "url,when\nhttp://a.com/,1\n").unwrap();
        let e = format!("{:#}", open_all(&[path]).unwrap_err());
        assert!(e.contains("log.csv") && e.contains("fetched_at"), "{e}");
    }
}
