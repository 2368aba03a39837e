//! One worker's program: read, exchange by host, solve with all-reduce rounds, assign crawlers,
//! exchange by crawler, write, publish. Every fallible step after the dataflows start ends in an
//! all-reduce that carries errors, so a failing worker stops every worker instead of hanging them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use timely::worker::Worker;

use super::arrange::{Reading, URL_PREFETCH_DISTANCE};
use super::channel::{Reducer, Shuffle};
use super::config::{crawler_rate, RunArgs, DEFAULT_BANDWIDTH_FRACTION};
use super::load::{load, BATCH_TEXT_BYTES, BATCH_TEXT_SLACK};
use super::output::{write_hosts, write_rates, write_rejected, HostRow};
use super::visits::{
    plan, unvisited_staleness, write_crawler_visits, Planned, TimetableParams, VisitBatch,
    VisitHost, VisitTotals,
};
use revisit_core::exact_sum::ExactSum;
use crate::io::manifest::{FileEntry, Manifest};
use crate::io::pages::{Reason, Rejected};
use crate::io::rated::RatedBatch;
use crate::io::rows::RowBatch;
use crate::io::{publish, schema};
use revisit_core::objective::value::{HostValue, PolicyValue};
use revisit_core::objective::Objective;
use crate::report::{
    peak_rss_bytes, rss_bytes, PhaseSeconds, Recommendation, Summary, TimetableSummary,
};
use revisit_core::schedule::assign::{assign, imbalance};
use revisit_core::schedule::visits::VisitObjective;
use revisit_core::reduce::{AllReduce, Combine};
use revisit_core::solve::solve;
use revisit_core::units::{per_horizon, PerDay, Seconds};

