//! The write phase of `run`: hosts and rejected rows to the lead, then each crawler's rates (and
//! visits) to the worker that writes its partition, one crawler per worker at a time, into a staging
//! folder every worker agrees on. Ends in the all-reduce that carries every worker's files, totals
//! and first error.

use std::path::{Path, PathBuf};

use anyhow::Result;
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::schedule::night::NightTotals;
use revisit_core::units::{per_horizon, PerDay};
use serde::{Deserialize, Serialize};

use super::cyclic::write_crawler_visits;
use super::learn::Learned;
use super::rated_pool::RatedPool;
use super::rates_partition::{
    write_partitions, RatesPartition, RatesSizes, Slices, ToWriter, SLICE_ROWS,
};
use super::rates_sender::RatesSender;
use super::rolling::{self, write_crawler_night};
use super::rounds::Rounds;
use super::{Channels, Night, Phases};
use crate::io::hosts_out::{write_hosts, HostRow, HostRows};
use crate::io::learned::{self, LearnedRow, FIRST_OBSERVATION_KEY};
use crate::io::manifest::FileEntry;
use crate::io::pages::Rejected;
use crate::io::rejected_out::write_rejected;
use crate::io::visits_out::{write_visits, VisitRow};
use crate::io::{publish, schema};
use crate::job::arrange::Arranged;
use crate::job::channel::Reducer;
use crate::job::fail_point::fail_point;
use crate::job::flag_sort::sort_by_wide_key;
use crate::job::load::Loaded;
use crate::job::progress::Progress;
use crate::job::wire::due::DueBatch;
use crate::job::wire::learned::{LearnedBatch, LearnedHost};
use crate::job::wire::visits::{VisitBatch, VisitHost};
use crate::job::wire::BATCH_TEXT_BYTES;
use crate::plan::run::RunPlan;
use crate::prefetch::prefetch_at;
use crate::report::memory::peak_rss_bytes;
use crate::report::provenance::Provenance;
use crate::report::run::{RatesTotals, ScheduleCounts};

/// A worker's rows of the hosts and rejected tables, on their way to the lead, which writes them.
#[derive(Clone, Serialize, Deserialize)]
pub struct ToLead {
    /// The lead's index.
    pub dest: u32,
    pub hosts: HostRows,
    pub rejected: Vec<Rejected>,
}

/// Slices a worker may send ahead of its writer: room for the writers to drift apart by a round's
/// difference in rows ([`Rounds`]) without one waiting for another. On the 10M-URL bench, with the
/// rounds by size, 3 against 1: the write phase 1.385 s against 1.466 (median of 5 pairs) for
/// 34 MiB more at the peak; 6 was no faster.
const SLICES_AHEAD: usize = 3;

/// What every worker wrote, and where.
pub struct Written {
    /// The staging folder (the lead publishes it).
    pub staging: PathBuf,
    /// Every worker's files.
    pub files: Vec<FileEntry>,
    /// Every worker's rates, combined.
    pub rates: RatesTotals,
    /// Every crawler's night, combined (with --timetable).
    pub nights: NightTotals,
    /// Every worker's schedule, combined.
    pub schedule: ScheduleCounts,
    /// The rounds the crawlers were written in, and by which worker.
    pub rounds: Rounds,
}

