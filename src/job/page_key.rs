//! A page's place in canonical order, (host identity, URL identity), and finding a worker's page
//! by it: a table in that order (every table a run writes lists a host's rows in it) is joined to
//! the pages by walking both forward, with neither sorted first.

use serde::{Deserialize, Serialize};

use super::keys::UrlKey;

/// A page's identity in canonical order: its host's 128-bit identity
/// ([`super::keys::host_id`] of its politeness key), then its URL's ([`UrlKey`]). Ordered as the
/// pair, in 32 bytes aligned to 8.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct PageKey {
    host_high: u64,
    host_low: u64,
    pub url: UrlKey,
}

impl PageKey {
    /// The key of the URL `url` of the host with identity `host`.
    #[inline]
    pub fn new(host: u128, url: UrlKey) -> Self {
        PageKey {
            host_high: (host >> 64) as u64,
            host_low: host as u64,
            url,
        }
    }

    /// The host's 128-bit identity.
    #[inline]
    pub fn host(self) -> u128 {
        (u128::from(self.host_high) << 64) | u128::from(self.host_low)
    }

    /// The host's identity as (high, low) halves: the key of
    /// [`super::flag_sort::sort_by_wide_key`].
    #[inline]
    pub fn host_halves(self) -> (u64, u64) {
        (self.host_high, self.host_low)
    }
}

/// Finds a worker's pages by [`PageKey`], walking forward from the last page found: keys in
/// canonical order visit each host and each page at most once, in memory order; any other order
/// costs a binary search where it jumps back.
pub struct PageFinder<'a> {
    /// The worker's hosts' identities, ascending (canonical order).
    hosts: &'a [u128],
    /// Host `h`'s pages are `offsets[h]..offsets[h + 1]`.
    offsets: &'a [usize],
    /// Every page's URL key, ascending within its host.
    urls: &'a [UrlKey],
    /// The host of the last key (its place among `hosts` if no host of this worker has it).
    host: usize,
    /// Whether `hosts[host]` is the last key's host.
    found_host: bool,
    /// Where the last key's URL is, or would be, among its host's pages.
    at: usize,
    /// The last key's URL: a key of the same host at or past it is searched for from `at`.
    last: UrlKey,
}

impl<'a> PageFinder<'a> {
    /// A finder over the pages of hosts `hosts` (ascending identities), host `h` holding pages
    /// `offsets[h]..offsets[h + 1]`, page `i` the URL key `urls[i]` (ascending within a host).
    pub fn new(hosts: &'a [u128], offsets: &'a [usize], urls: &'a [UrlKey]) -> Self {
        debug_assert_eq!(offsets.len(), hosts.len() + 1);
        debug_assert_eq!(offsets.last().copied().unwrap_or(0), urls.len());
        PageFinder {
            hosts,
            offsets,
            urls,
            host: 0,
            found_host: false,
            at: 0,
            last: UrlKey::default(),
        }
    }

    /// The page with key `key` (None: no page of these hosts has it).
    #[inline]
    pub fn find(&mut self, key: PageKey) -> Option<usize> {
        let host = key.host();
        if !(self.found_host && self.hosts[self.host] == host) {
            // forward from the last host where the key is past it, else from the first
            let from = match self.hosts.get(self.host) {
                Some(&h) if h < host => self.host,
                _ => 0,
            };
            self.host = gallop(self.hosts, from, |&h| h < host);
            self.found_host = self.hosts.get(self.host) == Some(&host);
            if self.found_host {
                self.at = self.offsets[self.host];
                self.last = UrlKey::default();
            }
        }
        if !self.found_host {
            return None;
        }
        let (first, end) = (self.offsets[self.host], self.offsets[self.host + 1]);
        let from = if key.url >= self.last { self.at } else { first };
        let url = key.url;
        self.at = gallop(&self.urls[..end], from, |&u| u < url);
        self.last = url;
        (self.at < end && self.urls[self.at] == url).then_some(self.at)
    }
}

