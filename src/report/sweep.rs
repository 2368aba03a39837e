//! What `sweep` reports: `summary.json` and a table a person reads.

use std::collections::BTreeMap;

use serde::Serialize;

use super::format::{cost, count, num, percent};
use super::provenance::Provenance;
use super::rows::DefaultsUsed;
use revisit_core::objective::Objective;
use revisit_core::solve::sweep::SweepPoint;

/// Wall-clock seconds of a sweep's phases, as seen by worker 0.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SweepSeconds {
    /// Reading, exchanging and arranging the page set.
    pub load: f64,
    /// Every point's solves and values.
    pub sweep: f64,
    /// The table, the plot, publishing.
    pub write: f64,
    pub total: f64,
}

/// What `sweep` reports (summary.json).
#[derive(Clone, Debug, Serialize)]
pub struct SweepSummary {
    /// Version, run id, start time, inputs, hosts table, options.
    #[serde(flatten)]
    pub provenance: Provenance,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    pub rejected_by_reason: BTreeMap<String, u64>,
    /// The defaults rows without an importance or a change rate took.
    pub defaults: DefaultsUsed,
    pub policies: Vec<String>,
    pub bandwidth_fractions: Vec<f64>,
    /// The points (in sweep.csv and sweep.parquet, not in summary.json).
    #[serde(skip)]
    pub points: Vec<SweepPoint>,
    /// Rounds of all points' multiplier searches.
    pub rounds: u64,
    pub workers: usize,
    pub processes: usize,
    pub seconds: SweepSeconds,
    #[serde(skip)]
    pub importance_total: f64,
}

impl SweepSummary {
    /// A table a person reads: each policy at the bandwidth closest to 0.2 per URL, polite and not.
    pub fn human(&self, out: &std::path::Path) -> String {
        let target = 0.2;
        let nearest = self
            .bandwidth_fractions
            .iter()
            .copied()
            .min_by(|a, b| (a / target).ln().abs().total_cmp(&(b / target).ln().abs()))
            .unwrap_or(target);
        let mut s = format!(
            "revisit {} sweep: {} URLs, {} policies x {} bandwidths x polite/no caps in {:.2} s (load {:.2} s, {} rounds)\n",
            self.provenance.version,
            count(self.urls),
            self.policies.len(),
            self.bandwidth_fractions.len(),
            self.seconds.total,
            self.seconds.load,
            count(self.rounds),
        );
        s += &self.defaults.human();
        s += &format!(
            "at bandwidth {} x URLs (fetches per URL per day):\n  {:<16} {:>16} {:>16} {:>12} {:>12} {:>9}\n",
            num(nearest),
            "policy",
            "harmonic polite",
            "harmonic free",
            "fresh polite",
            "fresh free",
            "price",
        );
        for policy in &self.policies {
            let at = |polite: bool| {
                self.points.iter().find(|p| {
                    p.policy.name() == policy
                        && p.polite == polite
                        && p.bandwidth_fraction == nearest
                })
            };
            if let (Some(a), Some(b)) = (at(true), at(false)) {
                let price = match (own_cost(a), own_cost(b)) {
                    (Some(x), Some(y)) if y > 0.0 => format!("{:+.2}%", 100.0 * (x / y - 1.0)),
                    _ => "-".into(),
                };
                s += &format!(
                    "  {:<16} {:>16} {:>16} {:>12} {:>12} {:>9}\n",
                    policy,
                    cost(a.cost_harmonic),
                    cost(b.cost_harmonic),
                    percent(a.freshness_poisson),
                    percent(b.freshness_poisson),
                    price
                );
            }
        }
        s += &format!(
            "  (harmonic: the harmonic cost; fresh: share of time fresh with Poisson crawls; free: no\n   politeness caps; price: the policy's own cost polite over free - 1: binary cost for binary,\n   fixed-interval cost for binary-fixed, harmonic cost for the others)\nwrote {}/sweep.csv, sweep.parquet, sweep.svg, summary.json\n",
            out.display()
        );
        s
    }
}

/// The cost a policy is judged by: its own objective (J_b for the binary family, the paper's BLC
/// included), J_h for the harmonic family and the proportional baselines.
fn own_cost(p: &SweepPoint) -> Option<f64> {
    match p.policy {
        Objective::Binary | Objective::BinaryDiscrete | Objective::BinaryBlind => {
            Some(p.cost_binary)
        }
        Objective::BinaryFixed => Some(p.cost_fixed_interval),
        _ => p.cost_harmonic,
    }
}
