//! The README's walkthrough runs as shown: every `$ command` of its `console` blocks is run by the
//! shell in a scratch folder holding the repository's `data/` (with `revisit` on the PATH), and
//! prints the lines the README shows after it (`...` stands for any lines, the rest must match
//! whole lines, in order); a command shown printing `error:` must fail, the others succeed. Its
//! `sql` blocks then run in DuckDB on what the commands wrote (REVISIT_PYTHON, as in
//! tests/consumers.rs).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// A command of the walkthrough and the lines the README shows it printing.
struct Step {
    command: String,
    shown: Vec<String>,
}

/// The `console` and `sql` blocks of a Markdown text.
fn blocks(markdown: &str) -> (Vec<Step>, Vec<String>) {
    let (mut steps, mut sql) = (Vec::new(), Vec::new());
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        match info {
            "console" => {
                for l in body {
                    match l.strip_prefix("$ ") {
                        Some(command) => steps.push(Step {
                            command: command.to_owned(),
                            shown: Vec::new(),
                        }),
                        None => steps
                            .last_mut()
                            .expect("a console block starts with a command")
                            .shown
                            .push(l.to_owned()),
                    }
                }
            }
            "sql" => sql.push(body.join("\n")),
            _ => {}
        }
    }
    (steps, sql)
}

/// Whether `actual` lines are the `shown` ones, `...` standing for any number of lines.
fn matches(shown: &[String], actual: &[&str]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => {
            actual
                .first()
                .is_some_and(|a| a.trim_end() == first.as_str())
                && matches(rest, &actual[1..])
        }
    }
}

/// A scratch folder with the repository's data/ and a `revisit` to call by name.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = std::env::current_dir().unwrap();
    std::os::unix::fs::symlink(repo.join("data"), tmp.path().join("data")).unwrap();
    std::os::unix::fs::symlink(repo.join("jobs"), tmp.path().join("jobs")).unwrap();
    let bin = tmp.path().join(".bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("revisit")).unwrap();
    (tmp, bin)
}

fn shell(dir: &Path, bin: &Path, command: &str) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("LC_ALL", "C")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting sh");
    wait(child, TIMEOUT)
}

#[test]
fn the_readme_walkthrough_runs_as_shown() {
    let readme = std::fs::read_to_string("README.md").unwrap();
    let (steps, sql) = blocks(&readme);
    assert!(steps.len() >= 5, "the walkthrough has its commands");
    let (tmp, bin) = scratch();
    for step in &steps {
        let o = shell(tmp.path(), &bin, &step.command);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let fails = step.shown.iter().any(|l| l.starts_with("error:"));
        assert_eq!(
            !o.status.success(),
            fails,
            "`{}` {} ({:?}):\n{text}",
            step.command,
            if fails { "should fail" } else { "failed" },
            o.status
        );
        let actual: Vec<&str> = text.lines().collect();
        assert!(
            matches(&step.shown, &actual),
            "`{}` printed\n{text}\nwhere the README shows\n{}",
            step.command,
            step.shown.join("\n")
        );
    }

    // the SQL on what the commands wrote, in DuckDB, against the same count read here
    assert!(!sql.is_empty(), "the README shows a query");
    let python = python();
    let crawler_7 = read_rates(&tmp.path().join("out"))
        .iter()
        .filter(|r| r.crawler == 7)
        .count();
    for query in sql {
        let o = Command::new(&python)
            .args([
                "-c",
                "import duckdb, sys; print(duckdb.connect().execute(sys.argv[1]).fetchall())",
                &query,
            ])
            .current_dir(tmp.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
        let rows = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{query}\nfailed (is duckdb installed? scripts/test.sh installs it):\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            rows.starts_with(&format!("[(7, {crawler_7}, ")),
            "{query}\ngave {rows}"
        );
    }
}

#[test]
fn the_matcher_reads_ellipses_as_any_lines() {
    let shown = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    assert!(matches(&shown("a\n...\nd"), &["a", "b", "c", "d"]));
    assert!(matches(&shown("...\nc\n..."), &["a", "b", "c", "d"]));
    assert!(!matches(&shown("a\nc"), &["a", "b", "c"]));
    assert!(!matches(&shown("a\n...\nb"), &["a", "b", "c"]));
    assert!(matches(&shown(""), &[]));
}
