//! Fault injection for the failure tests: `REVISIT_FAIL_AT=phase[:worker[:exit]]` makes worker
//! `worker` (default 0) panic (or end its process with status 3, as a killed machine would) when it
//! reaches `phase` (read, solve, write). Never set it in production.

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
    if parts.next() == Some("exit") {
        eprintln!("[revisit] {FAIL_AT}: worker {index} ends its process at {phase}");
        std::process::exit(3);
    }
    panic!("{FAIL_AT}: worker {index} fails at {phase}");
}
