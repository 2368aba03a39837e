//! `revisit run`, one worker's program, as its phases: load (read, exchange by host, arrange), the
//! state the night continues from, solve, assign hosts to crawlers, plan a cyclic night's visits
//! (with --cyclic), write the partitions (every URL scheduled as it is written), and summarize and
//! publish (the lead). Every fallible step after the dataflows start ends in an all-reduce that carries errors,
//! so a failing worker stops every worker instead of hanging them.

mod assign;
mod cyclic;
mod learn;
mod rated_pool;
mod rates_partition;
mod rates_sender;
mod rolling;
mod rounds;
pub(crate) mod schedule;
mod solve;
mod state;
mod write;

use anyhow::{Context, Result};
use timely::worker::Worker;

use super::channel::{Reducer, Shuffle};
use super::control::{self, Publication};
use super::identity;
use super::load::{load, LoadChannels, Loaded};
use super::progress::Progress;
use super::share::ProcessShare;
use super::wire::{due::DueBatch, learned::LearnedBatch, rated::RatedBatch, visits::VisitBatch};
use crate::io::manifest::Manifest;
use crate::io::{publish, verify};
use crate::plan::run::{RunPlan, TimetableMode};
use crate::report::clock::Moment;
use crate::report::provenance::Provenance;
use crate::report::rows::DefaultsUsed;
use crate::report::run::{
    PhaseEnds, RollingFacts, RunFacts, ScheduleFacts, Summary, TimetableFacts, VisitsFacts, VERSION,
};
use assign::Assigned;
use learn::{LearnChannels, Learned};
use schedule::Schedule;
use solve::Solved;
use state::{Known, StateChannels};
use write::Written;

