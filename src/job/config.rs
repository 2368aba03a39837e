//! The job's parameters, as the command line gives them.

use std::path::PathBuf;

use crate::job::cluster::ClusterArgs;
use crate::objective::Objective;

/// Folder of the sample page set shipped in the repository (used when no input is given).
pub const SAMPLE_PAGES: &str = "data/pages";
/// Hosts table of the sample.
pub const SAMPLE_HOSTS: &str = "data/hosts.parquet";

/// Parameters of `revisit run`.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    /// Page sets: Parquet files, folders (searched recursively) or glob patterns. Columns: url,
    /// importance (> 0), change_rate (changes per day, >= 0), and optionally host (else taken from
    /// the URL) and complete_obs (bool). Default: the sample in data/ with its hosts table.
    pub inputs: Vec<String>,
    /// Hosts table (Parquet: host, min_delay_s) with per-host politeness delays, e.g. robots.txt
    /// Crawl-delay; hosts not listed get --min-delay-s.
    #[arg(long)]
    pub hosts: Option<PathBuf>,
    /// Total crawl bandwidth, fetches per day over all crawlers.
    #[arg(long, conflicts_with = "bandwidth_fraction")]
    pub bandwidth: Option<f64>,
    /// Bandwidth as a multiple of the number of valid URLs (0.2 = one fetch per URL every 5 days on
    /// average). Default 0.2 when --bandwidth is not given.
    #[arg(long)]
    pub bandwidth_fraction: Option<f64>,
    /// What "fresh" means: harmonic (staleness grows with every missed change; LambdaCrawl,
    /// NeurIPS'19), binary (fraction of time pages are fresh with Poisson crawls; Azar et al.,
    /// PNAS'18), binary-fixed (the same with evenly spaced crawls; Cho & Garcia-Molina, Frontera),
    /// binary-discrete (one fetch per time slot; PNAS'18 Problem 1), harmonic-approx (rates
    /// proportional to importance; NeurIPS'19 Prop. 9), or a baseline: uniform, change-rate,
    /// importance (proportional rates; a capped host keeps its cap and the rest is re-shared).
    #[arg(long, value_enum, default_value_t = Objective::Harmonic)]
    pub objective: Objective,
    /// Non-starvation floor (BLC-eps, NeurIPS'19 supplement): every page that changes gets at least
    /// EPS x bandwidth / pages fetches per day (less where its host's cap cannot hold all floors);
    /// the objective is then optimised exactly above the floors. EPS in [0, 1).
    #[arg(long, default_value_t = 0.0, value_name = "EPS")]
    pub floor: f64,
    /// Read `importance` as the value w of finding a new version, so a page is worth w x change_rate
    /// per unit of freshness: with binary-fixed this is Frontera's objective sum f w (1 - e^(-lambda/f)).
    #[arg(long)]
    pub value_per_change: bool,
    /// Politeness: minimum seconds between two requests to one host, for hosts not in --hosts. A
    /// host's cap is horizon / min_delay fetches per horizon.
    #[arg(long, default_value_t = 15.0)]
    pub min_delay_s: f64,
    /// Planning horizon in seconds (caps and budgets in the hosts table are per horizon).
    #[arg(long, default_value_t = 86_400.0)]
    pub horizon_s: f64,
    /// Number of crawlers; each host is crawled by exactly one.
    #[arg(long, default_value_t = 10)]
    pub crawlers: u32,
    /// Output folder (replaced atomically when the run succeeds).
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// No progress lines on stderr (the summary is still printed).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// The bandwidth default when neither --bandwidth nor --bandwidth-fraction is given.
pub const DEFAULT_BANDWIDTH_FRACTION: f64 = 0.2;

impl RunArgs {
    /// Inputs and hosts table, with the sample as the default.
    pub fn resolved_inputs(&self) -> (Vec<String>, Option<PathBuf>) {
        if self.inputs.is_empty() {
            let hosts = self
                .hosts
                .clone()
                .or_else(|| Some(PathBuf::from(SAMPLE_HOSTS)));
            (vec![SAMPLE_PAGES.to_owned()], hosts)
        } else {
            (self.inputs.clone(), self.hosts.clone())
        }
    }

    /// Checks the numeric parameters before any work starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::bail;
        if let Some(r) = self.bandwidth {
            if !(r.is_finite() && r > 0.0) {
                bail!("--bandwidth must be a positive number of fetches per day, got {r}");
            }
        }
        if let Some(f) = self.bandwidth_fraction {
            if !(f.is_finite() && f > 0.0) {
                bail!("--bandwidth-fraction must be positive, got {f}");
            }
        }
        if !(self.min_delay_s.is_finite() && self.min_delay_s > 0.0) {
            bail!(
                "--min-delay-s must be positive seconds, got {}",
                self.min_delay_s
            );
        }
        if !(self.horizon_s.is_finite() && self.horizon_s > 0.0) {
            bail!(
                "--horizon-s must be positive seconds, got {}",
                self.horizon_s
            );
        }
        if !(self.floor >= 0.0 && self.floor < 1.0) {
            bail!(
                "--floor must be in [0, 1): it is the share of the bandwidth spread evenly as floors, got {} \
                 (--objective uniform is the policy of a floor of 1)",
                self.floor
            );
        }
        if self.crawlers == 0 {
            bail!("--crawlers must be at least 1");
        }
        Ok(())
    }
}
