//! What the workers of one process share: the units of work of each table they read (the page
//! set, and the tables keyed by URL), handed out as the workers ask for them. Split in a fixed
//! share, the worker whose units cost more read on while the other waited for it: 0.35-0.5 s of
//! one core at the end of reading on the 10M benches. Threads share memory; processes share
//! nothing, and split the units between them as before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The work the workers of one process share (one for each job the process runs).
pub struct ProcessShare {
    process: usize,
    processes: usize,
    /// The units of each table the workers read (the page set, the previous night's state, fetch
    /// logs, crawl history, evaluated rates and visits), one queue for each reading, by the
    /// all-reduce round the workers read it at: the same on every worker, as every worker runs the
    /// same program, and different for each reading, as each ends in an all-reduce.
    queues: Mutex<HashMap<u64, Arc<UnitQueue>>>,
}

impl ProcessShare {
    /// The share of process `process` of `processes`.
    pub fn new(process: usize, processes: usize) -> Self {
        ProcessShare {
            process,
            processes,
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// The queue of the table the workers read at all-reduce round `round` (made by the first
    /// worker to ask).
    pub fn queue_at(&self, round: u64) -> Arc<UnitQueue> {
        // a worker that panicked holding the lock left the map whole: an insert is all it does
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        queues
            .entry(round)
            .or_insert_with(|| Arc::new(UnitQueue::new(self.process, self.processes)))
            .clone()
    }
}

/// Units of work, numbered alike on every process, taken by this process's workers in turn: the
/// process takes every `processes`-th unit from its own index, each once, as its workers ask.
pub struct UnitQueue {
    process: usize,
    processes: usize,
    /// How many units this process's workers have taken (some past the last, once all are).
    taken: AtomicUsize,
    /// How many of them were read.
    read: AtomicUsize,
}

impl UnitQueue {
    /// The queue of process `process` of `processes` (at least one).
    pub fn new(process: usize, processes: usize) -> Self {
        assert!(process < processes, "process {process} of {processes}");
        UnitQueue {
            process,
            processes,
            taken: AtomicUsize::new(0),
            read: AtomicUsize::new(0),
        }
    }

    /// How many of `units` units this process reads.
    pub fn of_process(&self, units: usize) -> usize {
        units.saturating_sub(self.process).div_ceil(self.processes)
    }

    /// The next unit of `units` for the worker asking, None once every one of this process's is
    /// taken.
    pub fn take(&self, units: usize) -> Option<usize> {
        let k = self.taken.fetch_add(1, Ordering::Relaxed);
        let unit = k.checked_mul(self.processes)?.checked_add(self.process)?;
        (unit < units).then_some(unit)
    }

    /// Counts one more unit read; returns how many this process's workers have read.
    pub fn read_one(&self) -> usize {
        self.read.fetch_add(1, Ordering::Relaxed) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workers_of_a_process_share_one_queue_a_round_and_a_new_one_the_next() {
        let share = ProcessShare::new(1, 2);
        let (a, b) = (share.queue_at(5), share.queue_at(5));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.take(10), Some(1));
        assert_eq!(b.take(10), Some(3));
        // the next reading starts from the process's first unit again
        assert_eq!(share.queue_at(6).take(10), Some(1));
        assert_eq!(share.queue_at(5).take(10), Some(5));
    }

    #[test]
    fn every_unit_is_taken_once_by_its_process_however_the_workers_ask() {
        for processes in 1..=3 {
            for units in [0usize, 1, 2, 7, 64] {
                let mut seen = vec![0; units];
                for process in 0..processes {
                    let queue = UnitQueue::new(process, processes);
                    let workers = 3;
                    let taken: Vec<Vec<usize>> = std::thread::scope(|s| {
                        let handles: Vec<_> = (0..workers)
                            .map(|_| {
                                s.spawn(|| {
                                    std::iter::from_fn(|| queue.take(units)).collect::<Vec<_>>()
                                })
                            })
                            .collect();
                        handles.into_iter().map(|h| h.join().unwrap()).collect()
                    });
                    let mine: Vec<usize> = taken.into_iter().flatten().collect();
                    assert_eq!(
                        mine.len(),
                        queue.of_process(units),
                        "{process} of {processes}"
                    );
                    for u in mine {
                        assert_eq!(u % processes, process);
                        seen[u] += 1;
                    }
                    assert_eq!(queue.take(units), None, "none left once all are taken");
                }
                assert!(
                    seen.iter().all(|&n| n == 1),
                    "{units} units, {processes}: {seen:?}"
                );
            }
        }
    }
}
