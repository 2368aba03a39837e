//! The control plane of a cluster run, beside timely's data streams: heartbeats, the lead's outcome,
//! and the one way a process gives up when another is lost.
//!
//! Why heartbeats on streams of their own (rather than a deadline on every round alone): a round
//! lasts as long as the slowest legitimate phase of the largest input, so a deadline long enough
//! for that would notice a stopped peer only after many minutes. A heartbeat thread answers
//! whatever the workers are doing, so a stopped, frozen or cut-off peer is named after
//! `--peer-timeout-s` of silence, and a dead one (its streams close) at once. The round deadline
//! ([`super::channel`]) remains for a peer alive but making no progress.
//!
//! Publication is the one step where giving up needs care: once every file is written, the lead
//! swaps the output into place. A process that loses the lead then "vetoes" by renaming the staging
//! folder away (an atomic rename that either precedes the lead's swap, which then fails, or follows
//! it), and reads which run the output holds: it exits 0 if ours was published, non-zero if not.
//! The lead, losing a peer, waits for a swap in progress and does the same check. So a process exits
//! 0 exactly when the run's output is in place.

use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use super::mesh::{receive, send, Message};
use crate::io::publish;
use crate::plan::Cluster;

/// Exit status of a process that gave up because another process was lost (died, stopped,
/// unreachable, or making no progress); nothing was published.
pub const EXIT_PEER_LOST: i32 = 4;
/// Exit status of a run that failed for any other reason; nothing was published.
pub const EXIT_FAILED: i32 = 2;

/// A run's output on its way to publication: where the lead swaps it in, and the run's id.
#[derive(Clone, Debug)]
pub struct Publication {
    pub staging: PathBuf,
    pub out: PathBuf,
    pub run_id: String,
}

struct State {
    cluster: Cluster,
    writers: Vec<Option<Mutex<TcpStream>>>,
    outcome: Mutex<Option<Result<(), String>>>,
    outcome_ready: Condvar,
}

static STATE: OnceLock<State> = OnceLock::new();
/// Set when one of this process's workers has returned (its part of the job is done).
static FINISHED: AtomicBool = AtomicBool::new(false);
/// Set by the first thread that gives up.
static GIVING_UP: AtomicBool = AtomicBool::new(false);
/// This process's own result once known: (exit status, message).
static ENDING: Mutex<Option<(i32, String)>> = Mutex::new(None);
/// The run's output once every worker has written its files.
static PUBLICATION: Mutex<Option<Publication>> = Mutex::new(None);
/// Held by the lead across the swap of the output.
static SWAP: Mutex<()> = Mutex::new(());

/// The cluster this process belongs to, for round deadlines and messages (every run, one process
/// or several).
static CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// Notes the cluster of this process (its round deadline, its processes' names).
pub fn set_cluster(cluster: &Cluster) {
    CLUSTER.set(cluster.clone()).ok();
}

/// How long one round of an exchange may wait.
pub fn round_timeout() -> Duration {
    CLUSTER
        .get()
        .map_or(crate::plan::cluster::Timeouts::DEFAULT.round, |c| {
            c.timeouts.round
        })
}

/// "workers 2, 3 of process 1 (host:port)": the workers `waiting` names, by process.
pub fn describe_workers(waiting: &[usize]) -> String {
    let Some(c) = CLUSTER.get() else {
        return format!("workers {waiting:?}");
    };
    let mut by_process: Vec<(usize, Vec<usize>)> = Vec::new();
    for &w in waiting {
        let p = c.process_of(w);
        match by_process.last_mut() {
            Some((q, ws)) if *q == p => ws.push(w),
            _ => by_process.push((p, vec![w])),
        }
    }
    let parts: Vec<String> = by_process
        .iter()
        .map(|(p, ws)| {
            let ws: Vec<String> = ws.iter().map(|w| w.to_string()).collect();
            format!("worker {} of {}", ws.join(", "), c.name(*p))
        })
        .collect();
    format!("{}, alive but not finishing the round", parts.join("; "))
}

/// Starts the heartbeat and the watch of every peer on the control streams (cluster runs).
pub fn start(cluster: &Cluster, control: Vec<Option<TcpStream>>) {
    let timeouts = cluster.timeouts;
    let mut readers = Vec::new();
    let writers = control
        .into_iter()
        .enumerate()
        .map(|(p, s)| {
            let s = s?;
            s.set_write_timeout(Some(timeouts.peer)).ok();
            s.set_read_timeout(Some(timeouts.peer)).ok();
            if let Ok(r) = s.try_clone() {
                readers.push((p, r));
            }
            Some(Mutex::new(s))
        })
        .collect();
    let state = State {
        cluster: cluster.clone(),
        writers,
        outcome: Mutex::new(None),
        outcome_ready: Condvar::new(),
    };
    if STATE.set(state).is_err() {
        return; // one cluster per process
    }
    let beat = timeouts.heartbeat();
    std::thread::Builder::new()
        .name("revisit:heartbeat".into())
        .spawn(move || loop {
            std::thread::sleep(beat);
            broadcast(&Message::Beat);
        })
        .ok();
    for (p, stream) in readers {
        std::thread::Builder::new()
            .name(format!("revisit:watch-{p}"))
            .spawn(move || watch(p, stream))
            .ok();
    }
}

/// Sends `message` to every peer, best effort.
fn broadcast(message: &Message) {
    if let Some(state) = STATE.get() {
        for w in state.writers.iter().flatten() {
            if let Ok(mut s) = w.lock() {
                send(&mut s, message).ok();
            }
        }
    }
}

