//! The README's main command, the unusable-bandwidth case, and the progress/summary a person reads.

mod common;

use arrow_array::cast::AsArray;
use common::*;

#[test]
fn the_readme_command_runs_on_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // `revisit run` with only --out differing from the README's command
    let o = run_ok(&["run", "--out", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("rows: 20,000 in"), "{text}");
    let progress = String::from_utf8_lossy(&o.stderr);
    assert!(
        progress.contains("round 1"),
        "progress on stderr: {progress}"
    );
    assert!(out.join("_SUCCESS").exists());
    let s = summary(&out);
    assert_eq!(s["rows_in"], 20000);
    assert!(
        s["hosts_capped"].as_u64().unwrap() > 0,
        "the sample's big hosts ask for 300 s"
    );
    assert!(s["rounds"].as_u64().unwrap() <= 8);
    // the rates sum to the bandwidth (none of it is unusable on the sample)
    assert_eq!(s["bandwidth_unusable"].as_f64().unwrap(), 0.0);
    assert!(s["bandwidth_relative_error"].as_f64().unwrap().abs() <= 1e-12);
    assert!(!text.contains("WARNING"), "{text}");
    // the wall clock's phases and the CPU's each add up to their total: every phase is measured
    // from the one before it ends
    for clock in ["seconds", "seconds_cpu"] {
        let phases = [
            "read", "exchange", "learn", "state", "solve", "value", "write",
        ];
        let seconds = |phase: &str| s[clock][phase].as_f64().unwrap();
        assert!(phases.iter().all(|p| seconds(p) >= 0.0), "{}", s[clock]);
        let sum: f64 = phases.iter().map(|p| seconds(p)).sum();
        assert!((sum - seconds("total")).abs() <= 1e-6, "{}", s[clock]);
        assert!(seconds("total") > 0.0, "{}", s[clock]);
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let listed: u64 = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["path"].as_str().unwrap().starts_with("rates/"))
        .map(|f| f["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(listed, s["rows_scheduled"].as_u64().unwrap());
    // the job file gives the same result as the flags (for the same night: the first run's, in
    // case midnight passed in between)
    let out2 = tmp.path().join("out2");
    run_ok(&[
        "run",
        "--job",
        "jobs/demo.toml",
        "--start",
        s["schedule"]["start"].as_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
        "-q",
    ]);
    assert!(table_contents(&out2) == table_contents(&out));
}

#[test]
fn bandwidth_beyond_the_caps_is_reported_unusable() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        "--bandwidth",
        "1e9",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let s = summary(&out);
    assert_eq!(s["multiplier"].as_f64().unwrap(), 0.0);
    let hosts = read_hosts(&out);
    let caps: f64 = hosts.values().map(|h| h.cap).sum();
    let used = s["bandwidth_used"].as_f64().unwrap();
    // harmonic, every host has pages whose changes are only seen by crawling: all at their caps
    assert!((used - caps).abs() <= 1e-9 * caps, "{used} vs {caps}");
    assert!(hosts
        .values()
        .all(|h| h.capped && (h.budget - h.cap).abs() <= 1e-9 * h.cap));
    // unusable is what the caps leave (not merely what the rates miss), and the rates miss nothing else
    let unusable = s["bandwidth_unusable"].as_f64().unwrap();
    assert!((unusable - (1e9 - caps)).abs() <= 1e-12 * 1e9);
    assert!(s["bandwidth_relative_error"].as_f64().unwrap().abs() <= 1e-12);
    let human = String::from_utf8_lossy(
        &run_ok(&[
            "run",
            "--bandwidth",
            "1e9",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .stdout,
    )
    .to_string();
    assert!(human.contains("unusable"), "{human}");
}

#[test]
fn the_hosts_table_is_in_name_order_whatever_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // names sharing long prefixes (www.siteN.example) and single-page hosts on every worker
    gen(&data, 30_000, 300, &["--single-page-hosts", "3000", "-q"]);
    let pages = data.join("pages");
    let mut tables = Vec::new();
    for workers in ["1", "3"] {
        let out = tmp.path().join(format!("out-w{workers}"));
        run_ok(&[
            "run",
            pages.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-w",
            workers,
            "-q",
        ]);
        let mut names = Vec::new();
        for b in read_parquet(&out.join("hosts/part-00000.parquet")) {
            let host = b.column_by_name("host").unwrap().as_string::<i32>().clone();
            names.extend(host.iter().map(|h| h.unwrap().to_owned()));
        }
        assert_eq!(names.len(), 3300);
        for pair in names.windows(2) {
            assert!(
                pair[0].as_bytes() < pair[1].as_bytes(),
                "{} before {}",
                pair[0],
                pair[1]
            );
        }
        tables.push(names);
    }
    assert_eq!(tables[0], tables[1]);
}

/// A host of more pages than the write phase sends in one slice (262,144) travels cut across
/// slices and batches: each of its URLs is written once, scheduled once and counted once, and the
/// tables are the same with 1 and 2 workers.
#[test]
fn a_host_larger_than_a_slice_is_written_and_counted_once() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // two Zipf hosts: two thirds of the URLs on the first
    let urls = 900_000;
    gen(&data, urls, 2, &[]);
    let pages = data.join("pages");
    let start = "2026-11-23T00:00:00Z";
    let mut contents = Vec::new();
    for workers in ["1", "2"] {
        let out = tmp.path().join(format!("w{workers}"));
        let args = [
            "run",
            pages.to_str().unwrap(),
            "--crawlers",
            "2",
            "--start",
            start,
            "--out",
            out.to_str().unwrap(),
            "-w",
            workers,
            "-q",
        ];
        run_ok(&args);
        let rates = read_rates(&out);
        let mut by_host = std::collections::HashMap::<&str, usize>::new();
        for r in &rates {
            *by_host.entry(r.host.as_str()).or_default() += 1;
        }
        let largest = by_host.values().copied().max().unwrap();
        assert!(
            largest > 2 * 262_144,
            "the largest host ({largest} pages) spans 3 slices"
        );
        let distinct: std::collections::HashSet<&str> =
            rates.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(
            (rates.len(), distinct.len()),
            (urls as usize, urls as usize)
        );
        // the summary's counts against the tables: every URL new, the due ones recounted
        let s = summary(&out);
        let schedule = read_schedule(&out);
        let night_end = revisit::time::parse_timestamp_us(start).unwrap()
            + (s["horizon_s"].as_f64().unwrap() * 1e6) as i64;
        let due = schedule.values().filter(|r| r.next_us < night_end).count();
        assert_eq!(s["schedule"]["urls_new"], urls, "w{workers}");
        assert_eq!(s["schedule"]["urls_due_tonight"], due as u64, "w{workers}");
        contents.push(table_contents(&out));
    }
    assert!(contents[0] == contents[1], "1 and 2 workers");
}

/// The summary says how evenly the workers hold the pages: with every page on one host, one
/// worker holds them all, the worker count times the mean, and it warns of it.
#[test]
fn the_summary_says_how_unevenly_one_host_weighs_on_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("pages/part-0.parquet");
    let urls: Vec<String> = (0..40)
        .map(|i| format!("https://one.example/{i}"))
        .collect();
    write_urls(&pages, &urls);
    for workers in [1, 2, 3] {
        let out = tmp.path().join(format!("w{workers}"));
        let w = workers.to_string();
        run_ok(&[
            "run",
            pages.parent().unwrap().to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-w",
            &w,
            "-q",
        ]);
        let s = summary(&out);
        assert_eq!(
            s["worker_pages_max_over_mean"].as_f64().unwrap(),
            workers as f64,
            "{workers} workers"
        );
        // past 1.5x the summary warns, and names the host
        let warned = s["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("one host alone has 40 pages"));
        assert_eq!(warned, workers > 1, "{workers} workers: {}", s["warnings"]);
    }
}

/// Hosts heavy in a sample of the input are placed by their size: two hosts of 30% of the pages
/// each, whose names an even split of the hash space puts on the same worker (80% of the pages
/// there with the long tail's half), land on different workers, and the tail evens the rest.
#[test]
fn heavy_hosts_are_spread_over_the_workers_by_their_size() {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    use revisit::job::keys::host_id;
    use revisit_core::balance::Routes;
    let even = Routes::even(2);
    let worker = |name: &str| even.worker_of(host_id(name.as_bytes()));
    let big: Vec<String> = (0..)
        .map(|i| format!("big{i}.example"))
        .filter(|name| worker(name) == 0)
        .take(2)
        .collect();
    let mut urls: Vec<String> = Vec::new();
    for name in &big {
        urls.extend((0..600).map(|i| format!("https://{name}/{i}")));
    }
    urls.extend((0..800).map(|i| format!("https://tail{i}.example/")));
    // in random order, as a crawl writes them
    urls.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(5));
    let tmp = tempfile::tempdir().unwrap();
    let pages = tmp.path().join("pages/part-0.parquet");
    write_urls(&pages, &urls);
    let out = tmp.path().join("out");
    let o = run_ok(&[
        "run",
        pages.parent().unwrap().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-w",
        "2",
    ]);
    let progress = String::from_utf8_lossy(&o.stderr);
    assert!(
        progress.contains("2 hosts placed on the workers by their size in a sample"),
        "{progress}"
    );
    // 600 pages and half of the tail's 800 (give or take its hashing) on each worker
    let ratio = summary(&out)["worker_pages_max_over_mean"]
        .as_f64()
        .unwrap();
    assert!(ratio < 1.1, "{ratio}");
}

