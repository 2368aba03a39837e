//! What `sweep` reports: `summary.json` and a table a person reads.

use serde::Serialize;

use revisit_core::objective::Objective;
use revisit_core::solve::sweep::SweepPoint;

/// What `sweep` reports (summary.json).
#[derive(Clone, Debug, Serialize)]
pub struct SweepSummary {
    pub version: String,
    pub urls: u64,
    pub rows_in: u64,
    pub rows_rejected: u64,
    pub policies: Vec<String>,
    pub bandwidth_fractions: Vec<f64>,
    /// The points (in sweep.csv and sweep.parquet, not in summary.json).
    #[serde(skip)]
    pub points: Vec<SweepPoint>,
    /// Rounds of all points' multiplier searches.
    pub rounds: u64,
    pub workers: usize,
    pub processes: usize,
    /// Seconds: loading (read, exchange, arrange), the sweep's solves, writing, total.
    pub seconds_load: f64,
    pub seconds_sweep: f64,
    pub seconds_total: f64,
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
            "revisit sweep: {} URLs, {} policies x {} bandwidths x polite/no caps in {:.2} s (load {:.2} s, {} rounds)\n\
             at bandwidth {nearest:.4} x URLs:\n  {:<16} {:>14} {:>14} {:>10} {:>10} {:>9}\n",
            self.urls,
            self.policies.len(),
            self.bandwidth_fractions.len(),
            self.seconds_total,
            self.seconds_load,
            self.rounds,
            "policy",
            "J_h polite",
            "J_h no caps",
            "fresh pol.",
            "fresh free",
            "price %",
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
                let show = |c: Option<f64>| c.map(|c| format!("{c:.6e}")).unwrap_or("inf".into());
                let price = match (own_cost(a), own_cost(b)) {
                    (Some(x), Some(y)) if y > 0.0 => format!("{:+.3}", 100.0 * (x / y - 1.0)),
                    _ => "-".into(),
                };
                s += &format!(
                    "  {:<16} {:>14} {:>14} {:>10.6} {:>10.6} {:>9}\n",
                    policy,
                    show(a.cost_harmonic),
                    show(b.cost_harmonic),
                    a.freshness_poisson,
                    b.freshness_poisson,
                    price
                );
            }
        }
        s += &format!(
            "  (price % = the policy's own cost with politeness / without - 1: J_b for binary, the\n   evenly spaced staleness for binary-fixed, J_h for the others)\nwrote {}/sweep.csv, sweep.parquet, sweep.svg, summary.json\n",
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
