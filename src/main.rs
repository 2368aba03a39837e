//! revisit: compute freshness-optimal, polite crawl rates (see README.md).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use revisit::gen::{generate, GenArgs};
use revisit::job::config::RunArgs;
use revisit::job::evaluate::EvaluateArgs;
use revisit::job::sweep::SweepArgs;
use revisit::cli::plan_crawlers::PlanCrawlersArgs;

// No custom global allocator: STACK.md found mimalloc faster when Strings were freed on other
// threads, but rows now travel as columnar buffers, and on the 1M-URL benchmark glibc's malloc
// gave 1.5-1.9 s and 237 MiB peak against mimalloc's 2.2 s and 397 MiB (its eagerly committed
// arenas are zeroed page by page by the kernel before use).

/// Freshness-optimal, polite crawl rates for every URL, as a timely-dataflow batch job.
#[derive(Parser)]
#[command(name = "revisit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compute every URL's crawl rate, per-host budgets and one partition per crawler.
    ///
    /// With no arguments it runs on the sample page set in data/ and writes out/.
    #[command(args_override_self = true)]
    Run(RunArgs),
    /// The optimum of several policies over a range of bandwidths, with and without politeness:
    /// a table (CSV, Parquet) and a plot (SVG) of staleness against bandwidth.
    ///
    /// The page set is read once; each bandwidth warm-starts from the previous one.
    #[command(args_override_self = true)]
    Sweep(SweepArgs),
    /// The value of a rates table (ours or anyone's) on a page set: harmonic and binary staleness,
    /// freshness, and the gap to each objective's optimum at the same bandwidth, polite and not.
    #[command(args_override_self = true)]
    Evaluate(EvaluateArgs),
    /// Monte Carlo check of a `run --timetable` output: Poisson changes against its visits tables,
    /// simulated staleness with a 95% confidence interval beside the exact value.
    Simulate(revisit::job::simulate::SimulateArgs),
    /// Estimate every URL's change rate from its crawl history (NeurIPS'19 §5, eqs. 10 and 11).
    Estimate(revisit::job::estimate::EstimateArgs),
    /// Write a synthetic, web-like page set (Parquet shards and a hosts table).
    Gen(GenArgs),
    /// How many crawlers should feed one indexer (Liu & Nain §1.2: M/M/1/K queue and an MDP).
    PlanCrawlers(PlanCrawlersArgs),
    /// Benchmark baseline: read the inputs and write them back as Parquet, nothing else (JSON).
    #[command(hide = true)]
    BenchIo {
        /// Page sets, as for `run`.
        inputs: Vec<String>,
        /// Folder for the copies.
        #[arg(long)]
        out: std::path::PathBuf,
        /// Threads.
        #[arg(short = 'w', long, default_value_t = 1)]
        workers: usize,
    },
}

fn main() -> ExitCode {
    // A panicking worker would leave the others waiting forever (STACK.md gotcha 1): abort the
    // process instead, so the job ends with a failure status and publishes nothing.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        std::process::abort();
    }));
    let argv = match revisit::job::config::expand_job_file(std::env::args().collect()) {
        Ok(argv) => argv,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(argv);
    let result = match cli.command {
        Command::Run(args) => {
            let out = args.out.clone();
            revisit::job::run(args).map(|summary| {
                if let Some(s) = summary {
                    print!("{}", s.human(&out));
                }
            })
        }
        Command::Sweep(args) => {
            let out = args.out.clone();
            revisit::job::run_sweep(args).map(|summary| {
                if let Some(s) = summary {
                    print!("{}", s.human(&out));
                }
            })
        }
        Command::Evaluate(args) => {
            let json = args.json;
            revisit::job::run_evaluate(args).and_then(|report| {
                if let Some(r) = report {
                    if json {
                        println!("{}", serde_json::to_string_pretty(&r)?);
                    } else {
                        print!("{}", r.human());
                    }
                }
                Ok(())
            })
        }
        Command::Simulate(args) => revisit::job::simulate::run(&args).and_then(|r| {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", r.human());
            }
            Ok(())
        }),
        Command::Estimate(args) => revisit::job::estimate::run(&args).and_then(|r| {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", r.human());
            }
            Ok(())
        }),
        Command::Gen(args) => generate(&args).map(|files| {
            println!("wrote {} files under {}", files.len(), args.out.display());
        }),
        Command::PlanCrawlers(args) => revisit::cli::plan_crawlers::run(&args).map(|text| print!("{text}")),
        Command::BenchIo {
            inputs,
            out,
            workers,
        } => revisit::io::baseline::run(&inputs, &out, workers.max(1)).and_then(|b| {
            println!("{}", serde_json::to_string(&b)?);
            Ok(())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
