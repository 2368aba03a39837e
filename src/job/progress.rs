//! Progress on stderr: a line per step with the time since the start and the resident memory, and
//! bars on long phases when stderr is a terminal. Silent unless asked (the lead worker, without
//! --quiet).

use std::time::Instant;

use crate::report::memory::rss_bytes;

/// Where a worker reports progress.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    show: bool,
    started: Instant,
}

impl Progress {
    /// Progress since `started`, shown only if `show`.
    pub fn new(show: bool, started: Instant) -> Self {
        Progress { show, started }
    }

    /// When the job started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// One line: the message, the seconds since the start and the resident memory.
    pub fn say(&self, msg: impl AsRef<str>) {
        if self.show {
            eprintln!(
                "[revisit] {} [{:.2} s, RSS {} MiB]",
                msg.as_ref(),
                self.started.elapsed().as_secs_f64(),
                rss_bytes() >> 20
            );
        }
    }

    /// A bar of `len` steps for `what` (hidden when not shown or stderr is not a terminal).
    pub fn bar(&self, len: u64, what: &str) -> indicatif::ProgressBar {
        if !self.show || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::new(len);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("[revisit] {msg} {bar:30} {pos}/{len} ({eta})")
        {
            bar.set_style(style);
        }
        bar.set_message(what.to_owned());
        bar
    }
}
