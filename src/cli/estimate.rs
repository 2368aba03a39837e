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

use super::heading;
use super::shared::JobArg;
use crate::io::change_rates_out::{self, ChangeRates};
use crate::io::history;
use crate::io::inputs;
use crate::io::pages_fill;
use crate::plan::Options;
use crate::report::estimate::EstimateSummary;
use crate::report::provenance::{InputFile, Provenance, RunIdentity};

/// Parameters of `revisit estimate`.
#[derive(Clone, Debug, clap::Args)]
pub struct EstimateArgs {
    /// Crawl histories: Parquet or CSV files, folders, globs
    ///
    /// One row per observation: url, observed_at_s (seconds since any fixed epoch, e.g. Unix
    /// time), changed (bool: the page differed from its previous crawl; with complete_obs, a change
    /// notice) and optionally complete_obs (bool: a feed that reports every change, such as a
    /// sitemap). CSV files end in .csv and have a header row.
    #[arg(required = true, value_name = "HISTORY", help_heading = heading::INPUT)]
    pub inputs: Vec<String>,
    /// End of the history to use, seconds since the epoch
    ///
    /// Default: the latest observation.
    #[arg(long, value_name = "SECONDS", help_heading = heading::INPUT)]
    pub now_s: Option<f64>,
    /// Use only the last DAYS of history [default: all]
    ///
    /// Change rates drift: the paper learns on a suffix of the history, before --now-s.
    #[arg(long, value_name = "DAYS", help_heading = heading::INPUT)]
    pub window_days: Option<f64>,
    /// Page sets to copy with the estimates filled in
    ///
    /// Files, folders or globs of Parquet page sets: each is copied to --out-pages with every
    /// estimated URL's change_rate (and complete_obs) replaced, ready for `revisit run`.
    #[arg(long, value_name = "PAGE_SETS", num_args = 1.., help_heading = heading::INPUT)]
    pub pages: Vec<String>,
    /// Parquet file of the estimates
    ///
    /// Columns: url, change_rate (changes per day), complete_obs, observations, changes.
    #[arg(long, default_value = "change_rates.parquet", value_name = "FILE", help_heading = heading::OUTPUT)]
    pub out: PathBuf,
    /// Folder for the filled page set (with --pages)
    #[arg(long, default_value = "pages-estimated", value_name = "DIR", help_heading = heading::OUTPUT)]
    pub out_pages: PathBuf,
    /// Print the summary as JSON, for machines
    #[arg(long, overrides_with = "no_json", help_heading = heading::OUTPUT)]
    pub json: bool,
    /// Print the summary as text (undoes --json from a job file)
    #[arg(long, overrides_with = "json", hide_short_help = true, help_heading = heading::OUTPUT)]
    pub no_json: bool,
    #[command(flatten)]
    pub job: JobArg,
}

/// Reads the histories, estimates every URL's change rate and writes the table.
pub fn estimate_all(args: &EstimateArgs, options: &Options) -> Result<EstimateSummary> {
    let identity = RunIdentity::now();
    let started = std::time::Instant::now();
    let paths = inputs::expand(&args.inputs)?;
    let files = paths
        .iter()
        .map(|p| {
            let csv = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"));
            InputFile::new(p, if csv { "csv" } else { "parquet" }, inputs::size(p))
        })
        .collect();
    let provenance = Provenance::new("estimate", identity, files, None, options);
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
        &provenance.metadata(),
        &ChangeRates {
            urls: urls.iter().map(|u| u.0.as_str()).collect(),
            change_rate: &rates,
            complete_obs: &complete,
            observations: &observations,
            changes: &changes,
        },
    )?;
    Ok(EstimateSummary {
        provenance,
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
        seconds: crate::report::TotalSeconds {
            total: started.elapsed().as_secs_f64(),
        },
    })
}

/// Runs `revisit estimate`; returns its summary (JSON with --json).
pub fn run(args: &EstimateArgs, options: &Options) -> Result<String> {
    let summary = estimate_all(args, options)?;
    Ok(if args.json {
        serde_json::to_string_pretty(&summary)? + "\n"
    } else {
        summary.human()
    })
}
