//! The dynamic setting of §1.2.2: switch crawlers on and off as the indexer's buffer fills.
//!
//! A Markov decision process observed at the epochs of a Poisson clock of rate
//! ν = λN + μ (uniformisation): each epoch is a page arrival, an indexing completion
//! (departure) or a fictitious tick. The state is x = (q, r, s): pages in the buffer and
//! active crawlers just *before* the epoch, and the epoch's type s (0 departure,
//! 1 arrival, 2 fictitious). At a departure the controller may switch one more crawler
//! on; at an arrival the delivering crawler is switched off and the controller may switch
//! it back on. The one-step cost γ·1(q = 0) + ν·1(q = K, s = 1) (eq. 1.13) averages, per
//! epoch, to γ·P(starved) + loss rate, the same cost as the static setting.
//!
//! Solved by relative value iteration (Prop. 6); the optimal policy is read back as the
//! monotone switching curve of Figures 1.5–1.7, and its stationary distribution gives the
//! fewest, mean and most active crawlers.

use super::error::{ModelError, Quantity};
use super::queue::QueueModel;

/// Larger state spaces would take minutes per solve and gigabytes of memory.
const MAX_STATES: usize = 10_000_000;

/// Iterations × states allowed per solve: about a minute at ~1.5e8 state updates per second.
const MAX_WORK: usize = 10_000_000_000;

/// Epoch type s = 0: an indexing completion (the chapter's "departure").
const DEPARTURE: usize = 0;
/// Epoch type s = 1: a crawler delivers a page.
const ARRIVAL: usize = 1;
/// Epoch type s = 2: a tick of the uniformising clock that changes nothing.
const FICTITIOUS: usize = 2;

/// Settings of the relative value iteration of Prop. 6.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RviSettings {
    /// τ of Prop. 6, in (0, 1): each iterate keeps 1 − τ of the previous one, which makes the chain aperiodic; the chapter uses 0.99999.
    pub tau: f64,
    /// Stop once the proven lower and upper bounds on the average cost are this close, relative to the cost (or closer than rounding allows).
    pub relative_tolerance: f64,
    /// Give up with an error after this many iterations.
    pub max_iterations: usize,
}

impl Default for RviSettings {
    fn default() -> Self {
        // 1e-8 on the cost bounds is far below the chapter's 5 printed digits yet takes
        // only a few thousand iterations on its largest case.
        Self {
            tau: 0.99999,
            relative_tolerance: 1e-8,
            max_iterations: 2_000_000,
        }
    }
}

/// The optimal activation policy as a monotone switching curve (Figures 1.5–1.7): activate iff q <= f_s(r).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SwitchingCurve {
    /// f₀(r), r = 0..=N: at a departure seeing q pages (the leaving one counted) and r active crawlers, switch one more on iff q <= f₀(r); None = never (always None at r = N: none left).
    pub departure: Vec<Option<usize>>,
    /// f₁(r), r = 0..=N: at an arrival seeing q pages (before it) and r active crawlers (the deliverer counted), keep the deliverer on iff q <= f₁(r); None = never (and at r = 0, where no arrival can happen).
    pub arrival: Vec<Option<usize>>,
    /// The largest r with f₀(r) >= 1, the last active count at which a departure still switches one more crawler on. The chapter's N_max column (Table 1.3) equals this; it can exceed `DynamicPlan::max_active` because the top of the curve may be unreachable.
    pub highest_activating_count: Option<usize>,
    /// Whether every state obeys the threshold form; the chapter conjectures the optimum always does, unproven.
    pub is_threshold_policy: bool,
    /// Whether f₀ and f₁ are non-increasing in r, as in the chapter's figures.
    pub is_monotone: bool,
}

/// The optimal dynamic policy and what it achieves (eq. 1.18, Tables 1.2 and 1.3).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DynamicPlan {
    /// N, the crawlers available to switch on.
    pub available_crawlers: usize,
    /// The optimal average cost θ (Prop. 5), γ·starvation + loss rate, in lost pages per unit time.
    pub cost: f64,
    /// Proven [lower, upper] bounds on the optimal cost when the iteration stopped (Odoni's bounds).
    pub cost_bounds: [f64; 2],
    /// Fraction of time the indexer starves under the optimal policy.
    pub starvation_probability: f64,
    /// Pages lost per unit time under the optimal policy.
    pub loss_rate: f64,
    /// N_min: fewest active crawlers in the policy's recurrent class.
    pub min_active: usize,
    /// N̄: time-average number of active crawlers.
    pub mean_active: f64,
    /// N_max: most active crawlers in the policy's recurrent class, i.e. the fleet the policy really uses (see `SwitchingCurve::highest_activating_count` for the chapter's reading).
    pub max_active: usize,
    /// Relative value iterations until the cost bounds met `relative_tolerance`.
    pub iterations: usize,
    /// Iterations at which the chapter's stopping rule (max relative change of h below 1e-5) was first met, for comparison with its N_iter.
    pub paper_criterion_iterations: Option<usize>,
    /// The policy itself.
    pub policy: SwitchingCurve,
}

