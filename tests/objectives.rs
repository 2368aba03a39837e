//! `revisit run --objective X` works for every objective on the shipped sample, with --floor and
//! --value-per-change: the job's rates equal the solver core's on the same input, spend the
//! bandwidth, respect every host's cap and every floor.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::*;
use revisit_core::objective::Objective;
use revisit_core::reduce::Alone;
use revisit_core::solve::{solve, PagesBuilder, Problem};
use revisit_core::units::{politeness_cap, Seconds};

#[test]
fn every_objective_runs_on_the_sample_and_equals_the_solver_core() {
    let tmp = tempfile::tempdir().unwrap();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let pages = read_pages(&data);
    let delays = read_delays(&data);
    let mut by_host: BTreeMap<String, Vec<(String, f64, f64, bool)>> = Default::default();
    for p in &pages {
        by_host
            .entry(p.1.clone())
            .or_default()
            .push((p.0.clone(), p.2, p.3, p.4));
    }
    let bandwidth = 0.2 * pages.len() as f64; // the default --bandwidth-fraction
    let cases: Vec<(Objective, f64, bool)> = vec![
        (Objective::BinaryFixed, 0.0, false),
        (Objective::BinaryFixed, 0.0, true),
        (Objective::BinaryDiscrete, 0.0, false),
        (Objective::HarmonicApprox, 0.0, false),
        (Objective::BinaryBlind, 0.0, false),
        (Objective::Uniform, 0.0, false),
        (Objective::ChangeRate, 0.0, false),
        (Objective::Importance, 0.0, false),
        (Objective::Binary, 0.4, false),
        (Objective::BinaryFixed, 0.4, false),
    ];
    for (k, &(objective, eps, value_per_change)) in cases.iter().enumerate() {
        let out = tmp.path().join(format!("{}-{k}", objective.name()));
        let floor_arg = format!("{eps}");
        let mut args = vec![
            "run",
            "--objective",
            objective.name(),
            "--floor",
            &floor_arg,
            "--out",
            out.to_str().unwrap(),
            "-w",
            "2",
            "-q",
        ];
        if value_per_change {
            args.push("--value-per-change");
        }
        run_ok(&args);
        let s = summary(&out);
        let rates = read_rates(&out);
        let hosts = read_hosts(&out);
        let case = format!(
            "{} floor {eps} value-per-change {value_per_change}",
            objective.name()
        );
        assert_eq!(s["objective"].as_str().unwrap(), objective.name());
        assert_eq!(
            s["cost_objective"].is_null(),
            !objective.is_exact(),
            "{case}"
        );

        // The same problem solved by the library alone.
        let mut b = PagesBuilder::new();
        let mut urls = Vec::new();
        for (host, members) in &by_host {
            let mut members = members.clone();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            let delay = delays.get(host).copied().unwrap_or(15.0);
            let mu = |m: &(String, f64, f64, bool)| if value_per_change { m.1 * m.2 } else { m.1 };
            b.push_host(
                politeness_cap(Seconds(delay)),
                members.iter().map(|m| (mu(m), m.2, m.3)),
            );
            urls.extend(members.into_iter().map(|m| m.0));
        }
        let arena = b.build().unwrap();
        let problem = Problem::new(&arena, objective, bandwidth)
            .unwrap()
            .with_floor(eps, pages.len() as u64)
            .unwrap();
        let sol =
            solve(&problem, &mut Alone, |_, _, _| {}).expect("an unbounded problem is feasible");
        let nu = s["multiplier"].as_f64().unwrap();
        assert!(
            (nu - sol.multiplier).abs() <= 1e-12 * sol.multiplier,
            "{case}: {nu} vs {}",
            sol.multiplier
        );
        let job: HashMap<&str, f64> = rates
            .iter()
            .map(|r| (r.url.as_str(), r.crawl_rate))
            .collect();
        let mut h = 0;
        for (i, url) in urls.iter().enumerate() {
            while !arena.host_pages(h).contains(&i) {
                h += 1;
            }
            let got = job.get(url.as_str()).copied().unwrap_or(0.0);
            let scale = sol.rates[i] + arena.change_rate()[i];
            assert!(
                (got - sol.rates[i]).abs() <= 1e-10 * scale,
                "{case} {url}: {got} vs {}",
                sol.rates[i]
            );
            let (lo, _) = problem.bounds(h, i);
            assert!(
                got >= lo * (1.0 - 1e-12),
                "{case} {url}: {got} under its floor {lo}"
            );
        }

        // Bandwidth and politeness from the output alone.
        let total: f64 = rates.iter().map(|r| r.crawl_rate).sum();
        assert!(
            (total - bandwidth).abs() <= 1e-12 * bandwidth,
            "{case}: {total}"
        );
        let mut per_host: HashMap<&str, f64> = HashMap::new();
        for r in &rates {
            *per_host.entry(&r.host).or_default() += r.crawl_rate;
        }
        for (host, row) in &hosts {
            let spent = per_host.get(host.as_str()).copied().unwrap_or(0.0);
            assert!(
                spent <= row.cap * (1.0 + 1e-9),
                "{case}: {host} above its cap"
            );
        }
        assert!(
            s["hosts_capped"].as_u64().unwrap() > 0,
            "{case}: the sample's big hosts should be capped"
        );
    }
}

#[test]
fn a_floor_of_one_or_more_is_refused_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let output = run(&[
        "run",
        "--objective",
        "binary",
        "--floor",
        "1",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--floor must be in [0, 1)"), "{stderr}");
}
