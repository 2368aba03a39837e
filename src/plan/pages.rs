//! The page set a job reads, and its politeness: shared by `run`, `evaluate` and `sweep`.

use std::path::PathBuf;

use revisit_core::units::Seconds;

pub use crate::io::politeness_key::PolitenessKey;

/// Folder of the sample page set shipped in the repository (read when no input is given).
pub const SAMPLE_PAGES: &str = "data/pages";
/// Hosts table of the sample.
pub const SAMPLE_HOSTS: &str = "data/hosts.parquet";
/// The planning horizon when none is given: one day.
pub const DEFAULT_HORIZON: Seconds = Seconds(86_400.0);
/// Seconds between two requests to a host the hosts table does not list.
pub const DEFAULT_MIN_DELAY_S: f64 = 15.0;

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
