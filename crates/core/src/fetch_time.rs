//! Obsolescence when fetch times are random (Liu & Nain §1.3).
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

use anyhow::{bail, Result};
use rand::Rng;

/// Largest μ·max X for which an empirical law's ln h is taken as ln(1 + E[expm1(−μX)]): below it
/// nothing can underflow, above it the shifted log-mean-exp is used.
const EXPM1_FORM_LIMIT: f64 = 1.0;

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
        check_positive("a fetch duration", duration, "time units")?;
        Ok(Self::Constant { duration })
    }

    /// Exponential fetch times with mean `mean` (> 0) time units.
    pub fn exponential(mean: f64) -> Result<Self> {
        check_positive("the mean fetch duration", mean, "time units")?;
        Ok(Self::Exponential { mean })
    }

    /// The empirical law of measured fetch durations (finite, >= 0, not all zero).
    pub fn empirical(samples: Vec<f64>) -> Result<Self> {
        if samples.is_empty() {
            bail!("the sample of fetch durations is empty; give at least one measured duration");
        }
        if let Some(bad) = samples.iter().find(|x| !x.is_finite() || **x < 0.0) {
            bail!("fetch durations must be finite and >= 0, found {bad}");
        }
        if samples.iter().all(|&x| x == 0.0) {
            bail!("every sampled duration is 0; the mean fetch time must be > 0");
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
                let longest = samples.iter().fold(0.0, |a: f64, &x| a.max(x));
                if change_rate * longest <= EXPM1_FORM_LIMIT {
                    // ln(1 + E[expm1(−μX)]): keeps its digits for slowly changing pages, where
                    // h is within 1e-9 of 1 and ln(mean of exps) would lose most of them.
                    let mean = samples
                        .iter()
                        .map(|&x| (-change_rate * x).exp_m1())
                        .sum::<f64>()
                        / samples.len() as f64;
                    return mean.ln_1p();
                }
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
    Ok(bound_from_ln_h(
        fetch.ln_laplace(change_rate),
        change_rate * fetch.mean(),
        frequency,
    ))
}

/// Prop. 9's bound from ln h and μE[X] (frequency in (0, 1]).
fn bound_from_ln_h(ln_h: f64, rate_times_mean: f64, frequency: f64) -> f64 {
    // The chapter's (E[X] − f/μ + (f/μ)h^{1/f})/E[X], with 1 − h^{1/f} = −expm1(ln h / f)
    // so that rarely changing pages (h near 1) keep their digits.
    1.0 + frequency / rate_times_mean * (ln_h / frequency).exp_m1()
}

/// Lemma 4: r_i = 1 − f_i(1 − h_i)/(μ_i E[X](1 − h_i + f_i h_i)) when every fetch picks page i independently with probability f_i.
pub fn randomized_obsolescence(fetch: &FetchTime, change_rate: f64, frequency: f64) -> Result<f64> {
    check_positive(
        "a page change rate",
        change_rate,
        "changes per time unit of the fetch times",
    )?;
    check_frequency(frequency)?;
    Ok(randomized_from_ln_h(
        fetch.ln_laplace(change_rate),
        change_rate * fetch.mean(),
        frequency,
    ))
}

/// Lemma 4's rate from ln h and μE[X] (frequency in (0, 1]).
fn randomized_from_ln_h(ln_h: f64, rate_times_mean: f64, frequency: f64) -> f64 {
    // The chapter writes (E[X] − f/μ + (f/μ)·f h/(1 − h + f h))/E[X]; 1 − f h/(1 − h + f h)
    // = (1 − h)/(1 − h + f h), which avoids the cancellation when h is near 1.
    let (h, one_minus_h) = (ln_h.exp(), -ln_h.exp_m1());
    1.0 - frequency / rate_times_mean * one_minus_h / (one_minus_h + frequency * h)
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
    Ok(weight_per_change_rate * eq_1_26(total_rate, ln_product, fetch.mean()))
}

/// Eq. 1.26's μ − (1 − Π h_i)/E[X], from μ = Σμ_i and ln Π h_i = Σ ln h_i.
fn eq_1_26(total_rate: f64, ln_product: f64, mean_fetch: f64) -> f64 {
    // 1 − Π h = −expm1(Σ ln h): exact for a product of many h_i near 1.
    total_rate + ln_product.exp_m1() / mean_fetch
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

/// One page's terms of the page-set figures ([`SetFigures`]); summed over pages (in any order,
/// by any summation) and handed to [`set_figures`]. Pages that never change (μ = 0) are never
/// obsolete and contribute nothing but a URL to the per-URL mean.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PageTerms {
    /// 1 if the page changes (μ > 0), else 0.
    pub changing: f64,
    /// 1 if the page changes but gets no fetches (f = 0: obsolete all the time), else 0.
    pub never_fetched: f64,
    /// μ_i.
    pub change_rate: f64,
    /// r_i under randomized accessing at the given f_i (Lemma 4; 1 when f_i = 0).
    pub randomized: f64,
    /// μ_i r_i, Lemma 4.
    pub randomized_weighted: f64,
    /// Prop. 9's bound on r_i at the given f_i (1 when f_i = 0).
    pub lower_bound: f64,
    /// μ_i times Prop. 9's bound.
    pub lower_bound_weighted: f64,
    /// ln(1/h_i): eq. 1.30's weight.
    pub ln_inv_h: f64,
    /// ln(1/h_i)/μ_i: eq. 1.30's optimal bound per URL needs Σ of it.
    pub ln_inv_h_per_rate: f64,
    /// 1/h_i − 1: eq. 1.31's weight.
    pub inv_h_minus_one: f64,
    /// (1/h_i − 1)/μ_i: eq. 1.31's randomized optimum per URL needs Σ of it.
    pub inv_h_minus_one_per_rate: f64,
}

impl PageTerms {
    /// Number of terms ([`PageTerms::to_array`]).
    pub const LEN: usize = 11;

    /// Page i's terms: change rate μ_i >= 0 and access frequency f_i in [0, 1] (the share of all
    /// fetches spent on it), in the time unit of `fetch`.
    pub fn of(fetch: &FetchTime, change_rate: f64, frequency: f64) -> Result<Self> {
        if !(change_rate.is_finite() && change_rate >= 0.0) {
            bail!("a page change rate must be finite and >= 0, got {change_rate}");
        }
        if !(0.0..=1.0).contains(&frequency) {
            bail!("an access frequency must be in [0, 1] (the fraction of all fetches spent on the page), got {frequency}");
        }
        if change_rate == 0.0 {
            return Ok(Self::default());
        }
        let ln_h = fetch.ln_laplace(change_rate);
        let rate_times_mean = change_rate * fetch.mean();
        // A page that is never fetched stays obsolete from its first change on: r = 1.
        let (randomized, lower_bound) = if frequency > 0.0 {
            (
                randomized_from_ln_h(ln_h, rate_times_mean, frequency),
                bound_from_ln_h(ln_h, rate_times_mean, frequency),
            )
        } else {
            (1.0, 1.0)
        };
        let inv_h_minus_one = (-ln_h).exp_m1();
        Ok(Self {
            changing: 1.0,
            never_fetched: if frequency > 0.0 { 0.0 } else { 1.0 },
            change_rate,
            randomized,
            randomized_weighted: change_rate * randomized,
            lower_bound,
            lower_bound_weighted: change_rate * lower_bound,
            ln_inv_h: -ln_h,
            ln_inv_h_per_rate: -ln_h / change_rate,
            inv_h_minus_one,
            inv_h_minus_one_per_rate: inv_h_minus_one / change_rate,
        })
    }

    /// Adds another page's (or page group's) terms.
    pub fn add(&mut self, o: &Self) {
        let mut a = self.to_array();
        for (x, y) in a.iter_mut().zip(o.to_array()) {
            *x += y;
        }
        *self = Self::from_array(a);
    }

    /// The terms in a fixed order (for summing them with another accumulator).
    pub fn to_array(&self) -> [f64; Self::LEN] {
        [
            self.changing,
            self.never_fetched,
            self.change_rate,
            self.randomized,
            self.randomized_weighted,
            self.lower_bound,
            self.lower_bound_weighted,
            self.ln_inv_h,
            self.ln_inv_h_per_rate,
            self.inv_h_minus_one,
            self.inv_h_minus_one_per_rate,
        ]
    }

    /// The inverse of [`PageTerms::to_array`].
    pub fn from_array(a: [f64; Self::LEN]) -> Self {
        Self {
            changing: a[0],
            never_fetched: a[1],
            change_rate: a[2],
            randomized: a[3],
            randomized_weighted: a[4],
            lower_bound: a[5],
            lower_bound_weighted: a[6],
            ln_inv_h: a[7],
            ln_inv_h_per_rate: a[8],
            inv_h_minus_one: a[9],
            inv_h_minus_one_per_rate: a[10],
        }
    }
}

/// An obsolescence figure of a page set, averaged two ways (None: no page changes).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Obsolescence {
    /// Mean of r_i over all URLs (pages that never change count as never obsolete).
    pub per_url: Option<f64>,
    /// Σ μ_i r_i / Σ μ_i: the chapter's cost C with c_i = c₀μ_i (Prop. 10), per unit of c₀Σμ_i.
    pub change_weighted: Option<f64>,
}

