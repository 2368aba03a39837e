//! `--fetch-time SPEC`: the law of the time one fetch takes, `const:SECONDS`, `exp:MEAN_SECONDS`,
//! or a CSV/Parquet file of measured fetch durations in seconds (the empirical law).

use std::path::Path;

use anyhow::{bail, Context, Result};
use parquet::arrow::ProjectionMask;

use super::columns::{check_column, number, open_parquet, Kind};
use revisit_core::fetch_time::FetchTime;

/// The column of measured durations a file must have, unless it has only one column.
pub const FETCH_TIME_COLUMN: &str = "fetch_time_s";
/// Spec prefix of a constant fetch time.
const CONSTANT_PREFIX: &str = "const:";
/// Spec prefix of exponential fetch times.
const EXPONENTIAL_PREFIX: &str = "exp:";
/// Rows decoded at a time from Parquet.
const BATCH_ROWS: usize = 8192;
/// What a valid spec looks like, for every error.
const SPEC_HELP: &str = "give const:SECONDS, exp:MEAN_SECONDS, or a CSV (name ending in .csv, with a \
     header row) or Parquet file of measured fetch durations in seconds (column fetch_time_s, or the \
     file's only column)";

/// Parses a `--fetch-time` spec, reading the file if it names one.
pub fn parse_fetch_time(spec: &str) -> Result<FetchTime> {
    let seconds = |text: &str, what: &str| -> Result<f64> {
        text.trim().parse::<f64>().map_err(|_| {
            anyhow::anyhow!(
                "--fetch-time {spec}: '{text}' is not a number of seconds ({what}); {SPEC_HELP}"
            )
        })
    };
    if let Some(rest) = spec.strip_prefix(CONSTANT_PREFIX) {
        return FetchTime::constant(seconds(rest, "the duration of every fetch")?)
            .with_context(|| format!("--fetch-time {spec}"));
    }
    if let Some(rest) = spec.strip_prefix(EXPONENTIAL_PREFIX) {
        return FetchTime::exponential(seconds(rest, "the mean fetch duration")?)
            .with_context(|| format!("--fetch-time {spec}"));
    }
    let path = Path::new(spec);
    if !path.is_file() {
        bail!("--fetch-time {spec}: no such file and not a const:/exp: spec; {SPEC_HELP}");
    }
    let samples = if is_csv(path) {
        read_csv(path)?
    } else {
        read_parquet(path)?
    };
    FetchTime::empirical(samples).with_context(|| format!("{}", path.display()))
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// The column to read among `names`: fetch_time_s, else the only one.
fn pick_column<'a>(path: &Path, names: &[&'a str]) -> Result<&'a str> {
    if let Some(name) = names.iter().find(|n| n.trim() == FETCH_TIME_COLUMN) {
        return Ok(name);
    }
    match names {
        [only] => Ok(only),
        _ => bail!(
            "{}: no column '{FETCH_TIME_COLUMN}' and {} columns ({}); name the column of fetch \
             durations in seconds '{FETCH_TIME_COLUMN}' or keep only that column",
            path.display(),
            names.len(),
            names.join(", ")
        ),
    }
}

/// One measured duration, checked: finite and >= 0 seconds.
fn checked(path: &Path, row: u64, column: &str, value: Option<f64>, raw: &str) -> Result<f64> {
    match value {
        Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => bail!(
            "{}: row {row} column {column}: '{raw}' is not a fetch duration (a finite number of \
             seconds >= 0); fix or delete the row",
            path.display()
        ),
    }
}

fn read_csv(path: &Path) -> Result<Vec<f64>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let headers = reader
        .headers()
        .with_context(|| format!("{}: cannot read the header row", path.display()))?
        .clone();
    let names: Vec<&str> = headers.iter().collect();
    let column = pick_column(path, &names)?;
    let at = names
        .iter()
        .position(|n| *n == column)
        .context("the picked column is one of the header's")?;
    let column = column.trim();
    let mut samples = Vec::new();
    for (row, record) in (0u64..).zip(reader.records()) {
        let record = record.with_context(|| {
            format!(
                "{}: row {row} is not valid CSV (quote or field count)",
                path.display()
            )
        })?;
        let raw = record.get(at).unwrap_or("");
        samples.push(checked(path, row, column, raw.trim().parse().ok(), raw)?);
    }
    Ok(samples)
}

