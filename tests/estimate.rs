//! `revisit estimate` end to end: simulated crawl histories with known change rates (daily crawls
//! for 14 weeks, as in NeurIPS'19 §9.1), every estimate checked against the estimator computed here
//! by bisection, the estimates close to the truth, and bad rows and files named.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{BooleanArray, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::*;
use rand::{Rng, SeedableRng};

const DAY_S: f64 = 86_400.0;
/// Days of history: the paper's 14 weeks of daily crawls.
const DAYS: u32 = 98;
/// Unix time of the first crawl.
const EPOCH_S: f64 = 1.7e9;
const TRUE_RATES: [f64; 4] = [0.05, 0.3, 1.0, 3.0];
const URLS_PER_RATE: usize = 300;

struct Row {
    url: String,
    at_s: f64,
    changed: bool,
    complete: bool,
}

/// Daily crawls of pages changing as Poisson processes, and change notices of complete pages.
fn simulate(seed: u64) -> (Vec<Row>, HashMap<String, f64>) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (mut rows, mut truth) = (Vec::new(), HashMap::new());
    for &lambda in &TRUE_RATES {
        for k in 0..URLS_PER_RATE {
            let complete = k % 10 == 0;
            let url = format!("https://h{}.example/{lambda}/{k}", k % 7);
            truth.insert(url.clone(), lambda);
            if complete {
                // notices at the changes' times over the whole history
                let mut t = 0.0;
                loop {
                    t += -(1.0 - rng.random::<f64>()).ln() / lambda;
                    if t > DAYS as f64 {
                        break;
                    }
                    rows.push(Row {
                        url: url.clone(),
                        at_s: EPOCH_S + t * DAY_S,
                        changed: true,
                        complete,
                    });
                }
                // the feed's watch starts with the history
                rows.push(Row {
                    url: url.clone(),
                    at_s: EPOCH_S,
                    changed: false,
                    complete,
                });
                continue;
            }
            for day in 0..=DAYS {
                // changed since yesterday with probability 1 - e^-lambda
                let changed = day > 0 && rng.random::<f64>() < -(-lambda).exp_m1();
                rows.push(Row {
                    url: url.clone(),
                    at_s: EPOCH_S + day as f64 * DAY_S,
                    changed,
                    complete,
                });
            }
        }
    }
    (rows, truth)
}

fn write_history(path: &Path, rows: &[Row]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, true),
        Field::new("observed_at_s", DataType::Float64, true),
        Field::new("changed", DataType::Boolean, true),
        Field::new("complete_obs", DataType::Boolean, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.url))),
            Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.at_s))),
            Arc::new(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.changed)),
            )),
            Arc::new(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.complete)),
            )),
        ],
    )
    .unwrap();
    write_batch(path, &batch);
}

/// Runs `revisit estimate HISTORY --out OUT EXTRA... --json` and returns its summary.
fn estimate(history: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "estimate",
        history.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    args.push("--json");
    serde_json::from_slice(&run_ok(&args).stdout).unwrap()
}

/// Writes one batch as a Parquet file.
fn write_batch(path: &Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// url -> (change_rate, complete_obs, observations, changes) of an estimate table.
fn read_estimates(path: &Path) -> HashMap<String, (f64, bool, u64, u64)> {
    let mut out = HashMap::new();
    for b in read_parquet(path) {
        let url = b.column_by_name("url").unwrap().as_string::<i32>();
        let rate = b
            .column_by_name("change_rate")
            .unwrap()
            .as_primitive::<Float64Type>();
        let complete = b.column_by_name("complete_obs").unwrap().as_boolean();
        let obs = b
            .column_by_name("observations")
            .unwrap()
            .as_primitive::<UInt64Type>();
        let ch = b
            .column_by_name("changes")
            .unwrap()
            .as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            out.insert(
                url.value(i).to_owned(),
                (rate.value(i), complete.value(i), obs.value(i), ch.value(i)),
            );
        }
    }
    out
}