/// Writes every table of the run into a staging folder; fails alike on every worker.
pub fn write(
    reducer: &mut Reducer<'_>,
    channels: &mut Channels,
    plan: &RunPlan,
    provenance: &Provenance,
    p: &Phases,
    run_id: &str,
    progress: &Progress,
) -> Result<Written> {
    let (loaded, solved, assigned) = (p.loaded, p.solved, p.assigned);
    let index = reducer.worker.index();
    let lead = index == 0;
    fail_point("write", index);
    // the rows go to the lead as they are (between threads of one process, moved: at 3M hosts,
    // encoding and decoding them was a tenth of the write phase's work), and are not kept beside
    // them through the write (65 bytes a host)
    let rows = host_rows(plan, loaded, solved, assigned);
    let own = if lead {
        Some(rows)
    } else {
        channels.gather.send(ToLead {
            dest: 0,
            hosts: rows,
            rejected: loaded.rejected.clone(),
        });
        None
    };
    let gathered = channels.gather.finish_round(reducer.worker);

    // The staging folder of the run every process agreed on.
    let staging = publish::staging_dir(&plan.out, run_id);
    let metadata = file_metadata(plan, provenance, solved);
    // The lead writes the hosts and rejected tables on a thread of its own, beside its share of
    // the crawlers: written before them, they held every other worker at the first round (at 3M
    // hosts, a third of the write phase).
    let (crawlers, lead_tables) = std::thread::scope(|scope| {
        let lead_tables = own.map(|own| {
            let own = (own, &loaded.rejected[..]);
            scope.spawn(|| write_lead_tables(&staging, own, gathered, &loaded.files, &metadata))
        });
        let crawlers = write_crawlers(reducer, channels, plan, p, &staging, &metadata, progress);
        (crawlers, lead_tables.map(|t| t.join()))
    });
    let CrawlersWritten {
        mut files,
        nights,
        schedule,
        rounds,
        error,
    } = crawlers;
    // the lead's tables' error first, as when they were written first
    let error = match lead_tables {
        Some(Ok(Ok(f))) => {
            files.extend(f);
            error
        }
        Some(Ok(Err(e))) => Some((0, format!("{e:#}"))),
        Some(Err(_)) => Some((0, "writing the hosts and rejected tables failed".into())),
        None => error,
    };
    let mut rates = solved.totals.clone();
    rates.peak_rss = peak_rss_bytes();
    let done = reducer.all_reduce(Done {
        error,
        files,
        rates,
        nights,
        schedule,
    });
    if let Some((_, message)) = done.error {
        if lead {
            std::fs::remove_dir_all(&staging).ok();
        }
        anyhow::bail!(message);
    }
    Ok(Written {
        staging,
        files: done.files,
        rates: done.rates,
        nights: done.nights,
        schedule: done.schedule,
        rounds,
    })
}

/// What a worker's crawler partitions came to: its files, its crawlers' nights, where its URLs
/// stand, its first error.
struct CrawlersWritten {
    files: Vec<FileEntry>,
    nights: NightTotals,
    schedule: ScheduleCounts,
    rounds: Rounds,
    error: Option<(u32, String)>,
}

