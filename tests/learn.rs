//! `run --history`: change rates learned inside the job equal the stand-alone `estimate`'s to the
//! bit on any number of workers and processes; yesterday's learned table plus tonight's log equal
//! the whole log; bad log rows are counted or refused, named.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{ArrayRef, BooleanArray, Float64Array};
use common::*;
use revisit_core::estimate::synthetic::{changed_before, changes_between};

const DAY_S: f64 = 86_400.0;
/// 2026-01-01T00:00:00Z.
const T0: f64 = 1_767_225_600.0;

/// One observation of the synthetic log.
struct Row {
    url: String,
    host: String,
    at_s: f64,
    changed: bool,
    complete: bool,
}

/// Every page crawled once a day at its own time of day over days [from, to), its changes drawn
/// from its true rate; pages with complete observations give their change notices instead.
fn history(pages: &[(String, String, f64, f64, bool)], from: u32, to: u32) -> Vec<Row> {
    let mut rows = Vec::new();
    for (k, (url, host, _, rate, complete)) in pages.iter().enumerate() {
        let phase = (k % 997) as f64 / 997.0 * DAY_S;
        if *complete {
            let (a, b) = (T0 + from as f64 * DAY_S, T0 + to as f64 * DAY_S);
            for at_s in changes_between(url.as_bytes(), a, b, *rate, 5) {
                rows.push(Row {
                    url: url.clone(),
                    host: host.clone(),
                    at_s,
                    changed: true,
                    complete: true,
                });
            }
            continue;
        }
        for d in from..to {
            let at_s = T0 + d as f64 * DAY_S + phase;
            rows.push(Row {
                url: url.clone(),
                host: host.clone(),
                at_s,
                changed: d > 0 && changed_before(url.as_bytes(), at_s, 1.0, *rate, 5),
                complete: false,
            });
        }
    }
    rows
}

fn write_history(path: &Path, rows: &[Row]) {
    let urls: Vec<Option<&str>> = rows.iter().map(|r| Some(r.url.as_str())).collect();
    let hosts: Vec<Option<&str>> = rows.iter().map(|r| Some(r.host.as_str())).collect();
    let at: ArrayRef = Arc::new(Float64Array::from(
        rows.iter().map(|r| r.at_s).collect::<Vec<_>>(),
    ));
    let changed: ArrayRef = Arc::new(BooleanArray::from(
        rows.iter().map(|r| r.changed).collect::<Vec<_>>(),
    ));
    let complete: ArrayRef = Arc::new(BooleanArray::from(
        rows.iter().map(|r| r.complete).collect::<Vec<_>>(),
    ));
    write_pages(
        path,
        vec![
            ("url", strings(&urls)),
            ("host", strings(&hosts)),
            ("observed_at_s", at),
            ("changed", changed),
            ("complete_obs", complete),
        ],
    );
}

