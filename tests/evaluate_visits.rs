//! `revisit evaluate --visits`: a run's own timetable is valued as the run valued it (two code paths),
//! hand-written timetables are valued by the closed forms written out here, impolite hosts and bad
//! rows are counted and named, and the worker count changes nothing.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use common::*;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

const SECONDS_PER_DAY: f64 = 86_400.0;

fn evaluate_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["evaluate", "--json", "-q"];
    all.extend(args);
    serde_json::from_slice(&run_ok(&all).stdout).unwrap()
}

/// Writes a Parquet file of the given columns (None: null), with key-value metadata.
fn write_table(path: &Path, columns: Vec<(&str, ArrayRef)>, metadata: &[(&str, &str)]) {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let kv: Vec<KeyValue> = metadata
        .iter()
        .map(|(k, v)| KeyValue::new(k.to_string(), v.to_string()))
        .collect();
    let props = WriterProperties::builder()
        .set_key_value_metadata((!kv.is_empty()).then_some(kv))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A page set: (url, importance, change rate per day).
fn write_pages(path: &Path, pages: &[(&str, f64, f64)]) {
    write_table(
        path,
        vec![
            (
                "url",
                Arc::new(StringArray::from(
                    pages.iter().map(|p| p.0).collect::<Vec<_>>(),
                )),
            ),
            (
                "importance",
                Arc::new(Float64Array::from(
                    pages.iter().map(|p| p.1).collect::<Vec<_>>(),
                )),
            ),
            (
                "change_rate",
                Arc::new(Float64Array::from(
                    pages.iter().map(|p| p.2).collect::<Vec<_>>(),
                )),
            ),
        ],
        &[],
    );
}

/// A visits table: (url, at_s); None is a null.
fn write_visits(path: &Path, rows: &[(Option<&str>, Option<f64>)], metadata: &[(&str, &str)]) {
    write_table(
        path,
        vec![
            (
                "at_s",
                Arc::new(Float64Array::from(
                    rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                )),
            ),
            (
                "url",
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                )),
            ),
        ],
        metadata,
    );
}

/// Expected binary staleness over one interval of length tau between visits: 1 - (1 - e^{-c})/c
/// with c = lambda tau (the chance a Poisson change has happened, averaged over the interval).
fn interval_stale(lambda_per_s: f64, tau: f64) -> f64 {
    let c = lambda_per_s * tau;
    1.0 - (1.0 - (-c).exp()) / c
}

/// Time-average staleness of a page visited at `times` (sorted) every `horizon` seconds.
fn page_stale(times: &[f64], lambda_per_day: f64, horizon: f64) -> f64 {
    let lambda = lambda_per_day / SECONDS_PER_DAY;
    if lambda == 0.0 {
        return 0.0;
    }
    if times.is_empty() {
        return 1.0;
    }
    let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.push(times[0] + horizon - times[times.len() - 1]);
    gaps.iter()
        .map(|&t| t * interval_stale(lambda, t))
        .sum::<f64>()
        / horizon
}

/// E[H(N)] for N ~ Poisson(m), H the harmonic numbers (H(0) = 0), by its series.
fn expected_harmonic(m: f64) -> f64 {
    let (mut p, mut h, mut sum) = ((-m).exp(), 0.0, 0.0);
    for n in 1..200 {
        p *= m / n as f64;
        h += 1.0 / n as f64;
        sum += p * h;
    }
    sum
}

/// Time-average harmonic penalty of a page visited at `times`, by Simpson's rule over each gap
/// (an independent route from the closed form the code uses).
fn page_harmonic(times: &[f64], lambda_per_day: f64, horizon: f64) -> f64 {
    let lambda = lambda_per_day / SECONDS_PER_DAY;
    let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.push(times[0] + horizon - times[times.len() - 1]);
    let steps = 2000;
    let mut total = 0.0;
    for tau in gaps {
        let h = tau / steps as f64;
        let mut s = 0.0;
        for k in 0..=steps {
            let w = if k == 0 || k == steps {
                1.0
            } else if k % 2 == 1 {
                4.0
            } else {
                2.0
            };
            s += w * expected_harmonic(lambda * h * k as f64);
        }
        total += s * h / 3.0;
    }
    total / horizon
}

