//! `revisit estimate`: every URL's change rate from its crawl history (NeurIPS'19 §5), written as
//! a Parquet table to join to the page set.
//!
//! One process reads every history file and groups rows by URL in memory (about 60 bytes per
//! observation plus the URL): enough for a nightly job over the history suffix that matters
//! (the paper's 14 weeks of daily crawls), not a distributed join.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use arrow_array::{BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use serde::Serialize;

use revisit_core::estimate::{estimate, Window};
use crate::io::history::{self, InvalidRow};
use crate::io::pages_fill::{self, Filled};
use crate::io::{inputs, parquet_out};
use revisit_core::units::SECONDS_PER_DAY;

/// Parameters of `revisit estimate`.
#[derive(Clone, Debug, clap::Args)]
pub struct EstimateArgs {
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
    #[arg(long)]
    pub json: bool,
}

/// What `revisit estimate` read and wrote.
#[derive(Clone, Debug, Serialize)]
pub struct EstimateSummary {
    pub rows: u64,
    /// Rows without a url, a finite observed_at_s or a changed flag; the first is named.
    pub rows_invalid: u64,
    pub first_invalid: Option<InvalidRow>,
    pub urls: u64,
    pub urls_complete: u64,
    /// URLs with no observation in the window: their rate is the smoothing prior's.
    pub urls_without_observations: u64,
    /// The window used, seconds since the epoch.
    pub window_from_s: f64,
    pub window_to_s: f64,
    /// Median estimated change rate, per day.
    pub change_rate_median: f64,
    pub out: PathBuf,
    /// With --pages: the filled page set.
    pub pages: Option<Filled>,
    pub out_pages: Option<PathBuf>,
}

impl EstimateSummary {
    pub fn human(&self) -> String {
        let mut s = format!(
            "revisit estimate: {} rows ({} invalid), {} URLs ({} with complete observations) over {:.2} days; median change rate {:.6} per day\n",
            self.rows,
            self.rows_invalid,
            self.urls,
            self.urls_complete,
            (self.window_to_s - self.window_from_s) / SECONDS_PER_DAY,
            self.change_rate_median
        );
        if let Some(r) = &self.first_invalid {
            s += &format!(
                "  first invalid row: {} row {} column {}\n",
                r.file, r.row, r.column
            );
        }
        if self.urls_without_observations > 0 {
            s += &format!(
                "  {} URLs have no observation in the window: they get the smoothing prior\n",
                self.urls_without_observations
            );
        }
        s += &format!("wrote {}\n", self.out.display());
        if let (Some(f), Some(dir)) = (&self.pages, &self.out_pages) {
            s += &format!(
                "pages: {} rows in {} files, {} with an estimate, {} keep their change_rate, {} have none (run rejects them); {} estimated URLs are no page's\nwrote {}\n",
                f.rows,
                f.files,
                f.rows_estimated,
                f.rows_kept,
                f.rows_without_rate,
                f.estimates_unmatched,
                dir.display()
            );
        }
        s
    }
}

/// Reads the histories, estimates every URL's change rate and writes the table.
pub fn run(args: &EstimateArgs) -> Result<EstimateSummary> {
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
    let schema = Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("change_rate", DataType::Float64, false),
        Field::new("complete_obs", DataType::Boolean, false),
        Field::new("observations", DataType::UInt64, false),
        Field::new("changes", DataType::UInt64, false),
    ]));
    let mut sorted = rates.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(urls.iter().map(|u| &u.0))),
            Arc::new(Float64Array::from(rates)),
            Arc::new(BooleanArray::from(complete.clone())),
            Arc::new(UInt64Array::from(observations)),
            Arc::new(UInt64Array::from(changes)),
        ],
    )?;
    let metadata = [
        ("revisit.units.change_rate".to_owned(), "1/day".to_owned()),
        (
            "revisit.estimator".to_owned(),
            "NeurIPS'19 eqs. 10 (incomplete) and 11 (complete), smoothing 0.5".to_owned(),
        ),
    ];
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    parquet_out::write(&args.out, schema, &[batch], &metadata)?;
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
