//! `gen --history-days` end to end: the generated crawl history against the page set it observes
//! (daily crawls changing with probability 1 - e^-rate, notices of complete pages at their rate,
//! every file one day), byte-for-byte reproducible, and `estimate` on it recovering the rates.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use common::*;

const DAYS: u32 = 60;
const DAY_S: f64 = 86_400.0;
const END: &str = "2026-11-23T00:00:00Z";
/// date -u -d 2026-11-23T00:00:00Z +%s
const END_S: f64 = 1_795_392_000.0;
/// Classes of true change rates (per day) the shares are checked in.
const CLASSES: [(f64, f64); 4] = [(0.0, 0.1), (0.1, 0.5), (0.5, 2.0), (2.0, 8.0)];

/// A crawl history row.
struct Row {
    url: String,
    at_s: f64,
    changed: bool,
    complete: bool,
}

fn generate(dir: &Path, seed: &str) {
    gen(
        dir,
        4000,
        40,
        &[
            "--complete-share",
            "0.25",
            "--history-days",
            &DAYS.to_string(),
            "--history-end",
            END,
            "--seed",
            seed,
            "-q",
        ],
    );
}

fn day_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("history"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn read_day(path: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in read_parquet(path) {
        let url = b.column_by_name("url").unwrap().as_string::<i32>().clone();
        let at = b
            .column_by_name("observed_at_s")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        let changed = b.column_by_name("changed").unwrap().as_boolean().clone();
        let complete = b
            .column_by_name("complete_obs")
            .unwrap()
            .as_boolean()
            .clone();
        for i in 0..b.num_rows() {
            rows.push(Row {
                url: url.value(i).to_owned(),
                at_s: at.value(i),
                changed: changed.value(i),
                complete: complete.value(i),
            });
        }
    }
    rows
}

fn class_of(rate: f64) -> usize {
    CLASSES
        .iter()
        .position(|&(lo, hi)| (lo..hi).contains(&rate))
        .unwrap()
}

#[test]
fn the_history_observes_the_pages_at_their_change_rates() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    generate(&dir, "7");
    let pages: HashMap<String, (f64, bool)> = read_pages(&dir)
        .into_iter()
        .map(|(url, _, _, rate, complete)| (url, (rate, complete)))
        .collect();
    let files = day_files(&dir);
    assert_eq!(files.len(), DAYS as usize);

    // each file one day, oldest first; each crawled page once a day at its own time of day
    let mut crawls: HashMap<String, Vec<(f64, bool)>> = HashMap::new();
    let mut notices: HashMap<String, u64> = HashMap::new();
    for (k, file) in files.iter().enumerate() {
        assert!(file.ends_with(format!("day-{k:03}.parquet")), "{file:?}");
        let start = END_S - (DAYS as usize - k) as f64 * DAY_S;
        for r in read_day(file) {
            assert!(
                (start..start + DAY_S).contains(&r.at_s),
                "{file:?}: {} at {} outside [{start}, {})",
                r.url,
                r.at_s,
                start + DAY_S
            );
            let (_, complete) = pages[&r.url];
            assert_eq!(r.complete, complete, "{}", r.url);
            if complete {
                assert!(r.changed, "a notice is a change: {}", r.url);
                *notices.entry(r.url).or_default() += 1;
            } else {
                crawls
                    .entry(r.url)
                    .or_default()
                    .push((r.at_s - start, r.changed));
            }
        }
    }
    for (url, (_, complete)) in &pages {
        if *complete {
            continue;
        }
        let days = &crawls[url];
        assert_eq!(days.len(), DAYS as usize, "{url}: one crawl a day");
        assert!(!days[0].1, "{url}: the first crawl closes no interval");
        // the same time of day, to the microsecond
        assert!(days.iter().all(|d| (d.0 - days[0].0).abs() < 1e-6), "{url}");
    }

    // the share of changed daily intervals per class: a sum of independent Bernoulli(1 - e^-rate)
    let (mut seen, mut expected, mut variance) = ([0f64; 4], [0f64; 4], [0f64; 4]);
    for (url, days) in &crawls {
        let rate = pages[url].0;
        let c = class_of(rate);
        let p = -(-rate).exp_m1();
        let intervals = (DAYS - 1) as f64;
        seen[c] += days[1..].iter().filter(|d| d.1).count() as f64;
        expected[c] += intervals * p;
        variance[c] += intervals * p * (1.0 - p);
    }
    for c in 0..CLASSES.len() {
        assert!(expected[c] > 100.0, "class {c} too thin: {expected:?}");
        assert!(
            (seen[c] - expected[c]).abs() < 4.0 * variance[c].sqrt(),
            "rates in {:?}: {} changed intervals, expected {} +- {}",
            CLASSES[c],
            seen[c],
            expected[c],
            variance[c].sqrt()
        );
    }

    // the notices of complete pages: Poisson(rate x days) each, independent
    let (mut seen, mut expected) = ([0f64; 4], [0f64; 4]);
    for (url, (rate, complete)) in &pages {
        if *complete {
            let c = class_of(*rate);
            seen[c] += notices.get(url).copied().unwrap_or(0) as f64;
            expected[c] += rate * DAYS as f64;
        }
    }
    for c in 0..CLASSES.len() {
        assert!(
            (seen[c] - expected[c]).abs() < 4.0 * expected[c].sqrt() + 1.0,
            "rates in {:?}: {} notices, expected {}",
            CLASSES[c],
            seen[c],
            expected[c]
        );
    }

    // the same seed, the same bytes; another seed, another history
    let again = tmp.path().join("b");
    generate(&again, "7");
    let other = tmp.path().join("c");
    generate(&other, "8");
    for (k, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file).unwrap();
        assert_eq!(
            bytes,
            std::fs::read(&day_files(&again)[k]).unwrap(),
            "{file:?}"
        );
        assert_ne!(
            bytes,
            std::fs::read(&day_files(&other)[k]).unwrap(),
            "{file:?}"
        );
    }
}

