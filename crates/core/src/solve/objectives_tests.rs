//! Every objective's optimum against an independent method: Azar Algorithm 1 (binary-discrete),
//! nested bisection on the first-order condition and the Frontera document's method (binary-fixed),
//! closed forms and sort-based water-filling (proportional policies), box KKT and brute force
//! (BLC-eps floors); plus rounds on web-like instances and a property test over [1e-9, 1e9].

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};

use super::pages::PagesBuilder;
use super::problem::Problem;
use super::tests::{assert_kkt_and_caps as assert_kkt, instance, run, Instance};
use super::{frontera, kkt, reference, solve, Solution, SolveError};
use crate::objective::{discrete, Objective, Page, Response};
use crate::reduce::Alone;
use crate::units::PerDay;

/// Sum of the pages' own costs (the objective each family minimises).
fn objective_cost(problem: &Problem, rates: &[f64]) -> f64 {
    (0..problem.pages().len())
        .map(|i| problem.response(i).cost(problem.page(i), rates[i]))
        .sum()
}

#[test]
fn binary_discrete_without_caps_equals_azar_algorithm_1() {
    let mut worst = (0.0f64, 0.0f64);
    for seed in 0..20 {
        // load 0.02 with 2000 pages: R = 40 fetches per day, so lambda * slot reaches 0.18
        let inst = instance(
            seed,
            2000,
            50,
            Objective::BinaryDiscrete,
            0.0,
            f64::INFINITY,
            0.02,
        );
        let sol = run(&inst);
        let a = inst.problem();
        let slot = a.slot_days();
        let (delta, keep): (Vec<f64>, Vec<f64>) = inst
            .pages
            .change_rate()
            .iter()
            .map(|&l| discrete::slot_change(l, slot))
            .unzip();
        let p = reference::azar_problem1(inst.pages.importance(), &delta);
        let reference: Vec<f64> = p.iter().map(|p| p / slot).collect();
        for i in 0..inst.pages.len() {
            // the rate's rounding is relative to rho + L, L = Delta/((1-Delta) slot) (cf. tests.rs)
            let scale = reference[i] + delta[i] / keep[i] / slot;
            let err = (sol.rates[i] - reference[i]).abs() / scale;
            worst.0 = worst.0.max(err);
            assert!(
                err <= 1e-10,
                "seed {seed} page {i}: {} vs {}",
                sol.rates[i],
                reference[i]
            );
        }
        let (ours, theirs) = (
            objective_cost(&a, &sol.rates),
            objective_cost(&a, &reference),
        );
        worst.1 = worst.1.max(((ours - theirs) / theirs).abs());
        assert!(
            ((ours - theirs) / theirs).abs() <= 1e-12,
            "seed {seed}: cost {ours} vs {theirs}"
        );
        assert_kkt(&inst, &sol);
        assert!(sol.rounds <= 8, "seed {seed}: {} rounds", sol.rounds);
    }
    eprintln!(
        "binary-discrete vs Azar Algorithm 1: max rate error {:.2e} of rho + L, max cost difference {:.2e}",
        worst.0, worst.1
    );
}