/// The version written into summaries and file metadata.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs worker `worker`'s share of the job; worker 0 returns the summary.
pub fn run_worker(
    worker: &mut Worker,
    args: &RunArgs,
    processes: usize,
) -> Result<Option<Summary>> {
    let started = Instant::now();
    let index = worker.index();
    let peers = worker.peers();
    let lead = index == 0;
    let say = progress(lead && !args.pages.quiet, started);

    publish::check_replaceable(&args.out)?;
    let mut pages_channel = Shuffle::<RowBatch>::new(worker, "ByHost", |b| b.dest as u64);
    let mut crawler_channel = Shuffle::<RatedBatch>::new(worker, "ByCrawler", |b| b.dest as u64);
    let mut visit_channel = args
        .timetable
        .then(|| Shuffle::<VisitBatch>::new(worker, "ToTimetable", |b| b.dest as u64));
    let mut gather_channel = Shuffle::<(u32, Vec<u8>)>::new(worker, "ToLead", |m| m.0 as u64);
    let mut reducer = Reducer::new(worker);
    let reading = Reading {
        objective: args.objective,
        value_per_change: args.pages.value_per_change,
    };
    let loaded = load(&mut reducer, &mut pages_channel, &args.pages, reading, &say)?;
    let (read_done, exchange_done) = (loaded.read_done, loaded.arrange_done);
    let mut arranged = loaded.arranged;
    let rejected = loaded.rejected;
    let files = loaded.files;
    let counts_pages = loaded.pages;
    let bandwidth = match args.bandwidth {
        Some(r) => r,
        None => {
            args.bandwidth_fraction
                .unwrap_or(DEFAULT_BANDWIDTH_FRACTION)
                * counts_pages as f64
        }
    };
    say(format!("solving for {bandwidth} fetches/day"));

    // Solve. One fetch per slot of the discrete-time model; BLC-eps floors eps R / |W| (DESIGN §2 box).
    arranged.arena.slot_days = 1.0 / bandwidth;
    if args.floor > 0.0 {
        arranged
            .arena
            .set_floor(args.floor * bandwidth / counts_pages as f64);
    }
    fail_point("solve", index);
    let solution = solve(
        &arranged.arena,
        bandwidth,
        &mut reducer,
        |round, price, gap| {
            say(format!(
                "round {round}: multiplier {price:.12e}, spend/bandwidth - 1 = {gap:+.3e}"
            ))
        },
    );
    let solve_done = Instant::now();

    // Assign hosts to crawlers: every worker runs the same assignment on every host's budget.
    let loads = reducer.all_reduce(HostLoads(
        arranged
            .host_keys
            .iter()
            .zip(&solution.budgets)
            .map(|(&k, &b)| (k, b))
            .collect(),
    ));
    let mut all_hosts = loads.0;
    all_hosts.sort_by_key(|h| h.0);
    let assignment = assign(&all_hosts, args.crawlers);
    let crawler_of = |key: u64| -> u32 {
        let i = all_hosts.partition_point(|h| h.0 < key);
        assignment[i]
    };
    let load_ratio = imbalance(&all_hosts, &assignment, args.crawlers);
    say(format!(
        "assigned {} hosts to {} crawlers (max/mean load {load_ratio:.4}) in {:.2} s",
        all_hosts.len(),
        args.crawlers,
        solve_done.elapsed().as_secs_f64()
    ));

    // Integer visits (with --timetable): every worker takes part in the rounds.
    let horizon = Seconds(args.pages.horizon_s());
    let planned: Option<Planned> = if args.timetable {
        // the run's own objective where integer visits can pursue it (harmonic); else freshness
        let wanted = if args.objective == Objective::Harmonic {
            VisitObjective::Harmonic
        } else {
            VisitObjective::Staleness
        };
        let p = plan(&arranged, bandwidth, horizon, wanted, &mut reducer);
        let bound = match (p.objective, p.weak_politeness.harmonic_cost()) {
            (VisitObjective::Harmonic, Some(h)) => format!("harmonic cost {h:.6e}"),
            (VisitObjective::Harmonic, None) => "harmonic cost inf".to_owned(),
            (VisitObjective::Staleness, _) => format!("staleness {:.6}", p.weak_politeness.mean()),
        };
        say(format!(
            "integer visits for {:?}: {} of budget {} after {} rounds (multiplier {:.6e}); Weak-Politeness bound: {bound}",
            p.objective,
            p.visits.used,
            p.visits.budget,
            p.visits.rounds,
            p.visits.multiplier,
        ));
        Some(p)
    } else {
        None
    };
    let timetable = TimetableParams {
        horizon,
        sequencing: args.sequencing,
        crawler_rate: crawler_rate(
            args.crawler_rate,
            bandwidth,
            args.crawlers,
            args.pages.min_delay_s,
        ),
        start_us: match &args.start {
            Some(s) => {
                Some(crate::rfc3339::parse_micros(s).map_err(|e| anyhow::anyhow!("--start: {e}"))?)
            }
            None => None,
        },
    };
    let mut visit_totals = VisitTotals::default();
    if let Some(p) = &planned {
        visit_totals.staleness = unvisited_staleness(&arranged, &p.visits.counts, horizon);
    }

    // Hosts and rejections go to the lead, which writes their tables.
    fail_point("write", index);
    let arena = &arranged.arena;
    let mut costs = Costs::default();
    let mut host_rows = Vec::with_capacity(arena.hosts());
    let mut hosts_of_crawler: Vec<Vec<usize>> = vec![Vec::new(); args.crawlers as usize];
    for h in 0..arena.hosts() {
        let crawler = crawler_of(arranged.host_keys[h]);
        hosts_of_crawler[crawler as usize].push(h);
        let hp = solution.hosts[h];
        let (mut value, mut objective) = (HostValue::default(), 0.0);
        for i in arena.host_pages(h) {
            let rate = solution.rates[i];
            // the page's own observability: the baselines' responses ignore it, the costs must not
            value.add(arena.page(i), rate, arranged.complete_obs[i]);
            objective += arena.response[i].cost(arena.page(i), rate);
        }
        costs.value.add_host(&value);
        costs.objective.add(objective);
        host_rows.push(HostRow {
            host: arranged.host_names[h].clone(),
            crawler,
            cap: per_horizon(PerDay(arena.cap[h]), horizon),
            demand: per_horizon(PerDay(hp.demand), horizon),
            budget: per_horizon(PerDay(solution.budgets[h]), horizon),
            capped: hp.capped,
            multiplier: hp.price,
        });
    }
    gather_channel.send((
        0,
        bincode::serialize(&(host_rows, rejected)).context("encoding host rows")?,
    ));
    let gathered = gather_channel.finish_round(reducer.worker);

    // The staging folder every worker agrees on.
    let run_id = reducer.all_reduce(RunId(run_id_candidate()));
    let staging = publish::staging_dir(&args.out, &format!("{:016x}", run_id.0));
    let metadata = file_metadata(args, solution.multiplier, bandwidth);
    let visit_metadata = planned
        .as_ref()
        .map(|p| visits_metadata(&metadata, args, &timetable, p.visits.multiplier));
    let mut files_written = Vec::new();
    let mut error: Option<(u32, String)> = None;
    if lead {
        match write_lead_tables(&staging, gathered, &files, &metadata) {
            Ok(f) => files_written.extend(f),
            Err(e) => error = Some((0, format!("{e:#}"))),
        }
    }

    // Rates, in rounds of one crawler per worker: each worker sends the round's rows to their
    // crawler's writer, which writes that partition while the others do theirs. Only one round of
    // rows is ever copied at a time.
    for first in (0..args.crawlers).step_by(peers) {
        for crawler in first..(first + peers as u32).min(args.crawlers) {
            let dest = crawler % peers as u32;
            let mut rows_per_batch = 0;
            let mut batch = RatedBatch::default();
            for &h in &hosts_of_crawler[crawler as usize] {
                if batch.url_text.capacity() == 0 {
                    // a fresh batch (none yet, or the last one sent): it will hold about as many
                    // rows as the last one
                    batch = RatedBatch::with_capacity(
                        dest,
                        crawler,
                        BATCH_TEXT_BYTES + BATCH_TEXT_SLACK,
                        rows_per_batch + rows_per_batch / 8,
                    );
                }
                let capped = solution.hosts[h].capped;
                batch.start_host(arranged.host_ids[h], &arranged.host_names[h], capped);
                for i in arena.host_pages(h) {
                    arranged.prefetch_url(i + URL_PREFETCH_DISTANCE);
                    let rate = solution.rates[i];
                    if rate > 0.0 {
                        let mu = arranged
                            .input_importance
                            .get(i)
                            .copied()
                            .unwrap_or(arena.importance[i]);
                        batch.push(
                            arranged.url_bytes(i),
                            mu,
                            arena.change_rate[i],
                            arranged.complete_obs[i],
                            rate,
                        );
                    }
                }
                if batch.text_bytes() >= BATCH_TEXT_BYTES {
                    rows_per_batch = batch.len();
                    crawler_channel.send(std::mem::take(&mut batch));
                }
            }
            if !batch.is_empty() {
                crawler_channel.send(batch);
            }
            if let (Some(p), Some(channel)) = (&planned, visit_channel.as_mut()) {
                let dest = crawler % peers as u32;
                let mut batch = VisitBatch {
                    dest,
                    hosts: vec![],
                };
                let mut text = 0;
                for &h in &hosts_of_crawler[crawler as usize] {
                    if let Some(host) = VisitHost::of(&arranged, &p.visits.counts, h) {
                        text += host.text_bytes();
                        batch.hosts.push(host);
                    }
                    if text >= BATCH_TEXT_BYTES {
                        let next = VisitBatch {
                            dest,
                            hosts: vec![],
                        };
                        channel.send(std::mem::replace(&mut batch, next));
                        text = 0;
                    }
                }
                if !batch.hosts.is_empty() {
                    channel.send(batch);
                }
            }
        }
        let mine = crawler_channel.finish_round(reducer.worker);
        let mine_visits = visit_channel
            .as_mut()
            .map(|c| c.finish_round(reducer.worker));
        say(format!("crawlers {first}..: rows at their writers"));
        let crawler = first + index as u32;
        if crawler < args.crawlers && error.is_none() {
            match write_crawler(&staging, args.crawlers, crawler, &mine, &metadata) {
                Ok(entry) => files_written.push(entry),
                Err(e) => error = Some((index as u32, format!("{e:#}"))),
            }
            if let (Some(batches), Some(meta)) = (mine_visits, &visit_metadata) {
                let width = crawler_digits(args.crawlers);
                match write_crawler_visits(&staging, width, crawler, batches, &timetable, meta) {
                    Ok((entry, totals)) => {
                        files_written.push(entry);
                        visit_totals.combine(totals);
                    }
                    Err(e) => error = Some((index as u32, format!("{e:#}"))),
                }
            }
            say(format!("crawler {crawler}: written"));
        }
    }
    costs.scheduled = solution.rates.iter().filter(|&&r| r > 0.0).count() as u64;
    costs.zero_rate = solution.rates.len() as u64 - costs.scheduled;
    costs.hosts = arena.hosts() as u64;
    costs.hosts_capped = solution.hosts.iter().filter(|h| h.capped).count() as u64;
    say(format!(
        "wrote this worker's files at {:.2} s after the solve",
        solve_done.elapsed().as_secs_f64()
    ));
    costs.peak_rss = peak_rss_bytes();
    costs.visits = visit_totals;
    let fin = reducer.all_reduce(Final {
        error,
        files: files_written,
        costs,
    });
    if let Some((_, message)) = fin.error {
        if lead {
            std::fs::remove_dir_all(&staging).ok();
        }
        bail!(message);
    }
    if !lead {
        return Ok(None);
    }

    let c = &fin.costs;
    let rejected_by_reason: BTreeMap<String, u64> = Reason::ALL
        .iter()
        .zip(loaded.rejected_by_reason)
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| (r.name().to_owned(), n))
        .collect();
    let rows_rejected = rejected_by_reason.values().sum();
    let recommended_crawlers = match args.index_rate {
        Some(index_rate) => {
            let arrival = solution.bandwidth_used / args.crawlers as f64;
            let gamma = args.index_gamma.unwrap_or(index_rate);
            let (crawlers, cost) =
                revisit_core::capacity::recommended_crawlers(arrival, index_rate, args.index_buffer, gamma)
                    .context("--index-rate, --index-buffer, --index-gamma")?;
            Some(Recommendation {
                crawlers,
                cost,
                arrival_rate_per_crawler: arrival,
                index_rate,
                index_buffer: args.index_buffer,
                index_gamma: gamma,
            })
        }
        None => None,
    };
    let timetable_summary = planned.as_ref().map(|p| {
        let for_staleness = p.objective == VisitObjective::Staleness;
        TimetableSummary {
            sequencing: sequencing_name(args.sequencing),
            visits_objective: match p.objective {
                VisitObjective::Harmonic => "harmonic",
                VisitObjective::Staleness => "staleness",
            }
            .into(),
            crawler_rate_per_s: timetable.crawler_rate,
            visits_budget: p.visits.budget,
            visits_planned: p.visits.used,
            visits_scheduled: c.visits.scheduled,
            visits_dropped: c.visits.dropped,
            visits_dropped_at_wrap: c.visits.dropped_at_wrap,
            visits_served_round_the_cycle: c.visits.served_round_the_cycle,
            crawler_utilisation_max: c.visits.utilisation_max,
            delay_max_s: c.visits.delay_max_s,
            multiplier: p.visits.multiplier,
            rounds: p.visits.rounds,
            staleness: c.visits.staleness.value() / p.weak_politeness.weight.value(),
            staleness_weak_politeness: for_staleness.then(|| p.weak_politeness.mean()),
            staleness_non_polite: for_staleness.then(|| p.non_polite.mean()),
            // unvisited changing pages are starved in the plan, unserved ones in the timetable
            cost_harmonic: (p.weak_politeness.starved == 0 && c.visits.harmonic_starved == 0)
                .then(|| c.visits.harmonic.value()),
            cost_harmonic_weak_politeness: p
                .weak_politeness
                .harmonic_cost()
                .filter(|_| !for_staleness),
            cost_harmonic_non_polite: p.non_polite.harmonic_cost().filter(|_| !for_staleness),
        }
    });
    if let Some(t) = &timetable_summary {
        if t.visits_scheduled + t.visits_dropped != t.visits_planned {
            bail!(
                "internal error: visits do not add up ({} planned, {} scheduled, {} dropped); nothing published",
                t.visits_planned,
                t.visits_scheduled,
                t.visits_dropped
            );
        }
    }
    let write_done = Instant::now();
    // what no price can place: the pages' and hosts' total room at price 0 falls short of R
    let unusable = if solution.max_spend.is_finite() {
        (bandwidth - solution.max_spend).max(0.0)
    } else {
        0.0
    };
    let summary = Summary {
        version: VERSION.to_owned(),
        objective: args.objective.name().to_owned(),
        multiplier: solution.multiplier,
        rounds: solution.rounds,
        bandwidth_requested: bandwidth,
        bandwidth_used: solution.bandwidth_used,
        bandwidth_unusable: unusable,
        bandwidth_relative_error: (solution.bandwidth_used - (bandwidth - unusable)) / bandwidth,
        horizon_s: args.pages.horizon_s(),
        crawlers: args.crawlers,
        cost_harmonic: c.value.harmonic_cost(),
        cost_binary: c.value.binary_cost(),
        cost_objective: Some(c.objective.value())
            .filter(|v| v.is_finite() && args.objective.is_exact()),
        urls_starved: c.value.starved,
        rows_in: loaded.rows_in,
        rows_scheduled: c.scheduled,
        rows_zero_rate: c.zero_rate,
        rows_rejected,
        rejected_by_reason,
        hosts: c.hosts,
        hosts_capped: c.hosts_capped,
        crawler_load_max_over_mean: load_ratio,
        recommended_crawlers,
        timetable: timetable_summary,
        workers: peers / processes,
        processes,
        peak_rss_bytes: c.peak_rss,
        seconds: PhaseSeconds {
            read: (read_done - started).as_secs_f64(),
            exchange: (exchange_done - read_done).as_secs_f64(),
            solve: (solve_done - exchange_done).as_secs_f64(),
            write: (write_done - solve_done).as_secs_f64(),
            total: (write_done - started).as_secs_f64(),
        },
    };
    if summary.rows_in != summary.rows_scheduled + summary.rows_zero_rate + summary.rows_rejected {
        bail!(
            "internal error: rows do not add up ({} in, {} scheduled, {} zero rate, {} rejected); nothing published",
            summary.rows_in,
            summary.rows_scheduled,
            summary.rows_zero_rate,
            summary.rows_rejected
        );
    }
    std::fs::write(
        staging.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .context("writing summary.json")?;
    let mut entries = fin.files;
    entries.sort();
    publish::publish(
        &staging,
        &args.out,
        &Manifest {
            version: VERSION.to_owned(),
            files: entries,
        },
    )?;
    Ok(Some(summary))
}

