//! How a job took the rows of its page set, as every summary tells it: rejected rows by reason, and
//! the defaults that rows without a value took.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::format::{count, num};
use crate::io::pages::{Defaults, Reason};

/// Rejected rows by reason name, for the reasons that occurred (counts in [`Reason::ALL`] order).
pub fn by_reason(counts: &[u64]) -> BTreeMap<String, u64> {
    Reason::ALL
        .iter()
        .zip(counts)
        .filter(|(_, &n)| n > 0)
        .map(|(r, &n)| (r.name().to_owned(), n))
        .collect()
}

/// The defaults of rows without an importance or a change rate, and how many valid rows took
/// each (duplicates included).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DefaultsUsed {
    /// The importance rows without one took.
    pub importance: f64,
    pub importance_rows: u64,
    /// The change rate rows without one took, changes per day.
    pub change_rate: f64,
    pub change_rate_rows: u64,
}

impl DefaultsUsed {
    /// `defaults` and the rows that took them.
    pub fn new(defaults: &Defaults, importance_rows: u64, change_rate_rows: u64) -> Self {
        DefaultsUsed {
            importance: defaults.importance,
            importance_rows,
            change_rate: defaults.change_rate,
            change_rate_rows,
        }
    }

    /// A line for people when some row took a default ("" otherwise).
    pub fn human(&self) -> String {
        let mut parts = Vec::new();
        if self.importance_rows > 0 {
            parts.push(format!(
                "{} rows took importance {} (--default-importance)",
                count(self.importance_rows),
                num(self.importance)
            ));
        }
        if self.change_rate_rows > 0 {
            let every = if self.change_rate > 0.0 {
                format!("one change every {} days", num(1.0 / self.change_rate))
            } else {
                "never".to_owned()
            };
            parts.push(format!(
                "{} rows took change rate {} per day, {every} (--default-change-days)",
                count(self.change_rate_rows),
                num(self.change_rate)
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("  defaults: {}\n", parts.join("; "))
        }
    }
}
