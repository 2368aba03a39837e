//! The solver's input: pages in columns, grouped by host, each host with its politeness cap. Built
//! once (by [`PagesBuilder`] or [`Pages::from_columns`], which validate), never changed: what to
//! solve on them is a [`super::Problem`].

use crate::units::PerDay;

/// Pages grouped by host, in columns (the hot data of the solve: 17 bytes per page).
///
/// Pages of host `h` are `host_pages(h)`; their order inside a host is the caller's (the job's is
/// canonical, sorted by URL key) so that per-host sums, and hence every result, do not depend on
/// arrival order.
#[derive(Clone, Debug, Default)]
pub struct Pages {
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    complete_obs: Vec<bool>,
    /// Page index boundaries of the hosts (len = hosts + 1).
    offsets: Vec<usize>,
    /// Politeness cap of each host, fetches per day (+inf: no limit).
    cap: Vec<f64>,
    /// Each page's own least and largest rate, fetches per day (NaN: none of its own), from its
    /// max and min refetch intervals; both empty when no page has one.
    min_rate: Vec<f64>,
    max_rate: Vec<f64>,
}

/// Why columns cannot be pages: the first page or host at fault and its value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PagesError {
    #[error("page {page}: importance must be finite and >= 0, got {value}")]
    Importance { page: usize, value: f64 },
    #[error("page {page}: change rate must be finite and >= 0 changes per day, got {value}")]
    ChangeRate { page: usize, value: f64 },
    #[error(
        "host {host}: politeness cap must be > 0 fetches per day (+inf for none), got {value}"
    )]
    Cap { host: usize, value: f64 },
    #[error(
        "page {page}: rate bounds must be 0 <= least <= largest fetches per day (the max refetch \
         interval at least the min), got [{min}, {max}]"
    )]
    RateBounds { page: usize, min: f64, max: f64 },
    #[error("columns disagree: {0}")]
    Shape(String),
}

/// The first of `values` that is negative or not finite (NaN among them), if any.
fn first_negative_or_not_finite(values: &[f64]) -> Option<usize> {
    // (NaN is in no range)
    crate::wide::first_failing(values, |v| (0.0..f64::INFINITY).contains(&v))
}

impl Pages {
    /// Pages from whole columns: `offsets` (hosts + 1 entries, from 0, non-decreasing, ending at the
    /// page count) bound each host's pages, `caps` (per day) one per host.
    pub fn from_columns(
        importance: Vec<f64>,
        change_rate: Vec<f64>,
        complete_obs: Vec<bool>,
        offsets: Vec<usize>,
        caps: Vec<f64>,
    ) -> Result<Pages, PagesError> {
        let n = importance.len();
        if change_rate.len() != n || complete_obs.len() != n {
            return Err(PagesError::Shape(format!(
                "{n} importances, {} change rates, {} observability flags",
                change_rate.len(),
                complete_obs.len()
            )));
        }
        let bounded = offsets.first() == Some(&0)
            && offsets.last() == Some(&n)
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && offsets.len() == caps.len() + 1;
        if !bounded {
            return Err(PagesError::Shape(format!(
                "{} host boundaries for {} hosts and {n} pages",
                offsets.len(),
                caps.len()
            )));
        }
        // 0 is a page worth nothing (Frontera's value per change times a change rate of 0)
        if let Some(page) = first_negative_or_not_finite(&importance) {
            return Err(PagesError::Importance {
                page,
                value: importance[page],
            });
        }
        if let Some(page) = first_negative_or_not_finite(&change_rate) {
            return Err(PagesError::ChangeRate {
                page,
                value: change_rate[page],
            });
        }
        // NaN fails the comparison too
        if let Some(host) = caps.iter().position(|&c| c.is_nan() || c <= 0.0) {
            return Err(PagesError::Cap {
                host,
                value: caps[host],
            });
        }
        Ok(Pages {
            importance,
            change_rate,
            complete_obs,
            offsets,
            cap: caps,
            min_rate: Vec::new(),
            max_rate: Vec::new(),
        })
    }

    /// The same pages with each one's own least and largest rate, fetches per day (NaN: none of
    /// its own; the problem's then apply): 1 / its max and min refetch intervals.
    pub fn with_rate_bounds(
        mut self,
        min_rate: Vec<f64>,
        max_rate: Vec<f64>,
    ) -> Result<Pages, PagesError> {
        if min_rate.len() != self.len() || max_rate.len() != self.len() {
            return Err(PagesError::Shape(format!(
                "{} pages, {} least and {} largest rates",
                self.len(),
                min_rate.len(),
                max_rate.len()
            )));
        }
        for (page, (&min, &max)) in min_rate.iter().zip(&max_rate).enumerate() {
            let ok = (min.is_nan() || (min.is_finite() && min >= 0.0))
                && (max.is_nan() || max > 0.0)
                && min.partial_cmp(&max) != Some(std::cmp::Ordering::Greater);
            if !ok {
                return Err(PagesError::RateBounds { page, min, max });
            }
        }
        self.min_rate = min_rate;
        self.max_rate = max_rate;
        Ok(self)
    }

    /// The same pages with other change rates (changes per day), e.g. learned from the crawls.
    pub fn with_change_rates(mut self, change_rate: Vec<f64>) -> Result<Pages, PagesError> {
        if change_rate.len() != self.len() {
            return Err(PagesError::Shape(format!(
                "{} pages, {} change rates",
                self.len(),
                change_rate.len()
            )));
        }
        if let Some(page) = first_negative_or_not_finite(&change_rate) {
            return Err(PagesError::ChangeRate {
                page,
                value: change_rate[page],
            });
        }
        self.change_rate = change_rate;
        Ok(self)
    }