/// The first place at or after `from` in `sorted` whose element is not `below` (its length if
/// none), where `below` holds of a prefix of `sorted[from..]` and of nothing after it: doubling
/// steps from `from`, then a binary search in the last step. A step of k places costs about
/// 2 log2(k) looks, so a forward walk costs about what a merge does, and a search far ahead about
/// what a binary search does.
#[inline]
pub fn gallop<T>(sorted: &[T], from: usize, below: impl Fn(&T) -> bool) -> usize {
    let rest = &sorted[from..];
    let mut bound = 1;
    while bound <= rest.len() && below(&rest[bound - 1]) {
        bound *= 2;
    }
    // every place below bound / 2 holds an element below; the first that is not is below bound
    let (lo, hi) = (bound / 2, bound.min(rest.len()));
    from + lo + rest[lo..hi].partition_point(below)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_keys_order_as_the_pair_of_identities() {
        let ids = [
            0u128,
            1,
            u64::MAX as u128,
            (u64::MAX as u128) + 1,
            u128::MAX,
        ];
        let mut pairs = Vec::new();
        for &h in &ids {
            for &u in &ids {
                pairs.push((h, u));
            }
        }
        for &(h1, u1) in &pairs {
            for &(h2, u2) in &pairs {
                let (a, b) = (
                    PageKey::new(h1, UrlKey::from(u1)),
                    PageKey::new(h2, UrlKey::from(u2)),
                );
                assert_eq!(a.cmp(&b), (h1, u1).cmp(&(h2, u2)));
                assert_eq!(a.host(), h1);
            }
        }
        assert_eq!(std::mem::size_of::<(PageKey, (i64, i64, f64))>(), 56);
    }

    proptest::proptest! {
        #[test]
        fn the_finder_finds_each_key_s_page_as_a_search_of_every_page_does(
            hosts in proptest::collection::btree_map(
                0u128..40,
                proptest::collection::btree_set(0u128..60, 1..12),
                0..10,
            ),
            keys in proptest::collection::vec((0u128..42, 0u128..62), 0..200),
            sorted in proptest::bool::ANY,
        ) {
            // identities near the halves' boundaries too
            let id = |k: u128| k.rotate_right(3);
            let mut pages: Vec<(u128, UrlKey)> = hosts
                .iter()
                .flat_map(|(&h, urls)| urls.iter().map(move |&u| (id(h), UrlKey::from(id(u)))))
                .collect();
            pages.sort_unstable();
            let mut host_ids: Vec<u128> = pages.iter().map(|p| p.0).collect();
            host_ids.dedup();
            let offsets: Vec<usize> = host_ids
                .iter()
                .map(|&h| pages.partition_point(|p| p.0 < h))
                .chain([pages.len()])
                .collect();
            let urls: Vec<UrlKey> = pages.iter().map(|p| p.1).collect();
            let mut keys: Vec<PageKey> = keys
                .iter()
                .map(|&(h, u)| PageKey::new(id(h), UrlKey::from(id(u))))
                .collect();
            if sorted {
                keys.sort_unstable();
            }
            let mut finder = PageFinder::new(&host_ids, &offsets, &urls);
            for key in keys {
                let every = pages.iter().position(|&(h, u)| h == key.host() && u == key.url);
                proptest::prop_assert_eq!(finder.find(key), every, "{:?}", key);
            }
        }

        #[test]
        fn a_gallop_finds_the_first_place_not_below(
            mut values in proptest::collection::vec(0u32..100, 0..80),
            from in 0usize..80,
            x in 0u32..101,
        ) {
            values.sort_unstable();
            // every place before `from` must be below
            let from = from.min(values.partition_point(|&v| v < x));
            proptest::prop_assert_eq!(
                gallop(&values, from, |&v| v < x),
                values.partition_point(|&v| v < x)
            );
        }
    }
}
