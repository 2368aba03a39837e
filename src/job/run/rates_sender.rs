//! A crawler's rated rows on their way to its writer, slice by slice: each page scheduled as it is
//! sent, in batches of bounded URL text that may cut a host anywhere.

use super::rated_pool::RatedPool;
use super::rates_partition::SlicePages;
use super::schedule::HostSchedule;
use super::state::NEVER;
use super::Phases;
use crate::io::rates_out::RateRun;
use crate::job::channel::Shuffle;
use crate::job::wire::due::DueBatch;
use crate::job::wire::rated::RatedBatch;
use crate::job::wire::{BATCH_TEXT_BYTES, BATCH_TEXT_SLACK};
use crate::report::run::ScheduleCounts;
use revisit_core::units::Seconds;

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
    /// The next fetches of the rows being pushed, microseconds since the epoch.
    next_us: Vec<i64>,
    /// Last fetches of rows never fetched (no state before the night), as long as the longest
    /// run pushed so far.
    never: Vec<i64>,
    /// With a rolling night (its horizon): the hosts with pages due tonight, in batches for the
    /// crawler's timetable writer, taken from each host's schedule as it is made for its rates
    /// (made again for the timetable, it cost a second pass over every page).
    due: Option<(Seconds, Vec<DueBatch>)>,
}

impl RatesSender {
    /// A sender of `crawler`'s rows to its writer, worker `dest`; with `rolling_night` (its
    /// horizon), also of its hosts' pages due tonight ([`RatesSender::take_due`]).
    pub fn new(crawler: u32, dest: u32, rolling_night: Option<Seconds>) -> Self {
        RatesSender {
            crawler,
            dest,
            scheduled: None,
            schedule: HostSchedule::default(),
            rows_per_batch: 0,
            next_us: Vec::new(),
            never: Vec::new(),
            due: rolling_night.map(|horizon| (horizon, Vec::new())),
        }
    }

    /// The hosts sent so far with pages due tonight, in batches for the timetable writer (none
    /// without a rolling night).
    pub fn take_due(&mut self) -> Vec<DueBatch> {
        let batches = self.due.as_mut().map(|(_, b)| std::mem::take(b));
        let mut batches = batches.unwrap_or_default();
        batches.retain(|b| !b.hosts.is_empty());
        batches
    }

    /// Sends the rated rows of `pages` (hosts of this worker, in canonical order, each with the
    /// indices of its pages to send) on `channel`, in batches taken from `pool` while it has some;
    /// adds where their URLs stand to `counts`, once a host.
    pub fn send(
        &mut self,
        channel: &mut Shuffle<RatedBatch>,
        pool: &RatedPool,
        p: &Phases,
        start_us: i64,
        mut pages: SlicePages<'_, impl Fn(usize) -> usize>,
        counts: &mut ScheduleCounts,
    ) {
        let a = &p.loaded.arranged;
        let s = &p.solved.solution;
        // the input's own importance where the solver read another (--value-per-change)
        let importance = if a.input_importance.is_empty() {
            a.pages.importance()
        } else {
            &a.input_importance[..]
        };
        // only pages with a rate are written (a NaN rate, which the solver never gives, neither)
        let rated = |i: usize| s.rates[i] > 0.0;
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
                if let Some((horizon, batches)) = &mut self.due {
                    let full = batches
                        .last()
                        .is_none_or(|b| b.text_bytes() >= BATCH_TEXT_BYTES);
                    if full {
                        batches.push(DueBatch::new(self.dest));
                    }
                    if let Some(batch) = batches.last_mut() {
                        batch.push(a, h, &self.schedule, *horizon);
                    }
                }
            }
            let first = a.pages.host_pages(h).start;
            // whether `batch` has a run of this host open
            let mut in_run = false;
            let (mut k, end) = (range.start as usize, range.end as usize);
            while k < end {
                if !rated(first + k) {
                    k += 1;
                    continue;
                }
                if batch.is_unallocated() {
                    // none yet, or the last one sent: an emptied one if the writer gave one
                    // back, else room for about as many rows as the last full one
                    batch = pool.take(self.dest, self.crawler).unwrap_or_else(|| {
                        let rows = self.rows_per_batch + self.rows_per_batch / 8;
                        let text = BATCH_TEXT_BYTES + BATCH_TEXT_SLACK;
                        RatedBatch::with_capacity(self.dest, self.crawler, text, rows)
                    });
                }
                if !in_run {
                    batch.start_host(
                        a.host_ids[h],
                        a.host_name(h),
                        s.hosts.get(h).capped,
                        k as u32,
                    );
                    in_run = true;
                }
                // the URLs of the pages from `k` on with a rate, up to the row that fills the batch
                let mut j = k;
                while j < end && rated(first + j) && batch.text_bytes() < BATCH_TEXT_BYTES {
                    batch.push_url(a.url(h, first + j));
                    j += 1;
                }
                // then their numbers, column by column
                let pages = first + k..first + j;
                self.next_us.clear();
                let next_s = &self.schedule.next_s[k..j];
                self.next_us.extend(
                    next_s
                        .iter()
                        .map(|&after| crate::time::add_seconds_us(start_us, after)),
                );
                let last_fetch_us = match p.known.last_us_of(pages.clone()) {
                    Some(last) => last,
                    None => {
                        if self.never.len() < j - k {
                            self.never.resize(j - k, NEVER);
                        }
                        &self.never[..j - k]
                    }
                };
                batch.push_numbers(&RateRun {
                    host: a.host_name(h).as_bytes(),
                    host_capped: s.hosts.get(h).capped,
                    importance: &importance[pages.clone()],
                    change_rate: &a.pages.change_rate()[pages.clone()],
                    complete_obs: &a.pages.complete_obs()[pages.clone()],
                    crawl_rate: &s.rates[pages],
                    last_fetch_us,
                    next_fetch_us: &self.next_us,
                });
                if batch.text_bytes() >= BATCH_TEXT_BYTES {
                    self.rows_per_batch = batch.len();
                    channel.send(std::mem::take(&mut batch));
                    in_run = false;
                }
                k = j;
            }
        }
        if !batch.is_empty() {
            channel.send(batch);
        }
    }
}
