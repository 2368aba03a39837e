//! The rounds the crawlers' rates partitions are written in: one crawler a worker each round, the
//! crawlers of most rows first, each round's crawlers of about the same size, and each to the
//! worker that has the least to write so far.
//!
//! The round's rows travel in slices that end on every worker together, and a worker sends only a
//! few slices ahead of its writer ([`super::write`]), so a writer with less to write than another
//! soon waits for it. Crawlers are balanced by their fetches a night, not their rows, so their rows
//! differ: on the 10M-URL bench, 0.72M to 1.64M over 10 crawlers. Written in crawler order (0 and
//! 1, then 2 and 3, ...), the rounds' largest partitions summed to 5.79M rows for 5.0M a writer;
//! sorted by rows, to 5.28M; and with the larger of each round to the writer behind, no writer is
//! ever ahead of another by more than the largest difference within a round (0.30M rows there).

/// The crawlers of every round and the worker that writes each.
#[derive(Clone, Debug, PartialEq)]
pub struct Rounds {
    /// Each round's crawlers, largest first.
    rounds: Vec<Vec<u32>>,
    /// The worker of each crawler.
    writer: Vec<u32>,
}

impl Rounds {
    /// The rounds of crawlers of `rows[c]` rows each on `workers` workers: the crawlers in
    /// decreasing rows (ties by crawler), `workers` at a time; within a round, the largest to the
    /// worker with the fewest rows so far (ties: the last worker, so that in the first round the
    /// smallest goes to worker 0, the lead, which writes the hosts and rejected tables beside it).
    ///
    /// Sorted consecutive groups give the least sum of the groups' largest (swapping two crawlers
    /// between groups can only raise it). Handing a round's crawlers in decreasing rows to the
    /// workers in increasing rows so far keeps every two workers within the round's spread of each
    /// other once it is added, as they were before it.
    pub fn of(rows: &[u64], workers: usize) -> Self {
        let workers = workers.max(1);
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_by_key(|&c| (std::cmp::Reverse(rows[c as usize]), c));
        let mut writer = vec![0; rows.len()];
        let mut written = vec![0u64; workers];
        let mut behind: Vec<usize> = (0..workers).collect();
        let rounds: Vec<Vec<u32>> = order
            .chunks(workers)
            .map(|round| {
                behind.sort_by_key(|&w| (written[w], std::cmp::Reverse(w)));
                for (&c, &w) in round.iter().zip(&behind) {
                    writer[c as usize] = w as u32;
                    written[w] += rows[c as usize];
                }
                round.to_vec()
            })
            .collect();
        Rounds { rounds, writer }
    }

