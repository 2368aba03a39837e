//! `revisit simulate`: the nightly loop run night after night on a page set whose change rates are
//! the truth. Each night is a `run --timetable` continuing from the night before (`--previous`) and
//! from a synthetic fetch log of what its crawlers served (`--fetched`, with a share of failures);
//! each night is valued exactly on the realized fetch times (Liu & Nain Lemma 3 over each URL's
//! realized gaps) beside the best evenly spaced crawl at the same bandwidth and the night's rates
//! fetched as Poisson.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use revisit_core::estimate::synthetic::{changed_before, changes_between};
use revisit_core::exact_sum::ExactSum;
use revisit_core::objective::{binary_cost, fixed_interval, harmonic_cost, Objective};
use revisit_core::schedule::evaluate::window_staleness;
use revisit_core::units::SECONDS_PER_DAY;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::heading;
use super::run::RunArgs;
use crate::io::nights_plot::{write_nights_svg, Axes, Curve, STALENESS};
use crate::io::pages::PageFile;
use crate::io::{fetched_out, history_out as observed_out, inputs, pages, state_in, visits_in};
use crate::plan::run::RunPlan;
use crate::plan::Options;
use crate::report::provenance::{InputFile, Provenance, RunIdentity};
use crate::report::run::Summary;
use crate::report::simulate::{NightReport, SimulationSummary};
use crate::time::{add_seconds_us, format_timestamp, MICROS_PER_S};

/// Options of `revisit simulate`: `run`'s, and the loop's.
#[derive(Clone, Debug, clap::Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Nights to run, each continuing the one before
    #[arg(long, default_value_t = 30, value_name = "N", help_heading = heading::TIMETABLE)]
    pub nights: u32,
    /// Share of served fetches the log marks failed
    ///
    /// Their URLs stay due, as a crawler's failed fetches do.
    #[arg(long, default_value_t = 0.0, value_name = "SHARE", help_heading = heading::TIMETABLE)]
    pub failure_share: f64,
    /// Learn change rates from the fetches, from the prior on
    ///
    /// Each night plans from the rates learned so far (`run --history` on what the crawlers saw
    /// the night before, continuing from the last night's learned table); the pages' change_rate
    /// column is the truth the changes are drawn from. A fetched page reveals whether it changed
    /// since its last fetch; a page with complete observations sees every change. Each night
    /// reports its plan's harmonic and binary costs on the true rates beside the oracle's, which
    /// plans from the true rates (NeurIPS'19 Alg. 4).
    #[arg(long, help_heading = heading::TIMETABLE)]
    pub learn: bool,
    /// Seed of failures and changes
    ///
    /// The same seed gives the same nights.
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = heading::OTHER)]
    pub seed: u64,
    /// Print one JSON object per night per line, for machines
    #[arg(long, overrides_with = "no_json", help_heading = heading::OUTPUT)]
    pub json: bool,
    /// Print text (undoes --json from a job file)
    #[arg(long, overrides_with = "json", hide_short_help = true, help_heading = heading::OUTPUT)]
    pub no_json: bool,
}

/// A page of the simulation: its true importance and change rate, and its last successful fetch
/// (seconds since the epoch).
struct Page {
    importance: f64,
    change_rate: f64,
    complete_obs: bool,
    last_ok_s: Option<f64>,
}

