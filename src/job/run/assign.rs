//! The assignment phase of `run`: every host to one crawler, by rendezvous hashing with bounded
//! loads; every worker runs the same assignment on every host's budget.

use std::cmp::Ordering;

use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::schedule::assign::{assign_with_first_choices, imbalance, placement_order};
use revisit_core::schedule::rendezvous::Rendezvous;
use serde::{Deserialize, Serialize};

use super::solve::Solved;
use crate::job::arrange::Arranged;
use crate::job::channel::Reducer;
use crate::job::flag_sort::sort_by_wide_key;
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
    // this worker's hosts in the order the assignment places them; every worker's, merged
    let local = in_placement_order(&arranged.host_keys, &solved.solution.budgets);
    let all = reducer.all_reduce(HostLoads::of(&local, plan.crawlers));
    let all_hosts = all.hosts;
    let assignment = assign_with_first_choices(&all_hosts, &all.first, plan.crawlers);
    let load_ratio = imbalance(&all_hosts, &assignment, plan.crawlers);
    let largest_host = all_hosts.iter().map(|h| h.1).fold(0.0, f64::max);
    let crawler_of = local_crawlers(&local, &all_hosts, &assignment);
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

/// A local host: its (key, load), and its index among this worker's hosts.
type LocalHost = ((u64, f64), u32);

/// This worker's hosts (by `keys`, with their `budgets`) in [`placement_order`]: sorted once here,
/// they are merged across workers without a sort, the assignment places them without one, and
/// each finds its crawler by one merge.
fn in_placement_order(keys: &[u64], budgets: &[f64]) -> Vec<LocalHost> {
    let mut local: Vec<LocalHost> = keys
        .iter()
        .zip(budgets)
        .enumerate()
        .map(|(h, (&k, &b))| ((k, b), h as u32))
        .collect();
    // hosts equal in the order (same key and load) are interchangeable: no tie-break
    sort_by_wide_key(
        &mut local,
        |&(h, _)| HostLoads::order(h),
        |_, _| Ordering::Equal,
    );
    local
}

/// The crawler of each local host, from every host's `assignment` in the order of `all`: both in
/// placement order, so one merge (a binary search per host missed the cache at every step of a
/// million-host table).
fn local_crawlers(local: &[LocalHost], all: &[(u64, f64)], assignment: &[u32]) -> Vec<u32> {
    let mut crawler_of = vec![0; local.len()];
    let mut at = 0;
    for &(host, h) in local {
        let order = HostLoads::order(host);
        while HostLoads::order(all[at]) < order {
            at += 1;
        }
        crawler_of[h as usize] = assignment[at];
    }
    crawler_of
}

/// Hosts' (key, budget) in [`placement_order`] (equal only for hosts whose 64-bit keys and
/// budgets both agree, interchangeable to the assignment), and each one's first choice of
/// crawler ([`Rendezvous::first_choice`]): each worker sorts and scores its own, and combining
/// merges, so no worker sorts or scores every host.
#[derive(Clone, Default, Serialize, Deserialize)]
struct HostLoads {
    hosts: Vec<(u64, f64)>,
    #[serde(with = "crate::plain")]
    first: Vec<u32>,
}

impl HostLoads {
    /// This worker's hosts, already in placement order, among `crawlers`.
    fn of(local: &[LocalHost], crawlers: u32) -> Self {
        let rendezvous = Rendezvous::new(crawlers);
        HostLoads {
            hosts: local.iter().map(|&(h, _)| h).collect(),
            first: local
                .iter()
                .map(|&(h, _)| rendezvous.first_choice(h.0))
                .collect(),
        }
    }

    #[inline]
    fn order(h: (u64, f64)) -> (u64, u64) {
        placement_order(h.0, h.1)
    }
}

impl Combine for HostLoads {
    fn combine(&mut self, o: Self) {
        let (a, b) = (&self.hosts, &o.hosts);
        let (fa, fb) = (&self.first, &o.first);
        let mut hosts = Vec::with_capacity(a.len() + b.len());
        let mut first = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        // one comparison and one push a host, without a branch on which side gave it
        while i < a.len() && j < b.len() {
            let from_b = Self::order(b[j]) < Self::order(a[i]);
            hosts.push(if from_b { b[j] } else { a[i] });
            first.push(if from_b { fb[j] } else { fa[i] });
            j += from_b as usize;
            i += !from_b as usize;
        }
        hosts.extend_from_slice(&a[i..]);
        hosts.extend_from_slice(&b[j..]);
        first.extend_from_slice(&fa[i..]);
        first.extend_from_slice(&fb[j..]);
        *self = HostLoads { hosts, first };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts_find_their_crawler_as_a_search_would() {
        let mut all: Vec<(u64, f64)> = (0..50u64).map(|k| (k * 7 + 3, (k % 4) as f64)).collect();
        all.sort_by_key(|&h| HostLoads::order(h));
        let assignment: Vec<u32> = (0..50).map(|i| (i * 13 % 5) as u32).collect();
        let picked = [49u64, 0, 20, 21, 2, 7];
        let keys: Vec<u64> = picked.iter().map(|k| k * 7 + 3).collect();
        let budgets: Vec<f64> = picked.iter().map(|k| (k % 4) as f64).collect();
        let want: Vec<u32> = keys
            .iter()
            .zip(&budgets)
            .map(|(&k, &b)| assignment[all.iter().position(|&x| x == (k, b)).unwrap()])
            .collect();
        let local = in_placement_order(&keys, &budgets);
        assert_eq!(local_crawlers(&local, &all, &assignment), want);
        assert!(local_crawlers(&[], &all, &assignment).is_empty());
    }

    #[test]
    fn combined_loads_are_every_host_sorted_in_any_order_of_workers() {
        const CRAWLERS: u32 = 7;
        let worker = |k: u64| {
            let keys: Vec<u64> = (0..40).map(|i| (i * 7919 + k * 31) % 97).collect();
            let budgets: Vec<f64> = keys.iter().map(|&x| (x % 5) as f64).collect();
            HostLoads::of(&in_placement_order(&keys, &budgets), CRAWLERS)
        };
        let mut all: Vec<(u64, f64)> = (0..3).flat_map(|k| worker(k).hosts).collect();
        all.sort_by_key(|&h| HostLoads::order(h));
        for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0]] {
            let mut total = worker(order[0]);
            total.combine(worker(order[1]));
            total.combine(worker(order[2]));
            let bits =
                |v: &[(u64, f64)]| v.iter().map(|&h| HostLoads::order(h)).collect::<Vec<_>>();
            assert_eq!(bits(&total.hosts), bits(&all));
            // each host's first choice travelled with it
            let rendezvous = Rendezvous::new(CRAWLERS);
            let first: Vec<u32> = all.iter().map(|h| rendezvous.first_choice(h.0)).collect();
            assert_eq!(total.first, first);
        }
    }
}
