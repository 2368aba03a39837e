//! The MLE over kept evidence (eq. 10, host-free paper prior) against the O(1)-state online
//! estimator, on URLs crawled daily: median relative error after 7, 30 and 90 crawls, over
//! 20,000 URLs with log-uniform rates in [0.01, 5] changes a day.
//!
//!     cargo run --release -p revisit-core --example online_vs_mle

use rand::{Rng, SeedableRng};
use revisit_core::estimate::online::Online;
use revisit_core::estimate::{estimate, Evidence, Observation, Prior, Window};

fn main() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let urls = 20_000;
    for days in [7usize, 30, 90] {
        let (mut mle_err, mut online_err) = (Vec::new(), Vec::new());
        for _ in 0..urls {
            let lambda: f64 = (rng.random::<f64>() * (5f64 / 0.01).ln()).exp() * 0.01;
            let mut evidence = Evidence::default();
            let mut online = Online::new(2.0 * 2f64.ln());
            for d in 0..=days {
                let changed = d > 0 && rng.random::<f64>() < 1.0 - (-lambda).exp();
                evidence
                    .observe(Observation {
                        at_days: d as f64,
                        changed,
                        complete: false,
                    })
                    .unwrap();
                if d > 0 {
                    online.observe(1.0, changed);
                }
            }
            let window = Window {
                from: 0.0,
                to: days as f64,
            };
            let mle = estimate(&evidence, window, Prior::Paper).change_rate;
            mle_err.push((mle / lambda - 1.0).abs());
            online_err.push((online.rate() / lambda - 1.0).abs());
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "{days:>3} daily crawls: median relative error MLE {:.3}, online {:.3}",
            median(&mut mle_err),
            median(&mut online_err)
        );
    }
}
