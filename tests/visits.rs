//! `run --timetable`, read back from its Parquet: every host's fetches (the wrap-around included) are
//! at least its delay apart, no crawler fetches faster than its rate, the fetches per URL are the
//! integer visits the library computes, and the timetable is valued exactly, above the WP bound.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, TimestampMicrosecondType};
use common::*;
use revisit::job::keys::url_key;
use revisit_core::reduce::Alone;
use revisit_core::schedule::evaluate::evaluate_page;
use revisit_core::schedule::timetable::cyclic_gaps;
use revisit_core::schedule::visits::{
    host_visit_cap, integer_visits, visit_budget, VisitObjective, VisitProblem,
};
use revisit_core::solve::PagesBuilder;
use revisit_core::units::{PerDay, Seconds};

/// Gaps in the tables are f64 differences of times computed in f64: they hold to this (README).
const TOLERANCE_S: f64 = 1e-6;
const HORIZON_S: f64 = 86_400.0;
const DEFAULT_DELAY_S: f64 = 15.0;

/// One fetch: (crawler, at_s, url, host, at in microseconds if present).
type Fetch = (u32, f64, String, String, Option<i64>);

fn read_visits(out: &Path) -> Vec<Fetch> {
    let mut rows = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(out.join("visits"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let crawler: u32 = name.strip_prefix("crawler=").unwrap().parse().unwrap();
        for b in read_parquet(&dir.join("part-00000.parquet")) {
            let at_s = b
                .column_by_name("at_s")
                .unwrap()
                .as_primitive::<Float64Type>();
            let url = b.column_by_name("url").unwrap().as_string::<i32>();
            let host = b.column_by_name("host").unwrap().as_string::<i32>();
            let at = b
                .column_by_name("fetch_at")
                .map(|c| c.as_primitive::<TimestampMicrosecondType>().clone());
            for i in 0..b.num_rows() {
                rows.push((
                    crawler,
                    at_s.value(i),
                    url.value(i).to_owned(),
                    host.value(i).to_owned(),
                    at.as_ref().map(|a| a.value(i)),
                ));
            }
        }
    }
    rows
}

fn run_timetable(data: &Path, out: &Path, extra: &[&str]) {
    let (pages, hosts) = (data.join("pages"), data.join("hosts.parquet"));
    let mut args = vec![
        "run",
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--bandwidth-fraction",
        "0.5",
        "--crawlers",
        "4",
        "--timetable",
        "--cyclic",
        "--start",
        "2026-11-23T00:00:00Z",
        "-w",
        "3",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    run_ok(&args);
}

/// The integer visits of the input computed with the library alone: url -> count.
fn library_counts(data: &Path, bandwidth: f64) -> HashMap<String, u32> {
    let delays = read_delays(data);
    let mut by_host: BTreeMap<String, Vec<(String, f64, f64)>> = BTreeMap::new();
    for (url, host, mu, lambda, _) in read_pages(data) {
        by_host.entry(host).or_default().push((url, mu, lambda));
    }
    let horizon = Seconds(HORIZON_S);
    let (mut b, mut caps, mut keys, mut urls) = (PagesBuilder::new(), vec![], vec![], vec![]);
    for (host, pages) in &by_host {
        let delay = delays.get(host).copied().unwrap_or(DEFAULT_DELAY_S);
        caps.push(host_visit_cap(horizon, Seconds(delay)));
        b.push_host(
            PerDay(f64::INFINITY),
            pages.iter().map(|p| (p.1, p.2, false)),
        );
        for p in pages {
            keys.push(url_key(p.0.as_bytes()));
            urls.push(p.0.clone());
        }
    }
    let arena = b.build().unwrap();
    let problem = VisitProblem {
        pages: &arena,
        caps: &caps,
        keys: &keys,
        horizon,
        objective: VisitObjective::Staleness,
    };
    let v = integer_visits(&problem, visit_budget(bandwidth, horizon), &mut Alone);
    urls.into_iter().zip(v.counts).collect()
}

/// Politeness per host (wrap-around included) and the crawler rate per crawler, from the tables.
fn check_polite_and_paced(fetches: &[Fetch], delays: &HashMap<String, f64>, rate: f64) {
    let horizon = Seconds(HORIZON_S);
    let mut by_host: BTreeMap<&str, (u32, Vec<f64>)> = BTreeMap::new();
    let mut by_crawler: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for f in fetches {
        assert!(
            (0.0..HORIZON_S).contains(&f.1),
            "at_s {} outside the horizon",
            f.1
        );
        let e = by_host.entry(&f.3).or_insert((f.0, vec![]));
        assert_eq!(e.0, f.0, "host {} on two crawlers", f.3);
        e.1.push(f.1);
        by_crawler.entry(f.0).or_default().push(f.1);
    }
    for (host, (_, times)) in &by_host {
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{host}: not sorted by time"
        );
        let delay = delays.get(*host).copied().unwrap_or(DEFAULT_DELAY_S);
        for g in cyclic_gaps(times, horizon) {
            assert!(
                g >= delay - TOLERANCE_S,
                "{host}: gap {g} s < min_delay_s {delay}"
            );
        }
    }
    for (crawler, times) in &by_crawler {
        assert!(
            times.len() as f64 <= (rate * HORIZON_S).floor(),
            "crawler {crawler}: {} fetches > rate x horizon",
            times.len()
        );
        for g in cyclic_gaps(times, horizon) {
            assert!(
                g >= 1.0 / rate - TOLERANCE_S,
                "crawler {crawler}: gap {g} s < 1/rate {}",
                1.0 / rate
            );
        }
    }
}

/// The exact staleness of the served times, recomputed from the tables and the input.
fn table_staleness(data: &Path, fetches: &[Fetch]) -> f64 {
    let mut times: HashMap<&str, Vec<f64>> = HashMap::new();
    for f in fetches {
        times.entry(&f.2).or_default().push(f.1);
    }
    let (mut sum, mut weight) = (0.0, 0.0);
    for (url, _, mu, lambda, _) in read_pages(data) {
        let mut t = times.get(url.as_str()).cloned().unwrap_or_default();
        t.sort_by(f64::total_cmp);
        sum += mu * evaluate_page(&t, lambda, Seconds(HORIZON_S)).stale;
        weight += mu;
    }
    sum / weight
}

#[test]
fn timetables_are_polite_paced_and_match_the_integer_visits() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(
        &data,
        12_000,
        80,
        &["--shards", "3", "--big-host-delay-s", "60"],
    );
    let delays = read_delays(&data);
    for sequencing in ["merge", "mp2", "carousel", "golden-ratio"] {
        // The default crawler rate: 25% headroom over a crawler's share of the bandwidth, and at
        // least two fetches per default politeness delay (15 s).
        let out = tmp.path().join(format!("{sequencing}-default"));
        run_timetable(&data, &out, &["--sequencing", sequencing]);
        let s = summary(&out);
        let t = &s["timetable"];
        let rate = t["crawler_rate_per_s"].as_f64().unwrap();
        let bandwidth = s["bandwidth_requested"].as_f64().unwrap();
        let want = (1.25 * bandwidth / 4.0 / 86_400.0).max(2.0 / 15.0);
        assert!((rate - want).abs() < 1e-12 * rate, "{rate} vs {want}");
        let fetches = read_visits(&out);
        check_polite_and_paced(&fetches, &delays, rate);
        let (scheduled, dropped, planned) = (
            t["visits_scheduled"].as_u64().unwrap(),
            t["visits_dropped"].as_u64().unwrap(),
            t["visits_planned"].as_u64().unwrap(),
        );
        assert_eq!(fetches.len() as u64, scheduled);
        assert_eq!(scheduled + dropped, planned);
        assert!(t["visits_dropped_at_wrap"].as_u64().unwrap() <= dropped);
        assert!(t["visits_served_round_the_cycle"].as_u64().unwrap() <= scheduled);
        let counts = library_counts(&data, bandwidth);
        assert_eq!(counts.values().map(|&c| c as u64).sum::<u64>(), planned);
        let mut served: HashMap<&str, u32> = HashMap::new();
        for f in &fetches {
            *served.entry(&f.2).or_default() += 1;
        }
        for (url, n) in &served {
            assert!(
                *n <= counts[*url],
                "{url}: {n} fetches > {} visits",
                counts[*url]
            );
        }
        let staleness = t["staleness"].as_f64().unwrap();
        let wp = t["staleness_weak_politeness"].as_f64().unwrap();
        let np = t["staleness_non_polite"].as_f64().unwrap();
        assert!(staleness >= wp && wp >= np, "{staleness} {wp} {np}");
        let recomputed = table_staleness(&data, &fetches);
        assert!(
            (recomputed - staleness).abs() <= 1e-9 * staleness,
            "{sequencing}: summary {staleness} vs tables {recomputed}"
        );
        assert!(t["crawler_utilisation_max"].as_f64().unwrap() <= 1.0);

        // With room to spare every integer visit is served.
        let out = tmp.path().join(format!("{sequencing}-fast"));
        run_timetable(
            &data,
            &out,
            &["--sequencing", sequencing, "--crawler-rate", "1"],
        );
        let t = summary(&out)["timetable"].clone();
        let fetches = read_visits(&out);
        check_polite_and_paced(&fetches, &delays, 1.0);
        if sequencing == "mp2" {
            // MP2 plans impolite gaps on hosts at their cap: the crawler delays those visits and
            // the last ones of the night may not fit (PUC-Rio's reason for MERGE)
            assert_eq!(
                t["visits_scheduled"].as_u64().unwrap() + t["visits_dropped"].as_u64().unwrap(),
                planned
            );
            continue;
        }
        assert_eq!(t["visits_dropped"], 0, "{sequencing}");
        let mut served: HashMap<String, u32> = HashMap::new();
        for f in &fetches {
            *served.entry(f.2.clone()).or_default() += 1;
        }
        for (url, &c) in &counts {
            assert_eq!(
                served.get(url).copied().unwrap_or(0),
                c,
                "{sequencing}: {url}"
            );
        }
    }
}

