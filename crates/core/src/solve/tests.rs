//! The solver against independent methods: the papers' sort-based algorithm, brute-force bisection,
//! and the KKT conditions, on random instances.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Pareto};

use super::pages::{Pages, PagesBuilder};
use super::problem::Problem;
use super::{kkt, reference, solve, Solution};
use crate::objective::Objective;
use crate::reduce::Alone;
use crate::units::PerDay;

pub(super) struct Instance {
    pub(super) pages: Pages,
    pub(super) objective: Objective,
    pub(super) bandwidth: f64,
    /// BLC-eps's eps (0: no floors).
    pub(super) floor: f64,
}

impl Instance {
    /// The instance's problem: its objective, bandwidth and floors, polite.
    pub(super) fn problem(&self) -> Problem<'_> {
        Problem::new(&self.pages, self.objective, self.bandwidth)
            .and_then(|p| p.with_floor(self.floor, self.pages.len() as u64))
            .unwrap()
    }
}

/// Random pages on random hosts; `cap_scale` sets caps relative to an even share of the bandwidth
/// (infinite for no caps), `complete` is the share of complete-observation pages.
pub(super) fn instance(
    seed: u64,
    pages: usize,
    hosts: usize,
    objective: Objective,
    complete: f64,
    cap_scale: f64,
    load: f64,
) -> Instance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mu_dist = Pareto::new(1.0, 1.3).unwrap();
    let lambda_dist = LogNormal::new(0.3f64.ln(), 1.2).unwrap();
    let mut per_host: Vec<Vec<(f64, f64, bool)>> = vec![Vec::new(); hosts];
    for _ in 0..pages {
        let h = rng.random_range(0..hosts);
        let mu = mu_dist.sample(&mut rng);
        let lambda = lambda_dist.sample(&mut rng).clamp(5e-4, 7.0);
        per_host[h].push((mu, lambda, rng.random_bool(complete)));
    }
    let bandwidth = load * pages as f64;
    let mut b = PagesBuilder::new();
    for pages in per_host {
        let cap = cap_scale * bandwidth / hosts as f64 * rng.random_range(0.2..2.0);
        b.push_host(PerDay(cap), pages);
    }
    Instance {
        pages: b.build().unwrap(),
        objective,
        bandwidth,
        floor: 0.0,
    }
}

pub(super) fn run(inst: &Instance) -> Solution {
    solve(&inst.problem(), &mut Alone, |_, _, _| {}).unwrap()
}

fn host_prices(sol: &Solution) -> Vec<f64> {
    sol.hosts.iter().map(|h| h.price).collect()
}

/// The KKT conditions (which include the bandwidth) and the caps.
pub(super) fn assert_kkt_and_caps(inst: &Instance, sol: &Solution) {
    let bad = kkt::violations(
        &inst.problem(),
        &sol.rates,
        &host_prices(sol),
        sol.multiplier,
    );
    assert!(
        bad.is_empty(),
        "{} KKT violations, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    for (h, budget) in sol.budgets.iter().enumerate() {
        assert!(
            *budget <= inst.pages.cap(h) * (1.0 + 1e-9),
            "host {h} over its cap"
        );
    }
}

/// [`assert_kkt_and_caps`], and the bandwidth met to 1e-12 by the rates and by the reported total.
fn assert_kkt(inst: &Instance, sol: &Solution) {
    assert_kkt_and_caps(inst, sol);
    let total: f64 = sol.rates.iter().sum();
    if sol.multiplier > 0.0 {
        assert!(
            ((total - inst.bandwidth) / inst.bandwidth).abs() <= 1e-12,
            "{total} vs {}",
            inst.bandwidth
        );
        assert!(((sol.bandwidth_used - inst.bandwidth) / inst.bandwidth).abs() <= 1e-12);
    }
}

#[test]
fn binary_without_caps_equals_azar_algorithm_2() {
    for seed in 0..20 {
        let inst = instance(seed, 2000, 50, Objective::Binary, 0.0, f64::INFINITY, 0.2);
        let sol = run(&inst);
        let reference = reference::azar_problem2(
            inst.pages.importance(),
            inst.pages.change_rate(),
            inst.bandwidth,
        );
        for i in 0..inst.pages.len() {
            // rho = sqrt(mu lambda / theta) - lambda: the error of the square root is relative to
            // rho + lambda, and that is how much a rate can be trusted in any f64 computation.
            let scale = reference[i] + inst.pages.change_rate()[i];
            assert!(
                (sol.rates[i] - reference[i]).abs() <= 1e-12 * scale,
                "seed {seed} page {i}: {} vs {}",
                sol.rates[i],
                reference[i]
            );
        }
        assert_kkt(&inst, &sol);
        assert!(sol.rounds <= 8, "seed {seed}: {} rounds", sol.rounds);
    }
}