fn read_parquet(path: &Path) -> Result<Vec<f64>> {
    let builder = open_parquet(path, "; CSV files must end in .csv")?;
    let schema = builder.schema().clone();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let column = pick_column(path, &names)?.to_owned();
    check_column(path, &schema, &column, Kind::Number, true)?;
    let index = schema.index_of(&column)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [index]);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .with_context(|| format!("{}: cannot read column {column}", path.display()))?;
    let mut samples = Vec::new();
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.with_context(|| {
            format!(
                "{}: rows from {row} are unreadable (truncated or corrupt?)",
                path.display()
            )
        })?;
        let values = number(&batch, &column)
            .with_context(|| format!("{}: column '{column}' vanished", path.display()))?;
        for i in 0..batch.num_rows() {
            let value = values.get(i);
            let raw = value.map_or("null".to_owned(), |x| x.to_string());
            samples.push(checked(path, row, &column, value, &raw)?);
            row += 1;
        }
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        format!("{:#}", parse_fetch_time(spec).unwrap_err())
    }

    #[test]
    fn specs_parse_to_their_laws() {
        assert_eq!(
            parse_fetch_time("const:0.5").unwrap(),
            FetchTime::Constant { duration: 0.5 }
        );
        assert_eq!(
            parse_fetch_time("exp:2").unwrap(),
            FetchTime::Exponential { mean: 2.0 }
        );
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("t.csv");
        std::fs::write(&csv, "url,fetch_time_s\na,0.25\nb,1.5\n").unwrap();
        assert_eq!(
            parse_fetch_time(csv.to_str().unwrap()).unwrap(),
            FetchTime::Empirical {
                samples: vec![0.25, 1.5]
            }
        );
        let only = dir.path().join("only.csv");
        std::fs::write(&only, "seconds\n3\n").unwrap();
        assert_eq!(
            parse_fetch_time(only.to_str().unwrap()).unwrap().mean(),
            3.0
        );
    }

    #[test]
    fn parquet_samples_are_read_and_a_null_is_named() {
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, values: Vec<Option<f64>>| {
            let batch = arrow_array::RecordBatch::try_from_iter([(
                "secs",
                Arc::new(arrow_array::Float64Array::from(values)) as arrow_array::ArrayRef,
            )])
            .unwrap();
            let path = dir.path().join(name);
            let mut w = parquet::arrow::ArrowWriter::try_new(
                std::fs::File::create(&path).unwrap(),
                batch.schema(),
                None,
            )
            .unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            path.to_str().unwrap().to_owned()
        };
        let good = write("good.parquet", vec![Some(1.0), Some(3.0)]);
        assert_eq!(parse_fetch_time(&good).unwrap().mean(), 2.0);
        let bad = write("bad.parquet", vec![Some(1.0), None]);
        let e = err(&bad);
        assert!(
            e.contains("bad.parquet") && e.contains("row 1 column secs") && e.contains("null"),
            "{e}"
        );
    }

    #[test]
    fn bad_specs_say_what_to_do() {
        assert!(err("const:abc").contains("'abc' is not a number of seconds"));
        assert!(err("exp:0").contains("--fetch-time exp:0"));
        assert!(err("/no/such").contains("const:SECONDS"));
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.csv");
        std::fs::write(&bad, "fetch_time_s\n0.5\n-1\n").unwrap();
        let e = err(bad.to_str().unwrap());
        assert!(
            e.contains("bad.csv") && e.contains("row 1") && e.contains("column fetch_time_s"),
            "{e}"
        );
        let two = dir.path().join("two.csv");
        std::fs::write(&two, "a,b\n1,2\n").unwrap();
        assert!(err(two.to_str().unwrap()).contains("a, b"));
        let empty = dir.path().join("empty.csv");
        std::fs::write(&empty, "fetch_time_s\n").unwrap();
        assert!(err(empty.to_str().unwrap()).contains("empty"));
    }
}
