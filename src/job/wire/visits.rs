//! Visited hosts in transit to their crawler's timetable writer.

use serde::{Deserialize, Serialize};

use crate::job::arrange::Arranged;

/// One host's visited pages, sent to its crawler's writer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitHost {
    /// 128-bit host identity: the writer orders hosts by it, whatever worker sent them.
    pub id: u128,
    pub name: String,
    pub min_delay_s: f64,
    /// The host's pages with at least one visit, in canonical order.
    pub urls: Vec<String>,
    pub importance: Vec<f64>,
    pub change_rate: Vec<f64>,
    pub counts: Vec<u32>,
}

/// Hosts of one crawler from one worker.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VisitBatch {
    /// The writer worker.
    pub dest: u32,
    pub hosts: Vec<VisitHost>,
}

impl VisitHost {
    /// Host `h` of `arranged` with its pages' visit counts; None if it has no visit.
    pub fn of(arranged: &Arranged, counts: &[u32], h: usize) -> Option<VisitHost> {
        let p = &arranged.pages;
        let mut host = VisitHost {
            id: arranged.host_ids[h],
            name: arranged.host_name(h).to_owned(),
            min_delay_s: arranged.host_delays[h].0,
            ..Default::default()
        };
        for i in p.host_pages(h) {
            if counts[i] > 0 {
                host.urls.push(arranged.url(h, i).to_string_lossy());
                host.importance.push(p.importance()[i]);
                host.change_rate.push(p.change_rate()[i]);
                host.counts.push(counts[i]);
            }
        }
        (!host.counts.is_empty()).then_some(host)
    }

    /// Bytes of text, to cut batches.
    pub fn text_bytes(&self) -> usize {
        self.urls.iter().map(String::len).sum::<usize>() + self.name.len()
    }
}
