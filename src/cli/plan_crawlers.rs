//! `revisit plan-crawlers`: how many crawlers should feed the indexer (Liu & Nain §1.2).

use std::fmt::Write as _;

use anyhow::Result;

use super::heading;
use revisit_core::capacity::dynamic::{self, DynamicPlan, RviSettings, SwitchingCurve};
use revisit_core::capacity::queue::{QueueModel, StaticPerformance};
use revisit_core::capacity::{ModelError, Quantity};

/// Rows of the cost-over-N table on each side of the optimum.
const CURVE_HALF_WIDTH: usize = 4;

/// Flags of `revisit plan-crawlers` (static plan by eq. 1.4 and Prop. 1, dynamic plan by Prop. 6).
/// Rates are per day, as everywhere in revisit (the model is the same in any time unit, as long as
/// all three rates use it).
#[derive(clap::Args, Debug, Clone)]
pub struct PlanCrawlersArgs {
    /// Pages per day ONE crawler hands to the indexer (λ)
    ///
    /// A Poisson rate, pages per day.
    #[arg(
        long = "arrival-rate",
        value_name = "PAGES_PER_DAY",
        allow_negative_numbers = true,
        help_heading = heading::INPUT
    )]
    pub arrival_rate: f64,

    /// Pages per day the indexer finishes while busy (μ)
    ///
    /// 1/μ is the mean indexing time; indexing times are modelled as exponential (an M/M/1/K
    /// queue).
    #[arg(
        long = "index-rate",
        value_name = "PAGES_PER_DAY",
        allow_negative_numbers = true,
        help_heading = heading::INPUT
    )]
    pub index_rate: f64,

    /// Pages the indexer holds, the one indexed included (K)
    ///
    /// K >= 1. A page that arrives while the buffer is full is lost.
    #[arg(long, value_name = "PAGES", help_heading = heading::INPUT)]
    pub buffer: usize,

    /// Cost of an idle indexer, lost pages per day (γ)
    ///
    /// The planner minimises γ·P(indexer idle) + pages lost per day. γ = 2 means that an indexer
    /// starved all the time is as bad as losing 2 pages per day; a larger γ buys more crawlers.
    /// The default γ = μ (the --index-rate) counts idle indexing time like the pages it could have
    /// indexed. Above γ(K) = μ(K+2)/K it pays to offer more pages than the indexer can take
    /// (load > 1).
    #[arg(long, value_name = "PAGES_PER_DAY", allow_negative_numbers = true, help_heading = heading::INPUT)]
    pub gamma: Option<f64>,

    /// Print JSON instead of tables
    ///
    /// {"static":{..},"approx":{..},"dynamic":{..}}
    #[arg(long, overrides_with = "no_json", help_heading = heading::OUTPUT)]
    pub json: bool,
    /// Print tables (undoes --json from a job file)
    #[arg(long, overrides_with = "json", hide_short_help = true, help_heading = heading::OUTPUT)]
    pub no_json: bool,

    /// Also plan dynamically: crawlers on and off by buffer level
    ///
    /// Liu & Nain §1.2.2, solved by relative value iteration (Prop. 6); prints the average cost,
    /// the fewest, mean and most active crawlers, and the switching-curve policy.
    #[arg(long, overrides_with = "no_dynamic", help_heading = heading::OTHER)]
    pub dynamic: bool,
    /// No dynamic plan (undoes --dynamic from a job file)
    #[arg(long, overrides_with = "dynamic", hide_short_help = true, help_heading = heading::OTHER)]
    pub no_dynamic: bool,

    /// With --dynamic: crawlers available [default: no limit]
    ///
    /// Without it the planner finds how many crawlers the best policy ever uses. Set it to the
    /// static optimum to reproduce the chapter's Table 1.2.
    #[arg(long = "max-crawlers", value_name = "N", requires = "dynamic", help_heading = heading::OTHER)]
    pub max_crawlers: Option<usize>,

    #[command(flatten)]
    pub job: super::shared::JobArg,
}