/// The MDP of §1.2.2 for one model and N available crawlers.
struct Mdp {
    /// λ per crawler.
    lambda: f64,
    /// μ.
    mu: f64,
    /// ν = λN + μ, the uniformisation rate.
    nu: f64,
    gamma: f64,
    /// K.
    buffer: usize,
    /// N.
    crawlers: usize,
}

impl Mdp {
    fn new(model: &QueueModel, crawlers: usize) -> Result<Self, ModelError> {
        if crawlers < 1 {
            return Err(ModelError::BelowOne(Quantity::Crawlers));
        }
        let states = (model.buffer() + 1)
            .saturating_mul(crawlers + 1)
            .saturating_mul(3);
        if states > MAX_STATES {
            return Err(ModelError::TooManyStates {
                states,
                limit: MAX_STATES,
            });
        }
        let lambda = model.arrival_rate_per_crawler();
        let mu = model.index_rate();
        Ok(Self {
            lambda,
            mu,
            nu: lambda * crawlers as f64 + mu,
            gamma: model.gamma(),
            buffer: model.buffer(),
            crawlers,
        })
    }

    fn len(&self) -> usize {
        (self.buffer + 1) * (self.crawlers + 1) * 3
    }

    fn index(&self, q: usize, r: usize, s: usize) -> usize {
        (q * (self.crawlers + 1) + r) * 3 + s
    }

    fn decode(&self, x: usize) -> (usize, usize, usize) {
        (
            x / 3 / (self.crawlers + 1),
            x / 3 % (self.crawlers + 1),
            x % 3,
        )
    }

    /// The state space X of §1.2.2: no departure from an empty buffer, no arrival without active crawlers, and not the absorbing (0, 0, 2).
    fn feasible(q: usize, r: usize, s: usize) -> bool {
        match s {
            DEPARTURE => q >= 1,
            ARRIVAL => r >= 1,
            _ => q > 0 || r > 0,
        }
    }

    /// A_x: actions allowed in x (0 = leave as is, 1 = switch a crawler on).
    fn actions(q: usize, r: usize, s: usize) -> &'static [usize] {
        if s == FICTITIOUS {
            &[0]
        } else if (q, r, s) == (1, 0, DEPARTURE) {
            // The chapter's restriction: otherwise (0, 0, 2), an empty buffer with every
            // crawler off, would absorb the chain.
            &[1]
        } else {
            &[0, 1]
        }
    }

    /// c(x) of eq. 1.13: γ when starved, ν when an arrival is lost (ν·P(lost arrival epoch) = loss rate).
    fn cost(&self, q: usize, s: usize) -> f64 {
        let starved = if q == 0 { self.gamma } else { 0.0 };
        let lost = if q == self.buffer && s == ARRIVAL {
            self.nu
        } else {
            0.0
        };
        starved + lost
    }

    /// (q', r') right after the epoch x and action a: the common first step of eqs. 1.14–1.16.
    fn after(&self, q: usize, r: usize, s: usize, a: usize) -> (usize, usize) {
        match s {
            // Eq. 1.14: the page leaves; a = 1 switches one more crawler on, if any is off.
            DEPARTURE => (q - 1, (r + a).min(self.crawlers)),
            // Eq. 1.15: the page joins unless the buffer is full (then it is lost); the
            // delivering crawler is switched off, and a = 1 switches it back on.
            ARRIVAL => ((q + 1).min(self.buffer), r - 1 + a),
            // Eq. 1.16: nothing happens.
            _ => (q, r),
        }
    }

    /// The next epoch's type from (q', r'): (departure, arrival, fictitious) probabilities.
    ///
    /// The printed eq. 1.14 is garbled: it weights the next arrival by λr (the count
    /// *before* the action) and writes its third line as 1 − (μ·1(q>1) − λr)/ν, and
    /// eq. 1.15's third line has min{q+1, N} for min{q+1, K}. We use what the model text
    /// says: after the action r' crawlers are on, so the next epoch is a departure w.p.
    /// μ·1(q' > 0)/ν, an arrival w.p. λr'/ν and fictitious otherwise, the same for all
    /// three equations (which is exactly eq. 1.16, where q' = q and r' = r).
    fn next_epoch(&self, q: usize, r: usize) -> [f64; 3] {
        let departure = if q > 0 { self.mu / self.nu } else { 0.0 };
        let arrival = self.lambda * r as f64 / self.nu;
        [departure, arrival, (1.0 - departure - arrival).max(0.0)]
    }

    /// E[h(next state) | post-action (q', r')] for every (q', r'), indexed q'·(N+1) + r'.
    fn expected_next(&self, h: &[f64], out: &mut [f64]) {
        for q in 0..=self.buffer {
            for r in 0..=self.crawlers {
                let p = self.next_epoch(q, r);
                let base = self.index(q, r, 0);
                // Infeasible next states carry probability 0 (or, for (0, 0, ·), are never
                // entered), and their h stays 0, so they add nothing.
                out[q * (self.crawlers + 1) + r] =
                    p[0] * h[base] + p[1] * h[base + 1] + p[2] * h[base + 2];
            }
        }
    }

    /// The minimising action and its value min_a Σ p(x'|x,a) h(x') given `expected_next`; ties keep crawlers off.
    fn best_action(&self, expected: &[f64], q: usize, r: usize, s: usize) -> (usize, f64) {
        let mut best = (usize::MAX, f64::INFINITY);
        for &a in Self::actions(q, r, s) {
            let (q2, r2) = self.after(q, r, s, a);
            let value = expected[q2 * (self.crawlers + 1) + r2];
            if value < best.1 {
                best = (a, value);
            }
        }
        best
    }

    /// Successor states of x under action a, with their probabilities.
    fn successors(
        &self,
        q: usize,
        r: usize,
        s: usize,
        a: usize,
    ) -> impl Iterator<Item = (usize, f64)> + '_ {
        let (q2, r2) = self.after(q, r, s, a);
        let p = self.next_epoch(q2, r2);
        (0..3)
            .filter(move |&s2| p[s2] > 0.0)
            .map(move |s2| (self.index(q2, r2, s2), p[s2]))
    }
}

