//! The rolling timetable of `run --timetable`: every fetch due tonight, for every URL. Each worker
//! sends its hosts' due times to their crawler's writer, which orders the hosts canonically, serves
//! them politely at the crawler's rate ([`revisit_core::schedule::night::rolling_night`]) and
//! writes the table; what does not fit stays due.

use std::path::Path;

use anyhow::Result;
use revisit_core::schedule::night::{rolling_night, DueHost as NightHost, NightTotals};
use revisit_core::units::Seconds;

use super::schedule::{HostSchedule, Schedule};
use super::write::write_fetches;
use crate::io::manifest::FileEntry;
use crate::job::arrange::Arranged;
use crate::job::channel::Shuffle;
use crate::job::wire::due::{DueBatch, DueHost};
use crate::job::wire::BATCH_TEXT_BYTES;
use crate::report::run::ScheduleCounts;

/// How a rolling night is served: the night and each crawler's rate.
#[derive(Clone, Copy, Debug)]
pub struct Night {
    pub start_us: i64,
    pub horizon: Seconds,
    /// Fetches per second of one crawler.
    pub crawler_rate: f64,
}

/// Sends this worker's hosts of `crawler` with something due tonight to its writer `dest`.
pub fn send(
    channel: &mut Shuffle<DueBatch>,
    arranged: &Arranged,
    schedule: &Schedule,
    hosts: &[usize],
    night: &Night,
    dest: u32,
) {
    let new_batch = || DueBatch {
        dest,
        hosts: vec![],
    };
    let mut batch = new_batch();
    let mut text = 0;
    let mut due = HostSchedule::default();
    for &h in hosts {
        // counted where the rates were sent
        schedule.host(h, &mut due, &mut ScheduleCounts::default());
        if let Some(host) = DueHost::of(arranged, h, &due, night.horizon) {
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

/// Writes `visits/crawler=NNN/part-00000.parquet` of one crawler from the hosts every worker sent
/// it; returns its entry and totals.
pub fn write_crawler_night(
    staging: &Path,
    rel: &str,
    batches: Vec<DueBatch>,
    night: &Night,
    metadata: &[(String, String)],
) -> Result<(FileEntry, NightTotals)> {
    let mut hosts: Vec<DueHost> = batches.into_iter().flat_map(|b| b.hosts).collect();
    // hosts in identity order, whatever worker sent them: the same night on any worker count
    hosts.sort_unstable_by_key(|h| h.id);
    let views: Vec<NightHost> = hosts
        .iter()
        .map(|h| NightHost {
            min_delay: Seconds(h.min_delay_s),
            not_before_s: h.not_before_s,
            due_s: &h.due_s,
        })
        .collect();
    let served = rolling_night(&views, night.crawler_rate, night.horizon);
    let entry = write_fetches(
        staging,
        rel,
        &served.fetches,
        |h| (&hosts[h].name, &hosts[h].urls),
        night.start_us,
        metadata,
    )?;
    Ok((entry, served.totals))
}
