//! Which entry each host has in the batches one reader fills (one per worker and part), by host
//! identity: one cache for all of them, so that naming a row's host costs one lookup in one table.
//!
//! Why: a reader fills a batch for every worker and, past a few million rows a worker, for every
//! part of its hosts, 16 on 2 workers at 100M URLs. A cache in each batch, checked against the host
//! names it holds, missed the processor's cache twice a row (the slot, then the name): the read
//! phase's largest cost. Here a slot holds the host's 128-bit identity, which settles the match
//! alone (the identities order the hosts everywhere in the job: a collision among 10^9 hosts has
//! probability below 10^-20), and no name is read. Rows read from a host dictionary are found
//! by their place in it instead (`io::host_dictionary`): no identity to hash.

use crate::io::host_dictionary::HostToken;
use crate::prefetch::prefetch_at;

/// Slots per batch the memo serves, up to [`MAX_SLOTS`] (24 bytes each), rounded up to a power of
/// two: a slot is then found by a mask, where a remainder cost a division a row (a tenth of the
/// reader's own time at 100M's shape, rows whose host is not in a dictionary).
const SLOTS_PER_BATCH: usize = 1 << 14;
/// Slots at most: 1.5 MB.
const MAX_SLOTS: usize = 1 << 16;

/// A host's entry in one filling of its batch.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// The host's identity, as (high, low) halves (a u128 would align the slot to 32 bytes).
    id: [u64; 2],
    /// Which filling of the host's batch the entry is in (see [`HostMemo::sent`]).
    filling: u32,
    /// The entry, +1 (0: an empty slot).
    entry: u32,
}

/// What the memo knows of a value of the reader's current host dictionary: its host's batch, and
/// entry in one filling of that batch (12 bytes: a row group's table of them stays in cache).
#[derive(Clone, Copy, Default)]
struct Known {
    batch: u32,
    filling: u32,
    /// The entry, +1 (0: a value not met yet).
    entry: u32,
}

/// The entries of hosts in a reader's batches (a direct-mapped cache: a host evicted by another
/// is named again, which costs bytes, never a wrong row), and of the values of the host
/// dictionary the reader reads (see [`HostToken`]: no hashing of the name, no cache miss on a
/// table of every host, only an index into the row group's own hosts).
pub struct HostMemo {
    slots: Vec<Slot>,
    /// How many times each batch was sent on (an entry holds while its batch does).
    fillings: Vec<u32>,
    /// The dictionary `known` describes, by index.
    dictionary: u64,
    known: Vec<Known>,
}

impl HostMemo {
    /// A memo for `batches` batches, indexed 0..batches.
    pub fn new(batches: usize) -> Self {
        let slots = (SLOTS_PER_BATCH * batches)
            .next_power_of_two()
            .clamp(SLOTS_PER_BATCH, MAX_SLOTS);
        HostMemo {
            slots: vec![Slot::default(); slots],
            fillings: vec![0; batches],
            dictionary: u64::MAX,
            known: Vec::new(),
        }
    }

    /// The batch and entry of a row's host, given the row's host token if it has one:
    /// `identify` gives the host's (identity, batch) when the memo does not know them, and
    /// `name(batch)` names the host in its batch when this filling holds no entry for it.
    #[inline]
    pub fn entry_of(
        &mut self,
        token: Option<HostToken>,
        identify: impl FnOnce() -> (u128, usize),
        name: impl FnOnce(usize) -> u32,
    ) -> (usize, u32) {
        let Some(token) = token else {
            let (id, batch) = identify();
            return (batch, self.entry(batch, id, || name(batch)));
        };
        if token.dictionary != self.dictionary {
            self.dictionary = token.dictionary;
            self.known.clear();
        }
        let at = token.index as usize;
        if at >= self.known.len() {
            self.known.resize(at + 1, Known::default());
        }
        let known = self.known[at];
        let (batch, entry) = if known.entry == 0 {
            // a value not met yet: its host may be named already (by another spelling, or in the
            // row group before)
            let (id, batch) = identify();
            (batch, self.entry(batch, id, || name(batch)))
        } else {
            let batch = known.batch as usize;
            if self.fillings[batch] == known.filling {
                return (batch, known.entry - 1);
            }
            // named in an earlier filling of its batch: named again without a look at the
            // name cache, which seldom knows it (at worst a name twice in a batch: bytes, never
            // a wrong row)
            (batch, name(batch))
        };
        self.known[at] = Known {
            batch: batch as u32,
            filling: self.fillings[batch],
            entry: entry + 1,
        };
        (batch, entry)
    }

    /// Whether [`HostMemo::entry_of`] finds `token`'s entry, or names its host again, without a
    /// look at the slots (a value of the current dictionary met before).
    #[inline]
    pub fn knows(&self, token: HostToken) -> bool {
        token.dictionary == self.dictionary
            && self
                .known
                .get(token.index as usize)
                .is_some_and(|k| k.entry != 0)
    }

