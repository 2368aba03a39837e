//! The hosts table: each host's politeness delay (robots.txt Crawl-delay or an operator's choice).

use std::fs::File;
use std::path::Path;

use anyhow::{bail, Context, Result};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::columns::{check_column, number, text, Kind};
use super::politeness_key::PolitenessKey;
use revisit_core::units::Seconds;

/// Minimum delay between two requests to a host, for the hosts of the table a worker holds, by
/// host identity: 24 bytes a host, where a map by name took about 80 for every host of the table
/// on every worker (a third of the peak on 3M-host sets).
#[derive(Debug, Default)]
pub struct HostDelays {
    /// (host identity, delay), sorted by identity.
    by_id: Vec<(u128, Seconds)>,
    /// Rows of the table (every worker's hosts).
    listed: u64,
}

impl HostDelays {
    /// Rows of the table, whichever worker holds them.
    pub fn listed(&self) -> u64 {
        self.listed
    }

    /// A reader of delays for hosts asked in increasing identity (a merge with hosts in canonical
    /// order: no search, no cache miss per host).
    pub fn in_order(&self) -> DelaysInOrder<'_> {
        DelaysInOrder {
            rest: &self.by_id,
            last: 0,
        }
    }
}

/// Delays of hosts asked in increasing identity ([`HostDelays::in_order`]).
pub struct DelaysInOrder<'a> {
    rest: &'a [(u128, Seconds)],
    last: u128,
}

impl DelaysInOrder<'_> {
    /// The delay of the host of identity `id`, if the table lists it; `id` no less than the last.
    #[inline]
    pub fn get(&mut self, id: u128) -> Option<Seconds> {
        debug_assert!(id >= self.last, "hosts asked out of order");
        self.last = id;
        let mut k = 0;
        while k < SCAN_AHEAD && k < self.rest.len() && self.rest[k].0 < id {
            k += 1;
        }
        if k == SCAN_AHEAD {
            // far ahead (hosts the table lists but this worker does not have): search the rest
            k += self.rest[k..].partition_point(|e| e.0 < id);
        }
        self.rest = &self.rest[k..];
        match self.rest.first() {
            Some(&(first, delay)) if first == id => Some(delay),
            _ => None,
        }
    }
}

/// Entries a merge steps over before it searches (hosts asked are most often a few entries apart).
const SCAN_AHEAD: usize = 64;

/// Reads a hosts table (`host` utf8, `min_delay_s` number >= 0; 0 means no limit), its hosts
/// normalised as the pages' politeness keys are, keeping the delays of the hosts `mine` holds by
/// their `identity`. Every worker reads and checks every row, so that all fail alike.
pub fn read(
    path: &Path,
    key: PolitenessKey,
    identity: impl Fn(&str) -> u128,
    mine: impl Fn(&str) -> bool,
) -> Result<HostDelays> {
    let f =
        File::open(path).with_context(|| format!("hosts table {}: cannot open", path.display()))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f).with_context(|| {
        format!(
            "hosts table {}: not a readable Parquet file",
            path.display()
        )
    })?;
    check_column(path, builder.schema(), "host", Kind::Text, true).map_err(|e| {
        anyhow::anyhow!("hosts table: {e:#}")
            .context("a hosts table needs columns host and min_delay_s")
    })?;
    if !check_column(path, builder.schema(), "min_delay_s", Kind::Number, false)? {
        bail!(
            "hosts table {}: no column 'min_delay_s' (the minimum delay between requests, seconds)",
            path.display()
        );
    }
    let reader = builder
        .build()
        .with_context(|| format!("hosts table {}: unreadable", path.display()))?;
    let mut delays = HostDelays::default();
    // every host's identity and row, to find a host listed twice (every worker finds it alike)
    let mut rows: Vec<(u128, u64)> = Vec::new();
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.with_context(|| {
            format!("hosts table {}: unreadable from row {row}", path.display())
        })?;
        let hosts = text(&batch, "host").context("hosts table: column host")?;
        let delay = number(&batch, "min_delay_s").context("hosts table: column min_delay_s")?;
        for i in 0..batch.num_rows() {
            let Some(host) = hosts.get(i).and_then(|h| key.table_value(h)) else {
                bail!(
                    "hosts table {}: row {row}, column host: {:?} names no host (empty, null, or not a host name)",
                    path.display(),
                    hosts.get(i).unwrap_or("")
                );
            };
            let Some(d) = delay.get(i) else {
                bail!("hosts table {}: row {row}, column min_delay_s: null (give seconds, 0 for no limit)", path.display());
            };
            if !(d.is_finite() && d >= 0.0) {
                bail!("hosts table {}: row {row}, column min_delay_s: {d} is not a delay in seconds >= 0", path.display());
            }
            let id = identity(&host);
            rows.push((id, row));
            if mine(&host) {
                delays.by_id.push((id, Seconds(d)));
            }
            row += 1;
        }
    }
    rows.sort_unstable();
    if let Some(pair) = rows.windows(2).find(|p| p[0].0 == p[1].0) {
        let (first, second) = (pair[0].1, pair[1].1);
        bail!(
            "hosts table {}: host {} appears twice (rows {first} and {second}); keep one",
            path.display(),
            host_at(path, key, first).unwrap_or_default()
        );
    }
    delays.by_id.sort_unstable_by_key(|e| e.0);
    delays.by_id.shrink_to_fit();
    delays.listed = row;
    Ok(delays)
}

