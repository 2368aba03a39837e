//! Where a job runs: worker threads per process, and the processes of a cluster.

/// The workers of a job, resolved (the hostfile read, the addresses checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Worker threads per process.
    pub threads: usize,
    /// This process's index, 0..processes.
    pub process: usize,
    /// One `host:port` per process, process 0 first (one process: empty).
    pub addresses: Vec<String>,
}

impl Cluster {
    /// One process with `threads` workers.
    pub fn local(threads: usize) -> Self {
        Cluster {
            threads,
            process: 0,
            addresses: Vec::new(),
        }
    }

    /// Number of processes.
    pub fn processes(&self) -> usize {
        self.addresses.len().max(1)
    }
}