/// The optimal policy with N = `available_crawlers`, by relative value iteration (Prop. 6).
pub fn solve(
    model: &QueueModel,
    available_crawlers: usize,
    settings: &RviSettings,
) -> Result<DynamicPlan, ModelError> {
    if !(settings.tau > 0.0 && settings.tau < 1.0) {
        return Err(ModelError::BadSettings(format!(
            "0 < τ < 1, got {}",
            settings.tau
        )));
    }
    if !(settings.relative_tolerance > 0.0 && settings.relative_tolerance.is_finite()) {
        return Err(ModelError::BadSettings(format!(
            "a finite tolerance > 0, got {}",
            settings.relative_tolerance
        )));
    }
    let mdp = Mdp::new(model, available_crawlers)?;
    let n = mdp.crawlers;
    let states: Vec<usize> = (0..mdp.len())
        .filter(|&x| {
            let (q, r, s) = mdp.decode(x);
            Mdp::feasible(q, r, s)
        })
        .collect();
    // x̂ of Prop. 6: any state does (h is only defined up to a constant); this one is
    // a page arriving at an empty buffer with every crawler on.
    let anchor = mdp.index(0, n, ARRIVAL);
    let tau = settings.tau;

    let mut h = vec![0.0; mdp.len()];
    let mut next = vec![0.0; mdp.len()];
    let mut expected = vec![0.0; (mdp.buffer + 1) * (n + 1)];
    let mut iterations = 0;
    let mut paper_criterion_iterations = None;
    let budget = settings.max_iterations.min(MAX_WORK / states.len().max(1));
    let (cost, cost_bounds) = loop {
        if iterations >= budget {
            return Err(ModelError::NotConverged {
                iterations: budget,
                buffer: mdp.buffer,
                crawlers: n,
                states: states.len(),
            });
        }
        mdp.expected_next(&h, &mut expected);
        // Bounds on the average cost from the change T_τh − h (Odoni's bounds): for any h,
        // min_x (T_τh − h)(x) <= τθ <= max_x (T_τh − h)(x). Stopping when they meet gives
        // a guaranteed accuracy, unlike the chapter's relative change of h.
        let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
        for &x in &states {
            let (q, r, s) = mdp.decode(x);
            let t = mdp.cost(q, s) + mdp.best_action(&expected, q, r, s).1;
            let updated = (1.0 - tau) * h[x] + tau * t;
            let change = updated - h[x];
            low = low.min(change);
            high = high.max(change);
            next[x] = updated;
        }
        // h_{k+1} = (1 − τ)h_k + τ(T h_k − T h_k(x̂)) of Prop. 6: as h_k(x̂) = 0, this is
        // the update above shifted so that x̂ stays at 0.
        let shift = next[anchor];
        let mut worst_relative_change: f64 = 0.0;
        let mut h_scale: f64 = 0.0;
        for &x in &states {
            next[x] -= shift;
            h_scale = h_scale.max(next[x].abs());
            if h[x] != 0.0 {
                worst_relative_change = worst_relative_change.max(((next[x] - h[x]) / h[x]).abs());
            }
        }
        std::mem::swap(&mut h, &mut next);
        iterations += 1;
        if paper_criterion_iterations.is_none() && iterations > 1 && worst_relative_change < 1e-5 {
            paper_criterion_iterations = Some(iterations);
        }
        // Converged when the bounds meet relative to the cost, or when they are closer than
        // the cost scale can matter (1e-12·(γ + μ)) or than rounding in h lets them get:
        // near-zero optimal costs (large buffers) would otherwise never satisfy the first.
        let floor = (1e-12 * (mdp.gamma + mdp.mu)).max(64.0 * f64::EPSILON * h_scale);
        if high - low <= (settings.relative_tolerance * low.abs()).max(floor) {
            // θ = T h(x̂) at the fixed point. (Prop. 6 prints θ = τT(h)(x̂), which is the
            // average cost of the τ-mixed problem; the two differ by the factor τ.)
            break ((low + high) / 2.0 / tau, [low / tau, high / tau]);
        }
    };

    mdp.expected_next(&h, &mut expected);
    let mut actions = vec![0usize; mdp.len()];
    for &x in &states {
        let (q, r, s) = mdp.decode(x);
        actions[x] = mdp.best_action(&expected, q, r, s).0;
    }
    let policy = switching_curve(&mdp, &actions);
    let stationary = stationary_behaviour(&mdp, &actions, &states, anchor, budget)?;
    Ok(DynamicPlan {
        available_crawlers: n,
        cost,
        cost_bounds,
        starvation_probability: stationary.starvation_probability,
        loss_rate: stationary.loss_rate,
        min_active: stationary.min_active,
        mean_active: stationary.mean_active,
        max_active: stationary.max_active,
        iterations,
        paper_criterion_iterations,
        policy,
    })
}

