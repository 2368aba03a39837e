//! A worker that panics, or a process that dies, ends the whole job with a failure status, within
//! the timeout (no hang), and publishes nothing: the previous output stays as it was.

mod common;

use std::path::Path;

use common::*;

fn snapshot(out: &Path) -> (std::collections::BTreeMap<String, Vec<u8>>, Vec<u8>) {
    (
        table_bytes(out),
        std::fs::read(out.join("summary.json")).unwrap(),
    )
}

#[test]
fn a_panicking_worker_ends_the_job() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    run_ok(&["run", "--out", o, "-q"]);
    let before = snapshot(&out);
    for (phase, worker) in [
        ("read", "1"),
        ("solve", "1"),
        ("solve", "0"),
        ("write", "1"),
    ] {
        let spec = format!("{phase}:{worker}");
        let child = command(&["run", "--out", o, "-q", "-w", "2"])
            .env("REVISIT_FAIL_AT", &spec)
            .spawn()
            .unwrap();
        let result = wait(child, TIMEOUT);
        assert!(!result.status.success(), "{spec}: the job must fail");
        assert!(snapshot(&out) == before, "{spec}: nothing published");
    }
}

#[test]
fn a_dead_process_ends_the_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    run_ok(&["run", "--out", o, "-q"]);
    let before = snapshot(&out);
    // With 2 processes of 2 workers, worker 2 is process 1's first: it exits at the solve, as a
    // killed machine would; process 0 must notice and fail rather than wait forever.
    for spec in ["solve:2:exit", "write:3:exit", "solve:0:exit"] {
        let outputs = run_cluster(
            2,
            tmp.path(),
            &["run", "--out", o, "-q", "-w", "2"],
            &[("REVISIT_FAIL_AT", spec)],
        );
        for (p, r) in outputs.iter().enumerate() {
            assert!(!r.status.success(), "{spec}: process {p} must fail too");
        }
        assert!(snapshot(&out) == before, "{spec}: nothing published");
    }
}
