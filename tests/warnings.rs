//! Runs that look wrong say so: most of the bandwidth unusable, crawler loads far apart. And a
//! politeness delay of 0 means no limit, as in the hosts table.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use common::*;

#[test]
fn unusable_bandwidth_is_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run_ok(&[
        "run",
        "--bandwidth",
        "1e9",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    let s = summary(&out);
    let (requested, unusable) = (
        s["bandwidth_requested"].as_f64().unwrap(),
        s["bandwidth_unusable"].as_f64().unwrap(),
    );
    assert!(unusable > 0.99 * requested);
    let warning = s["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("% of the bandwidth is unusable"),
        "{warning}"
    );
    assert!(text.contains(&format!("WARNING: {warning}")), "{text}");
}

#[test]
fn unbalanced_crawlers_are_a_warning_that_says_why() {
    // one host with most of the pages, twenty small ones; delays too short to cap anything
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("pages.csv");
    let mut text = String::from("url,importance,change_rate\n");
    for k in 0..2_000 {
        writeln!(text, "https://big.example/{k},1,0.5").unwrap();
    }
    for h in 0..20 {
        for k in 0..10 {
            writeln!(text, "https://small{h}.example/{k},1,0.5").unwrap();
        }
    }
    std::fs::write(&csv, text).unwrap();
    let out = tmp.path().join("out");
    let o = run_ok(&[
        "run",
        csv.to_str().unwrap(),
        "--min-delay-s",
        "0.001",
        "--crawlers",
        "4",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let s = summary(&out);
    // the loads, recomputed from the hosts table
    let mut loads: BTreeMap<i32, f64> = BTreeMap::new();
    for h in read_hosts(&out).values() {
        *loads.entry(h.crawler).or_default() += h.budget;
    }
    let mean = loads.values().sum::<f64>() / 4.0;
    let max = loads.values().copied().fold(0.0, f64::max);
    let ratio = s["crawler_load_max_over_mean"].as_f64().unwrap();
    assert!(
        (ratio - max / mean).abs() < 1e-9,
        "{ratio} vs {}",
        max / mean
    );
    assert!(ratio > 3.0, "{ratio}");
    let warning = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .find(|w| w.starts_with("crawler loads are unbalanced"))
        .expect("a load warning");
    assert!(warning.contains("one host alone needs"), "{warning}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("fewer crawlers (--crawlers)"));
}

#[test]
fn a_zero_delay_means_no_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("pages.csv");
    let mut text = String::from("url,importance,change_rate\n");
    for k in 0..400 {
        writeln!(text, "https://h{}.example/{k},{},0.5", k % 4, 1 + k % 3).unwrap();
    }
    std::fs::write(&csv, text).unwrap();
    let out = tmp.path().join("out");
    // 100 pages a host asking 20 a day each: 2,000 a host, far above the cap of a 60 s delay
    let args = |delay: &str, out: &std::path::Path| {
        run_ok(&[
            "run",
            csv.to_str().unwrap(),
            "--min-delay-s",
            delay,
            "--bandwidth",
            "8000",
            "--timetable",
            "--cyclic",
            "--crawlers",
            "2",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
    };
    args("0", &out);
    let s = summary(&out);
    assert_eq!(s["hosts_capped"], 0);
    assert_eq!(s["bandwidth_unusable"], 0.0);
    assert!(read_hosts(&out)
        .values()
        .all(|h| h.cap.is_infinite() && !h.capped));
    // no politeness floor on the crawler rate: 25% over a crawler's share of the bandwidth
    let rate = s["timetable"]["crawler_rate_per_s"].as_f64().unwrap();
    assert!(
        (rate - 1.25 * 8000.0 / 2.0 / 86_400.0).abs() < 1e-12,
        "{rate}"
    );
    assert_eq!(s["timetable"]["visits_dropped"], 0);
    // the same pages with a 60 s delay are held at 1,440 a day per host
    let capped = tmp.path().join("capped");
    args("60", &capped);
    let c = summary(&capped);
    assert_eq!(c["hosts_capped"], 4);
    assert!((c["bandwidth_used"].as_f64().unwrap() - 4.0 * 1440.0).abs() < 1e-6);
}