/// The optimal policy with no limit on available crawlers (Table 1.3): re-solves with a doubled cap until the cap no longer matters.
pub fn solve_unrestricted(
    model: &QueueModel,
    settings: &RviSettings,
) -> Result<DynamicPlan, ModelError> {
    // Table 1.3 needs up to 2.5 × N_s crawlers; start near that and double while the cap
    // shapes the answer: when the recurrent class reaches it, or when the switching curve
    // still activates just below it.
    let mut cap = 2 * model.optimal_crawlers().crawlers + 8;
    loop {
        let plan = solve(model, cap, settings)?;
        let curve_top = plan.policy.highest_activating_count.unwrap_or(0);
        if plan.max_active < cap && curve_top + 1 < cap {
            return Ok(plan);
        }
        cap = cap.saturating_mul(2);
    }
}

/// Long-run behaviour of a fixed policy: its recurrent class and stationary distribution.
struct Stationary {
    starvation_probability: f64,
    loss_rate: f64,
    min_active: usize,
    mean_active: f64,
    max_active: usize,
}

/// Finds the closed class reached from `start` and the stationary distribution on it (power iteration on the lazy chain).
fn stationary_behaviour(
    mdp: &Mdp,
    actions: &[usize],
    states: &[usize],
    start: usize,
    max_iterations: usize,
) -> Result<Stationary, ModelError> {
    let mut forward: Vec<Vec<(usize, f64)>> = vec![Vec::new(); mdp.len()];
    let mut backward: Vec<Vec<usize>> = vec![Vec::new(); mdp.len()];
    for &x in states {
        let (q, r, s) = mdp.decode(x);
        for (y, p) in mdp.successors(q, r, s, actions[x]) {
            forward[x].push((y, p));
            backward[y].push(x);
        }
    }
    let reach = |from: usize, edges: &dyn Fn(usize) -> Vec<usize>| {
        let mut seen = vec![false; mdp.len()];
        let mut stack = vec![from];
        seen[from] = true;
        while let Some(x) = stack.pop() {
            for y in edges(x) {
                if !seen[y] {
                    seen[y] = true;
                    stack.push(y);
                }
            }
        }
        seen
    };
    // The closed class below `start`: if everything reachable from x can reach x back, the
    // reachable set is a closed communicating class; otherwise move to a state that cannot
    // return, which goes strictly down the DAG of classes, so this ends.
    let mut x = start;
    let class = loop {
        let down = reach(x, &|y| forward[y].iter().map(|&(z, _)| z).collect());
        let up = reach(x, &|y| backward[y].clone());
        match (0..mdp.len()).find(|&y| down[y] && !up[y]) {
            Some(y) => x = y,
            None => break (0..mdp.len()).filter(|&y| down[y]).collect::<Vec<_>>(),
        }
    };

    // Power iteration on (I + P)/2: same stationary law, never periodic.
    let mut pi = vec![0.0; mdp.len()];
    for &y in &class {
        pi[y] = 1.0 / class.len() as f64;
    }
    let mut next = vec![0.0; mdp.len()];
    let mut converged = false;
    for _ in 0..max_iterations {
        for &y in &class {
            next[y] = pi[y] / 2.0;
        }
        for &y in &class {
            for &(z, p) in &forward[y] {
                next[z] += pi[y] * p / 2.0;
            }
        }
        let change: f64 = class.iter().map(|&y| (next[y] - pi[y]).abs()).sum();
        std::mem::swap(&mut pi, &mut next);
        if change < 1e-13 {
            converged = true;
            break;
        }
    }
    if !converged {
        return Err(ModelError::StationaryNotConverged(max_iterations));
    }

    let (mut starvation_probability, mut lost_epochs, mut mean_active) = (0.0, 0.0, 0.0);
    let (mut min_active, mut max_active) = (usize::MAX, 0);
    for &y in &class {
        let (q, r, s) = mdp.decode(y);
        if q == 0 {
            starvation_probability += pi[y];
        }
        if q == mdp.buffer && s == ARRIVAL {
            lost_epochs += pi[y];
        }
        // r is the count just before the epoch, i.e. during the preceding interval; the
        // epochs are Poisson, so by PASTA this average is the time average.
        mean_active += pi[y] * r as f64;
        min_active = min_active.min(r);
        max_active = max_active.max(r);
    }
    Ok(Stationary {
        starvation_probability,
        loss_rate: mdp.nu * lost_epochs,
        min_active,
        mean_active,
        max_active,
    })
}