#[test]
fn binary_fixed_without_caps_equals_nested_bisection() {
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for seed in 0..6 {
        let inst = instance(
            seed,
            300,
            10,
            Objective::BinaryFixed,
            0.0,
            f64::INFINITY,
            0.2,
        );
        let sol = run(&inst);
        let a = inst.problem();
        let (reference, nu) = reference::fixed_interval_bisection(
            inst.pages.importance(),
            inst.pages.change_rate(),
            inst.bandwidth,
        );
        assert!(
            ((sol.multiplier - nu) / nu).abs() <= 1e-10,
            "seed {seed}: nu {} vs {nu}",
            sol.multiplier
        );
        worst.0 = worst.0.max(((sol.multiplier - nu) / nu).abs());
        for i in 0..inst.pages.len() {
            // near the cut-off theta = mu/lambda the rate is infinitely sensitive to the price (it
            // leaves 0 with infinite slope), so the error is measured against rho + lambda
            let err =
                (sol.rates[i] - reference[i]).abs() / (reference[i] + inst.pages.change_rate()[i]);
            worst.1 = worst.1.max(err);
            assert!(
                err <= 1e-10,
                "seed {seed} page {i}: {} vs {}",
                sol.rates[i],
                reference[i]
            );
        }
        let (ours, theirs) = (
            objective_cost(&a, &sol.rates),
            objective_cost(&a, &reference),
        );
        worst.2 = worst.2.max(((ours - theirs) / theirs).abs());
        assert!(
            ((ours - theirs) / theirs).abs() <= 1e-10,
            "seed {seed}: cost {ours} vs {theirs}"
        );
        assert_kkt(&inst, &sol);
    }
    eprintln!(
        "binary-fixed vs nested bisection: nu {:.2e}, max rate error {:.2e} of rho + lambda, cost {:.2e}",
        worst.0, worst.1, worst.2
    );
}

#[test]
fn binary_fixed_beats_the_frontera_documents_method() {
    // Frontera's setting: values w in (0, 1], mu = w lambda (--value-per-change).
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let n = 1000;
    let values: Vec<f64> = (0..n).map(|_| rng.random_range(0.001..1.0)).collect();
    let lambda: Vec<f64> = (0..n)
        .map(|_| LogNormal::new(0.3f64.ln(), 1.2).unwrap().sample(&mut rng))
        .collect();
    let exact_at = |bandwidth: f64| -> Vec<f64> {
        let mut b = PagesBuilder::new();
        b.push_host(
            PerDay(f64::INFINITY),
            (0..n).map(|i| (values[i] * lambda[i], lambda[i], false)),
        );
        let pages = b.build().unwrap();
        let problem = Problem::new(&pages, Objective::BinaryFixed, bandwidth).unwrap();
        solve(&problem, &mut Alone, |_, _, _| {}).unwrap().rates
    };
    let bandwidth = 0.2 * n as f64;
    let exact = exact_at(bandwidth);
    let t_exact = frontera::value(&values, &lambda, &exact);
    for clusters in [0, 100, 10] {
        let (rates, _) = frontera::solve(&values, &lambda, bandwidth, clusters, 100_000);
        let used: f64 = rates.iter().sum();
        let t_doc = frontera::value(&values, &lambda, &rates);
        // the same rates scaled to spend exactly the bandwidth (the document does not ensure it)
        let scaled: Vec<f64> = rates.iter().map(|r| r * bandwidth / used).collect();
        let t_scaled = frontera::value(&values, &lambda, &scaled);
        assert!(t_scaled <= t_exact * (1.0 + 1e-12));
        eprintln!(
            "Frontera K={clusters} scaled to the bandwidth: value {t_scaled:.12}, revisit {t_exact:.12}: relative loss {:.3e}",
            (t_exact - t_scaled) / t_exact
        );
        // a fair comparison spends what the document's rates spend
        let t_exact_same = frontera::value(&values, &lambda, &exact_at(used));
        eprintln!(
            "Frontera K={clusters}: value {t_doc:.12} using {used:.9} of {bandwidth}; revisit {t_exact:.12} at the bandwidth, \
             {t_exact_same:.12} at the same spend: relative loss {:.3e}",
            (t_exact_same - t_doc) / t_exact_same
        );
        assert!(
            t_doc <= t_exact_same * (1.0 + 1e-12),
            "the document's method cannot beat the optimum"
        );
    }
}

