//! Page sets as text, as crawl teams keep them: CSV and TSV files with a header row, and seed
//! lists (one URL a line, as Nutch's `inject` reads them). They are read into the columns a Parquet
//! page set has, so that every format is validated by the same code ([`super::pages`]).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::builder::{BooleanBuilder, Float64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

/// The text formats of a page set, by file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// Comma-separated, header row, fields may be quoted (`.csv`).
    Csv,
    /// Tab-separated, header row, no quoting (`.tsv`).
    Tsv,
    /// One URL a line; blank lines and lines starting with `#` are skipped, and so is anything
    /// after the URL's first tab or space (Nutch's seed metadata) (`.txt`).
    SeedList,
}

impl TextFormat {
    /// The text format of `path` by its extension, or None (Parquet).
    pub fn of(path: &Path) -> Option<TextFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(TextFormat::Csv),
            "tsv" => Some(TextFormat::Tsv),
            "txt" => Some(TextFormat::SeedList),
            _ => None,
        }
    }

    /// The name summaries use.
    pub fn name(self) -> &'static str {
        match self {
            TextFormat::Csv => "csv",
            TextFormat::Tsv => "tsv",
            TextFormat::SeedList => "seed list",
        }
    }
}

/// The page columns, in the order they are built.
const COLUMNS: [(&str, DataType); 5] = [
    ("url", DataType::Utf8),
    ("host", DataType::Utf8),
    ("importance", DataType::Float64),
    ("change_rate", DataType::Float64),
    ("complete_obs", DataType::Boolean),
];

/// Which page columns a text file has, and where in its rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextColumns {
    /// The field index of each of [`COLUMNS`] in a row, if the file has it.
    at: [Option<usize>; 5],
}

impl TextColumns {
    /// Whether the file has column `name`.
    pub fn has(&self, name: &str) -> bool {
        COLUMNS
            .iter()
            .position(|(c, _)| *c == name)
            .is_some_and(|k| self.at[k].is_some())
    }
}

fn csv_reader(path: &Path, format: TextFormat) -> Result<csv::Reader<File>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    Ok(csv::ReaderBuilder::new()
        .delimiter(if format == TextFormat::Tsv {
            b'\t'
        } else {
            b','
        })
        .quoting(format == TextFormat::Csv)
        .trim(csv::Trim::All)
        .from_reader(file))
}

/// Checks a text page file's header: CSV and TSV need a `url` column (the others are optional, and
/// columns revisit does not read are ignored); a seed list is all URLs.
pub fn open(path: &Path, format: TextFormat) -> Result<TextColumns> {
    if format == TextFormat::SeedList {
        File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        return Ok(TextColumns {
            at: [Some(0), None, None, None, None],
        });
    }
    let mut reader = csv_reader(path, format)?;
    let header = reader
        .headers()
        .with_context(|| format!("{}: cannot read the header row", path.display()))?
        .clone();
    let names: Vec<&str> = header
        .iter()
        .enumerate()
        // a byte-order mark, as spreadsheets write one, is not part of the first name
        .map(|(i, h)| {
            if i == 0 {
                h.trim_start_matches('\u{feff}')
            } else {
                h
            }
        })
        .collect();
    let mut at = [None; 5];
    for (k, (column, _)) in COLUMNS.iter().enumerate() {
        let mut found = names.iter().enumerate().filter(|(_, n)| *n == column);
        at[k] = found.next().map(|(i, _)| i);
        if found.next().is_some() {
            bail!(
                "{}: the header names column '{column}' twice",
                path.display()
            );
        }
    }
    if at[0].is_none() {
        bail!(
            "{}: no column 'url' in the header ({}); a {} page set needs a header row with url, \
             and optionally host, importance, change_rate and complete_obs",
            path.display(),
            names.join(", "),
            format.name()
        );
    }
    Ok(TextColumns { at })
}

/// Reads a text page file as record batches of at most `batch_rows` rows with the columns it has
/// (utf8 url and host, float64 importance and change_rate, boolean complete_obs; an empty field
/// is null). A field that is not a number (or a boolean) stops the read, naming file, row and
/// column; rows are numbered from 0 after the header (seed lists: the n-th URL).
pub fn read(
    path: &Path,
    format: TextFormat,
    columns: &TextColumns,
    batch_rows: usize,
    mut each: impl FnMut(RecordBatch) -> Result<()>,
) -> Result<()> {
    let fields: Vec<Field> = COLUMNS
        .iter()
        .zip(&columns.at)
        .filter(|(_, at)| at.is_some())
        .map(|((name, kind), _)| Field::new(*name, kind.clone(), true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let mut batch = Builders::new(columns, batch_rows);
    let mut flush = |batch: &mut Builders| -> Result<()> {
        if batch.rows > 0 {
            let arrays = batch.finish();
            each(RecordBatch::try_new(schema.clone(), arrays)?)?;
        }
        Ok(())
    };
    if format == TextFormat::SeedList {
        let mut reader = BufReader::new(
            File::open(path).with_context(|| format!("{}: cannot open", path.display()))?,
        );
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).with_context(|| {
                format!("{}: unreadable at line {}", path.display(), number + 1)
            })?;
            if n == 0 {
                break;
            }
            number += 1;
            let text = std::str::from_utf8(&line).map_err(|_| {
                anyhow::anyhow!("{}: line {number} is not UTF-8 text", path.display())
            })?;
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let url = text.split([' ', '\t']).next().unwrap_or(text);
            batch.url.append_value(url);
            batch.rows += 1;
            if batch.rows == batch_rows {
                flush(&mut batch)?;
            }
        }
        return flush(&mut batch);
    }
    let mut reader = csv_reader(path, format)?;
    let mut record = csv::StringRecord::new();
    let mut row = 0u64;
    loop {
        let more = reader.read_record(&mut record).with_context(|| {
            format!(
                "{}: row {row} is not a valid {} row",
                path.display(),
                format.name()
            )
        })?;
        if !more {
            break;
        }
        let field = |k: usize| {
            columns.at[k]
                .and_then(|i| record.get(i))
                .filter(|v| !v.is_empty())
        };
        let bad = |k: usize, v: &str, what: &str| {
            anyhow::anyhow!(
                "{}: row {row} (line {}), column {}: {v:?} is not {what}",
                path.display(),
                record.position().map_or(0, |p| p.line()),
                COLUMNS[k].0
            )
        };
        batch.url.append_option(field(0));
        if columns.at[1].is_some() {
            batch.host.append_option(field(1));
        }
        for (k, builder) in [(2, &mut batch.importance), (3, &mut batch.change_rate)] {
            if columns.at[k].is_some() {
                let value = match field(k) {
                    Some(v) => Some(v.parse::<f64>().map_err(|_| bad(k, v, "a number"))?),
                    None => None,
                };
                builder.append_option(value);
            }
        }
        if columns.at[4].is_some() {
            let value = match field(4) {
                Some(v) => Some(boolean(v).ok_or_else(|| bad(4, v, "true or false"))?),
                None => None,
            };
            batch.complete.append_option(value);
        }
        batch.rows += 1;
        row += 1;
        if batch.rows == batch_rows {
            flush(&mut batch)?;
        }
    }
    flush(&mut batch)
}