/// Reads a policy as thresholds f_s(r) and checks it has the switching-curve form of Figures 1.5–1.7.
fn switching_curve(mdp: &Mdp, actions: &[usize]) -> SwitchingCurve {
    let mut is_threshold_policy = true;
    let mut threshold = |r: usize, s: usize| {
        let first_q = if s == DEPARTURE { 1 } else { 0 };
        if s == ARRIVAL && r == 0 {
            return None;
        }
        let on: Vec<bool> = (first_q..=mdp.buffer)
            .map(|q| actions[mdp.index(q, r, s)] == 1)
            .collect();
        let count = on.iter().take_while(|&&b| b).count();
        if on[count..].iter().any(|&b| b) {
            is_threshold_policy = false;
        }
        if count == 0 {
            None
        } else {
            Some(first_q + count - 1)
        }
    };
    let departure: Vec<Option<usize>> = (0..=mdp.crawlers)
        .map(|r| threshold(r, DEPARTURE))
        .collect();
    let arrival: Vec<Option<usize>> = (0..=mdp.crawlers).map(|r| threshold(r, ARRIVAL)).collect();
    // None (never) sorts below Some(_), so "non-increasing" compares as Options.
    let non_increasing = |f: &[Option<usize>]| f.windows(2).all(|w| w[1] <= w[0]);
    // f₁(0) is None only because no arrival can happen there: skip it.
    let is_monotone = non_increasing(&departure) && non_increasing(&arrival[1..]);
    let highest_activating_count = departure
        .iter()
        .rposition(|f| matches!(f, Some(q) if *q >= 1));
    SwitchingCurve {
        departure,
        arrival,
        highest_activating_count,
        is_threshold_policy,
        is_monotone,
    }
}

#[cfg(test)]
mod tests {
    use super::super::paper::{self, DynamicRow};
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// The γ the authors' dynamic runs used. Rows printed "1.13" are the γ = γ(K) = μ(K+2)/K
    /// case for K = 15, i.e. 17/15 = 1.1333…: with that value every dynamic cell of those
    /// rows reproduces, with 1.13 none does (ours at 1.13: Table 1.2 0.10694, 0.09091,
    /// 0.08511; Table 1.3 0.07800 with N_min 70, 0.01815). Their static C_s = 0.13313 is
    /// (1.13 + 1)/16, so the static column did use 1.13.
    fn dynamic_gamma(row: &DynamicRow) -> f64 {
        if row.gamma == 1.13 {
            17.0 / 15.0
        } else {
            row.gamma
        }
    }