/// NeurIPS'19 eq. 10 with the paper's smoothing (one changed and one unchanged imaginary interval
/// of half a day), for daily crawls: sum_changed 1/(e^l - 1) + 0.5/(e^{l/2} - 1) = unchanged + 0.5,
/// solved by bisection on l.
fn incomplete_by_bisection(changed: f64, unchanged: f64) -> f64 {
    let f = |l: f64| changed / l.exp_m1() + 0.5 / (0.5 * l).exp_m1() - (unchanged + 0.5);
    let (mut lo, mut hi) = (1e-12f64, 1e3f64);
    for _ in 0..400 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn estimates_are_the_papers_estimators_and_near_the_truth() {
    let tmp = tempfile::tempdir().unwrap();
    let (rows, truth) = simulate(7);
    let history = tmp.path().join("history.parquet");
    write_history(&history, &rows);
    let out = tmp.path().join("rates.parquet");
    let summary = estimate(&history, &out, &["--prior", "paper"]);
    assert_eq!(summary["urls"], truth.len());
    assert_eq!(summary["urls_complete"], truth.len() / 10);
    assert_eq!(summary["rows_invalid"], 0);
    let est = read_estimates(&out);
    assert_eq!(est.len(), truth.len());

    let mut by_rate: HashMap<String, Vec<f64>> = HashMap::new();
    for (url, &(rate, complete, observations, changes)) in &est {
        let want = if complete {
            // eq. 11: (notices + 1/2) / (days watched + 1/2)
            assert_eq!(observations, changes);
            (changes as f64 + 0.5) / (DAYS as f64 + 0.5)
        } else {
            assert_eq!(observations, DAYS as u64, "{url}");
            incomplete_by_bisection(changes as f64, (observations - changes) as f64)
        };
        assert!(
            ((rate - want) / want).abs() < 1e-9,
            "{url}: {rate} vs {want}"
        );
        let key = format!("{}{}", truth[url], if complete { " complete" } else { "" });
        by_rate.entry(key).or_default().push(rate);
    }
    // Consistency: the mean estimate over a group of URLs lands within 4 standard errors of what
    // the estimator gives in expectation. For complete observations that is exact: (lambda T + 1/2)
    // / (T + 1/2). For crawls it is the estimator at the expected counts (T (1 - e^-lambda)
    // changed days), give or take the MLE's small-sample bias (2% of lambda allowed). Both sit above
    // lambda by the smoothing's extra half change: +20% at 0.05 a day, under 1% from 1 a day.
    let days = DAYS as f64;
    for (key, rates) in &by_rate {
        let lambda: f64 = key.split(' ').next().unwrap().parse().unwrap();
        let n = rates.len() as f64;
        let mean = rates.iter().sum::<f64>() / n;
        let se = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
        let (expected, allowance) = if key.ends_with("complete") {
            ((lambda * days + 0.5) / (days + 0.5), 0.0)
        } else {
            let seen = -(-lambda).exp_m1();
            (
                incomplete_by_bisection(days * seen, days * (1.0 - seen)),
                0.02 * lambda,
            )
        };
        assert!(
            (mean - expected).abs() <= 4.0 * se + allowance,
            "{key}: mean estimate {mean} ± {se} over {n} URLs, expected {expected}"
        );
        assert!((expected - lambda) / lambda < 0.25, "{key}: {expected}");
    }
}

#[test]
fn a_window_uses_the_last_days_only_and_bad_rows_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    // one page crawled daily: unchanged for 60 days, then changed at every crawl for 38 days
    let rows: Vec<Row> = (0..=DAYS)
        .map(|day| Row {
            url: "https://a.example/p".into(),
            at_s: EPOCH_S + day as f64 * DAY_S,
            changed: day > 60,
            complete: false,
        })
        .collect();
    let history = tmp.path().join("history.csv");
    let mut csv = String::from("url,observed_at_s,changed\n");
    for r in &rows {
        csv += &format!("{},{},{}\n", r.url, r.at_s, r.changed);
    }
    csv += ",1700000000,true\nhttps://b.example/q,soon,false\n";
    std::fs::write(&history, csv).unwrap();
    let out = tmp.path().join("rates.parquet");
    let s = estimate(&history, &out, &["--window-days", "10", "--prior", "paper"]);
    assert_eq!(s["rows_invalid"], 2);
    assert_eq!(s["first_invalid"]["row"], DAYS + 1);
    assert_eq!(s["first_invalid"]["column"], "url");
    let est = read_estimates(&out);
    let (rate, _, observations, changes) = est["https://a.example/p"];
    // the last 10 days: the crawls at days 88..=98 end 11 intervals in [88, 98], all changed
    assert_eq!((observations, changes), (11, 11));
    assert!(
        ((rate - incomplete_by_bisection(11.0, 0.0)) / rate).abs() < 1e-9,
        "{rate}"
    );
    // all of the history: 60 unchanged days lower it
    let all = tmp.path().join("all.parquet");
    run_ok(&[
        "estimate",
        history.to_str().unwrap(),
        "--out",
        all.to_str().unwrap(),
        "--prior",
        "paper",
    ]);
    let (all_rate, _, n, k) = read_estimates(&all)["https://a.example/p"];
    assert_eq!((n, k), (DAYS as u64, 38));
    assert!((all_rate - incomplete_by_bisection(38.0, 60.0)).abs() < 1e-9 * all_rate);
    assert!(all_rate < rate);

    // a window that ends before the history starts is refused
    let o = run(&[
        "estimate",
        history.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--now-s",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--now-s 1000"));

    // a file without the columns is refused, named, with exit code 2
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, "url,when,changed\nx,1,true\n").unwrap();
    let o = run(&[
        "estimate",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.csv") && err.contains("observed_at_s"),
        "{err}"
    );
}