    /// The entry of the host of identity `id` in batch `batch`, which every row of the host goes
    /// to; `name` names it there when the memo does not know it.
    #[inline]
    pub fn entry(&mut self, batch: usize, id: u128, name: impl FnOnce() -> u32) -> u32 {
        let key = split(id);
        let at = self.slot_of(key);
        let slot = &mut self.slots[at];
        let filling = self.fillings[batch];
        if slot.entry != 0 && slot.id == key && slot.filling == filling {
            return slot.entry - 1;
        }
        let entry = name();
        *slot = Slot {
            id: key,
            filling,
            entry: entry + 1,
        };
        entry
    }

    /// Asks for the slot of the host of identity `id` to be brought into cache, ahead of its
    /// [`HostMemo::entry`].
    #[inline]
    pub fn prefetch(&self, id: u128) {
        prefetch_at(&self.slots[self.slot_of(split(id))]);
    }

    /// Where the host of identity halves `key` has its slot: the low half's middle bits (the top
    /// bits of the high half are the part, the same in a batch).
    #[inline]
    fn slot_of(&self, key: [u64; 2]) -> usize {
        // a power of two (see `new`)
        (key[1] >> 16) as usize & (self.slots.len() - 1)
    }

    /// Batch `batch` was sent on and an empty one took its place: its entries are void.
    pub fn sent(&mut self, batch: usize) {
        self.fillings[batch] = self.fillings[batch].wrapping_add(1);
    }
}

/// An identity as the (high, low) halves a slot keeps.
#[inline]
fn split(id: u128) -> [u64; 2] {
    [(id >> 64) as u64, id as u64]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_a_power_of_two_for_any_number_of_batches() {
        for batches in 1..=40 {
            let n = HostMemo::new(batches).slots.len();
            assert!(n.is_power_of_two(), "{batches} batches: {n} slots");
            assert!((SLOTS_PER_BATCH..=MAX_SLOTS).contains(&n));
            assert!(n >= (SLOTS_PER_BATCH * batches).min(MAX_SLOTS));
        }
    }

    #[test]
    fn a_host_is_named_once_per_filling_of_its_batch() {
        let mut memo = HostMemo::new(2);
        let mut named = 0;
        let mut entry = |memo: &mut HostMemo, batch, id: u128| {
            memo.entry(batch, id, || {
                named += 1;
                named
            })
        };
        assert_eq!(entry(&mut memo, 0, 7), 1);
        assert_eq!(entry(&mut memo, 0, 7), 1);
        assert_eq!(entry(&mut memo, 1, (9 << 64) | (5 << 16)), 2);
        // the batch of host 7 sent on: named again in the next one
        memo.sent(0);
        assert_eq!(entry(&mut memo, 0, 7), 3);
        assert_eq!(entry(&mut memo, 1, (9 << 64) | (5 << 16)), 2);
        // a host in the same slot with another identity evicts it, and is no match for it
        let slots = memo.slots.len() as u128;
        let other = 7 + (slots << 16) + (1 << 100);
        assert_eq!(entry(&mut memo, 0, other), 4);
        assert_eq!(entry(&mut memo, 0, 7), 5);
    }

    #[test]
    fn a_dictionary_value_is_identified_once_and_named_once_per_filling() {
        let mut memo = HostMemo::new(2);
        let (mut identified, mut named) = (0, 0);
        let mut entry = |memo: &mut HostMemo, token: Option<HostToken>, id: u128, batch: usize| {
            memo.entry_of(
                token,
                || {
                    identified += 1;
                    (id, batch)
                },
                |b| {
                    assert_eq!(b, batch);
                    named += 1;
                    named
                },
            )
        };
        let token = |dictionary, index| Some(HostToken { dictionary, index });
        assert!(!memo.knows(HostToken {
            dictionary: 5,
            index: 3
        }));
        assert_eq!(entry(&mut memo, token(5, 3), 7, 1), (1, 1));
        let knows =
            |memo: &HostMemo, dictionary, index| memo.knows(HostToken { dictionary, index });
        assert!(knows(&memo, 5, 3) && !knows(&memo, 5, 2) && !knows(&memo, 5, 4));
        assert!(!knows(&memo, 6, 3), "another dictionary's value 3");
        assert_eq!(entry(&mut memo, token(5, 3), 7, 1), (1, 1));
        assert_eq!(entry(&mut memo, token(5, 0), 9 << 20, 0), (0, 2));
        // a row without a token, of a host the memo knows: named already
        assert_eq!(entry(&mut memo, None, 7, 1), (1, 1));
        assert_eq!((identified, named), (3, 2));
        // batch 1 sent on: its host named again in the next filling, known without identifying
        // it again; batch 0's entry holds
        memo.sent(1);
        let unidentified = |memo: &mut HostMemo, token| {
            memo.entry_of(token, || panic!("identified again"), |b| 100 + b as u32)
        };
        assert_eq!(unidentified(&mut memo, token(5, 3)), (1, 101));
        assert_eq!(unidentified(&mut memo, token(5, 3)), (1, 101));
        assert_eq!(unidentified(&mut memo, token(5, 0)), (0, 2));
        let entry = |memo: &mut HostMemo, token: Option<HostToken>, id: u128, batch: usize| {
            memo.entry_of(token, || (id, batch), |_| 100 + batch as u32)
        };
        // another dictionary: index 3 is another host now
        assert_eq!(entry(&mut memo, token(6, 3), 11 << 20, 0), (0, 100));
    }
}
