//! What `simulate` reports.

use serde::Serialize;

/// Simulated and exact importance-weighted mean staleness of a run's timetable.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationReport {
    pub pages: u64,
    pub visits: u64,
    pub horizons: u64,
    pub seed: u64,
    /// Exact weighted mean staleness of the served timetable.
    pub exact: f64,
    /// Monte Carlo estimate of the same and its standard error.
    pub simulated: f64,
    pub std_err: f64,
    /// Whether the exact value lies in the simulation's 95% confidence interval (+-1.96 s.e.).
    pub exact_in_95_ci: bool,
}

impl SimulationReport {
    pub fn human(&self) -> String {
        format!(
            "simulate: {} pages, {} visits per horizon, {} horizons (seed {})\n  staleness simulated {:.6} +- {:.6} (95% CI [{:.6}, {:.6}]), exact {:.6}: {}\n",
            self.pages,
            self.visits,
            self.horizons,
            self.seed,
            self.simulated,
            1.96 * self.std_err,
            self.simulated - 1.96 * self.std_err,
            self.simulated + 1.96 * self.std_err,
            self.exact,
            if self.exact_in_95_ci { "inside" } else { "OUTSIDE" }
        )
    }
}
