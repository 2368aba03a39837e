//! The plan of `revisit sweep`.

use std::path::PathBuf;

use revisit_core::objective::Objective;

use super::{Cluster, Options, PagesPlan};

/// The policies a sweep compares unless told otherwise (all but binary-discrete, whose slot
/// changes with the bandwidth, and binary-blind, a baseline for NeurIPS'19's experiment).
pub const DEFAULT_POLICIES: [Objective; 7] = [
    Objective::Harmonic,
    Objective::Binary,
    Objective::BinaryFixed,
    Objective::HarmonicApprox,
    Objective::Uniform,
    Objective::ChangeRate,
    Objective::Importance,
];

/// [`DEFAULT_POLICIES`] as `--policies` takes them.
pub const DEFAULT_POLICIES_TEXT: &str =
    "harmonic,binary,binary-fixed,harmonic-approx,uniform,change-rate,importance";

/// What `sweep` does.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepJob {
    pub pages: PagesPlan,
    pub cluster: Cluster,
    pub policies: Vec<Objective>,
    /// Bandwidths as multiples of the URL count, increasing ([`fractions`]).
    pub fractions: Vec<f64>,
    /// BLC-eps's eps for every policy (0: no floors).
    pub floor_eps: f64,
    pub out: PathBuf,
    pub quiet: bool,
    /// Every option as resolved, for provenance.
    pub options: Options,
}

/// `points` bandwidths from `from` to `to` (multiples of the URL count), evenly spaced in log scale,
/// the ends exact.
pub fn fractions(from: f64, to: f64, points: usize) -> Vec<f64> {
    if points == 1 {
        return vec![from];
    }
    let step = (to / from).ln() / (points - 1) as f64;
    (0..points)
        .map(|k| match k {
            0 => from,
            k if k == points - 1 => to,
            k => from * (step * k as f64).exp(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policies_are_written_as_the_option_takes_them() {
        let names: Vec<&str> = DEFAULT_POLICIES.iter().map(|o| o.name()).collect();
        assert_eq!(DEFAULT_POLICIES_TEXT, names.join(","));
    }

    #[test]
    fn fractions_are_log_spaced_with_exact_ends() {
        let f = fractions(0.01, 1.0, 3);
        assert_eq!(f[0], 0.01);
        assert!((f[1] - 0.1).abs() < 1e-15);
        assert_eq!(f[2], 1.0);
        assert_eq!(fractions(0.2, 0.2, 1), vec![0.2]);
    }
}
