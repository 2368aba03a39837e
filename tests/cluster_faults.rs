//! Cluster runs fail loudly and never publish wrong output: processes given different jobs or not
//! sharing the output refuse before any work; a peer that never comes, freezes, dies or makes no
//! progress is named, every process exits non-zero and the previous output stays; a lead killed
//! just after its swap leaves a complete output that the other process reports as published.
//! Each test has its own ports and folder, and every run a timeout.

mod common;

use std::path::Path;
use std::process::{Child, Output};
use std::time::{Duration, Instant};

use common::*;

/// The run's output folder, with a previous output in it; returns (tables, summary) to compare.
fn previous(out: &Path) -> (std::collections::BTreeMap<String, Vec<u8>>, Vec<u8>) {
    run_ok(&["run", "--out", out.to_str().unwrap(), "-q", "-w", "1"]);
    snapshot(out)
}

fn snapshot(out: &Path) -> (std::collections::BTreeMap<String, Vec<u8>>, Vec<u8>) {
    (
        table_bytes(out),
        std::fs::read(out.join("summary.json")).unwrap(),
    )
}

/// Starts process `p` of 2 with `args` and `hostfile`, in folder `cwd`, with env `env`.
fn start(p: usize, hf: &Path, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Child {
    let mut c = command(args);
    c.args([
        "-n",
        "2",
        "-p",
        &p.to_string(),
        "--hostfile",
        hf.to_str().unwrap(),
    ]);
    c.current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("starting a process")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Both processes failed, neither with a backtrace, and each message contains `wanted`.
fn both_fail_saying(outputs: &[Output], wanted: &[&str]) {
    for (p, o) in outputs.iter().enumerate() {
        let e = stderr(o);
        assert!(!o.status.success(), "process {p} must fail:\n{e}");
        assert!(
            !e.contains("panicked") && !e.contains("backtrace"),
            "process {p}: {e}"
        );
        for w in wanted {
            assert!(e.contains(w), "process {p} should say {w:?}:\n{e}");
        }
    }
}

/// Runs 2 processes whose arguments differ by `extra0` and `extra1`.
fn disagreeing(tmp: &Path, extra0: &[&str], extra1: &[&str]) -> Vec<Output> {
    let hf = hostfile(tmp, 2);
    let out = tmp.join("out");
    let o = out.to_str().unwrap();
    let base = ["run", "--out", o, "-q", "-w", "1"];
    let a: Vec<&str> = base.iter().chain(extra0).copied().collect();
    let b: Vec<&str> = base.iter().chain(extra1).copied().collect();
    let p0 = start(0, &hf, &a, Path::new("."), &[]);
    let p1 = start(1, &hf, &b, Path::new("."), &[]);
    vec![wait(p0, TIMEOUT), wait(p1, TIMEOUT)]
}

#[test]
fn case_2_processes_given_different_jobs_refuse_naming_the_difference() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let before = previous(&out);
    let hosts_only_here = ["--hosts", "data/hosts.parquet"];
    let cases: Vec<(&[&str], &[&str], &str)> = vec![
        (&["--crawlers", "10"], &["--crawlers", "4"], "--crawlers: "),
        (
            &["--bandwidth", "4000"],
            &["--bandwidth", "8000"],
            "--bandwidth",
        ),
        (
            &["--objective", "harmonic"],
            &["--objective", "binary"],
            "--objective",
        ),
        (
            &["data/pages"],
            &["data/pages/part-00000.parquet"],
            "input file",
        ),
        (&hosts_only_here, &["data/pages"], "--hosts"),
        (&["-w", "1"], &["-w", "2"], "-w (workers per process)"),
    ];
    for (a, b, wanted) in cases {
        let outputs = disagreeing(tmp.path(), a, b);
        both_fail_saying(&outputs, &["disagree on the job", wanted]);
        assert!(snapshot(&out) == before, "{wanted}: nothing published");
    }
}

#[test]
fn case_1_processes_that_do_not_share_the_output_refuse() {
    // a relative --out from two working directories: two different folders
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let hf = hostfile(tmp.path(), 2);
    let pages = std::fs::canonicalize("data/pages").unwrap();
    let hosts = std::fs::canonicalize("data/hosts.parquet").unwrap();
    let args = [
        "run",
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--out",
        "out",
        "-q",
        "-w",
        "1",
    ];
    let p0 = start(0, &hf, &args, &a, &[]);
    let p1 = start(1, &hf, &args, &b, &[]);
    let outputs = vec![wait(p0, TIMEOUT), wait(p1, TIMEOUT)];
    both_fail_saying(&outputs, &["--out"]);
    assert!(!a.join("out").exists() && !b.join("out").exists());
}

#[test]
fn case_3_a_peer_that_never_comes_is_named_within_the_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    let hf = hostfile(tmp.path(), 2);
    let out = tmp.path().join("out");
    let started = Instant::now();
    let args = [
        "run",
        "--out",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "1",
        "--connect-timeout-s",
        "2",
    ];
    let o = wait(start(0, &hf, &args, Path::new("."), &[]), TIMEOUT);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(
        e.contains("process 1 (127.0.0.1:") && e.contains("did not connect within 2 s"),
        "{e}"
    );
    assert!(!e.contains("awaiting connections"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(!out.exists(), "nothing published");
}

/// Runs the sample as 2 processes with `env` on both (fail points) and extra arguments.
fn faulty(tmp: &Path, out: &Path, env: &[(&str, &str)], extra: &[&str]) -> (Vec<Output>, Duration) {
    let hf = hostfile(tmp, 2);
    let mut args = vec!["run", "--out", out.to_str().unwrap(), "-q", "-w", "1"];
    args.extend(extra);
    let started = Instant::now();
    let p0 = start(0, &hf, &args, Path::new("."), env);
    let p1 = start(1, &hf, &args, Path::new("."), env);
    let pid1 = p1.id() as i32;
    let o0 = wait(p0, TIMEOUT);
    // a stopped process 1 is continued (it then finds it was given up on) or killed
    unsafe_kill(pid1, 18); // SIGCONT
    let o1 = wait(p1, TIMEOUT);
    (vec![o0, o1], started.elapsed())
}

fn unsafe_kill(pid: i32, signal: i32) {
    std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .ok();
}

#[test]
fn case_3_a_frozen_peer_is_named_after_its_silence() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let before = previous(&out);
    // process 1 (worker 1) stops itself at the solve, as SIGSTOP would
    let (outputs, took) = faulty(
        tmp.path(),
        &out,
        &[("REVISIT_FAIL_AT", "solve:1:stop")],
        &["--peer-timeout-s", "2"],
    );
    let e0 = stderr(&outputs[0]);
    assert!(!outputs[0].status.success());
    assert_eq!(outputs[0].status.code(), Some(4), "{e0}");
    assert!(
        e0.contains("process 1 (127.0.0.1:") && e0.contains("sent nothing for 2 s"),
        "{e0}"
    );
    assert!(!outputs[1].status.success(), "{}", stderr(&outputs[1]));
    assert!(took < Duration::from_secs(60));
    assert!(snapshot(&out) == before, "nothing published");
}

#[test]
fn case_3_a_live_peer_that_makes_no_progress_is_named_after_the_round_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let before = previous(&out);
    let (outputs, _) = faulty(
        tmp.path(),
        &out,
        &[("REVISIT_FAIL_AT", "solve:1:hang")],
        &["--round-timeout-s", "2"],
    );
    both_fail_saying(&outputs, &["--round-timeout-s"]);
    let e0 = stderr(&outputs[0]);
    assert!(e0.contains("worker 1 of process 1 (127.0.0.1:"), "{e0}");
    assert!(snapshot(&out) == before, "nothing published");
}

