//! `revisit sweep` end to end: every point equals an independent `revisit run` at the same bandwidth,
//! the table is complete and the same with 1 and 2 workers, and the files read back.

mod common;

use arrow_array::{Array, BooleanArray, Float64Array, StringArray};
use common::*;

/// The CSV rows as (policy, polite, fraction, cost_harmonic, cost_binary, freshness_poisson).
fn csv_points(out: &std::path::Path) -> Vec<(String, bool, f64, Option<f64>, f64, f64)> {
    let text = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (p, pol, f, h, b, fr) = (
        col("policy"),
        col("polite"),
        col("bandwidth_fraction"),
        col("cost_harmonic"),
        col("cost_binary"),
        col("freshness_poisson"),
    );
    lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (
                c[p].to_owned(),
                c[pol] == "true",
                c[f].parse().unwrap(),
                c[h].parse().ok(),
                c[b].parse().unwrap(),
                c[fr].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_point_equals_a_run_at_the_same_bandwidth() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 3000, 40, &["--big-host-delay-s", "300"]);
    let pages = data.join("pages");
    let hosts = data.join("hosts.parquet");
    let out = tmp.path().join("sweep");
    let o = run_ok(&[
        "sweep",
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--policies",
        "harmonic,binary,uniform",
        "--from",
        "0.05",
        "--to",
        "0.8",
        "--points",
        "4",
        "--out",
        out.to_str().unwrap(),
        "-w",
        "2",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("harmonic polite") && text.contains("price"),
        "{text}"
    );
    let points = csv_points(&out);
    assert_eq!(points.len(), 3 * 4 * 2);
    assert!(out.join("sweep.svg").exists() && out.join("_SUCCESS").exists());

    // Independent check: a cold `run` (its own read, solve and cost code) at each polite point.
    for (policy, polite, fraction, harmonic, binary, _) in points.iter().filter(|p| p.1) {
        assert!(polite);
        let run_out = tmp.path().join(format!("run-{policy}-{fraction}"));
        let f = fraction.to_string();
        run_ok(&[
            "run",
            pages.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--objective",
            policy,
            "--bandwidth-fraction",
            &f,
            "--out",
            run_out.to_str().unwrap(),
            "-q",
        ]);
        let s = summary(&run_out);
        let run_binary = s["cost_binary"].as_f64().unwrap();
        assert!(
            (run_binary - binary).abs() <= 1e-10 * binary,
            "{policy} at {fraction}: sweep J_b {binary}, run {run_binary}"
        );
        match (harmonic, s["cost_harmonic"].as_f64()) {
            (Some(a), Some(b)) => assert!((a - b).abs() <= 1e-10 * b, "{policy}: {a} vs {b}"),
            (None, None) => {}
            other => panic!("{policy} at {fraction}: harmonic {other:?}"),
        }
    }

    // Politeness only costs: each policy's own objective is no better with caps than without.
    for (policy, _, fraction, harmonic, binary, _) in points.iter().filter(|p| p.1) {
        let free = points
            .iter()
            .find(|q| &q.0 == policy && !q.1 && q.2 == *fraction)
            .unwrap();
        match policy.as_str() {
            "harmonic" => assert!(harmonic.unwrap() >= free.3.unwrap() * (1.0 - 1e-12)),
            "binary" => assert!(*binary >= free.4 * (1.0 - 1e-12)),
            _ => {}
        }
    }

    // The Parquet table holds the same points, typed.
    let batches = read_parquet(&out.join("sweep.parquet"));
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, points.len());
    let b = &batches[0];
    let policy = b
        .column_by_name("policy")
        .unwrap()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    let polite = b
        .column_by_name("polite")
        .unwrap()
        .as_any()
        .downcast_ref::<BooleanArray>()
        .unwrap();
    let binary = b
        .column_by_name("cost_binary")
        .unwrap()
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    for (i, p) in points.iter().enumerate().take(policy.len()) {
        assert_eq!(policy.value(i), p.0);
        assert_eq!(polite.value(i), p.1);
        assert_eq!(binary.value(i), p.4);
    }

    // One worker gives the same table, to the bit.
    let out1 = tmp.path().join("sweep1");
    run_ok(&[
        "sweep",
        pages.to_str().unwrap(),
        "--hosts",
        hosts.to_str().unwrap(),
        "--policies",
        "harmonic,binary,uniform",
        "--from",
        "0.05",
        "--to",
        "0.8",
        "--points",
        "4",
        "--out",
        out1.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(
        std::fs::read(out.join("sweep.csv")).unwrap(),
        std::fs::read(out1.join("sweep.csv")).unwrap()
    );
}

#[test]
fn bad_sweep_ranges_are_refused_before_any_work() {
    for args in [
        &["sweep", "--from", "0.5", "--to", "0.1"][..],
        &["sweep", "--from", "0", "--to", "1"],
        &["sweep", "--points", "1"],
        &["sweep", "--floor", "1"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("error:") && !err.contains("panicked"), "{err}");
    }
}
