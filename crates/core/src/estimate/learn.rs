//! Every URL's change rate from its evidence, with the prior chosen: the one path both the
//! stand-alone `estimate` and `run --history` take (on plain slices here; the job gives each
//! worker's hosts and an all-reduce over the workers).

use serde::{Deserialize, Serialize};

use super::pooled::{host_priors, HostPool};
use super::{estimate_with, Estimate, Evidence, Prior, Seen, Window};
use crate::reduce::AllReduce;

/// Which prior a URL with little history leans on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum PriorKind {
    /// The paper's fixed smoothing: half a day changed and half a day unchanged (NeurIPS'19 §5).
    Paper,
    /// The URL's host's pooled rate shrunk toward the level of all hosts (empirical Bayes).
    #[default]
    Host,
}

impl PriorKind {
    /// The name the command line and the summaries use.
    pub fn name(self) -> &'static str {
        match self {
            PriorKind::Paper => "paper",
            PriorKind::Host => "host",
        }
    }
}

/// The estimates of `evidence` (URL i on host `host_of[i]`, hosts numbered 0..`hosts`) in
/// `window`. With [`PriorKind::Host`] the hosts' pools are all-reduced by `reduce`, so every worker
/// gets the same priors whatever hosts it holds; URLs with complete observations lean on the
/// paper's smoothing either way (their notices teach them within days).
pub fn learn(
    evidence: &[Evidence],
    host_of: &[u32],
    hosts: usize,
    window: Window,
    prior: PriorKind,
    reduce: &mut impl AllReduce,
) -> Vec<Estimate> {
    // one URL's intervals at a time, in room reused from URL to URL
    let mut seen = Seen::default();
    let priors = match prior {
        PriorKind::Paper => vec![Prior::Paper; hosts],
        PriorKind::Host => {
            let mut pools = vec![HostPool::default(); hosts];
            for (e, &h) in evidence.iter().zip(host_of) {
                if !e.complete {
                    e.seen_into(window, &mut seen);
                    pools[h as usize].add(&seen);
                }
            }
            let rates: Vec<_> = pools.iter().map(HostPool::log_rate).collect();
            host_priors(&rates, reduce)
        }
    };
    evidence
        .iter()
        .zip(host_of)
        .map(|(e, &h)| {
            let p = if e.complete {
                Prior::Paper
            } else {
                priors[h as usize]
            };
            estimate_with(e, window, p, &mut seen)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Observation;
    use crate::reduce::Alone;

    fn evidence(days: &[(f64, bool)]) -> Evidence {
        let mut e = Evidence::default();
        for &(at_days, changed) in days {
            e.observe(Observation {
                at_days,
                changed,
                complete: false,
            })
            .unwrap();
        }
        e
    }

    #[test]
    fn a_url_without_history_takes_its_hosts_rate_and_the_paper_prior_ignores_it() {
        // host 0: ten URLs crawled daily for 20 days, changing every other day; URL 10 is new
        let mut all: Vec<Evidence> = (0..10)
            .map(|_| evidence(&(0..20).map(|d| (d as f64, d % 2 == 1)).collect::<Vec<_>>()))
            .collect();
        all.push(Evidence::default());
        let host_of = vec![0; 11];
        let window = Window {
            from: 0.0,
            to: 20.0,
        };
        let host = learn(&all, &host_of, 1, window, PriorKind::Host, &mut Alone);
        let paper = learn(&all, &host_of, 1, window, PriorKind::Paper, &mut Alone);
        // the new URL: the host's pooled rate (about -ln(1/2) = 0.69 a day), not 2 ln 2
        assert!(
            (host[10].change_rate - paper[0].change_rate).abs() < 0.1,
            "{host:?}"
        );
        assert_eq!(paper[10].change_rate, Prior::Paper.rate(false));
        // the observed URLs barely move with the prior: ten changes seen each
        assert!((host[0].change_rate / paper[0].change_rate - 1.0).abs() < 0.1);
    }

    #[test]
    fn the_hosts_order_does_not_matter() {
        let a = evidence(&[(0.0, false), (1.0, true), (3.0, false), (4.0, true)]);
        let b = evidence(&[(0.5, false), (2.5, true), (2.75, false)]);
        let c = evidence(&[(0.0, false), (7.0, true)]);
        let window = Window { from: 0.0, to: 8.0 };
        let one = learn(
            &[a.clone(), b.clone(), c.clone()],
            &[0, 0, 1],
            2,
            window,
            PriorKind::Host,
            &mut Alone,
        );
        let other = learn(
            &[c, b, a],
            &[1, 0, 0],
            2,
            window,
            PriorKind::Host,
            &mut Alone,
        );
        assert_eq!(one[0], other[2]);
        assert_eq!(one[1], other[1]);
        assert_eq!(one[2], other[0]);
    }
}
