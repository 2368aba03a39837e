//! A crawl history of the generated pages (`gen --history-days`): what a daily crawler would have
//! logged, in the format `revisit estimate` reads (url, host, observed_at_s, changed, complete_obs).
//!
//! Day k of D covers [end - (D - k) days, end - (D - k - 1) days) and is one file,
//! `history/day-NNN.parquet` (oldest first), whose rows all lie in it: a reader can take the files as
//! time slices. Each page is crawled once a day at its own time of day (a phase from its URL's hash),
//! and whether it changed since the day before is drawn by the shared observation model
//! ([`revisit_core::estimate::synthetic`]), which `simulate --learn` draws from too. Pages with
//! complete observations log their change notices instead, and no crawl.
//!
//! The pages are regenerated, not read back: each writer thread streams every shard once and appends
//! each chunk's rows to the files of the days it owns. Memory holds a chunk of pages and a bounded
//! number of open files, whatever the number of rows or days.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use arrow_array::{BooleanArray, Float64Array, RecordBatch, StringArray};
use revisit_core::estimate::synthetic::{changed_before, changes_between};
use xxhash_rust::xxh3::xxh3_64;

use super::{GenArgs, PageChunk, ShardPages};
use crate::io::{parquet_out, schema};
use crate::job::progress::Progress;
use crate::time::{format_timestamp, parse_timestamp_us, today_utc_us, MICROS_PER_S};

/// Day files a thread keeps open at once: each holds a row group in the making (17 MiB at 131,072
/// rows, measured), so a long history is written in waves of days, each streaming the pages again.
const OPEN_DAYS: usize = 8;
/// Microseconds in a day.
const DAY_US: i64 = 86_400_000_000;
/// Footer keys of each day's file: the day's bounds, RFC 3339.
pub const DAY_START_KEY: &str = "revisit.history.day_start";
pub const DAY_END_KEY: &str = "revisit.history.day_end";

/// The history to write: `days` days ending at `end_us` (microseconds since the epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistorySpan {
    pub days: u32,
    pub end_us: i64,
}

impl HistorySpan {
    /// The span `gen`'s options ask for; None without --history-days.
    pub fn of(args: &GenArgs) -> Result<Option<HistorySpan>> {
        let end_us = match &args.history_end {
            Some(s) => {
                parse_timestamp_us(s).map_err(|e| anyhow::anyhow!("--history-end {s}: {e}"))?
            }
            None => today_utc_us(),
        };
        match args.history_days {
            0 if args.history_end.is_some() => {
                bail!("--history-end needs --history-days (the number of days to write)")
            }
            0 => Ok(None),
            days => Ok(Some(HistorySpan { days, end_us })),
        }
    }

    /// Start of day `k` (0: the oldest), microseconds since the epoch.
    pub fn day_start_us(&self, k: u32) -> i64 {
        self.end_us - i64::from(self.days - k) * DAY_US
    }
}

/// A URL's crawl time within each day, microseconds after the day's start: from its hash alone, so
/// the same every day (crawls exactly a day apart) and on every run.
fn phase_us(url: &str) -> i64 {
    // the modulo's bias is below 2^-27: immaterial for a time of day
    (xxh3_64(url.as_bytes()) % DAY_US as u64) as i64
}

/// Writes the history of `args`'s pages over `span` under `args.out`/history; returns its files.
pub fn write(
    args: &GenArgs,
    hosts: u64,
    span: HistorySpan,
    progress: &Progress,
) -> Result<Vec<PathBuf>> {
    let dir = args.out.join("history");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    remove_old_days(&dir)?;
    let width = (span.days - 1).to_string().len().max(3);
    let paths: Vec<PathBuf> = (0..span.days)
        .map(|k| dir.join(format!("day-{k:0width$}.parquet")))
        .collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(span.days as usize);
    let chunks: u64 = (0..args.shards)
        .map(|s| ShardPages::chunks_of(super::shard_range(args, s).1))
        .sum();
    progress.say(format!(
        "writing {} days of crawl history, {} to {}, one file per day under {}",
        span.days,
        format_timestamp(span.day_start_us(0)),
        format_timestamp(span.end_us),
        dir.display()
    ));
    let phase = Mutex::new(progress.phase(chunks * u64::from(span.days), "writing history"));
    let totals = std::thread::scope(|scope| -> Result<(u64, u64)> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (paths, phase) = (&paths, &phase);
                scope.spawn(move || -> Result<(u64, u64)> {
                    let days: Vec<u32> = (t as u32..span.days).step_by(threads).collect();
                    let mut totals = (0, 0);
                    for wave in days.chunks(OPEN_DAYS) {
                        let (rows, bytes) = write_days(args, hosts, span, wave, paths, phase)?;
                        totals = (totals.0 + rows, totals.1 + bytes);
                    }
                    Ok(totals)
                })
            })
            .collect();
        let mut totals = (0, 0);
        for h in handles {
            let (rows, bytes) = h
                .join()
                .map_err(|_| anyhow::anyhow!("a history thread panicked"))??;
            totals = (totals.0 + rows, totals.1 + bytes);
        }
        Ok(totals)
    })?;
    if let Ok(phase) = phase.into_inner() {
        phase.finish();
    }
    progress.say(format!(
        "history: {} rows, {:.1} MiB in {} files",
        totals.0,
        totals.1 as f64 / f64::from(1 << 20),
        span.days
    ));
    Ok(paths)
}