/// Runs the loop; returns its nights (process 0).
pub fn simulate(args: &SimulateArgs, options: &Options) -> Result<SimulationSummary> {
    let identity = RunIdentity::now();
    if args.nights == 0 {
        bail!("--nights must be at least 1");
    }
    if !(0.0..1.0).contains(&args.failure_share) {
        bail!(
            "--failure-share must be in [0, 1), got {}",
            args.failure_share
        );
    }
    if args.run.previous.is_some()
        || !args.run.fetched.is_empty()
        || !args.run.history.is_empty()
        || args.run.cyclic
    {
        bail!(
            "simulate drives --previous, --fetched, --history and the timetable itself: leave them out"
        );
    }
    if args.run.runner.cluster.processes > 1 {
        bail!("simulate runs in one process (give -w for threads)");
    }
    let base = args.run.plan()?;
    let work = base.out.clone();
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let page_files = pages::open_all(
        &inputs::expand_pages(&base.pages.inputs)?,
        base.pages.politeness,
    )?;
    let mut pages = truth(&base, &page_files)?;
    let weight = pages
        .values()
        .fold(ExactSum::default(), |mut w, p| {
            w.add(p.importance);
            w
        })
        .value();

    // the best evenly spaced crawl at this bandwidth: the polite binary-fixed optimum
    let optimum_dir = work.join("optimum");
    run_night(&args.run, options, |a| {
        a.objective = Objective::BinaryFixed;
        a.timetable = false;
        a.out = optimum_dir.clone();
    })?;
    let evenly_spaced = expected(&pages, &rates_by_url(&optimum_dir)?, weight).evenly_spaced;

    // with --learn: the plan of the oracle that knows every change rate, valued as each night's is
    let oracle = if args.learn {
        let dir = work.join("oracle");
        run_night(&args.run, options, |a| {
            a.timetable = false;
            a.out = dir.clone();
        })?;
        Some(costs(&pages, &rates_by_url(&dir)?))
    } else {
        None
    };
    let horizon_s = base.pages.horizon.0;
    let mut nights = Vec::new();
    let mut start_us = base.schedule.start_us;
    for night in 1..=args.nights {
        let out = work.join(format!("night-{night:03}"));
        let previous = (night > 1).then(|| work.join(format!("night-{:03}", night - 1)));
        let log = (night > 1).then(|| work.join(format!("fetched-{:03}.parquet", night - 1)));
        // what the crawlers saw before tonight (nothing before the first night: the prior)
        let seen = work.join(format!("observed-{:03}.parquet", night - 1));
        if args.learn && night == 1 {
            observed_out::write(&seen, &[])?;
        }
        let summary = run_night(&args.run, options, |a| {
            a.timetable = true;
            a.start = Some(format_timestamp(start_us));
            a.previous = previous.clone();
            a.fetched = log.iter().map(|p| p.display().to_string()).collect();
            if args.learn {
                a.history = vec![seen.display().to_string()];
            }
            a.out = out.clone();
        })?;
        if night == 1 {
            steady_state_copies(&out, &mut pages)?;
        }
        let rates = rates_by_url(&out)?;
        let planned = expected(&pages, &rates, weight);
        let learned = oracle.map(|oracle| (costs(&pages, &rates), oracle));
        let served = served(&out, horizon_s)?;
        let mut fetches: Vec<(String, i64, bool)> = served
            .iter()
            .flat_map(|(url, times)| {
                times.iter().map(move |&at_s| {
                    let at_us = add_seconds_us(start_us, at_s);
                    (url.clone(), at_us, !fails(args, night, url, at_us))
                })
            })
            .collect();
        // by URL and time: the served fetches come out of a map, in no order of their own
        fetches.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        fetched_out::write(&work.join(format!("fetched-{night:03}.parquet")), &fetches)?;
        // each URL's successful fetches tonight, in time order
        let mut ok: HashMap<&str, Vec<f64>> = HashMap::new();
        for (url, at_us, good) in &fetches {
            if *good {
                ok.entry(url.as_str())
                    .or_default()
                    .push(*at_us as f64 / MICROS_PER_S);
            }
        }
        let (from, to) = (
            start_us as f64 / MICROS_PER_S,
            start_us as f64 / MICROS_PER_S + horizon_s,
        );
        let mut stale = ExactSum::default();
        let mut observed = Vec::new();
        for (url, page) in pages.iter_mut() {
            let mut times = ok.remove(url.as_str()).unwrap_or_default();
            times.sort_by(f64::total_cmp);
            if args.learn {
                observe(url, page, &times, (from, to), args.seed, &mut observed);
            }
            stale.add(
                page.importance
                    * window_staleness(page.change_rate, page.last_ok_s, &times, from, to),
            );
            if let Some(&last) = times.last() {
                page.last_ok_s = Some(last);
            }
        }
        nights.push(NightReport {
            night,
            start: format_timestamp(start_us),
            fetches: fetches.len() as u64,
            urls_fetched: served.len() as u64,
            fetches_failed: fetches.iter().filter(|f| !f.2).count() as u64,
            overdue: summary.schedule.counts.urls_overdue,
            staleness: stale.value() / weight,
            staleness_evenly_spaced: evenly_spaced,
            staleness_poisson: planned.poisson,
            cost_harmonic: learned.map(|(c, _)| c.harmonic),
            cost_binary: learned.map(|(c, _)| c.binary),
            oracle_cost_harmonic: learned.map(|(_, o)| o.harmonic),
            oracle_cost_binary: learned.map(|(_, o)| o.binary),
        });
        if args.learn {
            observed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            observed_out::write(
                &work.join(format!("observed-{night:03}.parquet")),
                &observed,
            )?;
        }
        start_us = add_seconds_us(start_us, horizon_s);
    }
    let mean = |f: fn(&NightReport) -> f64| nights.iter().map(f).sum::<f64>() / nights.len() as f64;
    let summary = SimulationSummary {
        provenance: Provenance::new(
            "simulate",
            identity,
            page_files
                .iter()
                .map(|f| InputFile::new(&f.path, f.format(), f.bytes))
                .collect(),
            base.pages
                .hosts
                .as_ref()
                .map(|h| InputFile::new(h, "parquet", crate::io::inputs::size(h))),
            options,
        ),
        staleness_mean: mean(|n| n.staleness),
        staleness_evenly_spaced: evenly_spaced,
        staleness_poisson_mean: mean(|n| n.staleness_poisson),
        nights,
    };
    write_outputs(&work, &summary)?;
    Ok(summary)
}

