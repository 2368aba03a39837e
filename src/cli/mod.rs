//! The command line: each command's options (clap), the job files they can come from, the plan
//! they resolve to, and the command's entry point, which runs the plan and returns what to print.
//!
//! A new command: a file here with its options (`#[derive(clap::Args)]`), a `plan()` that checks
//! them and computes what derives from them once, and a `run()`; a variant in [`Command`].

pub mod bench_io;
pub mod estimate;
pub mod evaluate;
pub mod gen;
pub mod heading;
pub mod job_file;
pub mod plan_crawlers;
pub mod resolved;
pub mod run;
pub mod shared;
pub mod simulate;
pub mod sweep;

use std::ffi::OsString;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::plan::Options;

/// Lines of help are wrapped at the terminal's width, and at this many characters at most.
pub const HELP_WIDTH: usize = 100;

/// Freshness-optimal, polite crawl rates for every URL, as a timely-dataflow batch job.
#[derive(Parser)]
#[command(name = "revisit", version, about, long_about = None, max_term_width = HELP_WIDTH)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// The command's options as resolved (job file merged, defaults filled), for provenance.
    #[arg(skip)]
    pub options: Options,
}

/// The commands.
#[derive(Subcommand)]
pub enum Command {
    /// Every URL's crawl rate, per-host budgets, one partition per crawler.
    ///
    /// With no arguments it runs on the sample page set in data/ and writes out/.
    #[command(args_override_self = true, disable_help_flag = true)]
    Run(run::RunArgs),
    /// Compare policies over a range of bandwidths, polite and not: a table and a plot.
    ///
    /// The optimum of several policies over a range of bandwidths, with and without politeness: a
    /// table (CSV, Parquet) and a plot (SVG) of staleness against bandwidth. The page set is read
    /// once; each bandwidth warm-starts from the previous one.
    #[command(args_override_self = true, disable_help_flag = true)]
    Sweep(sweep::SweepArgs),
    /// Value a rates table or a timetable (ours or anyone's) on a page set.
    ///
    /// The harmonic and binary costs, freshness, and the gap to each objective's optimum at the
    /// same bandwidth, polite and not.
    #[command(args_override_self = true, disable_help_flag = true)]
    Evaluate(evaluate::EvaluateArgs),
    /// The nightly loop, night after night, on a page set whose change rates are the truth.
    ///
    /// Each night is a `run --timetable` continuing from the night before and from a synthetic
    /// fetch log; each night is valued exactly on its realized fetches beside the best evenly spaced
    /// crawl and Poisson fetching at the same bandwidth.
    #[command(args_override_self = true, disable_help_flag = true)]
    Simulate(simulate::SimulateArgs),
    /// Estimate every URL's change rate from its crawl history (NeurIPS'19 §5, eqs. 10 and 11).
    #[command(args_override_self = true, disable_help_flag = true)]
    Estimate(estimate::EstimateArgs),
    /// Write a synthetic, web-like page set (Parquet shards and a hosts table).
    #[command(args_override_self = true, disable_help_flag = true)]
    Gen(gen::GenCommand),
    /// How many crawlers should feed one indexer (Liu & Nain §1.2).
    ///
    /// The static plan of an M/M/1/K queue (eq. 1.4, Prop. 1) and a dynamic one (an MDP, Prop. 6).
    #[command(
        args_override_self = true,
        disable_help_flag = true,
        override_usage = "revisit plan-crawlers --arrival-rate <PAGES_PER_DAY> --index-rate <PAGES_PER_DAY>\n       --buffer <PAGES> [OPTIONS]"
    )]
    PlanCrawlers(plan_crawlers::PlanCrawlersArgs),
    /// Benchmark baseline: read the inputs and write them back as Parquet, nothing else (JSON).
    #[command(hide = true)]
    BenchIo(bench_io::BenchIoArgs),
}

/// A command line that cannot be parsed: clap's own error (printed by clap, with its exit code),
/// or a job file's.
#[derive(Debug)]
pub enum ParseError {
    Clap(clap::Error),
    JobFile(anyhow::Error),
}