/// Days of an earlier history in `dir` (a longer one would leave days that do not belong).
fn remove_old_days(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("listing {}", dir.display()))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("day-") && name.ends_with(".parquet") {
            std::fs::remove_file(&path)
                .with_context(|| format!("removing the old {}", path.display()))?;
        }
    }
    Ok(())
}

/// Writes the files of `days` (one writer each), streaming every shard's pages once; returns
/// (rows, bytes) written.
fn write_days(
    args: &GenArgs,
    hosts: u64,
    span: HistorySpan,
    days: &[u32],
    paths: &[PathBuf],
    phase: &Mutex<crate::job::progress::Phase>,
) -> Result<(u64, u64)> {
    let mut writers = days
        .iter()
        .map(|&k| {
            let metadata = [
                (
                    DAY_START_KEY.to_owned(),
                    format_timestamp(span.day_start_us(k)),
                ),
                (
                    DAY_END_KEY.to_owned(),
                    format_timestamp(span.day_start_us(k) + DAY_US),
                ),
            ];
            parquet_out::Writer::create(
                &paths[k as usize],
                schema::history(),
                &metadata,
                args.row_group_rows,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    for shard in 0..args.shards {
        let mut pages = ShardPages::new(args, hosts, shard)?;
        while let Some(chunk) = pages.next_chunk() {
            for (writer, &k) in writers.iter_mut().zip(days) {
                writer.write(&day_batch(&chunk, span, k, args.seed)?)?;
            }
            if let Ok(mut phase) = phase.lock() {
                phase.inc(days.len() as u64);
            }
        }
    }
    let mut totals = (0, 0);
    for w in writers {
        let (rows, bytes) = w.finish()?;
        totals = (totals.0 + rows, totals.1 + bytes);
    }
    Ok(totals)
}

/// What day `k` logged of one chunk of pages: each page's crawl (whether it changed since the day
/// before; the first day's crawl closes no interval), or a complete page's change notices.
fn day_batch(c: &PageChunk, span: HistorySpan, k: u32, seed: u64) -> Result<RecordBatch> {
    let start_us = span.day_start_us(k);
    let (start_s, end_s) = (
        start_us as f64 / MICROS_PER_S,
        (start_us + DAY_US) as f64 / MICROS_PER_S,
    );
    let n = c.urls.len();
    let (mut urls, mut hosts) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut at, mut changed, mut complete) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        let (url, rate) = (c.urls[i].as_str(), c.change_rate[i]);
        if c.complete[i] {
            // Notices in (start, end]; one exactly at the end (probability zero) would lie in the
            // next day's file, so the day keeps [start, end) and drops it.
            for t in changes_between(url.as_bytes(), start_s, end_s, rate, seed) {
                if t < end_s {
                    urls.push(url);
                    hosts.push(c.hosts[i].as_str());
                    at.push(t);
                    changed.push(true);
                    complete.push(true);
                }
            }
        } else {
            // whole microseconds, as revisit's times are: the day's bounds are exact
            let at_s = (start_us + phase_us(url)) as f64 / MICROS_PER_S;
            urls.push(url);
            hosts.push(c.hosts[i].as_str());
            at.push(at_s);
            changed.push(k > 0 && changed_before(url.as_bytes(), at_s, 1.0, rate, seed));
            complete.push(false);
        }
    }
    Ok(RecordBatch::try_new(
        schema::history(),
        vec![
            Arc::new(StringArray::from(urls)),
            Arc::new(StringArray::from(hosts)),
            Arc::new(Float64Array::from(at)),
            Arc::new(BooleanArray::from(changed)),
            Arc::new(BooleanArray::from(complete)),
        ],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_tile_the_span_up_to_its_end() {
        let span = HistorySpan {
            days: 3,
            end_us: 10 * DAY_US,
        };
        assert_eq!(span.day_start_us(0), 7 * DAY_US);
        assert_eq!(span.day_start_us(2) + DAY_US, span.end_us);
    }

    #[test]
    fn a_crawl_falls_within_its_day() {
        for i in 0..10_000 {
            let p = phase_us(&format!("https://h.example/{i}"));
            assert!((0..DAY_US).contains(&p));
        }
    }
}