    /// Dynamic cost cells where ours and the printed value differ in the 5th decimal.
    ///
    /// Each is (λ, K, γ, printed, ours). The chapter stops value iteration when h changes
    /// by less than 1e-5 relative, which leaves its cost estimate uncertain by a few units
    /// in the 5th decimal (stopping our iteration by the same rule moves the estimate by
    /// ±4e-5 depending on the reference state x̂), while ours is converged to 1e-8 and is
    /// the exact stationary cost of our policy. Ours is never higher than the printed value.
    const TABLE_1_2_COST_SLACK: [(f64, usize, f64, f64, f64); 7] = [
        (0.05, 15, 0.4, 0.05514, 0.05513),
        (0.05, 15, 1.13, 0.09117, 0.09116),
        (0.05, 15, 2.4, 0.13895, 0.13891),
        (0.1, 10, 0.4, 0.06838, 0.06837),
        (0.1, 10, 2.4, 0.18585, 0.18584),
        (0.1, 15, 0.4, 0.05326, 0.05325),
        (0.1, 15, 2.4, 0.09606, 0.09602),
    ];
    const TABLE_1_2_SLACK_EXTRA: [(f64, usize, f64, f64, f64); 1] =
        [(0.1, 15, 1.13, 0.08538, 0.08535)];

    fn model(row: &DynamicRow) -> QueueModel {
        QueueModel::new(row.lambda, 1.0, row.buffer, dynamic_gamma(row)).unwrap()
    }

    fn check_cost(row: &DynamicRow, ours: f64, slack: &[(f64, usize, f64, f64, f64)]) {
        let known = slack
            .iter()
            .find(|s| s.0 == row.lambda && s.1 == row.buffer && s.2 == row.gamma);
        match known {
            Some(&(_, _, _, printed, documented)) => {
                assert_eq!(printed, row.dynamic_cost);
                assert!(
                    (ours - documented).abs() <= 0.5e-5 + 1e-12,
                    "{row:?}: ours {ours:.6}, documented {documented}"
                );
                assert!(
                    ours <= printed && printed - ours <= 5e-5,
                    "{row:?}: ours {ours:.6}"
                );
            }
            None => assert!(
                (ours - row.dynamic_cost).abs() <= 0.5e-5 + 1e-12,
                "C_d for {row:?}: ours {ours:.6}"
            ),
        }
    }

    #[test]
    fn figures_1_5_to_1_7_costs() {
        for (gamma, printed, _iterations) in paper::FIGURES_1_5_TO_1_7 {
            let model = QueueModel::new(0.1, 1.0, 5, gamma).unwrap();
            let plan = solve(&model, 16, &RviSettings::default()).unwrap();
            assert!(
                (plan.cost - printed).abs() <= 0.5e-5,
                "γ = {gamma}: ours {:.7}",
                plan.cost
            );
            // "the optimal policy is a monotone switching curve".
            assert!(
                plan.policy.is_threshold_policy && plan.policy.is_monotone,
                "γ = {gamma}"
            );
        }
    }

    #[test]
    fn table_1_2_dynamic_columns() {
        let slack: Vec<_> = TABLE_1_2_COST_SLACK
            .iter()
            .chain(TABLE_1_2_SLACK_EXTRA.iter())
            .copied()
            .collect();
        for row in &paper::TABLE_1_2 {
            let plan = solve(&model(row), row.static_crawlers, &RviSettings::default()).unwrap();
            check_cost(row, plan.cost, &slack);
            assert_eq!(plan.min_active, row.min_active, "N_min for {row:?}");
            assert!(
                (plan.mean_active - row.mean_active).abs() <= 0.05 + 1e-9,
                "N̄ for {row:?}: {}",
                plan.mean_active
            );
            assert!(plan.max_active <= row.static_crawlers);
            assert!(
                plan.policy.is_threshold_policy && plan.policy.is_monotone,
                "{row:?}"
            );
        }
    }

