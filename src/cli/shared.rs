//! Options several commands share: the job file, the page set and its politeness, the cluster.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use revisit_core::units::Seconds;

use super::heading;
use crate::io::pages::Defaults;
use crate::plan::cluster::Timeouts;
use crate::plan::pages::{
    arrange_part_bytes, resolve_defaults, PolitenessKey, DEFAULT_HORIZON, DEFAULT_MAX_REJECT_SHARE,
    DEFAULT_MIN_DELAY_S, SAMPLE_HOSTS, SAMPLE_PAGES,
};
use crate::plan::{Cluster, PagesPlan};

/// `--job FILE`: options from a TOML job file (see [`super::job_file`]); and `-h`/`--help`, under
/// the same heading (each command turns clap's own help flag off).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct JobArg {
    /// Options from a TOML job file; the command line wins
    ///
    /// Keys are option names (crawlers = 40, inputs = ["pages/"]); top-level keys apply to every
    /// command that has the option, keys under [run], [sweep], ... to that command only. A switch
    /// the file sets is turned off by --no-SWITCH. See jobs/nightly.toml.
    #[arg(long, value_name = "FILE", help_heading = heading::OTHER)]
    pub job: Option<PathBuf>,
    /// Print help (--help: the details)
    ///
    /// Print help (-h: one line per option).
    #[arg(short = 'h', long, action = clap::ArgAction::Help, help_heading = heading::OTHER)]
    pub help: Option<bool>,
}

/// The page set a job reads, what rows without a value take, and the hosts' politeness (shared by
/// `run`, `sweep` and `evaluate`).
#[derive(Clone, Debug, clap::Args)]
pub struct PageArgs {
    /// Page sets: Parquet, CSV, TSV or seed-list files, folders, globs
    ///
    /// Files, folders (searched recursively for *.parquet, *.csv, *.tsv and *.txt) or glob
    /// patterns. Columns: url, and optionally host (else taken from the URL), importance (relative
    /// weight > 0), change_rate (changes per day >= 0) and complete_obs (true when every change
    /// is notified). CSV and TSV files have a header row naming the columns; a seed list (.txt) is
    /// one URL a line. Rows without importance or change_rate take --default-importance and
    /// --default-change-days. Default: the sample in data/ with its hosts table.
    #[arg(value_name = "PAGES", help_heading = heading::INPUT)]
    pub inputs: Vec<String>,
    /// Importance of pages without one [default: 1]
    ///
    /// A file without an importance column gives every row this weight (1 unless given: every
    /// page alike). A null importance in a file that has the column is rejected as
    /// importance_missing, unless this option is given: then it fills nulls too. The summary
    /// counts the rows that took it.
    #[arg(long, value_name = "WEIGHT", help_heading = heading::INPUT)]
    pub default_importance: Option<f64>,
    /// Change interval of pages without change_rate [default: 30]
    ///
    /// A file without a change_rate column gives every row the change rate 1/DAYS per day (30
    /// unless given, as Nutch's db.fetch.interval.default; inf: never changes). A null change_rate
    /// in a file that has the column is rejected as change_rate_missing, unless this option is
    /// given: then it fills nulls too (e.g. pages `estimate` found no history for). The summary
    /// counts the rows that took it.
    #[arg(long, value_name = "DAYS", help_heading = heading::INPUT)]
    pub default_change_days: Option<f64>,
    /// Stop if a larger share of rows is rejected
    ///
    /// A share of the rows read: when more are rejected (missing or invalid values, duplicate
    /// URLs), the job stops before solving with the counts by reason and the first rejected rows,
    /// and the previous output stays as it was. 1 accepts any share.
    #[arg(long, value_name = "SHARE", default_value_t = DEFAULT_MAX_REJECT_SHARE, help_heading = heading::INPUT)]
    pub max_reject_share: f64,
    /// Politeness unit: host, domain or ip-column
    ///
    /// host (the host column, normalised: scheme, port, path and trailing dot removed, IDNA names
    /// in ASCII; else the URL's host), domain (the host's registrable domain by the public suffix
    /// list: every subdomain of example.co.uk shares one cap), or ip-column (the input's `ip`
    /// column, e.g. each server's address: hosts on one server share one cap). The hosts table and
    /// the outputs' `host` columns hold this key.
    #[arg(long, value_enum, default_value_t = PolitenessKey::Host, value_name = "KEY", hide_possible_values = true, help_heading = heading::BANDWIDTH)]
    pub politeness_key: PolitenessKey,
    /// Read importance as the value of each new version
    ///
    /// Read `importance` as the value w of finding a new version, so a page is worth w x
    /// change_rate per unit of freshness: with binary-fixed this is Frontera's objective
    /// sum f w (1 - e^(-lambda/f)).
    #[arg(long, overrides_with = "no_value_per_change", help_heading = heading::INPUT)]
    pub value_per_change: bool,
    /// Read importance as it is (undoes --value-per-change from a job file)
    #[arg(long, overrides_with = "value_per_change", hide_short_help = true, help_heading = heading::INPUT)]
    pub no_value_per_change: bool,
    /// Per-host delays: Parquet with host, min_delay_s
    ///
    /// A hosts table with each host's minimum delay between two requests in seconds (e.g.
    /// robots.txt Crawl-delay; 0 = no limit). Hosts not listed get --min-delay-s.
    #[arg(long, value_name = "FILE", help_heading = heading::BANDWIDTH)]
    pub hosts: Option<PathBuf>,
    /// Seconds between two fetches of a host
    ///
    /// Politeness for hosts the hosts table does not list; 0 means no limit, as in the table. A
    /// host's cap is 86400 / min_delay fetches per day (5,760 at 15 s), horizon / min_delay per
    /// horizon.
    #[arg(long, default_value_t = DEFAULT_MIN_DELAY_S, value_name = "SECONDS", help_heading = heading::BANDWIDTH)]
    pub min_delay_s: f64,
    /// Period caps and budgets count in [default: 86400]
    ///
    /// The planning horizon in seconds: the hosts table's caps and budgets are fetches per
    /// horizon, and a timetable repeats every horizon. Default: one day (for `evaluate --visits`,
    /// the horizon the visits files declare).
    #[arg(long, value_name = "SECONDS", help_heading = heading::BANDWIDTH)]
    pub horizon_s: Option<f64>,
}

