//! Reading a visits table to evaluate: revisit's own `visits/` output (`run --timetable`) or anyone's
//! Parquet file with `at_s` (seconds from the horizon start) and `url`, and optionally `host`.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::columns::{check_column, number, open_parquet, text, Kind};
use super::rates_in::InvalidRate;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;
/// The key-value metadata key under which `run --timetable` records its horizon (seconds).
pub const HORIZON_KEY: &str = "revisit.horizon_s";
/// The key-value metadata key under which `run --timetable` records its kind: cyclic or rolling.
pub const TIMETABLE_KEY: &str = "revisit.timetable";

/// One visits file, checked: its row groups (each one a unit of work) and the horizon it declares.
#[derive(Clone, Debug)]
pub struct VisitsFile {
    pub path: PathBuf,
    pub row_groups: Vec<u64>,
    /// `revisit.horizon_s` from the file's key-value metadata, if it has one.
    pub horizon_s: Option<f64>,
    /// One night of revisit's rolling schedule (`revisit.timetable = rolling`), not a cycle.
    pub rolling: bool,
}

/// Refuses files that hold a rolling night: they do not repeat every horizon, so valuing them
/// as a cycle would report a staleness no crawler sees.
pub fn require_cycles(files: &[VisitsFile]) -> Result<()> {
    match files.iter().find(|f| f.rolling) {
        Some(f) => bail!(
            "{}: a rolling night (metadata {TIMETABLE_KEY} = rolling) does not repeat every horizon; make a cyclic timetable with `run --timetable --cyclic`, or value the nightly loop with `simulate --nights`",
            f.path.display()
        ),
        None => Ok(()),
    }
}

/// A row group of a visits file.
#[derive(Clone, Copy, Debug)]
pub struct VisitsUnit {
    pub file: usize,
    pub part: usize,
    /// Row number in its file of the unit's first row (from 0).
    pub first_row: u64,
}

/// Opens every file and checks its columns and its declared horizon.
pub fn open_all(paths: &[PathBuf]) -> Result<Vec<VisitsFile>> {
    paths.iter().map(|p| open(p)).collect()
}

fn open(path: &Path) -> Result<VisitsFile> {
    let hint = "a visits table needs at_s (seconds from the horizon start) and url (text); host is optional";
    if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        bail!(
            "{}: visits tables are read from Parquet only; convert the CSV (e.g. with DuckDB: COPY (SELECT * FROM 'file.csv') TO 'file.parquet')",
            path.display()
        );
    }
    let builder = open_parquet(path, "")?;
    let schema = builder.schema();
    for (column, kind) in [("at_s", Kind::Number), ("url", Kind::Text)] {
        if schema.field_with_name(column).is_err() {
            bail!("{}: no column '{column}'; {hint}", path.display());
        }
        check_column(path, schema, column, kind, true)?;
    }
    check_column(path, schema, "host", Kind::Text, false)?;
    let meta = builder.metadata().file_metadata();
    let value_of = |key: &str| {
        meta.key_value_metadata()
            .and_then(|kv| kv.iter().find(|k| k.key == key))
            .and_then(|k| k.value.as_deref())
    };
    let rolling = value_of(TIMETABLE_KEY) == Some("rolling");
    let horizon_s = match value_of(HORIZON_KEY) {
        Some(v) => match v.trim().parse::<f64>() {
            Ok(h) if h.is_finite() && h > 0.0 => Some(h),
            _ => bail!(
                "{}: metadata {HORIZON_KEY} is '{v}', not a positive number of seconds; fix or drop that key and give --horizon-s",
                path.display()
            ),
        },
        None => None,
    };
    let row_groups = super::row_groups::row_counts(builder.metadata());
    Ok(VisitsFile {
        path: path.to_path_buf(),
        row_groups,
        horizon_s,
        rolling,
    })
}

/// Where the evaluated horizon came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HorizonSource {
    /// Every file's `revisit.horizon_s` metadata.
    Metadata,
    /// `--horizon-s`, or its default (no file declares one).
    Flag,
}

/// The horizon of the visits: what the files declare (all must agree, and files without the key
/// are taken to share it), else `flag_s` (--horizon-s, if given; one that contradicts the files is
/// an error), else `default_s`.
pub fn horizon(
    files: &[VisitsFile],
    flag_s: Option<f64>,
    default_s: f64,
) -> Result<(f64, HorizonSource)> {
    let mut declared: Option<(f64, &Path)> = None;
    for f in files {
        if let Some(h) = f.horizon_s {
            match declared {
                Some((d, first)) if d != h => bail!(
                    "the visits files disagree on the horizon: {} says {HORIZON_KEY}={d} s, {} says {h} s; evaluate one run's visits at a time",
                    first.display(),
                    f.path.display()
                ),
                Some(_) => {}
                None => declared = Some((h, &f.path)),
            }
        }
    }
    match declared {
        Some((d, first)) => {
            if let Some(flag_s) = flag_s.filter(|&f| f != d) {
                bail!(
                    "--horizon-s {flag_s} contradicts the visits' horizon ({} says {HORIZON_KEY}={d}); drop --horizon-s or give {d}",
                    first.display()
                );
            }
            Ok((d, HorizonSource::Metadata))
        }
        None => match flag_s.unwrap_or(default_s) {
            f if f.is_finite() && f > 0.0 => Ok((f, HorizonSource::Flag)),
            _ => bail!(
                "no visits file declares {HORIZON_KEY} and --horizon-s is not a positive number of seconds: give the horizon the timetable repeats over with --horizon-s"
            ),
        },
    }
}

