//! `revisit simulate`: a run's visits tables against Monte Carlo Poisson changes, beside the exact
//! value of the same timetable (Liu & Nain Lemma 3), to cross-check the closed forms. One process:
//! it reads the tables and the page set, nothing is distributed.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use revisit_core::exact_sum::ExactSum;
use revisit_core::schedule::evaluate::TimetableValue;
use revisit_core::schedule::simulate::simulate_page;
use revisit_core::units::Seconds;

use super::heading;
use super::shared::JobArg;
use crate::io::{inputs, pages, visits_in};
use crate::plan::pages::{resolve_defaults, SAMPLE_PAGES};
use crate::plan::Options;
use crate::report::provenance::{InputFile, Provenance, RunIdentity};
use crate::report::simulate::SimulationReport;

/// Parameters of `revisit simulate`.
#[derive(Clone, Debug, clap::Args)]
pub struct SimulateArgs {
    /// Output folder of `revisit run --timetable`
    ///
    /// Its visits/ tables and summary.json are read.
    #[arg(value_name = "OUT", help_heading = heading::INPUT)]
    pub out: PathBuf,
    /// The page set the run read [default: data/pages]
    ///
    /// Parquet, CSV, TSV or seed-list files, folders or globs, read as the run read them (with the
    /// defaults its summary records).
    #[arg(value_name = "PAGES", help_heading = heading::INPUT)]
    pub inputs: Vec<String>,
    /// Print JSON instead of text
    #[arg(long, overrides_with = "no_json", help_heading = heading::OUTPUT)]
    pub json: bool,
    /// Print text (undoes --json from a job file)
    #[arg(long, overrides_with = "json", hide_short_help = true, help_heading = heading::OUTPUT)]
    pub no_json: bool,
    /// Horizons (nights) simulated per page
    #[arg(long, default_value_t = 200, value_name = "N", help_heading = heading::OTHER)]
    pub horizons: u64,
    /// Random seed: the same seed gives the same numbers
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = heading::OTHER)]
    pub seed: u64,
    #[command(flatten)]
    pub job: JobArg,
}

/// Simulates the timetable of `args.out` on its pages.
pub fn simulate(args: &SimulateArgs, options: &Options) -> Result<SimulationReport> {
    let identity = RunIdentity::now();
    let started = std::time::Instant::now();
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
    let visits_dir = args.out.join("visits");
    if !visits_dir.is_dir() {
        bail!(
            "{} has no visits tables (run with --timetable)",
            args.out.display()
        );
    }
    let visit_files = visits_in::open_all(&inputs::expand(&[visits_dir.display().to_string()])?)?;
    let times = visits_in::read_times(&visit_files, horizon_s)?;
    let visits = times.values().map(|t| t.len() as u64).sum();
    let specs = if args.inputs.is_empty() {
        vec![SAMPLE_PAGES.to_owned()]
    } else {
        args.inputs.clone()
    };
    // the run's page set as the run read it: with the defaults it was given
    let given = |key: &str| summary["options"][key].as_f64();
    let defaults = resolve_defaults(given("default_importance"), given("default_change_days"))?;
    let page_files = pages::open_all(&inputs::expand_pages(&specs)?)?;
    let files = page_files
        .iter()
        .map(|f| InputFile::new(&f.path, f.format(), f.bytes))
        .collect();
    let mut rows = pages::read_all(&page_files, &defaults)?;
    // the first row of a URL, by file then row, as `run` keeps it
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows.dedup_by(|a, b| a.0 == b.0);
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut exact = TimetableValue::default();
    let (mut simulated, mut variance) = (ExactSum::default(), ExactSum::default());
    let empty = Vec::new();
    for (url, mu, lambda) in &rows {
        let mut at = times.get(url).unwrap_or(&empty).clone();
        at.sort_by(f64::total_cmp);
        let e = exact.add_page(*mu, *lambda, &at, horizon).stale;
        match simulate_page(&at, *lambda, horizon, args.horizons, &mut rng) {
            Some(s) => {
                simulated.add(mu * s.stale.mean);
                variance.add(mu * mu * s.stale.std_err * s.stale.std_err);
            }
            // never visited, or never changes: the value is certain
            None => simulated.add(mu * e),
        }
    }
    let w = exact.weight.value();
    let (exact, simulated, std_err) = (
        exact.staleness(),
        simulated.value() / w,
        variance.value().sqrt() / w,
    );
    Ok(SimulationReport {
        provenance: Provenance::new("simulate", identity, files, None, options),
        pages: rows.len() as u64,
        visits,
        horizons: args.horizons,
        seed: args.seed,
        exact,
        simulated,
        std_err,
        exact_in_95_ci: (exact - simulated).abs() <= 1.96 * std_err,
        seconds: crate::report::TotalSeconds {
            total: started.elapsed().as_secs_f64(),
        },
    })
}

/// Runs `revisit simulate`; returns its report (JSON with --json).
pub fn run(args: &SimulateArgs, options: &Options) -> Result<String> {
    let report = simulate(args, options)?;
    Ok(if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        report.human()
    })
}
