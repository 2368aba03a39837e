//! The job's parameters, as the command line gives them.

use std::path::PathBuf;

use crate::job::cluster::ClusterArgs;
use revisit_core::objective::Objective;
use revisit_core::schedule::timetable::Sequencing;
use revisit_core::units::SECONDS_PER_DAY;

/// Folder of the sample page set shipped in the repository (used when no input is given).
pub const SAMPLE_PAGES: &str = "data/pages";
/// `--horizon-s` when not given: one day. (`evaluate --visits` takes the files' horizon instead,
/// and refuses a `--horizon-s` that contradicts it.)
pub const DEFAULT_HORIZON_S: f64 = 86_400.0;
/// Hosts table of the sample.
pub const SAMPLE_HOSTS: &str = "data/hosts.parquet";

/// The page set a job reads, its politeness, and how the job runs (shared by `run`, `sweep` and
/// `evaluate`).
#[derive(Clone, Debug, clap::Args)]
pub struct PageArgs {
    /// Page sets: Parquet files, folders (searched recursively) or glob patterns. Columns: url,
    /// importance (> 0), change_rate (changes per day, >= 0), and optionally host (else taken from
    /// the URL) and complete_obs (bool). Default: the sample in data/ with its hosts table.
    pub inputs: Vec<String>,
    /// Job spec (TOML) with any of these options as keys, e.g. jobs/nightly.toml; options given on
    /// the command line win over the file.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// Hosts table (Parquet: host, min_delay_s) with per-host politeness delays, e.g. robots.txt
    /// Crawl-delay; hosts not listed get --min-delay-s.
    #[arg(long)]
    pub hosts: Option<PathBuf>,
    /// Politeness: minimum seconds between two requests to one host, for hosts not in --hosts. A
    /// host's cap is horizon / min_delay fetches per horizon.
    #[arg(long, default_value_t = 15.0, value_name = "SECONDS")]
    pub min_delay_s: f64,
    /// Planning horizon in seconds (caps and budgets in the hosts table are per horizon) [default:
    /// 86400, one day; for `evaluate --visits`, the horizon the visits files declare].
    #[arg(long, value_name = "SECONDS")]
    pub horizon_s: Option<f64>,
    /// Read `importance` as the value w of finding a new version, so a page is worth w x change_rate
    /// per unit of freshness: with binary-fixed this is Frontera's objective sum f w (1 - e^(-lambda/f)).
    #[arg(long)]
    pub value_per_change: bool,
    /// No progress lines on stderr (the summary is still printed).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

impl PageArgs {
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

    /// The planning horizon in seconds: --horizon-s, else one day.
    pub fn horizon_s(&self) -> f64 {
        self.horizon_s.unwrap_or(DEFAULT_HORIZON_S)
    }

    /// Checks the numeric parameters before any work starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::bail;
        if !(self.min_delay_s.is_finite() && self.min_delay_s > 0.0) {
            bail!(
                "--min-delay-s must be positive seconds, got {}",
                self.min_delay_s
            );
        }
        let horizon_s = self.horizon_s();
        if !(horizon_s.is_finite() && horizon_s > 0.0) {
            bail!("--horizon-s must be positive seconds, got {horizon_s}");
        }
        Ok(())
    }
}

