//! What a night learned, in transit to the writer of its crawler's learned partition: per host, its
//! URLs with evidence, their estimates and their evidence as bytes.

use serde::{Deserialize, Serialize};

use crate::job::arrange::Arranged;
use revisit_core::estimate::{Estimate, Evidence};
use revisit_core::units::SECONDS_PER_DAY;

/// One host's URLs with evidence.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LearnedHost {
    /// 128-bit host identity: the writer orders hosts by it, whatever worker sent them.
    pub id: u128,
    pub name: String,
    pub urls: Vec<String>,
    /// Changes per day, as learned.
    pub change_rate: Vec<f64>,
    pub complete_obs: Vec<bool>,
    pub observations: Vec<u64>,
    pub changes: Vec<u64>,
    /// The last observation, microseconds since the epoch (None: none kept).
    pub last_observed_us: Vec<Option<i64>>,
    /// [`Evidence::to_bytes`].
    pub evidence: Vec<Vec<u8>>,
}

/// Hosts of one crawler from one worker.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LearnedBatch {
    /// The writer worker.
    pub dest: u32,
    pub hosts: Vec<LearnedHost>,
}

impl LearnedHost {
    /// Host `h` of `arranged` with its pages' evidence and estimates (pages without any
    /// observation are left out: their estimate is the prior's, and nothing carries over); None
    /// if no page has any.
    pub fn of(
        arranged: &Arranged,
        h: usize,
        evidence: &[Evidence],
        estimates: &[Estimate],
    ) -> Option<LearnedHost> {
        let mut host = LearnedHost {
            id: arranged.host_ids[h],
            name: arranged.host_name(h).to_owned(),
            ..Default::default()
        };
        for i in arranged.pages.host_pages(h) {
            let e = &evidence[i];
            let Some(last) = e.last_at else { continue };
            host.urls.push(arranged.url(h, i).to_string_lossy());
            host.change_rate.push(estimates[i].change_rate);
            host.complete_obs.push(e.complete);
            host.observations.push(estimates[i].observations);
            host.changes.push(estimates[i].changes);
            host.last_observed_us
                .push(Some((last * SECONDS_PER_DAY * 1e6).round() as i64));
            host.evidence.push(e.to_bytes());
        }
        (!host.urls.is_empty()).then_some(host)
    }

    /// Bytes held, to cut batches.
    pub fn bytes(&self) -> usize {
        self.urls.iter().map(String::len).sum::<usize>()
            + self.evidence.iter().map(Vec::len).sum::<usize>()
            + self.name.len()
    }
}
