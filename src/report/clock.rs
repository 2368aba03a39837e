//! Moments of a run: wall time and the CPU time this process has used, read together at each
//! phase's end, so that the summary says both how long a phase took and how much work it was.

use std::time::{Duration, Instant};

/// A point in a run, on the wall clock and on this process's CPU clock.
#[derive(Clone, Copy, Debug)]
pub struct Moment {
    wall: Instant,
    /// CPU time used so far by every thread of this process (user and system).
    cpu: Duration,
}

impl Moment {
    /// Now.
    pub fn now() -> Self {
        Moment {
            wall: Instant::now(),
            cpu: process_cpu(),
        }
    }

    /// When this moment was, on the wall clock.
    pub fn wall(&self) -> Instant {
        self.wall
    }

    /// Wall-clock seconds from `earlier` to this moment.
    pub fn wall_s_since(&self, earlier: &Moment) -> f64 {
        self.wall
            .saturating_duration_since(earlier.wall)
            .as_secs_f64()
    }

    /// CPU seconds this process used from `earlier` to this moment, over all its threads.
    pub fn cpu_s_since(&self, earlier: &Moment) -> f64 {
        self.cpu.saturating_sub(earlier.cpu).as_secs_f64()
    }
}

/// CPU time used so far by every thread of this process; zero where the clock cannot be read.
fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(Duration::ZERO)
}

/// The CPU-time clock `id` (of the process, or of the calling thread); None if it cannot be read.
fn cpu_clock(id: libc::clockid_t) -> Option<Duration> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given, which lives on this stack.
    let status = unsafe { libc::clock_gettime(id, &mut t) };
    (status == 0).then(|| {
        Duration::new(
            t.tv_sec.max(0) as u64,
            t.tv_nsec.clamp(0, 999_999_999) as u32,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time used so far by the calling thread.
    fn thread_cpu() -> Duration {
        cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID).expect("the thread's CPU clock")
    }

    #[test]
    fn the_process_clock_counts_this_threads_work() {
        // other tests run on other threads of this process meanwhile, so the process's clock can
        // only be bounded below: by this thread's own work
        let start = Moment::now();
        let thread_start = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - thread_start < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let worked = Moment::now();
        assert!(
            worked.cpu_s_since(&start) >= 0.05,
            "50 ms of this thread's work counted as {} s of the process's",
            worked.cpu_s_since(&start)
        );
        assert!(worked.wall_s_since(&start) > 0.0);
        // spans from a later moment to an earlier one are empty, not negative
        assert_eq!(start.cpu_s_since(&worked), 0.0);
        assert_eq!(start.wall_s_since(&worked), 0.0);
    }
}
