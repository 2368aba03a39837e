//! `revisit simulate`: a run's visits tables against Monte Carlo Poisson changes, beside the exact
//! value of the same timetable (Liu & Nain Lemma 3), to cross-check the closed forms. One process:
//! it reads the tables and the page set, nothing is distributed.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use revisit_core::exact_sum::ExactSum;
use revisit_core::schedule::evaluate::evaluate_page;
use revisit_core::schedule::simulate::simulate_page;
use revisit_core::units::Seconds;

/// Parameters of `revisit simulate`.
#[derive(Clone, Debug, clap::Args)]
pub struct SimulateArgs {
    /// Output folder of `revisit run --timetable` (reads visits/ and summary.json).
    pub out: PathBuf,
    /// The page set the run read (Parquet files, folders or globs; columns url, importance,
    /// change_rate). Default: the sample in data/pages.
    pub inputs: Vec<String>,
    /// Horizons (nights) simulated per page.
    #[arg(long, default_value_t = 200)]
    pub horizons: u64,
    /// Random seed: the same seed gives the same numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Simulated and exact importance-weighted mean staleness of a run's timetable.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationReport {
    pub pages: u64,
    pub visits: u64,
    pub horizons: u64,
    pub seed: u64,
    /// Exact weighted mean staleness of the served timetable.
    pub exact: f64,
    /// Monte Carlo estimate of the same and its standard error.
    pub simulated: f64,
    pub std_err: f64,
    /// Whether the exact value lies in the simulation's 95% confidence interval (+-1.96 s.e.).
    pub exact_in_95_ci: bool,
}

impl SimulationReport {
    pub fn human(&self) -> String {
        format!(
            "simulate: {} pages, {} visits per horizon, {} horizons (seed {})\n  staleness simulated {:.6} +- {:.6} (95% CI [{:.6}, {:.6}]), exact {:.6}: {}\n",
            self.pages,
            self.visits,
            self.horizons,
            self.seed,
            self.simulated,
            1.96 * self.std_err,
            self.simulated - 1.96 * self.std_err,
            self.simulated + 1.96 * self.std_err,
            self.exact,
            if self.exact_in_95_ci { "inside" } else { "OUTSIDE" }
        )
    }
}

/// Runs the simulation.
pub fn run(args: &SimulateArgs) -> Result<SimulationReport> {
    if args.horizons < 2 {
        bail!("--horizons must be at least 2 (a standard error needs two samples)");
    }
    let summary_path = args.out.join("summary.json");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&summary_path)
            .with_context(|| format!("reading {}", summary_path.display()))?,
    )
    .with_context(|| format!("{} is not JSON", summary_path.display()))?;
    let Some(horizon_s) = summary["horizon_s"].as_f64() else {
        bail!("{}: no horizon_s", summary_path.display());
    };
    let horizon = Seconds(horizon_s);
    let times = read_visits(&args.out.join("visits"))?;
    let visits = times.values().map(|t| t.len() as u64).sum();
    let inputs = if args.inputs.is_empty() {
        vec![super::config::SAMPLE_PAGES.to_owned()]
    } else {
        args.inputs.clone()
    };
    let mut pages = read_pages(&crate::io::inputs::expand(&inputs)?)?;
    pages.sort_by(|a, b| a.0.cmp(&b.0));
    pages.dedup_by(|a, b| a.0 == b.0);
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let (mut exact, mut simulated, mut variance, mut weight) = (
        ExactSum::default(),
        ExactSum::default(),
        ExactSum::default(),
        ExactSum::default(),
    );
    let empty = Vec::new();
    for (url, mu, lambda) in &pages {
        let mut at = times.get(url).unwrap_or(&empty).clone();
        at.sort_by(f64::total_cmp);
        let e = evaluate_page(&at, *lambda, horizon).stale;
        exact.add(mu * e);
        weight.add(*mu);
        match simulate_page(&at, *lambda, horizon, args.horizons, &mut rng) {
            Some(s) => {
                simulated.add(mu * s.stale.mean);
                variance.add(mu * mu * s.stale.std_err * s.stale.std_err);
            }
            // never visited, or never changes: the value is certain
            None => simulated.add(mu * e),
        }
    }
    let w = weight.value();
    let (exact, simulated, std_err) = (
        exact.value() / w,
        simulated.value() / w,
        variance.value().sqrt() / w,
    );
    Ok(SimulationReport {
        pages: pages.len() as u64,
        visits,
        horizons: args.horizons,
        seed: args.seed,
        exact,
        simulated,
        std_err,
        exact_in_95_ci: (exact - simulated).abs() <= 1.96 * std_err,
    })
}

/// at_s of every URL in the visits tables under `dir`.
fn read_visits(dir: &Path) -> Result<HashMap<String, Vec<f64>>> {
    let mut files = vec![];
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading {} (run with --timetable)", dir.display()))?;
    for e in entries {
        let part = e?.path().join("part-00000.parquet");
        if part.exists() {
            files.push(part);
        }
    }
    files.sort();
    let mut times: HashMap<String, Vec<f64>> = HashMap::new();
    for f in files {
        for batch in reader(&f)? {
            let batch = batch.with_context(|| format!("reading {}", f.display()))?;
            let at_s = float_column(&batch, "at_s", &f)?;
            let url = string_column(&batch, "url", &f)?;
            for i in 0..batch.num_rows() {
                times
                    .entry(url.value(i).to_owned())
                    .or_default()
                    .push(at_s.value(i));
            }
        }
    }
    Ok(times)
}

/// (url, importance, change_rate) of the valid rows (the rows a run would not reject).
fn read_pages(files: &[PathBuf]) -> Result<Vec<(String, f64, f64)>> {
    let mut rows = vec![];
    for f in files {
        for batch in reader(f)? {
            let batch = batch.with_context(|| format!("reading {}", f.display()))?;
            let url = string_column(&batch, "url", f)?;
            let mu = float_column(&batch, "importance", f)?;
            let lambda = float_column(&batch, "change_rate", f)?;
            for i in 0..batch.num_rows() {
                if url.is_null(i) || mu.is_null(i) || lambda.is_null(i) {
                    continue;
                }
                let (m, l) = (mu.value(i), lambda.value(i));
                if m.is_finite() && m > 0.0 && l.is_finite() && l >= 0.0 {
                    rows.push((url.value(i).to_owned(), m, l));
                }
            }
        }
    }
    Ok(rows)
}

fn reader(path: &Path) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| b.build())
        .with_context(|| format!("{} is not Parquet", path.display()))
}

fn float_column<'a>(
    b: &'a arrow_array::RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a arrow_array::PrimitiveArray<Float64Type>> {
    b.column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<Float64Type>())
        .with_context(|| format!("{}: no double column {name}", path.display()))
}

fn string_column<'a>(
    b: &'a arrow_array::RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a arrow_array::StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
        .with_context(|| format!("{}: no utf8 column {name}", path.display()))
}
