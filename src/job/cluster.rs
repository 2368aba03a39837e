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

/// Starts this process's workers of a cluster on connections already made ([`super::mesh`]): timely's
/// own networking, from its public entry for ready sockets.
pub fn start<T, F>(
    cluster: &Cluster,
    data: Vec<Option<std::net::TcpStream>>,
    program: F,
) -> Result<timely::communication::WorkerGuards<T>, String>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> T + Send + Sync + 'static,
{
    use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
    use timely::communication::allocator::{AllocatorBuilder, ProcessBuilder};
    let hooks = timely::communication::Hooks::default();
    let builders = ProcessBuilder::new_typed_vector(
        cluster.threads,
        hooks.refill.clone(),
        hooks.spill.clone(),
    );
    let (tcp, guard) =
        initialize_networking_from_sockets(builders, data, cluster.process, cluster.threads, hooks)
            .map_err(|e| format!("starting the network: {e}"))?;
    timely::execute::execute_from(
        tcp.into_iter().map(AllocatorBuilder::Tcp).collect(),
        Box::new(guard),
        timely::WorkerConfig::default(),
        program,
    )
}
