//! `revisit evaluate --fetch-time`: the figures of Liu & Nain §1.3 for a rates table, checked
//! against the chapter's printed formulas evaluated here straight from the pages and rates, and
//! against a Monte Carlo simulation of one crawler fetching back to back.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use common::*;
use parquet::arrow::ArrowWriter;
use rand::{rngs::StdRng, Rng, SeedableRng};

const SECONDS_PER_DAY: f64 = 86_400.0;

/// A tiny page set: (url, change rate per day, crawl rate per day or None for no rates row).
/// One page never changes but is crawled (wasted fetches), one changes and has no rate.
const PAGES: [(&str, f64, Option<f64>); 8] = [
    ("http://a.example/1", 0.5, Some(1.0)),
    ("http://a.example/2", 2.0, Some(4.0)),
    ("http://a.example/3", 6.0, Some(10.0)),
    ("http://a.example/4", 12.0, Some(2.0)),
    ("http://b.example/1", 24.0, Some(30.0)),
    ("http://b.example/2", 0.0, Some(5.0)),
    ("http://b.example/3", 3.0, None),
    ("http://b.example/4", 48.0, Some(20.0)),
];

/// One fetch takes an hour on average: with these change rates μ_i E[X] spans 0.02..2, where
/// randomized accessing, the bound and the optima differ clearly.
const MEAN_FETCH_S: f64 = 3600.0;

/// Measured durations of the empirical case (mean 3600 s, skewed).
const MEASURED_S: [f64; 6] = [600.0, 900.0, 1800.0, 2700.0, 4500.0, 11100.0];

