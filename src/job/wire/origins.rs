//! The origins of a batch's rows as steps of a byte: a batch's rows come from one reader in input
//! order, so each row's origin is a few rows past the one before it, and a step takes 1 byte where
//! a packed origin takes 8. Origins are read only for duplicate rows (rare), so a read may walk
//! a few dozen steps.

use serde::{Deserialize, Serialize};

/// Rows between two origins held whole (a read walks at most this many steps).
const BLOCK: usize = 64;

/// A column of packed origins ([`super::claims::pack`]), held as steps.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Origins {
    /// Each row's step from the row before it (0: the row starts a block, or its origin is in
    /// `jumps`).
    #[serde(with = "serde_bytes")]
    steps: Vec<u8>,
    /// The origin of every [`BLOCK`]-th row.
    #[serde(with = "crate::plain")]
    marks: Vec<u64>,
    /// (row, origin) of the rows inside a block whose step does not fit in 1..=255 (a new file or
    /// row group, rows routed elsewhere in between), by row.
    jumps: Vec<(u32, u64)>,
    /// The origin of the last row pushed.
    #[serde(skip)]
    last: u64,
}

impl Origins {
    /// Bytes held on the heap (room used or not).
    pub fn room_bytes(&self) -> usize {
        use crate::job::heap::room_bytes;
        room_bytes(&self.steps) + room_bytes(&self.marks) + room_bytes(&self.jumps)
    }

    /// Room for `rows` rows.
    pub fn with_capacity(rows: usize) -> Self {
        Origins {
            steps: Vec::with_capacity(rows),
            marks: Vec::with_capacity(rows.div_ceil(BLOCK)),
            ..Default::default()
        }
    }

    /// Appends a row's packed origin.
    pub fn push(&mut self, packed: u64) {
        let row = self.steps.len();
        let step = packed.wrapping_sub(self.last);
        if row.is_multiple_of(BLOCK) {
            self.marks.push(packed);
            self.steps.push(0);
        } else if (1..=u8::MAX as u64).contains(&step) {
            self.steps.push(step as u8);
        } else {
            self.steps.push(0);
            self.jumps.push((row as u32, packed));
        }
        self.last = packed;
    }

    /// The packed origin of row `i`.
    pub fn get(&self, i: usize) -> u64 {
        let block = i / BLOCK;
        let (mut row, mut origin) = (block * BLOCK, self.marks[block]);
        // the last jump at or before `i`, if it is inside this block
        let j = self.jumps.partition_point(|&(r, _)| r as usize <= i);
        if let Some(&(r, o)) = j.checked_sub(1).map(|j| &self.jumps[j]) {
            if r as usize > row {
                (row, origin) = (r as usize, o);
            }
        }
        for &step in &self.steps[row + 1..=i] {
            origin += step as u64;
        }
        origin
    }

    /// Every row's packed origin, in row order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let mut jumps = self.jumps.iter().peekable();
        let mut origin = 0;
        self.steps.iter().enumerate().map(move |(row, &step)| {
            if row % BLOCK == 0 {
                origin = self.marks[row / BLOCK];
            } else if step > 0 {
                origin += step as u64;
            } else if let Some(&&(_, o)) = jumps.peek() {
                origin = o;
                jumps.next();
            }
            origin
        })
    }

    /// Gives back spare capacity (a batch about to be sent).
    pub fn shrink_to_fit(&mut self) {
        self.steps.shrink_to_fit();
        self.marks.shrink_to_fit();
        self.jumps.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn origins(packed: &[u64]) -> Origins {
        let mut o = Origins::with_capacity(packed.len());
        for &p in packed {
            o.push(p);
        }
        o
    }

    proptest! {
        /// Any sequence reads back as pushed, by row and in order: small steps, steps past a
        /// byte, repeats, steps back (none of these are assumed away), across blocks.
        #[test]
        fn origins_read_back_as_pushed(
            gaps in proptest::collection::vec(
                prop_oneof![
                    4 => 1u64..4,
                    1 => 200u64..300,
                    1 => Just(0u64),
                    1 => (1u64 << 40)..(1u64 << 42),
                ],
                0..400,
            ),
            back in proptest::collection::vec(any::<bool>(), 0..400),
        ) {
            let mut packed = Vec::with_capacity(gaps.len());
            let mut at = 1u64 << 41;
            for (k, &g) in gaps.iter().enumerate() {
                at = if back.get(k).copied().unwrap_or(false) { at.wrapping_sub(g) } else { at + g };
                packed.push(at);
            }
            let o = origins(&packed);
            for (i, &p) in packed.iter().enumerate() {
                prop_assert_eq!(o.get(i), p, "row {}", i);
            }
            prop_assert_eq!(o.iter().collect::<Vec<_>>(), packed);
        }
    }

    #[test]
    fn rows_of_one_reader_take_a_byte_each() {
        // every other row of two files, as a batch for one of two workers receives them
        let packed: Vec<u64> = (0..10_000u64)
            .map(|r| {
                if r < 5_000 {
                    2 * r
                } else {
                    (1 << 40) | (2 * r)
                }
            })
            .collect();
        let o = origins(&packed);
        assert_eq!(o.jumps.len(), 1, "one jump, at the second file");
        assert_eq!(o.marks.len(), 10_000usize.div_ceil(BLOCK));
        assert_eq!(o.steps.len(), 10_000);
        assert_eq!(o.get(5_000), packed[5_000]);
        assert_eq!(o.get(9_999), packed[9_999]);
    }

    #[test]
    fn origins_cross_processes_whole() {
        let packed: Vec<u64> = (0..300u64).map(|r| 7 + 3 * r + (r / 100) * 1000).collect();
        let o = origins(&packed);
        let back: Origins = bincode::deserialize(&bincode::serialize(&o).unwrap()).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), packed);
    }
}
