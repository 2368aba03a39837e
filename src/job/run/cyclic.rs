//! The cyclic timetable of `run --timetable --cyclic`: integer visits over every worker's pages,
//! then each crawler's night, repeated every horizon, built by its writer from the hosts it
//! receives. The math is [`revisit_core::schedule::night`]; here hosts travel to their crawler's
//! writer, which orders them canonically and writes the table.

use std::path::Path;

use anyhow::Result;
use revisit_core::schedule::evaluate::TimetableValue;
use revisit_core::schedule::night::{
    crawler_night, plan_night, NightHost, NightSettings, NightTotals, Planned,
};
use revisit_core::schedule::visits::{host_visit_cap, visit_budget, VisitObjective};

use super::write::write_fetches;
use crate::io::manifest::FileEntry;
use crate::job::arrange::Arranged;
use crate::job::channel::Reducer;
use crate::job::progress::Progress;
use crate::job::wire::visits::VisitBatch;
use crate::plan::run::{RunPlan, TimetableMode};

/// The night every worker agrees on: the integer visits (this worker's pages), how crawlers serve
/// them, and the value of this worker's pages that get no visit (the writers value the others).
pub struct Night {
    pub planned: Planned,
    pub settings: NightSettings,
    /// The night's start, microseconds since the epoch.
    pub start_us: i64,
    pub unvisited: TimetableValue,
}

/// Plans the night's integer visits (with --timetable --cyclic; every worker takes part).
pub fn plan(
    reducer: &mut Reducer<'_>,
    plan: &RunPlan,
    arranged: &Arranged,
    bandwidth: f64,
    progress: &Progress,
) -> Option<Night> {
    let timetable = plan.timetable.as_ref()?;
    let TimetableMode::Cyclic(sequencing) = timetable.mode else {
        return None;
    };
    let horizon = plan.pages.horizon;
    let pages = &arranged.pages;
    let caps: Vec<u32> = arranged
        .host_delays
        .iter()
        .map(|&d| host_visit_cap(horizon, d))
        .collect();
    let keys: Vec<u64> = arranged.urls().map(|url| url.key()).collect();
    let budget = visit_budget(bandwidth, horizon);
    let wanted = plan.visit_objective();
    let planned = plan_night(pages, &caps, &keys, budget, horizon, wanted, reducer);
    let bound = match (planned.objective, planned.weak_politeness.harmonic_cost()) {
        (VisitObjective::Harmonic, Some(h)) => format!("harmonic cost {h:.6e}"),
        (VisitObjective::Harmonic, None) => "harmonic cost inf".to_owned(),
        (VisitObjective::Staleness, _) => {
            format!("staleness {:.6}", planned.weak_politeness.mean())
        }
    };
    let v = &planned.visits;
    progress.say(format!(
        "integer visits for {}: {} of budget {} after {} rounds (multiplier {:.6e}); Weak-Politeness bound: {bound}",
        planned.objective.name(), v.used, v.budget, v.rounds, v.multiplier,
    ));
    let mut unvisited = TimetableValue::default();
    for (i, &k) in v.counts.iter().enumerate() {
        if k == 0 {
            unvisited.add_page(pages.importance()[i], pages.change_rate()[i], &[], horizon);
        }
    }
    let settings = NightSettings {
        horizon,
        sequencing,
        crawler_rate: timetable.crawler_rate(bandwidth, plan.crawlers, plan.pages.default_delay),
    };
    Some(Night {
        planned,
        settings,
        start_us: plan.schedule.start_us,
        unvisited,
    })
}

/// Writes `visits/crawler=N/part-00000.parquet` of one crawler from the hosts every worker sent
/// it; returns its entry and totals.
pub fn write_crawler_visits(
    staging: &Path,
    rel: &str,
    batches: Vec<VisitBatch>,
    night: &Night,
    metadata: &[(String, String)],
) -> Result<(FileEntry, NightTotals)> {
    let mut hosts: Vec<_> = batches.into_iter().flat_map(|b| b.hosts).collect();
    // hosts in identity order, whatever worker sent them: the same night on any worker count
    hosts.sort_unstable_by_key(|h| h.id);
    let views: Vec<NightHost> = hosts
        .iter()
        .map(|h| NightHost {
            min_delay: revisit_core::units::Seconds(h.min_delay_s),
            importance: &h.importance,
            change_rate: &h.change_rate,
            counts: &h.counts,
        })
        .collect();
    let served = crawler_night(&views, &night.settings);
    let entry = write_fetches(
        staging,
        rel,
        &served.fetches,
        |h, page| {
            let host = &hosts[h as usize];
            (host.name.as_bytes(), host.urls[page as usize].as_bytes())
        },
        night.start_us,
        metadata,
    )?;
    Ok((entry, served.totals))
}
