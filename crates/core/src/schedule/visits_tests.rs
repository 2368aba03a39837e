//! The threshold solver against the paper's heap greedy, and the properties both rest on.

use proptest::prelude::*;

use super::greedy::{greedy_visits, greedy_visits_for};
use super::visits::*;
use crate::reduce::Alone;
use crate::solve::pages::{Pages, PagesBuilder};
use crate::units::PerDay;
use crate::units::Seconds;

const DAY: Seconds = Seconds(86_400.0);

/// The gains of every visit taken, sorted: equal for two solutions that differ only by which of
/// several equal steps they took ("same counts up to tie permutations").
fn taken_gains(pages: &Pages, counts: &[u32], horizon: Seconds) -> Vec<f64> {
    let mut g: Vec<f64> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &x)| {
            (1..=x).map(move |k| {
                marginal_gain(
                    pages.importance()[i],
                    pages.change_rate()[i],
                    horizon.days(),
                    k,
                )
            })
        })
        .collect();
    g.sort_by(f64::total_cmp);
    g
}

/// Pages of hosts of (importance, change rate) (the visits read caps in visits, not these).
fn arena_of(hosts: &[Vec<(f64, f64)>]) -> Pages {
    let mut b = PagesBuilder::new();
    for pages in hosts {
        b.push_host(
            PerDay(f64::INFINITY),
            pages.iter().map(|&(mu, lambda)| (mu, lambda, false)),
        );
    }
    b.build().unwrap()
}

#[test]
fn gains_decrease_in_the_number_of_visits() {
    // Concavity of k (1 - e^{-c/k}) in k, checked where the two differences are closest.
    for &c in &[1e-4, 0.01, 0.3, 1.0, 7.0, 24.0, 200.0] {
        let mut prev = f64::INFINITY;
        for k in 1..6000u32 {
            let g = marginal_gain(1.0, c, 1.0, k);
            assert!(g > 0.0 && g <= prev, "c={c} k={k}: {g} after {prev}");
            prev = g;
        }
    }
}

#[test]
fn the_first_gain_is_the_freshness_of_one_visit() {
    // One visit per horizon: fresh share (1 - e^-c)/c, by quadrature of e^{-lambda t}.
    let c: f64 = 3.0;
    let n = 100_000;
    let quad: f64 = (0..n)
        .map(|j| (-(c * (j as f64 + 0.5) / n as f64)).exp())
        .sum::<f64>()
        / n as f64;
    assert!((marginal_gain(2.0, c, 1.0, 1) - 2.0 * quad).abs() < 1e-9);
}

