//! A cluster's connections, made before timely starts: every pair of processes gets a data stream
//! (handed to timely) and a control stream (heartbeats and outcomes, [`super::control`]), within a
//! deadline. Over the control streams the processes then agree before any work: the same job
//! (fingerprints of their resolved plans), and a lead able to run it on storage everyone sees.
//!
//! Why our own connections rather than timely's: timely retries a missing peer forever and prints
//! "awaiting connections" every second; here a peer that does not come within `--connect-timeout-s`
//! is named and every process gives up. The streams are timely's kind (TCP, one per pair, the
//! higher index dialling the lower), handed over through its public
//! `initialize_networking_from_sockets`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::plan::fingerprint::{differences, Fingerprint};
use crate::plan::Cluster;

/// First bytes of every stream between revisit processes ("revisit" and a protocol version): a
/// stray connection (a port scanner, an older build) is dropped.
const MAGIC: u64 = 0x7265_7669_7369_7402;
/// A stream's role, in its first bytes after the magic and the dialler's index.
const DATA: u8 = 0;
const CONTROL: u8 = 1;
/// Largest control message accepted (a fingerprint lists every input file).
const MAX_MESSAGE: u32 = 64 << 20;

/// What travels on the control streams.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Message {
    /// The first message: who I am and the job I was given.
    Hello(Hello),
    /// Whether this process can run the job the lead prepared (it sees the lead's files).
    Ready(Result<(), String>),
    /// Still alive.
    Beat,
    /// From the lead: the output was published, or why not.
    Outcome(Result<(), String>),
    /// This process gives up for the reason given (naming the process at fault).
    Abort(String),
    /// This process ends in order: its result.
    Bye(Result<(), String>),
}

/// A process's introduction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello {
    pub process: usize,
    pub fingerprint: Fingerprint,
    /// The lead's preparation: the run's token (its id), or why the lead cannot run; None from the
    /// others.
    pub token: Option<Result<String, String>>,
}

/// The connections of one process: a data and a control stream per peer (None at its own index).
pub struct Mesh {
    pub data: Vec<Option<TcpStream>>,
    pub control: Vec<Option<TcpStream>>,
    /// The token the lead prepared (the run id).
    pub token: String,
}

/// Writes one control message.
pub fn send(stream: &mut TcpStream, message: &Message) -> std::io::Result<()> {
    let bytes = bincode::serialize(message).map_err(std::io::Error::other)?;
    let mut framed = Vec::with_capacity(bytes.len() + 4);
    framed.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    framed.extend_from_slice(&bytes);
    stream.write_all(&framed)
}

/// Reads one control message (the stream's read timeout applies).
pub fn receive(stream: &mut TcpStream) -> std::io::Result<Message> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len > MAX_MESSAGE {
        return Err(std::io::Error::other(format!(
            "a control message of {len} bytes"
        )));
    }
    let mut bytes = vec![0u8; len as usize];
    stream.read_exact(&mut bytes)?;
    bincode::deserialize(&bytes).map_err(std::io::Error::other)
}

