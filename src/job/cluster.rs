//! Timely's own cluster mode, configured from revisit's command line (timely's argument parser would
//! reject our flags and takes -h for its hostfile: STACK.md).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

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
}

/// Default first port of timely's clusters.
const DEFAULT_PORT: usize = 2101;

impl ClusterArgs {
    /// Worker threads per process.
    pub fn threads(&self) -> usize {
        self.workers
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            })
            .max(1)
    }

    /// The timely configuration.
    pub fn config(&self) -> Result<timely::Config> {
        let threads = self.threads();
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
        if self.processes == 1 {
            return Ok(if threads == 1 {
                timely::Config::thread()
            } else {
                timely::Config::process(threads)
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
        Ok(timely::Config {
            communication: timely::CommunicationConfig::Cluster {
                threads,
                process: self.process,
                addresses,
                report: false,
                zerocopy: false,
            },
            worker: timely::WorkerConfig::default(),
        })
    }
}
