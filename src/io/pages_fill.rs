//! A copy of a page set with estimated change rates filled in (`revisit estimate --pages`), so that
//! `revisit run` reads it as it is: every column kept, `change_rate` replaced where the history gave
//! an estimate (and added if the pages had none), `complete_obs` set where the history says so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use serde::Serialize;

use super::columns::{boolean, number, open_parquet, text};
use super::parquet_out;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 65_536;

/// What filling a page set did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Filled {
    pub files: u64,
    pub rows: u64,
    /// Rows whose URL has an estimate: their change_rate is the estimate.
    pub rows_estimated: u64,
    /// Rows without an estimate that keep the page set's own change_rate.
    pub rows_kept: u64,
    /// Rows with neither: change_rate null (`run` rejects them as change_rate_missing).
    pub rows_without_rate: u64,
    /// Estimated URLs that no page has.
    pub estimates_unmatched: u64,
}

/// Writes each file of `pages` to `out_dir/part-NNNNN.parquet` with the change rates of
/// `estimates` (url -> (changes per day, complete observations)).
pub fn fill(
    pages: &[PathBuf],
    out_dir: &Path,
    estimates: &HashMap<&str, (f64, bool)>,
) -> Result<Filled> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut filled = Filled::default();
    let mut matched: HashMap<&str, bool> = HashMap::with_capacity(estimates.len());
    for (k, path) in pages.iter().enumerate() {
        let builder = open_parquet(path, "")?;
        let schema = builder.schema().clone();
        if schema.field_with_name("url").is_err() {
            bail!("{}: no column 'url' (a page set needs one)", path.display());
        }
        let out_schema = filled_schema(&schema);
        let out_path = out_dir.join(format!("part-{k:05}.parquet"));
        let mut writer =
            parquet_out::Writer::create(&out_path, out_schema.clone(), &[], BATCH_ROWS)?;
        let reader = builder
            .with_batch_size(BATCH_ROWS)
            .build()
            .with_context(|| format!("{}: cannot read", path.display()))?;
        for batch in reader {
            let batch = batch.with_context(|| format!("{}: cannot decode", path.display()))?;
            let Some(urls) = text(&batch, "url") else {
                bail!("{}: column 'url' is not text", path.display());
            };
            let own_rate = number(&batch, "change_rate");
            let own_complete = boolean(&batch, "complete_obs");
            let n = batch.num_rows();
            let (mut rate, mut complete) = (Vec::with_capacity(n), Vec::with_capacity(n));
            for i in 0..n {
                let own = own_rate.as_ref().and_then(|c| c.get(i));
                let was_complete = own_complete.is_some_and(|c| c.is_valid(i) && c.value(i));
                match urls.get(i).and_then(|u| estimates.get_key_value(u)) {
                    Some((&url, &(r, c))) => {
                        matched.insert(url, true);
                        filled.rows_estimated += 1;
                        rate.push(Some(r));
                        complete.push(was_complete || c);
                    }
                    None => {
                        match own {
                            Some(_) => filled.rows_kept += 1,
                            None => filled.rows_without_rate += 1,
                        }
                        rate.push(own);
                        complete.push(was_complete);
                    }
                }
            }
            filled.rows += n as u64;
            let columns = out_schema
                .fields()
                .iter()
                .map(|f| -> ArrayRef {
                    match f.name().as_str() {
                        "change_rate" => Arc::new(Float64Array::from(std::mem::take(&mut rate))),
                        "complete_obs" => {
                            Arc::new(BooleanArray::from(std::mem::take(&mut complete)))
                        }
                        name => batch.column_by_name(name).expect("kept column").clone(),
                    }
                })
                .collect();
            writer.write(&RecordBatch::try_new(out_schema.clone(), columns)?)?;
        }
        writer.finish()?;
        filled.files += 1;
    }
    filled.estimates_unmatched = (estimates.len() - matched.len()) as u64;
    Ok(filled)
}

/// The page set's schema with `change_rate` as nullable float64 and `complete_obs` as boolean,
/// replaced in place or appended.
fn filled_schema(schema: &Schema) -> Arc<Schema> {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (name, data_type) in [
        ("change_rate", DataType::Float64),
        ("complete_obs", DataType::Boolean),
    ] {
        let field = Field::new(name, data_type, name == "change_rate");
        match fields.iter().position(|f| f.name() == name) {
            Some(at) => fields[at] = field,
            None => fields.push(field),
        }
    }
    Arc::new(Schema::new(fields))
}
