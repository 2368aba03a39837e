//! Host timetables, crawler sequencing, exact evaluation and simulation, checked against each other.

use proptest::prelude::*;
use rand::SeedableRng;

use super::crawler::{
    crawler_phases, sequence_crawler, sequence_rolling, sweep_night, CrawlerHost,
};
use super::evaluate::evaluate_page;
use super::simulate::simulate_page;
use super::timetable::*;
use super::visits::{host_visit_cap, periodic_staleness, EvenlySpaced, VisitObjective};
use crate::units::Seconds;

const DAY: Seconds = Seconds(86_400.0);
/// Float slack on times of ~1e5 s (the slot arithmetic rounds in the last bits).
const EPS: Seconds = Seconds(1e-6);

fn times_of(t: &HostTimetable, page: u32) -> Vec<f64> {
    t.at_s
        .iter()
        .zip(&t.page)
        .filter(|(_, &p)| p == page)
        .map(|(&a, _)| a)
        .collect()
}

fn visits_strategy() -> impl Strategy<Value = (Vec<u32>, u64)> {
    // pages' visits and a min delay that the total respects (X <= floor(T / P))
    prop::collection::vec(0u32..40, 1..12).prop_flat_map(|v| {
        let total: u64 = v.iter().map(|&x| x as u64).sum::<u64>().max(1);
        (Just(v), 1u64..=(86_400 / total))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_slotted_sequencing_is_polite_and_gives_every_page_its_visits(
        (visits, delay) in visits_strategy(), phase in 0.0f64..1.0,
    ) {
        let p = Seconds(delay as f64);
        prop_assert!(visits.iter().map(|&x| x as u64).sum::<u64>() <= host_visit_cap(DAY, p) as u64);
        for seq in [Sequencing::Merge, Sequencing::Carousel, Sequencing::GoldenRatio] {
            let t = host_timetable(&visits, DAY, phase, seq);
            prop_assert!(t.at_s.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(t.at_s.iter().all(|&a| (0.0..DAY.0).contains(&a)));
            let (bad, shortest) = politeness_violations(&t.at_s, DAY, p, EPS);
            prop_assert_eq!(bad, 0, "{:?}: shortest gap {} < {}", seq, shortest, delay);
            for (i, &x) in visits.iter().enumerate() {
                let mine = times_of(&t, i as u32);
                prop_assert_eq!(mine.len(), x as usize);
                // no sequencing beats even spacing (Liu & Nain Prop. 8: Schur convexity)
                let exact = evaluate_page(&mine, 3.0, DAY).stale;
                prop_assert!(exact >= periodic_staleness(3.0, 1.0, x) - 1e-12);
            }
        }
    }

    #[test]
    fn the_carousel_stays_within_one_visit_of_the_ideal_count(visits in prop::collection::vec(0u32..30, 1..10)) {
        // Tijdeman's bound for the chairman assignment (PNAS'18 ref. 16): after every prefix of t
        // slots, each page has |count - t x_i / X| < 1 visits.
        let total: u64 = visits.iter().map(|&x| x as u64).sum();
        prop_assume!(total > 0);
        let t = host_timetable(&visits, DAY, 0.0, Sequencing::Carousel);
        let mut seen = vec![0i128; visits.len()];
        for (s, &i) in t.page.iter().enumerate() {
            seen[i as usize] += 1;
            for (k, &x) in visits.iter().enumerate() {
                let dev = seen[k] * total as i128 - (s as i128 + 1) * x as i128;
                prop_assert!(dev.abs() < total as i128, "page {} after {} slots of {}", k, s + 1, total);
            }
        }
    }
}

#[test]
fn the_golden_ratio_sequence_is_liu_and_nains_example() {
    // Liu & Nain §1.3.4: f = (2, 3, 3, 5)/13 gives {4,2,4,1,3,4,2,4,1,3,4,2,3} (pages from 1); a
    // cyclic schedule is the same up to where the night starts.
    let t = host_timetable(&[2, 3, 3, 5], DAY, 0.0, Sequencing::GoldenRatio);
    let ours: Vec<u32> = t.page.iter().map(|p| p + 1).collect();
    let paper = [4, 2, 4, 1, 3, 4, 2, 4, 1, 3, 4, 2, 3];
    assert!(
        (0..13).any(|r| ours[r..].iter().chain(&ours[..r]).eq(paper.iter())),
        "{ours:?}"
    );
}

#[test]
fn merge_is_polite_where_mp2_is_not() {
    // 40 pages of 1..4 visits on a host that may take one request per 10 minutes: MP2's per-page
    // even spacing puts visits of different pages closer than the delay.
    let visits: Vec<u32> = (0..40).map(|i| 1 + i % 4).collect();
    let p = Seconds(600.0);
    assert!(visits.iter().sum::<u32>() <= host_visit_cap(DAY, p));
    let merged = host_timetable(&visits, DAY, 0.3, Sequencing::Merge);
    let mp2 = host_timetable(&visits, DAY, 0.3, Sequencing::Mp2);
    assert_eq!(politeness_violations(&merged.at_s, DAY, p, EPS).0, 0);
    let (bad, shortest) = politeness_violations(&mp2.at_s, DAY, p, EPS);
    assert!(bad > 0 && shortest < p.0, "{bad} {shortest}");
    // MP2 spaces each page exactly evenly: its staleness is the bound S(x) page by page
    for (i, &x) in visits.iter().enumerate() {
        let e = evaluate_page(&times_of(&mp2, i as u32), 2.0, DAY).stale;
        assert!((e - periodic_staleness(2.0, 1.0, x)).abs() < 1e-12);
    }
}

#[test]
fn merge_spaces_a_lone_page_evenly() {
    let t = host_timetable(&[7], DAY, 0.25, Sequencing::Merge);
    for g in cyclic_gaps(&t.at_s, DAY) {
        assert!((g - DAY.0 / 7.0).abs() < 1e-9);
    }
    assert_eq!(t.at_s[0], 0.25 * DAY.0 / 7.0);
}

#[test]
fn the_crawler_is_polite_keeps_its_rate_and_never_serves_early() {
    // 30 hosts at their caps for P = 60 s on a crawler too slow for all of them: visits are delayed
    // and some dropped, never impolite.
    let p = Seconds(60.0);
    let cap = host_visit_cap(DAY, p);
    let visits = vec![cap / 3, cap / 3, cap - 2 * (cap / 3)];
    let slots = vec![DAY.0 / cap as f64; 30];
    let phases = crawler_phases(&slots, 1.0);
    let tables: Vec<HostTimetable> = (0..30)
        .map(|h| host_timetable(&visits, DAY, phases[h], Sequencing::Merge))
        .collect();
    let hosts: Vec<CrawlerHost> = tables
        .iter()
        .map(|t| CrawlerHost {
            planned_s: &t.at_s,
            min_delay: p,
        })
        .collect();
    let planned: u64 = tables.iter().map(|t| t.at_s.len() as u64).sum();
    for rate in [0.2, 0.5, 1.0] {
        let c = sequence_crawler(&hosts, rate, DAY);
        assert_eq!(c.scheduled() + c.dropped, planned);
        assert!(
            c.at_s.windows(2).all(|w| w[1] - w[0] >= 1.0 / rate - 1e-9),
            "rate {rate}"
        );
        assert!(
            c.at_s.first().unwrap_or(&0.0) + DAY.0 - c.at_s.last().unwrap_or(&0.0)
                >= 1.0 / rate - 1e-9
        );
        assert!(c.scheduled() as f64 <= (rate * DAY.0).floor());
        let mut served_early = 0;
        for (h, t) in tables.iter().enumerate() {
            let mine: Vec<f64> = (0..c.at_s.len())
                .filter(|&k| c.host[k] as usize == h)
                .map(|k| c.at_s[k])
                .collect();
            let (bad, shortest) = politeness_violations(&mine, DAY, p, EPS);
            assert_eq!(bad, 0, "host {h} at rate {rate}: {shortest}");
            // only visits served round the cycle (in the next night) come before their plan
            let early = (0..c.at_s.len())
                .filter(|&k| c.host[k] as usize == h && c.at_s[k] < t.at_s[c.visit[k] as usize])
                .count() as u64;
            assert!(early <= c.served_round_the_cycle, "served before its plan");
            served_early += early;
        }
        assert_eq!(served_early, c.served_round_the_cycle);
        // 30 hosts x 1440 visits = 0.5 per second: the slower crawlers must drop, the fast one not
        if rate < 0.5 {
            assert!(
                c.dropped > 0 && c.utilisation > 0.99,
                "{} {}",
                c.dropped,
                c.utilisation
            );
        }
        if rate >= 1.0 {
            // slots on distinct ticks: nothing waits, nothing is dropped
            assert_eq!(c.dropped, 0);
            assert!(c.max_delay_s <= 1e-6, "{}", c.max_delay_s);
        }
    }
}

/// One host: its planned times and delay, as the crawler sees them.
fn crawler_host(planned_s: &[f64], p: Seconds) -> CrawlerHost<'_> {
    CrawlerHost {
        planned_s,
        min_delay: p,
    }
}

#[test]
fn a_host_at_its_cap_alone_keeps_every_visit_whatever_its_phase() {
    // Gaps of exactly P leave no slack: the served times are sums of ticks and delays, and their
    // rounding must not push the night's last visit past the wrap-around.
    let p = Seconds(300.0);
    let cap = host_visit_cap(DAY, p);
    assert_eq!(cap as f64 * p.0, DAY.0);
    for k in 0..200 {
        let phase = host_phase(k);
        let t = host_timetable(&[cap], DAY, phase, Sequencing::Merge);
        let c = sequence_crawler(&[crawler_host(&t.at_s, p)], 10.0, DAY);
        assert_eq!((c.dropped, c.scheduled()), (0, cap as u64), "phase {phase}");
        assert_eq!(politeness_violations(&c.at_s, DAY, p, EPS).0, 0);
    }
}

#[test]
fn the_crawler_idles_a_fraction_of_a_tick_rather_than_delay_a_host_at_its_cap() {
    // A host at its cap (slots every 300 s from 100 s) and a host with slack whose visits fall
    // half a tick before some of those slots: served first, each would delay the capped host by
    // half a tick for the rest of the night, and its last visit would miss the wrap-around.
    let (p, tick) = (Seconds(300.0), 0.1);
    let capped: Vec<f64> = (0..host_visit_cap(DAY, p))
        .map(|r| 100.0 + 300.0 * r as f64)
        .collect();
    let loose: Vec<f64> = (0..50)
        .map(|r| 100.0 - tick / 2.0 + 1500.0 * r as f64)
        .collect();
    let hosts = [crawler_host(&capped, p), crawler_host(&loose, p)];
    let c = sequence_crawler(&hosts, 1.0 / tick, DAY);
    assert_eq!(c.dropped, 0);
    assert_eq!(c.scheduled(), (capped.len() + loose.len()) as u64);
    for (k, &at) in c.at_s.iter().enumerate() {
        let planned = hosts[c.host[k] as usize].planned_s[c.visit[k] as usize];
        match c.host[k] {
            0 => assert_eq!(at, planned, "the capped host is never late"),
            _ => assert!(at - planned <= 1.5 * tick + 1e-9, "{at} vs {planned}"),
        }
    }
    assert!(c.at_s.windows(2).all(|w| w[1] - w[0] >= tick - 1e-9));
}

#[test]
fn drops_at_the_wrap_are_told_from_drops_for_want_of_capacity() {
    // Two hosts without slack on the same instants from the second slot on, swept from the
    // horizon's start (sequence_crawler's quiet start would begin at a shared slot and shift the
    // second host's whole night instead): the second slips a tick from its second visit on (a tie
    // goes to the first), and its last visit cannot be served politely before the next night's
    // first. The crawler had time.
    let p = Seconds(300.0);
    let slots: Vec<f64> = (0..host_visit_cap(DAY, p))
        .map(|r| 100.0 + 300.0 * r as f64)
        .collect();
    let pair = [crawler_host(&slots[1..], p), crawler_host(&slots, p)];
    let c = sweep_night(&pair, 10.0, DAY, None);
    assert_eq!((c.dropped, c.dropped_at_wrap), (1, 1));
    assert_eq!(sequence_crawler(&pair, 10.0, DAY).dropped, 0);
    // A crawler too slow for its hosts drops for want of capacity; the count at the wrap is a part
    // of all drops.
    let c = sequence_crawler(
        &[crawler_host(&slots, p), crawler_host(&slots, p)],
        1.0 / 400.0,
        DAY,
    );
    assert!(c.dropped > 200, "{}", c.dropped);
    assert!(
        c.dropped_at_wrap < c.dropped,
        "{} {}",
        c.dropped_at_wrap,
        c.dropped
    );
}

#[test]
fn a_late_backlog_drains_in_the_next_night_s_early_hours() {
    // 30 hosts each planning one visit 100 s before the horizon ends, a crawler fetching every 10 s:
    // 10 fit before the end (T - 100 to T - 10), the other 20 drain in the next night's first
    // 200 s: the sweep starts where the crawler is idle in steady state, T - 100 here.
    let (p, tick) = (Seconds(60.0), 10.0);
    let planned = [DAY.0 - 100.0];
    let hosts: Vec<CrawlerHost> = (0..30).map(|_| crawler_host(&planned, p)).collect();
    let c = sequence_crawler(&hosts, 1.0 / tick, DAY);
    assert_eq!(
        (c.scheduled(), c.dropped, c.served_round_the_cycle),
        (30, 0, 20)
    );
    let cyclic: Vec<f64> = c.at_s.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(cyclic.iter().all(|&g| g >= tick - 1e-9), "{cyclic:?}");
    assert!(c.at_s[0] + DAY.0 - c.at_s[29] >= tick - 1e-9);
    assert!(c.at_s.iter().filter(|&&a| a < planned[0]).count() == 20);
    // the backlog is late by at most its length, going round
    assert!(c.max_delay_s <= 100.0 + 30.0 * tick, "{}", c.max_delay_s);
    // a host already visited near the start of the cycle keeps its delay: its visit waits
    let early = [30.0, DAY.0 - 100.0];
    let mut hosts: Vec<CrawlerHost> = (0..29).map(|_| crawler_host(&planned, p)).collect();
    hosts.push(crawler_host(&early, p));
    let c = sequence_crawler(&hosts, 1.0 / tick, DAY);
    assert_eq!(c.dropped, 0);
    let mine: Vec<f64> = (0..c.at_s.len())
        .filter(|&k| c.host[k] == 29)
        .map(|k| c.at_s[k])
        .collect();
    assert_eq!(politeness_violations(&mine, DAY, p, EPS).0, 0, "{mine:?}");
}

#[test]
fn the_crawler_repairs_mp2_into_a_polite_night() {
    let visits: Vec<u32> = (0..40).map(|i| 1 + i % 4).collect();
    let p = Seconds(600.0);
    let mp2 = host_timetable(&visits, DAY, 0.0, Sequencing::Mp2);
    let c = sequence_crawler(
        &[CrawlerHost {
            planned_s: &mp2.at_s,
            min_delay: p,
        }],
        10.0,
        DAY,
    );
    assert_eq!(politeness_violations(&c.at_s, DAY, p, EPS).0, 0);
    assert_eq!(c.scheduled() + c.dropped, mp2.at_s.len() as u64);
    assert!(c.max_delay_s > 0.0);
}

#[test]
fn simulation_agrees_with_the_closed_forms() {
    // Uneven timetables and rates from rare to many changes per interval; 4 standard errors.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let cases: [(&[f64], f64); 4] = [
        (&[0.0], 0.5),
        (&[1_000.0, 5_000.0, 40_000.0], 3.0),
        (&[0.0, 21_600.0, 43_200.0, 64_800.0], 24.0),
        (&[300.0, 600.0, 80_000.0], 0.05),
    ];
    for (times, lambda) in cases {
        let exact = evaluate_page(times, lambda, DAY);
        let sim = simulate_page(times, lambda, DAY, 40_000, &mut rng).expect("valid input");
        for (name, e, s) in [
            ("stale", exact.stale, sim.stale),
            ("harmonic", exact.harmonic, sim.harmonic),
            ("missed", exact.missed_changes, sim.missed_changes),
        ] {
            println!(
                "lambda {lambda}/day visits {times:?}: {name} exact {e:.6} simulated {:.6} +- {:.6} (95%: [{:.6}, {:.6}])",
                s.mean, s.std_err, s.mean - 1.96 * s.std_err, s.mean + 1.96 * s.std_err
            );
            assert!(s.covers(e, 4.0), "{name}: exact {e} vs {s:?}");
        }
    }
}

#[test]
fn polite_timetables_stay_above_the_weak_politeness_bound_and_close_to_it() {
    // A small PUC-Rio instance (2,000 pages on 40 Zipf servers, P = 15 s, 2 crawlers): every
    // timetable served by Phase 3 is polite, so its exact staleness is >= WP (Thm 1); the paper
    // reports 3% above WP and the issue asks <= 2% for MERGE (checked on the planned timetable).
    use super::crawler::crawler_phases;
    use super::visits::{integer_visits, EvenlySpaced, VisitObjective, VisitProblem};
    use crate::reduce::Alone;
    use crate::solve::pages::PagesBuilder;
    use crate::units::PerDay;
    use rand::Rng;
    use rand_distr::{Distribution, Zipf};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let zipf = Zipf::new(40.0, 1.0).expect("zipf");
    let mut rows: Vec<(u64, f64)> = (0..2_000)
        .map(|_| (zipf.sample(&mut rng) as u64, rng.random_range(0.24..24.0)))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut b = PagesBuilder::new();
    let mut k = 0;
    while k < rows.len() {
        let end = k + rows[k..].iter().take_while(|r| r.0 == rows[k].0).count();
        b.push_host(
            PerDay(f64::INFINITY),
            rows[k..end].iter().map(|r| (1.0, r.1, false)),
        );
        k = end;
    }
    let arena = b.build().unwrap();
    let p = Seconds(15.0);
    let caps = vec![host_visit_cap(DAY, p); arena.hosts()];
    let keys: Vec<u64> = (0..arena.len() as u64).collect();
    let rate = 0.5; // per crawler, 2 crawlers: 86,400 visits per day
    let budget = (2.0 * rate * DAY.0) as u64;
    let v = integer_visits(
        &VisitProblem {
            pages: &arena,
            caps: &caps,
            keys: &keys,
            horizon: DAY,
            objective: VisitObjective::Staleness,
        },
        budget,
        &mut Alone,
    );
    let wp = EvenlySpaced::of(&arena, &v.counts, DAY, VisitObjective::Staleness).mean();
    let loads: Vec<(u64, f64)> = (0..arena.hosts())
        .map(|h| (h as u64, v.host_visits[h] as f64))
        .collect();
    let crawler_of = super::assign::assign(&loads, 2);
    for seq in Sequencing::ALL {
        let mut served: Vec<Vec<f64>> = vec![vec![]; arena.len()];
        let mut planned: Vec<Vec<f64>> = vec![vec![]; arena.len()];
        let mut dropped = 0;
        for c in 0..2 {
            let mine: Vec<usize> = (0..arena.hosts()).filter(|&h| crawler_of[h] == c).collect();
            let slots: Vec<f64> = mine
                .iter()
                .map(|&h| DAY.0 / v.host_visits[h].max(1) as f64)
                .collect();
            let phases = crawler_phases(&slots, rate);
            let tables: Vec<HostTimetable> = mine
                .iter()
                .zip(&phases)
                .map(|(&h, &ph)| host_timetable(&v.counts[arena.host_pages(h)], DAY, ph, seq))
                .collect();
            let hosts: Vec<CrawlerHost> = tables
                .iter()
                .map(|t| CrawlerHost {
                    planned_s: &t.at_s,
                    min_delay: p,
                })
                .collect();
            let night = sequence_crawler(&hosts, rate, DAY);
            dropped += night.dropped;
            for (n, t) in tables.iter().enumerate() {
                for (j, &a) in t.at_s.iter().enumerate() {
                    planned[arena.host_pages(mine[n]).start + t.page[j] as usize].push(a);
                }
            }
            for k in 0..night.at_s.len() {
                let (n, j) = (night.host[k] as usize, night.visit[k] as usize);
                let page = arena.host_pages(mine[n]).start + tables[n].page[j] as usize;
                served[page].push(night.at_s[k]);
            }
            for n in 0..mine.len() {
                let at: Vec<f64> = (0..night.at_s.len())
                    .filter(|&k| night.host[k] as usize == n)
                    .map(|k| night.at_s[k])
                    .collect();
                assert_eq!(politeness_violations(&at, DAY, p, EPS).0, 0, "{seq:?}");
            }
        }
        let stale: f64 = (0..arena.len())
            .map(|i| evaluate_page(&served[i], arena.change_rate()[i], DAY).stale)
            .sum::<f64>()
            / arena.len() as f64;
        let inf: f64 = (0..arena.len())
            .map(|i| evaluate_page(&planned[i], arena.change_rate()[i], DAY).stale)
            .sum::<f64>()
            / arena.len() as f64;
        println!(
            "{seq:?}: staleness {stale:.5} (planned {inf:.5}), WP {wp:.5}, {:+.2}% ({:+.2}% planned), dropped {dropped}",
            100.0 * (stale / wp - 1.0),
            100.0 * (inf / wp - 1.0)
        );
        assert!(stale >= wp - 1e-12, "{seq:?} below the bound");
        assert!(inf >= wp - 1e-12, "{seq:?} planned below the bound");
        if seq == Sequencing::Merge {
            // The timetable itself; what Phase 3 adds here is the visits it drops because the
            // budget equals the crawlers' capacity and the assignment may load a crawler 1% over
            // the mean (2 crawlers, 40 hosts: ~2% dropped, +4.4% staleness).
            assert!(inf <= 1.02 * wp, "MERGE {inf} vs WP {wp}");
        }
    }
}

#[test]
fn evenly_spaced_values_equal_the_exact_value_of_evenly_spaced_times() {
    // EvenlySpaced's closed forms (one gap T / k per visit) against evaluate_page summing the
    // same times' gaps one by one; a changing page without a visit makes the harmonic cost infinite.
    use crate::solve::pages::PagesBuilder;
    use crate::units::PerDay;
    let pages = [
        (2.0, 0.3, 1u32),
        (0.5, 4.0, 7),
        (1.0, 1e-3, 2),
        (3.0, 0.0, 0),
    ];
    let mut b = PagesBuilder::new();
    b.push_host(
        PerDay(f64::INFINITY),
        pages.map(|(mu, lambda, _)| (mu, lambda, false)),
    );
    let arena = b.build().unwrap();
    let counts: Vec<u32> = pages.iter().map(|p| p.2).collect();
    let v = EvenlySpaced::of(&arena, &counts, DAY, VisitObjective::Harmonic);
    let (mut stale, mut harmonic, mut weight) = (0.0, 0.0, 0.0);
    for &(mu, lambda, k) in &pages {
        let times: Vec<f64> = (0..k).map(|r| r as f64 * DAY.0 / k as f64).collect();
        let e = evaluate_page(&times, lambda, DAY);
        stale += mu * e.stale;
        harmonic += mu * e.harmonic;
        weight += mu;
    }
    assert!((v.mean() - stale / weight).abs() < 1e-13);
    let h = v.harmonic_cost().unwrap();
    assert!((h - harmonic).abs() < 1e-12 * harmonic, "{h} vs {harmonic}");
    assert_eq!(
        EvenlySpaced::of(&arena, &counts, DAY, VisitObjective::Staleness).harmonic_cost(),
        None
    );
    let starved = EvenlySpaced::of(&arena, &[0, 7, 2, 0], DAY, VisitObjective::Harmonic);
    assert_eq!((starved.starved, starved.harmonic_cost()), (1, None));
}

proptest! {
    /// A rolling night serves every visit no earlier than due and a host's first fetch no earlier
    /// than its last fetch of the night before + P_h; a host's fetches are P_h apart, the
    /// crawler's 1/c; every due visit is served or counted as dropped.
    #[test]
    fn a_rolling_night_is_polite_across_the_boundary(
        hosts in prop::collection::vec(
            (prop::collection::vec(0.0f64..86_400.0, 0..20), 1.0f64..600.0, -700.0f64..700.0),
            1..12,
        ),
        rate in 0.01f64..2.0,
    ) {
        let planned: Vec<Vec<f64>> = hosts
            .iter()
            .map(|(t, _, _)| {
                let mut t = t.clone();
                t.sort_by(f64::total_cmp);
                t
            })
            .collect();
        let crawler_hosts: Vec<CrawlerHost> = planned
            .iter()
            .zip(&hosts)
            .map(|(p, h)| CrawlerHost { planned_s: p, min_delay: Seconds(h.1) })
            .collect();
        let not_before: Vec<f64> = hosts.iter().map(|h| h.2).collect();
        let night = sequence_rolling(&crawler_hosts, &not_before, rate, DAY);
        let due: u64 = planned.iter().map(|p| p.len() as u64).sum();
        prop_assert_eq!(night.scheduled() + night.dropped, due);
        prop_assert_eq!(night.dropped_at_wrap, 0);
        let mut last: Vec<Option<f64>> = vec![None; hosts.len()];
        for k in 0..night.at_s.len() {
            let (t, h, j) = (night.at_s[k], night.host[k] as usize, night.visit[k] as usize);
            prop_assert!(t < DAY.0 && t >= planned[h][j] - 1e-7);
            if k > 0 {
                prop_assert!(t - night.at_s[k - 1] >= 1.0 / rate - 1e-7);
            }
            let earliest = match last[h] {
                Some(l) => l + hosts[h].1,
                None => not_before[h],
            };
            prop_assert!(t >= earliest - 1e-7, "host {} at {} before {}", h, t, earliest);
            last[h] = Some(t);
        }
    }
}
