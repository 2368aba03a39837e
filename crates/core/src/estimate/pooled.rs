//! A prior for each host: its URLs' observations pooled into one rate, shrunk toward the level of
//! all hosts by empirical Bayes (normal-normal on log rates, the method of moments of
//! DerSimonian & Laird for the spread between hosts). A host with many observations keeps nearly
//! its own pooled rate, a host with few leans on the level of all hosts, a host with none gets
//! that level. Only URLs without complete observations are pooled and given these priors: a URL
//! whose every change is notified learns its rate within days on the paper's smoothing.

use serde::{Deserialize, Serialize};

use super::evidence::Seen;
use super::incomplete::mle_smoothed;
use super::{Prior, SMOOTHING};
use crate::exact_sum::ExactSum;
use crate::reduce::{AllReduce, Combine};

/// One host's URLs' intervals in the window, as one URL's. The same URLs added in any order give
/// the same bits (the changed lengths are sorted, the unchanged days summed exactly), so the
/// stand-alone `estimate` and any number of workers agree.
#[derive(Clone, Debug, Default)]
pub struct HostPool {
    changed: Vec<f64>,
    unchanged_days: ExactSum,
    any: bool,
}

impl HostPool {
    /// Adds one URL's intervals.
    pub fn add(&mut self, seen: &Seen) {
        self.changed.extend_from_slice(&seen.changed);
        self.unchanged_days.add(seen.unchanged_days);
        self.any |= seen.intervals() > 0;
    }

    /// The pooled log rate (the paper's smoothing once for the whole host) and its sampling
    /// variance, about 1 / (changes seen + 1/2); None for a host with no interval.
    pub fn log_rate(&self) -> Option<LogRate> {
        if !self.any {
            return None;
        }
        let mut changed = self.changed.clone();
        changed.sort_unstable_by(f64::total_cmp);
        let rate = mle_smoothed(&changed, SMOOTHING, self.unchanged_days.value() + SMOOTHING);
        Some(LogRate {
            log_rate: rate.ln(),
            variance: 1.0 / (self.changed.len() as f64 + SMOOTHING),
        })
    }
}

/// A host's pooled estimate on the log scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogRate {
    pub log_rate: f64,
    pub variance: f64,
}

/// Sums over hosts for the level and spread of their pooled log rates (exact: any worker count
/// gives the same bits). Two rounds: `weights` first (inverse-variance), then `level` with the
/// spread they give.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Moments {
    hosts: u64,
    w: ExactSum,
    wy: ExactSum,
    wyy: ExactSum,
    ww: ExactSum,
}

impl Moments {
    /// Adds a host.
    pub fn add(&mut self, h: LogRate) {
        let w = 1.0 / h.variance;
        self.hosts += 1;
        self.w.add(w);
        self.wy.add(w * h.log_rate);
        self.wyy.add(w * h.log_rate * h.log_rate);
        self.ww.add(w * w);
    }

    /// The spread tau^2 between hosts' true log rates: (Q - (k - 1)) / (sum w - sum w^2 / sum w),
    /// at least 0, where Q = sum w (y - mean_w y)^2 (DerSimonian & Laird).
    pub fn spread(&self) -> f64 {
        let (w, wy, wyy, ww) = (
            self.w.value(),
            self.wy.value(),
            self.wyy.value(),
            self.ww.value(),
        );
        if self.hosts < 2 || w <= 0.0 {
            return 0.0;
        }
        let q = wyy - wy * wy / w;
        ((q - (self.hosts - 1) as f64) / (w - ww / w)).max(0.0)
    }
}

impl Combine for Moments {
    fn combine(&mut self, o: Self) {
        self.hosts += o.hosts;
        self.w.merge(&o.w);
        self.wy.merge(&o.wy);
        self.wyy.merge(&o.wyy);
        self.ww.merge(&o.ww);
    }
}

/// Sums for the level of all hosts given the spread: weights 1 / (variance + tau^2).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Level {
    w: ExactSum,
    wy: ExactSum,
}