    /// Page `i`'s own least and largest rate, fetches per day (NaN: none of its own).
    #[inline]
    pub fn rate_bounds(&self, i: usize) -> (f64, f64) {
        match (self.min_rate.get(i), self.max_rate.get(i)) {
            (Some(&min), Some(&max)) => (min, max),
            _ => (f64::NAN, f64::NAN),
        }
    }

    /// Whether any page has rate bounds of its own.
    #[inline]
    pub fn has_rate_bounds(&self) -> bool {
        !self.min_rate.is_empty()
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.cap.len()
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.importance.len()
    }

    /// Whether there is no page.
    pub fn is_empty(&self) -> bool {
        self.importance.is_empty()
    }

    /// Page index range of host `h`.
    #[inline]
    pub fn host_pages(&self, h: usize) -> std::ops::Range<usize> {
        self.offsets[h]..self.offsets[h + 1]
    }

    /// Where each host's pages start, and the page count last (`host_pages(h)` is
    /// `offsets[h]..offsets[h + 1]`).
    #[inline]
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Importance mu > 0 of every page.
    #[inline]
    pub fn importance(&self) -> &[f64] {
        &self.importance
    }

    /// Change rate lambda >= 0 of every page, changes per day.
    #[inline]
    pub fn change_rate(&self) -> &[f64] {
        &self.change_rate
    }

    /// Whether every change of each page is notified (sitemaps, pings).
    #[inline]
    pub fn complete_obs(&self) -> &[bool] {
        &self.complete_obs
    }

    /// The politeness cap of host `h`, fetches per day (+inf: no limit).
    #[inline]
    pub fn cap(&self, h: usize) -> f64 {
        self.cap[h]
    }

    /// Every host's politeness cap, fetches per day (+inf: no limit).
    pub fn caps(&self) -> &[f64] {
        &self.cap
    }
}

/// Builds [`Pages`] host by host.
#[derive(Debug, Default)]
pub struct PagesBuilder {
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    complete_obs: Vec<bool>,
    offsets: Vec<usize>,
    caps: Vec<f64>,
}

impl PagesBuilder {
    /// A builder with no host.
    pub fn new() -> Self {
        PagesBuilder {
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// Appends a host of politeness cap `cap` with its pages `(importance, change rate per day,
    /// complete observations)`.
    pub fn push_host(
        &mut self,
        cap: PerDay,
        pages: impl IntoIterator<Item = (f64, f64, bool)>,
    ) -> &mut Self {
        for (mu, lambda, complete) in pages {
            self.importance.push(mu);
            self.change_rate.push(lambda);
            self.complete_obs.push(complete);
        }
        self.offsets.push(self.importance.len());
        self.caps.push(cap.0);
        self
    }

    /// The pages, validated.
    pub fn build(self) -> Result<Pages, PagesError> {
        Pages::from_columns(
            self.importance,
            self.change_rate,
            self.complete_obs,
            self.offsets,
            self.caps,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The chunked scan finds what a scan value by value finds, wherever the bad values fall
        /// (within a chunk, at its edges, past the last whole chunk).
        #[test]
        fn the_first_bad_value_is_the_one_a_plain_scan_finds(
            len in 0usize..1100,
            bad in proptest::collection::vec((0usize..1100, 0usize..6), 0..4),
        ) {
            let special = [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, f64::MIN_POSITIVE];
            let mut values: Vec<f64> = (0..len).map(|i| i as f64 * 0.25).collect();
            for (at, kind) in bad {
                if at < len {
                    values[at] = special[kind];
                }
            }
            let plain = values.iter().position(|&v| !(v.is_finite() && v >= 0.0));
            proptest::prop_assert_eq!(first_negative_or_not_finite(&values), plain);
        }
    }

    #[test]
    fn the_builder_refuses_what_no_page_can_be() {
        let one = |mu: f64, lambda: f64, cap: f64| {
            let mut b = PagesBuilder::new();
            b.push_host(PerDay(cap), [(1.0, 0.5, false), (mu, lambda, true)]);
            b.build()
        };
        assert!(one(2.0, 0.0, f64::INFINITY).is_ok());
        assert_eq!(
            one(-1.0, 1.0, 1.0).unwrap_err(),
            PagesError::Importance {
                page: 1,
                value: -1.0
            }
        );
        assert!(one(f64::INFINITY, 1.0, 1.0).is_err());
        assert!(matches!(
            one(1.0, f64::NAN, 1.0),
            Err(PagesError::ChangeRate { page: 1, .. })
        ));
        assert!(matches!(
            one(1.0, 1.0, f64::NAN),
            Err(PagesError::Cap { host: 0, .. })
        ));
        assert!(
            Pages::from_columns(vec![1.0], vec![1.0], vec![false], vec![0, 2], vec![1.0]).is_err()
        );
    }

    #[test]
    fn hosts_hold_their_pages_in_order() {
        let mut b = PagesBuilder::new();
        b.push_host(PerDay(3.0), [(1.0, 0.1, false), (2.0, 0.2, true)])
            .push_host(PerDay(4.0), [])
            .push_host(PerDay(5.0), [(3.0, 0.3, false)]);
        let p = b.build().unwrap();
        assert_eq!((p.hosts(), p.len()), (3, 3));
        assert_eq!(p.host_pages(0), 0..2);
        assert_eq!(p.host_pages(1), 2..2);
        assert_eq!(p.host_pages(2), 2..3);
        assert_eq!(p.importance(), [1.0, 2.0, 3.0]);
        assert_eq!(p.complete_obs(), [false, true, false]);
        assert_eq!(p.cap(2), 5.0);
    }
}
