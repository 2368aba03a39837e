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
}

impl NightReport {
    /// The night as a line a person reads.
    pub fn human(&self) -> String {
        format!(
            "night {:>3} ({}): {:>9} fetches of {:>9} URLs ({} failed), {:>7} overdue; staleness {:.6} (evenly spaced optimum {:.6}, Poisson {:.6})\n",
            self.night,
            self.start,
            self.fetches,
            self.urls_fetched,
            self.fetches_failed,
            self.overdue,
            self.staleness,
            self.staleness_evenly_spaced,
            self.staleness_poisson
        )
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
        s
    }
}