    #[test]
    fn table_1_3_dynamic_columns() {
        for row in &paper::TABLE_1_3 {
            let plan = solve_unrestricted(&model(row), &RviSettings::default()).unwrap();
            match (row.lambda, row.buffer, row.gamma) {
                // The printed C_d of these two rows is shifted: the γ = 1.2 row shows what
                // we get for γ = 2.4 (0.12020), and the γ = 2.4 row repeats Table 1.2's
                // restricted value 0.20541 (an unrestricted optimum can't equal it when
                // every other row improves by 5-3700%). Their N_min, N̄, N_max reproduce.
                (0.05, 10, 1.2) => {
                    assert!((plan.cost - 0.08156).abs() <= 0.5e-5, "{:.6}", plan.cost)
                }
                (0.05, 10, 2.4) => {
                    assert!((plan.cost - 0.12020).abs() <= 0.5e-5, "{:.6}", plan.cost)
                }
                _ => assert!(
                    (plan.cost - row.dynamic_cost).abs() <= 0.5e-5 + 1e-12,
                    "C_d for {row:?}: {:.6}",
                    plan.cost
                ),
            }
            assert_eq!(plan.min_active, row.min_active, "N_min for {row:?}");
            if (row.lambda, row.buffer, row.gamma) == (0.01, 5, 0.4) {
                // Not reproduced: printed N̄ = 74.8, ours 74.55 (cost, N_min, N_max agree,
                // and so do all 26 other N̄ of the table). We found no reading of the model
                // that gives 74.8; possibly a misprint of 74.6.
                assert!(
                    (plan.mean_active - 74.55).abs() < 0.01,
                    "{}",
                    plan.mean_active
                );
            } else {
                assert!(
                    (plan.mean_active - row.mean_active).abs() <= 0.05 + 1e-9,
                    "N̄ for {row:?}: {}",
                    plan.mean_active
                );
            }
            // The printed N_max is the top of the switching curve, the last r at which a
            // departure still switches a crawler on, in all 27 rows; the most crawlers
            // ever active together is that or up to 3 fewer (the top can be unreachable).
            assert_eq!(
                plan.policy.highest_activating_count, row.max_active,
                "N_max for {row:?}"
            );
            let printed = row.max_active.unwrap();
            assert!(
                plan.max_active <= printed && plan.max_active + 3 >= printed,
                "{row:?}: {}",
                plan.max_active
            );
            assert!(
                plan.policy.is_threshold_policy && plan.policy.is_monotone,
                "{row:?}"
            );
        }
    }

    #[test]
    fn always_on_policy_in_the_mdp_costs_eq_1_4() {
        // The static policy π_N of §1.2.2 (action 1 at every arrival and departure) run
        // through our transition probabilities must cost what eq. 1.4 says: this checks
        // the re-derived eqs. 1.14-1.16 against the independent closed form.
        for &(lambda, k, gamma, n) in &[(0.1, 5, 1.4, 10), (0.05, 10, 0.4, 17), (0.3, 3, 2.0, 4)] {
            let model = QueueModel::new(lambda, 1.0, k, gamma).unwrap();
            let mdp = Mdp::new(&model, n).unwrap();
            let states: Vec<usize> = (0..mdp.len())
                .filter(|&x| {
                    let (q, r, s) = mdp.decode(x);
                    Mdp::feasible(q, r, s)
                })
                .collect();
            let actions: Vec<usize> = (0..mdp.len())
                .map(|x| usize::from(x % 3 != FICTITIOUS))
                .collect();
            let st =
                stationary_behaviour(&mdp, &actions, &states, mdp.index(0, n, ARRIVAL), 1_000_000)
                    .unwrap();
            let expected = model.performance(n);
            assert!((st.starvation_probability - expected.starvation_probability).abs() < 1e-9);
            assert!((st.loss_rate - expected.loss_rate).abs() < 1e-9);
            assert_eq!((st.min_active, st.max_active), (n, n));
        }
    }

    #[test]
    fn value_iteration_cost_is_the_stationary_cost_of_its_policy() {
        let model = QueueModel::new(0.05, 1.0, 10, 1.2).unwrap();
        let plan = solve(&model, 20, &RviSettings::default()).unwrap();
        let stationary = model.gamma() * plan.starvation_probability + plan.loss_rate;
        assert!(
            (plan.cost - stationary).abs() <= 1e-7 * plan.cost,
            "{} vs {stationary}",
            plan.cost
        );
        // And the dynamic optimum never loses to the static one with the same N.
        assert!(plan.cost <= model.performance(20).cost);
    }

    #[test]
    fn unrestricted_answer_does_not_depend_on_the_cap() {
        let model = QueueModel::new(0.1, 1.0, 5, 2.4).unwrap();
        let plan = solve_unrestricted(&model, &RviSettings::default()).unwrap();
        let wider = solve(&model, 3 * plan.available_crawlers, &RviSettings::default()).unwrap();
        assert!((plan.cost - wider.cost).abs() <= 1e-7 * plan.cost);
        assert_eq!(
            (plan.min_active, plan.max_active),
            (wider.min_active, wider.max_active)
        );
        assert!((plan.mean_active - wider.mean_active).abs() < 1e-6);
    }

