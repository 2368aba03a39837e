//! Politeness no input can bypass, and numbers a consumer can trust: one URL is scheduled once
//! whatever its host values say; spellings of one host share one cap; domains and an IP column as
//! politeness keys; no NaN or inf in the hosts table and budgets within caps; a search that cannot
//! converge publishes nothing; a timetable's cost does not grow with the bandwidth; output folders
//! that would go wrong are refused.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use common::*;

fn write_pages(path: &Path, columns: Vec<(&str, ArrayRef)>) {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    revisit::io::parquet_out::write(path, schema, &[batch], &[]).unwrap();
}

fn strings(v: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

fn floats(v: &[f64]) -> ArrayRef {
    Arc::new(Float64Array::from(v.to_vec()))
}

/// Pages (url, host) with importance 1 and change rate 1, in two files split at `split`.
fn pages(dir: &Path, rows: &[(&str, &str)], split: usize) {
    for (f, part) in [&rows[..split], &rows[split..]].iter().enumerate() {
        let urls: Vec<&str> = part.iter().map(|r| r.0).collect();
        let hosts: Vec<&str> = part.iter().map(|r| r.1).collect();
        write_pages(
            &dir.join(format!("pages/part-{f}.parquet")),
            vec![
                ("url", strings(&urls)),
                ("host", strings(&hosts)),
                ("importance", floats(&vec![1.0; part.len()])),
                ("change_rate", floats(&vec![1.0; part.len()])),
            ],
        );
    }
}

#[test]
fn case_5_a_url_under_two_hosts_is_scheduled_once_and_spellings_of_a_host_share_one_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let rows = [
        ("https://h0.example/a", "h0.example"),
        ("https://h0.example/b", "h0.example:8080"),
        ("https://h0.example/c", "h0.example."),
        ("https://h0.example/d", "https://h0.example"),
        ("https://h0.example/e", "H0.Example/"),
        ("https://h1.example/x", "h1.example"),
        // the same URL again, under another host, in the second file: a duplicate
        ("https://h0.example/a", "h1.example"),
        ("https://h1.example/y", "not a host"),
    ];
    pages(tmp.path(), &rows, 6);
    for workers in ["1", "2"] {
        let out = tmp.path().join(format!("out{workers}"));
        run_ok(&[
            "run",
            tmp.path().join("pages").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--bandwidth",
            "100000",
            "-q",
            "-w",
            workers,
        ]);
        let rates = read_rates(&out);
        let a: Vec<_> = rates
            .iter()
            .filter(|r| r.url == "https://h0.example/a")
            .collect();
        assert_eq!(a.len(), 1, "scheduled once");
        assert_eq!(a[0].host, "h0.example", "under the first row's host");
        let hosts = read_hosts(&out);
        assert_eq!(
            hosts.keys().cloned().collect::<Vec<_>>(),
            vec!["h0.example", "h1.example"],
            "five spellings, one host"
        );
        // one cap of 5,760 fetches a day (15 s) for h0's five URLs, held at it
        assert_eq!(hosts["h0.example"].cap, 5760.0);
        assert!(hosts["h0.example"].capped && hosts["h0.example"].budget <= 5760.0);
        let rejected = read_rejected(&out);
        let reasons: Vec<(i64, &str)> = rejected.iter().map(|r| (r.1, r.2.as_str())).collect();
        assert_eq!(
            reasons,
            vec![(0, "duplicate_url"), (1, "host_invalid")],
            "{rejected:?}"
        );
        let s = summary(&out);
        assert_eq!(s["rejected_by_reason"]["duplicate_url"], 1);
    }
}