/// (host, at_s) of every row of a run's visits tables.
fn read_host_times(visits: &Path) -> BTreeMap<String, Vec<f64>> {
    let mut by_host: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for dir in std::fs::read_dir(visits).unwrap() {
        for b in read_parquet(&dir.unwrap().path().join("part-00000.parquet")) {
            let at = b
                .column_by_name("at_s")
                .unwrap()
                .as_primitive::<Float64Type>();
            let host = b.column_by_name("host").unwrap().as_string::<i32>();
            for i in 0..b.num_rows() {
                by_host
                    .entry(host.value(i).to_owned())
                    .or_default()
                    .push(at.value(i));
            }
        }
    }
    by_host
}

fn without_timing(r: serde_json::Value) -> serde_json::Value {
    without_run(r)
}

#[test]
fn a_runs_timetable_is_valued_as_the_run_valued_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // the sample page set (data/) with its hosts table, as the README's command does
    run_ok(&[
        "run",
        "--timetable",
        "--cyclic",
        "--out",
        out.to_str().unwrap(),
        "-w",
        "2",
        "-q",
    ]);
    let s = summary(&out);
    let visits = out.join("visits");
    let r = evaluate_json(&["--visits", visits.to_str().unwrap()]);
    let v = &r["visits"];
    let want = s["timetable"]["staleness"].as_f64().unwrap();
    let got = v["staleness"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9, "evaluate {got}, run {want}");
    assert_eq!(v["horizon_source"], "metadata");
    assert_eq!(v["horizon_s"].as_f64(), s["horizon_s"].as_f64());
    let scheduled = s["timetable"]["visits_scheduled"].as_u64().unwrap();
    assert_eq!(v["rows"], scheduled);
    assert_eq!(v["matched"], scheduled);
    for k in ["unmatched", "duplicate", "invalid"] {
        assert_eq!(v[k], 0, "{k}");
    }
    let per_day = scheduled as f64 * SECONDS_PER_DAY / s["horizon_s"].as_f64().unwrap();
    assert!((v["visits_per_day"].as_f64().unwrap() - per_day).abs() <= 1e-9 * per_day);
    assert_eq!(r["bandwidth"], v["visits_per_day"]);
    // the run's timetable is polite by construction; the check finds the same shortest gap as a
    // scan of the tables here
    assert_eq!(v["hosts_impolite"], 0);
    assert!(v["worst_host"].is_null());
    let mut by_host = read_host_times(&visits);
    let horizon = s["horizon_s"].as_f64().unwrap();
    let mut shortest = f64::INFINITY;
    for times in by_host.values_mut() {
        times.sort_by(f64::total_cmp);
        for w in times.windows(2) {
            shortest = shortest.min(w[1] - w[0]);
        }
        shortest = shortest.min(times[0] + horizon - times[times.len() - 1]);
    }
    assert_eq!(v["hosts_visited"], by_host.len() as u64);
    assert_eq!(v["host_gap_min_s"].as_f64().unwrap(), shortest);
    // No timetable beats the best evenly spaced integer visits of the same count within the caps
    // (Weak-Politeness), nor those the continuous fixed-interval optimum relaxes further (it may
    // visit a page less than once per horizon).
    let (wp, np) = (
        v["staleness_weak_politeness"].as_f64().unwrap(),
        v["staleness_non_polite"].as_f64().unwrap(),
    );
    assert!(got >= wp && wp >= np, "{got} {wp} {np}");
    let wp_run = s["timetable"]["staleness_weak_politeness"]
        .as_f64()
        .unwrap();
    // the run's budget is at least the served visits: its bound is no worse
    assert!(wp_run <= wp + 1e-12, "{wp_run} {wp}");
    let share = v["freshness_of_fixed_interval_optimum"].as_f64().unwrap();
    assert!(share > 0.0 && share <= 1.0, "{share}");
}