    #[test]
    fn simulated_switching_curve_costs_what_value_iteration_says() {
        // A continuous-time, event-by-event simulation of crawlers and indexer driven by the
        // switching curve: an independent check of the uniformised MDP (and so of our
        // reading of the garbled eqs. 1.14-1.15). Figure 1.6's case.
        let (lambda, mu, k, gamma, n) = (0.1, 1.0, 5usize, 1.4, 16usize);
        let model = QueueModel::new(lambda, mu, k, gamma).unwrap();
        let plan = solve(&model, n, &RviSettings::default()).unwrap();
        let curve = &plan.policy;
        let activates = |f: Option<usize>, q: usize| f.is_some_and(|t| q <= t);
        let mut rng = StdRng::seed_from_u64(0x5eed_0001);
        let (batches, horizon) = (40, 5_000.0);
        let (mut q, mut r) = (0usize, n);
        let mut costs = Vec::new();
        let mut active_time = 0.0;
        for _ in 0..batches {
            let (mut t, mut starved, mut lost) = (0.0, 0.0, 0u64);
            while t < horizon {
                let departure_rate = if q > 0 { mu } else { 0.0 };
                let total = departure_rate + lambda * r as f64;
                let dt = -(1.0 - rng.random::<f64>()).ln() / total;
                let dt = dt.min(horizon - t);
                if q == 0 {
                    starved += dt;
                }
                active_time += dt * r as f64;
                t += dt;
                if t >= horizon {
                    break;
                }
                if rng.random::<f64>() * total < departure_rate {
                    let seen = q;
                    q -= 1;
                    if r < n && activates(curve.departure[r], seen) {
                        r += 1;
                    }
                } else {
                    let (seen, before) = (q, r);
                    if q == k {
                        lost += 1;
                    } else {
                        q += 1;
                    }
                    r -= 1;
                    if activates(curve.arrival[before], seen) {
                        r += 1;
                    }
                }
            }
            costs.push((gamma * starved + lost as f64) / horizon);
        }
        let mean = costs.iter().sum::<f64>() / batches as f64;
        let sd =
            (costs.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (batches - 1) as f64).sqrt();
        let half_width = 4.0 * sd / (batches as f64).sqrt();
        assert!(
            half_width < 0.01,
            "simulation too short to be a test: ±{half_width}"
        );
        assert!(
            (mean - plan.cost).abs() <= half_width,
            "simulated {mean} ± {half_width}, RVI {}",
            plan.cost
        );
        let mean_active = active_time / (batches as f64 * horizon);
        assert!(
            (mean_active - plan.mean_active).abs() < 0.1,
            "{mean_active} vs {}",
            plan.mean_active
        );
    }

    #[test]
    fn errors_name_the_quantity_or_the_fix() {
        let model = QueueModel::new(0.01, 1.0, 5, 1.0).unwrap();
        let err = solve(&model, 0, &RviSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the crawler count N must be at least 1"),
            "{err}"
        );
        let big = QueueModel::new(0.01, 1.0, 100_000, 1.0).unwrap();
        let err = solve(&big, 1_000, &RviSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("lower the buffer K or the crawler count N"),
            "{err}"
        );
        let tight = RviSettings {
            max_iterations: 3,
            ..RviSettings::default()
        };
        let err = solve(&model, 10, &tight).unwrap_err().to_string();
        assert!(err.contains("did not converge"), "{err}");
    }

    #[test]
    #[ignore = "benchmark: run with --release -- --ignored --nocapture"]
    fn benchmark_largest_table_row() {
        // Table 1.3's λ = 0.01, K = 15, γ = 2.4 row: the largest state space of the chapter.
        let model = QueueModel::new(0.01, 1.0, 15, 2.4).unwrap();
        let start = std::time::Instant::now();
        let plan = solve_unrestricted(&model, &RviSettings::default()).unwrap();
        println!(
            "unrestricted: {:?} for cap {} ({} states), {} iterations, cost {:.5}",
            start.elapsed(),
            plan.available_crawlers,
            3 * 16 * (plan.available_crawlers + 1),
            plan.iterations,
            plan.cost
        );
        let start = std::time::Instant::now();
        let plan = solve(&model, 107, &RviSettings::default()).unwrap();
        println!(
            "Table 1.2 (N = 107): {:?}, {} iterations, cost {:.5}",
            start.elapsed(),
            plan.iterations,
            plan.cost
        );
    }
}