/// Every row group of `files`, in file order.
pub fn units(files: &[VisitsFile]) -> Vec<VisitsUnit> {
    files
        .iter()
        .enumerate()
        .flat_map(|(f, file)| {
            super::row_groups::nonempty(&file.row_groups).map(move |(part, first_row)| VisitsUnit {
                file: f,
                part,
                first_row,
            })
        })
        .collect()
}

/// Reads one unit: `row(url, host, at_s)` for every row with a url and an at_s in [0, horizon_s),
/// `invalid` (file, row, column) for the others. Returns the rows read.
pub fn read_unit(
    file: &VisitsFile,
    unit: VisitsUnit,
    horizon_s: f64,
    mut row: impl FnMut(&str, Option<&str>, f64),
    mut invalid: impl FnMut(InvalidRate),
) -> Result<u64> {
    let path = &file.path;
    let name = path.display().to_string();
    let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f)
        .with_context(|| format!("{}: cannot read footer", path.display()))?;
    let wanted: Vec<usize> = builder
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.name().as_str(), "url" | "host" | "at_s"))
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(vec![unit.part])
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| format!("{}: cannot read row group {}", path.display(), unit.part))?;
    let mut n = unit.first_row;
    for batch in reader {
        let batch = batch.with_context(|| {
            format!(
                "{}: row group {} (rows from {n}) is unreadable (truncated or corrupt?)",
                path.display(),
                unit.part
            )
        })?;
        let missing = |c: &str| anyhow::anyhow!("{}: column '{c}' vanished", path.display());
        let urls = text(&batch, "url").ok_or_else(|| missing("url"))?;
        let at_s = number(&batch, "at_s").ok_or_else(|| missing("at_s"))?;
        let hosts = text(&batch, "host");
        for i in 0..batch.num_rows() {
            let bad = |column: &str| InvalidRate {
                file: name.clone(),
                row: n,
                column: column.to_owned(),
            };
            match (urls.get(i).filter(|u| !u.is_empty()), at_s.get(i)) {
                (None, _) => invalid(bad("url")),
                // a cyclic timetable's times lie in one horizon: [0, T)
                (Some(u), Some(t)) if (0.0..horizon_s).contains(&t) => row(
                    u,
                    hosts
                        .as_ref()
                        .and_then(|h| h.get(i))
                        .filter(|h| !h.trim().is_empty()),
                    t,
                ),
                (Some(_), _) => invalid(bad("at_s")),
            }
            n += 1;
        }
    }
    Ok(n - unit.first_row)
}

/// Every URL's visit times in `files`, in file order (rows outside [0, horizon_s) or without a
/// url are skipped: a run's own visits have none).
pub fn read_times(
    files: &[VisitsFile],
    horizon_s: f64,
) -> Result<std::collections::HashMap<String, Vec<f64>>> {
    let mut times: std::collections::HashMap<String, Vec<f64>> = Default::default();
    for unit in units(files) {
        read_unit(
            &files[unit.file],
            unit,
            horizon_s,
            |url, _, at_s| times.entry(url.to_owned()).or_default().push(at_s),
            |_| {},
        )?;
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, horizon_s: Option<f64>) -> VisitsFile {
        VisitsFile {
            path: PathBuf::from(name),
            row_groups: vec![],
            horizon_s,
            rolling: false,
        }
    }

    #[test]
    fn the_files_horizon_wins_over_a_default_and_must_agree() {
        let day = 86_400.0;
        let files = [file("a", Some(3600.0)), file("b", None)];
        assert_eq!(
            horizon(&files, None, day).unwrap(),
            (3600.0, HorizonSource::Metadata)
        );
        // a horizon the user chose that matches is fine; one that contradicts is refused, even
        // when it equals the default
        assert!(horizon(&files, Some(3600.0), day).is_ok());
        for chosen in [60.0, day] {
            let e = format!("{:#}", horizon(&files, Some(chosen), day).unwrap_err());
            assert!(
                e.contains(&format!("--horizon-s {chosen}")) && e.contains("3600"),
                "{e}"
            );
        }
        let e = format!(
            "{:#}",
            horizon(
                &[file("a", Some(3600.0)), file("b", Some(7200.0))],
                None,
                day
            )
            .unwrap_err()
        );
        assert!(
            e.contains("disagree") && e.contains('a') && e.contains('b'),
            "{e}"
        );
        // no metadata: the flag, else the default
        assert_eq!(
            horizon(&[file("a", None)], None, day).unwrap(),
            (day, HorizonSource::Flag)
        );
        assert_eq!(
            horizon(&[file("a", None)], Some(60.0), day).unwrap(),
            (60.0, HorizonSource::Flag)
        );
        assert!(horizon(&[file("a", None)], Some(f64::NAN), day).is_err());
    }
}
