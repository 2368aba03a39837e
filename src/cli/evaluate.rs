//! `revisit evaluate`: the value of a rates table or a timetable (ours or anyone's) on a page set,
//! and the gap to each objective's optimum at the same bandwidth, polite and not.

use anyhow::{bail, Result};
use revisit_core::units::Seconds;

use super::heading;
use super::shared::{JobArg, PageArgs, RunnerArgs};
use crate::io::{fetch_times, inputs, visits_in};
use crate::plan::evaluate::{EvaluatePlan, MonteCarloPlan, Table};
use crate::plan::pages::DEFAULT_HORIZON;
use crate::plan::Options;

/// Parameters of `revisit evaluate`: exactly one table to value, rates or visits.
#[derive(Clone, Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("table").required(true).multiple(false).args(["rates", "visits"])))]
pub struct EvaluateArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// Rates to value: Parquet or CSV (url, crawl_rate)
    ///
    /// Parquet files, folders or globs (e.g. a run's out/rates), or a CSV file (name ending in
    /// .csv, with a header row). Columns: url, crawl_rate (fetches per day), and optionally host.
    /// Pages without a row get rate 0. Repeat the option for several tables.
    #[arg(long, value_name = "PATH", help_heading = heading::INPUT)]
    pub rates: Vec<String>,
    /// A timetable to value instead: Parquet (at_s, url)
    ///
    /// Parquet files, folders or globs (e.g. a run's out/visits from `run --timetable`). Columns:
    /// at_s (seconds from the horizon start, in [0, horizon)), url, and optionally host; the visits
    /// repeat every horizon. The horizon is the files' revisit.horizon_s metadata, else
    /// --horizon-s. Valued exactly per URL (Liu & Nain Lemma 3), with the hosts' politeness checked
    /// on the visit times (the wrap-around included). Repeat the option for several tables.
    #[arg(long, value_name = "PATH", help_heading = heading::INPUT)]
    pub visits: Vec<String>,
    /// Monte Carlo check over this many horizons of simulated changes
    ///
    /// With --visits. Draws Poisson changes against the timetable and prints the simulated staleness with its 95%
    /// confidence interval beside the exact value.
    #[arg(long, value_name = "HORIZONS", requires = "visits", help_heading = heading::OUTPUT)]
    pub simulate: Option<u64>,
    /// Seed of --simulate: same seed, same numbers
    ///
    /// On any number of workers and processes.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "simulate", help_heading = heading::OUTPUT)]
    pub seed: u64,
    /// Bandwidth of the optima, fetches per day
    ///
    /// Default: the sum of the evaluated rates, or the visits per day of a timetable.
    #[arg(long, value_name = "FETCHES_PER_DAY", help_heading = heading::BANDWIDTH)]
    pub bandwidth: Option<f64>,
    /// Print the report as JSON, for machines
    #[arg(long, overrides_with = "no_json", help_heading = heading::OUTPUT)]
    pub json: bool,
    /// Print the report as text (undoes --json from a job file)
    #[arg(long, overrides_with = "json", hide_short_help = true, help_heading = heading::OUTPUT)]
    pub no_json: bool,
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// Also value under random fetch times, seconds
    ///
    /// Liu & Nain §1.3: SPEC is const:SECONDS, exp:MEAN_SECONDS, or a CSV (.csv, header row) or
    /// Parquet file of measured fetch durations in seconds (column fetch_time_s, or the file's only
    /// column). The model is one crawler fetching back to back: it does 86400/E[X] fetches per day
    /// whatever the table's total, and gives page i the share f_i = crawl_rate_i / (sum of
    /// crawl_rate) of them (with --visits: visits_i / (sum of visits)); change rates are taken per
    /// second (change_rate / 86400). Reports the obsolescence (share of time out of date), per URL
    /// and weighted by change rate, under randomized accessing (Lemma 4), its lower bound for any
    /// accessing order (Prop. 9), the best bound over all shares (f_i ~ ln(1/h_i), eq. 1.30;
    /// eq. 1.26) and the best randomized shares (f_i ~ 1/h_i - 1, eq. 1.31). Pages without a rate
    /// are never fetched: obsolete all the time. An empirical law costs a pass over its sample per
    /// page: a few thousand durations are plenty.
    #[arg(long, value_name = "SPEC", help_heading = heading::OTHER)]
    pub fetch_time: Option<String>,
    #[command(flatten)]
    pub job: JobArg,
}

impl EvaluateArgs {
    /// The evaluation's plan: the table (a timetable's footers read and its horizon resolved, which
    /// is then the pages' horizon too) and the fetch-time law read once.
    pub fn plan(&self) -> Result<EvaluatePlan> {
        if let Some(r) = self.bandwidth {
            if !(r.is_finite() && r > 0.0) {
                bail!("--bandwidth must be a positive number of fetches per day, got {r}");
            }
        }
        let fetch_time = match &self.fetch_time {
            Some(spec) => Some((spec.clone(), fetch_times::parse_fetch_time(spec)?)),
            None => None,
        };
        let (table, horizon) = if self.visits.is_empty() {
            (Table::Rates(self.rates.clone()), None)
        } else {
            // a bad file or a horizon the files disagree on fails before any worker starts
            let files = visits_in::open_all(&inputs::expand(&self.visits)?)?;
            visits_in::require_cycles(&files)?;
            let (horizon_s, horizon_source) =
                visits_in::horizon(&files, self.pages.horizon_s, DEFAULT_HORIZON.0)?;
            (
                Table::Visits {
                    files,
                    horizon_source,
                },
                Some(Seconds(horizon_s)),
            )
        };
        Ok(EvaluatePlan {
            pages: self.pages.plan(horizon)?,
            cluster: self.runner.cluster.plan()?,
            table,
            bandwidth: self.bandwidth,
            fetch_time,
            monte_carlo: match self.simulate {
                Some(h) if h < 2 => {
                    bail!("--simulate must be at least 2 horizons (a standard error needs two)")
                }
                Some(horizons) => Some(MonteCarloPlan {
                    horizons,
                    seed: self.seed,
                }),
                None => None,
            },
            quiet: self.runner.quiet,
            options: Options::new(),
        })
    }
}

/// Runs `revisit evaluate`; returns the report (JSON with --json) on process 0.
pub fn run(args: &EvaluateArgs, options: &Options) -> Result<String> {
    let mut plan = args.plan()?;
    plan.options = options.clone();
    let Some(report) = crate::job::evaluate(plan)? else {
        return Ok(String::new());
    };
    Ok(if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        report.human()
    })
}