/// Writes this worker's crawlers' rates (learned tables, visits) into `staging`, in rounds of one
/// crawler per worker, the largest first ([`Rounds`]): each worker sends the round's rows to their
/// crawler's writer, which writes that partition while the others do theirs. The rates travel in
/// slices of the crawlers' hosts (see [`Slices`]), so that only a slice of rows is ever copied at
/// a time.
fn write_crawlers(
    reducer: &mut Reducer<'_>,
    channels: &mut Channels,
    plan: &RunPlan,
    p: &Phases,
    staging: &Path,
    metadata: &[(String, String)],
    progress: &Progress,
) -> CrawlersWritten {
    let (loaded, assigned, night) = (p.loaded, p.assigned, p.night);
    let index = reducer.worker.index();
    let peers = reducer.worker.peers();
    let sizes = reducer.all_reduce(RatesSizes::of(plan, p));
    let visit_metadata = night.map(|n| visits_metadata(metadata, n));
    let rounds = Rounds::of(&sizes.rows_by_crawler(), peers);
    let tables = RoundTables {
        rounds: &rounds,
        staging,
        metadata,
        visit_metadata: visit_metadata.as_deref(),
    };
    let mut out = CrawlersWritten {
        files: Vec::new(),
        nights: NightTotals::default(),
        schedule: ScheduleCounts::default(),
        rounds: rounds.clone(),
        error: None,
    };
    if let Some(Night::Cyclic(n)) = night {
        out.nights.value = n.unvisited.clone();
    }
    let mut phase = progress.phase(rounds.crawlers_of(index) as u64, "writing crawlers");
    // This worker's partitions are written on a thread of its own while it sends the next slices,
    // one partition after another for the whole phase: each round of slices ends when every
    // worker has sent, and with the writing in the round, the worker with the larger slice held
    // every other at each one. One thread for the phase, not one per round, so that no round
    // waits for the last one's final row group and sync before its first slice is sent.
    let pool = RatedPool::default();
    std::thread::scope(|scope| {
        let (to_writer, work) = std::sync::mpsc::sync_channel::<ToWriter>(SLICES_AHEAD);
        let pool = &pool;
        let writer = scope.spawn(move || write_partitions(work, pool));
        // false after an error here, or once the writer has stopped (its join gives its error):
        // no row goes to a partition not its own
        let mut writing = true;
        for round in rounds.iter() {
            let mine = rounds.crawler_of(round, index);
            writing &= out.error.is_none();
            if let (Some(crawler), true) = (mine, writing) {
                // Hive partitions without zero padding: DuckDB and Spark read crawler=7 as an integer
                let rel = format!("rates/crawler={crawler}/part-00000.parquet");
                let size = sizes.crawlers[crawler as usize];
                writing = match RatesPartition::create(staging, &rel, size, metadata) {
                    Ok(r) => to_writer.send(ToWriter::Partition(Box::new(r))).is_ok(),
                    Err(e) => {
                        out.error = Some((index as u32, format!("{e:#}")));
                        false
                    }
                };
            }
            let slices = Slices::of(
                round.iter().map(|&c| sizes.crawlers[c as usize].rows),
                sizes.large_in(round),
                SLICE_ROWS,
            );
            let rolling_night = match night {
                Some(Night::Rolling(n)) if channels.due.is_some() => Some(n.horizon),
                _ => None,
            };
            let mut senders: Vec<RatesSender> = round
                .iter()
                .map(|&c| RatesSender::new(c, rounds.writer_of(c), rolling_night))
                .collect();
            let a = &loaded.arranged;
            for slice in 0..slices.count() {
                for (&crawler, sender) in round.iter().zip(&mut senders) {
                    let hosts = &assigned.hosts_of_crawler[crawler as usize];
                    let pages =
                        slices.pages(slice, hosts, &a.host_ids, |h| a.pages.host_pages(h).len());
                    let start = plan.schedule.start_us;
                    sender.send(
                        &mut channels.rated,
                        pool,
                        p,
                        start,
                        pages,
                        &mut out.schedule,
                    );
                }
                let rows = channels.rated.finish_round(reducer.worker);
                if mine.is_some() && writing {
                    writing = to_writer.send(ToWriter::Slice(rows)).is_ok();
                }
            }
            let writes = mine.filter(|_| out.error.is_none());
            let due = senders.iter_mut().map(RatesSender::take_due).collect();
            tables.write(reducer, channels, p, round, due, writes, &mut out);
            if writes.is_some() {
                phase.inc(1);
            }
        }
        drop(to_writer);
        let failed = match writer.join() {
            Ok(Ok(written)) => {
                out.files.extend(written);
                None
            }
            Ok(Err(e)) => Some(format!("{e:#}")),
            Err(_) => Some("writing the rates partitions failed".to_owned()),
        };
        // either fails the run: an error met on this thread is reported first, else the writer's
        out.error = out.error.take().or(failed.map(|e| (index as u32, e)));
    });
    phase.finish();
    out
}

/// Where a round's learned tables and visits (when the plan makes them) are written, and with
/// what metadata.
struct RoundTables<'a> {
    /// The rounds, for the worker that writes each crawler.
    rounds: &'a Rounds,
    staging: &'a Path,
    metadata: &'a [(String, String)],
    visit_metadata: Option<&'a [(String, String)]>,
}

