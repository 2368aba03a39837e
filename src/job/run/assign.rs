//! The assignment phase of `run`: every host to one crawler, by rendezvous hashing with bounded
//! loads; every worker runs the same assignment on every host's budget.

use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::schedule::assign::{assign as assign_hosts, imbalance};
use serde::{Deserialize, Serialize};

use super::solve::Solved;
use crate::job::arrange::Arranged;
use crate::job::channel::Reducer;
use crate::job::progress::Progress;
use crate::plan::run::RunPlan;
use crate::report::format::{count, num};

/// Which crawler fetches each of this worker's hosts.
pub struct Assigned {
    /// The crawler of each local host.
    pub crawler_of: Vec<u32>,
    /// Local hosts of each crawler, in canonical order.
    pub hosts_of_crawler: Vec<Vec<usize>>,
    /// Largest crawler load over the mean (1 = perfectly balanced).
    pub load_ratio: f64,
    /// The largest budget of one host, fetches per day (a crawler's load is at least that).
    pub largest_host: f64,
}

/// Assigns every host of every worker; returns this worker's share.
pub fn assign(
    reducer: &mut Reducer<'_>,
    plan: &RunPlan,
    arranged: &Arranged,
    solved: &Solved,
    progress: &Progress,
) -> Assigned {
    let loads = reducer.all_reduce(HostLoads(
        arranged
            .host_keys
            .iter()
            .zip(&solved.solution.budgets)
            .map(|(&k, &b)| (k, b))
            .collect(),
    ));
    let mut all_hosts = loads.0;
    // by key (keys of distinct hosts differ but with probability ~1e-8 at 10^6 hosts; the budget
    // then orders them alike on every worker count)
    all_hosts.sort_unstable_by_key(|h| (h.0, h.1.to_bits()));
    let assignment = assign_hosts(&all_hosts, plan.crawlers);
    let load_ratio = imbalance(&all_hosts, &assignment, plan.crawlers);
    let largest_host = all_hosts.iter().map(|h| h.1).fold(0.0, f64::max);
    let crawler_of = local_crawlers(&arranged.host_keys, &all_hosts, &assignment);
    let mut hosts_of_crawler: Vec<Vec<usize>> = vec![Vec::new(); plan.crawlers as usize];
    for (h, &crawler) in crawler_of.iter().enumerate() {
        hosts_of_crawler[crawler as usize].push(h);
    }
    progress.say(format!(
        "assigned {} hosts to {} crawlers (the busiest at {}x the mean load)",
        count(all_hosts.len() as u64),
        plan.crawlers,
        num(load_ratio)
    ));
    Assigned {
        crawler_of,
        hosts_of_crawler,
        load_ratio,
        largest_host,
    }
}

/// The crawler of each local host (by `keys`), from every host's `assignment` in the order of
/// `all` (sorted by key): the local keys sorted, then one merge, since a binary search per host
/// missed the cache at every step of a million-host table.
fn local_crawlers(keys: &[u64], all: &[(u64, f64)], assignment: &[u32]) -> Vec<u32> {
    let mut order: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(h, &k)| (k, h as u32))
        .collect();
    order.sort_unstable();
    let mut crawler_of = vec![0; keys.len()];
    let mut at = 0;
    for (key, h) in order {
        while all[at].0 < key {
            at += 1;
        }
        crawler_of[h as usize] = assignment[at];
    }
    crawler_of
}

/// Every host's (key, budget), gathered from all workers.
#[derive(Clone, Default, Serialize, Deserialize)]
struct HostLoads(Vec<(u64, f64)>);

impl Combine for HostLoads {
    fn combine(&mut self, o: Self) {
        self.0.extend(o.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts_find_their_crawler_as_a_search_would() {
        let all: Vec<(u64, f64)> = (0..50u64).map(|k| (k * 7 + 3, 1.0)).collect();
        let assignment: Vec<u32> = (0..50).map(|i| (i * 13 % 5) as u32).collect();
        let keys: Vec<u64> = vec![3 + 7 * 49, 3, 3 + 7 * 20, 3 + 7 * 21, 3 + 7 * 2];
        let want: Vec<u32> = keys
            .iter()
            .map(|&k| assignment[all.partition_point(|x| x.0 < k)])
            .collect();
        assert_eq!(local_crawlers(&keys, &all, &assignment), want);
        assert!(local_crawlers(&[], &all, &assignment).is_empty());
    }
}