/// How a job runs: its workers (the cluster) and whether it shows progress (shared by `run`,
/// `sweep` and `evaluate`).
#[derive(Clone, Debug, clap::Args)]
pub struct RunnerArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// No progress lines on stderr
    ///
    /// The summary is still printed on stdout.
    #[arg(long, short, overrides_with = "no_quiet", help_heading = heading::OTHER)]
    pub quiet: bool,
    /// Progress lines on stderr (undoes --quiet from a job file)
    #[arg(long, overrides_with = "quiet", hide_short_help = true, help_heading = heading::OTHER)]
    pub no_quiet: bool,
}

impl PageArgs {
    /// The pages plan: the sample (with its hosts table) when no input is given, the horizon
    /// `horizon_s` (what the command resolved, default one day), the defaults of rows without a
    /// value; fails, naming the option, on a value no job can take.
    pub fn plan(&self, horizon: Option<Seconds>) -> Result<PagesPlan> {
        if !(self.min_delay_s.is_finite() && self.min_delay_s >= 0.0) {
            bail!(
                "--min-delay-s must be seconds >= 0 (0: no limit), got {}",
                self.min_delay_s
            );
        }
        if !(self.max_reject_share >= 0.0 && self.max_reject_share <= 1.0) {
            bail!(
                "--max-reject-share must be a share in [0, 1], got {}",
                self.max_reject_share
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
            defaults: self.defaults()?,
            max_reject_share: self.max_reject_share,
            arrange_part_bytes: arrange_part_bytes()?,
        })
    }

    /// What rows without an importance or a change rate take.
    pub fn defaults(&self) -> Result<Defaults> {
        resolve_defaults(self.default_importance, self.default_change_days)
    }
}

/// Where the job runs: worker threads per process, and the processes of a cluster.
#[derive(Clone, Debug, clap::Args)]
pub struct ClusterArgs {
    /// Worker threads per process [default: the cores]
    #[arg(short = 'w', long, value_name = "THREADS", help_heading = heading::CLUSTER)]
    pub workers: Option<usize>,
    /// Processes in the cluster
    ///
    /// Start the same command on every machine, each with its own --process.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 1, help_heading = heading::CLUSTER)]
    pub processes: usize,
    /// Index of this process, 0..N-1
    #[arg(short = 'p', long, value_name = "INDEX", default_value_t = 0, help_heading = heading::CLUSTER)]
    pub process: usize,
    /// One host:port per process, process 0 first
    ///
    /// Default: localhost:2101, localhost:2102, ...
    #[arg(long, value_name = "FILE", help_heading = heading::CLUSTER)]
    pub hostfile: Option<PathBuf>,
    /// Seconds to wait for all processes to connect
    ///
    /// Then every process gives up, naming the ones that did not come.
    #[arg(long, value_name = "SECONDS", default_value_t = Timeouts::DEFAULT.connect.as_secs_f64(), help_heading = heading::CLUSTER)]
    pub connect_timeout_s: f64,
    /// Silence after which a peer counts as lost
    ///
    /// A process stopped, frozen or cut off: every process then exits non-zero naming it and
    /// publishes nothing. A process that dies is noticed at once.
    #[arg(long, value_name = "SECONDS", default_value_t = Timeouts::DEFAULT.peer.as_secs_f64(), help_heading = heading::CLUSTER)]
    pub peer_timeout_s: f64,
    /// Longest wait for a round's slowest worker
    ///
    /// A round of an exchange or all-reduce: a process alive but making no progress is then named
    /// by every process, which exits non-zero.
    #[arg(long, value_name = "SECONDS", default_value_t = Timeouts::DEFAULT.round.as_secs_f64(), help_heading = heading::CLUSTER)]
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
