//! The page set a job reads, and its politeness: shared by `run`, `evaluate` and `sweep`.

use std::path::PathBuf;

use revisit_core::units::Seconds;

use crate::io::pages::Defaults;
pub use crate::io::politeness_key::PolitenessKey;

/// Folder of the sample page set shipped in the repository (read when no input is given).
pub const SAMPLE_PAGES: &str = "data/pages";
/// Hosts table of the sample.
pub const SAMPLE_HOSTS: &str = "data/hosts.parquet";
/// The planning horizon when none is given: one day.
pub const DEFAULT_HORIZON: Seconds = Seconds(86_400.0);
/// Seconds between two requests to a host the hosts table does not list.
pub const DEFAULT_MIN_DELAY_S: f64 = 15.0;
/// Importance of the rows of a file without an importance column: every page alike.
pub const DEFAULT_IMPORTANCE: f64 = 1.0;
/// Days between changes of the rows of a file without a change_rate column: Nutch's
/// `db.fetch.interval.default`, the interval crawl teams start every new page at.
pub const DEFAULT_CHANGE_DAYS: f64 = 30.0;
/// The largest share of rejected rows a job accepts unless told otherwise: beyond it the input is
/// more likely broken than dirty.
pub const DEFAULT_MAX_REJECT_SHARE: f64 = 0.5;

/// Bytes of records and places (the sort keys take the records' room first) in a part of the rows
/// a worker arranges by host, about: more rows are arranged in parts, one after the other in the
/// same buffers (a part may come up to 8 times larger, where cutting it finer would cost a copy
/// of its rows or too many batches in flight: `job::arrange::sent_part_bits`). Parts of 32 MiB
/// (8 a worker on the 10M-URL bench) against 256 MiB: the exchange phase 25% shorter and the
/// peak 8% lower there (medians of 6 pairs of runs).
pub const DEFAULT_ARRANGE_PART_BYTES: usize = 32 << 20;
/// The environment variable that sets [`PagesPlan::arrange_part_bytes`] for the tests (so that
/// small inputs are arranged in parts as large ones are). Never set it in production.
pub const ARRANGE_PART_BYTES_VAR: &str = "REVISIT_ARRANGE_PART_BYTES";

/// [`PagesPlan::arrange_part_bytes`]: [`DEFAULT_ARRANGE_PART_BYTES`], or what
/// [`ARRANGE_PART_BYTES_VAR`] says.
pub fn arrange_part_bytes() -> anyhow::Result<usize> {
    match std::env::var(ARRANGE_PART_BYTES_VAR) {
        Err(_) => Ok(DEFAULT_ARRANGE_PART_BYTES),
        Ok(v) => match v.parse::<usize>() {
            Ok(bytes) if bytes > 0 => Ok(bytes),
            _ => anyhow::bail!(
                "{ARRANGE_PART_BYTES_VAR} must be a positive number of bytes, got {v:?}: unset it"
            ),
        },
    }
}

/// Which pages, which politeness, over which horizon.
#[derive(Clone, Debug, PartialEq)]
pub struct PagesPlan {
    /// Page sets as given: Parquet files, folders or glob patterns.
    pub inputs: Vec<String>,
    /// Hosts table with per-host politeness delays.
    pub hosts: Option<PathBuf>,
    /// Delay of the hosts the table does not list.
    pub default_delay: Seconds,
    /// The planning horizon (caps and budgets in the hosts table are per horizon).
    pub horizon: Seconds,
    /// `importance` is Frontera's value of a new version: the solver's importance is w x change
    /// rate ([`PagesPlan::importance`]).
    pub value_per_change: bool,
    /// Which rows share a politeness cap.
    pub politeness: PolitenessKey,
    /// What rows without an importance or a change rate take.
    pub defaults: Defaults,
    /// The largest share of rejected rows the job goes on with.
    pub max_reject_share: f64,
    /// Bytes of records and places in a part of the rows a worker arranges, about
    /// ([`arrange_part_bytes`]).
    pub arrange_part_bytes: usize,
}

/// What rows without an importance or a change rate take, from `--default-importance` and
/// `--default-change-days` as given (None: not given; the defaults then apply only to files without
/// the column); fails, naming the option, on a value no page can take.
pub fn resolve_defaults(
    importance: Option<f64>,
    change_days: Option<f64>,
) -> anyhow::Result<Defaults> {
    let value = importance.unwrap_or(DEFAULT_IMPORTANCE);
    if !(value.is_finite() && value > 0.0) {
        anyhow::bail!("--default-importance must be a positive weight, got {value}");
    }
    let days = change_days.unwrap_or(DEFAULT_CHANGE_DAYS);
    if days.is_nan() || days <= 0.0 {
        anyhow::bail!(
            "--default-change-days must be positive days (inf: never changes), got {days}"
        );
    }
    Ok(Defaults {
        importance: value,
        importance_fills_nulls: importance.is_some(),
        // 1/inf = 0: a page that never changes
        change_rate: 1.0 / days,
        change_rate_fills_nulls: change_days.is_some(),
    })
}

impl PagesPlan {
    /// The solver's importance of a row: as read, or the value per change times the change rate.
    #[inline]
    pub fn importance(&self, importance: f64, change_rate: f64) -> f64 {
        if self.value_per_change {
            importance * change_rate
        } else {
            importance
        }
    }
}