fn page_strategy() -> impl Strategy<Value = (f64, f64)> {
    // Few distinct values so that equal gains (ties) are common; lambda 0 pages never gain.
    (
        prop::sample::select(vec![0.5, 1.0, 2.0, 3.7]),
        prop::sample::select(vec![0.0, 0.05, 0.3, 1.0, 4.0, 30.0]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_threshold_solver_equals_the_heap_greedy(
        hosts in prop::collection::vec(prop::collection::vec(page_strategy(), 1..6), 1..6),
        caps in prop::collection::vec(0u32..12, 6),
        budget in 0u64..70,
    ) {
        let arena = arena_of(&hosts);
        let caps = &caps[..arena.hosts()];
        // keys in a different order from the page index, so the tie rule is really exercised
        let keys: Vec<u64> = (0..arena.len() as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let problem = VisitProblem { pages: &arena, caps, keys: &keys, horizon: DAY, objective: VisitObjective::Staleness };
        let v = integer_visits(&problem, budget, &mut Alone);
        let g = greedy_visits(&arena, caps, &keys, DAY, budget);

        // feasibility
        for (h, &cap) in caps.iter().enumerate() {
            let sum: u64 = arena.host_pages(h).map(|i| v.counts[i] as u64).sum();
            prop_assert!(sum <= cap as u64, "host {h} over its cap");
            prop_assert_eq!(sum, v.host_visits[h]);
        }
        let used: u64 = v.counts.iter().map(|&x| x as u64).sum();
        prop_assert_eq!(used, v.used);
        prop_assert_eq!(used, g.iter().map(|&x| x as u64).sum::<u64>(), "budget use differs");
        // optimal: the same gains taken, so the same objective
        prop_assert_eq!(taken_gains(&arena, &v.counts, DAY), taken_gains(&arena, &g, DAY));
        let (sv, sg) = (EvenlySpaced::of(&arena, &v.counts, DAY, VisitObjective::Staleness).mean(), EvenlySpaced::of(&arena, &g, DAY, VisitObjective::Staleness).mean());
        prop_assert!((sv - sg).abs() <= 1e-12, "{sv} vs {sg}");
    }
}

/// Gains taken by `counts` under `objective`, sorted (+inf for the harmonic first visits).
fn taken_gains_for(objective: VisitObjective, pages: &Pages, counts: &[u32]) -> Vec<f64> {
    let mut g: Vec<f64> = (0..pages.len())
        .flat_map(|i| {
            (1..=counts[i]).map(move |k| {
                objective.gain(pages.importance()[i], pages.change_rate()[i], DAY.days(), k)
            })
        })
        .collect();
    g.sort_by(f64::total_cmp);
    g
}

#[test]
fn harmonic_gains_are_infinite_first_then_decrease() {
    for &c in &[1e-6, 0.01, 0.3, 1.0, 4.0, 30.0, 1e3] {
        assert_eq!(harmonic_gain(1.0, c, 1.0, 1), f64::INFINITY);
        let mut last = f64::INFINITY;
        for k in 2..300 {
            let g = harmonic_gain(1.0, c, 1.0, k);
            assert!(
                g.is_finite() && g >= 0.0 && g <= last,
                "c {c} k {k}: {g} after {last}"
            );
            last = g;
        }
    }
    // no change, no gain
    assert_eq!(harmonic_gain(1.0, 0.0, 1.0, 1), 0.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// With a budget that visits every changing page its host lets it, the harmonic integer visits
    /// are the heap greedy's (the first visits, worth +inf, go first; then the finite steps).
    #[test]
    fn harmonic_threshold_solver_equals_the_heap_greedy(
        hosts in prop::collection::vec(prop::collection::vec(page_strategy(), 1..6), 1..6),
        caps in prop::collection::vec(0u32..12, 6),
        extra in 0u64..40,
    ) {
        let arena = arena_of(&hosts);
        let caps = &caps[..arena.hosts()];
        let keys: Vec<u64> = (0..arena.len() as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let forced: u64 = (0..arena.hosts())
            .map(|h| {
                let changing = arena.host_pages(h).filter(|&i| arena.change_rate()[i] > 0.0).count() as u64;
                changing.min(caps[h] as u64)
            })
            .sum();
        let budget = forced + extra;
        let objective = VisitObjective::Harmonic;
        let problem = VisitProblem { pages: &arena, caps, keys: &keys, horizon: DAY, objective };
        let v = integer_visits(&problem, budget, &mut Alone);
        let g = greedy_visits_for(objective, &arena, caps, &keys, DAY, budget);
        for (h, &cap) in caps.iter().enumerate() {
            let sum: u64 = arena.host_pages(h).map(|i| v.counts[i] as u64).sum();
            prop_assert!(sum <= cap as u64, "host {h} over its cap");
        }
        prop_assert_eq!(v.counts.iter().map(|&x| x as u64).sum::<u64>(), g.iter().map(|&x| x as u64).sum::<u64>());
        prop_assert_eq!(taken_gains_for(objective, &arena, &v.counts), taken_gains_for(objective, &arena, &g));
    }
}

#[test]
fn the_threshold_solver_equals_the_heap_greedy_on_a_larger_random_input() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let hosts: Vec<Vec<(f64, f64)>> = (0..40)
        .map(|h| {
            let n = 1 + (200 / (h + 1));
            (0..n)
                .map(|_| (rng.random_range(0.1..5.0), rng.random_range(0.24..24.0)))
                .collect()
        })
        .collect();
    let arena = arena_of(&hosts);
    let caps: Vec<u32> = (0..arena.hosts())
        .map(|h| if h < 5 { 300 } else { 5760 })
        .collect();
    let keys: Vec<u64> = (0..arena.len() as u64).collect();
    for budget in [500u64, 5_000, 20_000] {
        let problem = VisitProblem {
            pages: &arena,
            caps: &caps,
            keys: &keys,
            horizon: DAY,
            objective: VisitObjective::Staleness,
        };
        let v = integer_visits(&problem, budget, &mut Alone);
        let g = greedy_visits(&arena, &caps, &keys, DAY, budget);
        assert_eq!(v.counts, g, "budget {budget}"); // distinct random gains: no ties at all
        assert!(v.rounds < 60, "{} rounds", v.rounds);
        assert_eq!(v.used, budget);
    }
}

#[test]
fn the_weak_politeness_bound_lies_above_the_non_polite_bound() {
    // One big host holds most pages: politeness must cost something, and the two bounds coincide
    // when the caps do not bind.
    let mut hosts = vec![(0..300)
        .map(|i| (1.0, 0.5 + (i % 7) as f64))
        .collect::<Vec<_>>()];
    hosts.extend((0..30).map(|i| vec![(1.0, 1.0 + i as f64 / 10.0)]));
    let arena = arena_of(&hosts);
    let keys: Vec<u64> = (0..arena.len() as u64).collect();
    let polite: Vec<u32> = vec![host_visit_cap(DAY, Seconds(300.0)); arena.hosts()]; // 288 per day
    let free = vec![u32::MAX; arena.hosts()];
    let budget = 2_000;
    let bound = |caps: &[u32]| {
        let p = VisitProblem {
            pages: &arena,
            caps,
            keys: &keys,
            horizon: DAY,
            objective: VisitObjective::Staleness,
        };
        let v = integer_visits(&p, budget, &mut Alone);
        EvenlySpaced::of(&arena, &v.counts, DAY, VisitObjective::Staleness).mean()
    };
    let (wp, np) = (bound(&polite), bound(&free));
    assert!(wp > np * 1.05, "wp {wp} np {np}");
    let loose = vec![host_visit_cap(DAY, Seconds(1.0)); arena.hosts()];
    assert_eq!(bound(&loose), np);
}

#[test]
fn a_budget_beyond_the_caps_fills_every_cap() {
    let arena = arena_of(&[vec![(1.0, 2.0), (3.0, 0.5), (1.0, 0.0)], vec![(1.0, 0.0)]]);
    let keys = [1, 2, 3, 4];
    let caps = [10, 10];
    let p = VisitProblem {
        pages: &arena,
        caps: &caps,
        keys: &keys,
        horizon: DAY,
        objective: VisitObjective::Staleness,
    };
    let v = integer_visits(&p, 1_000, &mut Alone);
    assert_eq!(v.multiplier, 0.0);
    assert_eq!(v.max_visits, 10); // the second host never changes
    assert_eq!(v.used, 10);
    assert_eq!(v.counts[2] + v.counts[3], 0);
    assert_eq!(v.counts, greedy_visits(&arena, &caps, &keys, DAY, 1_000));
}

/// An all-reduce between threads (a stand-in for the job's timely rounds): every worker posts its
/// partial, all read all of them and combine in worker order.
struct Threads {
    me: usize,
    board: std::sync::Arc<(std::sync::Mutex<Vec<Vec<u8>>>, std::sync::Barrier)>,
}

impl crate::reduce::AllReduce for Threads {
    fn all_reduce<
        M: crate::reduce::Combine + serde::Serialize + serde::de::DeserializeOwned + Clone + 'static,
    >(
        &mut self,
        partial: M,
    ) -> M {
        let (board, barrier) = &*self.board;
        board.lock().expect("board")[self.me] = bincode::serialize(&partial).expect("serialise");
        barrier.wait();
        let parts: Vec<M> = board
            .lock()
            .expect("board")
            .iter()
            .map(|b| bincode::deserialize(b).expect("deserialise"))
            .collect();
        barrier.wait(); // nobody posts the next round before all have read this one
        let mut it = parts.into_iter();
        let mut total = it.next().expect("one worker at least");
        for p in it {
            total.combine(p);
        }
        total
    }
}

#[test]
fn two_workers_give_the_single_worker_visits() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    // equal pages on different hosts make ties across workers
    let hosts: Vec<Vec<(f64, f64)>> = (0..60)
        .map(|h| {
            (0..1 + 300 / (h + 1))
                .map(|_| {
                    (
                        rng.random_range(1..4) as f64,
                        rng.random_range(1..30) as f64,
                    )
                })
                .collect()
        })
        .collect();
    let caps: Vec<u32> = (0..hosts.len() as u32).map(|h| 50 + 7 * h).collect();
    let budget = 4_321;
    let whole = arena_of(&hosts);
    let keys: Vec<u64> = (0..whole.len() as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let alone = integer_visits(
        &VisitProblem {
            pages: &whole,
            caps: &caps,
            keys: &keys,
            horizon: DAY,
            objective: VisitObjective::Staleness,
        },
        budget,
        &mut Alone,
    );
    assert_eq!(alone.used, budget);

    // worker w holds hosts h with h % 2 == w, with the same keys
    let board = std::sync::Arc::new((
        std::sync::Mutex::new(vec![vec![]; 2]),
        std::sync::Barrier::new(2),
    ));
    let results: Vec<(Vec<usize>, Visits)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let (hosts, caps, keys, whole, board) =
                    (&hosts, &caps, &keys, &whole, board.clone());
                s.spawn(move || {
                    let mine: Vec<usize> = (0..hosts.len()).filter(|h| h % 2 == w).collect();
                    let arena =
                        arena_of(&mine.iter().map(|&h| hosts[h].clone()).collect::<Vec<_>>());
                    let my_caps: Vec<u32> = mine.iter().map(|&h| caps[h]).collect();
                    let pages: Vec<usize> =
                        mine.iter().flat_map(|&h| whole.host_pages(h)).collect();
                    let my_keys: Vec<u64> = pages.iter().map(|&i| keys[i]).collect();
                    let p = VisitProblem {
                        pages: &arena,
                        caps: &my_caps,
                        keys: &my_keys,
                        horizon: DAY,
                        objective: VisitObjective::Staleness,
                    };
                    (
                        pages,
                        integer_visits(&p, budget, &mut Threads { me: w, board }),
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    for (pages, v) in &results {
        assert_eq!(v.multiplier, alone.multiplier);
        assert_eq!(v.used, budget);
        for (k, &i) in pages.iter().enumerate() {
            assert_eq!(v.counts[k], alone.counts[i], "page {i}");
        }
    }
}
