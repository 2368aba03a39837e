//! The job's first phases, shared by `run`, `sweep` and `evaluate`: read the page set (row groups
//! spread over the workers), exchange rows by host, and arrange each worker's hosts into the
//! solver's columns. Every worker ends with the same global counts, or with the same error.

use crate::report::clock::Moment;
use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::arrange::{self, arrange, Arranged};
use super::channel::{Reducer, Shuffle};
use super::fail_point::fail_point;
use super::heap;
use super::keys::{host_id, worker_of_host};
use super::progress::Progress;
use super::route::ByHost;
use super::routing;
use super::row_sender::{Destinations, RowSender};
use super::share::ProcessShare;
use super::url_dedupe;
use super::wire::claims::{self, ClaimBatch, LoserBatch};
use super::wire::rows::RowBatch;
use crate::io::pages::{self, Reason, Rejected};
use crate::io::politeness_key::PolitenessKey;
use crate::io::{hosts, inputs};
use crate::plan::PagesPlan;
use crate::report::format::{bytes, count, counted, percent};
use crate::report::provenance::InputFile;
use crate::report::rejects;
use revisit_core::balance::Routes;
use revisit_core::reduce::{AllReduce, Combine};

/// A worker's share of the page set, arranged by host, with the counts every worker agrees on.
pub struct Loaded {
    /// This worker's hosts and pages.
    pub arranged: Arranged,
    /// Which worker holds each host: where every table keyed by URL sends its rows.
    pub routes: Routes,
    /// The input files, sorted (rows' `Origin::file` indexes this list).
    pub files: Vec<PathBuf>,
    /// The input specs as given (for messages).
    pub specs: Vec<String>,
    /// The input files with their formats and sizes, and the hosts table's, for provenance.
    pub inputs: Vec<InputFile>,
    pub hosts_table: Option<InputFile>,
    /// This worker's rejected rows, duplicates included.
    pub rejected: Vec<Rejected>,
    /// Rows read by all workers.
    pub rows_in: u64,
    /// Valid pages on all workers (duplicates removed).
    pub pages: u64,
    /// Hosts (politeness keys) on all workers.
    pub hosts: u64,
    /// Valid pages on the worker that holds the most (duplicates removed): the phases whose work
    /// follows the pages wait for it.
    pub pages_on_busiest_worker: u64,
    /// Valid pages of the largest host (all on one worker).
    pub pages_of_largest_host: u64,
    /// Rejected rows on all workers, by reason (duplicates included).
    pub rejected_by_reason: [u64; Reason::ALL.len()],
    /// Valid rows on all workers (duplicates included) that took the default importance, and the
    /// default change rate.
    pub default_importance: u64,
    pub default_change_rate: u64,
    /// When reading ended and when arranging ended, on this worker.
    pub read_done: Moment,
    pub arrange_done: Moment,
}

impl Loaded {
    /// How rows keyed by URL find the worker of their host, under `politeness`.
    pub fn by_host(&self, politeness: PolitenessKey) -> ByHost<'_> {
        ByHost {
            politeness,
            routes: &self.routes,
        }
    }

    /// Rows rejected on all workers, for every reason.
    pub fn rows_rejected(&self) -> u64 {
        self.rejected_by_reason.iter().sum()
    }
}

/// The exchanges of loading: rows to their host's worker, URL claims to their URL's worker, and
/// the rows that lost their URL back to their host's worker.
pub struct LoadChannels {
    pub rows: Shuffle<RowBatch>,
    claims: Shuffle<ClaimBatch>,
    losers: Shuffle<LoserBatch>,
}

impl LoadChannels {
    /// Builds the dataflows (in the same order on every worker).
    pub fn new(worker: &mut timely::worker::Worker) -> Self {
        LoadChannels {
            rows: Shuffle::new(worker, "ByHost", |b: &RowBatch| b.dest as u64),
            claims: Shuffle::new(worker, "ByUrl", |b: &ClaimBatch| b.dest as u64),
            losers: Shuffle::new(worker, "Losers", |b: &LoserBatch| b.dest as u64),
        }
    }
}