/// Runs worker `worker`'s part of `plan` as run `run_id`, with what it shares with its process's
/// workers (the lead took the lock on the output); the lead (worker 0) publishes, tells every
/// process, and returns the summary.
pub fn worker(
    worker: &mut Worker,
    share: &ProcessShare,
    plan: &RunPlan,
    run_id: &str,
) -> Result<Option<Summary>> {
    let started = Moment::now();
    let progress = Progress::of_worker(!plan.quiet, worker.index(), worker.peers(), started.wall());
    let mut channels = Channels::new(worker, plan);
    let mut reducer = Reducer::new(worker);
    // the run's id is the one the lead locked the output with; its start, the earliest worker's
    let identity = identity::with_id(identity::agree(&mut reducer), run_id);
    let pages = &mut channels.pages;
    let mut loaded = load(&mut reducer, pages, share, &plan.pages, &progress)?;
    plan.check_crawlers(loaded.hosts)?;
    let learned = learn_rates(
        &mut reducer,
        share,
        &mut channels,
        plan,
        &mut loaded,
        &progress,
    )?;
    let provenance = Provenance::new(
        "run",
        identity,
        loaded.inputs.clone(),
        loaded.hosts_table.clone(),
        &plan.options,
    );
    let known = state::known(
        &mut reducer,
        share,
        &mut channels.state,
        &plan.schedule,
        loaded.by_host(plan.pages.politeness),
        &loaded.arranged,
        &progress,
    )?;
    let solved = solve::solve(&mut reducer, plan, &loaded, &progress)?;
    let assigned = assign::assign(
        &mut reducer,
        &mut channels.assign,
        plan,
        &loaded.arranged,
        &solved,
        &progress,
    );
    let schedule = schedule::schedule(plan, &loaded.arranged, &solved, &known);
    let night = night(&mut reducer, plan, &loaded, &solved, &progress);
    let phases = Phases {
        loaded: &loaded,
        learned: learned.as_ref(),
        known: &known,
        solved: &solved,
        assigned: &assigned,
        schedule: &schedule,
        night: night.as_ref(),
    };
    let written = write::write(
        &mut reducer,
        &mut channels,
        plan,
        &provenance,
        &phases,
        run_id,
        &progress,
    )?;
    control::publication_begins(Publication {
        staging: written.staging.clone(),
        out: plan.out.clone(),
        run_id: run_id.to_owned(),
    });
    if reducer.worker.index() != 0 {
        return Ok(None);
    }
    let workers = reducer.worker.peers() / plan.cluster.processes();
    let summary = summarize(plan, provenance, phases, written, started, workers, run_id);
    control::announce(summary.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")));
    summary.map(Some)
}

/// The dataflows of a run, built in the same order on every worker.
pub struct Channels {
    /// Input rows to their host's worker (and URL claims).
    pub pages: LoadChannels,
    /// The previous night's state and the fetch logs to their host's worker (when given).
    pub state: StateChannels,
    /// The previous learned table and the crawl history to their host's worker (when learning),
    /// and what was learned to the crawler's writer.
    pub learn: Option<(LearnChannels, Shuffle<LearnedBatch>)>,
    /// Every worker's hosts to the lead, which assigns them to crawlers, and their crawlers back.
    pub assign: assign::AssignChannels,
    /// Solved rows to their crawler's writer.
    pub rated: Shuffle<RatedBatch>,
    /// Visited hosts to their crawler's writer (with --timetable --cyclic).
    pub visits: Option<Shuffle<VisitBatch>>,
    /// Hosts' due times to their crawler's writer (with --timetable).
    pub due: Option<Shuffle<DueBatch>>,
    /// Host rows and rejected rows to the lead.
    pub gather: Shuffle<write::ToLead>,
}

impl Channels {
    fn new(worker: &mut Worker, plan: &RunPlan) -> Self {
        let mode = plan.timetable.as_ref().map(|t| t.mode);
        Channels {
            pages: LoadChannels::new(worker),
            state: StateChannels::new(worker, &plan.schedule),
            learn: plan.learn.is_some().then(|| {
                (
                    LearnChannels::new(worker),
                    Shuffle::new(worker, "LearnedToWriter", |b: &LearnedBatch| b.dest as u64),
                )
            }),
            assign: assign::AssignChannels::new(worker),
            rated: Shuffle::new(worker, "ByCrawler", |b| b.dest as u64),
            visits: matches!(mode, Some(TimetableMode::Cyclic(_)))
                .then(|| Shuffle::new(worker, "ToTimetable", |b: &VisitBatch| b.dest as u64)),
            due: matches!(mode, Some(TimetableMode::Rolling))
                .then(|| Shuffle::new(worker, "DueToTimetable", |b: &DueBatch| b.dest as u64)),
            gather: Shuffle::new(worker, "ToLead", |m: &write::ToLead| m.dest as u64),
        }
    }
}

/// The night's fetches, as the timetable's mode lays them out.
pub enum Night {
    Cyclic(Box<cyclic::Night>),
    Rolling(rolling::Night),
}

/// The night of `plan` (with --timetable); a cyclic one plans its integer visits (every worker
/// takes part).
fn night(
    reducer: &mut Reducer<'_>,
    plan: &RunPlan,
    loaded: &Loaded,
    solved: &Solved,
    progress: &Progress,
) -> Option<Night> {
    let timetable = plan.timetable.as_ref()?;
    Some(match timetable.mode {
        TimetableMode::Cyclic(_) => Night::Cyclic(Box::new(cyclic::plan(
            reducer,
            plan,
            &loaded.arranged,
            solved.bandwidth,
            progress,
        )?)),
        TimetableMode::Rolling => Night::Rolling(rolling::Night {
            start_us: plan.schedule.start_us,
            horizon: plan.pages.horizon,
            crawler_rate: timetable.crawler_rate(
                solved.bandwidth,
                plan.crawlers,
                plan.pages.default_delay,
            ),
        }),
    })
}

/// The learn phase (when the plan learns): every page's change rate estimated from its evidence,
/// and the pages' change rates replaced by the estimates.
fn learn_rates(
    reducer: &mut Reducer<'_>,
    share: &ProcessShare,
    channels: &mut Channels,
    plan: &RunPlan,
    loaded: &mut Loaded,
    progress: &Progress,
) -> Result<Option<Learned>> {
    let (Some(learn_plan), Some((learn_channels, _))) = (&plan.learn, channels.learn.as_mut())
    else {
        return Ok(None);
    };
    let learned = learn::learn_rates(
        reducer,
        share,
        learn_channels,
        learn_plan,
        plan.schedule.start_us,
        loaded.by_host(plan.pages.politeness),
        &loaded.arranged,
        progress,
    )?;
    let pages = std::mem::take(&mut loaded.arranged.pages);
    loaded.arranged.pages = pages
        .with_change_rates(learned.estimates.iter().map(|e| e.change_rate).collect())
        .context("learned change rates")?;
    Ok(Some(learned))
}

/// What the earlier phases made, for the write phase and the lead's summary.
pub struct Phases<'a> {
    loaded: &'a Loaded,
    learned: Option<&'a Learned>,
    known: &'a Known,
    solved: &'a Solved,
    assigned: &'a Assigned,
    schedule: &'a Schedule<'a>,
    night: Option<&'a Night>,
}

