//! NeurIPS'19 experiment 1 in small (Kolobov et al. §7, Fig. 1): 20,000 synthetic URLs, bandwidth
//! 20% of the URLs, 4% with complete change observations. The orderings the paper reports hold when
//! the complete-observation URLs are the important ones, and LC's J_b advantage over BLC is gone when
//! they are a random 4%; BLC as the paper ran it (`binary-blind`) is checked against `binary` on the
//! same pages with their observations erased.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use common::*;

const URLS: u64 = 20_000;
const HOSTS: u64 = 200;
/// The generator's default Pareto shape of importance and share of complete observations.
const IMPORTANCE_SHAPE: f64 = 1.2;
const COMPLETE_SHARE: f64 = 0.04;

/// A page as the policy costs see it: importance, change rate, complete observations, crawl rate.
struct Valued {
    mu: f64,
    lambda: f64,
    complete: bool,
    rho: f64,
}

/// Binary staleness J_b of one page (NeurIPS'19 supplement eqs. 12 and 13): Poisson crawls leave a
/// page stale lambda / (lambda + rho) of the time; with every change notified, a crawl rate rho is a
/// probability p = rho / lambda of fetching after a change and the page is stale 1 - p of the time.
fn binary_staleness(p: &Valued) -> f64 {
    if p.lambda == 0.0 {
        0.0
    } else if p.complete {
        p.mu * (1.0 - (p.rho / p.lambda).min(1.0))
    } else {
        p.mu * p.lambda / (p.lambda + p.rho)
    }
}

/// Harmonic staleness J_h of one page (NeurIPS'19 Props. 1 and 4): mu ln(1 + lambda / rho) with
/// crawls alone, -mu ln p with notifications; infinite for a changing page never crawled.
fn harmonic_staleness(p: &Valued) -> f64 {
    if p.lambda == 0.0 {
        0.0
    } else if p.complete {
        -p.mu * (p.rho / p.lambda).min(1.0).ln()
    } else {
        p.mu * (p.lambda / p.rho).ln_1p()
    }
}

/// (J_h, J_b) per URL of a run's rates on the pages of `data` (a page without a row has rate 0),
/// valued here from the input pages and the rates rows alone.
fn costs(data: &Path, out: &Path) -> (f64, f64) {
    let rates: HashMap<String, f64> = read_rates(out)
        .into_iter()
        .map(|r| (r.url, r.crawl_rate))
        .collect();
    let pages: Vec<Valued> = read_pages(data)
        .into_iter()
        .map(|(url, _, mu, lambda, complete)| Valued {
            rho: rates.get(&url).copied().unwrap_or(0.0),
            mu,
            lambda,
            complete,
        })
        .collect();
    assert_eq!(pages.len() as u64, URLS);
    let n = pages.len() as f64;
    (
        pages.iter().map(harmonic_staleness).sum::<f64>() / n,
        pages.iter().map(binary_staleness).sum::<f64>() / n,
    )
}

fn run_policy(data: &Path, out: &Path, objective: &str, extra: &[&str]) -> (f64, f64) {
    let pages = data.join("pages");
    let mut args = vec![
        "run",
        pages.to_str().unwrap(),
        "--objective",
        objective,
        "--bandwidth-fraction",
        "0.2",
        "--out",
        out.to_str().unwrap(),
        "-w",
        "2",
        "-q",
    ];
    args.extend(extra);
    run_ok(&args);
    costs(data, out)
}

/// The page set of `data` with every `complete_obs` set to false, written to `dest`.
fn erase_observations(data: &Path, dest: &Path) {
    std::fs::create_dir_all(dest.join("pages")).unwrap();
    for file in std::fs::read_dir(data.join("pages")).unwrap() {
        let path = file.unwrap().path();
        let batches = read_parquet(&path);
        let schema = batches[0].schema();
        let at = schema.index_of("complete_obs").unwrap();
        let out =
            std::fs::File::create(dest.join("pages").join(path.file_name().unwrap())).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(out, schema.clone(), None).unwrap();
        for b in batches {
            let mut columns = b.columns().to_vec();
            columns[at] = Arc::new(BooleanArray::from(vec![false; b.num_rows()]));
            w.write(&RecordBatch::try_new(schema.clone(), columns).unwrap())
                .unwrap();
        }
        w.close().unwrap();
    }
}

#[test]
fn complete_by_importance_marks_the_top_share_of_the_importance_law() {
    let tmp = tempfile::tempdir().unwrap();
    let (random, important) = (tmp.path().join("random"), tmp.path().join("important"));
    gen(&random, URLS, HOSTS, &[]);
    gen(&important, URLS, HOSTS, &["--complete-by", "importance"]);
    let (a, b) = (read_pages(&random), read_pages(&important));
    assert_eq!(a.len(), b.len());
    // P(X > x) = x^-shape for Pareto(1, shape)
    let threshold = COMPLETE_SHARE.powf(-1.0 / IMPORTANCE_SHAPE);
    let mut marked = 0u64;
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            (&x.0, &x.1, x.2, x.3),
            (&y.0, &y.1, y.2, y.3),
            "only complete_obs differs"
        );
        assert_eq!(y.4, y.2 > threshold, "{}: importance {}", y.0, y.2);
        marked += y.4 as u64;
    }
    // a binomial count: within 4 standard deviations of the share
    let (n, p) = (URLS as f64, COMPLETE_SHARE);
    let sd = (n * p * (1.0 - p)).sqrt();
    assert!(
        (marked as f64 - n * p).abs() <= 4.0 * sd,
        "{marked} of {URLS} marked"
    );
    let random_marked = a.iter().filter(|r| r.4).count() as f64;
    assert!((random_marked - n * p).abs() <= 4.0 * sd);
}

