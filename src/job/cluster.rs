//! Timely's configuration for a [`Cluster`]: threads in one process, or timely's own cluster mode
//! over TCP (configured here rather than by timely's argument parser, which would reject revisit's
//! options and takes -h for its hostfile).

use crate::plan::Cluster;

/// The timely configuration of `cluster`.
pub fn config(cluster: &Cluster) -> timely::Config {
    if cluster.processes() == 1 {
        return if cluster.threads == 1 {
            timely::Config::thread()
        } else {
            timely::Config::process(cluster.threads)
        };
    }
    timely::Config {
        communication: timely::CommunicationConfig::Cluster {
            threads: cluster.threads,
            process: cluster.process,
            addresses: cluster.addresses.clone(),
            report: false,
            zerocopy: false,
        },
        worker: timely::WorkerConfig::default(),
    }
}
