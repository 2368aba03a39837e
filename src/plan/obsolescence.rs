//! Obsolescence when fetch times are random (§1.3).
//!
//! One crawler fetches pages one after another; each fetch takes an independent time X
//! (constant, exponential, or resampled from measured durations). Page i changes as a
//! Poisson process of rate μ_i and is obsolete from its first change after a fetch until
//! its next fetch; r_i is the long-run fraction of time it is obsolete, and f_i the
//! fraction of fetches spent on it. Everything hinges on h_i = E[exp(−μ_i X)], the Laplace
//! transform of X at μ_i: the chance that page i does not change during one fetch.
//!
//! Time units are free but must agree: if fetch times are in seconds, change rates are
//! per second.

use super::validate::check_positive;
use anyhow::{bail, Result};
use rand::Rng;

/// The distribution of the time X one fetch takes (§1.3.1), with E[X] > 0.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchTime {
    /// Every fetch takes exactly this long.
    Constant {
        /// X, in time units.
        duration: f64,
    },
    /// Fetch times are exponential with this mean.
    Exponential {
        /// E[X], in time units.
        mean: f64,
    },
    /// Fetch times are drawn uniformly from measured durations (the empirical law).
    Empirical {
        /// Measured fetch durations, each >= 0, in time units.
        samples: Vec<f64>,
    },
}

impl FetchTime {
    /// Every fetch takes `duration` (> 0) time units.
    pub fn constant(duration: f64) -> Result<Self> {
        check_positive("--fetch-time", duration, "duration of one fetch")?;
        Ok(Self::Constant { duration })
    }

    /// Exponential fetch times with mean `mean` (> 0) time units.
    pub fn exponential(mean: f64) -> Result<Self> {
        check_positive("--fetch-time", mean, "mean duration of one fetch")?;
        Ok(Self::Exponential { mean })
    }

    /// The empirical law of measured fetch durations (finite, >= 0, not all zero).
    pub fn empirical(samples: Vec<f64>) -> Result<Self> {
        if samples.is_empty() {
            bail!("--fetch-time: the sample of fetch durations is empty; give at least one measured duration");
        }
        if let Some(bad) = samples.iter().find(|x| !x.is_finite() || **x < 0.0) {
            bail!("--fetch-time: fetch durations must be finite and >= 0, found {bad}");
        }
        if samples.iter().all(|&x| x == 0.0) {
            bail!("--fetch-time: every sampled duration is 0; the mean fetch time must be > 0");
        }
        Ok(Self::Empirical { samples })
    }

    /// E[X], the mean fetch time.
    pub fn mean(&self) -> f64 {
        match self {
            Self::Constant { duration } => *duration,
            Self::Exponential { mean } => *mean,
            Self::Empirical { samples } => samples.iter().sum::<f64>() / samples.len() as f64,
        }
    }

    /// ln h = ln E[exp(−μX)], exact even where h itself underflows (§1.3.2).
    pub fn ln_laplace(&self, change_rate: f64) -> f64 {
        match self {
            Self::Constant { duration } => -change_rate * duration,
            // E[e^{−μX}] = 1/(1 + μ·E[X]) for exponential X.
            Self::Exponential { mean } => -(change_rate * mean).ln_1p(),
            Self::Empirical { samples } => {
                // log-mean-exp, shifted by the largest exponent (the shortest fetch).
                let top = samples
                    .iter()
                    .map(|&x| -change_rate * x)
                    .fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = samples
                    .iter()
                    .map(|&x| (-change_rate * x - top).exp())
                    .sum();
                top + (sum / samples.len() as f64).ln()
            }
        }
    }

    /// h = E[exp(−μX)], the chance a page of change rate μ survives one fetch unchanged (§1.3.2).
    pub fn laplace(&self, change_rate: f64) -> f64 {
        self.ln_laplace(change_rate).exp()
    }

    /// One fetch time drawn from this law (for simulations).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            Self::Constant { duration } => *duration,
            Self::Exponential { mean } => -mean * (1.0 - rng.random::<f64>()).ln(),
            Self::Empirical { samples } => samples[rng.random_range(0..samples.len())],
        }
    }
}

fn check_frequency(frequency: f64) -> Result<()> {
    if !(frequency > 0.0 && frequency <= 1.0) {
        bail!("an access frequency must be in (0, 1] (the fraction of all fetches spent on the page), got {frequency}");
    }
    Ok(())
}