#[test]
fn case_4_a_dead_peer_is_named_not_a_backtrace() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let before = previous(&out);
    for (spec, dead) in [("solve:1:exit", "process 1"), ("write:0:exit", "process 0")] {
        let (outputs, _) = faulty(tmp.path(), &out, &[("REVISIT_FAIL_AT", spec)], &[]);
        for o in &outputs {
            assert!(!o.status.success(), "{spec}");
        }
        let survivor = if dead == "process 1" {
            &outputs[0]
        } else {
            &outputs[1]
        };
        let e = stderr(survivor);
        assert_eq!(survivor.status.code(), Some(4), "{spec}: {e}");
        assert!(
            e.contains(dead) && e.contains("nothing published"),
            "{spec}: {e}"
        );
        assert!(
            !e.contains("panicked") && !e.contains("RUST_BACKTRACE"),
            "{spec}: {e}"
        );
        assert!(snapshot(&out) == before, "{spec}: nothing published");
    }
}

#[test]
fn case_4_a_lead_killed_just_after_its_swap_leaves_a_published_output_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    previous(&out);
    let reference = tmp.path().join("reference");
    let r = run_cluster(
        2,
        tmp.path(),
        &["run", "--out", reference.to_str().unwrap(), "-q", "-w", "1"],
        &[],
    );
    assert!(r.iter().all(|o| o.status.success()));
    let (outputs, _) = faulty(
        tmp.path(),
        &out,
        &[("REVISIT_FAIL_AT", "published:0:exit")],
        &[],
    );
    assert_eq!(outputs[0].status.code(), Some(3), "the lead died");
    // the other process finds the output is this run's, complete: the job succeeded
    let e1 = stderr(&outputs[1]);
    assert!(outputs[1].status.success(), "{e1}");
    assert_eq!(table_contents(&out), table_contents(&reference));
}

#[test]
fn case_9_a_second_run_into_the_same_output_refuses_naming_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let before = previous(&out);
    let held = revisit::io::out_lock::OutLock::acquire(&out).unwrap();
    let o = run(&["run", "--out", out.to_str().unwrap(), "-q", "-w", "1"]);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(
        e.contains("another revisit run is writing") && e.contains(&held.run_id),
        "{e}"
    );
    assert!(e.contains("refuses rather than wait"), "{e}");
    assert!(snapshot(&out) == before);
}
