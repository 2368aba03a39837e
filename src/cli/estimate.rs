//! `revisit estimate`: every URL's change rate from its crawl history (NeurIPS'19 §5), written as
//! a Parquet table to join to the page set.
//!
//! One process reads every history file and groups rows by URL in memory (about 60 bytes per
//! observation plus the URL): enough for a nightly job over the history suffix that matters
//! (the paper's 14 weeks of daily crawls), not a distributed join. The estimators are
//! [`revisit_core::estimate`].

use std::path::PathBuf;

use anyhow::{bail, Result};
use revisit_core::estimate::{estimate, Window};
use revisit_core::units::SECONDS_PER_DAY;

use super::shared::JobArg;
use crate::io::change_rates_out::{self, ChangeRates};
use crate::io::history;
use crate::io::inputs;
use crate::io::pages_fill;
use crate::report::estimate::EstimateSummary;

/// Parameters of `revisit estimate`.
#[derive(Clone, Debug, clap::Args)]
pub struct EstimateArgs {
    #[command(flatten)]
    pub job: JobArg,
    /// Crawl histories: Parquet files, CSV files (.csv, header row), folders or globs. One row per
    /// observation: url, observed_at_s (seconds since any fixed epoch, e.g. Unix time), changed
    /// (bool: the page differed from its previous crawl; with complete_obs, a change notice) and
    /// optionally complete_obs (bool: a feed that reports every change, such as a sitemap).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// Parquet file to write: url, change_rate (per day), complete_obs, observations, changes.
    #[arg(long, default_value = "change_rates.parquet")]
    pub out: PathBuf,
    /// End of the history to use, seconds since the epoch (default: the latest observation).
    #[arg(long, value_name = "SECONDS")]
    pub now_s: Option<f64>,
    /// Use only the last DAYS of history before --now-s (change rates drift; the paper learns on
    /// a suffix). Default: all of it.
    #[arg(long, value_name = "DAYS")]
    pub window_days: Option<f64>,
    /// Page sets (files, folders or globs) to fill in: each is copied to --out-pages with every
    /// estimated URL's change_rate (and complete_obs) replaced, ready for `revisit run`.
    #[arg(long, value_name = "PAGES", num_args = 1..)]
    pub pages: Vec<String>,
    /// Folder for the filled page set (with --pages).
    #[arg(long, default_value = "pages-estimated", value_name = "DIR")]
    pub out_pages: PathBuf,
    /// Print the summary as JSON.
    #[arg(long, overrides_with = "no_json")]
    pub json: bool,
    /// Print the summary as text (undoes --json from a job file).
    #[arg(long, overrides_with = "json", hide_short_help = true)]
    pub no_json: bool,
}

/// Reads the histories, estimates every URL's change rate and writes the table.
pub fn estimate_all(args: &EstimateArgs) -> Result<EstimateSummary> {
    let paths = inputs::expand(&args.inputs)?;
    let mut history = history::read_all(&paths)?;
    if history.by_url.is_empty() {
        bail!(
            "no usable observation in {} file(s) ({} rows, {} invalid); each row needs url, observed_at_s and changed",
            paths.len(),
            history.rows,
            history.invalid
        );
    }
    let to = match args.now_s {
        Some(s) if s.is_finite() => s / SECONDS_PER_DAY,
        Some(s) => bail!("--now-s must be a finite number of seconds, got {s}"),
        None => history.last_days,
    };
    if to < history.first_days {
        bail!(
            "--now-s {} is before the history's first observation ({} s): nothing to learn from",
            to * SECONDS_PER_DAY,
            history.first_days * SECONDS_PER_DAY
        );
    }
    // Complete feeds are watched from the history's first observation (or the window's start).
    let from = match args.window_days {
        Some(d) if d.is_finite() && d > 0.0 => (to - d).max(history.first_days),
        Some(d) => bail!("--window-days must be a positive number of days, got {d}"),
        None => history.first_days,
    };
    let window = Window { from, to };
    let mut urls: Vec<(String, history::UrlHistory)> = history.by_url.drain().collect();
    urls.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let n = urls.len();
    let (mut rates, mut complete, mut observations, mut changes) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut without = 0;
    for (_, h) in urls.iter_mut() {
        let e = estimate(&mut h.observations, h.complete, window);
        without += u64::from(e.observations == 0);
        rates.push(e.change_rate);
        complete.push(h.complete);
        observations.push(e.observations);
        changes.push(e.changes);
    }
    let filled = if args.pages.is_empty() {
        None
    } else {
        let estimates: std::collections::HashMap<&str, (f64, bool)> = urls
            .iter()
            .zip(&rates)
            .zip(&complete)
            .map(|((u, &r), &c)| (u.0.as_str(), (r, c)))
            .collect();
        Some(pages_fill::fill(
            &inputs::expand(&args.pages)?,
            &args.out_pages,
            &estimates,
        )?)
    };
    let mut sorted = rates.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    change_rates_out::write(
        &args.out,
        &ChangeRates {
            urls: urls.iter().map(|u| u.0.as_str()).collect(),
            change_rate: &rates,
            complete_obs: &complete,
            observations: &observations,
            changes: &changes,
        },
    )?;
    Ok(EstimateSummary {
        rows: history.rows,
        rows_invalid: history.invalid,
        first_invalid: history.first_invalid,
        urls: n as u64,
        urls_complete: complete.iter().filter(|&&c| c).count() as u64,
        urls_without_observations: without,
        window_from_s: from * SECONDS_PER_DAY,
        window_to_s: to * SECONDS_PER_DAY,
        change_rate_median: sorted[n / 2],
        out: args.out.clone(),
        out_pages: filled.as_ref().map(|_| args.out_pages.clone()),
        pages: filled,
    })
}

/// Runs `revisit estimate`; returns its summary (JSON with --json).
pub fn run(args: &EstimateArgs) -> Result<String> {
    let summary = estimate_all(args)?;
    Ok(if args.json {
        serde_json::to_string_pretty(&summary)? + "\n"
    } else {
        summary.human()
    })
}