#[test]
fn estimate_recovers_the_rates_from_the_history() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    generate(&dir, "11");
    let out = tmp.path().join("change_rates.parquet");
    run_ok(&[
        "estimate",
        dir.join("history").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let pages: HashMap<String, (f64, bool)> = read_pages(&dir)
        .into_iter()
        .map(|(url, _, _, rate, complete)| (url, (rate, complete)))
        .collect();
    // Where 60 daily crawls can see a rate (a few changes and a few unchanged days expected), the
    // estimators are close to unbiased and normal, with the delta method's relative standard
    // error: incomplete, p = 1 - e^-rate over n = 59 intervals, sd(rate) = sqrt(p / ((1 - p) n));
    // complete, a Poisson count over 60 days, sd(rate) = sqrt(rate / 60). The errors in those
    // units are about standard normal, whose median absolute value is 0.674; the smoothing's bias
    // (half a change and half an interval) and the estimators' skew stay well below 1.
    let mut z = Vec::new();
    for b in read_parquet(&out) {
        let url = b.column_by_name("url").unwrap().as_string::<i32>().clone();
        let est = b
            .column_by_name("change_rate")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        for i in 0..b.num_rows() {
            let (rate, complete) = pages[url.value(i)];
            if !(0.1..=2.0).contains(&rate) {
                continue;
            }
            let sd = if complete {
                (rate / DAYS as f64).sqrt()
            } else {
                let p = -(-rate).exp_m1();
                (p / ((1.0 - p) * (DAYS - 1) as f64)).sqrt()
            };
            z.push(((est.value(i) - rate) / sd).abs());
        }
    }
    assert!(z.len() > 1500, "{} URLs in the band", z.len());
    z.sort_by(f64::total_cmp);
    let median = z[z.len() / 2];
    assert!(
        (0.5..1.0).contains(&median),
        "median |error| {median} standard errors (standard normal: 0.674)"
    );
}

#[test]
fn each_day_names_its_bounds_and_a_bad_end_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    gen(
        &dir,
        50,
        5,
        &["--history-days", "2", "--history-end", END, "-q"],
    );
    let files = day_files(&dir);
    let bounds: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                std::fs::File::open(f).unwrap(),
            )
            .unwrap();
            let kv = reader
                .metadata()
                .file_metadata()
                .key_value_metadata()
                .unwrap();
            let get = |k: &str| {
                kv.iter()
                    .find(|e| e.key == k)
                    .and_then(|e| e.value.clone())
                    .unwrap()
            };
            (
                get("revisit.history.day_start"),
                get("revisit.history.day_end"),
            )
        })
        .collect();
    assert_eq!(
        bounds,
        [
            ("2026-11-21T00:00:00Z", "2026-11-22T00:00:00Z"),
            ("2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );

    for (args, needle) in [
        (
            &["--history-days", "3", "--history-end", "2026-11-23"][..],
            "--history-end 2026-11-23",
        ),
        (
            &["--history-end", END][..],
            "--history-end needs --history-days",
        ),
    ] {
        let out = tmp.path().join("bad");
        let mut all = vec!["gen", "--urls", "10", "--out", out.to_str().unwrap()];
        all.extend(args);
        let result = run(&all);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(
            !result.status.success() && stderr.contains(needle),
            "{stderr}"
        );
        assert!(!out.exists(), "{args:?} wrote {out:?}");
    }
}
