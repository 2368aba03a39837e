//! The hosts of a rolling night in transit to their crawler's timetable writer: each page due
//! tonight with its due times.

use serde::{Deserialize, Serialize};

use crate::job::arrange::Arranged;
use crate::job::run::schedule::HostSchedule;
use revisit_core::schedule::due::due_in_night;
use revisit_core::units::Seconds;

/// One host with pages due tonight, its text and times in its batch's columns.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct DueHost {
    /// 128-bit host identity: the writer orders hosts by it, whatever worker sent them.
    pub id: u128,
    pub min_delay_s: f64,
    /// Its last fetch of a night before + its delay, seconds from tonight's start (-inf: none).
    pub not_before_s: f64,
    /// Its name's end in the batch's text (the name starts where the previous host's last URL
    /// ends).
    name_end: u32,
    /// Its pages (in canonical order) among the batch's: `pages_end` past the previous host's.
    pages_end: u32,
    /// Its due times' end in the batch's `due_s`.
    due_end: u32,
}

/// Hosts of one crawler from one worker, with their pages due tonight. Names, URLs and due times
/// are held back to back in a few columns: a `String` and a `Vec` a page cost two allocations a
/// URL due tonight and as many frees, a tenth of a nightly run's write phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DueBatch {
    /// The writer worker.
    pub dest: u32,
    pub hosts: Vec<DueHost>,
    /// Each host's name, then its pages' URLs, back to back.
    #[serde(with = "serde_bytes")]
    text: Vec<u8>,
    /// Each page's URL's end in `text`.
    #[serde(with = "crate::plain")]
    url_end: Vec<u32>,
    /// How many due times each page has.
    #[serde(with = "crate::plain")]
    due_count: Vec<u32>,
    /// The pages' due times tonight (seconds from the start), page after page, each ascending.
    #[serde(with = "crate::plain")]
    due_s: Vec<f64>,
}

impl DueBatch {
    /// An empty batch for the writer `dest`.
    pub fn new(dest: u32) -> Self {
        DueBatch {
            dest,
            ..Default::default()
        }
    }

    /// Adds host `h` of `arranged` with the due times tonight of its pages as `schedule` has them
    /// (each first due at its `next_s` every `interval_s`, seconds from the start), unless
    /// nothing of it is due.
    pub fn push(
        &mut self,
        arranged: &Arranged,
        h: usize,
        schedule: &HostSchedule,
        horizon: Seconds,
    ) {
        let (next_s, interval_s) = (&schedule.next_s, &schedule.interval_s);
        let range = arranged.pages.host_pages(h);
        if !next_s[..range.len()].iter().any(|&n| n < horizon.0) {
            return;
        }
        self.text
            .extend_from_slice(arranged.host_name(h).as_bytes());
        let name_end = self.text.len() as u32;
        for (k, i) in range.enumerate() {
            if next_s[k] < horizon.0 {
                arranged.url(h, i).push_to(&mut self.text);
                self.url_end.push(self.text.len() as u32);
                let before = self.due_s.len();
                self.due_s
                    .extend(due_in_night(next_s[k], interval_s[k], horizon));
                self.due_count.push((self.due_s.len() - before) as u32);
            }
        }
        self.hosts.push(DueHost {
            id: arranged.host_ids[h],
            min_delay_s: arranged.host_delays[h].0,
            not_before_s: schedule.not_before_s,
            name_end,
            pages_end: self.url_end.len() as u32,
            due_end: self.due_s.len() as u32,
        });
    }

    /// Bytes of text, to cut batches.
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// Where host `k`'s columns start: its name in the text, its first page, its first due time.
    fn starts(&self, k: usize) -> (usize, usize, usize) {
        let Some(previous) = k.checked_sub(1).map(|p| self.hosts[p]) else {
            return (0, 0, 0);
        };
        let pages_start = previous.pages_end as usize;
        let text_start = pages_start
            .checked_sub(1)
            .map_or(0, |p| self.url_end[p] as usize);
        (text_start, pages_start, previous.due_end as usize)
    }

    /// Host `k`'s name.
    pub fn name(&self, k: usize) -> &[u8] {
        let (start, _, _) = self.starts(k);
        &self.text[start..self.hosts[k].name_end as usize]
    }

    /// The URL of page `page` (counted among host `k`'s pages due tonight, in page order).
    pub fn url(&self, k: usize, page: usize) -> &[u8] {
        let (_, first, _) = self.starts(k);
        let at = first + page;
        let start = if page == 0 {
            self.hosts[k].name_end
        } else {
            self.url_end[at - 1]
        };
        &self.text[start as usize..self.url_end[at] as usize]
    }

    /// Host `k`'s due times, page after page, and how many each page has.
    pub fn due(&self, k: usize) -> (&[f64], &[u32]) {
        let (_, first, due_start) = self.starts(k);
        let host = self.hosts[k];
        (
            &self.due_s[due_start..host.due_end as usize],
            &self.due_count[first..host.pages_end as usize],
        )
    }
}