/// The §1.3 figures of a page set crawled by one crawler fetching back to back.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SetFigures {
    /// Randomized accessing at the given frequencies (Lemma 4).
    pub randomized: Obsolescence,
    /// Prop. 9's bound at the given frequencies: no accessing policy does better; evenly spaced
    /// fetches of every page attain it.
    pub lower_bound: Obsolescence,
    /// Prop. 9's bound at the frequencies of eq. 1.30 (f_i ∝ ln(1/h_i)), the minimum of the bound
    /// over all frequencies.
    pub optimal_bound: Obsolescence,
    /// Eq. 1.26 divided by μ = Σμ_i: (μ − (1 − Π h_i)/E[X])/μ, a floor on the change-weighted
    /// obsolescence of any policy; equals `optimal_bound.change_weighted` (Prop. 10's proof).
    pub optimal_bound_eq126: Option<f64>,
    /// Randomized accessing at the best frequencies for it, f_i ∝ 1/h_i − 1 (eq. 1.31).
    pub randomized_optimal: Obsolescence,
}

/// The page-set figures from the sums of every page's [`PageTerms`] over `urls` URLs.
pub fn set_figures(fetch: &FetchTime, sums: &PageTerms, urls: u64) -> SetFigures {
    let mean = fetch.mean();
    let changing = sums.changing;
    let total_rate = sums.change_rate;
    let some = |x: f64| (changing > 0.0 && x.is_finite()).then_some(x);
    let per_url = |obsolete_sum: f64| some(obsolete_sum / urls as f64);
    let weighted = |weighted_sum: f64| some(weighted_sum / total_rate);
    // Eq. 1.30: at x_i = ln(1/h_i)/L (L = Σ ln(1/h_j)) every h_i^{1/x_i} is e^{−L}, so Prop. 9
    // gives r_i = 1 − (ln(1/h_i)/μ_i)(1 − e^{−L})/(L E[X]).
    let big_l = sums.ln_inv_h;
    let one_minus_product = -(-big_l).exp_m1();
    let optimal_per_url = changing - sums.ln_inv_h_per_rate * one_minus_product / (big_l * mean);
    let optimal_weighted = total_rate - one_minus_product / mean;
    // Eq. 1.31: at f_i = g_i/G (g_i = 1/h_i − 1, G = Σ g_j) Lemma 4 gives r_i = 1 − g_i/((G + 1)μ_i E[X]).
    let big_g = sums.inv_h_minus_one;
    let best_per_url = changing - sums.inv_h_minus_one_per_rate / ((big_g + 1.0) * mean);
    // G/(G + 1) written as 1/(1 + 1/G) stays finite when some h_i underflows (G = inf).
    let best_weighted = total_rate - 1.0 / ((1.0 + 1.0 / big_g) * mean);
    SetFigures {
        randomized: Obsolescence {
            per_url: per_url(sums.randomized),
            change_weighted: weighted(sums.randomized_weighted),
        },
        lower_bound: Obsolescence {
            per_url: per_url(sums.lower_bound),
            change_weighted: weighted(sums.lower_bound_weighted),
        },
        optimal_bound: Obsolescence {
            per_url: per_url(optimal_per_url),
            change_weighted: weighted(optimal_weighted),
        },
        optimal_bound_eq126: weighted(eq_1_26(total_rate, -big_l, mean)),
        randomized_optimal: Obsolescence {
            per_url: per_url(best_per_url),
            change_weighted: weighted(best_weighted),
        },
    }
}

