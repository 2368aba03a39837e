//! Writing the hosts table: one row per host with its crawler, cap, demand and budget.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int32Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use serde::{Deserialize, Serialize};

use super::parquet_out::{self, ROW_GROUP_ROWS};
use super::schema;

/// One row of the hosts table (cap, demand and budget in fetches per horizon).
#[derive(Clone, Copy, Debug)]
pub struct HostRow<'a> {
    pub host: &'a str,
    pub crawler: u32,
    pub cap: f64,
    pub demand: f64,
    pub budget: f64,
    pub capped: bool,
    pub multiplier: f64,
}

/// Rows of the hosts table in columns, the names back to back: one allocation for every name, not
/// one String per host (at 3M hosts their allocation, encoding and decoding took a tenth of the
/// write phase).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HostRows {
    names: String,
    /// End of each row's name in `names`.
    #[serde(with = "crate::plain")]
    name_end: Vec<u64>,
    #[serde(with = "crate::plain")]
    crawler: Vec<u32>,
    #[serde(with = "crate::plain")]
    cap: Vec<f64>,
    #[serde(with = "crate::plain")]
    demand: Vec<f64>,
    #[serde(with = "crate::plain")]
    budget: Vec<f64>,
    #[serde(with = "crate::plain::bools")]
    capped: Vec<bool>,
    #[serde(with = "crate::plain")]
    multiplier: Vec<f64>,
}

impl HostRows {
    /// Room for `rows` rows whose names take `name_bytes` bytes together: grown row by row, the
    /// names were copied at each doubling and faulted in afresh (on 1.55M hosts, 40% of the
    /// time of building the rows).
    pub fn with_capacity(rows: usize, name_bytes: usize) -> Self {
        HostRows {
            names: String::with_capacity(name_bytes),
            name_end: Vec::with_capacity(rows),
            crawler: Vec::with_capacity(rows),
            cap: Vec::with_capacity(rows),
            demand: Vec::with_capacity(rows),
            budget: Vec::with_capacity(rows),
            capped: Vec::with_capacity(rows),
            multiplier: Vec::with_capacity(rows),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: HostRow<'_>) {
        self.names.push_str(row.host);
        self.name_end.push(self.names.len() as u64);
        self.crawler.push(row.crawler);
        self.cap.push(row.cap);
        self.demand.push(row.demand);
        self.budget.push(row.budget);
        self.capped.push(row.capped);
        self.multiplier.push(row.multiplier);
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.name_end.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.name_end.is_empty()
    }

    /// Host name of row `i`; empty if the row's bounds do not fall on the text's characters (a
    /// broken invariant, not a reason to panic a worker).
    pub fn name(&self, i: usize) -> &str {
        let start = if i == 0 {
            0
        } else {
            self.name_end[i - 1] as usize
        };
        self.names
            .get(start..self.name_end[i] as usize)
            .unwrap_or("")
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> HostRow<'_> {
        HostRow {
            host: self.name(i),
            crawler: self.crawler[i],
            cap: self.cap[i],
            demand: self.demand[i],
            budget: self.budget[i],
            capped: self.capped[i],
            multiplier: self.multiplier[i],
        }
    }

    /// The rows of `parts`, each sorted by host name, merged into one sequence sorted by name (ties
    /// in the order of the parts).
    pub fn merged(parts: &[HostRows]) -> impl Iterator<Item = HostRow<'_>> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut heads: BinaryHeap<Reverse<(&str, usize, usize)>> = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(k, p)| Reverse((p.name(0), k, 0)))
            .collect();
        std::iter::from_fn(move || {
            // the next head replaces the one taken in place: one sift, where a pop and a push
            // took two
            let mut top = heads.peek_mut()?;
            let Reverse((_, k, i)) = *top;
            if i + 1 < parts[k].len() {
                *top = Reverse((parts[k].name(i + 1), k, i + 1));
            } else {
                std::collections::binary_heap::PeekMut::pop(top);
            }
            Some(parts[k].row(i))
        })
    }
}

/// Writes the hosts table from `rows` (already sorted); returns (rows, bytes written).
pub fn write_hosts<'a>(
    path: &Path,
    rows: impl IntoIterator<Item = HostRow<'a>>,
    metadata: &[(String, String)],
) -> Result<(u64, u64)> {
    let mut writer =
        parquet_out::Writer::create_keyed(path, schema::hosts(), metadata, ROW_GROUP_ROWS, "host")?;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let mut host = StringBuilder::new();
        let mut crawler = Int32Builder::new();
        let (mut cap, mut demand, mut budget, mut mult) = (
            Float64Builder::new(),
            Float64Builder::new(),
            Float64Builder::new(),
            Float64Builder::new(),
        );
        let mut capped = BooleanBuilder::new();
        for h in rows.by_ref().take(ROW_GROUP_ROWS) {
            host.append_value(h.host);
            crawler.append_value(h.crawler as i32);
            // no inf in a published column: an unbounded cap or demand is null
            cap.append_option(Some(h.cap).filter(|c| c.is_finite()));
            demand.append_option(Some(h.demand).filter(|d| d.is_finite()));
            budget.append_value(h.budget);
            capped.append_value(h.capped);
            mult.append_value(h.multiplier);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(host.finish()),
            Arc::new(crawler.finish()),
            Arc::new(cap.finish()),
            Arc::new(demand.finish()),
            Arc::new(budget.finish()),
            Arc::new(capped.finish()),
            Arc::new(mult.finish()),
        ];
        writer.write(&RecordBatch::try_new(schema::hosts(), columns)?)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(names: &[&str], crawler: u32) -> HostRows {
        let mut r = HostRows::default();
        for (i, &host) in names.iter().enumerate() {
            r.push(HostRow {
                host,
                crawler,
                cap: i as f64,
                demand: f64::INFINITY,
                budget: 0.5,
                capped: i % 2 == 0,
                multiplier: 1.0,
            });
        }
        r
    }

    #[test]
    fn parts_sorted_by_name_merge_into_one_order_with_their_rows_whole() {
        let parts = [
            rows(&["a.example", "c.example", "e.example"], 0),
            rows(&[], 1),
            rows(&["b.example", "d.example", "é.example"], 2),
            rows(&["c.example"], 3),
        ];
        let merged: Vec<(String, u32, f64, bool)> = HostRows::merged(&parts)
            .map(|r| (r.host.to_owned(), r.crawler, r.cap, r.capped))
            .collect();
        let mut want: Vec<(String, u32, f64, bool)> = parts
            .iter()
            .flat_map(|p| (0..p.len()).map(|i| p.row(i)))
            .map(|r| (r.host.to_owned(), r.crawler, r.cap, r.capped))
            .collect();
        want.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)));
        assert_eq!(merged, want);
        assert!(HostRows::merged(&[]).next().is_none());
    }
}