/// Connects this process to every other one and agrees on the job, or fails naming the process
/// at fault. `prepare` runs on the lead (process 0) before it introduces itself (it takes the output
/// lock) and gives the token the others `check` (that they see the lead's files).
pub fn connect(
    cluster: &Cluster,
    fingerprint: Fingerprint,
    prepare: impl FnOnce() -> Result<String>,
    check: impl FnOnce(&str) -> Result<()>,
    say: impl Fn(&str),
) -> Result<Mesh> {
    let (data, mut control) = dial(cluster, &say)?;
    let me = cluster.process;
    let deadline = Instant::now() + cluster.timeouts.connect.max(Duration::from_secs(10));
    let token = (me == 0).then(|| prepare().map_err(|e| format!("{e:#}")));
    let hello = Message::Hello(Hello {
        process: me,
        fingerprint: fingerprint.clone(),
        token: token.clone(),
    });
    let peers: Vec<usize> = (0..cluster.processes()).filter(|&p| p != me).collect();
    for &p in &peers {
        let stream = control[p].as_mut().expect("connected");
        send(stream, &hello)
            .with_context(|| format!("introducing this process to {}", cluster.name(p)))?;
    }
    let mut disagreements = Vec::new();
    let mut lead_token = token;
    for &p in &peers {
        let stream = control[p].as_mut().expect("connected");
        match read_before(stream, deadline, cluster, p)? {
            Message::Hello(h) => {
                let diff = differences(&fingerprint, &h.fingerprint);
                if !diff.is_empty() {
                    disagreements.push(format!(
                        "  {} was given another job: {}",
                        cluster.name(p),
                        diff.join("; ")
                    ));
                }
                if p == 0 {
                    lead_token = h.token;
                }
            }
            other => bail!(
                "{} sent {other:?} instead of its introduction",
                cluster.name(p)
            ),
        }
    }
    if !disagreements.is_empty() {
        bail!(
            "the processes disagree on the job, so none starts (start every process with the same arguments, on the same inputs and hosts table; \"here\" is {}):\n{}",
            cluster.name(me),
            disagreements.join("\n")
        );
    }
    let token = match lead_token {
        Some(Ok(t)) => t,
        Some(Err(e)) => bail!("{} cannot run the job: {e}", cluster.name(0)),
        None => bail!("{} did not prepare the run", cluster.name(0)),
    };
    let ready = if me == 0 {
        Ok(())
    } else {
        check(&token).map_err(|e| format!("{e:#}"))
    };
    for &p in &peers {
        let stream = control[p].as_mut().expect("connected");
        send(stream, &Message::Ready(ready.clone()))
            .with_context(|| format!("telling {} this process is ready", cluster.name(p)))?;
    }
    let mut refusals = Vec::new();
    if let Err(e) = &ready {
        refusals.push(format!("  {} (this process): {e}", cluster.name(me)));
    }
    for &p in &peers {
        let stream = control[p].as_mut().expect("connected");
        match read_before(stream, deadline, cluster, p)? {
            Message::Ready(Ok(())) => {}
            Message::Ready(Err(e)) => refusals.push(format!("  {}: {e}", cluster.name(p))),
            other => bail!(
                "{} sent {other:?} instead of its readiness",
                cluster.name(p)
            ),
        }
    }
    if !refusals.is_empty() {
        bail!(
            "not every process can run the job, so none starts:\n{}",
            refusals.join("\n")
        );
    }
    Ok(Mesh {
        data,
        control,
        token,
    })
}

/// Reads the next handshake message from process `p`, or fails naming it.
fn read_before(
    stream: &mut TcpStream,
    deadline: Instant,
    cluster: &Cluster,
    p: usize,
) -> Result<Message> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(10));
    stream.set_read_timeout(Some(left))?;
    receive(stream).map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => anyhow::anyhow!(
            "{} connected but did not answer within {:.0} s (stopped or overloaded?)",
            cluster.name(p),
            cluster.timeouts.connect.as_secs_f64()
        ),
        _ => anyhow::anyhow!(
            "{} left while the processes were agreeing on the job ({e}); its own message says why",
            cluster.name(p)
        ),
    })
}

