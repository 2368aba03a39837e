//! Input checks shared by the planner's models, with errors that say which flag to fix.

use anyhow::{bail, Result};

/// Fails unless `value` is finite and > 0; the error names `flag` and what the number means.
pub(crate) fn check_positive(flag: &str, value: f64, what: &str) -> Result<()> {
    // is_finite also rejects NaN, which would slip through `value <= 0.0`.
    if !value.is_finite() || value <= 0.0 {
        bail!("{flag} must be a finite number > 0 ({what}), got {value}");
    }
    Ok(())
}