/// Writes the rates partition of `crawler` from the rows received for it, in canonical order
/// (grouped by host; the same bytes whatever the worker count).
///
/// Each host lives on one worker, which sent its rows as one contiguous run in canonical order, so
/// ordering the runs by host identity orders the rows: no per-row hashing or sorting here.
fn write_crawler(
    staging: &std::path::Path,
    crawlers: u32,
    crawler: u32,
    rows: &[RatedBatch],
    metadata: &[(String, String)],
) -> Result<FileEntry> {
    let mut runs: Vec<(u128, u32, u32)> = Vec::new(); // (host, batch, run in batch)
    for (b, batch) in rows.iter().enumerate() {
        runs.extend((0..batch.runs.len()).map(|k| (batch.runs[k].id, b as u32, k as u32)));
    }
    runs.sort_unstable_by_key(|r| r.0);
    let order: Vec<(u32, u32)> = runs.iter().map(|&(_, b, k)| (b, k)).collect();
    let width = crawler_digits(crawlers);
    let rel = format!("rates/crawler={crawler:0width$}/part-00000.parquet");
    let path = staging.join(&rel);
    std::fs::create_dir_all(path.parent().unwrap_or(staging))
        .with_context(|| format!("creating {}", path.display()))?;
    let (n, bytes) = write_rates(&path, rows, &order, metadata)?;
    Ok(FileEntry {
        path: rel,
        rows: n,
        bytes,
    })
}