#[test]
fn binary_blind_is_binary_on_pages_without_observations_valued_on_the_true_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, URLS, HOSTS, &["--complete-by", "importance"]);
    let erased = tmp.path().join("erased");
    erase_observations(&data, &erased);

    let blind_out = tmp.path().join("blind");
    let (_, blind_jb) = run_policy(&data, &blind_out, "binary-blind", &[]);
    let erased_out = tmp.path().join("erased-out");
    run_policy(&erased, &erased_out, "binary", &[]);
    let by_url: HashMap<String, f64> = read_rates(&erased_out)
        .into_iter()
        .map(|r| (r.url, r.crawl_rate))
        .collect();
    let blind = read_rates(&blind_out);
    assert_eq!(blind.len(), by_url.len());
    assert!(blind.iter().filter(|r| r.complete_obs).count() > 500);
    for r in &blind {
        assert_eq!(Some(&r.crawl_rate), by_url.get(&r.url), "{}", r.url);
    }

    // `evaluate` and `sweep` value the blind rates as the test does, on the true observations.
    let pages = data.join("pages");
    let rates = blind_out.join("rates");
    let o = run_ok(&[
        "evaluate",
        pages.to_str().unwrap(),
        "--rates",
        rates.to_str().unwrap(),
        "--json",
        "-q",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let evaluated = report["value"]["cost_binary"].as_f64().unwrap() / URLS as f64;
    assert!(
        ((evaluated - blind_jb) / blind_jb).abs() <= 1e-10,
        "{evaluated} vs {blind_jb}"
    );
    let sweep_out = tmp.path().join("sweep");
    run_ok(&[
        "sweep",
        pages.to_str().unwrap(),
        "--policies",
        "binary-blind",
        "--from",
        "0.2",
        "--to",
        "0.2",
        "--points",
        "1",
        "--out",
        sweep_out.to_str().unwrap(),
        "-q",
    ]);
    let text = std::fs::read_to_string(sweep_out.join("sweep.csv")).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "cost_binary").unwrap();
    for line in text.lines().skip(1) {
        let swept = line.split(',').nth(col).unwrap().parse::<f64>().unwrap() / URLS as f64;
        assert!(
            ((swept - blind_jb) / blind_jb).abs() <= 1e-10,
            "{swept} vs {blind_jb}"
        );
    }
}

/// (J_h, J_b) per URL of each policy of experiment 1 on a page set generated with `gen_extra`.
fn experiment(tmp: &Path, name: &str, gen_extra: &[&str]) -> HashMap<&'static str, (f64, f64)> {
    let data = tmp.join(name);
    gen(&data, URLS, HOSTS, gen_extra);
    let mut costs = HashMap::new();
    for (label, objective, extra) in [
        ("LC", "harmonic", &[][..]),
        ("BLC", "binary-blind", &[][..]),
        ("BLC-eps", "binary-blind", &["--floor", "0.4"][..]),
        ("J_b optimum", "binary", &[][..]),
        ("LCA", "harmonic-approx", &[][..]),
        ("UC", "uniform", &[][..]),
        ("CC", "change-rate", &[][..]),
    ] {
        let out = tmp.join(format!("{name}-{label}"));
        costs.insert(label, run_policy(&data, &out, objective, extra));
    }
    eprintln!("{name}: {costs:?}");
    costs
}

#[test]
fn lc_beats_blc_on_both_costs_when_the_important_pages_are_observed() {
    let tmp = tempfile::tempdir().unwrap();
    let c = experiment(tmp.path(), "important", &["--complete-by", "importance"]);
    let (lc, blc) = (c["LC"], c["BLC"]);
    // LC is the J_h optimum: it beats BLC-eps and every baseline (BLC starves pages: J_h infinite)
    assert!(blc.0.is_infinite());
    for other in ["BLC-eps", "LCA", "UC", "CC"] {
        assert!(
            lc.0 < c[other].0,
            "J_h: LC {} vs {other} {}",
            lc.0,
            c[other].0
        );
    }
    // the paper's surprise: LC no worse than BLC on BLC's own J_b (about 3% on this set)
    assert!(lc.1 <= blc.1, "J_b: LC {} vs BLC {}", lc.1, blc.1);
    assert!(lc.1 < c["BLC-eps"].1);
    // nothing beats the exact J_b optimum, which uses the observations BLC ignores
    for (name, (_, jb)) in &c {
        assert!(c["J_b optimum"].1 <= *jb, "{name} {jb}");
    }
    // uniform beats change-rate on both costs
    assert!(c["UC"].0 < c["CC"].0 && c["UC"].1 < c["CC"].1);
}

#[test]
fn with_a_random_four_percent_observed_blc_keeps_its_j_b_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let c = experiment(tmp.path(), "random", &[]);
    let (lc, blc) = (c["LC"], c["BLC"]);
    for other in ["BLC-eps", "LCA", "UC", "CC"] {
        assert!(
            lc.0 < c[other].0,
            "J_h: LC {} vs {other} {}",
            lc.0,
            c[other].0
        );
    }
    // the observed pages are worth too little for LC's use of them to pay for not optimising J_b
    // (about 8% on this set): the paper's J_b ordering depends on which pages are observed
    assert!(lc.1 > blc.1, "J_b: LC {} vs BLC {}", lc.1, blc.1);
    assert!(c["UC"].0 < c["CC"].0 && c["UC"].1 < c["CC"].1);
}
