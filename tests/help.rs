//! Help that teaches: `-h` is one line per option under the same headings in every command,
//! nothing wider than 100 characters; `--help` has the details; every value names its unit.

mod common;

use common::*;

const COMMANDS: [&str; 7] = [
    "run",
    "sweep",
    "evaluate",
    "estimate",
    "simulate",
    "gen",
    "plan-crawlers",
];
const HEADINGS: [&str; 6] = [
    "Input:",
    "Bandwidth and politeness:",
    "Output:",
    "Timetable:",
    "Cluster:",
    "Other:",
];

fn help(command: &str, flag: &str) -> String {
    let o = run_ok(&[command, flag]);
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn short_help_is_one_line_per_option_under_the_same_headings() {
    for command in COMMANDS {
        let text = help(command, "-h");
        let mut headings = Vec::new();
        let mut in_options = false;
        for line in text.lines() {
            assert!(
                line.chars().count() <= 100,
                "{command} -h: {line:?} is too wide"
            );
            if line.ends_with(':') && !line.starts_with(' ') {
                assert!(HEADINGS.contains(&line), "{command} -h: heading {line:?}");
                headings.push(line);
                in_options = true;
                continue;
            }
            if in_options && !line.is_empty() {
                // an option (or argument) and its help on one line, never a continuation
                let entry = line.starts_with("  -")
                    || line.starts_with("      --")
                    || line.starts_with("  [")
                    || line.starts_with("  <");
                assert!(entry, "{command} -h: {line:?} continues the line above");
                let help = line
                    .trim_start()
                    .split("  ")
                    .filter(|s| !s.is_empty())
                    .nth(1);
                assert!(
                    help.is_some(),
                    "{command} -h: {line:?} has no help on its line"
                );
            }
        }
        // in the order of the list above, as a crawl engineer sets them
        let order: Vec<usize> = headings
            .iter()
            .map(|h| HEADINGS.iter().position(|x| x == h).unwrap())
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "{command}: {headings:?}"
        );
        assert!(
            headings.contains(&"Other:"),
            "{command}: -h and --job under Other"
        );
    }
}

#[test]
fn long_help_has_the_details_and_every_value_its_unit() {
    let run = help("run", "--help");
    for detail in [
        "Nutch's db.fetch.interval.default",
        "0 means no limit",
        "BLC-eps",
        "binary-blind",
    ] {
        assert!(run.contains(detail), "run --help lacks {detail:?}");
    }
    let sweep = help("sweep", "--help");
    assert!(
        sweep.contains(
            "[default: harmonic,binary,binary-fixed,harmonic-approx,uniform,change-rate,importance]"
        ),
        "{sweep}"
    );
    // a value's name says what it counts: no option falls back to its own name as the value name
    for command in COMMANDS {
        for line in help(command, "-h").lines() {
            let Some(long) = line.split_whitespace().find(|w| w.starts_with("--")) else {
                continue;
            };
            let flag = long
                .trim_start_matches("--")
                .to_ascii_uppercase()
                .replace('-', "_");
            assert!(
                !line.contains(&format!("<{flag}>")),
                "{command}: {line:?} names no unit"
            );
        }
    }
    // rates are per day in every command
    let plan = help("plan-crawlers", "--help");
    assert!(plan.contains("--index-rate <PAGES_PER_DAY>") && !plan.contains("unit time"));
    assert!(help("gen", "-h").contains("--host-count <N>"));
}

#[test]
fn the_sweeps_default_policies_are_accepted_as_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sweep");
    run_ok(&[
        "sweep",
        "--policies",
        "harmonic,binary,binary-fixed,harmonic-approx,uniform,change-rate,importance",
        "--points",
        "2",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(summary(&out)["policies"].as_array().unwrap().len(), 7);
}