/// Reads, exchanges and arranges the page set of `plan`.
///
/// Fails alike on every worker: the inputs (footers, schemas, hosts table) are read by every worker
/// before any row moves (only the sample's host counts go before the hosts table is read, and a
/// sample that fails counts as none), and read errors are agreed by an all-reduce.
pub fn load(
    reducer: &mut Reducer<'_>,
    channels: &mut LoadChannels,
    share: &ProcessShare,
    plan: &PagesPlan,
    progress: &Progress,
) -> Result<Loaded> {
    let pages_channel = &mut channels.rows;
    let index = reducer.worker.index();
    let peers = reducer.worker.peers();
    let specs = plan.inputs.clone();
    let files = inputs::expand_pages(&specs)?;
    let page_files = pages::open_all(&files, plan.politeness)?;
    let units = pages::units(&page_files);
    // every worker reads every footer first: a bad file fails everywhere before the sample
    let routes = routing::agree(reducer, &page_files, &units, plan);
    if routes.heavy_hosts() > 0 {
        progress.say(format!(
            "{} placed on the workers by their size in a sample",
            counted(routes.heavy_hosts() as u64, "host")
        ));
    }
    let delays = match &plan.hosts {
        Some(p) => hosts::read(
            p,
            plan.politeness,
            |h| host_id(h.as_bytes()),
            |h| worker_of_host(&routes, h.as_bytes()) as usize == index,
        )?,
        None => Default::default(),
    };
    let input_files: Vec<InputFile> = page_files
        .iter()
        .map(|f| InputFile::new(&f.path, f.format(), f.bytes))
        .collect();
    let hosts_table = plan
        .hosts
        .as_ref()
        .map(|p| InputFile::hosts_table(p, inputs::size(p), delays.listed()));
    if files.len() as u64 > claims::MAX_FILES
        || page_files
            .iter()
            .any(|f| f.row_groups.iter().sum::<u64>() >= claims::MAX_ROWS_PER_FILE)
    {
        bail!(
            "more than {} input files, or a file of more than {} rows: merge or split the shards",
            claims::MAX_FILES,
            claims::MAX_ROWS_PER_FILE
        );
    }
    // per-URL refetch bounds travel only when some input file has them
    let with_intervals = page_files.iter().any(|f| f.has_intervals);
    progress.say(format!(
        "{} ({}), {} units of work; {} workers",
        counted(files.len() as u64, "input file"),
        bytes(page_files.iter().map(|f| f.bytes).sum()),
        units.len(),
        peers
    ));

    // Read: my row groups, rows sent on to their host's worker as they are read, in batches by
    // the part of the hosts that worker will arrange them in (so that it need not split them).
    fail_point("read", index);
    let rows_each = (pages::rows_estimate(&page_files) as usize).div_ceil(peers);
    let part_bits = arrange::sent_part_bits(rows_each, peers, plan.arrange_part_bytes);
    let mut sender = RowSender::new(
        Destinations {
            routes: &routes,
            part_bits,
        },
        plan.politeness,
        with_intervals,
        pages_channel,
        &mut channels.claims,
    );
    let mut rejected: Vec<Rejected> = Vec::new();
    let mut status = ReadStatus::default();
    // the units are taken as the workers ask (`UnitQueue`); the lead shows its process's count
    let units_queue = share.queue_at(reducer.rounds);
    let mut phase = progress.lead_phase(units_queue.of_process(units.len()) as u64, "reading");
    while let Some(u) = units_queue.take(units.len()) {
        let unit = units[u];
        let result = pages::read_unit(
            &page_files[unit.file as usize],
            unit,
            &plan.defaults,
            |rows| sender.push(rows),
            |r| rejected.push(r),
        );
        match result {
            Ok(counts) => {
                status.rows += counts.rows;
                status.default_importance += counts.default_importance;
                status.default_change_rate += counts.default_change_rate;
            }
            Err(e) => {
                status.error = Some((u as u64, format!("{e:#}")));
                break;
            }
        }
        reducer.worker.step(); // let batches flow while we read
        phase.reach(units_queue.read_one() as u64);
    }
    sender.finish();
    let read_done = Moment::now();
    let received = pages_channel.finish_round(reducer.worker);
    // every worker has read its last unit once the round is over (the lead may not have read it)
    if status.error.is_none() {
        phase.reach(units_queue.of_process(units.len()) as u64);
    }
    phase.finish();
    // Rows that repeat a URL under another host: judged at the URL's own host's worker, told to
    // the row's.
    let judged = channels.claims.finish_round(reducer.worker);
    // one vector of exactly the claims (collecting from an iterator of batches grew it by doubling:
    // up to twice the claims' 24 bytes a row, at the run's peak)
    let mut claims = Vec::with_capacity(judged.iter().map(|b| b.claims.len()).sum());
    // The received batches are freed as they are copied, but the allocator kept their pages
    // resident beside the copy (24 bytes a row twice: the peak of a 100M-URL run, 126 bytes a URL
    // against 101 with this) and through arranging beside its sort keys: they are given back as
    // the copy grows.
    let mut copied = 0;
    for batch in judged {
        claims.extend_from_slice(&batch.claims);
        copied += std::mem::size_of_val(batch.claims.as_slice());
        if copied >= heap::GIVE_BACK_EVERY_BYTES {
            drop(batch);
            heap::give_back_freed();
            copied = 0;
        }
    }
    heap::give_back_freed();
    claims.extend(url_dedupe::own_claims(&received, &claims, index as u32));
    let losers = url_dedupe::judge(claims, peers);
    for (dest, origins) in losers.into_iter().enumerate() {
        if !origins.is_empty() {
            channels.losers.send(LoserBatch {
                dest: dest as u32,
                origins,
            });
        }
    }
    let lost: HashSet<u64> = channels
        .losers
        .finish_round(reducer.worker)
        .into_iter()
        .flat_map(|b| b.origins)
        .collect();
    for r in &rejected {
        status.rejected[reason_slot(r.reason)] += 1;
    }
    let status = reducer.all_reduce(status);
    if let Some((_, message)) = status.error {
        bail!(message);
    }

    // Arrange: group by host, drop duplicates, join politeness delays.
    progress.say(format!(
        "rows sent to their host's worker ({} of URL and host text on this one); arranging by host",
        bytes(received.iter().map(|b| b.text_bytes() as u64).sum())
    ));
    let arranged = arrange(received, part_bits, &delays, plan, &lost);
    // the received text and the sort keys are gone; only the arranged columns stay
    heap::give_back_freed();
    let counts = reducer.all_reduce(match &arranged {
        Ok(a) => Counts {
            pages: a.pages.len() as u64,
            pages_on_busiest: a.pages.len() as u64,
            largest_host: (0..a.pages.hosts())
                .map(|h| a.pages.host_pages(h).len() as u64)
                .max()
                .unwrap_or(0),
            hosts: a.pages.hosts() as u64,
            duplicates: a.duplicates.len() as u64,
            error: None,
        },
        Err(e) => Counts {
            error: Some(format!("arranging the pages: {e}")),
            ..Counts::default()
        },
    });
    if let Some(message) = counts.error {
        bail!(message);
    }
    let arranged = arranged?;
    rejected.extend(arranged.duplicates.iter().cloned());
    let mut rejected_by_reason = status.rejected;
    rejected_by_reason[reason_slot(Reason::DuplicateUrl)] += counts.duplicates;
    let rows_rejected: u64 = rejected_by_reason.iter().sum();
    let too_many = rows_rejected as f64 > plan.max_reject_share * status.rows as f64;
    if too_many || counts.pages == 0 {
        // every worker knows, from the same counts: the first rejected rows, to show them
        let first = reducer.all_reduce(rejects::First::of(&rejected));
        let why = rejects::explain(&rejected_by_reason, &first.0, &files);
        if counts.pages == 0 {
            let why = if status.rows > 0 {
                format!(", all rejected; {why}")
            } else {
                String::new()
            };
            bail!(
                "no valid input rows in {} ({} rows read{why})",
                specs.join(", "),
                status.rows
            );
        }
        bail!(
            "{} of {} rows rejected ({}), more than --max-reject-share {}: nothing written, the previous output is untouched; {why}. \
             Fix the input, or give --max-reject-share 1 to go on with the valid rows",
            count(rows_rejected),
            count(status.rows),
            percent(rows_rejected as f64 / status.rows as f64),
            plan.max_reject_share
        );
    }
    progress.say(format!(
        "read {} rows: {} pages, {} rejected",
        count(status.rows),
        count(counts.pages),
        count(rows_rejected)
    ));
    Ok(Loaded {
        arranged,
        routes,
        files,
        specs,
        inputs: input_files,
        hosts_table,
        rejected,
        rows_in: status.rows,
        pages: counts.pages,
        hosts: counts.hosts,
        pages_on_busiest_worker: counts.pages_on_busiest,
        pages_of_largest_host: counts.largest_host,
        rejected_by_reason,
        default_importance: status.default_importance,
        default_change_rate: status.default_change_rate,
        read_done,
        arrange_done: Moment::now(),
    })
}