#[test]
fn harmonic_without_caps_equals_the_closed_form() {
    // Without caps and with incomplete observations only, rho_i(nu) is Prop. 2's closed form and nu is
    // pinned by sum = R; the brute-force bisection finds nu independently.
    for seed in 0..20 {
        let inst = instance(seed, 2000, 50, Objective::Harmonic, 0.0, f64::INFINITY, 0.2);
        let sol = run(&inst);
        let (rates, _, nu) = reference::bisection(&inst.problem());
        assert!(
            ((sol.multiplier - nu) / nu).abs() < 1e-12,
            "{} vs {nu}",
            sol.multiplier
        );
        for i in 0..rates.len() {
            assert!(((sol.rates[i] - rates[i]) / rates[i]).abs() < 1e-12);
        }
        assert_kkt(&inst, &sol);
        assert!(sol.rounds <= 8, "seed {seed}: {} rounds", sol.rounds);
    }
}

#[test]
fn mixed_observability_with_caps_equals_brute_force() {
    for (seed, objective) in (0..30).map(|s| {
        (
            s,
            if s % 2 == 0 {
                Objective::Harmonic
            } else {
                Objective::Binary
            },
        )
    }) {
        let inst = instance(seed, 1500, 40, objective, 0.1, 1.0, 0.3);
        let sol = run(&inst);
        assert_kkt(&inst, &sol);
        let capped = sol.hosts.iter().filter(|h| h.capped).count();
        assert!(
            capped > 0,
            "seed {seed}: the instance should have binding caps"
        );
        if objective == Objective::Harmonic {
            // continuous responses: the brute force is unique and comparable page by page
            let (rates, _, nu) = reference::bisection(&inst.problem());
            assert!(
                (sol.multiplier - nu).abs() <= 1e-10 * nu,
                "seed {seed}: {} vs {nu}",
                sol.multiplier
            );
            for i in 0..rates.len() {
                let scale = rates[i].max(1e-300);
                assert!(
                    ((sol.rates[i] - rates[i]) / scale).abs() < 1e-10,
                    "seed {seed} page {i}"
                );
            }
        }
    }
}

#[test]
fn caps_binding_on_most_hosts() {
    for seed in 0..10 {
        let inst = instance(seed, 3000, 100, Objective::Harmonic, 0.04, 0.3, 0.5);
        let sol = run(&inst);
        let capped = sol.hosts.iter().filter(|h| h.capped).count();
        assert!(capped * 2 > inst.pages.hosts(), "only {capped} capped");
        assert_kkt(&inst, &sol);
    }
}

#[test]
fn caps_below_the_bandwidth_leave_the_rest_unused() {
    // Caps total 0.05 x bandwidth: nu = 0, every host at its cap, the rest reported unusable.
    let inst = instance(3, 2000, 50, Objective::Harmonic, 0.0, 0.05, 0.5);
    let sol = run(&inst);
    assert_eq!(sol.multiplier, 0.0);
    let caps: f64 = (0..inst.pages.hosts()).map(|h| inst.pages.cap(h)).sum();
    assert!(((sol.bandwidth_used - caps) / caps).abs() < 1e-12);
    assert!(sol.bandwidth_used < inst.bandwidth);
    assert_kkt(&inst, &sol);
}

#[test]
fn all_complete_binary_is_a_fractional_knapsack() {
    // Only step responses: the optimum takes pages by decreasing mu/lambda until R is spent, one
    // page (or a tie) fractionally (NeurIPS'19 eq. 13 as a linear programme).
    for seed in 0..10 {
        let inst = instance(seed, 500, 1, Objective::Binary, 1.0, f64::INFINITY, 0.1);
        let sol = run(&inst);
        let (mu, lambda) = (inst.pages.importance(), inst.pages.change_rate());
        let mut order: Vec<usize> = (0..inst.pages.len()).collect();
        order.sort_by(|&x, &y| (mu[y] / lambda[y]).total_cmp(&(mu[x] / lambda[x])));
        let mut left = inst.bandwidth;
        let mut want = vec![0.0; inst.pages.len()];
        for i in order {
            want[i] = lambda[i].min(left);
            left -= want[i];
        }
        for i in 0..inst.pages.len() {
            assert!(
                (sol.rates[i] - want[i]).abs() <= 1e-12 * inst.bandwidth,
                "seed {seed} page {i}: {} vs {}",
                sol.rates[i],
                want[i]
            );
        }
        assert_kkt(&inst, &sol);
    }
}