/// Runs `revisit plan-crawlers`: the human tables, or JSON with `--json`.
pub fn run(args: &PlanCrawlersArgs) -> Result<String> {
    let gamma = args.gamma.unwrap_or(args.index_rate);
    let model = QueueModel::new(args.arrival_rate, args.index_rate, args.buffer, gamma)
        .map_err(with_flags)?;
    let report = Report::build(&model, args).map_err(with_flags)?;
    if args.json {
        Ok(serde_json::to_string_pretty(&report)? + "\n")
    } else {
        Ok(report.to_text(&model))
    }
}

/// The option of `plan-crawlers` that sets a quantity of the model.
fn flag(q: Quantity) -> &'static str {
    match q {
        Quantity::ArrivalRate => "--arrival-rate",
        Quantity::IndexRate => "--index-rate",
        Quantity::Buffer => "--buffer",
        Quantity::IdleCost => "--gamma",
        Quantity::Crawlers => "--max-crawlers",
    }
}

/// A model error with the options to fix named first.
fn with_flags(e: ModelError) -> anyhow::Error {
    let flags: Vec<&str> = e.quantities().into_iter().map(flag).collect();
    if flags.is_empty() {
        anyhow::anyhow!(e)
    } else {
        anyhow::anyhow!("{}: {e}", flags.join(", "))
    }
}

/// Everything `plan-crawlers` prints; its JSON form is the machine interface.
#[derive(Debug, serde::Serialize)]
struct Report {
    input: Input,
    #[serde(rename = "static")]
    static_plan: StaticReport,
    approx: ApproxReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    dynamic: Option<DynamicReport>,
}

#[derive(Debug, serde::Serialize)]
struct Input {
    arrival_rate: f64,
    index_rate: f64,
    buffer: usize,
    gamma: f64,
    critical_gamma: f64,
}

#[derive(Debug, serde::Serialize)]
struct StaticReport {
    /// N(γ, K) of Prop. 1.
    crawlers: usize,
    /// Its cost, eq. 1.4.
    cost: f64,
    load: f64,
    starvation_probability: f64,
    loss_rate: f64,
    /// ρ(γ, K), the real-valued optimal load of Lemma 1.
    optimal_load: f64,
    /// Eq. 1.4 for N around the optimum.
    curve: Vec<StaticPerformance>,
}

#[derive(Debug, serde::Serialize)]
struct ApproxReport {
    /// Eq. 1.12's count.
    crawlers: usize,
    /// Its exact cost at this K (eq. 1.4).
    cost: f64,
}

#[derive(Debug, serde::Serialize)]
struct DynamicReport {
    /// True when no --max-crawlers was given (Table 1.3's setting).
    unrestricted: bool,
    #[serde(flatten)]
    plan: DynamicPlan,
}

impl Report {
    fn build(model: &QueueModel, args: &PlanCrawlersArgs) -> Result<Self, ModelError> {
        let best = model.optimal_crawlers();
        let first = best.crawlers.saturating_sub(CURVE_HALF_WIDTH).max(1);
        let curve = (first..=best.crawlers + CURVE_HALF_WIDTH)
            .map(|n| model.performance(n))
            .collect();
        let approx = model.approximate_crawlers();
        let dynamic = if args.dynamic {
            let settings = RviSettings::default();
            let plan = match args.max_crawlers {
                Some(n) => dynamic::solve(model, n, &settings)?,
                None => dynamic::solve_unrestricted(model, &settings)?,
            };
            Some(DynamicReport {
                unrestricted: args.max_crawlers.is_none(),
                plan,
            })
        } else {
            None
        };
        Ok(Self {
            input: Input {
                arrival_rate: model.arrival_rate_per_crawler(),
                index_rate: model.index_rate(),
                buffer: model.buffer(),
                gamma: model.gamma(),
                critical_gamma: model.critical_gamma(),
            },
            static_plan: StaticReport {
                crawlers: best.crawlers,
                cost: best.cost,
                load: best.load,
                starvation_probability: best.starvation_probability,
                loss_rate: best.loss_rate,
                optimal_load: model.optimal_load(),
                curve,
            },
            approx: ApproxReport {
                crawlers: approx,
                cost: model.performance(approx).cost,
            },
            dynamic,
        })
    }