impl RoundTables<'_> {
    /// Sends the learned pages and visits of the crawlers of `round` to their writers (a rolling
    /// night's: `due`, a crawler's batches each, made as the rates were sent), and writes those of
    /// crawler `writes` (this worker's in the round, unless it failed) onto `out`.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        reducer: &mut Reducer<'_>,
        channels: &mut Channels,
        p: &Phases,
        round: &[u32],
        due: Vec<Vec<DueBatch>>,
        writes: Option<u32>,
        out: &mut CrawlersWritten,
    ) {
        let (loaded, night) = (p.loaded, p.night);
        let index = reducer.worker.index();
        // (one sender, so one `due`, a crawler of the round)
        for (&crawler, due) in round.iter().zip(due) {
            let dest = self.rounds.writer_of(crawler);
            let hosts = &p.assigned.hosts_of_crawler[crawler as usize];
            if let (Some(learned), Some((_, channel))) = (p.learned, channels.learn.as_mut()) {
                send_learned(channel, &loaded.arranged, learned, hosts, dest);
            }
            match (night, channels.visits.as_mut(), channels.due.as_mut()) {
                (Some(Night::Cyclic(n)), Some(channel), _) => {
                    send_visits(channel, loaded, n, hosts, dest)
                }
                (Some(Night::Rolling(_)), _, Some(channel)) => rolling::send(channel, due),
                _ => {}
            }
        }
        let learned_rows = channels
            .learn
            .as_mut()
            .map(|(_, c)| c.finish_round(reducer.worker));
        let visits = channels
            .visits
            .as_mut()
            .map(|c| c.finish_round(reducer.worker));
        let due = channels
            .due
            .as_mut()
            .map(|c| c.finish_round(reducer.worker));
        let Some(crawler) = writes else {
            return;
        };
        let fail = |e: anyhow::Error| Some((index as u32, format!("{e:#}")));
        if let (Some(batches), Some(learned)) = (learned_rows, p.learned) {
            let rel = format!("learned/crawler={crawler}/part-00000.parquet");
            let mut meta = self.metadata.to_vec();
            meta.extend([
                ("revisit.units.learned".into(), schema::LEARNED_UNITS.into()),
                (
                    FIRST_OBSERVATION_KEY.into(),
                    format!("{}", learned.first_observation),
                ),
            ]);
            match write_crawler_learned(self.staging, &rel, batches, &meta) {
                Ok(entry) => out.files.push(entry),
                Err(e) => out.error = fail(e),
            }
        }
        let rel = format!("visits/crawler={crawler}/part-00000.parquet");
        let written = match (night, self.visit_metadata, visits, due) {
            (Some(Night::Cyclic(n)), Some(meta), Some(batches), _) => {
                Some(write_crawler_visits(self.staging, &rel, batches, n, meta))
            }
            (Some(Night::Rolling(n)), Some(meta), _, Some(batches)) => {
                Some(write_crawler_night(self.staging, &rel, batches, n, meta))
            }
            _ => None,
        };
        match written {
            Some(Ok((entry, totals))) => {
                out.files.push(entry);
                out.nights.combine(totals);
            }
            Some(Err(e)) => out.error = fail(e),
            None => {}
        }
    }
}

/// This worker's rows of the hosts table (cap, demand and budget per horizon), sorted by host
/// name: each worker sorts its own, and the lead only merges them.
fn host_rows(
    plan: &RunPlan,
    loaded: &Loaded,
    solved: &super::solve::Solved,
    assigned: &super::assign::Assigned,
) -> HostRows {
    let (a, horizon) = (&loaded.arranged, plan.pages.horizon);
    let s = &solved.solution;
    let mut rows = HostRows::with_capacity(a.pages.hosts(), a.host_text_bytes());
    let order = by_name(a);
    // in name order, each host's row is misses away at random (its name's bounds, then its bytes
    // and each number): each fetched a few hosts ahead
    let d = HOST_ROW_PREFETCH_DISTANCE;
    for (k, &h) in order.iter().enumerate() {
        if let Some(&ahead) = order.get(k + 2 * d) {
            a.prefetch_host_end(ahead);
        }
        if let Some(&ahead) = order.get(k + d) {
            a.prefetch_host_name(ahead);
            prefetch_at(assigned.crawler_of.as_ptr().wrapping_add(ahead));
            prefetch_at(s.budgets.as_ptr().wrapping_add(ahead));
            prefetch_at(a.pages.caps().as_ptr().wrapping_add(ahead));
        }
        let price = s.hosts.get(h);
        rows.push(HostRow {
            host: a.host_name(h),
            crawler: assigned.crawler_of[h],
            cap: per_horizon(PerDay(a.pages.cap(h)), horizon),
            demand: per_horizon(PerDay(s.demand(h)), horizon),
            budget: per_horizon(PerDay(s.budgets[h]), horizon),
            capped: price.capped,
            multiplier: price.price,
        });
    }
    rows
}

/// Hosts ahead the rows of the hosts table prefetch, at each of their two steps.
const HOST_ROW_PREFETCH_DISTANCE: usize = 8;

