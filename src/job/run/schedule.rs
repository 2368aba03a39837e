//! The schedule phase of `run`: every URL's interval (1 / its crawl rate), its next due time from
//! what the state phase knows, and each host's earliest fetch tonight. The rules are the core's
//! ([`revisit_core::schedule::due`]); here they are applied page by page, host by host.

use revisit_core::schedule::due::{host_phases, next_due, Anchor, Standing};
use revisit_core::units::SECONDS_PER_DAY;

use super::solve::Solved;
use super::state::{Known, NEVER};
use crate::job::arrange::Arranged;
use crate::plan::run::RunPlan;
use crate::report::run::ScheduleCounts;
use crate::time::{seconds_between, MICROS_PER_S};

/// Every page's place in the rolling schedule, on this worker.
pub struct Schedule {
    /// Seconds between fetches (+inf for a page with no crawl rate).
    pub interval_s: Vec<f64>,
    /// Next due time, seconds from the night's start (+inf for a page with no crawl rate).
    pub next_s: Vec<f64>,
    /// Each host's earliest fetch tonight: its last fetch + its delay, seconds from the start
    /// (-inf: never fetched).
    pub not_before_s: Vec<f64>,
    /// This worker's counts (combined in the write phase's totals).
    pub counts: ScheduleCounts,
}

/// The schedule of `arranged`'s pages at `solved`'s rates from what `known` says.
pub fn schedule(plan: &RunPlan, arranged: &Arranged, solved: &Solved, known: &Known) -> Schedule {
    let (pages, rates) = (&arranged.pages, &solved.solution.rates);
    let (start, horizon) = (plan.schedule.start_us, plan.pages.horizon);
    let n = pages.len();
    let mut s = Schedule {
        interval_s: rates
            .iter()
            .map(|&r| {
                if r > 0.0 {
                    SECONDS_PER_DAY / r
                } else {
                    f64::INFINITY
                }
            })
            .collect(),
        next_s: vec![f64::INFINITY; n],
        not_before_s: vec![f64::NEG_INFINITY; pages.hosts()],
        counts: ScheduleCounts::default(),
    };
    for h in 0..pages.hosts() {
        let range = pages.host_pages(h);
        // a host's own offset decorrelates hosts; its URLs' phases come from one sequence
        let offset = arranged.host_keys[h] as f64 / 2f64.powi(64);
        let phases = host_phases(&s.interval_s[range.clone()], offset);
        let mut host_last = NEVER;
        for (i, phase) in range.zip(phases) {
            host_last = host_last.max(known.last_us(i));
            let tau = s.interval_s[i];
            if !tau.is_finite() {
                continue;
            }
            // the clock in seconds from the night's start
            let clock = known.anchor(i).map(|a| Anchor {
                at: (a.at - start as f64) / MICROS_PER_S,
                served: a.served,
            });
            let (next, standing) = next_due(clock, tau, phase, horizon);
            s.next_s[i] = next;
            match standing {
                Standing::OnTime => s.counts.urls_on_time += 1,
                Standing::Overdue => s.counts.urls_overdue += 1,
                Standing::New => s.counts.urls_new += 1,
            }
            if next < horizon.0 {
                s.counts.urls_due_tonight += 1;
                s.counts.fetches_due_tonight +=
                    revisit_core::schedule::due::due_in_night(next, tau, horizon).count() as u64;
            }
        }
        if host_last != NEVER {
            s.not_before_s[h] = seconds_between(start, host_last) + arranged.host_delays[h].0;
        }
    }
    s
}
