//! The static setting of §1.2.1: N always-on crawlers feed one M/M/1/K indexer.
//!
//! Each crawler hands pages to the indexer as a Poisson stream of rate λ, the indexer
//! serves one page at a time with exponential indexing times of rate μ, and it holds at
//! most K pages, the one being indexed included; a page that finds the buffer full is
//! lost. With load ρ = Nλ/μ the cost is γ·P(indexer idle) + loss rate (eqs. 1.1–1.4):
//! γ prices an idle indexer in lost pages per unit time.

use super::error::{check_positive, ModelError, Quantity};

/// Past this many crawlers the search for the optimum is refused: the inputs are almost surely in the wrong units.
const MAX_CRAWLERS: f64 = 1e12;

/// The indexer model of §1.2 (λ per crawler, μ, K, γ); build it with [`QueueModel::new`], which validates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueModel {
    arrival_rate_per_crawler: f64,
    index_rate: f64,
    buffer: usize,
    gamma: f64,
}

/// What N always-on crawlers give in the long run: eq. 1.3's end probabilities and eq. 1.4's cost.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StaticPerformance {
    /// N, the number of always-on crawlers.
    pub crawlers: usize,
    /// ρ = Nλ/μ, offered pages per indexing capacity (dimensionless).
    pub load: f64,
    /// P(X = 0): fraction of time the indexer has nothing to index.
    pub starvation_probability: f64,
    /// ρμ·P(X = K): pages lost per unit time because the buffer was full.
    pub loss_rate: f64,
    /// C(ρ, γ, K) = γ·starvation + loss rate (eq. 1.4), in lost pages per unit time.
    pub cost: f64,
}

impl QueueModel {
    /// Validates λ, μ, K, γ of §1.2.1; errors name the quantity to fix.
    pub fn new(
        arrival_rate_per_crawler: f64,
        index_rate: f64,
        buffer: usize,
        gamma: f64,
    ) -> Result<Self, ModelError> {
        check_positive(Quantity::ArrivalRate, arrival_rate_per_crawler)?;
        check_positive(Quantity::IndexRate, index_rate)?;
        if buffer < 1 {
            return Err(ModelError::BelowOne(Quantity::Buffer));
        }
        check_positive(Quantity::IdleCost, gamma)?;
        let model = Self {
            arrival_rate_per_crawler,
            index_rate,
            buffer,
            gamma,
        };
        // The optimum lies below load_upper_bound (see there); refuse inputs whose optimum
        // cannot be represented, instead of looping or overflowing later.
        let worst = model.load_upper_bound() * index_rate / arrival_rate_per_crawler;
        if !worst.is_finite() || worst > MAX_CRAWLERS {
            return Err(ModelError::RatesOutOfScale {
                arrival_rate: arrival_rate_per_crawler,
                index_rate,
                worst,
                limit: MAX_CRAWLERS,
            });
        }
        Ok(model)
    }

    /// λ: pages per unit time one active crawler delivers.
    pub fn arrival_rate_per_crawler(&self) -> f64 {
        self.arrival_rate_per_crawler
    }

    /// μ: pages per unit time the busy indexer completes.
    pub fn index_rate(&self) -> f64 {
        self.index_rate
    }

    /// K: buffer capacity in pages, the page in service included.
    pub fn buffer(&self) -> usize {
        self.buffer
    }

    /// γ: weight of the starvation probability, in lost pages per unit time.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// ρ = Nλ/μ for N always-on crawlers (§1.2.1).
    pub fn load(&self, crawlers: usize) -> f64 {
        crawlers as f64 * self.arrival_rate_per_crawler / self.index_rate
    }

    /// γ(K) = μ(K+2)/K, the weight at which the optimal load is exactly 1 (Lemma 1).
    pub fn critical_gamma(&self) -> f64 {
        let k = self.buffer as f64;
        self.index_rate * (k + 2.0) / k
    }

    /// C(ρ, γ, K) of eq. 1.4 at any load ρ >= 0, in lost pages per unit time.
    pub fn cost_at_load(&self, load: f64) -> f64 {
        let (idle, full) = end_probabilities(load, self.buffer);
        self.gamma * idle + load * self.index_rate * full
    }

