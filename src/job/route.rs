//! Rows of a table keyed by URL, sent to the worker of their host: how evaluated rates and visits,
//! the previous night's state and fetch logs meet the pages they are about.

use std::cmp::Ordering;

use anyhow::{bail, Result};
use revisit_core::reduce::{AllReduce, Combine};
use serde::{Deserialize, Serialize};
use timely::ExchangeData;

use super::channel::{Reducer, Shuffle};
use super::flag_sort::sort_by_wide_key;
use super::heap;
use super::keys::{host_id, UrlKey};
use super::page_key::PageKey;
use super::share::ProcessShare;
use crate::io::politeness_key::PolitenessKey;
use crate::io::rates_in::InvalidRate;
use revisit_core::balance::Routes;

/// How a row of a table keyed by URL finds its host's worker: its politeness key (from its host
/// column, else its URL), and the worker of that key.
#[derive(Clone, Copy)]
pub struct ByHost<'a> {
    pub politeness: PolitenessKey,
    pub routes: &'a Routes,
}

/// (url key, value) pairs in one message between workers.
pub const PAIRS_PER_MESSAGE: usize = 1 << 16;

/// (key, value) pairs of a table keyed by URL: keyed by [`UrlKey`], or by [`PageKey`] where the
/// join walks the pages in canonical order.
pub type Pairs<V = f64, K = UrlKey> = Vec<(K, V)>;

/// A message of (key, value) pairs for one worker.
pub type KeyedMessage<V = f64, K = UrlKey> = (u32, Pairs<V, K>);

/// How a row of a table keyed by URL is keyed between workers, from its host's identity and its
/// URL.
pub trait TableKey: ExchangeData + Copy {
    fn of(host: u128, url: &str) -> Self;
}

impl TableKey for UrlKey {
    #[inline]
    fn of(_host: u128, url: &str) -> Self {
        UrlKey::of(url.as_bytes())
    }
}

impl TableKey for PageKey {
    #[inline]
    fn of(host: u128, url: &str) -> Self {
        PageKey::new(host, UrlKey::of(url.as_bytes()))
    }
}

/// The pairs of the `received` messages in one vector, sorted by URL key, pairs of one key by
/// `tie`: the table's side of a merge-join with [`super::arrange::Arranged::pages_by_url_key`].
/// Sorted by radix passes on the key, which is a hash, comparing `tie` only where whole keys
/// agree (the comparison sort it replaced evaluated every tie-break at every comparison: a fifth
/// of a nightly state phase).
pub fn sorted_pairs<V: Copy>(
    received: Vec<Pairs<V>>,
    tie: impl Fn(&V, &V) -> Ordering + Copy,
) -> Pairs<V> {
    let mut pairs = collected_pairs(received);
    sort_by_wide_key(&mut pairs, |p| p.0.halves(), |a, b| tie(&a.1, &b.1));
    pairs
}

/// The pairs of the `received` messages in one vector, in their keys' order (host identity, then
/// URL identity: the pages' canonical order), pairs of one key by `tie`: a table to walk forward
/// with the pages. Sorted by radix passes on the host's identity, comparing the URLs and `tie`
/// only where hosts agree.
pub fn sorted_by_page<V: Copy>(
    received: Vec<Pairs<V, PageKey>>,
    tie: impl Fn(&V, &V) -> Ordering + Copy,
) -> Pairs<V, PageKey> {
    let mut pairs = collected_pairs(received);
    sort_by_wide_key(
        &mut pairs,
        |p| p.0.host_halves(),
        |a, b| a.0.url.cmp(&b.0.url).then_with(|| tie(&a.1, &b.1)),
    );
    pairs
}

/// The pairs of the `received` messages in one vector.
///
/// The vector is allocated once at the pairs' count (collected from an iterator of messages it
/// grew by doubling, up to twice the table), and the messages are given back to the system as
/// they are copied, so the table is held about once, not twice.
pub fn collected_pairs<T>(received: Vec<Vec<T>>) -> Vec<T> {
    let mut pairs = Vec::with_capacity(received.iter().map(Vec::len).sum());
    let mut copied = 0;
    for message in received {
        copied += heap::room_bytes(&message);
        pairs.extend(message);
        if copied >= heap::GIVE_BACK_EVERY_BYTES {
            heap::give_back_freed();
            copied = 0;
        }
    }
    heap::give_back_freed();
    pairs
}