/// The closed form R w / sum w and the sort-based water-filling for the proportional policies.
#[test]
fn proportional_policies_equal_their_closed_forms() {
    let weight_of = |objective: Objective, inst: &Instance, i: usize| match objective {
        Objective::Uniform => 1.0,
        Objective::ChangeRate => inst.pages.change_rate()[i],
        _ => inst.pages.importance()[i],
    };
    let mut worst = 0.0f64;
    for objective in [
        Objective::HarmonicApprox,
        Objective::Uniform,
        Objective::ChangeRate,
        Objective::Importance,
    ] {
        for seed in 0..5 {
            // without caps: R w / sum w
            let inst = instance(seed, 2000, 50, objective, 0.0, f64::INFINITY, 0.2);
            let sol = run(&inst);
            let n = inst.pages.len();
            let total: f64 = (0..n).map(|i| weight_of(objective, &inst, i)).sum();
            for i in 0..n {
                let want = inst.bandwidth * weight_of(objective, &inst, i) / total;
                let err = ((sol.rates[i] - want) / want).abs();
                worst = worst.max(err);
                assert!(
                    err <= 1e-10,
                    "{objective:?} seed {seed} page {i}: {} vs {want}",
                    sol.rates[i]
                );
            }
            assert_kkt(&inst, &sol);
            assert!(sol.rounds <= 3, "{objective:?}: {} rounds", sol.rounds);
            // with binding caps: water-filling
            let inst = instance(seed, 2000, 50, objective, 0.0, 0.8, 0.2);
            let sol = run(&inst);
            assert!(
                sol.hosts.iter().any(|h| h.capped),
                "{objective:?} seed {seed}: caps should bind"
            );
            let want =
                reference::water_filling(&inst.problem(), |i| weight_of(objective, &inst, i));
            for i in 0..inst.pages.len() {
                let err = ((sol.rates[i] - want[i]) / want[i]).abs();
                worst = worst.max(err);
                assert!(
                    err <= 1e-10,
                    "{objective:?} seed {seed} page {i}: {} vs {}",
                    sol.rates[i],
                    want[i]
                );
            }
            assert_kkt(&inst, &sol);
        }
    }
    eprintln!(
        "proportional policies vs closed form / water-filling: max relative error {worst:.2e}"
    );
}

#[test]
fn harmonic_approx_with_complete_pages_and_caps_equals_brute_force() {
    let mut worst = 0.0f64;
    for seed in 0..6 {
        let inst = instance(seed, 1500, 40, Objective::HarmonicApprox, 0.2, 1.0, 0.3);
        let sol = run(&inst);
        assert_kkt(&inst, &sol);
        let (rates, _, nu) = reference::bisection(&inst.problem());
        assert!(
            (sol.multiplier - nu).abs() <= 1e-10 * nu,
            "seed {seed}: {} vs {nu}",
            sol.multiplier
        );
        for i in 0..rates.len() {
            let err = ((sol.rates[i] - rates[i]) / rates[i]).abs();
            worst = worst.max(err);
            assert!(err < 1e-10, "seed {seed} page {i}");
        }
    }
    eprintln!("harmonic-approx (mixed, capped) vs brute force: max relative error {worst:.2e}");
}

#[test]
fn floors_are_box_constraints_solved_exactly() {
    let mut worst = 0.0f64;
    for (seed, objective) in (0..12).map(|s| {
        (
            s,
            [
                Objective::Binary,
                Objective::BinaryFixed,
                Objective::Harmonic,
            ][s as usize % 3],
        )
    }) {
        let mut inst = instance(seed, 1500, 40, objective, 0.0, 1.0, 0.3);
        inst.floor = 0.4;
        let floor = 0.4 * inst.bandwidth / inst.pages.len() as f64;
        let sol = run(&inst);
        assert_kkt(&inst, &sol);
        let at_floor = (0..inst.pages.len())
            .filter(|&i| sol.rates[i] <= floor * (1.0 + 1e-12))
            .count();
        assert!(
            at_floor > 0,
            "seed {seed}: some page should sit on its floor"
        );
        let (rates, _, nu) = reference::bisection(&inst.problem());
        assert!(
            (sol.multiplier - nu).abs() <= 1e-10 * nu,
            "seed {seed}: {} vs {nu}",
            sol.multiplier
        );
        for i in 0..rates.len() {
            let err = (sol.rates[i] - rates[i]).abs() / (rates[i] + inst.pages.change_rate()[i]);
            worst = worst.max(err);
            assert!(
                err < 1e-10,
                "{objective:?} seed {seed} page {i}: {} vs {}",
                sol.rates[i],
                rates[i]
            );
        }
    }
    eprintln!("floors vs brute force (box): max rate error {worst:.2e} of rho + lambda");
}