    fn to_text(&self, model: &QueueModel) -> String {
        let mut out = String::new();
        let i = &self.input;
        // Writing into a String cannot fail, so the fmt::Results below are ignored.
        let _ = writeln!(
            out,
            "Crawler capacity plan (Liu & Nain §1.2): N crawlers feed one M/M/1/K indexer"
        );
        let _ = writeln!(
            out,
            "  arrival rate per crawler  λ = {} pages/day",
            i.arrival_rate
        );
        let _ = writeln!(
            out,
            "  indexing rate             μ = {} pages/day",
            i.index_rate
        );
        let _ = writeln!(
            out,
            "  buffer                    K = {} pages (the one being indexed included)",
            i.buffer
        );
        let _ = writeln!(
            out,
            "  idle-indexer weight       γ = {} (γ(K) = μ(K+2)/K = {}: {})",
            i.gamma,
            num(i.critical_gamma),
            if i.gamma > i.critical_gamma {
                "above it, so the optimum overloads the indexer"
            } else {
                "at or below it, so the optimum load is <= 1"
            }
        );

        let s = &self.static_plan;
        let _ = writeln!(
            out,
            "\nStatic: all N crawlers always on, cost = γ·P(idle) + loss rate (eq. 1.4)"
        );
        let _ = writeln!(
            out,
            "       N    load ρ     P(idle)   lost/day       cost C"
        );
        for p in &s.curve {
            let mark = if p.crawlers == s.crawlers { "→" } else { " " };
            let _ = writeln!(
                out,
                "  {mark}{:>5}  {:>8.4}  {:>10}  {:>10}  {:>10}",
                p.crawlers,
                p.load,
                num(p.starvation_probability),
                num(p.loss_rate),
                num(p.cost)
            );
        }
        let _ = writeln!(
            out,
            "  optimal count N(γ,K) = {} (Prop. 1), cost {}; real-valued optimum ρ(γ,K) = {:.4}",
            s.crawlers,
            num(s.cost),
            s.optimal_load
        );
        let _ = writeln!(
            out,
            "  large-K approximation (eq. 1.12): {} crawler(s) (cost {} at this K)",
            self.approx.crawlers,
            num(self.approx.cost)
        );

        if let Some(d) = &self.dynamic {
            dynamic_text(&mut out, d, s.cost, model);
        }
        out
    }
}

fn dynamic_text(out: &mut String, d: &DynamicReport, static_cost: f64, model: &QueueModel) {
    let p = &d.plan;
    let _ = writeln!(out, "\nDynamic: switch crawlers on/off with the buffer level (relative value iteration, Prop. 6)");
    if d.unrestricted {
        let _ = writeln!(
            out,
            "  crawlers available   {} (no --max-crawlers: the cap was raised until it no longer mattered)",
            p.available_crawlers
        );
    } else {
        let _ = writeln!(
            out,
            "  crawlers available   {} (--max-crawlers)",
            p.available_crawlers
        );
    }
    // Large buffers let the policy remove nearly all of the cost; a percentage of ~0 says nothing.
    let negligible = 1e-9 * (model.gamma() + model.index_rate());
    let practically_zero = p.cost_bounds[1] < negligible;
    let comparison = if practically_zero {
        format!(
            "practically zero (below {}): switching removes the static cost {}",
            num(negligible),
            num(static_cost)
        )
    } else {
        format!(
            "{}; the static optimum costs {:.0}% more",
            num(p.cost),
            100.0 * (static_cost - p.cost) / p.cost
        )
    };
    let _ = writeln!(
        out,
        "  average cost         {comparison}\n  starvation, loss     idle {} of the time, {} pages lost per day",
        num(p.starvation_probability),
        num(p.loss_rate),
    );
    let _ = writeln!(
        out,
        "  active crawlers      min {}, mean {:.2}, max {}  (provision {} crawler(s))",
        p.min_active, p.mean_active, p.max_active, p.max_active
    );
    if practically_zero {
        let _ = writeln!(
            out,
            "  note: with a cost this small the choice in rarely visited states hangs on rounding, so\n        the min/max below (reachable extremes, however rare) overstate what is needed"
        );
    }
    let chapter_rule = p
        .paper_criterion_iterations
        .map_or_else(|| "not reached".to_string(), |n| n.to_string());
    let _ = writeln!(
        out,
        "  iterations           {} (cost converged to 1e-8; the chapter's stopping rule would stop at {chapter_rule})",
        p.iterations
    );
    policy_text(out, &p.policy, p.min_active, p.max_active, model.buffer());
}

