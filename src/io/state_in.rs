//! Reading the state a nightly run continues from: the previous run's published output (read only,
//! never modified), its rates table's per-URL schedule (`last_fetch_at`, `next_fetch_at`,
//! `fetch_interval_s`), checked to be a complete revisit output over the same horizon.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use parquet::arrow::ProjectionMask;

use super::columns::{check_column, number, open_parquet, text, timestamp_us, Kind};
use super::manifest::Manifest;
use super::publish::{MANIFEST, SUCCESS};
use super::rates_in::InvalidRate;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;
/// Key of the night's start in the previous run's metadata.
pub const START_KEY: &str = "revisit.start";
/// Key of the horizon in the previous run's metadata.
pub const HORIZON_KEY: &str = "revisit.horizon_s";

/// A previous run's output, checked.
#[derive(Clone, Debug)]
pub struct Previous {
    pub dir: PathBuf,
    /// Its rates files and the row counts of their row groups.
    pub files: Vec<(PathBuf, Vec<u64>)>,
    /// Its visits files (empty: it made no timetable): the fetches it planned.
    pub visits: Vec<PathBuf>,
    /// The night it planned: start (microseconds since the epoch) and horizon (seconds).
    pub start_us: i64,
    pub horizon_s: f64,
}

/// One URL's schedule in the previous output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StateRow<'a> {
    pub url: &'a str,
    pub host: &'a str,
    /// Microseconds since the epoch (None: never fetched).
    pub last_fetch_us: Option<i64>,
    pub next_fetch_us: i64,
    pub interval_s: f64,
}

/// A unit of reading work: one row group of one rates file.
#[derive(Clone, Copy, Debug)]
pub struct StateUnit {
    pub file: usize,
    pub row_group: usize,
    pub first_row: u64,
}

/// Opens the revisit output `dir`: it must be published (`_SUCCESS`, manifest), its rates files
/// must carry the schedule columns and agree on the start and horizon they planned.
pub fn open(dir: &Path) -> Result<Previous> {
    let name = dir.display();
    if !dir.is_dir() {
        bail!("--previous {name}: no such folder (give the output folder of last night's run)");
    }
    if !dir.join(SUCCESS).is_file() || !dir.join(MANIFEST).is_file() {
        bail!(
            "--previous {name}: not a published revisit output (no {SUCCESS} or {MANIFEST}): a run \
             that did not finish, or another folder; give the last complete run's output"
        );
    }
    let manifest: Manifest = std::fs::read_to_string(dir.join(MANIFEST))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .with_context(|| format!("--previous {name}: its {MANIFEST} is not a revisit manifest"))?;
    // every file the manifest lists is there with its size: a half-copied or altered output is
    // refused before anything is read
    for entry in &manifest.files {
        let path = dir.join(&entry.path);
        let bytes = std::fs::metadata(&path).map(|m| m.len()).ok();
        if bytes != Some(entry.bytes) {
            bail!(
                "--previous {name}: {} is listed in its {MANIFEST} with {} bytes but {}: a \
                 half-copied or altered output; give the last complete run's output",
                entry.path,
                entry.bytes,
                bytes.map_or("is missing".to_owned(), |b| format!("has {b}"))
            );
        }
    }
    let listed = |folder: &str| -> Vec<(PathBuf, u64)> {
        manifest
            .files
            .iter()
            .filter(|f| f.path.starts_with(folder))
            .map(|f| (dir.join(&f.path), f.rows))
            .collect()
    };
    let visits = listed("visits/").into_iter().map(|(p, _)| p).collect();
    let mut files = Vec::new();
    let mut night: Option<(i64, f64, PathBuf)> = None;
    for (path, rows) in listed("rates/") {
        let builder = open_parquet(&path, "")?;
        let schema = builder.schema();
        for (column, kind) in [
            ("url", Kind::Text),
            ("host", Kind::Text),
            ("fetch_interval_s", Kind::Number),
            ("last_fetch_at", Kind::Timestamp),
            ("next_fetch_at", Kind::Timestamp),
        ] {
            check_column(&path, schema, column, kind, true).with_context(|| {
                format!("--previous {name}: not the output of a revisit run that keeps a schedule")
            })?;
        }
        let meta = builder.metadata().file_metadata().key_value_metadata();
        let value = |key: &str| {
            meta.and_then(|kv| kv.iter().find(|k| k.key == key))
                .and_then(|k| k.value.clone())
        };
        let start_us = value(START_KEY)
            .and_then(|v| crate::time::parse_timestamp_us(&v).ok())
            .with_context(|| format!("{}: no {START_KEY} in its metadata", path.display()))?;
        let horizon_s = value(HORIZON_KEY)
            .and_then(|v| v.parse::<f64>().ok())
            .with_context(|| format!("{}: no {HORIZON_KEY} in its metadata", path.display()))?;
        match &night {
            Some((s, h, first)) if (*s, *h) != (start_us, horizon_s) => bail!(
                "--previous {name}: {} and {} were planned for different nights",
                first.display(),
                path.display()
            ),
            Some(_) => {}
            None => night = Some((start_us, horizon_s, path.clone())),
        }
        let row_groups: Vec<u64> = super::row_groups::row_counts(builder.metadata());
        if row_groups.iter().sum::<u64>() != rows {
            bail!(
                "--previous {name}: {} holds {} rows, its {MANIFEST} {rows}: an altered output",
                path.display(),
                row_groups.iter().sum::<u64>()
            );
        }
        files.push((path, row_groups));
    }
    let Some((start_us, horizon_s, _)) = night else {
        bail!("--previous {name}: its rates table has no file");
    };
    Ok(Previous {
        dir: dir.to_path_buf(),
        files,
        visits,
        start_us,
        horizon_s,
    })
}

