//! Progress on stderr, from every worker: lines about the whole job from the lead (worker 0), lines
//! about its own share from each worker, and phases with percentages: on a terminal a bar per
//! worker (indicatif), in a log a line at each quarter. Lines carry the seconds since the start and
//! the resident memory. Nothing at all with --quiet.

use std::sync::OnceLock;
use std::time::Instant;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::report::memory::rss_bytes;

/// The bars of this process's workers, drawn together.
static BARS: OnceLock<MultiProgress> = OnceLock::new();

/// Where a worker reports progress.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    show: bool,
    worker: usize,
    peers: usize,
    started: Instant,
}

impl Progress {
    /// Progress of a job of one worker since `started`, shown only if `show`.
    pub fn new(show: bool, started: Instant) -> Self {
        Self::of_worker(show, 0, 1, started)
    }

    /// Progress of worker `worker` of `peers` (over all processes) since `started`.
    pub fn of_worker(show: bool, worker: usize, peers: usize, started: Instant) -> Self {
        Progress {
            show,
            worker,
            peers,
            started,
        }
    }

    /// A line about the whole job, printed by the lead only.
    pub fn say(&self, msg: impl AsRef<str>) {
        if self.show && self.worker == 0 {
            self.print(msg.as_ref());
        }
    }

    /// A line about this worker's share, printed by every worker ("worker 2/4: ...").
    pub fn note(&self, msg: impl AsRef<str>) {
        if self.show {
            self.print(&format!("{}{}", self.prefix(), msg.as_ref()));
        }
    }

    /// A phase of `len` steps of this worker's, called `what` ("reading row groups").
    pub fn phase(&self, len: u64, what: &str) -> Phase {
        self.phase_shown(self.show, len, what)
    }

    /// A phase of `len` steps that the workers of the lead's process share, shown by the lead only
    /// (its steps are counted with [`Phase::reach`]).
    pub fn lead_phase(&self, len: u64, what: &str) -> Phase {
        // as one worker's: no "worker k/n" before a count that is the whole process's
        let lead = Progress { peers: 1, ..*self };
        lead.phase_shown(self.show && self.worker == 0, len, what)
    }

    fn phase_shown(&self, show: bool, len: u64, what: &str) -> Phase {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = (show && terminal && len > 0).then(|| {
            let bar = bars().add(ProgressBar::new(len));
            if let Ok(style) = ProgressStyle::with_template(
                "[revisit] {prefix}{msg} {bar:30} {percent:>3}% {pos}/{len} ({eta})",
            ) {
                bar.set_style(style);
            }
            bar.set_prefix(self.prefix());
            bar.set_message(what.to_owned());
            bar
        });
        Phase {
            progress: *self,
            what: what.to_owned(),
            bar,
            lines: show && !terminal,
            len,
            done: 0,
            quarters: 0,
        }
    }

    fn prefix(&self) -> String {
        if self.peers > 1 {
            format!("worker {}/{}: ", self.worker + 1, self.peers)
        } else {
            String::new()
        }
    }

    fn print(&self, msg: &str) {
        let line = format!(
            "[revisit] {msg} [{:.2} s, RSS {} MiB]",
            self.started.elapsed().as_secs_f64(),
            rss_bytes() >> 20
        );
        match BARS.get() {
            // above the bars, which are redrawn below it
            Some(bars) if std::io::IsTerminal::is_terminal(&std::io::stderr()) => {
                bars.println(&line).ok();
            }
            _ => eprintln!("{line}"),
        }
    }
}

fn bars() -> &'static MultiProgress {
    BARS.get_or_init(MultiProgress::new)
}

/// A phase under way on one worker: a bar on a terminal, a line at each quarter in a log.
pub struct Phase {
    progress: Progress,
    what: String,
    bar: Option<ProgressBar>,
    lines: bool,
    len: u64,
    done: u64,
    /// Quarters of the phase already reported as lines.
    quarters: u64,
}

impl Phase {
    /// `n` more steps done.
    pub fn inc(&mut self, n: u64) {
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
        if self.lines && self.len > 0 {
            let quarters = 4 * self.done.min(self.len) / self.len;
            if quarters > self.quarters {
                self.quarters = quarters;
                self.progress.note(format!(
                    "{} {}% ({} of {})",
                    self.what,
                    25 * quarters,
                    self.done.min(self.len),
                    self.len
                ));
            }
        }
    }

    /// `done` steps done in all (steps counted elsewhere, as the workers sharing a phase do; a
    /// count below the last one seen changes nothing).
    pub fn reach(&mut self, done: u64) {
        if done > self.done {
            self.inc(done - self.done);
        }
    }

    /// The phase is over (the bar is cleared).
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_in_a_log_reports_each_quarter_once() {
        // in tests stderr is not a terminal: lines, no bar
        let p = Progress::of_worker(true, 1, 2, Instant::now());
        let mut phase = p.phase(8, "writing");
        for _ in 0..8 {
            phase.inc(1);
        }
        assert_eq!((phase.quarters, phase.done), (4, 8));
        phase.finish();
        let quiet = Progress::of_worker(false, 0, 1, Instant::now()).phase(3, "x");
        assert!(!quiet.lines && quiet.bar.is_none());
    }

    #[test]
    fn a_shared_phase_is_shown_by_the_lead_alone_and_counts_what_all_reached() {
        let started = Instant::now();
        let other = Progress::of_worker(true, 1, 2, started).lead_phase(8, "reading");
        assert!(!other.lines && other.bar.is_none());
        let mut lead = Progress::of_worker(true, 0, 2, started).lead_phase(8, "reading");
        assert!(lead.lines);
        // the other worker read units 1 and 3, the lead units 2 and 4 in between
        lead.reach(2);
        lead.reach(4);
        assert_eq!((lead.done, lead.quarters), (4, 2));
        lead.reach(3);
        assert_eq!(lead.done, 4, "a count below the last changes nothing");
        lead.reach(8);
        assert_eq!((lead.done, lead.quarters), (8, 4));
    }
}
