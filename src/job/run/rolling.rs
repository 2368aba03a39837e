//! The rolling timetable of `run --timetable`: every fetch due tonight, for every URL. Each worker
//! sends its hosts' due times to their crawler's writer, which orders the hosts canonically, serves
//! them politely at the crawler's rate ([`revisit_core::schedule::night::rolling_night`]) and
//! writes the table; what does not fit stays due.

use std::path::Path;

use anyhow::Result;
use revisit_core::schedule::night::{rolling_night, DueHost as NightHost, NightTotals};
use revisit_core::units::Seconds;

use super::write::write_fetches;
use crate::io::manifest::FileEntry;
use crate::job::channel::Shuffle;
use crate::job::wire::due::DueBatch;

/// How a rolling night is served: the night and each crawler's rate.
#[derive(Clone, Copy, Debug)]
pub struct Night {
    pub start_us: i64,
    pub horizon: Seconds,
    /// Fetches per second of one crawler.
    pub crawler_rate: f64,
}

/// Sends this worker's hosts of a crawler with something due tonight (`batches`, made as their
/// rates were sent: [`super::rates_sender::RatesSender::take_due`]) to its writer.
pub fn send(channel: &mut Shuffle<DueBatch>, batches: Vec<DueBatch>) {
    for batch in batches {
        channel.send(batch);
    }
}

/// Writes `visits/crawler=NNN/part-00000.parquet` of one crawler from the hosts every worker sent
/// it; returns its entry and totals.
pub fn write_crawler_night(
    staging: &Path,
    rel: &str,
    batches: Vec<DueBatch>,
    night: &Night,
    metadata: &[(String, String)],
) -> Result<(FileEntry, NightTotals)> {
    // (identity, batch, host in batch): hosts in identity order, whatever worker sent them, for
    // the same night on any worker count
    let mut hosts: Vec<(u128, u32, u32)> = batches
        .iter()
        .enumerate()
        .flat_map(|(b, batch)| {
            (batch.hosts.iter().enumerate()).map(move |(k, h)| (h.id, b as u32, k as u32))
        })
        .collect();
    hosts.sort_unstable_by_key(|h| h.0);
    let views: Vec<NightHost> = hosts
        .iter()
        .map(|&(_, b, k)| {
            let batch = &batches[b as usize];
            let host = &batch.hosts[k as usize];
            let (due_s, due_counts) = batch.due(k as usize);
            NightHost {
                min_delay: Seconds(host.min_delay_s),
                not_before_s: host.not_before_s,
                due_s,
                due_counts,
            }
        })
        .collect();
    let served = rolling_night(&views, night.crawler_rate, night.horizon);
    let entry = write_fetches(
        staging,
        rel,
        &served.fetches,
        |h, page| {
            let (_, b, k) = hosts[h as usize];
            let batch = &batches[b as usize];
            (batch.name(k as usize), batch.url(k as usize, page as usize))
        },
        night.start_us,
        metadata,
    )?;
    Ok((entry, served.totals))
}
