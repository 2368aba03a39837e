//! Writing estimated change rates: one row per URL with what the estimate rests on.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::{BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};

use super::{parquet_out, schema};

/// The estimates of some URLs, column by column.
pub struct ChangeRates<'a> {
    pub urls: Vec<&'a str>,
    /// Changes per day.
    pub change_rate: &'a [f64],
    pub complete_obs: &'a [bool],
    pub observations: &'a [u64],
    pub changes: &'a [u64],
}

/// Writes `rates` to `path` (its folder created if needed), `provenance` first in its metadata.
pub fn write(path: &Path, provenance: &[(String, String)], rates: &ChangeRates) -> Result<()> {
    let batch = RecordBatch::try_new(
        schema::change_rates(),
        vec![
            Arc::new(StringArray::from_iter_values(&rates.urls)),
            Arc::new(Float64Array::from(rates.change_rate.to_vec())),
            Arc::new(BooleanArray::from(rates.complete_obs.to_vec())),
            Arc::new(UInt64Array::from(rates.observations.to_vec())),
            Arc::new(UInt64Array::from(rates.changes.to_vec())),
        ],
    )?;
    let mut metadata = provenance.to_vec();
    metadata.extend([
        ("revisit.units.change_rate".to_owned(), "1/day".to_owned()),
        (
            "revisit.estimator".to_owned(),
            "NeurIPS'19 eqs. 10 (incomplete) and 11 (complete), smoothing 0.5".to_owned(),
        ),
    ]);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    parquet_out::write(path, schema::change_rates(), &[batch], &metadata)?;
    Ok(())
}
