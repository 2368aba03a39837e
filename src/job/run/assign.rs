//! The assignment phase of `run`: every host to one crawler, by rendezvous hashing with bounded
//! loads. Each worker sorts and scores its own hosts; the lead places every worker's, in one
//! greedy over their lists, and sends each worker its hosts' crawlers.

use std::cmp::Ordering;

use revisit_core::schedule::assign::{assign_sorted, placement_order, SortedHosts};
use revisit_core::schedule::rendezvous::Rendezvous;
use serde::{Deserialize, Serialize};

use super::solve::Solved;
use crate::job::arrange::Arranged;
use crate::job::channel::{Reducer, Shuffle};
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

/// The worker that places every host.
const LEAD: u32 = 0;

/// The assignment's exchanges: every worker's hosts to the lead, and their crawlers back.
///
/// Why not an all-reduce of the hosts, each worker then placing them all: every worker decoded,
/// merged and placed every host: at 3.1M hosts the decoding and the merged list (60 MB a worker)
/// were a quarter of the memory the write phase faulted in. Between threads of one process the
/// lists move without a copy.
pub struct AssignChannels {
    loads: Shuffle<HostLoads>,
    placed: Shuffle<Placed>,
}

impl AssignChannels {
    /// Builds the dataflows (in the same order on every worker).
    pub fn new(worker: &mut timely::worker::Worker) -> Self {
        AssignChannels {
            loads: Shuffle::new(worker, "HostLoadsToLead", |m: &HostLoads| m.dest as u64),
            placed: Shuffle::new(worker, "CrawlersOfHosts", |m: &Placed| m.dest as u64),
        }
    }
}

/// Assigns every host of every worker; returns this worker's share.
pub fn assign(
    reducer: &mut Reducer<'_>,
    channels: &mut AssignChannels,
    plan: &RunPlan,
    arranged: &Arranged,
    solved: &Solved,
    progress: &Progress,
) -> Assigned {
    let index = reducer.worker.index() as u32;
    // this worker's hosts in the order the assignment places them
    let local = in_placement_order(&arranged.host_keys, &solved.solution.budgets);
    let loads = HostLoads::of(&local, plan.crawlers, index);
    let own = if index == LEAD {
        Some(loads)
    } else {
        channels.loads.send(loads);
        None
    };
    let gathered = channels.loads.finish_round(reducer.worker);
    let own = own.map(|own| {
        let mut placed = place_all(own, gathered, plan.crawlers);
        // the lead's own first (worker 0), kept; the others' sent
        let own = placed.remove(0);
        debug_assert_eq!(own.dest, LEAD);
        for p in placed {
            channels.placed.send(p);
        }
        own
    });
    let received = channels.placed.finish_round(reducer.worker);
    let placed = own
        .or_else(|| received.into_iter().next())
        .expect("the lead sends every worker its hosts' crawlers");
    let mut crawler_of = vec![0; local.len()];
    for (&(_, h), &crawler) in local.iter().zip(&placed.crawlers) {
        crawler_of[h as usize] = crawler;
    }
    let mut hosts_of_crawler: Vec<Vec<usize>> = vec![Vec::new(); plan.crawlers as usize];
    for (h, &crawler) in crawler_of.iter().enumerate() {
        hosts_of_crawler[crawler as usize].push(h);
    }
    progress.say(format!(
        "assigned {} hosts to {} crawlers (the busiest at {}x the mean load)",
        count(placed.hosts),
        plan.crawlers,
        num(placed.load_ratio)
    ));
    Assigned {
        crawler_of,
        hosts_of_crawler,
        load_ratio: placed.load_ratio,
        largest_host: placed.largest_host,
    }
}

/// Places the hosts of every worker (the lead's `own` and the others' `gathered`), each worker's
/// in placement order; returns each worker's crawlers, the lead's first.
fn place_all(own: HostLoads, gathered: Vec<HostLoads>, crawlers: u32) -> Vec<Placed> {
    let mut lists = vec![own];
    lists.extend(gathered);
    // in worker order: of equal hosts the earlier worker's is placed first, whichever arrived first
    lists.sort_by_key(|l| l.worker);
    let sorted: Vec<SortedHosts> = lists
        .iter()
        .map(|l| SortedHosts {
            hosts: &l.hosts,
            first: &l.first,
        })
        .collect();
    let (placed, load_ratio) = assign_sorted(&sorted, crawlers);
    let hosts = lists.iter().map(|l| l.hosts.len() as u64).sum();
    let largest_host = lists
        .iter()
        .flat_map(|l| l.hosts.iter().map(|h| h.1))
        .fold(0.0, f64::max);
    lists
        .iter()
        .zip(placed)
        .map(|(l, crawlers)| Placed {
            dest: l.worker,
            crawlers,
            hosts,
            load_ratio,
            largest_host,
        })
        .collect()
}