/// This worker's hosts in the order of their names (distinct: a host is one row). The sort keys
/// hold the names' first 16 bytes, so that only names agreeing there (rare past "www.") are
/// compared in full: a sort of a million names otherwise waits on a cache miss per comparison.
fn by_name(a: &Arranged) -> Vec<usize> {
    // two u64 halves, not a u128: its alignment would pad each key from 24 bytes to 32
    let prefix = |name: &str| {
        let mut b = [0u8; 16];
        let n = name.len().min(16);
        b[..n].copy_from_slice(&name.as_bytes()[..n]);
        let half = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or_default());
        (half(0), half(8))
    };
    let mut order: Vec<((u64, u64), u32)> = (0..a.pages.hosts())
        .map(|h| (prefix(a.host_name(h)), h as u32))
        .collect();
    sort_by_wide_key(
        &mut order,
        |x| x.0,
        |x, y| a.host_name(x.1 as usize).cmp(a.host_name(y.1 as usize)),
    );
    order.into_iter().map(|(_, h)| h as usize).collect()
}

/// Sends the visited hosts `hosts` of a crawler to its writer `dest`.
fn send_visits(
    channel: &mut crate::job::channel::Shuffle<VisitBatch>,
    loaded: &Loaded,
    night: &super::cyclic::Night,
    hosts: &[usize],
    dest: u32,
) {
    let new_batch = || VisitBatch {
        dest,
        hosts: vec![],
    };
    let mut batch = new_batch();
    let mut text = 0;
    for &h in hosts {
        if let Some(host) = VisitHost::of(&loaded.arranged, &night.planned.visits.counts, h) {
            text += host.text_bytes();
            batch.hosts.push(host);
        }
        if text >= BATCH_TEXT_BYTES {
            channel.send(std::mem::replace(&mut batch, new_batch()));
            text = 0;
        }
    }
    if !batch.hosts.is_empty() {
        channel.send(batch);
    }
}

/// Writes a crawler's night at `rel`: its `fetches` (time from the night's start, host, page of
/// the host), each page's host name and URL given by `page(host, page)`.
pub(super) fn write_fetches<'a>(
    staging: &Path,
    rel: &str,
    fetches: &[(f64, u32, u32)],
    page: impl Fn(u32, u32) -> (&'a [u8], &'a [u8]),
    start_us: i64,
    metadata: &[(String, String)],
) -> Result<FileEntry> {
    let path = publish::staged_file(staging, rel)?;
    let rows = fetches.iter().map(|&(at_s, h, p)| {
        let (host, url) = page(h, p);
        VisitRow { at_s, url, host }
    });
    let (rows, bytes) = write_visits(&path, rows, start_us, metadata)?;
    Ok(FileEntry {
        path: rel.to_owned(),
        rows,
        bytes,
    })
}

/// Sends the learned pages of the hosts `hosts` of a crawler to its writer `dest`.
fn send_learned(
    channel: &mut crate::job::channel::Shuffle<LearnedBatch>,
    arranged: &crate::job::arrange::Arranged,
    learned: &Learned,
    hosts: &[usize],
    dest: u32,
) {
    let new_batch = || LearnedBatch {
        dest,
        hosts: vec![],
    };
    let mut batch = new_batch();
    let mut bytes = 0;
    for &h in hosts {
        if let Some(host) = LearnedHost::of(arranged, h, &learned.evidence, &learned.estimates) {
            bytes += host.bytes();
            batch.hosts.push(host);
        }
        if bytes >= BATCH_TEXT_BYTES {
            channel.send(std::mem::replace(&mut batch, new_batch()));
            bytes = 0;
        }
    }
    if !batch.hosts.is_empty() {
        channel.send(batch);
    }
}

/// Writes the learned partition at `rel` from the hosts received for it, ordered by host
/// identity (the same bytes whatever the worker count).
fn write_crawler_learned(
    staging: &Path,
    rel: &str,
    batches: Vec<LearnedBatch>,
    metadata: &[(String, String)],
) -> Result<FileEntry> {
    let mut hosts: Vec<LearnedHost> = batches.into_iter().flat_map(|b| b.hosts).collect();
    hosts.sort_unstable_by_key(|h| h.id);
    let path = publish::staged_file(staging, rel)?;
    let rows = hosts.iter().flat_map(|h| {
        (0..h.urls.len()).map(move |i| LearnedRow {
            url: h.urls[i].as_bytes(),
            host: h.name.as_bytes(),
            change_rate: h.change_rate[i],
            complete_obs: h.complete_obs[i],
            observations: h.observations[i],
            changes: h.changes[i],
            last_observed_us: h.last_observed_us[i],
            evidence: &h.evidence[i],
        })
    });
    let (n, bytes) = learned::write(&path, rows, metadata)?;
    Ok(FileEntry {
        path: rel.to_owned(),
        rows: n,
        bytes,
    })
}