/// Every row group of the previous rates table, in file order.
pub fn units(p: &Previous) -> Vec<StateUnit> {
    row_groups(&p.files)
}

/// Every non-empty row group of `files` (each with its row groups' row counts), in file order,
/// with the number in its file of its first row.
pub fn row_groups(files: &[(PathBuf, Vec<u64>)]) -> Vec<StateUnit> {
    files
        .iter()
        .enumerate()
        .flat_map(|(f, (_, groups))| {
            super::row_groups::nonempty(groups).map(move |(row_group, first_row)| StateUnit {
                file: f,
                row_group,
                first_row,
            })
        })
        .collect()
}

/// Reads one unit: `row` for every row with a url, host, interval and next fetch, `invalid` for the
/// others (a revisit output has none). Returns the rows read.
pub fn read_unit(
    p: &Previous,
    unit: StateUnit,
    mut row: impl FnMut(StateRow<'_>),
    mut invalid: impl FnMut(InvalidRate),
) -> Result<u64> {
    let path = &p.files[unit.file].0;
    let builder = open_parquet(path, "")?;
    let wanted: Vec<usize> = builder
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            matches!(
                f.name().as_str(),
                "url" | "host" | "fetch_interval_s" | "last_fetch_at" | "next_fetch_at"
            )
        })
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
        let missing = |c: &str| anyhow::anyhow!("{}: column '{c}' vanished", path.display());
        let urls = text(&batch, "url").ok_or_else(|| missing("url"))?;
        let hosts = text(&batch, "host").ok_or_else(|| missing("host"))?;
        let interval =
            number(&batch, "fetch_interval_s").ok_or_else(|| missing("fetch_interval_s"))?;
        let last = timestamp_us(&batch, "last_fetch_at").ok_or_else(|| missing("last_fetch_at"))?;
        let next = timestamp_us(&batch, "next_fetch_at").ok_or_else(|| missing("next_fetch_at"))?;
        for i in 0..batch.num_rows() {
            let bad = |column: &str| InvalidRate {
                file: path.display().to_string(),
                row: n,
                column: column.to_owned(),
            };
            let tau = interval.get(i).filter(|t| t.is_finite() && *t > 0.0);
            match (urls.get(i), hosts.get(i), tau, next[i]) {
                (None, ..) => invalid(bad("url")),
                (_, None, ..) => invalid(bad("host")),
                (_, _, None, _) => invalid(bad("fetch_interval_s")),
                (_, _, _, None) => invalid(bad("next_fetch_at")),
                (Some(url), Some(host), Some(tau), Some(next_us)) => row(StateRow {
                    url,
                    host,
                    last_fetch_us: last[i],
                    next_fetch_us: next_us,
                    interval_s: tau,
                }),
            }
            n += 1;
        }
    }
    Ok(n - unit.first_row)
}
