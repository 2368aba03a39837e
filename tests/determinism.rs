//! The same input gives the same bytes with 1, 2 and 4 workers and with 2 processes; the distributed
//! job agrees with the solver core run on plain slices; politeness and the bandwidth hold.

mod common;

use std::collections::HashMap;

use common::*;
use revisit_core::objective::Objective;
use revisit_core::reduce::Alone;
use revisit_core::solve::{solve, PagesBuilder, Problem};
use revisit_core::units::{politeness_cap, Seconds};

/// The arguments of one run of these tests.
fn run_args(
    data: &std::path::Path,
    out: &std::path::Path,
    objective: &str,
    workers: &str,
) -> Vec<String> {
    let path = |p: std::path::PathBuf| p.to_str().unwrap().to_owned();
    let mut args = vec![
        "run".to_owned(),
        path(data.join("pages")),
        "--hosts".into(),
        path(data.join("hosts.parquet")),
    ];
    // both timetables, rolling and cyclic: the bytes must not depend on workers either way
    args.push("--timetable".into());
    if objective == "binary" {
        args.push("--cyclic".into());
    }
    for a in [
        "--objective",
        objective,
        "--bandwidth-fraction",
        "0.3",
        "--crawlers",
        "7",
        "--start",
        "2026-11-23T00:00:00Z",
        "--out",
    ] {
        args.push(a.to_owned());
    }
    args.extend([
        path(out.to_path_buf()),
        "-w".into(),
        workers.into(),
        "-q".into(),
    ]);
    args
}

fn run_into(data: &std::path::Path, out: &std::path::Path, objective: &str, workers: &str) {
    let args = run_args(data, out, objective, workers);
    run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn identical_bytes_across_workers_and_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(
        &data,
        30_000,
        150,
        &[
            "--shards",
            "5",
            "--row-group-rows",
            "2000",
            "--big-host-delay-s",
            "120",
        ],
    );
    for objective in ["harmonic", "binary"] {
        let reference_out = tmp.path().join(format!("{objective}-w1"));
        run_into(&data, &reference_out, objective, "1");
        let reference = table_contents(&reference_out);
        assert!(
            reference.len() >= 9,
            "rates for 7 crawlers, hosts and rejected"
        );
        if objective == "binary" {
            assert_eq!(
                reference
                    .keys()
                    .filter(|k| k.starts_with("visits/"))
                    .count(),
                7,
                "visits for 7 crawlers"
            );
        }
        for workers in ["2", "4"] {
            let out = tmp.path().join(format!("{objective}-w{workers}"));
            run_into(&data, &out, objective, workers);
            assert!(
                table_contents(&out) == reference,
                "{objective}: -w {workers} differs from -w 1"
            );
        }
        let out = tmp.path().join(format!("{objective}-n2"));
        let args = run_args(&data, &out, objective, "2");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let outputs = run_cluster(2, tmp.path(), &args, &[]);
        for o in &outputs {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        assert!(
            table_contents(&out) == reference,
            "{objective}: 2 processes differ from -w 1"
        );
        let s = summary(&out);
        assert_eq!(s["processes"], 2);
        assert_eq!(s["workers"], 2);
    }
}

#[test]
fn identical_bytes_when_arranged_in_parts() {
    // 30K rows arranged with 80 KB of sort keys and places at once (36 bytes a row): on 2 workers
    // the senders cut their batches into 8 parts (15K rows a worker); on 1 worker, 16 parts sent.
    // With 3000 bytes at once on 4 workers (7.5K rows a worker) the senders cut 16 parts, more
    // than keep a reader's batches to 32 but none larger than 8 x 3000 bytes for an even share;
    // the worker that receives 11.4K rows splits each further, into 256.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(
        &data,
        30_000,
        150,
        &["--shards", "3", "--big-host-delay-s", "120"],
    );
    let reference_out = tmp.path().join("whole");
    run_into(&data, &reference_out, "harmonic", "2");
    let reference = table_contents(&reference_out);
    let parts = [("REVISIT_ARRANGE_PART_BYTES", "80000")];
    for (workers, bytes) in [("1", "80000"), ("2", "80000"), ("4", "3000")] {
        let out = tmp.path().join(format!("parts-w{workers}"));
        let args = run_args(&data, &out, "harmonic", workers);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut c = command(&args);
        c.env("REVISIT_ARRANGE_PART_BYTES", bytes);
        let o = wait(c.spawn().unwrap(), TIMEOUT);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            table_contents(&out) == reference,
            "-w {workers} in parts differs from the whole"
        );
    }
    let out = tmp.path().join("parts-n2");
    let args = run_args(&data, &out, "harmonic", "1");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for o in run_cluster(2, tmp.path(), &args, &parts) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(
        table_contents(&out) == reference,
        "2 processes in parts differ from the whole"
    );
}