#[test]
fn rounds_stay_few_on_web_like_instances() {
    let mut worst = 0;
    for seed in 0..10 {
        for objective in [Objective::Harmonic, Objective::Binary] {
            let inst = instance(seed, 20_000, 300, objective, 0.04, 3.0, 0.2);
            let mut trace = Vec::new();
            let sol = solve(&inst.problem(), &mut Alone, |r, p, gap| {
                trace.push((r, p, gap))
            })
            .unwrap();
            assert_kkt(&inst, &sol);
            if sol.rounds > 8 {
                eprintln!("{objective:?} seed {seed}: {trace:?}");
            }
            worst = worst.max(sol.rounds);
        }
    }
    assert!(worst <= 8, "worst case {worst} rounds");
}

#[test]
fn the_first_price_spends_within_a_percent_of_the_bandwidth() {
    // The sketch's guess against the spend the pages really take there (each page's own
    // response, summed exactly): within 1%, where the moments' power law alone was 40-50% off.
    // Caps lifted: the guess knows nothing of them.
    for seed in 0..4 {
        for complete in [0.0, 0.3, 1.0] {
            for objective in [Objective::Harmonic, Objective::Binary] {
                let inst = instance(seed, 20_000, 300, objective, complete, f64::INFINITY, 0.2);
                let problem = inst.problem();
                let guess = super::spend::prelude(&problem).guess(inst.bandwidth);
                let spent = super::spend::spend_partial(&problem, guess)
                    .observation()
                    .right;
                let gap = spent / inst.bandwidth - 1.0;
                assert!(
                    gap.abs() < 0.01,
                    "{objective:?}, {complete} complete, seed {seed}: guess {guess}, gap {gap}"
                );
            }
        }
    }
}

#[test]
fn a_host_s_demand_is_its_budget_unless_its_cap_binds() {
    // against each host's demand at nu, computed from its pages alone (demand::demand)
    for seed in 0..12 {
        let objective = [Objective::Harmonic, Objective::Binary][seed as usize % 2];
        let inst = instance(seed, 2000, 60, objective, 0.3, 2.0, 0.3);
        let problem = inst.problem();
        let sol = run(&inst);
        let capped = sol.hosts.capped().len();
        assert!(capped > 0 && capped < 60, "seed {seed}: {capped} capped");
        for h in 0..problem.hosts() {
            let d = super::demand::demand(&problem, h, sol.multiplier);
            let at_nu = d.right + sol.fill * (d.left - d.right);
            let price = sol.hosts.get(h);
            let ours = sol.demand(h);
            if price.capped {
                assert_eq!(ours, at_nu, "seed {seed} host {h}");
                assert!(ours > problem.cap(h) && price.price >= sol.multiplier);
            } else {
                assert_eq!(ours, sol.budgets[h], "seed {seed} host {h}");
                assert!(
                    (ours - at_nu).abs() <= 1e-12 * at_nu,
                    "seed {seed} host {h}"
                );
                assert!(ours <= problem.cap(h) && price.price == sol.multiplier);
            }
        }
    }
}

#[test]
fn every_budget_is_its_host_s_rates_summed_in_page_order() {
    // mostly hosts of one page (their stretches take a path of their own), among hosts of two
    // or three pages, hosts of none, and capped hosts
    for seed in 0..8 {
        let objective = [Objective::Harmonic, Objective::Binary][seed as usize % 2];
        let inst = instance(seed, 700, 500, objective, 0.3, 1.5, 0.3);
        let problem = inst.problem();
        let sol = run(&inst);
        let single = (0..problem.hosts())
            .filter(|&h| problem.host_pages(h).len() == 1)
            .count();
        assert!(single > 100, "seed {seed}: {single} hosts of one page");
        assert!(
            !sol.hosts.capped().is_empty(),
            "seed {seed}: no host capped"
        );
        assert_eq!(sol.budgets.len(), problem.hosts());
        for h in 0..problem.hosts() {
            let summed = sol.rates[problem.host_pages(h)]
                .iter()
                .fold(0.0, |sum, &r| sum + r);
            assert_eq!(
                sol.budgets[h].to_bits(),
                summed.to_bits(),
                "seed {seed} host {h}"
            );
        }
    }
}