#[test]
fn floors_too_large_for_a_cap_are_scaled_to_fit() {
    // one host of 100 pages capped at 10 per day, floors of 1 per day (eps R / pages = 0.5 x 400 /
    // 200): each page of the capped host gets ~0.1
    let mut b = PagesBuilder::new();
    b.push_host(PerDay(10.0), (0..100).map(|i| (1.0 + i as f64, 0.5, false)));
    b.push_host(
        PerDay(f64::INFINITY),
        (0..100).map(|i| (1.0 + i as f64, 0.5, false)),
    );
    let inst = Instance {
        pages: b.build().unwrap(),
        objective: Objective::Binary,
        bandwidth: 400.0,
        floor: 0.5,
    };
    let sol = run(&inst);
    assert_kkt(&inst, &sol);
    assert!(sol.hosts.get(0).capped);
    assert!(
        (sol.budgets[0] - 10.0).abs() <= 1e-9 * 10.0,
        "{}",
        sol.budgets[0]
    );
    assert!(sol.rates[..100].iter().all(|&r| r >= 0.1 * (1.0 - 1e-9)));
    assert!(sol.rates[100..].iter().all(|&r| r >= 1.0));
}

#[test]
fn floors_that_take_the_whole_bandwidth_are_refused() {
    let mut b = PagesBuilder::new();
    b.push_host(PerDay(f64::INFINITY), (0..10).map(|_| (1.0, 0.5, false)));
    let pages = b.build().unwrap();
    let problem = Problem::new(&pages, Objective::Binary, 5.0).unwrap();
    for eps in [1.0, 2.0, -0.1, f64::NAN] {
        assert!(problem.clone().with_floor(eps, 10).is_err(), "eps {eps}");
    }
}

#[test]
fn exact_floors_versus_the_papers_one_pass_blc_eps() {
    // The paper re-solves BLC once over the pages above the floor; the exact box solution is the
    // optimum over rates that respect every floor. Where the one pass keeps every floor, the exact
    // solution costs no more; where it does not, the one pass breaks the guarantee it is for.
    let (mut broken, mut worse) = (0, 0);
    for seed in 0..10 {
        let mut inst = instance(seed, 2000, 1, Objective::Binary, 0.0, f64::INFINITY, 0.2);
        let (eps, n) = (0.4, inst.pages.len() as f64);
        let floor = eps * inst.bandwidth / n;
        inst.floor = eps;
        let sol = run(&inst);
        assert_kkt(&inst, &sol);
        let a = inst.problem();
        let paper = reference::blc_eps_one_pass(
            inst.pages.importance(),
            inst.pages.change_rate(),
            inst.bandwidth,
            eps,
        );
        let below = paper.iter().filter(|&&r| r < floor * (1.0 - 1e-12)).count();
        let (ours, theirs) = (objective_cost(&a, &sol.rates), objective_cost(&a, &paper));
        if below > 0 {
            broken += 1;
        } else {
            assert!(
                ours <= theirs * (1.0 + 1e-12),
                "seed {seed}: {ours} vs {theirs}"
            );
            worse += (ours < theirs * (1.0 - 1e-12)) as u32;
        }
        eprintln!("BLC-eps seed {seed}: exact J_b {ours:.9}, one pass {theirs:.9}, one-pass pages under the floor {below}");
    }
    eprintln!("one pass broke the floor in {broken} of 10 runs; cost strictly above the exact box optimum in {worse}");
}