#[test]
fn the_job_equals_the_solver_core_and_is_polite() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(
        &data,
        20_000,
        60,
        &[
            "--shards",
            "3",
            "--row-group-rows",
            "1500",
            "--big-host-delay-s",
            "300",
        ],
    );
    for objective in [Objective::Harmonic, Objective::Binary] {
        let out = tmp.path().join(objective.name());
        run_into(&data, &out, objective.name(), "3");
        let rates = read_rates(&out);
        let hosts = read_hosts(&out);
        let s = summary(&out);

        // Rebuild the problem from the input with the library alone, one host at a time.
        let pages = read_pages(&data);
        let delays = read_delays(&data);
        let mut by_host: std::collections::BTreeMap<String, Vec<(String, f64, f64, bool)>> =
            Default::default();
        for p in pages {
            by_host
                .entry(p.1.clone())
                .or_default()
                .push((p.0, p.2, p.3, p.4));
        }
        let mut b = PagesBuilder::new();
        let mut urls = Vec::new();
        for (host, mut members) in by_host {
            members.sort_by(|a, b| a.0.cmp(&b.0));
            let delay = delays.get(&host).copied().unwrap_or(15.0);
            b.push_host(
                politeness_cap(Seconds(delay)),
                members.iter().map(|m| (m.1, m.2, m.3)),
            );
            urls.extend(members.into_iter().map(|m| m.0));
        }
        let pages = b.build().unwrap();
        let bandwidth = 0.3 * 20_000.0;
        let problem = Problem::new(&pages, objective, bandwidth).unwrap();
        let sol =
            solve(&problem, &mut Alone, |_, _, _| {}).expect("an unbounded problem is feasible");
        // The job orders a host's pages by URL hash, this rebuild by URL: per-host sums may round
        // differently in the last bit, so the multipliers agree to a few ulps rather than bitwise.
        let nu = s["multiplier"].as_f64().unwrap();
        assert!(
            (nu - sol.multiplier).abs() <= 1e-14 * sol.multiplier,
            "{objective:?}: {nu} vs {}",
            sol.multiplier
        );
        let job: HashMap<&str, f64> = rates
            .iter()
            .map(|r| (r.url.as_str(), r.crawl_rate))
            .collect();
        let mut scheduled = 0;
        for (i, url) in urls.iter().enumerate() {
            let got = job.get(url.as_str()).copied().unwrap_or(0.0);
            // A few ulps of the multiplier move sqrt(mu lambda/theta) - lambda by ulps of
            // rate + lambda (binary), so that is the scale of agreement.
            let scale = sol.rates[i] + pages.change_rate()[i];
            assert!(
                (got - sol.rates[i]).abs() <= 1e-13 * scale,
                "{url}: {got} vs {}",
                sol.rates[i]
            );
            scheduled += (got > 0.0) as u64;
        }
        assert_eq!(s["rows_scheduled"].as_u64().unwrap(), scheduled);

        // Bandwidth and politeness, from the output alone.
        let total: f64 = rates.iter().map(|r| r.crawl_rate).sum();
        assert!((total - bandwidth).abs() <= 1e-12 * bandwidth, "{total}");
        let mut per_host: HashMap<&str, f64> = HashMap::new();
        for r in &rates {
            *per_host.entry(&r.host).or_default() += r.crawl_rate;
            assert_eq!(
                r.crawler as i32, hosts[&r.host].crawler,
                "a host lives on one crawler"
            );
            assert_eq!(r.host_capped, hosts[&r.host].capped);
        }
        let mut capped = 0;
        for (host, h) in &hosts {
            let spent = per_host.get(host.as_str()).copied().unwrap_or(0.0);
            assert!(spent <= h.cap * (1.0 + 1e-9), "{host} above its cap");
            assert!(
                (spent - h.budget).abs() <= 1e-9 * h.cap,
                "{host}: budget column"
            );
            if h.capped {
                capped += 1;
                assert!(
                    (spent - h.cap).abs() <= 1e-9 * h.cap,
                    "{host}: capped hosts spend their cap"
                );
                assert!(h.multiplier >= sol.multiplier);
            }
        }
        assert!(capped > 0, "the instance should have binding caps");
        assert_eq!(s["hosts_capped"].as_u64().unwrap(), capped);
    }
}