fn check_change_rates(change_rates: &[f64]) -> Result<()> {
    if change_rates.is_empty() {
        bail!("at least one page is needed (no change rates given)");
    }
    for &rate in change_rates {
        check_positive(
            "a page change rate",
            rate,
            "changes per time unit of the fetch times",
        )?;
    }
    Ok(())
}

/// Prop. 9: r_i >= 1 − f_i(1 − h_i^{1/f_i})/(μ_i E[X]) under any accessing policy, tight when fetches of i are evenly spaced.
pub fn obsolescence_lower_bound(
    fetch: &FetchTime,
    change_rate: f64,
    frequency: f64,
) -> Result<f64> {
    check_positive(
        "a page change rate",
        change_rate,
        "changes per time unit of the fetch times",
    )?;
    check_frequency(frequency)?;
    // The chapter's (E[X] − f/μ + (f/μ)h^{1/f})/E[X], with 1 − h^{1/f} = −expm1(ln h / f)
    // so that rarely changing pages (h near 1) keep their digits.
    let scale = frequency / (change_rate * fetch.mean());
    Ok(1.0 + scale * (fetch.ln_laplace(change_rate) / frequency).exp_m1())
}

/// Lemma 4: r_i = 1 − f_i(1 − h_i)/(μ_i E[X](1 − h_i + f_i h_i)) when every fetch picks page i independently with probability f_i.
pub fn randomized_obsolescence(fetch: &FetchTime, change_rate: f64, frequency: f64) -> Result<f64> {
    check_positive(
        "a page change rate",
        change_rate,
        "changes per time unit of the fetch times",
    )?;
    check_frequency(frequency)?;
    // The chapter writes (E[X] − f/μ + (f/μ)·f h/(1 − h + f h))/E[X]; 1 − f h/(1 − h + f h)
    // = (1 − h)/(1 − h + f h), which avoids the cancellation when h is near 1.
    let ln_h = fetch.ln_laplace(change_rate);
    let (h, one_minus_h) = (ln_h.exp(), -ln_h.exp_m1());
    let scale = frequency / (change_rate * fetch.mean());
    Ok(1.0 - scale * one_minus_h / (one_minus_h + frequency * h))
}

/// Eq. 1.30: the access frequencies minimising Σμ_i r_i's lower bound, f_i ∝ ln(1/h_i).
pub fn optimal_frequencies(fetch: &FetchTime, change_rates: &[f64]) -> Result<Vec<f64>> {
    check_change_rates(change_rates)?;
    // Proportional to μ_i only for constant fetch times; the more X varies, the more the
    // fast-changing pages are discounted (text after eq. 1.30).
    let weights: Vec<f64> = change_rates
        .iter()
        .map(|&rate| -fetch.ln_laplace(rate))
        .collect();
    let total: f64 = weights.iter().sum();
    Ok(weights.into_iter().map(|w| w / total).collect())
}

/// Eq. 1.26 (Prop. 10): C = c₀Σμ_i r_i >= c₀(μ − (1 − Π h_i)/E[X]) with μ = Σμ_i, for weights c_i = c₀μ_i.
pub fn cost_lower_bound(
    fetch: &FetchTime,
    change_rates: &[f64],
    weight_per_change_rate: f64,
) -> Result<f64> {
    check_change_rates(change_rates)?;
    check_positive(
        "the cost weight c₀",
        weight_per_change_rate,
        "cost per unit of μ_i r_i",
    )?;
    let total_rate: f64 = change_rates.iter().sum();
    let ln_product: f64 = change_rates
        .iter()
        .map(|&rate| fetch.ln_laplace(rate))
        .sum();
    Ok(weight_per_change_rate * (total_rate + ln_product.exp_m1() / fetch.mean()))
}