/// url -> change rate of every file under `dir` (a learned table, or one estimate file).
fn rates_in(dir: &Path) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    let files: Vec<_> = if dir.is_file() {
        vec![dir.to_path_buf()]
    } else {
        walk(dir)
    };
    for f in files {
        for b in read_parquet(&f) {
            let url = b.column_by_name("url").unwrap().as_string::<i32>().clone();
            let rate = b
                .column_by_name("change_rate")
                .unwrap()
                .as_primitive::<Float64Type>()
                .clone();
            for i in 0..b.num_rows() {
                out.insert(url.value(i).to_owned(), rate.value(i));
            }
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn start(day: u32) -> String {
    let s = T0 as i64 + day as i64 * DAY_S as i64;
    jiff::Timestamp::from_second(s).unwrap().to_string()
}

fn learn_run(pages: &Path, history: &[&Path], out: &Path, day: u32, extra: &[&str]) {
    let mut args = vec![
        "run".to_owned(),
        pages.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--start".into(),
        start(day),
        "-q".into(),
    ];
    for h in history {
        args.extend(["--history".into(), h.display().to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_ok(&args);
}

#[test]
fn learned_rates_equal_the_stand_alone_estimate_on_any_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 3_000, 30, &[]);
    let pages = read_pages(&data);
    let log = tmp.path().join("history.parquet");
    let rows = history(&pages, 0, 40);
    let observed: std::collections::HashSet<&str> = rows.iter().map(|r| r.url.as_str()).collect();
    write_history(&log, &rows);
    let est = tmp.path().join("estimate.parquet");
    let now_s = (T0 + 40.0 * DAY_S).to_string();
    run_ok(&[
        "estimate",
        log.to_str().unwrap(),
        "--now-s",
        &now_s,
        "--window-days",
        "30",
        "--out",
        est.to_str().unwrap(),
    ]);
    let want = rates_in(&est);
    // every URL with a row (a page with complete observations may have had no change)
    assert_eq!(want.len(), observed.len());
    assert!(observed.len() > pages.len() * 99 / 100);
    let p = data.join("pages");
    let check = |out: &Path, what: &str| {
        let got = rates_in(&out.join("learned"));
        assert_eq!(got.len(), want.len(), "{what}");
        for (url, rate) in &want {
            assert_eq!(got[url].to_bits(), rate.to_bits(), "{what}: {url}");
        }
        // the rates the run solved with are the learned ones
        for r in read_rates(out) {
            match want.get(&r.url) {
                Some(w) => assert_eq!(r.change_rate.to_bits(), w.to_bits(), "{what}"),
                None => assert!(r.change_rate > 0.0, "{what}: the prior's rate"),
            }
        }
    };
    for workers in ["1", "2", "4"] {
        let out = tmp.path().join(format!("w{workers}"));
        learn_run(
            &p,
            &[&log],
            &out,
            40,
            &["--window-days", "30", "-w", workers],
        );
        check(&out, &format!("{workers} workers"));
        let s = summary(&out)["learned"].clone();
        assert_eq!(s["history_rows"].as_u64(), Some(read_rows(&log)), "{s}");
        assert_eq!(s["history_used"], s["history_rows"], "{s}");
        let urls = s["urls_observed"].as_u64().unwrap() + s["urls_on_prior"].as_u64().unwrap();
        assert_eq!(urls, pages.len() as u64, "{s}");
        // the learning has a phase time of its own, and the phases add up to at most the total
        let seconds = summary(&out)["seconds"].clone();
        let phase = |k: &str| seconds[k].as_f64().unwrap_or(-1.0);
        assert!(phase("learn") > 0.0, "{seconds}");
        let phases: f64 = [
            "read", "exchange", "learn", "state", "solve", "value", "write",
        ]
        .iter()
        .map(|k| phase(k))
        .sum();
        assert!(phases <= phase("total") + 1e-9, "{seconds}");
    }
    let out = tmp.path().join("p2");
    let args = [
        "run",
        p.to_str().unwrap(),
        "--history",
        log.to_str().unwrap(),
        "--window-days",
        "30",
        "--start",
        &start(40),
        "--out",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "2",
    ];
    for o in run_cluster(2, tmp.path(), &args, &[]) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    check(&out, "2 processes");
    // the learned table is a table like any other: the same bytes on any cluster
    assert!(table_contents(&out) == table_contents(&tmp.path().join("w1")));
}

fn read_rows(path: &Path) -> u64 {
    read_parquet(path).iter().map(|b| b.num_rows() as u64).sum()
}

#[test]
fn last_nights_learned_table_and_tonights_log_equal_the_whole_log() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 2_000, 20, &[]);
    let pages = read_pages(&data);
    let p = data.join("pages");
    for window in [None, Some("15")] {
        let extra: Vec<&str> = window.map_or(vec![], |w| vec!["--window-days", w]);
        let name = window.unwrap_or("all");
        // night 20 learns days 0..20; night 35 continues from it with days 20..35
        let a = tmp.path().join(format!("a-{name}.parquet"));
        let b = tmp.path().join(format!("b-{name}.parquet"));
        let whole = tmp.path().join(format!("whole-{name}.parquet"));
        // one log, cut at night 1's start
        let rows = history(&pages, 0, 35);
        let cut = T0 + 20.0 * DAY_S;
        let (before, after): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.at_s <= cut);
        write_history(&a, &before);
        write_history(&b, &after);
        let all_rows: Vec<Row> = before.into_iter().chain(after).collect();
        write_history(&whole, &all_rows);
        let night1 = tmp.path().join(format!("night1-{name}"));
        learn_run(&p, &[&a], &night1, 20, &extra);
        let night2 = tmp.path().join(format!("night2-{name}"));
        let mut with_previous = extra.clone();
        with_previous.extend(["--previous", night1.to_str().unwrap()]);
        learn_run(&p, &[&b], &night2, 35, &with_previous);
        let at_once = tmp.path().join(format!("at-once-{name}"));
        learn_run(&p, &[&whole], &at_once, 35, &extra);
        let (continued, all) = (
            rates_in(&night2.join("learned")),
            rates_in(&at_once.join("learned")),
        );
        let missing: Vec<_> = all.keys().filter(|u| !continued.contains_key(*u)).collect();
        assert_eq!(continued.len(), all.len(), "{name}: {missing:?}");
        for (url, rate) in &all {
            assert_eq!(continued[url].to_bits(), rate.to_bits(), "{name}: {url}");
        }
        let s = summary(&night2)["learned"].clone();
        assert_eq!(s["state_used"], s["state_rows"], "{s}");
        // the state is compact: with a window, it keeps only the window's days
        if window.is_some() {
            let kept: u64 = walk(&night2.join("learned"))
                .iter()
                .map(|f| std::fs::metadata(f).unwrap().len())
                .sum();
            let log: u64 = std::fs::metadata(&whole).unwrap().len();
            assert!(kept < log, "{kept} bytes of state for a {log}-byte log");
        }
    }
}