/// Writes a page set of `urls`, each of importance 1 and 0.5 changes a day.
fn write_urls(path: &std::path::Path, urls: &[String]) {
    let urls: Vec<Option<&str>> = urls.iter().map(|u| Some(u.as_str())).collect();
    write_pages(
        path,
        vec![
            ("url", strings(&urls)),
            ("importance", floats(&vec![Some(1.0); urls.len()])),
            ("change_rate", floats(&vec![Some(0.5); urls.len()])),
        ],
    );
}

/// `bench-io`, the benchmarks' floor, copies every row of the pages and says the CPU it took
/// (`scripts/bench.sh` sets a run's CPU seconds against it).
#[test]
fn bench_io_copies_every_row_and_says_its_cpu_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 3000, 40, &[]);
    let copies = tmp.path().join("copies");
    let out = run_ok(&[
        "bench-io",
        data.join("pages").to_str().unwrap(),
        "--out",
        copies.to_str().unwrap(),
        "-w",
        "2",
    ]);
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m["rows"], 3000, "{m}");
    let cpu = m["cpu_seconds"].as_f64().expect("cpu_seconds");
    assert!(cpu > 0.0 && cpu.is_finite(), "{m}");
    let copied: usize = std::fs::read_dir(&copies)
        .unwrap()
        .map(|f| {
            read_parquet(&f.unwrap().path())
                .iter()
                .map(|b| b.num_rows())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(copied, 3000);
}