/// The switching curve as a table, one row per run of active counts r with the same thresholds.
fn policy_text(
    out: &mut String,
    curve: &SwitchingCurve,
    min_active: usize,
    max_active: usize,
    buffer: usize,
) {
    let _ = writeln!(out, "  policy, with r crawlers on and q pages in the buffer just before a page arrives or leaves:");
    let _ = writeln!(out, "          r            a page leaves: switch one more on  a page arrives: keep its crawler on");
    let rule = |f: Option<usize>, lowest: usize| match f {
        None => "never".to_string(),
        Some(t) if t >= buffer => "always".to_string(),
        Some(t) if lowest == t => format!("only if q = {t}"),
        Some(t) => format!("if q <= {t}"),
    };
    let rows = curve.departure.len();
    let reached = |r: usize| (min_active..=max_active).contains(&r);
    let key = |r: usize| (curve.departure[r], curve.arrival[r], reached(r));
    let mut start = 0;
    while start < rows {
        let mut end = start;
        while end + 1 < rows && key(end + 1) == key(start) {
            end += 1;
        }
        let span = if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        };
        let note = if reached(start) {
            ""
        } else {
            "  (never reached)"
        };
        let key = key(start);
        let departure = if start == rows - 1 && end == start {
            "none left".to_string()
        } else {
            rule(key.0, 1)
        };
        let arrival = if start == 0 && end == 0 {
            "-".to_string()
        } else {
            rule(key.1, 0)
        };
        let _ = writeln!(out, "          {span:<12} {departure:<34} {arrival}{note}");
        start = end + 1;
    }
    if !curve.is_threshold_policy {
        let _ = writeln!(
            out,
            "  note: the optimal policy is NOT a switching curve here (the chapter conjectures it always is);"
        );
        let _ = writeln!(
            out,
            "        the table shows where its first run of activations ends"
        );
    } else if !curve.is_monotone {
        let _ = writeln!(
            out,
            "  note: the switching curve is not monotone in r here, unlike the chapter's examples"
        );
    }
}