#[test]
fn politeness_by_domain_and_by_an_ip_column() {
    let tmp = tempfile::tempdir().unwrap();
    let urls = [
        "https://a.shop.example.co.uk/1",
        "https://b.shop.example.co.uk/2",
        "https://www.other.example/3",
    ];
    write_pages(
        &tmp.path().join("pages/p.parquet"),
        vec![
            ("url", strings(&urls)),
            ("ip", strings(&["10.0.0.1", "10.0.0.2", "10.0.0.1"])),
            ("importance", floats(&[1.0, 1.0, 1.0])),
            ("change_rate", floats(&[1.0, 1.0, 1.0])),
        ],
    );
    let input = tmp.path().join("pages");
    // a run under politeness key `key` into `out` on `workers`, with `extra` options
    let run_at = |key: &str, out: &Path, workers: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--politeness-key",
            key,
            "-q",
            "-w",
            workers,
        ];
        args.extend_from_slice(extra);
        run_ok(&args);
    };
    let run_key = |key: &str| {
        let out = tmp.path().join(key);
        run_at(key, &out, "1", &[]);
        read_hosts(&out).keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(run_key("host").len(), 3);
    assert_eq!(run_key("domain"), vec!["example.co.uk", "other.example"]);
    assert_eq!(run_key("ip-column"), vec!["10.0.0.1", "10.0.0.2"]);
    // the next night under each key finds every URL's state: the rows a run wrote come back to
    // the pages of their key, on 1 worker as on 3
    for key in ["host", "domain", "ip-column"] {
        for workers in ["1", "3"] {
            let out = tmp.path().join(format!("{key}-next-{workers}"));
            let previous = tmp.path().join(key);
            run_at(
                key,
                &out,
                workers,
                &["--previous", previous.to_str().unwrap()],
            );
            let schedule = &summary(&out)["schedule"];
            assert_eq!(
                schedule["state_used"], 3,
                "{key}, {workers} workers: {schedule}"
            );
            assert_eq!(schedule["state_dropped"], 0, "{key}, {workers} workers");
            assert_eq!(schedule["urls_new"], 0, "{key}, {workers} workers");
        }
    }
    // an input without the column is refused, naming it
    let o = run(&[
        "run",
        "--politeness-key",
        "ip-column",
        "--out",
        tmp.path().join("x").to_str().unwrap(),
        "-q",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("'ip'"), "{e}");
}

#[test]
fn case_6_no_nan_or_inf_published_and_budgets_within_caps() {
    let tmp = tempfile::tempdir().unwrap();
    // a bandwidth far beyond the caps: multiplier 0, every host at its cap
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        "--bandwidth",
        "1e9",
        "--out",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "2",
    ]);
    let hosts = read_hosts_raw(&out);
    assert_eq!(hosts.len(), 200);
    for (host, cap, demand, budget) in &hosts {
        let cap = cap.expect("every sample host has a delay");
        assert!(cap.is_finite() && budget.is_finite(), "{host}");
        assert!(
            demand.is_none_or(f64::is_finite),
            "{host}: demand {demand:?}"
        );
        assert!(budget <= &cap, "{host}: budget {budget} > cap {cap}");
    }
    assert!(
        hosts.iter().any(|h| h.2.is_none()),
        "unbounded demand at nu = 0 is null"
    );
    // min_delay_s 0 (no limit): the cap is null, not inf
    let hosts_table = tmp.path().join("hosts.parquet");
    write_pages(
        &hosts_table,
        vec![
            ("host", strings(&["www.site1.example"])),
            ("min_delay_s", floats(&[0.0])),
        ],
    );
    let out = tmp.path().join("out0");
    run_ok(&[
        "run",
        "data/pages",
        "--hosts",
        hosts_table.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let hosts = read_hosts_raw(&out);
    let free = hosts.iter().find(|h| h.0 == "www.site1.example").unwrap();
    assert_eq!(free.1, None);
    assert!(hosts
        .iter()
        .all(|h| h.1.is_none_or(f64::is_finite) && h.3.is_finite()));
    let rates = read_rates(&out);
    assert!(rates.iter().all(|r| r.crawl_rate.is_finite()));
}

#[test]
fn a_host_s_demand_is_its_budget_unless_its_cap_binds() {
    // the sample on 2 workers: a few hosts are capped, the rest take their demand
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&["run", "--out", out.to_str().unwrap(), "-q", "-w", "2"]);
    let hosts = read_hosts_raw(&out);
    let capped = read_capped(&out);
    assert_eq!(hosts.len(), capped.len());
    assert!(capped.iter().any(|&c| c) && capped.iter().any(|&c| !c));
    for ((host, cap, demand, budget), capped) in hosts.iter().zip(capped) {
        if capped {
            let cap = cap.expect("a capped host has a cap");
            assert!(
                demand.is_none_or(|d| d > cap),
                "{host}: {demand:?} <= cap {cap}"
            );
            assert!(*budget <= cap, "{host}");
        } else {
            assert_eq!(*demand, Some(*budget), "{host}");
        }
    }
}