/// Parses a command line, with the options of the job file it names (`--job FILE`) beneath it.
pub fn parse(argv: Vec<OsString>) -> Result<Cli, ParseError> {
    let root = Cli::command();
    // A first look past errors: a job file may hold what the command line lacks; the final parse,
    // with the file's options in, reports what is still wrong.
    let matches = root
        .clone()
        .ignore_errors(true)
        .try_get_matches_from(&argv)
        .map_err(ParseError::Clap)?;
    let strict = |argv: Vec<OsString>| {
        let root = Cli::command();
        let matches = root
            .clone()
            .try_get_matches_from(argv)
            .map_err(ParseError::Clap)?;
        let mut cli = Cli::from_arg_matches(&matches).map_err(ParseError::Clap)?;
        if let Some((name, sub)) = matches.subcommand() {
            if let Some(command) = root.find_subcommand(name) {
                cli.options = resolved::options(command, sub);
            }
        }
        Ok(cli)
    };
    let Some((name, sub)) = matches.subcommand() else {
        return strict(argv);
    };
    let job = sub
        .try_get_one::<std::path::PathBuf>("job")
        .ok()
        .flatten()
        .cloned();
    let Some(job) = job else {
        return strict(argv);
    };
    let command = root
        .find_subcommand(name)
        .expect("the parsed subcommand exists");
    let (options, positional) =
        job_file::arguments(&job, &root, command, sub).map_err(ParseError::JobFile)?;
    // the file's options right after the command's name, so that the command line's come after
    let at = argv
        .iter()
        .position(|a| a.to_str() == Some(name))
        .unwrap_or(1);
    let mut merged: Vec<OsString> = argv[..=at].to_vec();
    merged.extend(options);
    merged.extend(argv[at + 1..].iter().cloned());
    if !positional.is_empty() {
        if !merged.iter().any(|a| a == "--") {
            merged.push("--".into());
        }
        merged.extend(positional);
    }
    strict(merged)
}