/// Writes the hosts and rejected tables from every worker's share (lead only).
fn write_lead_tables(
    staging: &std::path::Path,
    gathered: Vec<(u32, Vec<u8>)>,
    files: &[PathBuf],
    metadata: &[(String, String)],
) -> Result<Vec<FileEntry>> {
    let mut host_rows = Vec::new();
    let mut rejected = Vec::new();
    for (_, bytes) in gathered {
        let (h, r): (Vec<HostRow>, Vec<Rejected>) =
            bincode::deserialize(&bytes).context("decoding host rows")?;
        host_rows.extend(h);
        rejected.extend(r);
    }
    host_rows.sort_by(|a, b| a.host.cmp(&b.host));
    rejected.sort_by_key(|r| r.origin);
    let mut written = Vec::new();
    std::fs::create_dir_all(staging.join("hosts"))
        .with_context(|| format!("creating {}", staging.display()))?;
    let (n, bytes) = write_hosts(
        &staging.join("hosts/part-00000.parquet"),
        &host_rows,
        metadata,
    )?;
    written.push(FileEntry {
        path: "hosts/part-00000.parquet".into(),
        rows: n,
        bytes,
    });
    std::fs::create_dir_all(staging.join("rejected"))?;
    let (n, bytes) = write_rejected(
        &staging.join("rejected/part-00000.parquet"),
        &rejected,
        files,
        metadata,
    )?;
    written.push(FileEntry {
        path: "rejected/part-00000.parquet".into(),
        rows: n,
        bytes,
    });
    Ok(written)
}