    /// Every round's crawlers, in the order they are written.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> {
        self.rounds.iter().map(Vec::as_slice)
    }

    /// The worker that writes crawler `crawler`'s partitions.
    pub fn writer_of(&self, crawler: u32) -> u32 {
        self.writer[crawler as usize]
    }

    /// The crawler of `round` that worker `worker` writes, if any.
    pub fn crawler_of(&self, round: &[u32], worker: usize) -> Option<u32> {
        round
            .iter()
            .copied()
            .find(|&c| self.writer_of(c) as usize == worker)
    }

    /// How many crawlers worker `worker` writes.
    pub fn crawlers_of(&self, worker: usize) -> usize {
        self.writer
            .iter()
            .filter(|&&w| w as usize == worker)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The sum over rounds of the largest crawler's rows: how long the rounds take in all.
    fn makespan(rounds: &Rounds, rows: &[u64]) -> u64 {
        rounds
            .iter()
            .map(|r| r.iter().map(|&c| rows[c as usize]).max().unwrap_or(0))
            .sum()
    }

    /// The least makespan of any split into rounds of at most `workers`, as many rounds as
    /// `Rounds` has: every order of the crawlers, cut into consecutive groups.
    fn best_makespan(rows: &[u64], workers: usize) -> u64 {
        fn orders(rest: &mut Vec<u32>, done: &mut Vec<u32>, each: &mut dyn FnMut(&[u32])) {
            if rest.is_empty() {
                each(done);
                return;
            }
            for i in 0..rest.len() {
                let c = rest.remove(i);
                done.push(c);
                orders(rest, done, each);
                done.pop();
                rest.insert(i, c);
            }
        }
        let mut best = u64::MAX;
        let mut all: Vec<u32> = (0..rows.len() as u32).collect();
        orders(&mut all, &mut Vec::new(), &mut |order| {
            let span = order
                .chunks(workers)
                .map(|g| g.iter().map(|&c| rows[c as usize]).max().unwrap_or(0))
                .sum();
            best = best.min(span);
        });
        best
    }

    #[test]
    fn the_bench_s_crawlers_pair_by_size_and_the_writer_behind_takes_the_larger() {
        // rows of the 10 crawlers of the 10M-URL bench, in crawler order
        let rows = [
            1057564, 1208811, 722433, 760181, 727092, 841111, 827979, 1340559, 1638875, 875395,
        ];
        let rounds = Rounds::of(&rows, 2);
        let got: Vec<&[u32]> = rounds.iter().collect();
        assert_eq!(got, [&[8, 7][..], &[1, 0], &[9, 5], &[6, 3], &[4, 2]]);
        let writers: Vec<u32> = (0..10).map(|c| rounds.writer_of(c)).collect();
        // 8 to worker 1 and 7 to the lead; then the lead is behind at every round (by 0.30M,
        // 0.15M, 0.11M, 0.04M rows), so it takes the larger: 1, 9, 6, 4
        assert_eq!(writers, [1, 0, 1, 1, 0, 1, 0, 0, 1, 0]);
        assert_eq!(rounds.crawler_of(&[8, 7], 0), Some(7));
        assert_eq!(makespan(&rounds, &rows), 5_278_152);
        let in_crawler_order: u64 = rows.chunks(2).map(|p| p[0].max(p[1])).sum();
        assert_eq!(in_crawler_order, 5_789_537);
        assert_eq!((rounds.crawlers_of(0), rounds.crawlers_of(1)), (5, 5));
    }

    #[test]
    fn a_last_round_short_of_workers_goes_to_the_workers_behind() {
        let rounds = Rounds::of(&[5, 9, 7], 2);
        let got: Vec<&[u32]> = rounds.iter().collect();
        assert_eq!(got, [&[1, 2][..], &[0]]);
        // 9 to worker 1, 7 to the lead, which is behind for 5
        assert_eq!(
            (
                rounds.writer_of(1),
                rounds.writer_of(2),
                rounds.writer_of(0)
            ),
            (1, 0, 0)
        );
        assert_eq!(rounds.crawler_of(&[0], 1), None);
        assert_eq!((rounds.crawlers_of(0), rounds.crawlers_of(1)), (2, 1));
        // one worker writes every crawler, largest first
        let one = Rounds::of(&[5, 9, 7], 1);
        assert_eq!(one.iter().collect::<Vec<_>>(), [&[1][..], &[2], &[0]]);
    }

    proptest! {
        #[test]
        fn every_crawler_once_the_least_makespan_and_no_writer_far_ahead(
            rows in proptest::collection::vec(0u64..50, 0..7),
            workers in 1usize..4,
        ) {
            let rounds = Rounds::of(&rows, workers);
            let mut seen: Vec<u32> = rounds.iter().flatten().copied().collect();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..rows.len() as u32).collect::<Vec<_>>());
            prop_assert_eq!(rounds.iter().count(), rows.len().div_ceil(workers));
            prop_assert_eq!(makespan(&rounds, &rows), best_makespan(&rows, workers));
            // each worker once a round at most; after every round, no two workers further apart
            // in rows than the widest round (a short round's missing crawlers count as 0 rows)
            let widest = rounds
                .iter()
                .map(|r| {
                    let mut v: Vec<u64> = r.iter().map(|&c| rows[c as usize]).collect();
                    v.resize(workers, 0);
                    v.iter().max().unwrap() - v.iter().min().unwrap()
                })
                .max()
                .unwrap_or(0);
            let mut written = vec![0u64; workers];
            for round in rounds.iter() {
                let mut writers: Vec<u32> = round.iter().map(|&c| rounds.writer_of(c)).collect();
                writers.sort_unstable();
                writers.dedup();
                prop_assert_eq!(writers.len(), round.len());
                for &c in round {
                    prop_assert_eq!(rounds.crawler_of(round, rounds.writer_of(c) as usize), Some(c));
                    written[rounds.writer_of(c) as usize] += rows[c as usize];
                }
                let spread = written.iter().max().unwrap() - written.iter().min().unwrap();
                prop_assert!(spread <= widest, "{:?} apart after {:?}, widest round {}", written, round, widest);
            }
            for w in 0..workers {
                prop_assert_eq!(
                    rounds.crawlers_of(w),
                    (0..rows.len() as u32).filter(|&c| rounds.writer_of(c) as usize == w).count()
                );
            }
        }
    }
}