/// Reads peer `p`'s control stream until it says goodbye; gives up if it falls silent or leaves.
fn watch(p: usize, mut stream: TcpStream) {
    let Some(state) = STATE.get() else { return };
    let name = state.cluster.name(p);
    let silence = state.cluster.timeouts.peer.as_secs_f64();
    loop {
        match receive(&mut stream) {
            Ok(Message::Beat | Message::Hello(_) | Message::Ready(_)) => {}
            Ok(Message::Outcome(o)) => {
                if let Ok(mut slot) = state.outcome.lock() {
                    *slot = Some(o);
                }
                state.outcome_ready.notify_all();
            }
            Ok(Message::Abort(message)) => give_up(format!("{message} (reported by {name})")),
            Ok(Message::Bye(result)) => {
                if p == 0 {
                    // the lead ends: whatever it did not announce, it did not publish
                    if let Ok(mut slot) = state.outcome.lock() {
                        slot.get_or_insert(Err(format!("{name} ended without publishing")));
                    }
                    state.outcome_ready.notify_all();
                }
                if FINISHED.load(Ordering::SeqCst) {
                    return;
                }
                give_up(match result {
                    Ok(()) => format!("{name} ended before this process finished"),
                    Err(e) => format!("{name} failed: {e}"),
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                give_up(format!(
                    "{name} sent nothing for {silence:.0} s (--peer-timeout-s): it is stopped, frozen or cut off"
                ))
            }
            Err(e) => give_up(format!(
                "{name} closed its connection without finishing: the process died (killed, out of memory or crashed){}",
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    String::new()
                } else {
                    format!(" ({e})")
                }
            )),
        }
    }
}

/// Notes that a worker of this process has returned (its share of the job is done).
pub fn worker_returned() {
    FINISHED.store(true, Ordering::SeqCst);
}

/// Notes that every worker has written its files: from here on, losing the lead means checking
/// whether it published.
pub fn publication_begins(p: Publication) {
    if let Ok(mut slot) = PUBLICATION.lock() {
        slot.get_or_insert(p);
    }
}

/// Runs the lead's swap of the output so that giving up never interrupts it.
pub fn swap<T>(f: impl FnOnce() -> T) -> T {
    let _held = SWAP.lock();
    f()
}

/// The lead tells every peer whether the output was published.
pub fn announce(outcome: Result<(), String>) {
    broadcast(&Message::Outcome(outcome));
}

/// A peer waits for the lead's outcome (the watch gives up if the lead is lost meanwhile).
pub fn await_outcome() -> Result<(), String> {
    let Some(state) = STATE.get() else {
        return Ok(());
    };
    let mut slot = state.outcome.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(o) = slot.clone() {
            return o;
        }
        slot = state
            .outcome_ready
            .wait_timeout(slot, Duration::from_millis(200))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// This process ends in order with `result`: it tells its peers (which stop watching it).
pub fn end(result: &Result<(), String>) {
    FINISHED.store(true, Ordering::SeqCst);
    if let Ok(mut e) = ENDING.lock() {
        *e = Some(match result {
            Ok(()) => (0, String::new()),
            Err(m) => (EXIT_FAILED, m.clone()),
        });
    }
    broadcast(&Message::Bye(result.clone()));
}

/// Gives up the whole process: another process is lost (`message` names it). Exits 0 only if this
/// run's output is published after all (see the module notes); never returns.
pub fn give_up(message: String) -> ! {
    if GIVING_UP.swap(true, Ordering::SeqCst) {
        // another thread is already ending the process
        loop {
            std::thread::park();
        }
    }
    let ending = ENDING.lock().ok().and_then(|e| e.clone());
    if let Some((code, text)) = ending {
        // our own result is known: the loss comes too late to change it
        if code == 0 {
            eprintln!("[revisit] note, after this process had finished: {message}");
        } else {
            eprintln!("error: {text}");
        }
        std::process::exit(code);
    }
    let publication = PUBLICATION.lock().ok().and_then(|p| p.clone());
    if let Some(p) = publication {
        let lead = STATE.get().is_none_or(|s| s.cluster.process == 0);
        // the lead lets a swap in progress finish (and stops any later one); the others move the
        // staging folder away, so that a lead that was only slow cannot swap it in after we left
        let _held = if lead {
            Some(SWAP.lock())
        } else {
            publish::abandon(&p.staging);
            None
        };
        if publish::published_run(&p.out).as_deref() == Some(p.run_id.as_str()) {
            eprintln!(
                "[revisit] warning: {message}; the output of this run ({}) was published, complete, in {}",
                p.run_id,
                p.out.display()
            );
            std::process::exit(0);
        }
    }
    eprintln!("error: {message}; nothing published");
    broadcast(&Message::Abort(message));
    std::process::exit(EXIT_PEER_LOST);
}

/// Installs the process's panic handling: a broken timely connection (a peer died) gives up with
/// a message naming the peer; any other panic is a bug, and aborts the process (so that the job ends
/// with a failure status and publishes nothing, rather than leaving the other workers waiting).
pub fn install_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let thread = std::thread::current().name().map(str::to_owned);
        let peer = thread.as_deref().and_then(|n| {
            n.strip_prefix("timely:recv-")
                .or_else(|| n.strip_prefix("timely:send-"))
                .and_then(|i| i.parse::<usize>().ok())
        });
        if let Some(p) = peer {
            // the control stream usually knows better (the peer's own reason, or that it died):
            // let it speak first
            std::thread::sleep(Duration::from_millis(300));
            let name = STATE
                .get()
                .map_or(format!("process {p}"), |s| s.cluster.name(p));
            give_up(format!(
                "the connection to {name} broke: the process died or its network failed ({text})"
            ));
        }
        if text.contains("MergeQueue poisoned") || text.starts_with("timely communication error") {
            give_up(format!("a connection to another process broke ({text})"));
        }
        default_hook(info);
        std::process::abort();
    }));
}