#[test]
fn a_hand_written_timetable_is_valued_by_the_closed_forms() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("pages.parquet");
    // (url, importance, change rate per day)
    let set = [
        ("http://a.example/1", 1.0, 24.0),
        ("http://a.example/2", 3.0, 48.0),
        ("http://b.example/1", 2.0, 12.0),
        ("http://b.example/2", 5.0, 0.0),
    ];
    write_pages(&pages, &set);
    let horizon = 7200.0;
    let times: [&[f64]; 4] = [
        &[0.0, horizon / 2.0],
        &[100.0, 1000.0, 5000.0],
        &[3000.0],
        &[],
    ];
    let mut rows = vec![];
    for (p, t) in set.iter().zip(times) {
        for &at in t {
            rows.push((Some(p.0), Some(at)));
        }
    }
    let visits = tmp.path().join("visits.parquet");
    // no horizon in the metadata: --horizon-s gives it
    write_visits(&visits, &rows, &[]);
    let r = evaluate_json(&[
        pages.to_str().unwrap(),
        "--visits",
        visits.to_str().unwrap(),
        "--horizon-s",
        "7200",
    ]);
    let v = &r["visits"];
    assert_eq!(v["horizon_source"], "flag");
    // page 1: visits at 0 and T/2, lambda = 1 per hour, tau = 1 h: S = 1 - (1 - e^-1)
    assert!((page_stale(times[0], 24.0, horizon) - (-1.0f64).exp()).abs() < 1e-15);
    let (mut stale, mut harmonic, mut weight) = (0.0, 0.0, 0.0);
    for (p, t) in set.iter().zip(times) {
        stale += p.1 * page_stale(t, p.2, horizon);
        if p.2 > 0.0 {
            harmonic += p.1 * page_harmonic(t, p.2, horizon);
        }
        weight += p.1;
    }
    let got = v["staleness"].as_f64().unwrap();
    assert!(
        (got - stale / weight).abs() < 1e-12,
        "{got} vs {}",
        stale / weight
    );
    assert!((v["cost_binary"].as_f64().unwrap() - stale).abs() < 1e-12);
    let h = v["cost_harmonic"].as_f64().unwrap();
    assert!((h - harmonic).abs() <= 1e-9 * harmonic, "{h} vs {harmonic}");
    assert_eq!(v["matched"], 6);
    assert_eq!(v["pages_visited"], 3);
    assert_eq!(v["pages_unvisited"], 1);
    assert_eq!(v["pages_starved"], 0);
    assert!((v["visits_per_day"].as_f64().unwrap() - 6.0 * 12.0).abs() < 1e-9);
    // polite at the default 15 s; a.example's merged times 0, 100, 1000, 3600, 5000 give the
    // shortest gap, 100 s (b.example's one visit is a whole horizon apart from itself)
    assert_eq!(v["hosts_impolite"], 0);
    assert_eq!(v["host_gap_min_s"].as_f64().unwrap(), 100.0);

    // --fetch-time: the shares are visits_i / sum of visits, the same as a rates table whose
    // crawl rates are the visit counts (valued by the rates path)
    let csv = tmp.path().join("rates.csv");
    let mut text = String::from("url,crawl_rate\n");
    for (p, t) in set.iter().zip(times) {
        if !t.is_empty() {
            text += &format!("{},{}\n", p.0, t.len());
        }
    }
    std::fs::write(&csv, text).unwrap();
    let spec = ["--fetch-time", "exp:600"];
    let mut a = vec![
        pages.to_str().unwrap(),
        "--visits",
        visits.to_str().unwrap(),
    ];
    a.extend(["--horizon-s", "7200"]);
    a.extend(spec);
    let by_visits = evaluate_json(&a);
    let mut b = vec![pages.to_str().unwrap(), "--rates", csv.to_str().unwrap()];
    b.extend(spec);
    let by_rates = evaluate_json(&b);
    let (mut fv, mut fr) = (
        by_visits["fetch_time"].clone(),
        by_rates["fetch_time"].clone(),
    );
    assert!((fv["table_rate_per_day"].as_f64().unwrap() - 72.0).abs() < 1e-9);
    fv.as_object_mut().unwrap().remove("table_rate_per_day");
    fr.as_object_mut().unwrap().remove("table_rate_per_day");
    assert!(fv["randomized"]["per_url"].as_f64().is_some());
    assert_eq!(fv, fr);
}

