//! What `estimate` reports.

use std::path::PathBuf;

use serde::Serialize;

use super::format::{count, num};
use super::provenance::Provenance;
use super::TotalSeconds;
use crate::io::history::InvalidRow;
use crate::io::pages_fill::Filled;
use revisit_core::units::SECONDS_PER_DAY;

/// What `revisit estimate` read and wrote.
#[derive(Clone, Debug, Serialize)]
pub struct EstimateSummary {
    #[serde(flatten)]
    pub provenance: Provenance,
    pub rows: u64,
    /// Rows without a url, a finite observed_at_s or a changed flag; the first is named.
    pub rows_invalid: u64,
    pub first_invalid: Option<InvalidRow>,
    pub urls: u64,
    pub urls_complete: u64,
    /// URLs with no observation in the window: their rate is the smoothing prior's.
    pub urls_without_observations: u64,
    /// The window used, seconds since the epoch.
    pub window_from_s: f64,
    pub window_to_s: f64,
    /// Median estimated change rate, per day.
    pub change_rate_median: f64,
    pub out: PathBuf,
    /// With --pages: the filled page set.
    pub pages: Option<Filled>,
    pub out_pages: Option<PathBuf>,
    pub seconds: TotalSeconds,
}

impl EstimateSummary {
    pub fn human(&self) -> String {
        let mut s = format!(
            "revisit estimate: {} rows ({} invalid), {} URLs ({} with complete observations) over {} days; median change rate {} per day\n",
            count(self.rows),
            count(self.rows_invalid),
            count(self.urls),
            count(self.urls_complete),
            num((self.window_to_s - self.window_from_s) / SECONDS_PER_DAY),
            num(self.change_rate_median)
        );
        if let Some(r) = &self.first_invalid {
            s += &format!(
                "  first invalid row: {} row {} column {}\n",
                r.file, r.row, r.column
            );
        }
        if self.urls_without_observations > 0 {
            s += &format!(
                "  {} URLs have no observation in the window: they get the smoothing prior\n",
                count(self.urls_without_observations)
            );
        }
        s += &format!("wrote {}\n", self.out.display());
        if let (Some(f), Some(dir)) = (&self.pages, &self.out_pages) {
            s += &format!(
                "pages: {} rows in {} files, {} with an estimate, {} keep their change_rate, {} have none (run rejects them, or gives them --default-change-days); {} estimated URLs are no page's\nwrote {}\n",
                count(f.rows),
                count(f.files),
                count(f.rows_estimated),
                count(f.rows_kept),
                count(f.rows_without_rate),
                count(f.estimates_unmatched),
                dir.display()
            );
        }
        s
    }
}