#[test]
fn rounds_stay_few_for_every_objective_on_web_like_instances() {
    let mut report = Vec::new();
    for objective in Objective::ALL {
        for floor in [0.0, 0.4] {
            let mut worst = 0;
            for seed in 0..5 {
                let mut inst = instance(seed, 20_000, 300, objective, 0.04, 3.0, 0.2);
                inst.floor = floor;
                let sol = run(&inst);
                assert_kkt(&inst, &sol);
                worst = worst.max(sol.rounds);
            }
            report.push(format!(
                "{}{}: {worst}",
                objective.name(),
                if floor > 0.0 { " --floor 0.4" } else { "" }
            ));
            assert!(worst <= 12, "{objective:?} floor {floor}: {worst} rounds");
        }
    }
    eprintln!(
        "worst rounds over 5 web-like instances: {}",
        report.join(", ")
    );
}

/// Whether a violated sum (total spend, or a capped host's spend) is bracketed by the spends at the
/// neighbouring f64 prices: the target then lies in a jump of spend between two adjacent prices.
fn unresolvable_in_f64(problem: &Problem, sol: &Solution, violation: &str) -> bool {
    let bandwidth = problem.bandwidth();
    let down = |p: f64| f64::from_bits(p.to_bits() - 1);
    let up = |p: f64| f64::from_bits(p.to_bits() + 1);
    if violation.starts_with("total spend") {
        let nu = sol.multiplier;
        let spend = |p: f64| -> f64 { super::spend::spend_partial(problem, p).right.value() };
        if nu > 0.0 && spend(down(nu)) >= bandwidth && spend(up(nu)) <= bandwidth {
            return true;
        }
        // or capped hosts that cannot reach their caps in f64 account for the shortfall
        let shortfall: f64 = (0..problem.hosts())
            .filter(|&h| {
                sol.hosts.get(h).capped
                    && super::demand::demand(problem, h, down(sol.hosts.get(h).price)).right
                        >= problem.cap(h)
            })
            .map(|h| problem.cap(h) - sol.budgets[h])
            .sum();
        let total: f64 = sol.rates.iter().sum();
        return shortfall > 0.0
            && (bandwidth - total).abs() <= shortfall * (1.0 + 1e-9) + 1e-12 * bandwidth;
    }
    if let Some(rest) = violation.strip_prefix("host ") {
        if let Some(h) = rest.split(':').next().and_then(|h| h.parse::<usize>().ok()) {
            let theta = sol.hosts.get(h).price;
            let demand = |p: f64| super::demand::demand(problem, h, p).right;
            return violation.contains("under its cap") && demand(down(theta)) >= problem.cap(h);
        }
    }
    false
}

fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo.log10()..hi.log10()).prop_map(|e| 10f64.powf(e))
}