#[test]
fn every_fetch_has_its_time_of_day_from_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 2_000, 20, &[]);
    let out = tmp.path().join("out");
    run_timetable(&data, &out, &["--start", "2026-11-23T01:00:00+01:00"]);
    let fetches = read_visits(&out);
    assert!(!fetches.is_empty());
    let start_us = 1_795_392_000_000_000i64; // 2026-11-23T00:00:00Z
    for f in &fetches {
        assert_eq!(f.4, Some(start_us + (f.1 * 1e6).round() as i64));
    }
    // without --start the night starts at 00:00 UTC today
    let out2 = tmp.path().join("out2");
    run_ok(&[
        "run",
        data.join("pages").to_str().unwrap(),
        "--timetable",
        "-q",
        "--out",
        out2.to_str().unwrap(),
    ]);
    let today = summary(&out2)["schedule"]["start"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(today.ends_with("T00:00:00Z"), "{today}");
    assert_eq!(summary(&out2)["schedule"]["start_source"], "today");
    // a start that is not a time is refused, naming the option
    let bad = run(&["run", "--start", "tonight", "--out", "/nonexistent/x"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--start"));
}

#[test]
fn simulation_agrees_with_the_exact_value() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 3_000, 30, &[]);
    let out = tmp.path().join("out");
    run_timetable(&data, &out, &[]);
    let exact = summary(&out)["timetable"]["staleness"].as_f64().unwrap();
    let o = run_ok(&[
        "evaluate",
        data.join("pages").to_str().unwrap(),
        "--visits",
        out.join("visits").to_str().unwrap(),
        "--simulate",
        "400",
        "--seed",
        "7",
        "--json",
        "-q",
    ]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = &r["visits"];
    assert!((v["staleness"].as_f64().unwrap() - exact).abs() <= 1e-9 * exact);
    let m = &v["monte_carlo"];
    let (sim, se) = (
        m["simulated"].as_f64().unwrap(),
        m["std_err"].as_f64().unwrap(),
    );
    assert!(se > 0.0 && se < 0.01, "standard error {se}");
    // 4 standard errors: a fixed seed, so this is deterministic, not flaky
    assert!(
        (sim - exact).abs() <= 4.0 * se,
        "simulated {sim} +- {se}, exact {exact}"
    );
}

#[test]
fn a_rolling_night_is_not_valued_as_a_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        "data/pages",
        "--timetable",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let o = run(&[
        "evaluate",
        "data/pages",
        "--visits",
        out.join("visits").to_str().unwrap(),
        "-q",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        e.contains("crawler=0") && e.contains("rolling") && e.contains("--cyclic"),
        "{e}"
    );
}

/// The value of a run's served visits, from `evaluate --visits` (closed forms, not the planner).
fn served_value(pages: &str, visits: &Path) -> serde_json::Value {
    let out = run_ok(&[
        "evaluate",
        pages,
        "--min-delay-s",
        "1",
        "--visits",
        visits.to_str().unwrap(),
        "--json",
        "-q",
    ]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["visits"].clone()
}

#[test]
fn a_harmonic_run_plans_its_visits_for_the_harmonic_penalty_when_every_page_can_be_visited() {
    let tmp = tempfile::tempdir().unwrap();
    // 2 visits per page and caps far above need: every changing page can be visited, so harmonic
    // integer visits are finite; a fast crawler serves every planned visit
    let plan = |objective: &str| {
        let out = tmp.path().join(objective);
        run_ok(&[
            "run",
            "data/pages",
            "--min-delay-s",
            "1",
            "--objective",
            objective,
            "--bandwidth",
            "40000",
            "--timetable",
            "--cyclic",
            "--crawler-rate",
            "10",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ]);
        let s = summary(&out);
        assert_eq!(s["timetable"]["visits_dropped"], 0);
        (s, served_value("data/pages", &out.join("visits")))
    };
    let (harmonic_summary, harmonic) = plan("harmonic");
    let (binary_summary, binary) = plan("binary");
    assert_eq!(
        harmonic_summary["timetable"]["visits_objective"],
        "harmonic"
    );
    assert_eq!(binary_summary["timetable"]["visits_objective"], "staleness");
    // each plan is the better one by its own measure, as evaluated from the served timetables
    let jh = |v: &serde_json::Value| v["cost_harmonic"].as_f64().expect("finite harmonic cost");
    let stale = |v: &serde_json::Value| v["staleness"].as_f64().unwrap();
    assert_eq!(harmonic["pages_unvisited"], 0);
    assert!(
        jh(&harmonic) < jh(&binary),
        "{} vs {}",
        jh(&harmonic),
        jh(&binary)
    );
    assert!(stale(&binary) < stale(&harmonic));

    // each summary judges its timetable by its plan's objective: the served cost (as evaluate
    // values it) against the Weak-Politeness and non-polite bounds of that objective only
    let t = &harmonic_summary["timetable"];
    let served = t["cost_harmonic"].as_f64().unwrap();
    assert!(
        (served - jh(&harmonic)).abs() <= 1e-9 * served,
        "{served} vs {}",
        jh(&harmonic)
    );
    let (wp, np) = (
        t["cost_harmonic_weak_politeness"].as_f64().unwrap(),
        t["cost_harmonic_non_polite"].as_f64().unwrap(),
    );
    assert!(np <= wp && wp <= served, "{np} {wp} {served}");
    assert!(t["staleness_weak_politeness"].is_null() && t["staleness_non_polite"].is_null());
    let t = &binary_summary["timetable"];
    let (wp, np) = (
        t["staleness_weak_politeness"].as_f64().unwrap(),
        t["staleness_non_polite"].as_f64().unwrap(),
    );
    assert!(np <= wp && wp <= stale(&binary), "{np} {wp}");
    assert!(t["cost_harmonic_weak_politeness"].is_null());
    assert!((t["cost_harmonic"].as_f64().unwrap() - jh(&binary)).abs() <= 1e-9 * jh(&binary));

    // the sample's own bandwidth (4,000 fetches for 20,000 pages) cannot visit every page: the
    // harmonic penalty is infinite whatever the plan, so freshness decides
    let out = tmp.path().join("short");
    run_ok(&[
        "run",
        "--timetable",
        "--cyclic",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(summary(&out)["timetable"]["visits_objective"], "staleness");
    // nor can the sample's hosts table: its biggest hosts' Crawl-delays let a night visit fewer
    // pages than they have, whatever the budget
    let out = tmp.path().join("capped");
    let hosts = read_delays(Path::new("data"));
    assert!(!hosts.is_empty());
    run_ok(&[
        "run",
        "--bandwidth",
        "40000",
        "--timetable",
        "--cyclic",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = &summary(&out)["timetable"];
    assert_eq!(t["visits_objective"], "staleness");
    assert!(t["cost_harmonic"].is_null() && t["staleness_weak_politeness"].is_f64());
}

#[test]
fn hosts_at_their_cap_keep_their_last_visit_of_the_night() {
    // The sample at 2 visits per page: many hosts plan their full cap, with gaps of exactly their
    // delay. A fast crawler (10 fetches/s) must serve all of them: a host that slipped behind
    // another host's fetch by a fraction of a tick used to lose its last visit at the wrap-around.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        "--timetable",
        "--cyclic",
        "--bandwidth",
        "40000",
        "--crawler-rate",
        "10",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = summary(&out)["timetable"].clone();
    assert_eq!(t["visits_dropped"], 0, "{t}");
    assert_eq!(t["visits_dropped_at_wrap"], 0);
    // nor at the default crawler rate, two fetches per politeness delay at least: at the sample's
    // mean share (one fetch per 173 s against a 300 s Crawl-delay) a host at its cap slipped
    let default_rate = tmp.path().join("default-rate");
    run_ok(&[
        "run",
        "--timetable",
        "--cyclic",
        "-q",
        "--out",
        default_rate.to_str().unwrap(),
    ]);
    let d = summary(&default_rate)["timetable"].clone();
    assert_eq!(d["visits_dropped"], 0, "{d}");
    assert!((d["crawler_rate_per_s"].as_f64().unwrap() - 2.0 / 15.0).abs() < 1e-15);
    assert_eq!(t["visits_scheduled"], t["visits_planned"]);
    check_polite_and_paced(
        &read_visits(&out),
        &read_delays(std::path::Path::new("data")),
        10.0,
    );
}