/// The host of row `row` of a hosts table already read once (to name a host in an error).
fn host_at(path: &Path, key: PolitenessKey, row: u64) -> Option<String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).ok()?)
        .ok()?
        .build()
        .ok()?;
    let mut first = 0u64;
    for batch in reader {
        let batch = batch.ok()?;
        let n = batch.num_rows() as u64;
        if row < first + n {
            let hosts = text(&batch, "host")?;
            return hosts
                .get((row - first) as usize)
                .and_then(|h| key.table_value(h));
        }
        first += n;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A hosts table of `rows` (host, delay) in a fresh folder.
    fn table(rows: &[(&str, f64)]) -> (tempfile::TempDir, std::path::PathBuf) {
        use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts.parquet");
        let batch = RecordBatch::try_from_iter([
            (
                "host",
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
            ),
            (
                "min_delay_s",
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.1))) as ArrayRef,
            ),
        ])
        .unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(
            File::create(&path).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        (dir, path)
    }

    /// A toy identity: the name's first byte (distinct in these tests), ordered as names are.
    fn first_byte(h: &str) -> u128 {
        h.as_bytes()[0] as u128
    }

    #[test]
    fn a_worker_keeps_its_hosts_and_finds_them_in_order() {
        let rows = [
            ("d.example", 4.0),
            ("a.example", 1.0),
            ("c.example", 3.0),
            ("b.example", 2.0),
        ];
        let (_dir, path) = table(&rows);
        let not_c = |h: &str| !h.starts_with('c');
        let delays = read(&path, PolitenessKey::Host, first_byte, not_c).unwrap();
        assert_eq!(delays.listed(), 4);
        let mut in_order = delays.in_order();
        let asked: Vec<Option<f64>> = ["0", "a", "b", "c", "d", "e"]
            .iter()
            .map(|h| in_order.get(first_byte(h)).map(|d| d.0))
            .collect();
        // c is another worker's; 0 and e are not listed
        assert_eq!(asked, [None, Some(1.0), Some(2.0), None, Some(4.0), None]);
    }

    #[test]
    fn hosts_far_ahead_are_found_past_the_scan() {
        let names: Vec<String> = (0..1000).map(|i| format!("h{i:04}.example")).collect();
        let rows: Vec<(&str, f64)> = names.iter().map(|n| (n.as_str(), 1.0)).collect();
        let (_dir, path) = table(&rows);
        let number = |h: &str| h[1..5].parse::<u128>().unwrap();
        let delays = read(&path, PolitenessKey::Host, number, |_| true).unwrap();
        let mut in_order = delays.in_order();
        for i in [0, 3, SCAN_AHEAD as u128 + 3, 500, 501, 999] {
            assert_eq!(in_order.get(i).map(|d| d.0), Some(1.0), "host {i}");
        }
        assert_eq!(in_order.get(1000), None);
    }

    #[test]
    fn a_host_listed_twice_is_named_with_both_rows() {
        let rows = [("a.example", 1.0), ("b.example", 2.0), ("A.EXAMPLE", 3.0)];
        let (_dir, path) = table(&rows);
        // the identity of the normalised name: "A.EXAMPLE" is a.example
        let e = read(&path, PolitenessKey::Host, first_byte, |_| false).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("host a.example appears twice (rows 0 and 2)"),
            "{e}"
        );
    }
}