/// Parameters of `revisit run`.
#[derive(Clone, Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub pages: PageArgs,
    /// Total crawl bandwidth, fetches per day over all crawlers.
    #[arg(long, value_name = "FETCHES_PER_DAY")]
    pub bandwidth: Option<f64>,
    /// Bandwidth as a multiple of the number of valid URLs (0.2 = one fetch per URL every 5 days on
    /// average). Default 0.2 when --bandwidth is not given.
    #[arg(long, value_name = "MULTIPLE")]
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
    /// Number of crawlers; each host is crawled by exactly one.
    #[arg(long, default_value_t = 10)]
    pub crawlers: u32,
    /// Output folder (replaced atomically when the run succeeds).
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Indexer capacity, pages per day: with it the summary says how many crawlers the static
    /// M/M/1/K model recommends for this bandwidth (Liu & Nain Prop. 1; see `plan-crawlers`).
    #[arg(long, value_name = "PAGES_PER_DAY")]
    pub index_rate: Option<f64>,
    /// Indexer buffer in pages, the page being indexed included (with --index-rate).
    #[arg(long, default_value_t = 1000)]
    pub index_buffer: usize,
    /// Cost of an idle indexer in lost pages per day (with --index-rate; default: the index rate).
    #[arg(long)]
    pub index_gamma: Option<f64>,
    /// Also write each crawler's timetable for one horizon, DIR/visits/crawler=NNN/: integer visits
    /// per URL that maximise binary freshness of evenly spaced visits (PUC-Rio Phase 1), or with
    /// --objective harmonic and a budget that visits every changing page, minimise their harmonic
    /// penalty (below that budget every choice leaves a changing page unvisited at infinite
    /// penalty, so freshness decides), within the bandwidth and the hosts' caps, per-host schedules
    /// (--sequencing), then each crawler's fetches at --crawler-rate, never impolite (Phase 3).
    /// Off by default: the other tables are the same with or without it.
    #[arg(long)]
    pub timetable: bool,
    /// How a host's visits are ordered in time (with --timetable): merge (PUC-Rio MERGE), mp2
    /// (each URL evenly spaced, no merge), carousel (earliest deadline, PNAS'18 Alg. 3),
    /// golden-ratio (Liu & Nain §1.3.4).
    #[arg(long, value_enum, default_value_t = Sequencing::Merge)]
    pub sequencing: Sequencing,
    /// Fetches per second one crawler can make (with --timetable). Default: 1.25 x bandwidth /
    /// crawlers / 86400, i.e. 25% headroom over a crawler's mean share of the bandwidth, and at
    /// least 2 / --min-delay-s (two fetches per politeness delay, to interleave hosts).
    #[arg(long, value_name = "FETCHES_PER_S")]
    pub crawler_rate: Option<f64>,
    /// Start of the horizon, RFC 3339 (e.g. 2026-11-23T00:00:00Z; with --timetable): the visits
    /// tables then also have an `at` timestamp column (UTC, microseconds).
    #[arg(long, value_name = "RFC3339")]
    pub start: Option<String>,
}

/// The bandwidth default when neither --bandwidth nor --bandwidth-fraction is given.
pub const DEFAULT_BANDWIDTH_FRACTION: f64 = 0.2;

/// Default --crawler-rate: this much more than a crawler's mean share of the bandwidth.
pub const CRAWLER_RATE_HEADROOM: f64 = 1.25;

/// Default --crawler-rate: at least this many fetches per --min-delay-s. A crawler that cannot
/// fetch twice within a host's delay cannot serve anything between two visits of a host at its cap
/// without delaying it: the capped host slips, night after night, and loses visits at the
/// wrap-around (the sample's 10 crawlers at their mean share ticked every 173 s against a 300 s
/// Crawl-delay, and dropped 59 of 4,000 visits at 83% utilisation).
pub const CRAWLER_FETCHES_PER_DELAY: f64 = 2.0;

/// The crawler rate in fetches per second: --crawler-rate, else [`CRAWLER_RATE_HEADROOM`] x the
/// bandwidth (fetches per day) shared by the crawlers, and at least [`CRAWLER_FETCHES_PER_DELAY`]
/// per `min_delay_s`.
pub fn crawler_rate(
    given: Option<f64>,
    bandwidth_per_day: f64,
    crawlers: u32,
    min_delay_s: f64,
) -> f64 {
    given.unwrap_or_else(|| {
        let share = bandwidth_per_day / crawlers.max(1) as f64 / SECONDS_PER_DAY;
        (CRAWLER_RATE_HEADROOM * share).max(CRAWLER_FETCHES_PER_DELAY / min_delay_s)
    })
}

impl RunArgs {
    /// Checks the numeric parameters before any work starts.
    pub fn validate(&self) -> anyhow::Result<()> {
        use anyhow::bail;
        if self.bandwidth.is_some() && self.bandwidth_fraction.is_some() {
            bail!("give --bandwidth or --bandwidth-fraction, not both (a job file may set one of them)");
        }
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
        self.pages.validate()?;
        if self.crawlers == 0 {
            bail!("--crawlers must be at least 1");
        }
        if !(self.floor >= 0.0 && self.floor < 1.0) {
            bail!(
                "--floor must be in [0, 1): it is the share of the bandwidth spread evenly as floors, got {} \
                 (--objective uniform is the policy of a floor of 1)",
                self.floor
            );
        }
        if let Some(c) = self.crawler_rate {
            if !(c.is_finite() && c > 0.0) {
                bail!("--crawler-rate must be a positive number of fetches per second, got {c}");
            }
        }
        if let Some(s) = &self.start {
            crate::rfc3339::parse_micros(s).map_err(|e| anyhow::anyhow!("--start {s}: {e}"))?;
        }
        if !self.timetable && (self.crawler_rate.is_some() || self.start.is_some()) {
            bail!("--crawler-rate and --start describe the timetable: give --timetable too");
        }
        if let Some(mu) = self.index_rate {
            if !(mu.is_finite() && mu > 0.0) {
                bail!("--index-rate must be a positive number of pages per day, got {mu}");
            }
            if self.index_buffer == 0 {
                bail!("--index-buffer must be at least 1 (it counts the page being indexed)");
            }
            if let Some(g) = self.index_gamma {
                if !(g.is_finite() && g >= 0.0) {
                    bail!("--index-gamma must be a non-negative number of pages per day, got {g}");
                }
            }
        }
        Ok(())
    }
}