/// Digits of crawler numbers in partition names (at least 3: crawler=007).
pub fn crawler_digits(crawlers: u32) -> usize {
    (crawlers.saturating_sub(1).to_string().len()).max(3)
}

fn file_metadata(args: &RunArgs, multiplier: f64, bandwidth: f64) -> Vec<(String, String)> {
    vec![
        ("revisit.version".into(), VERSION.into()),
        ("revisit.objective".into(), args.objective.name().into()),
        // Display of f64 is the shortest text that reads back to the same bits.
        ("revisit.multiplier".into(), format!("{multiplier}")),
        ("revisit.bandwidth_per_day".into(), format!("{bandwidth}")),
        (
            "revisit.horizon_s".into(),
            format!("{}", args.pages.horizon_s()),
        ),
        ("revisit.crawlers".into(), format!("{}", args.crawlers)),
        ("revisit.floor_eps".into(), format!("{}", args.floor)),
        (
            "revisit.value_per_change".into(),
            format!("{}", args.pages.value_per_change),
        ),
        ("revisit.units.rates".into(), schema::RATES_UNITS.into()),
        ("revisit.units.hosts".into(), schema::HOSTS_UNITS.into()),
    ]
}

/// The rates files' metadata plus what the timetable was made with.
fn visits_metadata(
    metadata: &[(String, String)],
    args: &RunArgs,
    t: &TimetableParams,
    multiplier: f64,
) -> Vec<(String, String)> {
    let mut m = metadata.to_vec();
    m.extend([
        ("revisit.sequencing".into(), sequencing_name(t.sequencing)),
        (
            "revisit.crawler_rate_per_s".into(),
            format!("{}", t.crawler_rate),
        ),
        ("revisit.visits_multiplier".into(), format!("{multiplier}")),
        ("revisit.units.visits".into(), schema::VISITS_UNITS.into()),
    ]);
    if let Some(s) = &args.start {
        m.push(("revisit.start".into(), s.clone()));
    }
    m
}