/// Runs one night: `run`'s options as given, changed by `change`; returns its summary.
fn run_night(
    base: &RunArgs,
    options: &Options,
    change: impl FnOnce(&mut RunArgs),
) -> Result<Summary> {
    let mut args = base.clone();
    args.runner.quiet = true;
    change(&mut args);
    let mut plan = args.plan()?;
    plan.options = options.clone();
    crate::job::run(plan)?.context("the night's run returned no summary")
}

/// The pages' true importance (as the solver reads it) and change rate, by URL (the first row of
/// a URL, as `run` keeps it).
fn truth(plan: &RunPlan, files: &[PageFile]) -> Result<HashMap<String, Page>> {
    let rows = pages::read_all(files, &plan.pages.defaults)?;
    let mut by_url = HashMap::with_capacity(rows.len());
    for (url, importance, change_rate, complete_obs) in rows {
        by_url.entry(url).or_insert(Page {
            importance: plan.pages.importance(importance, change_rate),
            change_rate,
            complete_obs,
            last_ok_s: None,
        });
    }
    Ok(by_url)
}

/// Before the first night every copy is taken to be one interval older than its first due time
/// (the phase of a crawl that had been running): the loop starts in its steady state rather than
/// with every page stale.
fn steady_state_copies(first_night: &Path, pages: &mut HashMap<String, Page>) -> Result<()> {
    let previous = state_in::open(first_night)?;
    for unit in state_in::units(&previous) {
        state_in::read_unit(
            &previous,
            unit,
            |row| {
                if let Some(page) = pages.get_mut(row.url) {
                    page.last_ok_s = Some(row.next_fetch_us as f64 / MICROS_PER_S - row.interval_s);
                }
            },
            |_| {},
        )?;
    }
    Ok(())
}

/// Each URL's crawl rate (per day) in a revisit output's rates tables; URLs it holds no row for
/// have rate zero.
fn rates_by_url(out: &Path) -> Result<HashMap<String, f64>> {
    let output = state_in::open(out)?;
    let mut rates = HashMap::new();
    for unit in state_in::units(&output) {
        state_in::read_unit(
            &output,
            unit,
            |row| {
                rates.insert(row.url.to_owned(), SECONDS_PER_DAY / row.interval_s);
            },
            |_| {},
        )?;
    }
    Ok(rates)
}

/// What a crawler saw tonight of a page: at each successful fetch, whether the page changed since
/// the one before (the first fetch ever closes no interval); a page with complete observations
/// sees every change as a notice instead. Drawn from the page's true rate, seeded.
fn observe(
    url: &str,
    page: &Page,
    fetches_s: &[f64],
    (from_s, to_s): (f64, f64),
    seed: u64,
    out: &mut Vec<(String, f64, bool, bool)>,
) {
    if page.complete_obs {
        for at_s in changes_between(url.as_bytes(), from_s, to_s, page.change_rate, seed) {
            out.push((url.to_owned(), at_s, true, true));
        }
        return;
    }
    let mut last = page.last_ok_s;
    for &at_s in fetches_s {
        let changed = last.is_some_and(|l| {
            let gap_days = (at_s - l) / SECONDS_PER_DAY;
            changed_before(url.as_bytes(), at_s, gap_days, page.change_rate, seed)
        });
        out.push((url.to_owned(), at_s, changed, false));
        last = Some(at_s);
    }
}

/// The harmonic and binary costs of a plan's rates on the true pages (NeurIPS'19 eqs. 4 and 12,
/// with complete observations where a page has them; a page without a rate costs as never
/// fetched).
#[derive(Clone, Copy, Debug)]
struct Costs {
    harmonic: f64,
    binary: f64,
}

fn costs(pages: &HashMap<String, Page>, rates: &HashMap<String, f64>) -> Costs {
    let (mut harmonic, mut binary) = (ExactSum::default(), ExactSum::default());
    for (url, p) in pages {
        let rate = rates.get(url).copied().unwrap_or(0.0);
        harmonic.add(harmonic_cost(
            p.importance,
            p.change_rate,
            rate,
            p.complete_obs,
        ));
        binary.add(binary_cost(
            p.importance,
            p.change_rate,
            rate,
            p.complete_obs,
        ));
    }
    Costs {
        harmonic: harmonic.value(),
        binary: binary.value(),
    }
}

