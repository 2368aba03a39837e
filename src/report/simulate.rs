//! What `simulate` reports: one line per night of the nightly loop.

use serde::Serialize;

use super::provenance::Provenance;

/// One night of the simulated loop.
#[derive(Clone, Debug, Serialize)]
pub struct NightReport {
    /// 1 for the first night.
    pub night: u32,
    /// Its start, RFC 3339 (UTC).
    pub start: String,
    /// Fetches in the night's visits tables, and distinct URLs among them.
    pub fetches: u64,
    pub urls_fetched: u64,
    /// Fetches the synthetic log marks failed (their URLs stay due).
    pub fetches_failed: u64,
    /// URLs overdue at the night's start (the run summary's `schedule.urls_overdue`).
    pub overdue: u64,
    /// Importance-weighted share of the night the copies were stale, exact over each URL's
    /// realized fetches (Liu & Nain Lemma 3 over the realized gaps).
    pub staleness: f64,
    /// The same for the best evenly spaced crawl at the bandwidth (the binary-fixed optimum,
    /// polite), and for the night's planned rates fetched as Poisson.
    pub staleness_evenly_spaced: f64,
    pub staleness_poisson: f64,
    /// With --learn: the night's planned rates valued on the true rates (NeurIPS'19 harmonic and
    /// binary costs, summed over URLs), and the same for the oracle that plans from the true rates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_harmonic: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_binary: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle_cost_harmonic: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle_cost_binary: Option<f64>,
}

impl NightReport {
    /// The night as a line a person reads.
    pub fn human(&self) -> String {
        let mut s = format!(
            "night {:>3} ({}): {:>9} fetches of {:>9} URLs ({} failed), {:>7} overdue; staleness {:.6} (evenly spaced optimum {:.6}, Poisson {:.6})",
            self.night,
            self.start,
            self.fetches,
            self.urls_fetched,
            self.fetches_failed,
            self.overdue,
            self.staleness,
            self.staleness_evenly_spaced,
            self.staleness_poisson
        );
        if let (Some(h), Some(oh)) = (self.cost_harmonic, self.oracle_cost_harmonic) {
            s += &format!(
                "; learned plan: harmonic {} ({:+.2}% over the oracle), binary {}",
                super::format::num(h),
                100.0 * (h / oh - 1.0),
                self.cost_binary
                    .map_or_else(String::new, super::format::num)
            );
        }
        s + "\n"
    }
}

/// The loop's nights and the mean staleness over them.
#[derive(Clone, Debug, Serialize)]
pub struct SimulationSummary {
    #[serde(flatten)]
    pub provenance: Provenance,
    pub nights: Vec<NightReport>,
    pub staleness_mean: f64,
    pub staleness_evenly_spaced: f64,
    pub staleness_poisson_mean: f64,
}

impl SimulationSummary {
    /// The nights and their means, for people.
    pub fn human(&self, out: &std::path::Path) -> String {
        let mut s: String = self.nights.iter().map(NightReport::human).collect();
        s += &format!(
            "mean over {} nights: staleness {:.6}, evenly spaced optimum {:.6} ({:+.2}%), Poisson {:.6}\nwrote {}/summary.json, simulate.csv, simulate.svg and each night's output\n",
            self.nights.len(),
            self.staleness_mean,
            self.staleness_evenly_spaced,
            100.0 * (self.staleness_mean / self.staleness_evenly_spaced - 1.0),
            self.staleness_poisson_mean,
            out.display()
        );
        if let Some(last) = self.nights.last() {
            if let (Some(h), Some(oh), Some(b), Some(ob)) = (
                last.cost_harmonic,
                last.oracle_cost_harmonic,
                last.cost_binary,
                last.oracle_cost_binary,
            ) {
                s += &format!(
                    "learned by night {}: harmonic cost {:+.2}% over the oracle's, binary {:+.2}%; wrote learn.svg\n",
                    last.night,
                    100.0 * (h / oh - 1.0),
                    100.0 * (b / ob - 1.0)
                );
            }
        }
        s
    }
}