proptest! {
    // A fixed seed: CI sees the same cases every run; REVISIT_PROPTEST_SEED=N explores others.
    // KNOWN GAP: seeds 5-8 find binary instances with one page of lambda ~1e9 against a bandwidth
    // of ~0.04: that page's rate jumps by far more than the tolerance between adjacent f64 prices, the
    // search ends at MAX_ROUNDS and the total misses R. (Before the round cap it never ended.) The fix
    // is to split spend between the two adjacent prices as steps are split; see the closing note.
    #![proptest_config(ProptestConfig {
        cases: 2000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            std::env::var("REVISIT_PROPTEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_2026),
        ),
        ..ProptestConfig::default()
    })]

    /// Every response is finite, inside its box, non-increasing, and meets its own KKT conditions for
    /// mu, lambda in [1e-9, 1e9], over prices from far below to far above the interesting range.
    #[test]
    fn every_response_is_finite_and_meets_kkt(
        mu in log_uniform(1e-9, 1e9),
        lambda in log_uniform(1e-9, 1e9),
        slot_days in log_uniform(1e-9, 1e3),
        ratio in log_uniform(1e-30, 1e3),
        which in 0..Response::ALL.len(),
    ) {
        let response = Response::ALL[which];
        let page = Page { importance: mu, change_rate: lambda, slot_days };
        // prices around each family's cut-off mu/lambda (and mu slot for the discrete steps)
        let theta = ratio * if response == Response::BinaryDiscrete { mu * slot_days } else { mu / lambda };
        let (r, left, hi) = (response.rate(page, theta), response.rate_left(page, theta), response.upper(page));
        prop_assert!(r.is_finite() && r >= 0.0 && r <= hi, "{response:?} rate {r} box [0, {hi}]");
        prop_assert!(left.is_finite() && left >= r);
        let slope = response.slope(page, theta, r);
        prop_assert!(slope.is_finite() && slope <= 0.0, "{response:?} slope {slope}");
        prop_assert!(response.rate(page, theta * 1.001) <= r);
        let cost = response.cost(page, r);
        prop_assert!(cost.is_finite() || (r == 0.0 && cost == f64::INFINITY), "{response:?} cost {cost}");
        let marginal = response.marginal(page, r);
        let tol = 1e-9;
        if r == 0.0 {
            prop_assert!(response.marginal(page, 0.0) <= theta * (1.0 + tol), "{response:?} starved below its price");
        } else if r >= hi * (1.0 - 1e-15) {
            prop_assert!(marginal >= theta * (1.0 - tol), "{response:?} at its bound {hi} with marginal {marginal} < {theta}");
        } else {
            prop_assert!(((marginal - theta) / theta).abs() <= tol, "{response:?} rate {r}: marginal {marginal} vs price {theta}");
        }
    }

    /// Whole solves on small random instances spanning [1e-9, 1e9]: every objective, with and without
    /// caps and floors, ends with rates that meet the KKT conditions.
    #[test]
    fn every_objective_solves_to_kkt_over_the_range(
        pages in prop::collection::vec((log_uniform(1e-9, 1e9), log_uniform(1e-9, 1e9), 0..4usize, any::<bool>()), 1..25),
        which in 0..Objective::ALL.len(),
        caps in prop::collection::vec(prop::option::of(log_uniform(1e-3, 1e6)), 4),
        load in log_uniform(1e-3, 1e3),
        floor in prop::sample::select(vec![0.0, 0.3]),
    ) {
        let objective = Objective::ALL[which];
        let mut b = PagesBuilder::new();
        for (h, cap) in caps.iter().enumerate() {
            let members: Vec<(f64, f64, bool)> = pages.iter().filter(|p| p.2 == h).map(|&(mu, lambda, _, complete)| (mu, lambda, complete)).collect();
            if !members.is_empty() {
                b.push_host(PerDay(cap.unwrap_or(f64::INFINITY)), members);
            }
        }
        let built = b.build().unwrap();
        let bandwidth = load * pages.len() as f64;
        let problem = Problem::new(&built, objective, bandwidth).unwrap().with_floor(floor, built.len() as u64).unwrap();
        let sol = solve(&problem, &mut Alone, |_, _, _| {}).unwrap();
        prop_assert!(sol.rates.iter().all(|r| r.is_finite()));
        let prices: Vec<f64> = sol.hosts.iter().map(|h| h.price).collect();
        let bad = kkt::violations(&problem, &sol.rates, &prices, sol.multiplier);
        // Every page meets its KKT condition exactly; a sum may miss its target only where no f64 price
        // does better (one page's rate moving by more than the tolerance between adjacent prices).
        let bad: Vec<&String> = bad.iter().filter(|v| !unresolvable_in_f64(&problem, &sol, v)).collect();
        prop_assert!(bad.is_empty(), "{objective:?}: {:?}", &bad[..bad.len().min(3)]);
    }
}