/// What rates are worth when every page is fetched at them, as importance-weighted shares of time
/// stale.
struct Expected {
    /// Fetched evenly spaced (Cho & Garcia-Molina: 1 - (1 - e^-x)/x, x = lambda/rho).
    evenly_spaced: f64,
    /// Fetched as Poisson (NeurIPS'19 eq. 12: lambda/(rho + lambda)).
    poisson: f64,
}

/// The value of `rates` on the true pages. Every page is valued as fetched at its rate, pages with
/// complete observations too: the timetable fetches them at their times like the others, so this
/// is the world the realized fetches are measured in.
fn expected(pages: &HashMap<String, Page>, rates: &HashMap<String, f64>, weight: f64) -> Expected {
    let (mut evenly_spaced, mut poisson) = (ExactSum::default(), ExactSum::default());
    for (url, page) in pages {
        let rate = rates.get(url).copied().unwrap_or(0.0);
        evenly_spaced.add(fixed_interval::cost(
            page.importance,
            page.change_rate,
            rate,
        ));
        poisson.add(binary_cost(page.importance, page.change_rate, rate, false));
    }
    Expected {
        evenly_spaced: evenly_spaced.value() / weight,
        poisson: poisson.value() / weight,
    }
}

/// The fetches a night's visits tables serve, by URL (seconds from the night's start).
fn served(out: &Path, horizon_s: f64) -> Result<HashMap<String, Vec<f64>>> {
    let dir = out.join("visits");
    let files = visits_in::open_all(&inputs::expand(&[dir.display().to_string()])?)?;
    visits_in::read_times(&files, horizon_s)
}

/// Whether the synthetic log marks the fetch of `url` at `at_us` on `night` failed: a hash of
/// them and the seed, so every run of the same loop fails the same fetches.
fn fails(args: &SimulateArgs, night: u32, url: &str, at_us: i64) -> bool {
    if args.failure_share <= 0.0 {
        return false;
    }
    let h = xxh3_64_with_seed(
        url.as_bytes(),
        args.seed ^ ((night as u64) << 32) ^ at_us as u64,
    );
    let uniform = (h >> 11) as f64 / (1u64 << 53) as f64;
    uniform < args.failure_share
}

/// summary.json, simulate.csv and simulate.svg in the work folder.
fn write_outputs(work: &Path, s: &SimulationSummary) -> Result<()> {
    let summary_path = work.join("summary.json");
    std::fs::write(&summary_path, serde_json::to_string_pretty(s)? + "\n")
        .with_context(|| format!("writing {}", summary_path.display()))?;
    let csv_path = work.join("simulate.csv");
    let mut w = csv::Writer::from_path(&csv_path)
        .with_context(|| format!("writing {}", csv_path.display()))?;
    for n in &s.nights {
        w.serialize(n)?;
    }
    w.flush()?;
    let staleness: Vec<f64> = s.nights.iter().map(|n| n.staleness).collect();
    let even: Vec<f64> = s.nights.iter().map(|n| n.staleness_evenly_spaced).collect();
    let poisson: Vec<f64> = s.nights.iter().map(|n| n.staleness_poisson).collect();
    write_nights_svg(
        &work.join("simulate.svg"),
        &STALENESS,
        &[
            Curve {
                name: "realized fetches",
                colour: plotters::style::RGBColor(0, 114, 178),
                values: &staleness,
            },
            Curve {
                name: "evenly spaced optimum",
                colour: plotters::style::RGBColor(0, 158, 115),
                values: &even,
            },
            Curve {
                name: "the plan's rates, Poisson",
                colour: plotters::style::RGBColor(213, 94, 0),
                values: &poisson,
            },
        ],
    )?;
    let learned: Vec<f64> = s.nights.iter().filter_map(|n| n.cost_harmonic).collect();
    let oracle: Vec<f64> = s
        .nights
        .iter()
        .filter_map(|n| n.oracle_cost_harmonic)
        .collect();
    if learned.is_empty() {
        return Ok(());
    }
    write_nights_svg(
        &work.join("learn.svg"),
        &Axes {
            caption: "harmonic cost per night: learned rates against the true ones",
            y: "harmonic cost on the true change rates",
        },
        &[
            Curve {
                name: "plan from the learned rates",
                colour: plotters::style::RGBColor(0, 114, 178),
                values: &learned,
            },
            Curve {
                name: "oracle: plan from the true rates",
                colour: plotters::style::RGBColor(0, 158, 115),
                values: &oracle,
            },
        ],
    )
}

/// Runs `revisit simulate`; returns the nights (one JSON object per line with --json).
pub fn run(args: &SimulateArgs, options: &Options) -> Result<String> {
    let summary = simulate(args, options)?;
    Ok(if args.json {
        summary
            .nights
            .iter()
            .map(|n| serde_json::to_string(n).map(|l| l + "\n"))
            .collect::<Result<String, _>>()?
    } else {
        summary.human(&args.run.out)
    })
}
