//! Reading a rates table to evaluate: revisit's own `rates/` output or anyone's Parquet or CSV file
//! with `url` and `crawl_rate` (fetches per day), and optionally `host`.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::columns::{check_column, number, open_parquet, text, Kind};

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// One rates file, checked.
#[derive(Clone, Debug)]
pub enum RatesFile {
    /// A Parquet file and the row counts of its row groups (each one a unit of work).
    Parquet { path: PathBuf, row_groups: Vec<u64> },
    /// A CSV file with a header row (one unit of work).
    Csv { path: PathBuf },
}

impl RatesFile {
    pub fn path(&self) -> &Path {
        match self {
            RatesFile::Parquet { path, .. } | RatesFile::Csv { path } => path,
        }
    }
}

/// A unit of reading work: a row group of a Parquet file, or a whole CSV file.
#[derive(Clone, Copy, Debug)]
pub struct RatesUnit {
    pub file: usize,
    /// Row group (Parquet) or 0 (CSV).
    pub part: usize,
    /// Row number in its file of the unit's first row (data rows, from 0).
    pub first_row: u64,
}

/// A row that cannot be evaluated: its file, row and the column at fault.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InvalidRate {
    pub file: String,
    pub row: u64,
    pub column: String,
}

impl std::fmt::Display for InvalidRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} row {}, column {}", self.file, self.row, self.column)
    }
}

/// Opens every file named by `paths` (Parquet, or CSV by its `.csv` name) and checks its columns.
pub fn open_all(paths: &[PathBuf]) -> Result<Vec<RatesFile>> {
    paths.iter().map(|p| open(p)).collect()
}

fn open(path: &Path) -> Result<RatesFile> {
    let hint = "a rates table needs url (text) and crawl_rate (fetches per day); host is optional";
    if is_csv(path) {
        let mut reader = csv::Reader::from_path(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        let headers = reader
            .headers()
            .with_context(|| format!("{}: cannot read the header row", path.display()))?;
        for column in ["url", "crawl_rate"] {
            if !headers.iter().any(|h| h.trim() == column) {
                bail!(
                    "{}: no column '{column}' in the header ({}); {hint}",
                    path.display(),
                    headers.iter().collect::<Vec<_>>().join(", ")
                );
            }
        }
        return Ok(RatesFile::Csv {
            path: path.to_path_buf(),
        });
    }
    let builder = open_parquet(path, "; CSV files must end in .csv")?;
    let schema = builder.schema();
    for (column, kind) in [("url", Kind::Text), ("crawl_rate", Kind::Number)] {
        if schema.field_with_name(column).is_err() {
            bail!("{}: no column '{column}'; {hint}", path.display());
        }
        check_column(path, schema, column, kind, true)?;
    }
    check_column(path, schema, "host", Kind::Text, false)?;
    let row_groups = super::row_groups::row_counts(builder.metadata());
    Ok(RatesFile::Parquet {
        path: path.to_path_buf(),
        row_groups,
    })
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// Every unit of work of `files`, in file order.
pub fn units(files: &[RatesFile]) -> Vec<RatesUnit> {
    let mut out = Vec::new();
    for (f, file) in files.iter().enumerate() {
        match file {
            RatesFile::Csv { .. } => out.push(RatesUnit {
                file: f,
                part: 0,
                first_row: 0,
            }),
            RatesFile::Parquet { row_groups, .. } => out.extend(
                super::row_groups::nonempty(row_groups).map(|(part, first_row)| RatesUnit {
                    file: f,
                    part,
                    first_row,
                }),
            ),
        }
    }
    out
}

/// Reads one unit: `row(url, host, crawl_rate)` for every valid row, `invalid` for the others.
pub fn read_unit(
    file: &RatesFile,
    unit: RatesUnit,
    mut row: impl FnMut(&str, Option<&str>, f64),
    mut invalid: impl FnMut(InvalidRate),
) -> Result<u64> {
    let path = file.path();
    let name = path.display().to_string();
    let mut n = unit.first_row;
    let mut take = |url: Option<&str>, host: Option<&str>, rate: Option<f64>, at: u64| {
        let bad = |column: &str| InvalidRate {
            file: name.clone(),
            row: at,
            column: column.to_owned(),
        };
        match (url.filter(|u| !u.is_empty()), rate) {
            (None, _) => invalid(bad("url")),
            (Some(u), Some(r)) if r.is_finite() && r >= 0.0 => {
                row(u, host.filter(|h| !h.trim().is_empty()), r)
            }
            (Some(_), _) => invalid(bad("crawl_rate")),
        }
    };
    match file {
        RatesFile::Csv { path } => {
            let mut reader = csv::Reader::from_path(path)
                .with_context(|| format!("{}: cannot open", path.display()))?;
            let headers = reader.headers()?.clone();
            let at = |c: &str| headers.iter().position(|h| h.trim() == c);
            let (Some(u), Some(r)) = (at("url"), at("crawl_rate")) else {
                bail!("{}: the header lost url or crawl_rate", path.display());
            };
            let h = at("host");
            for record in reader.records() {
                let record = record.with_context(|| {
                    format!(
                        "{}: row {n} is not valid CSV (quote or field count)",
                        path.display()
                    )
                })?;
                let rate = record.get(r).and_then(|s| s.trim().parse::<f64>().ok());
                take(record.get(u), h.and_then(|h| record.get(h)), rate, n);
                n += 1;
            }
        }
        RatesFile::Parquet { path, .. } => {
            let f = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(f)
                .with_context(|| format!("{}: cannot read footer", path.display()))?;
            let wanted: Vec<usize> = builder
                .schema()
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| matches!(f.name().as_str(), "url" | "host" | "crawl_rate"))
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
                let rates = number(&batch, "crawl_rate").ok_or_else(|| missing("crawl_rate"))?;
                let hosts = text(&batch, "host");
                for i in 0..batch.num_rows() {
                    take(
                        urls.get(i),
                        hosts.as_ref().and_then(|h| h.get(i)),
                        rates.get(i),
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
    fn csv_rows_are_read_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        std::fs::write(
            &path,
            "crawl_rate,url\n0.5,http://a.com/x\n-1,http://a.com/y\n,http://a.com/z\n2,\n1e-3,http://b.com/\n",
        )
        .unwrap();
        let files = open_all(&[path]).unwrap();
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        let n = read_unit(
            &files[0],
            units(&files)[0],
            |u, h, r| good.push((u.to_owned(), h.is_some(), r)),
            |b| bad.push((b.row, b.column)),
        )
        .unwrap();
        assert_eq!(n, 5);
        assert_eq!(
            good,
            vec![
                ("http://a.com/x".to_owned(), false, 0.5),
                ("http://b.com/".to_owned(), false, 1e-3)
            ]
        );
        assert_eq!(
            bad,
            vec![
                (1, "crawl_rate".to_owned()),
                (2, "crawl_rate".to_owned()),
                (3, "url".to_owned())
            ]
        );
    }

    #[test]
    fn a_csv_without_crawl_rate_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        std::fs::write(&path, "url,rate\nhttp://a.com/,1\n").unwrap();
        let e = format!("{:#}", open_all(&[path]).unwrap_err());
        assert!(e.contains("r.csv") && e.contains("crawl_rate"), "{e}");
    }
}