/// The command-line name of a sequencing (merge, mp2, carousel, golden-ratio).
fn sequencing_name(s: revisit_core::schedule::timetable::Sequencing) -> String {
    clap::ValueEnum::to_possible_value(&s)
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

fn run_id_candidate() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ ((std::process::id() as u64) << 48)
}

/// A progress printer for stderr: each line with the seconds since `started` and the resident memory;
/// silent unless `show` (the lead worker, without --quiet).
pub fn progress(show: bool, started: Instant) -> impl Fn(String) {
    move |msg: String| {
        if show {
            eprintln!(
                "[revisit] {msg} [{:.2} s, RSS {} MiB]",
                started.elapsed().as_secs_f64(),
                rss_bytes() >> 20
            );
        }
    }
}

pub fn progress_bar(show: bool, len: u64, what: &str) -> indicatif::ProgressBar {
    if !show || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("[revisit] {msg} {bar:30} {pos}/{len} ({eta})")
    {
        bar.set_style(style);
    }
    bar.set_message(what.to_owned());
    bar
}

/// Test hook: `REVISIT_FAIL_AT=phase[:worker[:exit]]` makes worker `worker` (default 0) panic (or
/// end its process with status 3, as a killed machine would) when it reaches `phase` (read, solve,
/// write). Used by the failure tests; never set it in production.
pub fn fail_point(phase: &str, index: usize) {
    let Ok(spec) = std::env::var("REVISIT_FAIL_AT") else {
        return;
    };
    let mut parts = spec.split(':');
    if parts.next() != Some(phase) {
        return;
    }
    let worker: usize = parts.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    if worker != index {
        return;
    }
    if parts.next() == Some("exit") {
        eprintln!("[revisit] REVISIT_FAIL_AT: worker {index} ends its process at {phase}");
        std::process::exit(3);
    }
    panic!("REVISIT_FAIL_AT: worker {index} fails at {phase}");
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct HostLoads(Vec<(u64, f64)>);

impl Combine for HostLoads {
    fn combine(&mut self, o: Self) {
        self.0.extend(o.0);
    }
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct RunId(u64);

impl Combine for RunId {
    fn combine(&mut self, o: Self) {
        self.0 = self.0.max(o.0);
    }
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct Costs {
    /// The run's own objective as a cost ([`revisit_core::objective::Response::cost`]).
    objective: ExactSum,
    /// Harmonic and binary costs of the rates, whatever the objective.
    value: PolicyValue,
    scheduled: u64,
    zero_rate: u64,
    hosts: u64,
    hosts_capped: u64,
    peak_rss: u64,
    /// The timetables (with --timetable).
    visits: VisitTotals,
}

impl Combine for Costs {
    fn combine(&mut self, o: Self) {
        self.objective.merge(&o.objective);
        self.value.combine(o.value);
        self.scheduled += o.scheduled;
        self.zero_rate += o.zero_rate;
        self.hosts += o.hosts;
        self.hosts_capped += o.hosts_capped;
        self.peak_rss = self.peak_rss.max(o.peak_rss);
        self.visits.combine(o.visits);
    }
}

#[derive(Clone, Default, Serialize, Deserialize)]
struct Final {
    error: Option<(u32, String)>,
    files: Vec<FileEntry>,
    costs: Costs,
}

impl Combine for Final {
    fn combine(&mut self, o: Self) {
        self.error = match (self.error.take(), o.error) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        self.files.extend(o.files);
        self.costs.combine(o.costs);
    }
}