#[test]
fn visits_closer_than_a_hosts_delay_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("pages.parquet");
    write_pages(
        &pages,
        &[
            ("http://a.example/x", 1.0, 1.0),
            ("http://a.example/y", 1.0, 1.0),
            ("http://b.example/x", 1.0, 1.0),
            ("http://c.example/x", 1.0, 1.0),
            ("http://c.example/y", 1.0, 1.0),
        ],
    );
    // b.example asks for 100 s between requests
    let hosts = tmp.path().join("hosts.parquet");
    write_table(
        &hosts,
        vec![
            ("host", Arc::new(StringArray::from(vec!["b.example"]))),
            ("min_delay_s", Arc::new(Float64Array::from(vec![100.0]))),
        ],
        &[],
    );
    let t = SECONDS_PER_DAY;
    let rows = [
        // a.example: two pages 5 s apart, below the default 15 s
        (Some("http://a.example/x"), Some(1000.0)),
        (Some("http://a.example/y"), Some(1005.0)),
        // b.example: 50 s apart across the wrap-around (T - 40 -> T + 10), below its 100 s
        (Some("http://b.example/x"), Some(10.0)),
        (Some("http://b.example/x"), Some(t - 40.0)),
        // c.example: exactly 15 s apart: polite
        (Some("http://c.example/x"), Some(500.0)),
        (Some("http://c.example/y"), Some(515.0)),
    ];
    let visits = tmp.path().join("visits.parquet");
    write_visits(&visits, &rows, &[("revisit.horizon_s", "86400")]);
    let r = evaluate_json(&[
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--visits",
        visits.to_str().unwrap(),
    ]);
    let v = &r["visits"];
    assert_eq!(v["horizon_source"], "metadata");
    assert_eq!(v["hosts_visited"], 3);
    assert_eq!(v["hosts_impolite"], 2);
    assert_eq!(v["gaps_impolite"], 2);
    assert_eq!(v["host_gap_min_s"].as_f64().unwrap(), 5.0);
    assert_eq!(v["worst_host"]["host"], "a.example");
    assert_eq!(v["worst_host"]["gap_s"].as_f64().unwrap(), 5.0);
    assert_eq!(v["worst_host"]["min_delay_s"].as_f64().unwrap(), 15.0);
    // the terminal report names it too
    let o = run_ok(&[
        "evaluate",
        "-q",
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--visits",
        visits.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("2 hosts (2 gaps) below their min_delay_s") && text.contains("a.example"),
        "{text}"
    );
}

#[test]
fn two_workers_give_the_same_report_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 3000, 40, &[]);
    let (pages, hosts) = (data.join("pages"), data.join("hosts.parquet"));
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--timetable",
        "--cyclic",
        "--sequencing",
        "mp2",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let visits = out.join("visits");
    let one = |w: &str| {
        without_timing(evaluate_json(&[
            pages.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--visits",
            visits.to_str().unwrap(),
            "--fetch-time",
            "const:2",
            "-w",
            w,
        ]))
    };
    let (a, b) = (one("1"), one("2"));
    assert!(a["visits"]["staleness"].as_f64().unwrap() > 0.0);
    assert!(a["fetch_time"]["lower_bound"]["per_url"].as_f64().is_some());
    assert_eq!(a, b);
}

#[test]
fn bad_visits_rows_are_counted_and_the_first_named() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("pages.parquet");
    write_pages(&pages, &[("http://a.example/x", 1.0, 1.0)]);
    let rows = [
        (Some("http://a.example/x"), Some(0.0)),
        (Some("http://a.example/x"), None), // row 1: no at_s
        (Some("http://a.example/x"), Some(f64::NAN)), // row 2
        (Some("http://a.example/x"), Some(3600.0)), // row 3: = T, outside [0, T)
        (Some("http://a.example/x"), Some(-1.0)), // row 4
        (None, Some(5.0)),                  // row 5: no url
        (Some("http://a.example/x"), Some(0.0)), // a duplicate of row 0
        (Some("http://nowhere.example/"), Some(9.0)), // no such page
    ];
    let visits = tmp.path().join("night.parquet");
    write_visits(&visits, &rows, &[("revisit.horizon_s", "3600")]);
    let r = evaluate_json(&[
        pages.to_str().unwrap(),
        "--visits",
        visits.to_str().unwrap(),
    ]);
    let v = &r["visits"];
    assert_eq!(v["rows"], 8);
    assert_eq!(v["invalid"], 5);
    assert_eq!(v["duplicate"], 1);
    assert_eq!(v["unmatched"], 1);
    assert_eq!(v["matched"], 1);
    assert_eq!(v["first_invalid"]["row"], 1);
    assert_eq!(v["first_invalid"]["column"], "at_s");
    assert!(v["first_invalid"]["file"]
        .as_str()
        .unwrap()
        .ends_with("night.parquet"));

    // files that disagree on the horizon, or a --horizon-s against the files' (the default's
    // value typed out included), are refused
    let other = tmp.path().join("other.parquet");
    write_visits(
        &other,
        &[(Some("http://a.example/x"), Some(1.0))],
        &[("revisit.horizon_s", "7200")],
    );
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &[
                "--visits",
                visits.to_str().unwrap(),
                "--visits",
                other.to_str().unwrap(),
            ],
            &["disagree", "night.parquet", "other.parquet"],
        ),
        (
            &["--visits", visits.to_str().unwrap(), "--horizon-s", "60"],
            &["--horizon-s 60", "3600"],
        ),
        (
            &["--visits", visits.to_str().unwrap(), "--horizon-s", "86400"],
            &["--horizon-s 86400", "3600"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = vec!["evaluate", pages.to_str().unwrap()];
        all.extend(args);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "'{n}' not in {err}");
        }
    }
}