/// Two streams per peer, within the connect deadline.
#[allow(clippy::type_complexity)]
fn dial(
    cluster: &Cluster,
    say: &impl Fn(&str),
) -> Result<(Vec<Option<TcpStream>>, Vec<Option<TcpStream>>)> {
    let (me, n) = (cluster.process, cluster.processes());
    let timeout = cluster.timeouts.connect;
    let started = Instant::now();
    let deadline = started + timeout;
    let listener = listen(&cluster.addresses[me], deadline).with_context(|| {
        format!(
            "{} cannot listen on its address from the hostfile",
            cluster.name(me)
        )
    })?;
    listener.set_nonblocking(true)?;
    let mut streams: [Vec<Option<TcpStream>>; 2] = [
        (0..n).map(|_| None).collect(),
        (0..n).map(|_| None).collect(),
    ];
    let mut next_word = started + Duration::from_secs(2);
    loop {
        let missing: Vec<usize> = (0..n)
            .filter(|&p| p != me && (streams[0][p].is_none() || streams[1][p].is_none()))
            .collect();
        if missing.is_empty() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            let names: Vec<String> = missing.iter().map(|&p| cluster.name(p)).collect();
            bail!(
                "{} did not connect within {:.0} s (--connect-timeout-s): start every process with the same --hostfile and its own -p, and check that the addresses are reachable",
                names.join(", "),
                timeout.as_secs_f64()
            );
        }
        let mut progress = false;
        // the higher index dials the lower (as timely does)
        for &p in missing.iter().filter(|&&p| p < me) {
            for kind in [DATA, CONTROL] {
                if streams[kind as usize][p].is_some() {
                    continue;
                }
                if let Some(s) = dial_one(&cluster.addresses[p], me, kind) {
                    streams[kind as usize][p] = Some(s);
                    progress = true;
                }
            }
        }
        while let Ok((stream, _)) = listener.accept() {
            if let Some((p, kind)) = greeted(&stream, me, n) {
                streams[kind as usize][p] = Some(stream);
                progress = true;
            }
        }
        if Instant::now() >= next_word {
            let names: Vec<String> = missing.iter().map(|&p| cluster.name(p)).collect();
            say(&format!(
                "waiting for {} to connect (giving up in {:.0} s)",
                names.join(", "),
                deadline
                    .saturating_duration_since(Instant::now())
                    .as_secs_f64()
            ));
            next_word = Instant::now() + Duration::from_secs(10);
        }
        if !progress {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let [data, control] = streams;
    for s in data.iter().chain(&control).flatten() {
        s.set_nonblocking(false)?;
        s.set_nodelay(true)?;
        // no read timeout on timely's streams: it would end a quiet phase, and a socket with one
        // fails reads with EINTR when its process is stopped and continued, which timely treats
        // as a broken connection
        s.set_read_timeout(None)?;
    }
    Ok((data, control))
}

/// Binds `address`, retrying while it is still held (a process of the previous run ending).
fn listen(address: &str, deadline: Instant) -> Result<TcpListener> {
    loop {
        match TcpListener::bind(address) {
            Ok(l) => return Ok(l),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(e).with_context(|| format!("binding {address}")),
        }
    }
}

/// One connection to `address`, introduced as process `me`'s stream of `kind`; None if it is not
/// there yet.
fn dial_one(address: &str, me: usize, kind: u8) -> Option<TcpStream> {
    let addrs: Vec<SocketAddr> = address.to_socket_addrs().ok()?.collect();
    for a in addrs {
        if let Ok(mut s) = TcpStream::connect_timeout(&a, Duration::from_millis(500)) {
            let mut header = Vec::with_capacity(13);
            header.extend_from_slice(&MAGIC.to_le_bytes());
            header.extend_from_slice(&(me as u32).to_le_bytes());
            header.push(kind);
            if s.write_all(&header).is_ok() {
                return Some(s);
            }
        }
    }
    None
}

/// The (process, kind) an accepted stream introduces itself as, if it is one of ours.
fn greeted(stream: &TcpStream, me: usize, n: usize) -> Option<(usize, u8)> {
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut header = [0u8; 13];
    (&*stream).read_exact(&mut header).ok()?;
    let magic = u64::from_le_bytes(header[..8].try_into().ok()?);
    let p = u32::from_le_bytes(header[8..12].try_into().ok()?) as usize;
    let kind = header[12];
    (magic == MAGIC && p > me && p < n && kind <= CONTROL).then_some((p, kind))
}
