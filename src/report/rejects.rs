//! Rejected rows in a few words: the counts by reason and the first rows to look at, for the error
//! that stops a job when too many rows are rejected.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::format::count;
use crate::io::pages::{Reason, Rejected};
use revisit_core::reduce::Combine;

/// Rejected rows shown in an error.
pub const SHOWN: usize = 5;

/// The first rejected rows (by file, then row) of all workers, combined.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct First(pub Vec<Rejected>);

impl First {
    /// This worker's first rows.
    pub fn of(rejected: &[Rejected]) -> Self {
        let mut first: Vec<Rejected> = rejected.to_vec();
        first.sort_by_key(|r| r.origin);
        first.truncate(SHOWN);
        First(first)
    }
}

impl Combine for First {
    fn combine(&mut self, o: Self) {
        self.0.extend(o.0);
        self.0.sort_by_key(|r| r.origin);
        self.0.truncate(SHOWN);
    }
}

/// "by reason: change_rate_missing 3, url_missing 1; first: pages.csv row 0 (change_rate_missing),
/// ..." for counts in [`Reason::ALL`] order and the first rows, whose files index `files`.
pub fn explain(by_reason: &[u64], first: &[Rejected], files: &[PathBuf]) -> String {
    let reasons: Vec<String> = Reason::ALL
        .iter()
        .zip(by_reason)
        .filter(|(_, &n)| n > 0)
        .map(|(r, &n)| format!("{} {}", r.name(), count(n)))
        .collect();
    let rows: Vec<String> = first
        .iter()
        .map(|r| {
            let file = files
                .get(r.origin.file as usize)
                .map_or_else(|| "?".to_owned(), |p| p.display().to_string());
            format!("{file} row {} ({})", r.origin.row, r.reason.name())
        })
        .collect();
    format!(
        "rejected by reason: {}; first rejected rows: {}",
        reasons.join(", "),
        rows.join(", ")
    )
}