    /// Starvation, loss rate and eq. 1.4's cost for N always-on crawlers.
    pub fn performance(&self, crawlers: usize) -> StaticPerformance {
        let load = self.load(crawlers);
        let (idle, full) = end_probabilities(load, self.buffer);
        let loss_rate = load * self.index_rate * full;
        StaticPerformance {
            crawlers,
            load,
            starvation_probability: idle,
            loss_rate,
            cost: self.gamma * idle + loss_rate,
        }
    }

    /// ρ(γ, K), the load minimising eq. 1.4 over real ρ >= 0 (Lemma 1), by golden-section search.
    pub fn optimal_load(&self) -> f64 {
        // Lemma 1: ρ -> C is unimodal, so golden-section search converges to its minimiser.
        // (Solving eq. 1.7 instead is awkward: ρ = 1 is always a spurious root of it.)
        let inv_phi = (5f64.sqrt() - 1.0) / 2.0;
        let (mut lo, mut hi) = (0.0, self.load_upper_bound());
        let mut x1 = hi - inv_phi * (hi - lo);
        let mut x2 = lo + inv_phi * (hi - lo);
        let (mut f1, mut f2) = (self.cost_at_load(x1), self.cost_at_load(x2));
        for _ in 0..200 {
            if hi - lo <= 1e-15 * hi {
                break;
            }
            if f1 <= f2 {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - inv_phi * (hi - lo);
                f1 = self.cost_at_load(x1);
            } else {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + inv_phi * (hi - lo);
                f2 = self.cost_at_load(x2);
            }
        }
        (lo + hi) / 2.0
    }

