//! Which worker holds each host, agreed before the read from a sample of the page set: each worker
//! counts the hosts of the head of one row group, taken from spread places of the input, and every
//! worker builds the same [`Routes`] from their combined counts (see [`revisit_core::balance`]).

use std::collections::HashMap;

use revisit_core::balance::{Routes, Sample};
use revisit_core::reduce::AllReduce;

use super::channel::Reducer;
use super::keys::host_id;
use crate::io::pages::{self, Defaults, PageFile, Unit};
use crate::plan::PagesPlan;

/// Rows a worker samples, at most: the first of one row group. A host at the heavy share (1/64 of
/// a worker's even share: [`revisit_core::balance::HEAVY_SHARE_OF_WORKER`]) has 256 rows in a
/// sample on average on 2 workers and 32 on 16, and a sample keeps it from a quarter of that (on
/// 16 workers, it falls below in 1 sample of 10^7). A quarter of a row group of the default 128K
/// rows: on 10M rows and 2 workers, 0.7% of the rows read, where whole row groups were 2.6%.
const SAMPLE_ROWS: u64 = 1 << 15;

/// The routes every worker agrees on for the page set of `files` (its `units`, in order).
///
/// A sample that cannot be read counts as none: the read that follows reports the error.
pub fn agree(
    reducer: &mut Reducer<'_>,
    files: &[PageFile],
    units: &[Unit],
    plan: &PagesPlan,
) -> Routes {
    let peers = reducer.worker.peers();
    if peers == 1 {
        return Routes::even(1);
    }
    let sample = match sampled_unit(units, reducer.worker.index(), peers) {
        Some(unit) => sample_of(
            &files[unit.file as usize],
            unit.head(SAMPLE_ROWS),
            &plan.defaults,
            peers,
        ),
        None => Sample::default(),
    };
    Routes::balanced(&reducer.all_reduce(sample), peers)
}

/// The unit worker `index` of `peers` samples: the middle of its `index`th of `peers` equal runs
/// of units (spread over the input: in an input sorted by host, units side by side hold the same
/// hosts). None for a text file, which is one unit read whole: sampling it would read it twice.
fn sampled_unit(units: &[Unit], index: usize, peers: usize) -> Option<Unit> {
    if units.is_empty() {
        return None;
    }
    let at = (2 * index + 1) * units.len() / (2 * peers);
    let unit = units[at.min(units.len() - 1)];
    unit.rows.is_some().then_some(unit)
}

/// The hosts of `unit`'s valid rows, counted.
fn sample_of(file: &PageFile, unit: Unit, defaults: &Defaults, peers: usize) -> Sample {
    let mut counts: HashMap<u128, u64> = HashMap::new();
    let mut rows = 0;
    let read = pages::read_unit(
        file,
        unit,
        defaults,
        |chunk| {
            for row in chunk {
                *counts.entry(host_id(row.host.as_bytes())).or_default() += 1;
            }
            rows += chunk.len() as u64;
        },
        |_| {},
    );
    match read {
        Ok(_) => Sample::of(counts, rows, peers),
        Err(_) => Sample::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(n: usize, text: bool) -> Vec<Unit> {
        (0..n)
            .map(|g| Unit {
                file: 0,
                row_group: g,
                first_row: 0,
                rows: (!text).then_some(10),
            })
            .collect()
    }

    #[test]
    fn samples_come_from_spread_places() {
        let at =
            |n, index, peers| sampled_unit(&units(n, false), index, peers).map(|u| u.row_group);
        assert_eq!((at(80, 0, 2), at(80, 1, 2)), (Some(20), Some(60)));
        assert_eq!((at(1, 0, 3), at(1, 2, 3)), (Some(0), Some(0)));
        assert_eq!(at(0, 0, 2), None);
        assert_eq!(
            sampled_unit(&units(4, true), 0, 2).map(|u| u.row_group),
            None
        );
    }

    #[test]
    fn a_sample_counts_the_hosts_of_the_head_of_its_row_group() {
        use std::sync::Arc;

        use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
        use arrow_schema::{DataType, Field, Schema};

        // 30 rows in row groups of 10; row i on host h(i mod 3)
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pages.parquet");
        let urls: Vec<String> = (0..30)
            .map(|i| format!("https://h{}.example/{i}", i % 3))
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("change_rate", DataType::Float64, false),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(urls)),
            Arc::new(Float64Array::from(vec![0.5; 30])),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let mut w = crate::io::parquet_out::Writer::create(&path, schema, &[], 10).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        let files = pages::open_all(&[path], Default::default()).unwrap();
        let units = pages::units(&files);
        assert_eq!(units.len(), 3);
        let defaults = Defaults {
            importance: 1.0,
            importance_fills_nulls: false,
            change_rate: 0.0,
            change_rate_fills_nulls: false,
        };
        // rows 10 to 13: hosts 1, 2, 0, 1
        let s = sample_of(&files[0], units[1].head(4), &defaults, 2);
        assert_eq!((s.rows, s.samples), (4, 1));
        let rows_of = |h: &str| {
            let id = host_id(h.as_bytes());
            s.hosts.iter().find(|x| x.id == id).map(|x| x.rows)
        };
        assert_eq!(
            [
                rows_of("h0.example"),
                rows_of("h1.example"),
                rows_of("h2.example")
            ],
            [Some(1), Some(2), Some(1)]
        );
    }
}