/// The lead's last phase: the summary, written beside the tables, every file checked as the lead
/// sees it, and the staging folder published.
fn summarize(
    plan: &RunPlan,
    provenance: Provenance,
    p: Phases,
    written: Written,
    started: Moment,
    workers: usize,
    run_id: &str,
) -> Result<Summary> {
    let write_done = Moment::now();
    let (loaded, solution) = (p.loaded, &p.solved.solution);
    let learned_done = p.learned.map_or(loaded.arrange_done, |l| l.done);
    let summary = Summary::assemble(RunFacts {
        plan,
        provenance,
        bandwidth: p.solved.bandwidth,
        multiplier: solution.multiplier,
        rounds: solution.rounds,
        bandwidth_used: solution.bandwidth_used,
        max_spend: solution.max_spend,
        rows_in: loaded.rows_in,
        rejected_by_reason: &loaded.rejected_by_reason,
        defaults: DefaultsUsed::new(
            &plan.pages.defaults,
            loaded.default_importance,
            loaded.default_change_rate,
        ),
        rates: &written.rates,
        crawler_load_max_over_mean: p.assigned.load_ratio,
        largest_host: p.assigned.largest_host,
        learned: p.learned.map(|l| l.counts.clone()),
        schedule: ScheduleFacts {
            counts: &written.schedule,
            state: &p.known.counts,
        },
        timetable: p.night.map(|n| match n {
            Night::Cyclic(n) => TimetableFacts::Cyclic(VisitsFacts {
                objective: n.planned.objective,
                visits: &n.planned.visits,
                weak_politeness: &n.planned.weak_politeness,
                non_polite: &n.planned.non_polite,
                crawler_rate_per_s: n.settings.crawler_rate,
                totals: &written.nights,
            }),
            Night::Rolling(n) => TimetableFacts::Rolling(RollingFacts {
                crawler_rate_per_s: n.crawler_rate,
                totals: &written.nights,
            }),
        }),
        workers,
        processes: plan.cluster.processes(),
        pages: loaded.pages,
        pages_on_busiest_worker: loaded.pages_on_busiest_worker,
        pages_of_largest_host: loaded.pages_of_largest_host,
        phase_ends: PhaseEnds {
            started,
            read: loaded.read_done,
            exchange: loaded.arrange_done,
            learn: learned_done,
            state: p.known.done,
            solve: p.solved.rates_done,
            value: p.solved.done,
            write: write_done,
        },
    });
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            std::fs::remove_dir_all(&written.staging).ok();
            return Err(e);
        }
    };
    std::fs::write(
        written.staging.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )
    .context("writing summary.json")?;
    let mut files = written.files;
    files.sort();
    let cluster = &plan.cluster;
    let writer = |path: &str| {
        let crawler = path
            .split('/')
            .find_map(|part| part.strip_prefix("crawler="))
            .and_then(|c| c.parse::<u32>().ok())
            .filter(|&c| c < plan.crawlers);
        let w = crawler.map_or(0, |c| written.rounds.writer_of(c) as usize);
        format!("worker {w} of {}", cluster.name(cluster.process_of(w)))
    };
    let published = verify::verify(&written.staging, &files, writer).and_then(|()| {
        control::swap(|| {
            publish::publish(
                &written.staging,
                &plan.out,
                &Manifest {
                    version: VERSION.to_owned(),
                    run_id: run_id.to_owned(),
                    files,
                },
            )
        })
    });
    if let Err(e) = published {
        std::fs::remove_dir_all(&written.staging).ok();
        return Err(e);
    }
    super::fail_point::fail_point("published", 0);
    Ok(summary)
}