/// Exact sums of every [`PageTerms`] field over a table's pages, one accumulator per field, so that
/// workers' partials combine to the same totals however the pages are sharded.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TableTerms {
    terms: [crate::exact_sum::ExactSum; PageTerms::LEN],
    /// The first page whose terms could not be computed (an invalid change rate or share).
    pub error: Option<String>,
}

impl TableTerms {
    /// Adds one host's pages, their terms summed in page order: rates and change rates per day,
    /// `total_rate` the table's sum of rates over every worker. The mapping from a table to the
    /// model of one crawler fetching back to back: page i gets the share f_i = rate_i / total of
    /// the fetches, and changes at μ_i = change_rate_i / 86400 per second (fetch times in seconds).
    pub fn add_host(
        &mut self,
        fetch: &FetchTime,
        change_rates: &[f64],
        rates: &[f64],
        total_rate: f64,
    ) {
        let mut host = PageTerms::default();
        for (&lambda, &rate) in change_rates.iter().zip(rates) {
            let share = if total_rate > 0.0 {
                (rate / total_rate).min(1.0)
            } else {
                0.0
            };
            let per_second = lambda / crate::units::SECONDS_PER_DAY;
            match PageTerms::of(fetch, per_second, share) {
                Ok(terms) => host.add(&terms),
                Err(e) => {
                    self.error.get_or_insert(format!("{e:#}"));
                }
            }
        }
        for (sum, x) in self.terms.iter_mut().zip(host.to_array()) {
            sum.add(x);
        }
    }

