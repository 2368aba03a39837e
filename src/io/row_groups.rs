//! A Parquet file's row groups as units of work: their row counts from the footer, and the
//! non-empty ones with the number in the file of their first row (so errors name the file's row).

use parquet::file::metadata::ParquetMetaData;

/// Rows of each row group of a file, from its footer.
pub fn row_counts(meta: &ParquetMetaData) -> Vec<u64> {
    meta.row_groups()
        .iter()
        .map(|rg| rg.num_rows() as u64)
        .collect()
}

/// The non-empty row groups of a file whose groups hold `rows` rows each, in order: (row group,
/// number in the file of its first row).
pub fn nonempty(rows: &[u64]) -> impl Iterator<Item = (usize, u64)> + '_ {
    let starts = rows.iter().scan(0u64, |next, &n| {
        let first = *next;
        *next += n;
        Some(first)
    });
    rows.iter()
        .zip(starts)
        .enumerate()
        .filter(|(_, (&n, _))| n > 0)
        .map(|(g, (_, first))| (g, first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_row_groups_are_skipped_and_first_rows_count_every_group() {
        let units: Vec<(usize, u64)> = nonempty(&[3, 0, 5, 0, 2]).collect();
        assert_eq!(units, vec![(0, 0), (2, 3), (4, 8)]);
        assert_eq!(nonempty(&[]).count(), 0);
        assert_eq!(nonempty(&[0, 0]).count(), 0);
    }
}