/// A local host: its (key, load), and its index among this worker's hosts.
type LocalHost = ((u64, f64), u32);

/// This worker's hosts (by `keys`, with their `budgets`) in [`placement_order`]: sorted once here,
/// the lead places every worker's without a sort or a merge, and each worker's crawlers come back
/// in this order.
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
        |&(h, _)| placement_order(h.0, h.1),
        |_, _| Ordering::Equal,
    );
    local
}

/// A worker's hosts' (key, budget) in [`placement_order`], and each one's first choice of crawler
/// ([`Rendezvous::first_choice`]): each worker sorts and scores its own, so that the lead does
/// neither for every host.
#[derive(Clone, Serialize, Deserialize)]
struct HostLoads {
    /// The lead.
    dest: u32,
    /// The worker whose hosts these are.
    worker: u32,
    hosts: Vec<(u64, f64)>,
    #[serde(with = "crate::plain")]
    first: Vec<u32>,
}

impl HostLoads {
    /// The hosts of `worker`, already in placement order, among `crawlers`.
    fn of(local: &[LocalHost], crawlers: u32, worker: u32) -> Self {
        let rendezvous = Rendezvous::new(crawlers);
        HostLoads {
            dest: LEAD,
            worker,
            hosts: local.iter().map(|&(h, _)| h).collect(),
            first: local
                .iter()
                .map(|&(h, _)| rendezvous.first_choice(h.0))
                .collect(),
        }
    }
}

/// The crawlers of a worker's hosts, in the order of its [`HostLoads`], with what every worker
/// reports of the whole assignment.
#[derive(Clone, Serialize, Deserialize)]
struct Placed {
    dest: u32,
    #[serde(with = "crate::plain")]
    crawlers: Vec<u32>,
    /// Hosts of all workers.
    hosts: u64,
    /// Largest crawler load over the mean, and the largest load of one host.
    load_ratio: f64,
    largest_host: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use revisit_core::schedule::assign::{assign, imbalance};

    /// Three workers' hosts, each with a few keys and loads of its own and some shared, so that
    /// hosts tie across workers.
    fn worker_hosts(w: u64) -> (Vec<u64>, Vec<f64>) {
        let keys: Vec<u64> = (0..60).map(|i| (i * 7919 + w * 31) % 89).collect();
        let budgets: Vec<f64> = keys.iter().map(|&x| ((x + w) % 5) as f64 * 0.5).collect();
        (keys, budgets)
    }

    #[test]
    fn every_workers_hosts_are_placed_as_all_hosts_in_one_list_are() {
        const CRAWLERS: u32 = 7;
        let workers: Vec<(Vec<u64>, Vec<f64>)> = (0..3).map(worker_hosts).collect();
        let locals: Vec<Vec<LocalHost>> = workers
            .iter()
            .map(|(k, b)| in_placement_order(k, b))
            .collect();
        let loads = |w: usize| HostLoads::of(&locals[w], CRAWLERS, w as u32);
        // the others' lists arrive in any order
        for gathered in [vec![1, 2], vec![2, 1]] {
            let placed = place_all(
                loads(0),
                gathered.into_iter().map(loads).collect(),
                CRAWLERS,
            );
            assert_eq!(placed.iter().map(|p| p.dest).collect::<Vec<_>>(), [0, 1, 2]);
            // every host of every worker, in worker order, then in placement order (a stable
            // sort: of equal hosts the earlier worker's first), placed in one list
            let mut all: Vec<((u64, f64), (usize, usize))> = locals
                .iter()
                .enumerate()
                .flat_map(|(w, l)| l.iter().enumerate().map(move |(i, &(h, _))| (h, (w, i))))
                .collect();
            all.sort_by_key(|&(h, _)| placement_order(h.0, h.1));
            let hosts: Vec<(u64, f64)> = all.iter().map(|a| a.0).collect();
            let want = assign(&hosts, CRAWLERS);
            for (&(_, (w, i)), &crawler) in all.iter().zip(&want) {
                assert_eq!(placed[w].crawlers[i], crawler, "worker {w}, host {i}");
            }
            for p in &placed {
                assert_eq!(p.hosts, 180);
                assert_eq!(
                    p.load_ratio.to_bits(),
                    imbalance(&hosts, &want, CRAWLERS).to_bits()
                );
                assert_eq!(p.largest_host, 2.0);
            }
        }
    }
}