#[test]
fn bad_log_rows_are_counted_or_refused_by_file_row_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("log.csv");
    let url = "https://www.site23.example/p/0000000000.html";
    let t = |d: f64| T0 + d * DAY_S;
    let mut text = String::from("url,observed_at_s,changed\n");
    for d in 0..10 {
        text += &format!("{url},{},{}\n", t(d as f64), d % 3 == 0);
    }
    text += &format!("{url},{},false\n", t(5.0)); // the same URL and time again: repeated
    text += &format!("https://nowhere.example/x,{},true\n", t(1.0)); // no page: unknown URL
    text += &format!("{url},{},true\n", t(20.0)); // after the night's start: future
    text += &format!("{url},NaN,true\n"); // not a time: invalid, named
    text += &format!("{url},{},maybe\n", t(3.0)); // not a bool: invalid, named
    std::fs::write(&csv, text).unwrap();
    let out = tmp.path().join("out");
    learn_run(Path::new("data/pages"), &[&csv], &out, 15, &[]);
    let s = summary(&out)["learned"].clone();
    assert_eq!(s["history_rows"], 15, "{s}");
    assert_eq!(s["history_used"], 10, "{s}");
    assert_eq!(s["history_repeated"], 1, "{s}");
    assert_eq!(s["history_unknown_url"], 1, "{s}");
    assert_eq!(s["history_future"], 1, "{s}");
    assert_eq!(s["history_invalid"], 2, "{s}");
    assert_eq!(s["first_invalid"]["row"], 13, "{s}");
    assert_eq!(s["first_invalid"]["column"], "observed_at_s", "{s}");
    assert!(s["first_invalid"]["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("log.csv")));
    // a log whose column has the wrong type is refused before anything runs, named
    let typed = tmp.path().join("typed.parquet");
    write_pages(
        &typed,
        vec![
            ("url", strings(&[Some(url)])),
            ("observed_at_s", floats(&[Some(t(1.0))])),
            ("changed", strings(&[Some("true")])),
        ],
    );
    let o = run(&[
        "run",
        "--history",
        typed.to_str().unwrap(),
        "--out",
        tmp.path().join("typed-out").to_str().unwrap(),
        "-q",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("typed.parquet") && e.contains("changed"), "{e}");
    // a log about none of the pages is an error, not a night on the prior alone
    let stranger = tmp.path().join("stranger.csv");
    std::fs::write(
        &stranger,
        format!(
            "url,observed_at_s,changed\nhttps://nowhere.example/,{},true\n",
            t(1.0)
        ),
    )
    .unwrap();
    let o = run(&[
        "run",
        "--history",
        stranger.to_str().unwrap(),
        "--start",
        &start(15),
        "--out",
        tmp.path().join("stranger-out").to_str().unwrap(),
        "-q",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("--history"), "{e}");
}

#[test]
fn the_learning_loop_comes_within_five_percent_of_the_oracle_by_night_thirty() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 200_000, 2_000, &[]);
    let work = tmp.path().join("work");
    let o = run_ok(&[
        "simulate",
        data.join("pages").to_str().unwrap(),
        "--hosts",
        data.join("hosts.parquet").to_str().unwrap(),
        "--nights",
        "30",
        "--learn",
        "-w",
        "2",
        "--out",
        work.to_str().unwrap(),
        "--json",
    ]);
    let nights: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(nights.len(), 30);
    let over = |n: &serde_json::Value| {
        n["cost_harmonic"].as_f64().unwrap() / n["oracle_cost_harmonic"].as_f64().unwrap() - 1.0
    };
    // the prior alone is worse than 5%; the learned rates get within it, and keep improving
    assert!(over(&nights[0]) > 0.05, "night 1: {}", over(&nights[0]));
    assert!(over(&nights[29]) < 0.05, "night 30: {}", over(&nights[29]));
    assert!(over(&nights[29]) < over(&nights[9]) && over(&nights[9]) < over(&nights[0]));
    // the oracle never loses to learned rates on its own objective
    assert!(nights.iter().all(|n| over(n) >= 0.0));
    assert!(work.join("learn.svg").is_file());
}