fn write_inputs(dir: &Path) -> (String, String) {
    let urls: Vec<&str> = PAGES.iter().map(|p| p.0).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("url", Arc::new(StringArray::from(urls))),
        (
            "importance",
            Arc::new(Float64Array::from(vec![1.0; PAGES.len()])),
        ),
        (
            "change_rate",
            Arc::new(Float64Array::from(
                PAGES.iter().map(|p| p.1).collect::<Vec<_>>(),
            )),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let pages = dir.join("pages.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&pages).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let mut csv = String::from("url,crawl_rate\n");
    for (url, _, rate) in PAGES {
        if let Some(r) = rate {
            csv += &format!("{url},{r}\n");
        }
    }
    let rates = dir.join("rates.csv");
    std::fs::write(&rates, csv).unwrap();
    (
        pages.to_str().unwrap().to_owned(),
        rates.to_str().unwrap().to_owned(),
    )
}

fn evaluate(pages: &str, rates: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["evaluate", pages, "--rates", rates, "--json", "-q"];
    args.extend(extra);
    serde_json::from_slice(&run_ok(&args).stdout).unwrap()
}

/// The fetch-time laws of the tests, with h(μ) = E[e^{−μX}] written out per law.
enum Law {
    Constant(f64),
    Exponential(f64),
    Empirical(Vec<f64>),
}

impl Law {
    fn h(&self, mu: f64) -> f64 {
        match self {
            Law::Constant(d) => (-mu * d).exp(),
            Law::Exponential(m) => 1.0 / (1.0 + mu * m),
            Law::Empirical(xs) => xs.iter().map(|x| (-mu * x).exp()).sum::<f64>() / xs.len() as f64,
        }
    }
    fn mean(&self) -> f64 {
        match self {
            Law::Constant(d) => *d,
            Law::Exponential(m) => *m,
            Law::Empirical(xs) => xs.iter().sum::<f64>() / xs.len() as f64,
        }
    }
    fn sample(&self, rng: &mut StdRng) -> f64 {
        match self {
            Law::Constant(d) => *d,
            Law::Exponential(m) => -m * (1.0 - rng.random::<f64>()).ln(),
            Law::Empirical(xs) => xs[rng.random_range(0..xs.len())],
        }
    }
}

/// Lemma 4 as printed: r = (E[X] − f/μ + (f/μ)·f h/(1 − h + f h))/E[X].
fn lemma_4(mu: f64, f: f64, h: f64, ex: f64) -> f64 {
    (ex - f / mu + (f / mu) * f * h / (1.0 - h + f * h)) / ex
}

/// Prop. 9 as printed: r >= (E[X] − f/μ + (f/μ) h^{1/f})/E[X].
fn prop_9(mu: f64, f: f64, h: f64, ex: f64) -> f64 {
    (ex - f / mu + (f / mu) * h.powf(1.0 / f)) / ex
}

/// Per-URL mean and change-weighted mean of per-page obsolescence `r(page index, μ)`; pages that
/// never change are never obsolete.
fn averages(r: impl Fn(usize, f64) -> f64) -> (f64, f64) {
    let (mut sum, mut weighted, mut total) = (0.0, 0.0, 0.0);
    for (k, &(_, lambda, _)) in PAGES.iter().enumerate() {
        let mu = lambda / SECONDS_PER_DAY;
        if mu > 0.0 {
            let rk = r(k, mu);
            sum += rk;
            weighted += mu * rk;
            total += mu;
        }
    }
    (sum / PAGES.len() as f64, weighted / total)
}

/// The table's shares f_i = ρ_i / Σρ.
fn shares() -> Vec<f64> {
    let total: f64 = PAGES.iter().filter_map(|p| p.2).sum();
    PAGES.iter().map(|p| p.2.unwrap_or(0.0) / total).collect()
}

fn assert_close(report: &serde_json::Value, key: &str, want: (f64, f64), what: &str) {
    for (field, w) in [("per_url", want.0), ("change_weighted", want.1)] {
        let got = report[key][field]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: {key}.{field} missing"));
        assert!(
            (got - w).abs() <= 1e-9 * w.abs().max(1e-3),
            "{what}: {key}.{field} = {got}, expected {w}"
        );
    }
}

#[test]
fn figures_are_the_chapters_formulas_on_the_tables_shares() {
    let tmp = tempfile::tempdir().unwrap();
    let (pages, rates) = write_inputs(tmp.path());
    let measured = tmp.path().join("measured.csv");
    let mut csv = String::from("host,fetch_time_s\n");
    for x in MEASURED_S {
        csv += &format!("a.example,{x}\n");
    }
    std::fs::write(&measured, csv).unwrap();
    let cases = [
        (
            format!("const:{MEAN_FETCH_S}"),
            Law::Constant(MEAN_FETCH_S),
            "constant",
        ),
        (
            format!("exp:{MEAN_FETCH_S}"),
            Law::Exponential(MEAN_FETCH_S),
            "exponential",
        ),
        (
            measured.to_str().unwrap().to_owned(),
            Law::Empirical(MEASURED_S.to_vec()),
            "empirical",
        ),
    ];
    let f = shares();
    let table_rate: f64 = PAGES.iter().filter_map(|p| p.2).sum();
    for (spec, law, name) in cases {
        let report = evaluate(&pages, &rates, &["--fetch-time", &spec]);
        let ft = &report["fetch_time"];
        assert_eq!(ft["law"], name);
        let ex = law.mean();
        assert!((ft["mean_fetch_s"].as_f64().unwrap() - ex).abs() < 1e-9);
        assert!((ft["throughput_per_day"].as_f64().unwrap() - SECONDS_PER_DAY / ex).abs() < 1e-9);
        assert!((ft["table_rate_per_day"].as_f64().unwrap() - table_rate).abs() < 1e-12);
        assert_eq!(ft["pages_changing"], 7, "{name}");
        assert_eq!(ft["pages_without_rate"], 1, "{name}");

        // The table's shares; the page without a rate is out of date all the time.
        let at = |rule: fn(f64, f64, f64, f64) -> f64| {
            averages(|k, mu| {
                if f[k] > 0.0 {
                    rule(mu, f[k], law.h(mu), ex)
                } else {
                    1.0
                }
            })
        };
        assert_close(ft, "randomized", at(lemma_4), name);
        assert_close(ft, "lower_bound", at(prop_9), name);

        // Eq. 1.30: shares ∝ ln(1/h_i) over the changing pages, valued by Prop. 9.
        let mus: Vec<f64> = PAGES.iter().map(|p| p.1 / SECONDS_PER_DAY).collect();
        let ln_sum: f64 = mus
            .iter()
            .filter(|&&m| m > 0.0)
            .map(|&m| -law.h(m).ln())
            .sum();
        let optimal = averages(|_, mu| prop_9(mu, -law.h(mu).ln() / ln_sum, law.h(mu), ex));
        assert_close(ft, "optimal_bound", optimal, name);
        // Eq. 1.26 (per unit of c0 μ): (μ − 1/E[X] + Π h_i / E[X]) / μ.
        let mu_total: f64 = mus.iter().sum();
        let product: f64 = mus.iter().map(|&m| law.h(m)).product();
        let eq126 = (mu_total - 1.0 / ex + product / ex) / mu_total;
        let got = ft["optimal_bound_eq126"].as_f64().unwrap();
        assert!(
            (got - eq126).abs() <= 1e-9 * eq126,
            "{name}: eq. 1.26 {got} vs {eq126}"
        );
        // Eq. 1.31: shares ∝ 1/h_i − 1, valued by Lemma 4; and its closed form for the cost.
        let g_sum: f64 = mus
            .iter()
            .filter(|&&m| m > 0.0)
            .map(|&m| 1.0 / law.h(m) - 1.0)
            .sum();
        let best = averages(|_, mu| {
            let h = law.h(mu);
            lemma_4(mu, (1.0 / h - 1.0) / g_sum, h, ex)
        });
        assert_close(ft, "randomized_optimal", best, name);
        let eq131 = (mu_total - g_sum / (ex * (1.0 + g_sum))) / mu_total;
        assert!((best.1 - eq131).abs() < 1e-12, "eq. 1.31 closed form");

        // Orders the chapter proves: bound <= randomized, optimum <= bound at the table's shares,
        // best randomized between the two optima.
        let w = |k: &str| ft[k]["change_weighted"].as_f64().unwrap();
        assert!(w("lower_bound") < w("randomized"), "{name}");
        assert!(w("optimal_bound") < w("lower_bound"), "{name}");
        assert!(w("optimal_bound") < w("randomized_optimal"), "{name}");
        assert!(w("randomized_optimal") < w("randomized"), "{name}");
    }
    // Without the flag there is no fetch-time block.
    let report = evaluate(&pages, &rates, &[]);
    assert!(report["fetch_time"].is_null());
    // The human report shows the block.
    let out = run_ok(&[
        "evaluate",
        &pages,
        "--rates",
        &rates,
        "-q",
        "--fetch-time",
        "exp:3600",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Lemma 4") && text.contains("1 of 7 changing pages have no rate"),
        "{text}"
    );
}

/// Simulates one crawler fetching back to back for `fetches` fetches: each fetch picks page i
/// with probability f_i and takes a time drawn from `law`; page i changes as a Poisson process
/// of rate μ_i. Returns each page's share of time out of date after a warm-up.
fn simulate(law: &Law, mus: &[f64], f: &[f64], fetches: usize, rng: &mut StdRng) -> Vec<f64> {
    let exp = |rate: f64, rng: &mut StdRng| -(1.0 - rng.random::<f64>()).ln() / rate;
    let cumulative: Vec<f64> = f
        .iter()
        .scan(0.0, |acc, &x| {
            *acc += x;
            Some(*acc)
        })
        .collect();
    // First change after each page's last fetch (memoryless, so redrawn at every fetch).
    let mut first_change: Vec<f64> = mus
        .iter()
        .map(|&m| if m > 0.0 { exp(m, rng) } else { f64::INFINITY })
        .collect();
    let mut obsolete = vec![0.0; mus.len()];
    let warm_up_fetches = fetches / 10;
    // Nothing is counted before the warm-up ends (infinitely far until then).
    let mut warm_up_end = f64::INFINITY;
    let mut now = 0.0;
    // Obsolete time of [from, to] counted only after the warm-up.
    let count = |from: f64, to: f64, start: f64| (to - from.max(start)).max(0.0);
    for n in 0..fetches {
        if n == warm_up_fetches {
            warm_up_end = now;
        }
        let u: f64 = rng.random::<f64>() * cumulative[cumulative.len() - 1];
        let page = cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(f.len() - 1);
        now += law.sample(rng);
        if first_change[page] < now {
            obsolete[page] += count(first_change[page], now, warm_up_end);
        }
        if mus[page] > 0.0 {
            first_change[page] = now + exp(mus[page], rng);
        }
    }
    // Close every page's open interval (never-fetched pages: from their first change on).
    for (k, o) in obsolete.iter_mut().enumerate() {
        if first_change[k] < now {
            *o += count(first_change[k], now, warm_up_end);
        }
    }
    obsolete.iter().map(|o| o / (now - warm_up_end)).collect()
}

#[test]
fn a_simulated_crawler_agrees_with_lemma_4() {
    let tmp = tempfile::tempdir().unwrap();
    let (pages, rates) = write_inputs(tmp.path());
    let f = shares();
    let mus: Vec<f64> = PAGES.iter().map(|p| p.1 / SECONDS_PER_DAY).collect();
    let mu_total: f64 = mus.iter().sum();
    let measured = tmp.path().join("measured.csv");
    let column: Vec<String> = MEASURED_S.iter().map(|x| x.to_string()).collect();
    std::fs::write(&measured, format!("seconds\n{}\n", column.join("\n"))).unwrap();
    for (spec, law) in [
        (
            format!("exp:{MEAN_FETCH_S}"),
            Law::Exponential(MEAN_FETCH_S),
        ),
        (format!("const:{MEAN_FETCH_S}"), Law::Constant(MEAN_FETCH_S)),
        (
            measured.to_str().unwrap().to_owned(),
            Law::Empirical(MEASURED_S.to_vec()),
        ),
    ] {
        let report = evaluate(&pages, &rates, &["--fetch-time", &spec]);
        let ft = &report["fetch_time"];
        // Independent replications, fixed seeds: the outcome is deterministic.
        const RUNS: usize = 20;
        const FETCHES: usize = 100_000;
        let runs: Vec<(f64, f64)> = (0..RUNS)
            .map(|s| {
                let r = simulate(
                    &law,
                    &mus,
                    &f,
                    FETCHES,
                    &mut StdRng::seed_from_u64(1000 + s as u64),
                );
                let per_url = r.iter().sum::<f64>() / r.len() as f64;
                let weighted = r.iter().zip(&mus).map(|(r, m)| r * m).sum::<f64>() / mu_total;
                (per_url, weighted)
            })
            .collect();
        for (field, pick) in [
            ("per_url", (|x: &(f64, f64)| x.0) as fn(&(f64, f64)) -> f64),
            ("change_weighted", |x: &(f64, f64)| x.1),
        ] {
            let xs: Vec<f64> = runs.iter().map(pick).collect();
            let mean = xs.iter().sum::<f64>() / RUNS as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (RUNS - 1) as f64;
            let se = (var / RUNS as f64).sqrt();
            let lemma = ft["randomized"][field].as_f64().unwrap();
            let bound = ft["lower_bound"][field].as_f64().unwrap();
            eprintln!("{spec} {field}: simulated {mean:.5} ± {:.5} (4 se), Lemma 4 {lemma:.5}, Prop. 9 {bound:.5}", 4.0 * se);
            // 4 standard errors: about 1 in 15,000 by chance.
            assert!(
                (mean - lemma).abs() <= 4.0 * se,
                "{spec} {field}: simulated {mean} ± {}, Lemma 4 {lemma}",
                4.0 * se
            );
            // Power: the simulation tells randomized accessing from the even-spacing bound.
            assert!(
                mean - bound > 8.0 * se,
                "{spec} {field}: simulated {mean}, bound {bound}, se {se}"
            );
        }
    }
}

#[test]
fn two_workers_give_the_same_report_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 3000, 40, &[]);
    let pages = data.join("pages");
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        pages.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let rates = out.join("rates");
    let one = |w: &str| {
        let r = evaluate(
            pages.to_str().unwrap(),
            rates.to_str().unwrap(),
            &["--fetch-time", "exp:0.5", "-w", w],
        );
        without_run(r)
    };
    let (a, b) = (one("1"), one("2"));
    assert!(a["fetch_time"]["randomized"]["per_url"].as_f64().is_some());
    assert_eq!(a["fetch_time"], b["fetch_time"]);
    assert_eq!(a, b);
}

#[test]
fn a_bad_fetch_time_spec_is_refused_with_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let (pages, rates) = write_inputs(tmp.path());
    let bad_row = tmp.path().join("durations.csv");
    std::fs::write(&bad_row, "fetch_time_s\n0.5\nslow\n").unwrap();
    let two_columns = tmp.path().join("two.csv");
    std::fs::write(&two_columns, "a,b\n1,2\n").unwrap();
    let cases: [(&str, &[&str]); 5] = [
        ("const:abc", &["const:abc", "not a number of seconds"]),
        ("exp:-1", &["exp:-1", "> 0"]),
        (
            "/no/such/durations.parquet",
            &["no such file", "const:SECONDS"],
        ),
        (
            bad_row.to_str().unwrap(),
            &["durations.csv", "row 1", "column fetch_time_s", "'slow'"],
        ),
        (
            two_columns.to_str().unwrap(),
            &["two.csv", "fetch_time_s", "a, b"],
        ),
    ];
    for (spec, needles) in cases {
        let o = run(&["evaluate", &pages, "--rates", &rates, "--fetch-time", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "{spec}: '{n}' not in {err}");
        }
    }
}