impl Level {
    pub fn add(&mut self, h: LogRate, spread: f64) {
        let w = 1.0 / (h.variance + spread);
        self.w.add(w);
        self.wy.add(w * h.log_rate);
    }

    /// The level's log rate; None when no host has an interval.
    pub fn log_rate(&self) -> Option<f64> {
        let w = self.w.value();
        (w > 0.0).then(|| self.wy.value() / w)
    }
}

impl Combine for Level {
    fn combine(&mut self, o: Self) {
        self.w.merge(&o.w);
        self.wy.merge(&o.wy);
    }
}

/// The prior of a host's URLs: its pooled log rate shrunk toward `level` by the share
/// variance / (variance + tau^2) (all of the way with no spread or no pooled rate), or the paper's
/// smoothing when no host has seen anything.
pub fn host_prior(host: Option<LogRate>, level: Option<f64>, spread: f64) -> Prior {
    let Some(level) = level else {
        return Prior::Paper;
    };
    let y = match host {
        Some(h) if spread > 0.0 => {
            (spread * h.log_rate + h.variance * level) / (spread + h.variance)
        }
        _ => level,
    };
    Prior::Rate(y.exp())
}

/// Every host's prior from its pooled log rate (None: no interval), the same on every worker:
/// the spread and the level are all-reduced over every worker's hosts.
pub fn host_priors(pools: &[Option<LogRate>], reduce: &mut impl AllReduce) -> Vec<Prior> {
    let mut moments = Moments::default();
    pools.iter().flatten().for_each(|&h| moments.add(h));
    let spread = reduce.all_reduce(moments).spread();
    let mut level = Level::default();
    pools.iter().flatten().for_each(|&h| level.add(h, spread));
    let level = reduce.all_reduce(level).log_rate();
    pools
        .iter()
        .map(|&h| host_prior(h, level, spread))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(changed: usize, unchanged: usize, length: f64) -> LogRate {
        let mut pool = HostPool::default();
        pool.add(&Seen {
            changed: vec![length; changed],
            unchanged: unchanged as u64,
            unchanged_days: unchanged as f64 * length,
            notices: changed as u64,
        });
        pool.log_rate().unwrap()
    }

    #[test]
    fn hosts_alike_share_one_level() {
        // every host sees the same: no spread between them, every prior is the level
        let hosts: Vec<LogRate> = (0..5).map(|_| host(30, 70, 1.0)).collect();
        let mut m = Moments::default();
        hosts.iter().for_each(|&h| m.add(h));
        assert_eq!(m.spread(), 0.0);
        let mut level = Level::default();
        hosts.iter().for_each(|&h| level.add(h, 0.0));
        let l = level.log_rate().unwrap();
        assert!((l - hosts[0].log_rate).abs() < 1e-12);
        assert_eq!(
            host_prior(Some(hosts[0]), Some(l), 0.0),
            Prior::Rate(l.exp())
        );
    }

    #[test]
    fn a_well_observed_host_keeps_its_rate_and_a_sparse_one_leans_on_the_level() {
        // hosts far apart: a real spread
        let hosts = [host(500, 500, 1.0), host(50, 950, 1.0), host(5, 995, 1.0)];
        let mut m = Moments::default();
        hosts.iter().for_each(|&h| m.add(h));
        let spread = m.spread();
        assert!(spread > 0.5, "{spread}");
        let mut level = Level::default();
        hosts.iter().for_each(|&h| level.add(h, spread));
        let l = level.log_rate().unwrap();
        let sparse = host(1, 2, 1.0);
        let rate = |p: Prior| match p {
            Prior::Rate(r) => r.ln(),
            Prior::Paper => f64::NAN,
        };
        let dense = rate(host_prior(Some(hosts[0]), Some(l), spread));
        assert!((dense - hosts[0].log_rate).abs() < 0.01 * spread);
        let s = rate(host_prior(Some(sparse), Some(l), spread));
        assert!(
            (s - l).abs() < (sparse.log_rate - l).abs(),
            "shrunk toward the level"
        );
        assert_eq!(host_prior(None, Some(l), spread), Prior::Rate(l.exp()));
        assert_eq!(host_prior(None, None, 0.0), Prior::Paper);
    }
}
