//! The hosts of a rolling night in transit to their crawler's timetable writer: each page due
//! tonight with its due times.

use serde::{Deserialize, Serialize};

use crate::job::arrange::Arranged;
use crate::job::run::schedule::HostSchedule;
use revisit_core::schedule::due::due_in_night;
use revisit_core::units::Seconds;

/// One host's pages due tonight.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DueHost {
    /// 128-bit host identity: the writer orders hosts by it, whatever worker sent them.
    pub id: u128,
    pub name: String,
    pub min_delay_s: f64,
    /// Its last fetch of a night before + its delay, seconds from tonight's start (-inf: none).
    pub not_before_s: f64,
    /// The host's pages due tonight, in canonical order, each with its due times (ascending).
    pub urls: Vec<String>,
    pub due_s: Vec<Vec<f64>>,
}

/// Hosts of one crawler from one worker.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DueBatch {
    /// The writer worker.
    pub dest: u32,
    pub hosts: Vec<DueHost>,
}

impl DueHost {
    /// Host `h` of `arranged` with the due times tonight of its pages as `schedule` has them (each
    /// first due at its `next_s` every `interval_s`, seconds from the start); None if nothing is
    /// due.
    pub fn of(
        arranged: &Arranged,
        h: usize,
        schedule: &HostSchedule,
        horizon: Seconds,
    ) -> Option<DueHost> {
        let mut host = DueHost {
            id: arranged.host_ids[h],
            name: arranged.host_name(h).to_owned(),
            min_delay_s: arranged.host_delays[h].0,
            not_before_s: schedule.not_before_s,
            ..Default::default()
        };
        let (next_s, interval_s) = (&schedule.next_s, &schedule.interval_s);
        for (k, i) in arranged.pages.host_pages(h).enumerate() {
            if next_s[k] < horizon.0 {
                host.urls.push(arranged.url(h, i).to_string_lossy());
                host.due_s
                    .push(due_in_night(next_s[k], interval_s[k], horizon).collect());
            }
        }
        (!host.urls.is_empty()).then_some(host)
    }

    /// Bytes of text, to cut batches.
    pub fn text_bytes(&self) -> usize {
        self.urls.iter().map(String::len).sum::<usize>() + self.name.len()
    }
}