/// Reads the `units` of a (url, host, value) table with `read_unit`, each on the worker of this
/// process that takes it first from the process's `share`, and sends each (key, value) to its
/// host's worker (`by_host`); hands this worker's pairs to `fold` a message at a time as they
/// arrive, while the table is still being read (a join that folds them in holds only what is in
/// flight; one that needs them all pushes each message into a vector). Returns the read status
/// every worker agrees on. Fails alike on every worker, with the error of the lowest unit that
/// failed.
#[allow(clippy::too_many_arguments)]
pub fn route_keyed<U: Copy, V: ExchangeData + Clone, K: TableKey>(
    by_host: ByHost<'_>,
    reducer: &mut Reducer<'_>,
    share: &ProcessShare,
    channel: &mut Shuffle<KeyedMessage<V, K>>,
    units: &[U],
    file_of: impl Fn(&U) -> usize,
    mut read_unit: impl FnMut(
        U,
        &mut dyn FnMut(&str, Option<&str>, V),
        &mut dyn FnMut(InvalidRate),
    ) -> Result<u64>,
    mut fold: impl FnMut(Pairs<V, K>),
) -> Result<TableStatus> {
    let peers = by_host.routes.peers();
    let mut outgoing: Vec<Pairs<V, K>> = vec![Vec::new(); peers];
    let mut workers = HostWorkers::new(by_host);
    let mut status = TableStatus::default();
    // Units are taken in order, so that every unit below one that fails is read, by one worker or
    // another: the lowest failing unit, and the first invalid row by (file, row), are the same
    // whichever worker takes which.
    let queue = share.queue_at(reducer.rounds);
    while let Some(k) = queue.take(units.len()) {
        let unit = units[k];
        let file = file_of(&unit) as u64;
        let (mut unmatched, mut invalid, mut first_invalid) = (0, 0, None);
        let result = read_unit(
            unit,
            &mut |url, host, value| {
                let Some((dest, host)) = workers.of(url, host) else {
                    unmatched += 1; // no key: it cannot be any page's URL
                    return;
                };
                outgoing[dest].push((K::of(host, url), value));
                if outgoing[dest].len() >= PAIRS_PER_MESSAGE {
                    channel.send((dest as u32, std::mem::take(&mut outgoing[dest])));
                }
            },
            &mut |bad| {
                invalid += 1;
                if first_invalid.is_none() {
                    first_invalid = Some((file, bad));
                }
            },
        );
        status.unmatched += unmatched;
        status.invalid += invalid;
        if status.first_invalid.is_none() {
            status.first_invalid = first_invalid;
        }
        match result {
            Ok(rows) => status.rows += rows,
            Err(e) => {
                status.error = Some((k as u64, format!("{e:#}")));
                break;
            }
        }
        reducer.worker.step();
        channel.take_arrived().into_iter().for_each(|m| fold(m.1));
    }
    for (dest, pairs) in outgoing.into_iter().enumerate() {
        if !pairs.is_empty() {
            channel.send((dest as u32, pairs));
        }
    }
    let received = channel.finish_round(reducer.worker);
    received.into_iter().for_each(|m| fold(m.1));
    let status = reducer.all_reduce(status);
    if let Some((_, e)) = status.error {
        bail!(e);
    }
    Ok(status)
}

/// The worker of each row's host ([`ByHost`]), the last host's kept: a given host alone decides a
/// row's key, and the tables a run writes hold a host's rows one after another, so a row of the
/// same host as the last one takes its worker without normalising and hashing the host again.
struct HostWorkers<'a> {
    by_host: ByHost<'a>,
    last: Option<(String, Option<(usize, u128)>)>,
}

impl<'a> HostWorkers<'a> {
    fn new(by_host: ByHost<'a>) -> Self {
        HostWorkers {
            by_host,
            last: None,
        }
    }

