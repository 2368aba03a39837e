//! Which worker holds each host, agreed before the read from a sample of the page set: each worker
//! counts the hosts of one row group, taken from spread places of the input, and every worker
//! builds the same [`Routes`] from their combined counts (see [`revisit_core::balance`]).

use std::collections::HashMap;

use revisit_core::balance::{Routes, Sample};
use revisit_core::reduce::AllReduce;

use super::channel::Reducer;
use super::keys::host_id;
use crate::io::pages::{self, PageFile, Unit};
use crate::plan::PagesPlan;

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
        Some(unit) => sample_of(&files[unit.file as usize], unit, plan, peers),
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
fn sample_of(file: &PageFile, unit: Unit, plan: &PagesPlan, peers: usize) -> Sample {
    let mut counts: HashMap<u128, u64> = HashMap::new();
    let mut rows = 0;
    let read = pages::read_unit(
        file,
        unit,
        &plan.defaults,
        |row| {
            *counts.entry(host_id(row.host.as_bytes())).or_default() += 1;
            rows += 1;
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
}
