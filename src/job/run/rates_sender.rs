//! A crawler's rated rows on their way to its writer, slice by slice: each page scheduled as it is
//! sent, in batches of bounded URL text that may cut a host anywhere.

use super::rates_partition::SlicePages;
use super::schedule::HostSchedule;
use super::Phases;
use crate::job::channel::Shuffle;
use crate::job::wire::rated::{RatedBatch, RatedRow};
use crate::job::wire::{BATCH_TEXT_BYTES, BATCH_TEXT_SLACK};
use crate::report::run::ScheduleCounts;

/// Hosts ahead the sender fetches what a host needs, at each of three steps (this, its half).
const PREFETCH_HOSTS: usize = 8;

/// What a crawler's sender keeps from one slice to the next: the schedule of the host it sent
/// last (a host larger than a slice is scheduled once and sent in several), and the rows of its
/// last full batch (to size the next one).
pub struct RatesSender {
    crawler: u32,
    /// The worker that writes the crawler's partition.
    dest: u32,
    /// The host `schedule` is of.
    scheduled: Option<usize>,
    schedule: HostSchedule,
    rows_per_batch: usize,
}

impl RatesSender {
    /// A sender of `crawler`'s rows to its writer, worker `dest`.
    pub fn new(crawler: u32, dest: u32) -> Self {
        RatesSender {
            crawler,
            dest,
            scheduled: None,
            schedule: HostSchedule::default(),
            rows_per_batch: 0,
        }
    }

    /// Sends the rated rows of `pages` (hosts of this worker, in canonical order, each with the
    /// indices of its pages to send) on `channel`; adds where their URLs stand to `counts`, once a
    /// host.
    pub fn send(
        &mut self,
        channel: &mut Shuffle<RatedBatch>,
        p: &Phases,
        start_us: i64,
        mut pages: SlicePages<'_, impl Fn(usize) -> usize>,
        counts: &mut ScheduleCounts,
    ) {
        let a = &p.loaded.arranged;
        let s = &p.solved.solution;
        let mut batch = RatedBatch::default();
        while let Some((h, range)) = pages.next() {
            if let Some(ahead) = pages.ahead(2 * PREFETCH_HOSTS) {
                a.prefetch_host_bounds(ahead);
            }
            if let Some(ahead) = pages.ahead(PREFETCH_HOSTS) {
                a.prefetch_host_first_page(ahead, &[&s.rates]);
            }
            if let Some(ahead) = pages.ahead(PREFETCH_HOSTS / 2) {
                a.prefetch_host_first_rest(ahead);
            }
            if self.scheduled != Some(h) {
                p.schedule.host(h, &mut self.schedule, counts);
                self.scheduled = Some(h);
            }
            let first = a.pages.host_pages(h).start;
            // whether `batch` has a run of this host open
            let mut in_run = false;
            for k in range.filter(|&k| s.rates[first + k as usize] > 0.0) {
                let i = first + k as usize;
                if batch.is_unallocated() {
                    // a fresh batch (none yet, or the last one sent): it will hold about as many
                    // rows as the last full one
                    let rows = self.rows_per_batch + self.rows_per_batch / 8;
                    let text = BATCH_TEXT_BYTES + BATCH_TEXT_SLACK;
                    batch = RatedBatch::with_capacity(self.dest, self.crawler, text, rows);
                }
                if !in_run {
                    batch.start_host(a.host_ids[h], a.host_name(h), s.hosts.get(h).capped, k);
                    in_run = true;
                }
                let importance = a
                    .input_importance
                    .get(i)
                    .copied()
                    .unwrap_or(a.pages.importance()[i]);
                let at = k as usize;
                let row = RatedRow {
                    importance,
                    change_rate: a.pages.change_rate()[i],
                    complete_obs: a.pages.complete_obs()[i],
                    crawl_rate: s.rates[i],
                    interval_s: self.schedule.interval_s[at],
                    last_fetch_us: p.known.last_us(i),
                    next_fetch_us: crate::time::add_seconds_us(start_us, self.schedule.next_s[at]),
                };
                batch.push(a.url(h, i), row);
                if batch.text_bytes() >= BATCH_TEXT_BYTES {
                    self.rows_per_batch = batch.len();
                    channel.send(std::mem::take(&mut batch));
                    in_run = false;
                }
            }
        }
        if !batch.is_empty() {
            channel.send(batch);
        }
    }
}
