//! `revisit evaluate` end to end: our own runs sit at their optimum, a user's CSV is valued exactly as
//! the formulas say (computed here from the pages, independently of revisit), and bad rows are named.

mod common;

use common::*;

fn evaluate_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["evaluate", "--json", "-q"];
    all.extend(args);
    let o = run_ok(&all);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn optimum<'a>(report: &'a serde_json::Value, objective: &str) -> &'a serde_json::Value {
    report["optima"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["objective"] == objective)
        .unwrap()
}

#[test]
fn a_runs_rates_are_its_objectives_polite_optimum() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 4000, 50, &["--big-host-delay-s", "300"]);
    let (pages, hosts) = (data.join("pages"), data.join("hosts.parquet"));
    for objective in ["harmonic", "binary", "binary-fixed"] {
        let out = tmp.path().join(objective);
        run_ok(&[
            "run",
            pages.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--objective",
            objective,
            "--bandwidth-fraction",
            "1",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]);
        let rates = out.join("rates");
        let report = evaluate_json(&[
            pages.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--rates",
            rates.to_str().unwrap(),
            "-w",
            "2",
        ]);
        assert_eq!(report["rates_matched"], report["rates_rows"]);
        assert_eq!(report["hosts_over_cap"], 0, "{objective}");
        let o = optimum(&report, objective);
        let gap = o["gap_to_polite"].as_f64().unwrap();
        assert!(gap.abs() < 1e-9, "{objective}: gap {gap}");
        // politeness costs something on this workload (its big hosts ask for 300 s)
        assert!(o["price_of_politeness"].as_f64().unwrap() > 0.0);
        assert!(o["gap_to_non_polite"].as_f64().unwrap() > 0.0);
        // the run's own cost equals the evaluation of its rates
        let s = summary(&out);
        let own = s["cost_objective"].as_f64().unwrap();
        assert!((o["cost"].as_f64().unwrap() - own).abs() <= 1e-9 * own);
    }
}

#[test]
fn a_users_csv_is_valued_by_the_formulas() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 2000, 30, &[]);
    let pages = read_pages(&data);
    // Every other page at 0.3 per day, the rest absent (rate 0); plus bad and foreign rows.
    let mut csv = String::from("url,crawl_rate\n");
    let mut expect_binary = 0.0;
    let mut expect_fresh_weight = 0.0;
    let mut importance = 0.0;
    let rate = 0.3;
    for (k, (url, _, mu, lambda, complete)) in pages.iter().enumerate() {
        let rho = if k % 2 == 0 { rate } else { 0.0 };
        if k % 2 == 0 {
            csv += &format!("{url},{rate}\n");
        }
        importance += mu;
        if *lambda > 0.0 {
            let stale = if *complete {
                1.0 - (rho / lambda).min(1.0)
            } else {
                lambda / (rho + lambda)
            };
            expect_binary += mu * stale;
            expect_fresh_weight += mu * (1.0 - stale);
        } else {
            expect_fresh_weight += mu;
        }
    }
    csv += "http://nowhere.example/x,1\n"; // no such page
    csv += &format!("{},-2\n", pages[0].0); // invalid rate, row 1002 of the data
    csv += &format!("{},{rate}\n", pages[0].0); // a duplicate
                                                // a duplicate at a higher rate (the lowest of a URL's rows counts), and of no page
    csv += &format!("{},{}\n", pages[2].0, 3.0 * rate);
    csv += "http://nowhere.example/x,2\n";
    let path = tmp.path().join("mine.csv");
    std::fs::write(&path, csv).unwrap();
    let report = evaluate_json(&[
        data.join("pages").to_str().unwrap(),
        "--rates",
        path.to_str().unwrap(),
    ]);
    let half = pages.len().div_ceil(2) as u64;
    assert_eq!(report["rates_matched"], half);
    assert_eq!(report["rates_unmatched"], 1);
    assert_eq!(report["rates_invalid"], 1);
    assert_eq!(report["rates_duplicate"], 3);
    assert_eq!(report["pages_without_rate"], pages.len() as u64 - half);
    assert_eq!(report["first_invalid"]["row"], half + 1);
    assert_eq!(report["first_invalid"]["column"], "crawl_rate");
    let v = &report["value"];
    let binary = v["cost_binary"].as_f64().unwrap();
    assert!((binary - expect_binary).abs() <= 1e-9 * expect_binary);
    let fresh = v["freshness_poisson"].as_f64().unwrap();
    assert!((fresh - expect_fresh_weight / importance).abs() < 1e-12);
    // half the pages are never crawled: harmonic staleness is infinite, and they are counted
    assert!(v["cost_harmonic"].is_null());
    assert!(v["urls_starved"].as_u64().unwrap() > 0);
    // the optima use the rates' own bandwidth
    assert!((report["bandwidth"].as_f64().unwrap() - rate * half as f64).abs() < 1e-9);
    // a policy that starves no page is beaten by the optimum, never the other way round
    for o in report["optima"].as_array().unwrap() {
        if let (Some(c), Some(p)) = (o["cost"].as_f64(), o["polite_cost"].as_f64()) {
            assert!(c >= p * (1.0 - 1e-12), "{o}");
        }
    }
}

#[test]
fn rates_above_a_hosts_cap_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 1000, 5, &[]);
    let pages = read_pages(&data);
    // 100 fetches per day per page: the biggest hosts (hundreds of pages) ask for more than
    // 86400 / 15 = 5760 per day.
    let mut csv = String::from("crawl_rate,url\n");
    for (url, ..) in &pages {
        csv += &format!("100,{url}\n");
    }
    let path = tmp.path().join("greedy.csv");
    std::fs::write(&path, csv).unwrap();
    let report = evaluate_json(&[
        data.join("pages").to_str().unwrap(),
        "--rates",
        path.to_str().unwrap(),
    ]);
    let mut per_host = std::collections::HashMap::<&str, f64>::new();
    for (_, host, ..) in &pages {
        *per_host.entry(host).or_default() += 100.0;
    }
    let over = per_host.values().filter(|&&s| s > 86400.0 / 15.0).count() as u64;
    assert!(over > 0);
    assert_eq!(report["hosts_over_cap"], over);
}

#[test]
fn a_rates_table_without_crawl_rate_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.csv");
    std::fs::write(&path, "url,rate\nhttp://a.com/,1\n").unwrap();
    let o = run(&["evaluate", "--rates", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.csv") && err.contains("crawl_rate") && !err.contains("panicked"),
        "{err}"
    );
}
