//! Fault injection for the failure tests: `REVISIT_FAIL_AT=phase[:worker[:how]]` makes worker
//! `worker` (default 0) panic when it reaches `phase` (read, solve, write, or published: just after
//! the lead's swap), or with `how`: `exit` ends its process with status 3 (as a killed machine
//! would), `stop` stops its process (SIGSTOP, as a frozen machine), `hang` blocks the worker while
//! its process stays alive (a live process making no progress). Never set it in production.

/// The environment variable that names the fail point.
pub const FAIL_AT: &str = "REVISIT_FAIL_AT";

/// Fails here if [`FAIL_AT`] names `phase` and worker `index`.
pub fn fail_point(phase: &str, index: usize) {
    let Ok(spec) = std::env::var(FAIL_AT) else {
        return;
    };
    let mut parts = spec.split(':');
    if parts.next() != Some(phase) {
        return;
    }
    let worker: usize = parts.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    if worker != index {
        return;
    }
    match parts.next() {
        Some("exit") => {
            eprintln!("[revisit] {FAIL_AT}: worker {index} ends its process at {phase}");
            std::process::exit(3);
        }
        Some("stop") => {
            eprintln!("[revisit] {FAIL_AT}: worker {index} stops its process at {phase}");
            // SAFETY: raising a signal at ourselves; no memory is involved.
            unsafe {
                libc::raise(libc::SIGSTOP);
            }
            return;
        }
        Some("hang") => {
            eprintln!("[revisit] {FAIL_AT}: worker {index} hangs at {phase}");
            loop {
                std::thread::park();
            }
        }
        _ => {}
    }
    panic!("{FAIL_AT}: worker {index} fails at {phase}");
}