    /// N(γ, K), the cost-minimising number of always-on crawlers (Prop. 1, eq. 1.5); ties go to fewer crawlers.
    pub fn optimal_crawlers(&self) -> StaticPerformance {
        // Prop. 1 picks between floor and ceil of ρ(γ,K)μ/λ. A real-valued ρ(γ,K) is only
        // known to ~1e-8 (the cost is flat at its minimum), which is not enough when μ/λ is
        // huge, so instead search the integers directly: n -> C(nλ/μ) is unimodal because
        // ρ -> C is (Lemma 1), hence "C(n+1) >= C(n)" is false then true, and the first n
        // where it holds is the argmin. The tests check the answer is Prop. 1's floor or ceil.
        let upper = (self.load_upper_bound() * self.index_rate / self.arrival_rate_per_crawler)
            .ceil() as usize
            + 1;
        let (mut lo, mut hi) = (1usize, upper.max(1));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.performance(mid + 1).cost >= self.performance(mid).cost {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.performance(lo)
    }

    /// The large-K approximation of N(γ, K): ⌈μ/λ⌉ if μ(ρ₊ − 1) <= γ(1 − ρ₋), else ⌊μ/λ⌋ (eq. 1.12).
    pub fn approximate_crawlers(&self) -> usize {
        let ratio = self.index_rate / self.arrival_rate_per_crawler;
        // μ/λ is often meant to be an integer (1/0.01 = 100) but arrives as 100.00000000000001:
        // snap it, otherwise ⌈μ/λ⌉ would be 101.
        let nearest = ratio.round();
        let ratio = if (ratio - nearest).abs() <= 1e-9 * ratio.max(1.0) {
            nearest
        } else {
            ratio
        };
        // At least one crawler: with λ > μ, ⌊μ/λ⌋ = 0 is not a deployment.
        let floor = (ratio.floor() as usize).max(1);
        let ceil = (ratio.ceil() as usize).max(1);
        let rho_plus = self.load(ceil);
        let rho_minus = self.load(floor);
        if self.index_rate * (rho_plus - 1.0) <= self.gamma * (1.0 - rho_minus) {
            ceil
        } else {
            floor
        }
    }

    /// A load no optimum exceeds: 1 + (γ/μ + 1)/(K + 1).
    fn load_upper_bound(&self) -> f64 {
        // For ρ > 1 the loss rate is ρμ − μ(1 − P(X=0)) >= μ(ρ − 1), so C(ρ) >= μ(ρ − 1),
        // while C(1) = (γ + μ)/(K + 1) (text under eq. 1.4): any ρ with μ(ρ − 1) above C(1)
        // is beaten by ρ = 1.
        1.0 + (self.gamma / self.index_rate + 1.0) / (self.buffer as f64 + 1.0)
    }
}

/// P(X = i), i = 0..=K, of the M/M/1/K queue at load ρ (eq. 1.3), computed without overflow.
pub fn queue_length_distribution(load: f64, buffer: usize) -> Vec<f64> {
    // ρ^i / Σ_j ρ^j, scaled by the largest term so that ρ^K cannot overflow for ρ > 1.
    let ln_rho = load.ln();
    let top = if load > 1.0 {
        buffer as f64 * ln_rho
    } else {
        0.0
    };
    let weights: Vec<f64> = (0..=buffer)
        .map(|i| {
            if load == 0.0 {
                if i == 0 {
                    1.0
                } else {
                    0.0
                }
            } else {
                (i as f64 * ln_rho - top).exp()
            }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    weights.into_iter().map(|w| w / total).collect()
}

/// (P(X = 0), P(X = K)) of eq. 1.3, accurate near ρ = 1 and without overflow for large K.
fn end_probabilities(load: f64, buffer: usize) -> (f64, f64) {
    let k = buffer as f64;
    if load == 1.0 {
        // The removable singularity of eq. 1.3: all K + 1 states equally likely.
        let p = 1.0 / (k + 1.0);
        return (p, p);
    }
    if load < 1.0 {
        // P(0) = (1 − ρ)/(1 − ρ^{K+1}); expm1 keeps 1 − ρ^{K+1} accurate when ρ is near 1.
        let ln_rho = load.ln();
        let idle = (1.0 - load) / -((k + 1.0) * ln_rho).exp_m1();
        (idle, idle * (k * ln_rho).exp())
    } else {
        // Same formula in σ = 1/ρ < 1, read from the full end: P(K) = (1 − σ)/(1 − σ^{K+1}).
        let ln_sigma = -load.ln();
        let full = ((load - 1.0) / load) / -((k + 1.0) * ln_sigma).exp_m1();
        (full * (k * ln_sigma).exp(), full)
    }
}

#[cfg(test)]
mod tests {
    use super::super::paper;
    use super::*;
    use proptest::prelude::*;

    /// The stationary distribution of a CTMC with generator `q`, by Gaussian elimination on
    /// πQ = 0 with one equation replaced by Σπ = 1: no birth-death shortcut is used.
    fn ctmc_stationary(q: &[Vec<f64>]) -> Vec<f64> {
        let n = q.len();
        // Rows of the system A π = b: A = Qᵀ, last row all ones.
        let mut a: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| q[j][i]).collect()).collect();
        let mut b = vec![0.0; n];
        a[n - 1] = vec![1.0; n];
        b[n - 1] = 1.0;
        for col in 0..n {
            let pivot = (col..n)
                .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                .unwrap();
            a.swap(col, pivot);
            b.swap(col, pivot);
            for row in 0..n {
                if row != col {
                    let factor = a[row][col] / a[col][col];
                    let pivot_row = a[col].clone();
                    for (x, p) in a[row][col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= factor * p;
                    }
                    b[row] -= factor * b[col];
                }
            }
        }
        (0..n).map(|i| b[i] / a[i][i]).collect()
    }

    /// γ·P(empty) + (arrival rate)·P(full) from the CTMC of an M/M/1/K queue (eq. 1.1 with PASTA).
    fn brute_force_cost(lambda_total: f64, mu: f64, k: usize, gamma: f64) -> f64 {
        let mut q = vec![vec![0.0; k + 1]; k + 1];
        for i in 0..=k {
            if i < k {
                q[i][i + 1] = lambda_total;
            }
            if i > 0 {
                q[i][i - 1] = mu;
            }
            q[i][i] = -q[i].iter().sum::<f64>();
        }
        let pi = ctmc_stationary(&q);
        gamma * pi[0] + lambda_total * pi[k]
    }

    #[test]
    fn table_1_1_every_cell_and_the_approximation_column() {
        // Table 1.1: K -> N(γ, K) for λ = 0.01, μ = 1; the ∞ column is eq. 1.12.
        for (gamma, row) in paper::TABLE_1_1 {
            for (&k, &printed) in paper::TABLE_1_1_BUFFERS.iter().zip(row.iter()) {
                let model = QueueModel::new(0.01, 1.0, k, gamma).unwrap();
                let ours = model.optimal_crawlers();
                if gamma == 1.2 && k == 40 {
                    // The one cell we do not reproduce: the chapter prints 101, we get 100.
                    // Eq. 1.4 at 30-digit precision (mpmath) gives C(1.00) = 0.0536585 and
                    // C(1.01) = 0.0536723, so 100 is cheaper; ρ(1.2, 40)·μ/λ = 100.489, so
                    // neither rounding to nearest nor Prop. 1's argmin yields 101. Likely a
                    // numerical slip or typo in the chapter (its neighbours K = 30, 50 agree).
                    assert_eq!(printed, 101);
                    assert_eq!(ours.crawlers, 100);
                    assert!(ours.cost < model.performance(101).cost);
                    continue;
                }
                assert_eq!(ours.crawlers, printed, "γ = {gamma}, K = {k}");
            }
            let model = QueueModel::new(0.01, 1.0, 50, gamma).unwrap();
            assert_eq!(
                model.approximate_crawlers(),
                paper::TABLE_1_1_INFINITY,
                "γ = {gamma}, K = ∞ column"
            );
        }
    }

    #[test]
    fn tables_1_2_and_1_3_static_columns() {
        // The static columns (C_s, N_s) are printed identically in Tables 1.2 and 1.3.
        for row in paper::TABLE_1_2.iter().chain(paper::TABLE_1_3.iter()) {
            let model = QueueModel::new(row.lambda, 1.0, row.buffer, row.gamma).unwrap();
            let best = model.optimal_crawlers();
            assert_eq!(best.crawlers, row.static_crawlers, "N_s for {row:?}");
            // Printed to 5 decimals; 1e-12 of slack for ties such as 0.133125 -> 0.13313.
            assert!(
                (best.cost - row.static_cost).abs() <= 0.5e-5 + 1e-12,
                "C_s for {row:?}: ours {:.7}",
                best.cost
            );
        }
    }

    #[test]
    fn cost_at_unit_load_is_gamma_plus_mu_over_k_plus_1() {
        // Text under eq. 1.4, and continuity of our formula on both sides of ρ = 1.
        let model = QueueModel::new(0.5, 2.0, 7, 0.3).unwrap();
        let at_one = (0.3 + 2.0) / 8.0;
        assert!((model.cost_at_load(1.0) - at_one).abs() < 1e-15);
        assert!((model.cost_at_load(1.0 - 1e-9) - at_one).abs() < 1e-8);
        assert!((model.cost_at_load(1.0 + 1e-9) - at_one).abs() < 1e-8);
    }

    #[test]
    fn eq_1_4_matches_the_ctmc_balance_equations() {
        for &(n, lambda, mu, k, gamma) in &[
            (73, 0.01, 1.0, 5, 0.4),
            (114, 0.01, 1.0, 5, 2.4),
            (10, 0.1, 1.0, 10, 1.2),
            (3, 2.0, 5.0, 1, 0.7),
        ] {
            let model = QueueModel::new(lambda, mu, k, gamma).unwrap();
            let ours = model.performance(n).cost;
            let brute = brute_force_cost(n as f64 * lambda, mu, k, gamma);
            assert!(
                (ours - brute).abs() < 1e-12,
                "N={n} λ={lambda} K={k}: {ours} vs {brute}"
            );
        }
    }

    #[test]
    fn distribution_sums_to_one_and_matches_end_probabilities() {
        for &(load, k) in &[(0.3, 4), (1.0, 6), (1.7, 9), (3.0, 400)] {
            let p = queue_length_distribution(load, k);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let (idle, full) = end_probabilities(load, k);
            assert!(
                (p[0] - idle).abs() < 1e-12 && (p[k] - full).abs() < 1e-12,
                "ρ={load} K={k}"
            );
        }
    }

    #[test]
    fn lemma_1_optimal_load_is_below_one_exactly_when_gamma_is_below_gamma_k() {
        for k in [2usize, 5, 10, 15] {
            let gk = 1.0 * (k as f64 + 2.0) / k as f64;
            let below = QueueModel::new(0.01, 1.0, k, gk * 0.9)
                .unwrap()
                .optimal_load();
            let at = QueueModel::new(0.01, 1.0, k, gk).unwrap().optimal_load();
            let above = QueueModel::new(0.01, 1.0, k, gk * 1.1)
                .unwrap()
                .optimal_load();
            assert!(below < 1.0 && above > 1.0, "K={k}: {below} {above}");
            assert!((at - 1.0).abs() < 1e-6, "K={k}: {at}");
        }
    }

    #[test]
    fn large_buffers_do_not_overflow() {
        let model = QueueModel::new(0.01, 1.0, 100_000, 2.0).unwrap();
        let c = model.cost_at_load(1.5);
        assert!(c.is_finite() && (c - 0.5).abs() < 1e-9, "{c}"); // loss ≈ μ(ρ − 1)
        assert_eq!(model.optimal_crawlers().crawlers, 100);
    }

    #[test]
    fn errors_name_the_quantity() {
        let quantities = |r: Result<QueueModel, ModelError>| r.unwrap_err().quantities();
        let msg = |r: Result<QueueModel, ModelError>| r.unwrap_err().to_string();
        assert_eq!(
            quantities(QueueModel::new(f64::NAN, 1.0, 5, 1.0)),
            [Quantity::ArrivalRate]
        );
        assert_eq!(
            quantities(QueueModel::new(0.1, -1.0, 5, 1.0)),
            [Quantity::IndexRate]
        );
        assert_eq!(
            quantities(QueueModel::new(0.1, 1.0, 0, 1.0)),
            [Quantity::Buffer]
        );
        assert_eq!(
            quantities(QueueModel::new(0.1, 1.0, 5, f64::INFINITY)),
            [Quantity::IdleCost]
        );
        assert!(msg(QueueModel::new(0.1, 1.0, 0, 1.0)).contains("the buffer K"));
        assert!(msg(QueueModel::new(1e-300, 1.0, 5, 1.0)).contains("same time unit"));
    }

    proptest! {
        #[test]
        fn prop_1_integer_optimum_is_floor_or_ceil_and_beats_every_count(
            lambda in 0.005f64..2.0, mu in 0.1f64..5.0, k in 1usize..40, gamma in 0.01f64..5.0,
        ) {
            let model = QueueModel::new(lambda, mu, k, gamma).unwrap();
            let best = model.optimal_crawlers();
            let limit = (3.0 * mu / lambda).ceil() as usize + 3;
            for n in 1..=limit {
                prop_assert!(best.cost <= model.performance(n).cost * (1.0 + 1e-12), "n={} beats N={}", n, best.crawlers);
            }
            // Prop. 1: N(γ,K) ∈ {⌊ρ(γ,K)μ/λ⌋, ⌈ρ(γ,K)μ/λ⌉} (clamped to >= 1; the real-valued
            // optimum is only known to ~1e-7, so allow that slack at the rounding boundary).
            let x = model.optimal_load() * mu / lambda;
            let lo = ((x - 1e-6).floor() as usize).max(1);
            let hi = ((x + 1e-6).ceil() as usize).max(1);
            prop_assert!(best.crawlers >= lo && best.crawlers <= hi, "N={} x={}", best.crawlers, x);
        }

        #[test]
        fn eq_1_4_matches_ctmc_for_random_parameters(
            n in 1usize..60, lambda in 0.01f64..1.0, mu in 0.1f64..3.0, k in 1usize..25, gamma in 0.01f64..5.0,
        ) {
            let model = QueueModel::new(lambda, mu, k, gamma).unwrap();
            let ours = model.performance(n).cost;
            let brute = brute_force_cost(n as f64 * lambda, mu, k, gamma);
            prop_assert!((ours - brute).abs() <= 1e-9 * brute.max(1.0));
        }
    }
}