#[test]
fn pages_filled_with_estimates_run_as_they_are() {
    // Daily crawls of the sample's first 200 URLs; the filled copy of the sample takes their
    // estimates, keeps every other row and column as it was, and `revisit run` reads it.
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new("data");
    let pages = read_pages(data);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut rows = Vec::new();
    for (url, ..) in pages.iter().take(200) {
        for day in 0..=DAYS {
            rows.push(Row {
                url: url.clone(),
                at_s: EPOCH_S + day as f64 * DAY_S,
                changed: day > 0 && rng.random::<f64>() < 0.4,
                complete: false,
            });
        }
    }
    rows.push(Row {
        url: "https://not-a-page.example/x".into(),
        at_s: EPOCH_S,
        changed: false,
        complete: false,
    });
    let history = tmp.path().join("history.parquet");
    write_history(&history, &rows);
    // read_pages wants DIR/pages
    let (out, set) = (tmp.path().join("rates.parquet"), tmp.path().join("set"));
    let filled = set.join("pages");
    let s = estimate(
        &history,
        &out,
        &[
            "--pages",
            "data/pages",
            "--out-pages",
            filled.to_str().unwrap(),
        ],
    );
    assert_eq!(s["pages"]["rows"], pages.len());
    assert_eq!(s["pages"]["rows_estimated"], 200);
    assert_eq!(s["pages"]["rows_kept"], pages.len() - 200);
    assert_eq!(s["pages"]["estimates_unmatched"], 1);
    let est = read_estimates(&out);
    let after = read_pages(&set);
    assert_eq!(after.len(), pages.len());
    let before: HashMap<&str, _> = pages.iter().map(|p| (p.0.as_str(), p)).collect();
    for (url, host, mu, lambda, complete) in &after {
        let b = before[url.as_str()];
        assert_eq!((host, *mu, *complete), (&b.1, b.2, b.4), "{url}");
        match est.get(url) {
            Some(e) => assert_eq!(*lambda, e.0, "{url}"),
            None => assert_eq!(*lambda, b.3, "{url}"),
        }
    }
    let run_out = tmp.path().join("run");
    run_ok(&[
        "run",
        filled.to_str().unwrap(),
        "--hosts",
        "data/hosts.parquet",
        "-q",
        "--out",
        run_out.to_str().unwrap(),
    ]);
    assert_eq!(summary(&run_out)["rows_rejected"], 0);

    // Pages without a change_rate column get one: the estimate, or null for `run` to reject.
    let bare = tmp.path().join("bare.parquet");
    let schema = Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("importance", DataType::Float64, false),
    ]));
    let urls = [
        pages[0].0.as_str(),
        pages[1].0.as_str(),
        "https://new.example/a",
    ];
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from_iter_values(urls)),
            Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])),
        ],
    )
    .unwrap();
    write_batch(&bare, &batch);
    let bare_set = tmp.path().join("bare-set");
    let bare_pages = bare_set.join("pages");
    let s = estimate(
        &history,
        &out,
        &[
            "--pages",
            bare.to_str().unwrap(),
            "--out-pages",
            bare_pages.to_str().unwrap(),
        ],
    );
    assert_eq!(
        (
            &s["pages"]["rows_estimated"],
            &s["pages"]["rows_without_rate"]
        ),
        (&serde_json::json!(2), &serde_json::json!(1))
    );
    let bare_out = tmp.path().join("bare-run");
    run_ok(&[
        "run",
        bare_set.join("pages").to_str().unwrap(),
        "-q",
        "--out",
        bare_out.to_str().unwrap(),
    ]);
    let r = summary(&bare_out);
    assert_eq!(r["rows_rejected"], 1);
    assert_eq!(r["rejected_by_reason"]["change_rate_missing"], 1);
}
