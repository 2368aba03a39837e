//! The output (rates with their schedule, tonight's visits) is read by pyarrow and DuckDB without help (tests/consumers.py; `.ci/run` installs
//! both from PyPI). Set REVISIT_PYTHON to choose the interpreter (default python3).

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
        "--out",
        out.to_str().unwrap(),
        "--timetable",
        "-q",
        "-w",
        "2",
    ]);
    let python = std::env::var("REVISIT_PYTHON").unwrap_or_else(|_| "python3".into());
    let o = std::process::Command::new(&python)
        .args(["tests/consumers.py", out.to_str().unwrap()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        o.status.success(),
        "the consumer check failed (are pyarrow and duckdb installed? .ci/run installs them):\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