/// The `capped` column of every hosts row.
fn read_capped(out: &Path) -> Vec<bool> {
    use arrow_array::cast::AsArray;
    read_parquet(&out.join("hosts/part-00000.parquet"))
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("capped").unwrap().as_boolean().clone();
            (0..b.num_rows()).map(move |i| c.value(i))
        })
        .collect()
}

/// (host, cap, demand, budget) of every hosts row, nulls kept.
fn read_hosts_raw(out: &Path) -> Vec<(String, Option<f64>, Option<f64>, f64)> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    use arrow_array::Array;
    let mut rows = Vec::new();
    for b in read_parquet(&out.join("hosts/part-00000.parquet")) {
        let host = b.column_by_name("host").unwrap().as_string::<i32>().clone();
        let f = |c: &str| {
            b.column_by_name(c)
                .unwrap()
                .as_primitive::<Float64Type>()
                .clone()
        };
        let (cap, demand, budget) = (f("cap"), f("demand"), f("budget"));
        for i in 0..b.num_rows() {
            rows.push((
                host.value(i).to_owned(),
                cap.is_valid(i).then(|| cap.value(i)),
                demand.is_valid(i).then(|| demand.value(i)),
                budget.value(i),
            ));
        }
    }
    rows
}

#[test]
fn case_7_a_search_that_does_not_converge_fails_and_publishes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&["run", "--out", out.to_str().unwrap(), "-q"]);
    let before = table_bytes(&out);
    let o = run(&[
        "run",
        "--bandwidth",
        "5e-324",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("did not converge") && e.contains("nothing published"),
        "{e}"
    );
    assert_eq!(table_bytes(&out), before);
}

#[test]
fn case_8_a_timetable_costs_pages_and_caps_not_bandwidth() {
    let tmp = tempfile::tempdir().unwrap();
    gen(tmp.path(), 100, 5, &[]);
    for bandwidth in ["1e8", "1e12"] {
        let started = Instant::now();
        run_ok(&[
            "run",
            tmp.path().join("pages").to_str().unwrap(),
            "--hosts",
            tmp.path().join("hosts.parquet").to_str().unwrap(),
            "--timetable",
            "--bandwidth",
            bandwidth,
            "--out",
            tmp.path().join("out").to_str().unwrap(),
            "-q",
            "-w",
            "1",
        ]);
        // 29 s at 1e8 and no end at 1e12 before; well under a second now
        assert!(started.elapsed() < Duration::from_secs(20), "{bandwidth}");
    }
}

#[test]
fn case_9_outputs_that_would_go_wrong_are_refused_and_dead_runs_cleared() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // a dead run's staging folder, complete with _SUCCESS: cleared by the next run
    let dead = tmp.path().join(".out.staging-0000dead");
    std::fs::create_dir_all(dead.join("rates")).unwrap();
    std::fs::write(dead.join("_SUCCESS"), "").unwrap();
    run_ok(&["run", "--out", out.to_str().unwrap(), "-q"]);
    assert!(!dead.exists());
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("staging"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // --crawlers far beyond the hosts
    let o = run(&[
        "run",
        "--crawlers",
        "100000",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("--crawlers 100000 is more than the 200 hosts"),
        "{e}"
    );
    // --out . (the current folder) and --out inside an output
    for bad in [".", "out/rates"] {
        let o = command(&["run", "--out", bad, "-q"])
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{bad}: {e}");
        assert!(e.contains("--out"), "{bad}: {e}");
    }
    assert!(out.join("_SUCCESS").exists());
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("staging")), "{names:?}");
}
