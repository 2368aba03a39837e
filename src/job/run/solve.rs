//! The solve phase of `run`: the bandwidth, the problem on this worker's pages, the rates (every
//! worker takes part in the multiplier's rounds), and what they are worth.

use crate::report::clock::Moment;

use anyhow::Result;
use revisit_core::solve::{self, optimum::value_of_rates, Problem, Solution};

use crate::job::channel::Reducer;
use crate::job::fail_point::fail_point;
use crate::job::load::Loaded;
use crate::job::progress::Progress;
use crate::plan::run::RunPlan;
use crate::report::run::{IntervalCounts, RatesTotals};

/// The solved rates of this worker's pages.
pub struct Solved {
    /// Fetches per day asked for.
    pub bandwidth: f64,
    pub solution: Solution,
    /// What this worker's rates add up to.
    pub totals: RatesTotals,
    /// When the rates were known, and when they were valued.
    pub rates_done: Moment,
    pub done: Moment,
}

/// Solves the run's problem on `loaded`'s pages.
pub fn solve(
    reducer: &mut Reducer<'_>,
    plan: &RunPlan,
    loaded: &Loaded,
    progress: &Progress,
) -> Result<Solved> {
    let bandwidth = plan.bandwidth.per_day(loaded.pages);
    progress.say(format!(
        "solving for {} fetches/day",
        crate::report::format::num(bandwidth)
    ));
    let (least, largest) = plan.schedule.rate_bounds();
    let problem = Problem::new(&loaded.arranged.pages, plan.objective, bandwidth)?
        .with_floor(plan.floor_eps, loaded.pages)?
        .with_rate_bounds(least, largest)?;
    fail_point("solve", reducer.worker.index());
    let solution = solve::solve(&problem, reducer, |round, price, gap| {
        progress.say(format!(
            "round {round}: multiplier {price:.12e}, spend/bandwidth - 1 = {gap:+.3e}"
        ))
    })?;
    if !solution.converged {
        anyhow::bail!(
            "the multiplier search did not converge in {} rounds (bandwidth {bandwidth:e} fetches/day; the rates would sum to {:e}): nothing published. A bandwidth this far from what the pages can use, or pages whose rates jump between adjacent prices, defeat the search; change --bandwidth",
            revisit_core::solve::multiplier::MAX_ROUNDS,
            solution.bandwidth_used
        );
    }
    let rates_done = Moment::now();
    let (value, objective) = value_of_rates(&problem, &solution.rates);
    let mut intervals = IntervalCounts::default();
    // without bounds no page can sit at one: a pass over every page saved
    let hosts_to_count = if problem.is_bounded() {
        problem.hosts()
    } else {
        0
    };
    for h in 0..hosts_to_count {
        for i in problem.host_pages(h) {
            let b = problem.interval_bound(h, i, solution.rates[i]);
            intervals.urls_at_max_interval += b.at_max_interval as u64;
            intervals.urls_at_min_interval += b.at_min_interval as u64;
            intervals.urls_max_interval_unmet += b.max_interval_unmet as u64;
        }
    }
    let scheduled = solution.rates.iter().filter(|&&r| r > 0.0).count() as u64;
    let totals = RatesTotals {
        value,
        objective,
        scheduled,
        zero_rate: solution.rates.len() as u64 - scheduled,
        hosts: solution.hosts.len() as u64,
        hosts_capped: solution.hosts.capped().len() as u64,
        intervals,
        peak_rss: 0,
    };
    Ok(Solved {
        bandwidth,
        solution,
        totals,
        rates_done,
        done: Moment::now(),
    })
}