/// A boolean as spreadsheets and scripts write them.
fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "y" => Some(true),
        "false" | "f" | "0" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// The columns of one batch being built.
struct Builders {
    present: [bool; 5],
    rows: usize,
    url: StringBuilder,
    host: StringBuilder,
    importance: Float64Builder,
    change_rate: Float64Builder,
    complete: BooleanBuilder,
}

impl Builders {
    fn new(columns: &TextColumns, rows: usize) -> Self {
        Builders {
            present: columns.at.map(|a| a.is_some()),
            rows: 0,
            url: StringBuilder::with_capacity(rows, rows * 64),
            host: StringBuilder::new(),
            importance: Float64Builder::with_capacity(rows),
            change_rate: Float64Builder::with_capacity(rows),
            complete: BooleanBuilder::new(),
        }
    }

    /// The present columns, in [`COLUMNS`] order; the builders start over.
    fn finish(&mut self) -> Vec<ArrayRef> {
        self.rows = 0;
        let all: [ArrayRef; 5] = [
            Arc::new(self.url.finish()),
            Arc::new(self.host.finish()),
            Arc::new(self.importance.finish()),
            Arc::new(self.change_rate.finish()),
            Arc::new(self.complete.finish()),
        ];
        all.into_iter()
            .zip(self.present)
            .filter(|(_, p)| *p)
            .map(|(a, _)| a)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    use arrow_array::Array;

    fn batches(name: &str, text: &str) -> Result<Vec<RecordBatch>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let format = TextFormat::of(&path).unwrap();
        let columns = open(&path, format)?;
        let mut out = Vec::new();
        read(&path, format, &columns, 2, |b| {
            out.push(b);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn csv_columns_are_read_by_name_with_empty_fields_null() {
        let b = batches(
            "p.csv",
            "\u{feff}change_rate,extra,url,importance\n0.5,x,https://a.example/1,2\n,y,https://a.example/2,\n1e-3,z,\"https://a.example/3,q\",7\n",
        )
        .unwrap();
        assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
        let s = b[0].schema();
        let names: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["url", "importance", "change_rate"]);
        let mu = b[0].column(1).as_primitive::<Float64Type>();
        assert_eq!((mu.value(0), mu.is_null(1)), (2.0, true));
        assert_eq!(
            b[1].column(0).as_string::<i32>().value(0),
            "https://a.example/3,q"
        );
        assert_eq!(b[1].column(2).as_primitive::<Float64Type>().value(0), 1e-3);
    }

    #[test]
    fn tsv_and_seed_lists() {
        let b = batches(
            "p.tsv",
            "url\tcomplete_obs\nhttps://a.example/\tyes\nhttps://b.example/\t\n",
        )
        .unwrap();
        let c = b[0].column(1).as_boolean();
        assert!(c.value(0) && c.is_null(1));
        let b = batches(
            "seeds.txt",
            "# seeds\nhttps://a.example/\n\n  https://b.example/x\tnutch.score=2\nhttps://c.example/\n",
        )
        .unwrap();
        let urls: Vec<&str> = b
            .iter()
            .flat_map(|b| {
                let a = b.column(0).as_string::<i32>();
                (0..a.len()).map(|i| a.value(i)).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            urls,
            [
                "https://a.example/",
                "https://b.example/x",
                "https://c.example/"
            ]
        );
    }

    #[test]
    fn bad_text_names_the_file_row_and_column() {
        let e = batches(
            "p.csv",
            "url,importance\nhttps://a.example/,1\nhttps://b.example/,high\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("p.csv: row 1 (line 3), column importance: \"high\" is not a number"),
            "{e}"
        );
        let e = batches("p.csv", "host,importance\na,1\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no column 'url'") && e.contains("host, importance"),
            "{e}"
        );
        let e = batches("p.csv", "url,url\na,b\n").unwrap_err().to_string();
        assert!(e.contains("'url' twice"), "{e}");
        let e = batches("p.tsv", "url\tcomplete_obs\nhttps://a.example/\tmaybe\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column complete_obs: \"maybe\" is not true or false"),
            "{e}"
        );
    }
}
