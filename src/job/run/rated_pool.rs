//! Emptied rated batches handed back by a worker's partition writer to the worker's sender, so that
//! the next slice's rows are written into memory already in use, not into fresh pages.
//!
//! Freed instead, a slice's batches went back to the allocator of the thread that made them, and
//! its pages to the system every 256 MiB ([`crate::job::heap::give_back_freed`]): each slice was
//! then faulted in afresh, a page fault every 4 KiB of rows sent (on 12.5M URLs, 73K faults: an
//! eighth of the run's).

use std::sync::Mutex;

use crate::job::wire::rated::RatedBatch;

/// Bytes of emptied batches a pool keeps at most: a slice's worth, about what a sender fills while
/// its writer writes the slice before (more would only sit, as memory the run holds: at 64 MiB the
/// peak of 100M URLs grew by 1.8 bytes a URL, at 32 MiB by 0.6).
pub const POOL_BYTES: usize = 32 << 20;

/// Emptied batches, ready to be filled again.
#[derive(Default)]
pub struct RatedPool {
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    batches: Vec<RatedBatch>,
    bytes: usize,
}

impl RatedPool {
    /// An emptied batch for `crawler`, written by worker `dest`, if the pool has one.
    pub fn take(&self, dest: u32, crawler: u32) -> Option<RatedBatch> {
        let mut held = self.held.lock().ok()?;
        let batch = held.batches.pop()?;
        held.bytes -= batch.room_bytes();
        Some(batch.reused(dest, crawler))
    }

    /// Keeps `batch` for a later [`RatedPool::take`], which empties it; gives it back when the pool
    /// is full (or the batch has no room), to be freed.
    pub fn give(&self, batch: RatedBatch) -> Option<RatedBatch> {
        let room = batch.room_bytes();
        let Ok(mut held) = self.held.lock() else {
            return Some(batch);
        };
        if room == 0 || held.bytes + room > POOL_BYTES {
            return Some(batch);
        }
        held.bytes += room;
        held.batches.push(batch);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::rates_out::RateRun;
    use crate::job::url_text::{Form, Url};

    /// `b` with `rows` rows of one host added.
    fn fill(mut b: RatedBatch, rows: usize) -> RatedBatch {
        b.start_host(7, "a.example", true, 0);
        for i in 0..rows {
            let rest = format!("/p/{i}");
            b.push_url(Url::new(Form::Https, b"a.example", rest.as_bytes()));
        }
        let (ones, times, flags) = (vec![1.0; rows], vec![5; rows], vec![false; rows]);
        b.push_numbers(&RateRun {
            host: b"a.example",
            host_capped: true,
            importance: &ones,
            change_rate: &ones,
            complete_obs: &flags,
            crawl_rate: &ones,
            last_fetch_us: &times,
            next_fetch_us: &times,
        });
        b
    }

    fn filled(rows: usize) -> RatedBatch {
        fill(RatedBatch::with_capacity(3, 4, 1 << 10, rows), rows)
    }

    #[test]
    fn a_batch_taken_back_is_empty_with_its_room_and_its_new_address() {
        let pool = RatedPool::default();
        let batch = fill(RatedBatch::with_capacity(1, 2, 1 << 10, 100), 100);
        let room = batch.room_bytes();
        assert!(pool.give(batch).is_none());
        let again = pool.take(3, 4).expect("the batch given");
        assert_eq!((again.dest, again.crawler), (3, 4));
        assert_eq!(again.room_bytes(), room);
        assert!(again.is_empty() && !again.is_unallocated());
        // nothing of its rows is left: filled again, it is what a fresh batch filled alike is
        let wire = |b: &RatedBatch| bincode::serialize(b).expect("encodes");
        assert_eq!(wire(&fill(again, 100)), wire(&filled(100)));
        assert!(pool.take(0, 0).is_none());
    }

    #[test]
    fn a_full_pool_gives_batches_back_to_be_freed() {
        let pool = RatedPool::default();
        let one = filled(1 << 12).room_bytes();
        let fits = POOL_BYTES / one;
        for _ in 0..fits {
            assert!(pool.give(filled(1 << 12)).is_none());
        }
        assert!(pool.give(filled(1 << 12)).is_some());
        // a batch without room is not worth keeping
        assert!(pool.give(RatedBatch::default()).is_some());
        for _ in 0..fits {
            assert!(pool.take(0, 0).is_some());
        }
        assert!(pool.take(0, 0).is_none());
        assert!(pool.give(filled(1 << 12)).is_none());
    }
}
