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
    all_hosts.sort_by_key(|h| h.0);
    let assignment = assign_hosts(&all_hosts, plan.crawlers);
    let load_ratio = imbalance(&all_hosts, &assignment, plan.crawlers);
    let largest_host = all_hosts.iter().map(|h| h.1).fold(0.0, f64::max);
    let mut hosts_of_crawler: Vec<Vec<usize>> = vec![Vec::new(); plan.crawlers as usize];
    let crawler_of: Vec<u32> = arranged
        .host_keys
        .iter()
        .enumerate()
        .map(|(h, &key)| {
            let crawler = assignment[all_hosts.partition_point(|x| x.0 < key)];
            hosts_of_crawler[crawler as usize].push(h);
            crawler
        })
        .collect();
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

/// Every host's (key, budget), gathered from all workers.
#[derive(Clone, Default, Serialize, Deserialize)]
struct HostLoads(Vec<(u64, f64)>);

impl Combine for HostLoads {
    fn combine(&mut self, o: Self) {
        self.0.extend(o.0);
    }
}