/// Refetch-interval bounds are box constraints: the solve meets the KKT conditions with the boxes
/// active and equals the brute force, with the problem's bounds and the pages' own, for the smooth
/// objectives; some pages sit at each bound.
#[test]
fn interval_bounds_are_boxes_solved_exactly() {
    let mut worst = 0.0f64;
    for (seed, objective) in (0..9).map(|s| {
        (
            s,
            [
                Objective::Harmonic,
                Objective::Binary,
                Objective::BinaryFixed,
            ][s as usize % 3],
        )
    }) {
        // complete observations only with the harmonic objective: elsewhere they are steps, whose
        // tie split the brute force does not make
        let complete = if objective == Objective::Harmonic {
            0.05
        } else {
            0.0
        };
        let inst = instance(seed, 1500, 40, objective, complete, 1.0, 0.3);
        // a visit at least every 20 days, at most once a day; a few pages with their own bounds
        let n = inst.pages.len();
        let own_min: Vec<f64> = (0..n)
            .map(|i| if i % 50 == 0 { 0.5 } else { f64::NAN })
            .collect();
        let own_max: Vec<f64> = (0..n)
            .map(|i| if i % 70 == 1 { 0.02 } else { f64::NAN })
            .collect();
        let pages = inst
            .pages
            .clone()
            .with_rate_bounds(own_min, own_max)
            .unwrap();
        let problem = Problem::new(&pages, objective, inst.bandwidth)
            .unwrap()
            .with_rate_bounds(0.05, 1.0)
            .unwrap();
        let sol = solve(&problem, &mut Alone, |_, _, _| {}).unwrap();
        let prices: Vec<f64> = sol.hosts.iter().map(|h| h.price).collect();
        let bad = kkt::violations(&problem, &sol.rates, &prices, sol.multiplier);
        assert!(
            bad.is_empty(),
            "{objective:?} seed {seed}: {:?}",
            &bad[..bad.len().min(3)]
        );
        let (mut at_least, mut at_most) = (0, 0);
        for h in 0..problem.hosts() {
            for i in problem.host_pages(h) {
                let b = problem.interval_bound(h, i, sol.rates[i]);
                at_least += b.at_max_interval as u32;
                at_most += b.at_min_interval as u32;
            }
        }
        assert!(
            at_least > 0 && at_most > 0,
            "{objective:?} seed {seed}: {at_least} {at_most}"
        );
        let (rates, _, nu) = reference::bisection(&problem);
        assert!(
            (sol.multiplier - nu).abs() <= 1e-10 * nu,
            "{objective:?} seed {seed}: {} vs {nu}",
            sol.multiplier
        );
        for i in 0..n {
            let err = (sol.rates[i] - rates[i]).abs() / (rates[i] + pages.change_rate()[i]);
            worst = worst.max(err);
            assert!(err < 1e-10, "{objective:?} seed {seed} page {i}");
        }
    }
    eprintln!("interval bounds vs brute force: max rate error {worst:.2e} of rho + lambda");
}

/// Max intervals that need more than the bandwidth are refused, with what they need.
#[test]
fn max_intervals_beyond_the_bandwidth_are_refused() {
    let mut b = PagesBuilder::new();
    b.push_host(PerDay(f64::INFINITY), (0..10).map(|_| (1.0, 0.5, false)));
    let pages = b.build().unwrap();
    // ten pages at least once a day each need 10 fetches a day; the bandwidth is 5
    let problem = Problem::new(&pages, Objective::Harmonic, 5.0)
        .unwrap()
        .with_rate_bounds(1.0, f64::INFINITY)
        .unwrap();
    match solve(&problem, &mut Alone, |_, _, _| {}) {
        Err(SolveError::Infeasible { needed, bandwidth }) => {
            assert_eq!((needed, bandwidth), (10.0, 5.0))
        }
        other => panic!("{other:?}"),
    }
}