/// Eq. 1.31 (Prop. 11): the best randomized frequencies, f_i ∝ 1/h_i − 1.
pub fn randomized_optimal_frequencies(fetch: &FetchTime, change_rates: &[f64]) -> Result<Vec<f64>> {
    check_change_rates(change_rates)?;
    // 1/h − 1 = expm1(−ln h).
    let weights: Vec<f64> = change_rates
        .iter()
        .map(|&rate| (-fetch.ln_laplace(rate)).exp_m1())
        .collect();
    let total: f64 = weights.iter().sum();
    Ok(weights.into_iter().map(|w| w / total).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Simulates one crawler fetching pages in the order `next_page` chooses, with real
    /// Poisson change processes, and returns each page's obsolete fraction of time
    /// Σ Z_j / Σ X_j over its inter-access intervals after a warm-up (eq. 1.22).
    fn simulate(
        fetch: &FetchTime,
        change_rates: &[f64],
        fetches: usize,
        rng: &mut StdRng,
        mut next_page: impl FnMut(usize, &mut StdRng) -> usize,
    ) -> Vec<f64> {
        let pages = change_rates.len();
        let exp = |rate: f64, rng: &mut StdRng| -(1.0 - rng.random::<f64>()).ln() / rate;
        let mut last_fetch = vec![0.0; pages];
        let mut next_change: Vec<f64> = change_rates.iter().map(|&rate| exp(rate, rng)).collect();
        let (mut obsolete, mut observed) = (vec![0.0; pages], vec![0.0; pages]);
        let warm_up = fetches / 20;
        let mut now = 0.0;
        for n in 0..fetches {
            let page = next_page(n, rng);
            now += fetch.sample(rng);
            // The page was obsolete from its first change after the last fetch, if any.
            let stale = if next_change[page] < now {
                now - next_change[page]
            } else {
                0.0
            };
            if n >= warm_up {
                obsolete[page] += stale;
                observed[page] += now - last_fetch[page];
            }
            while next_change[page] <= now {
                next_change[page] += exp(change_rates[page], rng);
            }
            last_fetch[page] = now;
        }
        obsolete.iter().zip(&observed).map(|(z, x)| z / x).collect()
    }

    /// Mean and standard error over independent replications, seeded deterministically.
    fn replicate(
        runs: usize,
        seed: u64,
        mut one: impl FnMut(&mut StdRng) -> Vec<f64>,
    ) -> (Vec<f64>, Vec<f64>) {
        let results: Vec<Vec<f64>> = (0..runs)
            .map(|i| one(&mut StdRng::seed_from_u64(seed + i as u64)))
            .collect();
        let pages = results[0].len();
        let mean: Vec<f64> = (0..pages)
            .map(|p| results.iter().map(|r| r[p]).sum::<f64>() / runs as f64)
            .collect();
        let se = (0..pages)
            .map(|p| {
                let var = results
                    .iter()
                    .map(|r| (r[p] - mean[p]).powi(2))
                    .sum::<f64>()
                    / (runs - 1) as f64;
                (var / runs as f64).sqrt()
            })
            .collect();
        (mean, se)
    }

    /// |simulated − formula| within 4 standard errors (about 1 in 15,000 by chance; the
    /// seeds are fixed so the outcome is deterministic), and the test must have power.
    fn assert_within_ci(what: &str, simulated: &[f64], se: &[f64], expected: &[f64]) {
        for p in 0..expected.len() {
            assert!(
                se[p] < 0.005,
                "{what}: page {p} too noisy to test (se {})",
                se[p]
            );
            assert!(
                (simulated[p] - expected[p]).abs() <= 4.0 * se[p],
                "{what}: page {p} simulated {} ± {}, formula {}",
                simulated[p],
                4.0 * se[p],
                expected[p]
            );
        }
    }

    fn laws() -> Vec<(&'static str, FetchTime)> {
        vec![
            ("constant", FetchTime::constant(1.0).unwrap()),
            ("exponential", FetchTime::exponential(1.0).unwrap()),
            // A skewed measured sample: mostly fast fetches, a few slow ones (mean 1).
            (
                "empirical",
                FetchTime::empirical(vec![0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.5, 2.0, 3.0])
                    .unwrap(),
            ),
        ]
    }

    #[test]
    fn laplace_transform_matches_monte_carlo() {
        for (name, fetch) in laws() {
            let mut rng = StdRng::seed_from_u64(7);
            let n = 200_000;
            for rate in [0.1, 0.7, 2.0] {
                let draws: Vec<f64> = (0..n)
                    .map(|_| (-rate * fetch.sample(&mut rng)).exp())
                    .collect();
                let mean = draws.iter().sum::<f64>() / n as f64;
                let sd =
                    (draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
                let h = fetch.laplace(rate);
                assert!(
                    (mean - h).abs() <= 4.0 * sd / (n as f64).sqrt() + 1e-12,
                    "{name} μ={rate}: {mean} vs {h}"
                );
            }
            let mean: f64 = (0..n).map(|_| fetch.sample(&mut rng)).sum::<f64>() / n as f64;
            assert!((mean - fetch.mean()).abs() < 0.02, "{name}: E[X]");
        }
    }

    #[test]
    fn round_robin_attains_the_prop_9_bound() {
        // "If the frequencies are all equal, the policy that accesses pages 1..N cyclically
        // yields this optimal obsolescence rate."
        let rates = [0.05, 0.3, 1.2];
        for (name, fetch) in laws() {
            let (sim, se) = replicate(24, 100, |rng| {
                simulate(&fetch, &rates, 30_000, rng, |n, _| n % 3)
            });
            let bound: Vec<f64> = rates
                .iter()
                .map(|&m| obsolescence_lower_bound(&fetch, m, 1.0 / 3.0).unwrap())
                .collect();
            assert_within_ci(&format!("round robin, {name}"), &sim, &se, &bound);
        }
    }

    #[test]
    fn dyadic_schedule_attains_the_prop_9_bound() {
        // Frequencies 1/2, 1/4, 1/4 fetched as 0,1,0,2: evenly spaced, so Prop. 9 is tight.
        let rates = [0.5, 0.1, 0.8];
        let fetch = FetchTime::empirical(vec![0.1, 0.5, 0.9, 2.5]).unwrap();
        let (sim, se) = replicate(24, 200, |rng| {
            simulate(&fetch, &rates, 40_000, rng, |n, _| [0, 1, 0, 2][n % 4])
        });
        let bound: Vec<f64> = rates
            .iter()
            .zip([0.5, 0.25, 0.25])
            .map(|(&m, f)| obsolescence_lower_bound(&fetch, m, f).unwrap())
            .collect();
        assert_within_ci("dyadic", &sim, &se, &bound);
    }

    #[test]
    fn randomized_accessing_matches_lemma_4_and_stays_above_prop_9() {
        let rates = [0.05, 0.3, 1.2];
        let freqs = [0.2, 0.3, 0.5];
        for (name, fetch) in laws() {
            let pick = |_: usize, rng: &mut StdRng| {
                let u: f64 = rng.random();
                if u < freqs[0] {
                    0
                } else if u < freqs[0] + freqs[1] {
                    1
                } else {
                    2
                }
            };
            let (sim, se) = replicate(24, 300, |rng| simulate(&fetch, &rates, 30_000, rng, pick));
            let lemma: Vec<f64> = rates
                .iter()
                .zip(freqs)
                .map(|(&m, f)| randomized_obsolescence(&fetch, m, f).unwrap())
                .collect();
            assert_within_ci(&format!("randomized, {name}"), &sim, &se, &lemma);
            // Power: for page 1 the random gaps cost visibly more than even spacing does.
            let bound = obsolescence_lower_bound(&fetch, rates[1], freqs[1]).unwrap();
            assert!(
                sim[1] - bound > 8.0 * se[1],
                "{name}: {} vs bound {bound}",
                sim[1]
            );
        }
    }

    #[test]
    fn eq_1_26_bounds_simulated_costs_and_is_attained_by_eq_1_30_in_the_relaxation() {
        let rates = [0.05, 0.3, 1.2];
        for (name, fetch) in laws() {
            let bound = cost_lower_bound(&fetch, &rates, 1.0).unwrap();
            let x = optimal_frequencies(&fetch, &rates).unwrap();
            // At eq. 1.30's frequencies the per-page Prop. 9 bounds add up to eq. 1.26 exactly.
            let relaxed: f64 = rates
                .iter()
                .zip(&x)
                .map(|(&m, &f)| m * obsolescence_lower_bound(&fetch, m, f).unwrap())
                .sum();
            assert!(
                (relaxed - bound).abs() < 1e-12,
                "{name}: {relaxed} vs {bound}"
            );
            // Real schedules cost at least the bound: randomized at eq. 1.30's frequencies,
            // and round robin.
            let cum = [x[0], x[0] + x[1]];
            let pick = |_: usize, rng: &mut StdRng| {
                let u: f64 = rng.random();
                usize::from(u >= cum[0]) + usize::from(u >= cum[1])
            };
            for (schedule, seed) in [("randomized", 400u64), ("round robin", 500)] {
                let (sim, se) = replicate(16, seed, |rng| {
                    if schedule == "randomized" {
                        simulate(&fetch, &rates, 30_000, rng, pick)
                    } else {
                        simulate(&fetch, &rates, 30_000, rng, |n, _| n % 3)
                    }
                });
                let cost: f64 = rates.iter().zip(&sim).map(|(m, r)| m * r).sum();
                let cost_se: f64 = rates
                    .iter()
                    .zip(&se)
                    .map(|(m, s)| (m * s).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(
                    cost >= bound - 4.0 * cost_se,
                    "{name} {schedule}: {cost} < bound {bound}"
                );
            }
        }
    }

    #[test]
    fn constant_fetch_times_give_frequencies_proportional_to_change_rates() {
        let rates = [0.1, 0.2, 0.7];
        let x = optimal_frequencies(&FetchTime::constant(3.0).unwrap(), &rates).unwrap();
        for (xi, mi) in x.iter().zip(rates) {
            assert!((xi - mi).abs() < 1e-12);
        }
        // Random fetch times shift frequency towards slow-changing pages (text after 1.30).
        let y = optimal_frequencies(&FetchTime::exponential(3.0).unwrap(), &rates).unwrap();
        assert!(y[0] > x[0] && y[2] < x[2]);
    }

    #[test]
    fn errors_are_explained() {
        assert!(FetchTime::constant(0.0)
            .unwrap_err()
            .to_string()
            .contains("--fetch-time"));
        assert!(FetchTime::exponential(f64::NAN).is_err());
        assert!(FetchTime::empirical(vec![])
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(FetchTime::empirical(vec![1.0, -1.0]).is_err());
        assert!(FetchTime::empirical(vec![0.0, 0.0]).is_err());
        let fetch = FetchTime::exponential(1.0).unwrap();
        assert!(obsolescence_lower_bound(&fetch, 0.1, 0.0).is_err());
        assert!(randomized_obsolescence(&fetch, -0.1, 0.5).is_err());
        assert!(optimal_frequencies(&fetch, &[]).is_err());
        assert!(cost_lower_bound(&fetch, &[0.1, f64::INFINITY], 1.0).is_err());
    }

    proptest! {
        #[test]
        fn randomized_never_beats_the_bound_and_both_are_fractions(
            rate in 0.001f64..10.0, f in 0.001f64..=1.0, mean in 0.01f64..10.0,
        ) {
            for fetch in [FetchTime::constant(mean).unwrap(), FetchTime::exponential(mean).unwrap()] {
                let bound = obsolescence_lower_bound(&fetch, rate, f).unwrap();
                let random = randomized_obsolescence(&fetch, rate, f).unwrap();
                prop_assert!((-1e-12..=1.0).contains(&bound));
                prop_assert!(random <= 1.0 + 1e-12);
                prop_assert!(random >= bound - 1e-12, "{} < {}", random, bound);
            }
        }

        #[test]
        fn eq_1_30_minimises_the_relaxed_cost(
            rates in proptest::collection::vec(0.01f64..3.0, 2..6), shift in 0.01f64..0.2, mean in 0.1f64..3.0,
        ) {
            // Moving any mass between two pages away from eq. 1.30 cannot lower eq. 1.27.
            let fetch = FetchTime::exponential(mean).unwrap();
            let relaxed = |x: &[f64]| -> f64 {
                rates.iter().zip(x).map(|(&m, &f)| m * obsolescence_lower_bound(&fetch, m, f).unwrap()).sum()
            };
            let best = optimal_frequencies(&fetch, &rates).unwrap();
            let mut moved = best.clone();
            let delta = shift * moved[0].min(1.0 - moved[1]);
            moved[0] -= delta;
            moved[1] += delta;
            prop_assert!(relaxed(&moved) >= relaxed(&best) - 1e-12);
            let bound = cost_lower_bound(&fetch, &rates, 1.0).unwrap();
            prop_assert!((relaxed(&best) - bound).abs() <= 1e-9 * bound.max(1e-9));
        }

        #[test]
        fn eq_1_31_frequencies_are_optimal_for_randomized_accessing(
            rates in proptest::collection::vec(0.01f64..3.0, 2..6), shift in 0.01f64..0.2,
        ) {
            let fetch = FetchTime::exponential(1.0).unwrap();
            let cost = |x: &[f64]| -> f64 {
                rates.iter().zip(x).map(|(&m, &f)| m * randomized_obsolescence(&fetch, m, f).unwrap()).sum()
            };
            let best = randomized_optimal_frequencies(&fetch, &rates).unwrap();
            let mut moved = best.clone();
            let delta = shift * moved[0].min(1.0 - moved[1]);
            moved[0] -= delta;
            moved[1] += delta;
            prop_assert!(cost(&moved) >= cost(&best) - 1e-12);
        }
    }
}
