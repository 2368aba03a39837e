//! Options several commands share: the job file, the page set and its politeness, the cluster.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use revisit_core::units::Seconds;

use crate::plan::cluster::Timeouts;
use crate::plan::pages::{
    PolitenessKey, DEFAULT_HORIZON, DEFAULT_MIN_DELAY_S, SAMPLE_HOSTS, SAMPLE_PAGES,
};
use crate::plan::{Cluster, PagesPlan};

/// `--job FILE`: options from a TOML job file (see [`super::job_file`]).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct JobArg {
    /// Job file (TOML) with any of this command's options as keys (e.g. jobs/nightly.toml);
    /// options given on the command line win over the file.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
}

/// The page set a job reads, its politeness, and whether to show progress (shared by `run`,
/// `sweep` and `evaluate`).
#[derive(Clone, Debug, clap::Args)]
pub struct PageArgs {
    /// Page sets: Parquet files, folders (searched recursively) or glob patterns. Columns: url,
    /// importance (> 0), change_rate (changes per day, >= 0), and optionally host (else taken from
    /// the URL) and complete_obs (bool). Default: the sample in data/ with its hosts table.
    pub inputs: Vec<String>,
    /// Hosts table (Parquet: host, min_delay_s) with per-host politeness delays, e.g. robots.txt
    /// Crawl-delay; hosts not listed get --min-delay-s.
    #[arg(long)]
    pub hosts: Option<PathBuf>,
    /// Politeness: minimum seconds between two requests to one host, for hosts not in --hosts. A
    /// host's cap is horizon / min_delay fetches per horizon.
    #[arg(long, default_value_t = DEFAULT_MIN_DELAY_S, value_name = "SECONDS")]
    pub min_delay_s: f64,
    /// Which URLs share a politeness cap (one min_delay_s, one budget): host (the host column,
    /// normalised: scheme, port, path and trailing dot removed, IDNA names in ASCII; else the URL's
    /// host), domain (the host's registrable domain by the public suffix list: every subdomain of
    /// example.co.uk shares one cap), or ip-column (the input's `ip` column, e.g. each server's
    /// address: hosts on one server share one cap). The hosts table and the outputs' `host` columns
    /// hold this key.
    #[arg(long, value_enum, default_value_t = PolitenessKey::Host, value_name = "KEY", help_heading = "Bandwidth and politeness")]
    pub politeness_key: PolitenessKey,
    /// Planning horizon in seconds (caps and budgets in the hosts table are per horizon) [default:
    /// 86400, one day; for `evaluate --visits`, the horizon the visits files declare].
    #[arg(long, value_name = "SECONDS")]
    pub horizon_s: Option<f64>,
    /// Read `importance` as the value w of finding a new version, so a page is worth w x change_rate
    /// per unit of freshness: with binary-fixed this is Frontera's objective sum f w (1 - e^(-lambda/f)).
    #[arg(long, overrides_with = "no_value_per_change")]
    pub value_per_change: bool,
    /// Read `importance` as it is (undoes --value-per-change from a job file).
    #[arg(long, overrides_with = "value_per_change", hide_short_help = true)]
    pub no_value_per_change: bool,
    /// No progress lines on stderr (the summary is still printed).
    #[arg(long, short, overrides_with = "no_quiet")]
    pub quiet: bool,
    /// Progress lines on stderr (undoes --quiet from a job file).
    #[arg(long, overrides_with = "quiet", hide_short_help = true)]
    pub no_quiet: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

impl PageArgs {
    /// The pages plan: the sample (with its hosts table) when no input is given, the horizon
    /// `horizon_s` (what the command resolved, default one day); fails on a delay or horizon that is
    /// not a positive number of seconds.
    pub fn plan(&self, horizon: Option<Seconds>) -> Result<PagesPlan> {
        if !(self.min_delay_s.is_finite() && self.min_delay_s > 0.0) {
            bail!(
                "--min-delay-s must be positive seconds, got {}",
                self.min_delay_s
            );
        }
        let horizon = horizon.unwrap_or(match self.horizon_s {
            Some(h) => Seconds(h),
            None => DEFAULT_HORIZON,
        });
        if !(horizon.0.is_finite() && horizon.0 > 0.0) {
            bail!("--horizon-s must be positive seconds, got {}", horizon.0);
        }
        let (inputs, hosts) = if self.inputs.is_empty() {
            let hosts = self
                .hosts
                .clone()
                .or_else(|| Some(PathBuf::from(SAMPLE_HOSTS)));
            (vec![SAMPLE_PAGES.to_owned()], hosts)
        } else {
            (self.inputs.clone(), self.hosts.clone())
        };
        Ok(PagesPlan {
            inputs,
            hosts,
            default_delay: Seconds(self.min_delay_s),
            horizon,
            value_per_change: self.value_per_change,
            politeness: self.politeness_key,
        })
    }
}

/// Where the job runs: worker threads per process, and the processes of a cluster.
#[derive(Clone, Debug, clap::Args)]
pub struct ClusterArgs {
    /// Worker threads per process (default: the cores of this machine).
    #[arg(short = 'w', long)]
    pub workers: Option<usize>,
    /// Number of processes in the cluster (each started with the same arguments and its own -p).
    #[arg(short = 'n', long, default_value_t = 1)]
    pub processes: usize,
    /// Index of this process, 0..n-1.
    #[arg(short = 'p', long, default_value_t = 0)]
    pub process: usize,
    /// File with one host:port per line, process 0 first (default: localhost:2101, 2102, ...).
    #[arg(long)]
    pub hostfile: Option<PathBuf>,
    /// Seconds to wait for every process of the cluster to connect; then every process gives up,
    /// naming the ones that did not come.
    #[arg(long, value_name = "SECONDS", default_value_t = Timeouts::DEFAULT.connect.as_secs_f64(), help_heading = "Cluster")]
    pub connect_timeout_s: f64,
    /// Seconds of silence after which a process counts as lost (stopped, frozen, cut off): every
    /// process then exits non-zero naming it and publishes nothing. A process that dies is noticed
    /// at once.
    #[arg(long, value_name = "SECONDS", default_value_t = Timeouts::DEFAULT.peer.as_secs_f64(), help_heading = "Cluster")]
    pub peer_timeout_s: f64,
    /// Seconds one round of an exchange or all-reduce may wait for the slowest worker (a process
    /// alive but making no progress); then every process exits non-zero naming it.
    #[arg(long, value_name = "SECONDS", default_value_t = Timeouts::DEFAULT.round.as_secs_f64(), help_heading = "Cluster")]
    pub round_timeout_s: f64,
}

/// First port of the default addresses (timely's convention).
const DEFAULT_PORT: usize = 2101;

impl ClusterArgs {
    /// The cluster: the threads (default: this machine's cores) and, for several processes, the
    /// addresses from the hostfile.
    pub fn plan(&self) -> Result<Cluster> {
        if self.workers == Some(0) {
            bail!("--workers must be at least 1");
        }
        if self.processes == 0 {
            bail!("--processes must be at least 1");
        }
        if self.process >= self.processes {
            bail!(
                "--process {} is not below --processes {}",
                self.process,
                self.processes
            );
        }
        let threads = self.workers.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let timeouts = self.timeouts()?;
        if self.processes == 1 {
            return Ok(Cluster {
                timeouts,
                ..Cluster::local(threads)
            });
        }
        let addresses: Vec<String> = match &self.hostfile {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading hostfile {}", path.display()))?;
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_owned)
                    .collect()
            }
            None => (0..self.processes)
                .map(|i| format!("localhost:{}", DEFAULT_PORT + i))
                .collect(),
        };
        if addresses.len() != self.processes {
            bail!(
                "the hostfile lists {} addresses for --processes {}",
                addresses.len(),
                self.processes
            );
        }
        Ok(Cluster {
            threads,
            process: self.process,
            addresses,
            timeouts,
        })
    }

    fn timeouts(&self) -> Result<Timeouts> {
        let seconds = |flag: &str, s: f64| {
            if s.is_finite() && s > 0.0 && s < 1e9 {
                Ok(Duration::from_secs_f64(s))
            } else {
                Err(anyhow::anyhow!(
                    "--{flag} must be a positive number of seconds, got {s}"
                ))
            }
        };
        Ok(Timeouts {
            connect: seconds("connect-timeout-s", self.connect_timeout_s)?,
            peer: seconds("peer-timeout-s", self.peer_timeout_s)?,
            round: seconds("round-timeout-s", self.round_timeout_s)?,
        })
    }
}