/// The subcommands that take `--job FILE`.
const JOB_COMMANDS: [&str; 3] = ["run", "sweep", "evaluate"];

/// Expands `run --job FILE` (or `sweep`, `evaluate`) in a command line: the file's keys become options placed before the
/// command line's own, so the command line wins (the `run` command lets a later option override an
/// earlier one). `inputs` (a list) applies only when the command line names no input.
pub fn expand_job_file(argv: Vec<String>) -> anyhow::Result<Vec<String>> {
    use anyhow::{bail, Context};
    let Some(run_at) = argv.iter().position(|a| JOB_COMMANDS.contains(&a.as_str())) else {
        return Ok(argv);
    };
    let job_at = argv
        .iter()
        .skip(run_at)
        .position(|a| a == "--job" || a.starts_with("--job="))
        .map(|i| i + run_at);
    let Some(job_at) = job_at else {
        return Ok(argv);
    };
    let path = match argv[job_at].strip_prefix("--job=") {
        Some(p) => p.to_owned(),
        None => argv
            .get(job_at + 1)
            .cloned()
            .context("--job needs a file")?,
    };
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading job file {path}"))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("job file {path} is not valid TOML"))?;
    let mut from_file = Vec::new();
    let mut inputs = Vec::new();
    for (key, value) in &table {
        let flag = format!("--{}", key.replace('_', "-"));
        match value {
            toml::Value::Array(items) if key == "inputs" => {
                for item in items {
                    match item.as_str() {
                        Some(s) => inputs.push(s.to_owned()),
                        None => bail!("job file {path}: inputs must be a list of strings"),
                    }
                }
            }
            toml::Value::String(s) => from_file.extend([flag, s.clone()]),
            toml::Value::Integer(i) => from_file.extend([flag, i.to_string()]),
            toml::Value::Float(f) => from_file.extend([flag, f.to_string()]),
            toml::Value::Boolean(true) => from_file.push(flag),
            toml::Value::Boolean(false) => {}
            _ => bail!("job file {path}: key {key} must be a string, a number or a boolean"),
        }
    }
    let mut out: Vec<String> = argv[..=run_at].to_vec();
    out.extend(from_file);
    out.extend(argv[run_at + 1..].iter().cloned());
    // The command line's own inputs win; else the file's.
    let explicit_inputs = has_positional(&argv[run_at + 1..]);
    if !explicit_inputs && !inputs.is_empty() {
        out.push("--".into());
        out.extend(inputs);
    }
    Ok(out)
}

/// Whether run's arguments include a positional (an input), knowing which options take a value.
fn has_positional(args: &[String]) -> bool {
    const FLAGS: [&str; 4] = ["-q", "--quiet", "--help", "--timetable"];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            return i + 1 < args.len();
        }
        if a.starts_with('-') {
            let takes_value = !FLAGS.contains(&a.as_str()) && !a.contains('=');
            i += if takes_value { 2 } else { 1 };
        } else {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_command_line_wins_over_the_job_file() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("j.toml");
        std::fs::write(&job, "inputs = [\"a\", \"b\"]\ncrawlers = 4\nobjective = \"binary\"\nquiet = true\nmin_delay_s = 2.5\n").unwrap();
        let j = job.to_str().unwrap();
        let run =
            parse(expand_job_file(argv(&format!("revisit run --job {j} --crawlers 7"))).unwrap());
        assert_eq!(run.crawlers, 7);
        assert_eq!(run.pages.inputs, vec!["a", "b"]);
        assert!(run.pages.quiet);
        assert_eq!(run.pages.min_delay_s, 2.5);
        assert_eq!(run.objective, Objective::Binary);
        let run = parse(expand_job_file(argv(&format!("revisit run --job {j} c"))).unwrap());
        assert_eq!(run.pages.inputs, vec!["c"]);
        assert_eq!(run.crawlers, 4);
    }

    fn parse(argv: Vec<String>) -> RunArgs {
        match <Cli as clap::Parser>::try_parse_from(argv).unwrap().cmd {
            Cmd::Run(a) => a,
        }
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }

    #[derive(clap::Subcommand)]
    enum Cmd {
        #[command(args_override_self = true)]
        Run(RunArgs),
    }
}
