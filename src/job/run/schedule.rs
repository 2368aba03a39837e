//! The schedule of `run`: every URL's interval (1 / its crawl rate), its next due time from what
//! the state phase knows, and each host's earliest fetch tonight. The rules are the core's
//! ([`revisit_core::schedule::due`]); here they are applied page by page, host by host, as the
//! write phase asks for them.

use revisit_core::schedule::due::{due_in_night, host_phases_into, next_due, Anchor, Standing};
use revisit_core::units::{PerDay, Seconds};

use super::solve::Solved;
use super::state::{Known, NEVER};
use crate::job::arrange::Arranged;
use crate::plan::run::RunPlan;
use crate::report::run::ScheduleCounts;
use crate::time::{seconds_between, MICROS_PER_S};

/// Every page's place in the rolling schedule, on this worker, computed host by host where it is
/// written: held as columns from the solve to the write phase, the interval and the due time were
/// 16 bytes a URL at the write phase's peak, and every page is written once anyway.
pub struct Schedule<'a> {
    arranged: &'a Arranged,
    rates: &'a [f64],
    known: &'a Known,
    start_us: i64,
    horizon: Seconds,
}

/// One host's schedule: of each of its pages (in page order), the interval and the next due time.
#[derive(Default)]
pub struct HostSchedule {
    /// Seconds between fetches (+inf for a page with no crawl rate).
    pub interval_s: Vec<f64>,
    /// Next due time, seconds from the night's start (+inf for a page with no crawl rate).
    pub next_s: Vec<f64>,
    /// The host's earliest fetch tonight: its last fetch + its delay, seconds from the start
    /// (-inf: never fetched).
    pub not_before_s: f64,
    /// Scratch for the pages' phases, kept from host to host.
    phases: Vec<f64>,
    classes: Vec<(i32, u64)>,
}

/// The schedule of `arranged`'s pages at `solved`'s rates from what `known` says.
pub fn schedule<'a>(
    plan: &RunPlan,
    arranged: &'a Arranged,
    solved: &'a Solved,
    known: &'a Known,
) -> Schedule<'a> {
    Schedule {
        arranged,
        rates: &solved.solution.rates,
        known,
        start_us: plan.schedule.start_us,
        horizon: plan.pages.horizon,
    }
}

impl Schedule<'_> {
    /// The schedule of host `h`, into `s`; adds where its URLs stand to `counts`.
    pub fn host(&self, h: usize, s: &mut HostSchedule, counts: &mut ScheduleCounts) {
        let (arranged, known, start) = (self.arranged, self.known, self.start_us);
        let range = arranged.pages.host_pages(h);
        s.interval_s.clear();
        s.interval_s.extend(
            self.rates[range.clone()]
                .iter()
                .map(|&r| PerDay(r).interval().0),
        );
        s.next_s.clear();
        s.next_s.resize(range.len(), f64::INFINITY);
        // a host's own offset decorrelates hosts; its URLs' phases come from one sequence
        let offset = arranged.host_keys[h] as f64 / 2f64.powi(64);
        host_phases_into(&s.interval_s, offset, &mut s.classes, &mut s.phases);
        let mut host_last = NEVER;
        for (k, i) in range.enumerate() {
            let phase = s.phases[k];
            host_last = host_last.max(known.last_us(i));
            let tau = s.interval_s[k];
            if !tau.is_finite() {
                continue;
            }
            // the clock in seconds from the night's start
            let clock = known.anchor(i).map(|a| Anchor {
                at: (a.at - start as f64) / MICROS_PER_S,
                served: a.served,
            });
            let (next, standing) = next_due(clock, tau, phase, self.horizon);
            s.next_s[k] = next;
            match standing {
                Standing::OnTime => counts.urls_on_time += 1,
                Standing::Overdue => counts.urls_overdue += 1,
                Standing::New => counts.urls_new += 1,
            }
            if next < self.horizon.0 {
                counts.urls_due_tonight += 1;
                counts.fetches_due_tonight += due_in_night(next, tau, self.horizon).count() as u64;
            }
        }
        s.not_before_s = if host_last == NEVER {
            f64::NEG_INFINITY
        } else {
            seconds_between(start, host_last) + arranged.host_delays[h].0
        };
    }
}