/// Position of a reason in [`Reason::ALL`] (and in count arrays).
pub fn reason_slot(r: Reason) -> usize {
    Reason::ALL.iter().position(|&x| x == r).unwrap_or(0)
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct ReadStatus {
    /// The first failing unit (lowest index) and its error.
    error: Option<(u64, String)>,
    rows: u64,
    rejected: [u64; Reason::ALL.len()],
    default_importance: u64,
    default_change_rate: u64,
}

impl Combine for ReadStatus {
    fn combine(&mut self, o: Self) {
        self.error = match (self.error.take(), o.error) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        self.rows += o.rows;
        self.default_importance += o.default_importance;
        self.default_change_rate += o.default_change_rate;
        for (a, b) in self.rejected.iter_mut().zip(o.rejected) {
            *a += b;
        }
    }
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct Counts {
    pages: u64,
    /// The most pages one worker holds, and one host.
    pages_on_busiest: u64,
    largest_host: u64,
    hosts: u64,
    duplicates: u64,
    /// A worker whose rows did not make pages.
    error: Option<String>,
}

impl Combine for Counts {
    fn combine(&mut self, o: Self) {
        self.pages += o.pages;
        self.pages_on_busiest = self.pages_on_busiest.max(o.pages_on_busiest);
        self.largest_host = self.largest_host.max(o.largest_host);
        self.hosts += o.hosts;
        self.duplicates += o.duplicates;
        self.error = self.error.take().or(o.error);
    }
}
