//! The output (rates with their schedule, tonight's visits) is read by pyarrow and DuckDB without
//! help, the same questions asked of both
//! (tests/consumers.py; `scripts/test.sh` installs both into a local environment and points
//! REVISIT_PYTHON at it). Set REVISIT_PYTHON to choose the interpreter (default python3).

mod common;

use common::*;

#[test]
fn pyarrow_and_duckdb_read_every_row_with_the_right_types() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        "data/pages",
        "--hosts",
        "data/hosts.parquet",
        "--timetable",
        "--start",
        "2026-11-23T00:00:00Z",
        "--out",
        out.to_str().unwrap(),
        "--timetable",
        "-q",
        "-w",
        "2",
    ]);
    let python = python();
    let o = std::process::Command::new(&python)
        .args(["tests/consumers.py", out.to_str().unwrap()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        o.status.success(),
        "the consumer check failed (are pyarrow and duckdb installed? scripts/test.sh installs \
         them into .venv and runs the tests with it):\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    println!("{}", String::from_utf8_lossy(&o.stdout));
}