/// Writes the hosts and rejected tables from every worker's share (lead only): its own as they
/// are, the others' as they were gathered.
fn write_lead_tables(
    staging: &Path,
    (own_hosts, own_rejected): (HostRows, &[Rejected]),
    gathered: Vec<ToLead>,
    files: &[PathBuf],
    metadata: &[(String, String)],
) -> Result<Vec<FileEntry>> {
    let mut host_rows = vec![own_hosts];
    let mut rejected = own_rejected.to_vec();
    // in any order: a host is one worker's, so no two parts hold the same name
    for part in gathered {
        host_rows.push(part.hosts);
        rejected.extend(part.rejected);
    }
    rejected.sort_by_key(|r| r.origin);
    let hosts = "hosts/part-00000.parquet";
    let (n, bytes) = write_hosts(
        &publish::staged_file(staging, hosts)?,
        HostRows::merged(&host_rows),
        metadata,
    )?;
    let mut written = vec![FileEntry {
        path: hosts.into(),
        rows: n,
        bytes,
    }];
    let rejected_rel = "rejected/part-00000.parquet";
    let (n, bytes) = write_rejected(
        &publish::staged_file(staging, rejected_rel)?,
        &rejected,
        files,
        metadata,
    )?;
    written.push(FileEntry {
        path: rejected_rel.into(),
        rows: n,
        bytes,
    });
    Ok(written)
}

/// Key-value metadata of every file of the run: its provenance, then what the rates depend on.
fn file_metadata(
    plan: &RunPlan,
    provenance: &Provenance,
    solved: &super::solve::Solved,
) -> Vec<(String, String)> {
    let mut metadata = provenance.metadata();
    metadata.extend([
        ("revisit.objective".into(), plan.objective.name().into()),
        // Display of f64 is the shortest text that reads back to the same bits.
        (
            "revisit.multiplier".into(),
            format!("{}", solved.solution.multiplier),
        ),
        (
            "revisit.bandwidth_per_day".into(),
            format!("{}", solved.bandwidth),
        ),
        (
            "revisit.horizon_s".into(),
            format!("{}", plan.pages.horizon.0),
        ),
        ("revisit.crawlers".into(), format!("{}", plan.crawlers)),
        (
            crate::io::state_in::START_KEY.into(),
            crate::time::format_timestamp(plan.schedule.start_us),
        ),
        ("revisit.floor_eps".into(), format!("{}", plan.floor_eps)),
        (
            "revisit.value_per_change".into(),
            format!("{}", plan.pages.value_per_change),
        ),
        ("revisit.units.rates".into(), schema::RATES_UNITS.into()),
        ("revisit.units.hosts".into(), schema::HOSTS_UNITS.into()),
    ]);
    metadata
}

/// The rates files' metadata plus what the timetable was made with.
fn visits_metadata(metadata: &[(String, String)], night: &Night) -> Vec<(String, String)> {
    let mut m = metadata.to_vec();
    match night {
        Night::Cyclic(n) => m.extend([
            ("revisit.timetable".into(), "cyclic".into()),
            (
                "revisit.sequencing".into(),
                n.settings.sequencing.name().to_owned(),
            ),
            (
                "revisit.crawler_rate_per_s".into(),
                format!("{}", n.settings.crawler_rate),
            ),
            (
                "revisit.visits_multiplier".into(),
                format!("{}", n.planned.visits.multiplier),
            ),
        ]),
        Night::Rolling(n) => m.extend([
            ("revisit.timetable".into(), "rolling".into()),
            (
                "revisit.crawler_rate_per_s".into(),
                format!("{}", n.crawler_rate),
            ),
        ]),
    }
    m.push(("revisit.units.visits".into(), schema::VISITS_UNITS.into()));
    m
}

/// What every worker ends the write phase with: its first error, its files and its totals.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Done {
    error: Option<(u32, String)>,
    files: Vec<FileEntry>,
    rates: RatesTotals,
    nights: NightTotals,
    schedule: ScheduleCounts,
}

impl Combine for Done {
    fn combine(&mut self, o: Self) {
        self.error = match (self.error.take(), o.error) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        self.files.extend(o.files);
        self.rates.combine(o.rates);
        self.nights.combine(o.nights);
        self.schedule.combine(o.schedule);
    }
}