/// Runs the command; returns what it prints on stdout.
pub fn run(cli: Cli) -> Result<String> {
    let options = &cli.options;
    match cli.command {
        Command::Run(args) => run::run(&args, options),
        Command::Sweep(args) => sweep::run(&args, options),
        Command::Evaluate(args) => evaluate::run(&args, options),
        Command::Simulate(args) => simulate::run(&args, options),
        Command::Estimate(args) => estimate::run(&args, options),
        Command::Gen(args) => gen::run(&args),
        Command::PlanCrawlers(args) => plan_crawlers::run(&args),
        Command::BenchIo(args) => bench_io::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::run::{Bandwidth, StartSource, TimetableMode};
    use revisit_core::objective::Objective;
    use revisit_core::schedule::timetable::Sequencing;
    use revisit_core::schedule::visits::VisitObjective;
    use revisit_core::units::Seconds;

    fn argv(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    fn parsed(line: &str) -> Result<Cli, ParseError> {
        parse(argv(line))
    }

    fn run_args(line: &str) -> run::RunArgs {
        match parsed(line)
            .unwrap_or_else(|e| panic!("{line}: {e:?}"))
            .command
        {
            Command::Run(a) => a,
            _ => panic!("not run"),
        }
    }

    fn job(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.toml");
        std::fs::write(&path, text).unwrap();
        let p = path.to_str().unwrap().to_owned();
        (dir, p)
    }

    fn job_error(line: &str) -> String {
        match parsed(line) {
            Err(ParseError::JobFile(e)) => format!("{e:#}"),
            Err(ParseError::Clap(e)) => panic!("clap, not the job file: {e}"),
            Ok(_) => panic!("{line} parsed"),
        }
    }

    #[test]
    fn a_plain_run_plans_the_sample_at_its_defaults() {
        let plan = run_args("revisit run").plan().unwrap();
        assert_eq!(plan.pages.inputs, vec!["data/pages"]);
        assert_eq!(
            plan.pages.hosts.as_deref(),
            Some(std::path::Path::new("data/hosts.parquet"))
        );
        assert_eq!(plan.pages.default_delay, Seconds(15.0));
        assert_eq!(plan.pages.horizon, Seconds(86_400.0));
        assert_eq!(plan.bandwidth, Bandwidth::PerUrl(0.2));
        assert_eq!(plan.bandwidth.per_day(20_000), 4_000.0);
        assert_eq!(
            (plan.objective, plan.crawlers, plan.floor_eps),
            (Objective::Harmonic, 10, 0.0)
        );
        assert!(plan.timetable.is_none() && plan.index.is_none() && !plan.quiet);
        // inputs given: no sample hosts table
        let plan = run_args("revisit run pages/").plan().unwrap();
        assert_eq!(
            (plan.pages.inputs.len(), plan.pages.hosts.is_none()),
            (1, true)
        );
    }

    #[test]
    fn every_derived_value_of_a_run_is_resolved_once() {
        let plan = run_args(
            "revisit run --bandwidth 5000 --horizon-s 3600 --min-delay-s 2 --objective binary \
             --timetable --cyclic --start 2026-11-23T00:00:00Z --sequencing carousel --floor 0.3 \
             --index-rate 100 -w 3 --min-interval 1h --max-interval 30d",
        )
        .plan()
        .unwrap();
        assert_eq!(plan.bandwidth, Bandwidth::PerDay(5000.0));
        assert_eq!(plan.pages.horizon, Seconds(3600.0));
        assert_eq!(plan.floor_eps, 0.3);
        assert_eq!(plan.cluster.threads, 3);
        // binary runs' visits pursue freshness, harmonic runs' their own penalty
        assert_eq!(plan.visit_objective(), VisitObjective::Staleness);
        assert_eq!(
            run_args("revisit run").plan().unwrap().visit_objective(),
            VisitObjective::Harmonic
        );
        let t = plan.timetable.unwrap();
        assert_eq!(t.mode, TimetableMode::Cyclic(Sequencing::Carousel));
        // 2026-11-23T00:00:00Z is 20,780 days after the epoch (56 years, 14 of them leap, + 326 days)
        assert_eq!(plan.schedule.start_us, 20_780 * 86_400 * 1_000_000);
        assert_eq!(plan.schedule.start_source, StartSource::Given);
        // an interval of at most 30 days is a rate of at least 1/30 a day; at least 1 h, at most 24
        assert_eq!(plan.schedule.rate_bounds(), (1.0 / 30.0, 24.0));
        // no start given: 00:00 UTC today
        let today = run_args("revisit run").plan().unwrap().schedule;
        assert_eq!(today.start_source, StartSource::Today);
        assert_eq!(today.start_us % (86_400 * 1_000_000), 0);
        // the default crawler rate: 1.25 x the share of 5,000 a day on 10 crawlers, or 2 per 2 s
        assert_eq!(t.crawler_rate(5000.0, 10, plan.pages.default_delay), 1.0);
        let index = plan.index.unwrap();
        assert_eq!(
            (index.index_rate, index.buffer, index.gamma),
            (100.0, 1000, 100.0)
        );
        let plan = run_args("revisit run --bandwidth-fraction 0.5")
            .plan()
            .unwrap();
        assert_eq!(plan.bandwidth.per_day(100), 50.0);
    }

    #[test]
    fn options_no_run_can_take_are_refused_by_name() {
        let err = |line: &str| run_args(line).plan().unwrap_err().to_string();
        assert!(err("revisit run --bandwidth 0").contains("--bandwidth"));
        assert!(err("revisit run --bandwidth-fraction=-1").contains("--bandwidth-fraction"));
        assert!(err("revisit run --floor 1").contains("--floor"));
        assert!(err("revisit run --crawlers 0").contains("--crawlers"));
        assert!(err("revisit run --min-delay-s=-1").contains("--min-delay-s"));
        assert!(err("revisit run --max-reject-share 2").contains("--max-reject-share"));
        assert!(err("revisit run --default-importance 0").contains("--default-importance"));
        assert!(err("revisit run --default-change-days 0").contains("--default-change-days"));
        assert!(err("revisit run --min-interval 2d --max-interval 1d").contains("--max-interval"));
        assert!(err("revisit run --max-interval soon").contains("--max-interval"));
        assert!(err("revisit run --start yesterday").contains("--start"));
        assert!(err("revisit run --index-rate 10 --index-buffer 0").contains("--index-buffer"));
        assert!(err("revisit run -n 2 -p 2").contains("--process"));
        // --cyclic without --timetable is clap's error
        assert!(matches!(
            parsed("revisit run --cyclic"),
            Err(ParseError::Clap(_))
        ));
        // both bandwidths on the command line is clap's error
        assert!(matches!(
            parsed("revisit run --bandwidth 5 --bandwidth-fraction 0.2"),
            Err(ParseError::Clap(_))
        ));
    }

    #[test]
    fn the_command_line_wins_over_the_job_file() {
        let (_d, f) = job("inputs = [\"a\", \"b\"]\nquiet = true\nmin_delay_s = 2.5\n\
             [run]\ncrawlers = 4\nobjective = \"binary\"\nbandwidth_fraction = 0.3\n");
        let a = run_args(&format!("revisit run --job {f} --crawlers 7"));
        assert_eq!(a.crawlers, 7);
        assert_eq!(a.pages.inputs, vec!["a", "b"]);
        assert!(a.runner.quiet);
        assert_eq!(a.pages.min_delay_s, 2.5);
        assert_eq!(a.objective, Objective::Binary);
        assert_eq!(a.bandwidth_fraction, Some(0.3));
        // the command line's inputs replace the file's
        let a = run_args(&format!("revisit run --job {f} c"));
        assert_eq!((a.pages.inputs, a.crawlers), (vec!["c".to_owned()], 4));
        // a switch the file sets can be turned off
        assert!(
            !run_args(&format!("revisit run --job {f} --no-quiet"))
                .runner
                .quiet
        );
        // an option that conflicts with a file's key wins over it
        let a = run_args(&format!("revisit run --job {f} --bandwidth 100"));
        assert_eq!((a.bandwidth, a.bandwidth_fraction), (Some(100.0), None));
        // --job=FILE works too
        assert_eq!(run_args(&format!("revisit run --job={f}")).crawlers, 4);
    }

    #[test]
    fn job_file_errors_name_the_file_and_the_key() {
        let (_d, f) = job("crawlers = \"ten\"\n");
        let e = job_error(&format!("revisit run --job {f}"));
        assert!(e.contains(&f) && e.contains("key crawlers"), "{e}");
        let (_d, f) = job("crawlerz = 3\n");
        let e = job_error(&format!("revisit run --job {f}"));
        assert!(
            e.contains(&f) && e.contains("key crawlerz") && e.contains("not an option"),
            "{e}"
        );
        let (_d, f) = job("[run]\npolicies = \"harmonic\"\n");
        let e = job_error(&format!("revisit run --job {f}"));
        assert!(e.contains("policies") && e.contains("[run]"), "{e}");
        let (_d, f) = job("[runn]\ncrawlers = 3\n");
        assert!(job_error(&format!("revisit run --job {f}")).contains("[runn]"));
        let (_d, f) = job("objective = \"fastest\"\n");
        let e = job_error(&format!("revisit run --job {f}"));
        assert!(e.contains("key objective") && e.contains("fastest"), "{e}");
        let (_d, f) = job("quiet = \"yes\"\n");
        assert!(job_error(&format!("revisit run --job {f}")).contains("true or false"));
        let (_d, f) = job("crawlers = [1, 2]\n");
        assert!(job_error(&format!("revisit run --job {f}")).contains("one value"));
        let (_d, f) = job("crawlers = 3 3\n");
        assert!(job_error(&format!("revisit run --job {f}")).contains("not valid TOML"));
        assert!(
            job_error("revisit run --job /nonexistent/job.toml").contains("/nonexistent/job.toml")
        );
    }

    #[test]
    fn one_job_file_serves_every_command() {
        // the shipped demo: run's keys in [run], shared keys at the top
        for line in [
            "revisit run --job jobs/demo.toml",
            "revisit sweep --job jobs/demo.toml",
            "revisit evaluate --job jobs/demo.toml --rates out/rates",
        ] {
            let cli = parsed(line).unwrap_or_else(|e| panic!("{line}: {e:?}"));
            match cli.command {
                Command::Sweep(a) => {
                    assert_eq!(a.pages.inputs, vec!["data/pages"]);
                    assert_eq!(a.out, std::path::PathBuf::from("sweep"));
                }
                Command::Evaluate(a) => assert_eq!(a.pages.inputs, vec!["data/pages"]),
                Command::Run(a) => assert_eq!((a.crawlers, a.pages.inputs.len()), (10, 1)),
                _ => unreachable!(),
            }
        }
        // a top-level key of another command is left to that command
        let (_d, f) = job("crawlers = 4\npolicies = [\"harmonic\", \"binary\"]\n");
        match parsed(&format!("revisit sweep --job {f}")).unwrap().command {
            Command::Sweep(a) => {
                assert_eq!(a.policies, vec![Objective::Harmonic, Objective::Binary])
            }
            _ => unreachable!(),
        }
        assert_eq!(run_args(&format!("revisit run --job {f}")).crawlers, 4);
    }

    #[test]
    fn every_command_with_options_takes_a_job_file() {
        for c in Cli::command().get_subcommands() {
            if c.is_hide_set() {
                continue;
            }
            assert!(
                c.get_arguments().any(|a| a.get_id() == "job"),
                "{} has no --job",
                c.get_name()
            );
        }
        let (_d, f) =
            job("[plan-crawlers]\narrival_rate = 0.1\nindex_rate = 1\nbuffer = 5\njson = true\n");
        match parsed(&format!("revisit plan-crawlers --job {f} --no-json"))
            .unwrap()
            .command
        {
            Command::PlanCrawlers(a) => assert!(!a.json && a.buffer == 5),
            _ => unreachable!(),
        }
    }

    #[test]
    fn command_line_names_are_the_names_summaries_use() {
        use clap::ValueEnum;
        for o in Objective::ALL {
            assert_eq!(o.to_possible_value().unwrap().get_name(), o.name());
        }
        for s in Sequencing::ALL {
            assert_eq!(s.to_possible_value().unwrap().get_name(), s.name());
        }
    }
}