/// A number with 5 significant digits, the chapter's precision for costs below 1.
fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    if x.abs() < 1e-4 {
        return format!("{x:.4e}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (4 - magnitude).clamp(0, 10) as usize;
    format!("{x:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: PlanCrawlersArgs,
    }

    fn parse(line: &str) -> Result<PlanCrawlersArgs, clap::Error> {
        TestCli::try_parse_from(std::iter::once("plan-crawlers").chain(line.split_whitespace()))
            .map(|c| c.args)
    }

    #[test]
    fn json_has_the_documented_nested_keys() {
        let args = parse("--arrival-rate 0.1 --index-rate 1 --buffer 5 --gamma 1.4 --dynamic --max-crawlers 16 --json").unwrap();
        let v: serde_json::Value = serde_json::from_str(&run(&args).unwrap()).unwrap();
        assert_eq!(v["static"]["crawlers"], 10);
        assert!((v["static"]["cost"].as_f64().unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(v["approx"]["crawlers"], 10);
        // Figure 1.6: cost 0.25924.
        assert!((v["dynamic"]["cost"].as_f64().unwrap() - 0.25924).abs() < 0.5e-5);
        for key in ["min_active", "mean_active", "max_active", "iterations"] {
            assert!(v["dynamic"][key].is_number(), "dynamic.{key}");
        }
        assert_eq!(v["dynamic"]["unrestricted"], false);
        assert_eq!(
            v["dynamic"]["policy"]["departure"]
                .as_array()
                .unwrap()
                .len(),
            17
        );
    }

    #[test]
    fn json_omits_dynamic_unless_asked() {
        let args =
            parse("--arrival-rate 0.01 --index-rate 1 --buffer 5 --gamma 0.4 --json").unwrap();
        let v: serde_json::Value = serde_json::from_str(&run(&args).unwrap()).unwrap();
        assert_eq!(v["static"]["crawlers"], 73);
        assert!(v.get("dynamic").is_none());
    }

    #[test]
    fn human_output_shows_plan_and_policy() {
        let args =
            parse("--arrival-rate 0.1 --index-rate 1 --buffer 5 --gamma 1.4 --dynamic").unwrap();
        let text = run(&args).unwrap();
        assert!(text.contains("optimal count N(γ,K) = 10"), "{text}");
        assert!(
            text.contains("average cost         0.25924; the static optimum costs 54% more"),
            "{text}"
        );
        assert!(text.contains("min 4, mean 9.80, max 15"), "{text}");
        assert!(text.contains("a page leaves: switch one more on"), "{text}");
    }

    #[test]
    fn gamma_defaults_to_the_index_rate() {
        let args = parse("--arrival-rate 0.5 --index-rate 2 --buffer 10 --json").unwrap();
        let v: serde_json::Value = serde_json::from_str(&run(&args).unwrap()).unwrap();
        assert_eq!(v["input"]["gamma"], 2.0);
    }

    #[test]
    fn bad_input_is_explained() {
        let err = |line: &str| run(&parse(line).unwrap()).unwrap_err().to_string();
        assert!(
            err("--arrival-rate 0.1 --index-rate 1 --buffer 0").contains(
                "--buffer: the buffer K (pages, the one being indexed included) must be at least 1"
            )
        );
        assert!(err("--arrival-rate NaN --index-rate 1 --buffer 5")
            .starts_with("--arrival-rate: the arrival rate λ"));
        assert!(err("--arrival-rate 0.1 --index-rate inf --buffer 5").contains("--index-rate"));
        // Negative numbers reach our checks (rather than clap's "unknown argument '-1'").
        assert!(
            err("--arrival-rate 0.1 --index-rate 1 --buffer 5 --gamma -1").starts_with(
                "--gamma: the idle cost γ (lost pages per unit time) must be a finite number > 0"
            )
        );
        assert!(err("--arrival-rate -0.1 --index-rate 1 --buffer 5").contains("--arrival-rate"));
        assert!(
            err("--arrival-rate 0.1 --index-rate 1 --buffer 5 --dynamic --max-crawlers 0")
                .starts_with("--max-crawlers: the crawler count N must be at least 1")
        );
        // --max-crawlers only means something with --dynamic.
        assert!(parse("--arrival-rate 0.1 --index-rate 1 --buffer 5 --max-crawlers 3").is_err());
        assert!(parse("--arrival-rate 0.1 --index-rate 1 --buffer -2").is_err());
    }

    #[test]
    fn numbers_keep_five_significant_digits() {
        assert_eq!(num(0.4), "0.40000");
        assert_eq!(num(0.0018773), "0.0018773");
        assert_eq!(num(123.456789), "123.46");
        assert_eq!(num(123456.7), "123457");
        assert_eq!(num(3.2e-11), "3.2000e-11");
    }
}