    /// The totals.
    pub fn totals(&self) -> PageTerms {
        PageTerms::from_array(std::array::from_fn(|k| self.terms[k].value()))
    }
}

impl crate::reduce::Combine for TableTerms {
    fn combine(&mut self, o: Self) {
        self.error = self.error.take().or(o.error);
        for (a, b) in self.terms.iter_mut().zip(&o.terms) {
            a.merge(b);
        }
    }
}

/// Fails unless `value` is finite and > 0 (NaN included: it would slip through `value <= 0.0`);
/// the error names the quantity and its unit.
fn check_positive(quantity: &str, value: f64, unit: &str) -> Result<()> {
    if !value.is_finite() || value <= 0.0 {
        bail!("{quantity} must be a finite number > 0 ({unit}), got {value}");
    }
    Ok(())
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
    fn empirical_laplace_keeps_its_digits_for_slow_pages() {
        // ln E[e^{−μX}] = −μE[X] + μ²Var(X)/2 − O(μ³): for μX ~ 1e-8 the series is exact to
        // 1e-16 relative, a check the plain log-mean-exp fails by orders of magnitude.
        let samples = vec![0.2, 0.3, 0.5, 1.0, 3.0];
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let fetch = FetchTime::empirical(samples).unwrap();
        for rate in [1e-8, 1e-7, 1e-6] {
            let series = -rate * mean + rate * rate * var / 2.0;
            let got = fetch.ln_laplace(rate);
            assert!(
                ((got - series) / series).abs() < 1e-9,
                "μ={rate}: {got} vs {series}"
            );
        }
    }

    #[test]
    fn set_figures_add_up_the_per_page_formulas() {
        // Pages as (μ, f): one never changes, one is never fetched.
        let pages = [(0.05, 0.2), (0.3, 0.3), (1.2, 0.5), (0.0, 0.0), (0.7, 0.0)];
        for (name, fetch) in laws() {
            let mut sums = PageTerms::default();
            for &(m, f) in &pages {
                sums.add(&PageTerms::of(&fetch, m, f).unwrap());
            }
            let got = set_figures(&fetch, &sums, pages.len() as u64);
            let n = pages.len() as f64;
            let changing: Vec<f64> = pages.iter().map(|p| p.0).filter(|&m| m > 0.0).collect();
            let total: f64 = changing.iter().sum();
            let r = |m: f64, f: f64, lemma: bool| match (m > 0.0, f > 0.0) {
                (false, _) => 0.0,
                (true, false) => 1.0,
                (true, true) if lemma => randomized_obsolescence(&fetch, m, f).unwrap(),
                _ => obsolescence_lower_bound(&fetch, m, f).unwrap(),
            };
            let close = |a: Option<f64>, b: f64, what: &str| {
                let a = a.unwrap();
                assert!((a - b).abs() < 1e-12, "{name} {what}: {a} vs {b}");
            };
            for (lemma, fig) in [(true, got.randomized), (false, got.lower_bound)] {
                let per_url: f64 = pages.iter().map(|&(m, f)| r(m, f, lemma)).sum::<f64>() / n;
                let weighted: f64 =
                    pages.iter().map(|&(m, f)| m * r(m, f, lemma)).sum::<f64>() / total;
                close(fig.per_url, per_url, "per URL");
                close(fig.change_weighted, weighted, "weighted");
            }
            let x = optimal_frequencies(&fetch, &changing).unwrap();
            let y = randomized_optimal_frequencies(&fetch, &changing).unwrap();
            let (mut opt, mut opt_w, mut best, mut best_w) = (0.0, 0.0, 0.0, 0.0);
            for (k, &m) in changing.iter().enumerate() {
                let b = obsolescence_lower_bound(&fetch, m, x[k]).unwrap();
                let q = randomized_obsolescence(&fetch, m, y[k]).unwrap();
                (opt, opt_w, best, best_w) = (opt + b, opt_w + m * b, best + q, best_w + m * q);
            }
            close(got.optimal_bound.per_url, opt / n, "eq. 1.30 per URL");
            close(got.optimal_bound.change_weighted, opt_w / total, "eq. 1.30");
            let eq126 = cost_lower_bound(&fetch, &changing, 1.0).unwrap() / total;
            close(got.optimal_bound_eq126, eq126, "eq. 1.26");
            close(got.randomized_optimal.per_url, best / n, "eq. 1.31 per URL");
            close(
                got.randomized_optimal.change_weighted,
                best_w / total,
                "eq. 1.31",
            );
        }
        // No page changes: nothing to average.
        let fetch = FetchTime::constant(1.0).unwrap();
        let none = set_figures(&fetch, &PageTerms::of(&fetch, 0.0, 1.0).unwrap(), 1);
        assert_eq!(none.randomized.per_url, None);
        assert!(PageTerms::of(&fetch, 0.1, 1.5).is_err());
    }

    #[test]
    fn errors_are_explained() {
        assert!(FetchTime::constant(0.0)
            .unwrap_err()
            .to_string()
            .contains("a fetch duration must be a finite number > 0"));
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
