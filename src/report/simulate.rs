//! What `simulate` reports.

use serde::Serialize;

use super::format::{count, num};
use super::provenance::Provenance;
use super::TotalSeconds;

/// Simulated and exact importance-weighted mean staleness of a run's timetable.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationReport {
    #[serde(flatten)]
    pub provenance: Provenance,
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
    pub seconds: TotalSeconds,
}

impl SimulationReport {
    pub fn human(&self) -> String {
        format!(
            "revisit simulate: {} pages, {} visits per horizon, {} horizons (seed {})\n  staleness simulated {} +- {} (95% CI [{}, {}]), exact {}: {}\n",
            count(self.pages),
            count(self.visits),
            count(self.horizons),
            self.seed,
            num(self.simulated),
            num(1.96 * self.std_err),
            num(self.simulated - 1.96 * self.std_err),
            num(self.simulated + 1.96 * self.std_err),
            num(self.exact),
            if self.exact_in_95_ci { "inside" } else { "OUTSIDE" }
        )
    }
}
