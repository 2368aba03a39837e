//! PUC-Rio Phase 1 as the paper states it: the heap greedy, the exact reference for
//! [`super::visits::integer_visits`] on small inputs.
//!
//! Repeatedly give one more visit to the page with the largest marginal gain whose host is under its
//! cap, until the budget is spent or no page can gain (PUC-Rio §2.1 GREEDY; optimal by Federgruen &
//! Groenevelt because the gains decrease in k). O(R log n): fine for tests, too slow and too
//! sequential for the job, which uses the threshold form instead.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::visits::VisitObjective;
use crate::solve::pages::Pages;
use crate::units::Seconds;

/// A heap entry: the gain of a page's next visit; ties go to the smallest key (as in the threshold
/// solver's tie split).
#[derive(Clone, Copy, Debug)]
struct Candidate {
    gain: f64,
    key: u64,
    page: usize,
    host: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.gain
            .total_cmp(&other.gain)
            .then(other.key.cmp(&self.key))
    }
}

/// Visits per page by the heap greedy: `caps` per host (visits per horizon), `budget` visits.
pub fn greedy_visits(
    pages: &Pages,
    caps: &[u32],
    keys: &[u64],
    horizon: Seconds,
    budget: u64,
) -> Vec<u32> {
    greedy_visits_for(
        VisitObjective::Staleness,
        pages,
        caps,
        keys,
        horizon,
        budget,
    )
}

/// [`greedy_visits`] for any objective of the integer visits.
pub fn greedy_visits_for(
    objective: VisitObjective,
    pages: &Pages,
    caps: &[u32],
    keys: &[u64],
    horizon: Seconds,
    budget: u64,
) -> Vec<u32> {
    let marginal_gain = |mu, lambda, days, k| objective.gain(mu, lambda, days, k);
    let days = horizon.days();
    let mut counts = vec![0u32; pages.len()];
    let mut host_used = vec![0u64; pages.hosts()];
    let mut heap = BinaryHeap::new();
    for h in 0..pages.hosts() {
        for i in pages.host_pages(h) {
            let gain = marginal_gain(pages.importance()[i], pages.change_rate()[i], days, 1);
            if gain > 0.0 {
                heap.push(Candidate {
                    gain,
                    key: keys[i],
                    page: i,
                    host: h,
                });
            }
        }
    }
    let mut left = budget;
    while left > 0 {
        let Some(c) = heap.pop() else { break };
        if host_used[c.host] >= caps[c.host] as u64 {
            continue; // the host is full for good: its pages leave the heap
        }
        counts[c.page] += 1;
        host_used[c.host] += 1;
        left -= 1;
        let gain = marginal_gain(
            pages.importance()[c.page],
            pages.change_rate()[c.page],
            days,
            counts[c.page] + 1,
        );
        if gain > 0.0 {
            heap.push(Candidate { gain, ..c });
        }
    }
    counts
}
