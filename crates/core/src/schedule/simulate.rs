//! Monte Carlo check of [`super::evaluate`]: Poisson changes drawn against a cyclic timetable.
//!
//! Each horizon is an independent sample: every interval starts fresh at a visit and changes are
//! memoryless, so the wrap-around interval of one night is simulated like any other.

use rand::Rng;
use rand_distr::{Distribution, Exp};

use super::timetable::cyclic_gaps;
use crate::units::{Seconds, SECONDS_PER_DAY};

/// A sample mean with its standard error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Mean over the samples.
    pub mean: f64,
    /// Standard error of the mean (sample standard deviation / sqrt(n)).
    pub std_err: f64,
}

impl Estimate {
    fn of(sum: f64, sum_sq: f64, n: u64) -> Self {
        let n = n as f64;
        let mean = sum / n;
        let var = ((sum_sq - n * mean * mean) / (n - 1.0)).max(0.0);
        Estimate {
            mean,
            std_err: (var / n).sqrt(),
        }
    }

    /// Whether `value` lies within `z` standard errors of the mean.
    pub fn covers(&self, value: f64, z: f64) -> bool {
        (value - self.mean).abs() <= z * self.std_err
    }
}

/// What the simulation measures per horizon, averaged over horizons.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Simulated {
    /// Share of time the copy was stale.
    pub stale: Estimate,
    /// Time-average harmonic penalty H(changes since the last visit).
    pub harmonic: Estimate,
    /// Changes no visit observed (all but the last of each interval with changes).
    pub missed_changes: Estimate,
}

/// Simulates `horizons` nights of a page visited at `at_s` (sorted, in [0, T), at least one visit)
/// whose changes are Poisson with `change_rate` per day.
pub fn simulate_page(
    at_s: &[f64],
    change_rate: f64,
    horizon: Seconds,
    horizons: u64,
    rng: &mut impl Rng,
) -> Option<Simulated> {
    let lambda = change_rate / SECONDS_PER_DAY;
    if at_s.is_empty() || horizons < 2 || lambda.is_nan() || lambda <= 0.0 {
        return None;
    }
    let exp = Exp::new(lambda).ok()?;
    let gaps: Vec<f64> = cyclic_gaps(at_s, horizon).collect();
    let mut acc = [[0.0f64; 2]; 3];
    for _ in 0..horizons {
        let (mut stale, mut harmonic, mut missed) = (0.0, 0.0, 0.0);
        for &tau in &gaps {
            // change times in (0, tau): stale from the first; H(n) between the n-th and (n+1)-th
            let mut t = exp.sample(rng);
            let mut n = 0u64;
            let mut h = 0.0;
            while t < tau {
                if n == 0 {
                    stale += tau - t;
                }
                n += 1;
                h += 1.0 / n as f64;
                let next = t + exp.sample(rng);
                harmonic += h * (next.min(tau) - t);
                t = next;
            }
            if n > 0 {
                missed += (n - 1) as f64;
            }
        }
        for (a, v) in acc
            .iter_mut()
            .zip([stale / horizon.0, harmonic / horizon.0, missed])
        {
            a[0] += v;
            a[1] += v * v;
        }
    }
    let e = |a: [f64; 2]| Estimate::of(a[0], a[1], horizons);
    Some(Simulated {
        stale: e(acc[0]),
        harmonic: e(acc[1]),
        missed_changes: e(acc[2]),
    })
}
