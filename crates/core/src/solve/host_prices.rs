//! Every local host's price once the multiplier is known: nu and its step share for the hosts no
//! cap binds, each capped host's own theta_h (NeurIPS'19 Problem 2's KKT conditions with a
//! multiplier per politeness constraint).
//!
//! Stored sparse: on the web's long tail of hosts of one page almost no cap binds, and a price per
//! host would be 40 bytes of fresh memory a host, written and read once, for the same two numbers.

use super::host_cap::HostPrice;

/// A host priced on its own: its cap binds at nu.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CappedHost {
    /// The host's index among the worker's hosts.
    pub host: usize,
    pub price: HostPrice,
    /// Its demand at nu (with nu's step share): above its cap, fetches per day.
    pub demand: f64,
}

/// The prices of a worker's hosts: `nu` (with step share `fill`) but for the capped ones.
#[derive(Clone, Debug, PartialEq)]
pub struct HostPrices {
    hosts: usize,
    free: HostPrice,
    /// By ascending host index.
    capped: Vec<CappedHost>,
}

impl HostPrices {
    /// `hosts` hosts at price `nu` with step share `fill`, but for `capped` (by ascending host).
    pub fn new(hosts: usize, nu: f64, fill: f64, capped: Vec<CappedHost>) -> Self {
        debug_assert!(capped.windows(2).all(|w| w[0].host < w[1].host));
        debug_assert!(capped.iter().all(|c| c.host < hosts && c.price.capped));
        HostPrices {
            hosts,
            free: HostPrice {
                price: nu,
                fill,
                capped: false,
                rounds: 0,
                converged: true,
            },
            capped,
        }
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.hosts
    }

    /// Whether there are no hosts.
    pub fn is_empty(&self) -> bool {
        self.hosts == 0
    }

    /// The capped hosts, by ascending host index.
    pub fn capped(&self) -> &[CappedHost] {
        &self.capped
    }

    /// Host `h` if its cap binds (a binary search among the capped hosts).
    pub fn capped_host(&self, h: usize) -> Option<&CappedHost> {
        debug_assert!(h < self.hosts);
        let k = self.capped.binary_search_by_key(&h, |c| c.host).ok()?;
        Some(&self.capped[k])
    }

    /// Host `h`'s price.
    pub fn get(&self, h: usize) -> HostPrice {
        self.capped_host(h).map_or(self.free, |c| c.price)
    }

    /// Every host's price, in host order.
    pub fn iter(&self) -> impl Iterator<Item = HostPrice> + '_ {
        let mut capped = self.capped.iter().peekable();
        (0..self.hosts).map(move |h| match capped.next_if(|c| c.host == h) {
            Some(c) => c.price,
            None => self.free,
        })
    }

    /// The runs of hosts in order: `(hosts, None)` for a run of free hosts at nu, `(h..h+1,
    /// Some(capped))` for a capped one.
    pub fn runs(&self) -> impl Iterator<Item = (std::ops::Range<usize>, Option<&CappedHost>)> {
        let mut at = 0;
        let mut capped = self.capped.iter().peekable();
        std::iter::from_fn(move || {
            if at >= self.hosts {
                return None;
            }
            let next = capped.peek().map_or(self.hosts, |c| c.host);
            let run = if next > at {
                (at..next, None)
            } else {
                (at..at + 1, capped.next())
            };
            at = run.0.end;
            Some(run)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capped(host: usize, price: f64) -> CappedHost {
        CappedHost {
            host,
            price: HostPrice {
                price,
                fill: 0.0,
                capped: true,
                rounds: 3,
                converged: true,
            },
            demand: 2.0,
        }
    }

    #[test]
    fn get_iter_and_runs_agree() {
        let prices = HostPrices::new(
            7,
            0.5,
            0.25,
            vec![capped(0, 1.0), capped(3, 2.0), capped(4, 3.0)],
        );
        let by_get: Vec<f64> = (0..7).map(|h| prices.get(h).price).collect();
        let by_iter: Vec<f64> = prices.iter().map(|p| p.price).collect();
        assert_eq!(by_get, [1.0, 0.5, 0.5, 2.0, 3.0, 0.5, 0.5]);
        assert_eq!(by_iter, by_get);
        assert_eq!(prices.get(5).fill, 0.25);
        let runs: Vec<_> = prices.runs().map(|(r, c)| (r, c.map(|c| c.host))).collect();
        assert_eq!(
            runs,
            [
                (0..1, Some(0)),
                (1..3, None),
                (3..4, Some(3)),
                (4..5, Some(4)),
                (5..7, None)
            ]
        );
        assert_eq!(HostPrices::new(0, 1.0, 0.0, vec![]).runs().count(), 0);
    }
}