    /// The worker of the row with `url` and host value `host`, and its host's identity (None:
    /// the row has no key, so it cannot be any page's URL).
    fn of(&mut self, url: &str, host: Option<&str>) -> Option<(usize, u128)> {
        if let Some((_, dest)) = host.and_then(|h| self.last.as_ref().filter(|(l, _)| l == h)) {
            return *dest;
        }
        let ByHost { politeness, routes } = self.by_host;
        let worker = |key: &str| {
            let id = host_id(key.as_bytes());
            (routes.worker_of(id) as usize, id)
        };
        // the politeness key the pages were routed by (a table's own host column holds the key
        // when it came from `run`; with ip-column, it must)
        let dest = match politeness {
            PolitenessKey::IpColumn => host
                .and_then(|h| politeness.table_value(h))
                .map(|k| worker(&k)),
            // the key borrowed where the host is normal already (every row a run wrote): owning
            // it cost an allocation a row
            key => key.of(url, host, None).ok().map(|k| worker(&k)),
        };
        if let Some(h) = host {
            let (last, last_dest) = self.last.get_or_insert_with(Default::default);
            last.clear();
            last.push_str(h);
            *last_dest = dest;
        }
        dest
    }
}

/// The rows of a table read by every worker: how many, how many unusable, the first of those.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct TableStatus {
    /// The lowest unit that failed, and why.
    pub error: Option<(u64, String)>,
    pub rows: u64,
    pub invalid: u64,
    /// Rows whose URL has no host: no page's.
    pub unmatched: u64,
    /// The first invalid row by (file, row).
    pub first_invalid: Option<(u64, InvalidRate)>,
}

impl Combine for TableStatus {
    fn combine(&mut self, o: Self) {
        self.error = match (self.error.take(), o.error) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        self.rows += o.rows;
        self.invalid += o.invalid;
        self.unmatched += o.unmatched;
        self.first_invalid = match (self.first_invalid.take(), o.first_invalid) {
            (Some(a), Some(b)) => Some(if (a.0, a.1.row) <= (b.0, b.1.row) {
                a
            } else {
                b
            }),
            (a, b) => a.or(b),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_host_routes_as_a_host_worked_out_afresh() {
        let routes = Routes::even(7);
        let rows = [
            ("https://a.example/1", Some("A.example")),
            ("https://a.example/2", Some("A.example")),
            ("https://b.example/1", Some("b.example.")),
            ("https://b.example/2", None),
            ("https://b.example/3", Some("b.example.")),
            ("https://a.example/3", Some("A.example")),
            ("https://x/", Some("not a host")),
            ("https://x/2", Some("not a host")),
            ("https://c.example/", Some("c.example")),
        ];
        for politeness in [
            PolitenessKey::Host,
            PolitenessKey::Domain,
            PolitenessKey::IpColumn,
        ] {
            let by_host = ByHost {
                politeness,
                routes: &routes,
            };
            let mut kept = HostWorkers::new(by_host);
            for (url, host) in rows {
                // a fresh memo for every row: nothing kept
                let afresh = HostWorkers::new(by_host).of(url, host);
                assert_eq!(kept.of(url, host), afresh, "{politeness:?} {url} {host:?}");
            }
        }
        // the hosts' workers differ, so a kept worker given to another host would show
        let mut workers = HostWorkers::new(ByHost {
            politeness: PolitenessKey::Host,
            routes: &routes,
        });
        let hosts = ["a.example", "b.example", "c.example", "d.example"];
        let dests: Vec<_> = hosts
            .iter()
            .map(|h| workers.of("https://x/", Some(h)))
            .collect();
        assert!(dests.iter().any(|d| *d != dests[0]), "{dests:?}");
        assert_eq!(workers.of("https://x/", Some("not a host")), None);
    }

    #[test]
    fn the_combined_status_fails_with_the_lowest_failing_unit_in_any_order_of_workers() {
        let failed = |unit: u64| TableStatus {
            error: Some((unit, format!("unit {unit} failed"))),
            rows: unit,
            ..TableStatus::default()
        };
        let workers = [failed(7), TableStatus::default(), failed(3), failed(12)];
        for first in 0..workers.len() {
            let mut total = workers[first].clone();
            for (k, w) in workers.iter().enumerate() {
                if k != first {
                    total.combine(w.clone());
                }
            }
            assert_eq!(total.error, Some((3, "unit 3 failed".to_owned())));
            assert_eq!(total.rows, 22);
        }
    }
}
