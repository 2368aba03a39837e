//! Where a job runs: worker threads per process, and the processes of a cluster.

use std::time::Duration;

/// The workers of a job, resolved (the hostfile read, the addresses checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Worker threads per process.
    pub threads: usize,
    /// This process's index, 0..processes.
    pub process: usize,
    /// One `host:port` per process, process 0 first (one process: empty).
    pub addresses: Vec<String>,
    /// How long the processes wait for each other.
    pub timeouts: Timeouts,
}

/// How long a process waits for the others before it gives up, naming the one that did not answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// For every process to connect (processes of a nightly job start a little apart).
    pub connect: Duration,
    /// Silence of a peer (its heartbeat stops: stopped, frozen or cut off) before it counts as lost.
    pub peer: Duration,
    /// For every worker to finish one round of an exchange or all-reduce (a live peer that makes no
    /// progress: the slowest phase of the largest input must fit).
    pub round: Duration,
}

impl Timeouts {
    /// The defaults: 120 s to connect, 30 s of silence, 30 minutes per round.
    pub const DEFAULT: Timeouts = Timeouts {
        connect: Duration::from_secs(120),
        peer: Duration::from_secs(30),
        round: Duration::from_secs(1800),
    };

    /// How often a process tells its peers it is alive: a tenth of the silence that counts as lost,
    /// at most every second.
    pub fn heartbeat(&self) -> Duration {
        (self.peer / 10).clamp(Duration::from_millis(20), Duration::from_secs(1))
    }
}

impl Cluster {
    /// One process with `threads` workers.
    pub fn local(threads: usize) -> Self {
        Cluster {
            threads,
            process: 0,
            addresses: Vec::new(),
            timeouts: Timeouts::DEFAULT,
        }
    }

    /// Number of processes.
    pub fn processes(&self) -> usize {
        self.addresses.len().max(1)
    }

    /// The process a worker belongs to.
    pub fn process_of(&self, worker: usize) -> usize {
        worker / self.threads.max(1)
    }

    /// `process N (host:port)`, for messages.
    pub fn name(&self, process: usize) -> String {
        match self.addresses.get(process) {
            Some(a) => format!("process {process} ({a})"),
            None => format!("process {process}"),
        }
    }
}
