//! The chapter's printed numbers (Tables 1.1–1.3, Figures 1.5–1.7), typed in from the PDF.
//!
//! These are the independent check: tests compare our output against them, never
//! against numbers our own code produced.

/// One row of Table 1.2 or 1.3 (μ = 1 throughout).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DynamicRow {
    pub lambda: f64,
    pub buffer: usize,
    pub gamma: f64,
    /// C_s, the static optimum's cost (eq. 1.4).
    pub static_cost: f64,
    /// N_s, the static optimal count (Prop. 1).
    pub static_crawlers: usize,
    /// C_d, the dynamic optimum's average cost.
    pub dynamic_cost: f64,
    /// N_min, fewest crawlers the dynamic policy keeps active.
    pub min_active: usize,
    /// N̄, mean number of active crawlers.
    pub mean_active: f64,
    /// N_iter (Table 1.2 only): value-iteration steps the authors needed.
    pub iterations: Option<usize>,
    /// N_max (Table 1.3 only): most crawlers the unrestricted policy activates.
    pub max_active: Option<usize>,
}

#[allow(clippy::too_many_arguments)]
const fn row_1_2(
    lambda: f64,
    buffer: usize,
    gamma: f64,
    static_cost: f64,
    static_crawlers: usize,
    dynamic_cost: f64,
    min_active: usize,
    mean_active: f64,
    iterations: usize,
) -> DynamicRow {
    DynamicRow {
        lambda,
        buffer,
        gamma,
        static_cost,
        static_crawlers,
        dynamic_cost,
        min_active,
        mean_active,
        iterations: Some(iterations),
        max_active: None,
    }
}

#[allow(clippy::too_many_arguments)]
const fn row_1_3(
    lambda: f64,
    buffer: usize,
    gamma: f64,
    static_cost: f64,
    static_crawlers: usize,
    dynamic_cost: f64,
    min_active: usize,
    mean_active: f64,
    max_active: usize,
) -> DynamicRow {
    DynamicRow {
        lambda,
        buffer,
        gamma,
        static_cost,
        static_crawlers,
        dynamic_cost,
        min_active,
        mean_active,
        iterations: None,
        max_active: Some(max_active),
    }
}

/// Table 1.1's columns K (the ∞ column is eq. 1.12, see [`TABLE_1_1_INFINITY`]).
pub(crate) const TABLE_1_1_BUFFERS: [usize; 9] = [2, 3, 4, 5, 10, 20, 30, 40, 50];

/// Table 1.1: N(γ, K) for λ = 0.01, μ = 1, one row per γ.
pub(crate) const TABLE_1_1: [(f64, [usize; 9]); 5] = [
    (0.1, [20, 34, 44, 52, 72, 85, 89, 92, 94]),
    (0.5, [48, 63, 71, 77, 89, 95, 96, 97, 98]),
    (1.2, [77, 88, 93, 96, 100, 101, 101, 101, 100]),
    (1.5, [86, 96, 100, 102, 103, 102, 102, 101, 101]),
    (2.0, [100, 107, 109, 109, 107, 104, 103, 102, 102]),
];

/// Table 1.1's K = ∞ column, the approximation (1.12): 100 for every γ.
pub(crate) const TABLE_1_1_INFINITY: usize = 100;

/// Figures 1.5–1.7: N = 16 available crawlers, K = 5, λ = 0.1, μ = 1; (γ, printed cost, printed iterations).
pub(crate) const FIGURES_1_5_TO_1_7: [(f64, f64, usize); 3] = [
    (1.0, 0.20907, 254),
    (1.4, 0.25924, 255),
    (2.0, 0.32211, 256),
];

/// Table 1.2: the dynamic policy with N = N_s available crawlers.
pub(crate) const TABLE_1_2: [DynamicRow; 27] = [
    row_1_2(0.01, 5, 0.4, 0.17541, 73, 0.16804, 57, 70.3, 1634),
    row_1_2(0.01, 5, 1.4, 0.40000, 100, 0.38336, 86, 95.1, 1911),
    row_1_2(0.01, 5, 2.4, 0.53834, 114, 0.51746, 101, 108.4, 2051),
    row_1_2(0.01, 10, 0.4, 0.10207, 86, 0.09062, 60, 82.6, 1794),
    row_1_2(0.01, 10, 1.2, 0.20000, 100, 0.17534, 77, 94.1, 1939),
    row_1_2(0.01, 10, 2.4, 0.28347, 110, 0.24798, 88, 102.3, 2039),
    row_1_2(0.01, 15, 0.4, 0.07177, 91, 0.05891, 58, 87.7, 1860),
    row_1_2(0.01, 15, 1.13, 0.13313, 100, 0.10720, 70, 94.5, 1953),
    row_1_2(0.01, 15, 2.4, 0.19192, 107, 0.15342, 78, 99.7, 2024),
    row_1_2(0.05, 5, 0.4, 0.17578, 15, 0.15127, 7, 13.8, 338),
    row_1_2(0.05, 5, 1.4, 0.40000, 20, 0.34733, 12, 17.7, 391),
    row_1_2(0.05, 5, 2.4, 0.53841, 23, 0.46583, 15, 20.2, 422),
    row_1_2(0.05, 10, 0.4, 0.10220, 17, 0.08308, 5, 16.2, 369),
    row_1_2(0.05, 10, 1.2, 0.20000, 20, 0.14955, 8, 18.2, 402),
    row_1_2(0.05, 10, 2.4, 0.28347, 22, 0.20541, 10, 19.4, 423),
    row_1_2(0.05, 15, 0.4, 0.07184, 18, 0.05514, 4, 17.4, 401),
    row_1_2(0.05, 15, 1.13, 0.13313, 20, 0.09117, 6, 18.7, 426),
    row_1_2(0.05, 15, 2.4, 0.19372, 21, 0.13895, 8, 19.3, 438),
    row_1_2(0.1, 5, 0.4, 0.17600, 7, 0.15239, 1, 6.5, 167),
    row_1_2(0.1, 5, 1.4, 0.40000, 10, 0.32198, 4, 8.6, 200),
    row_1_2(0.1, 5, 2.4, 0.54067, 11, 0.44989, 5, 9.3, 211),
    row_1_2(0.1, 10, 0.4, 0.10403, 9, 0.06838, 0, 8.4, 204),
    row_1_2(0.1, 10, 1.2, 0.20000, 10, 0.13854, 2, 9.0, 218),
    row_1_2(0.1, 10, 2.4, 0.28347, 11, 0.18585, 3, 9.6, 227),
    row_1_2(0.1, 15, 0.4, 0.07184, 9, 0.05326, 0, 8.7, 312),
    row_1_2(0.1, 15, 1.13, 0.13313, 10, 0.08538, 1, 9.3, 359),
    row_1_2(0.1, 15, 2.4, 0.19458, 11, 0.09606, 1, 9.7, 376),
];

/// Table 1.3: the dynamic policy with no limit on available crawlers.
pub(crate) const TABLE_1_3: [DynamicRow; 27] = [
    row_1_3(0.01, 5, 0.4, 0.17541, 73, 0.16595, 58, 74.8, 82),
    row_1_3(0.01, 5, 1.4, 0.40000, 100, 0.37886, 88, 99.9, 115),
    row_1_3(0.01, 5, 2.4, 0.53834, 114, 0.51179, 103, 113.0, 133),
    row_1_3(0.01, 10, 0.4, 0.10207, 86, 0.08124, 62, 89.3, 105),
    row_1_3(0.01, 10, 1.2, 0.20000, 100, 0.15876, 78, 99.6, 123),
    row_1_3(0.01, 10, 2.4, 0.28347, 110, 0.22777, 89, 107.1, 137),
    row_1_3(0.01, 15, 0.4, 0.07177, 91, 0.04236, 59, 94.9, 118),
    row_1_3(0.01, 15, 1.13, 0.13313, 100, 0.07812, 71, 99.8, 131),
    row_1_3(0.01, 15, 2.4, 0.19192, 107, 0.11493, 79, 103.6, 143),
    row_1_3(0.05, 5, 0.4, 0.17578, 15, 0.13770, 7, 15.9, 20),
    row_1_3(0.05, 5, 1.4, 0.40000, 20, 0.31712, 13, 19.8, 27),
    row_1_3(0.05, 5, 2.4, 0.53841, 23, 0.43292, 16, 21.9, 32),
    row_1_3(0.05, 10, 0.4, 0.10220, 17, 0.04128, 5, 19.0, 29),
    row_1_3(0.05, 10, 1.2, 0.20000, 20, 0.12020, 8, 19.9, 33),
    row_1_3(0.05, 10, 2.4, 0.28347, 22, 0.20541, 10, 20.6, 36),
    row_1_3(0.05, 15, 0.4, 0.07184, 18, 0.00969, 2, 19.8, 35),
    row_1_3(0.05, 15, 1.13, 0.13313, 20, 0.01818, 4, 20.0, 38),
    row_1_3(0.05, 15, 2.4, 0.19372, 21, 0.02782, 6, 20.1, 41),
    row_1_3(0.1, 5, 0.4, 0.17600, 7, 0.11097, 2, 8.2, 12),
    row_1_3(0.1, 5, 1.4, 0.40000, 10, 0.25924, 4, 9.8, 16),
    row_1_3(0.1, 5, 2.4, 0.54067, 11, 0.35805, 6, 10.7, 18),
    row_1_3(0.1, 10, 0.4, 0.10403, 9, 0.01937, 0, 9.7, 18),
    row_1_3(0.1, 10, 1.2, 0.20000, 10, 0.03887, 1, 9.9, 20),
    row_1_3(0.1, 10, 2.4, 0.28347, 11, 0.05894, 2, 10.1, 22),
    row_1_3(0.1, 15, 0.4, 0.07184, 9, 0.00188, 0, 10.0, 24),
    row_1_3(0.1, 15, 1.13, 0.13313, 10, 0.00368, 0, 10.0, 25),
    row_1_3(0.1, 15, 2.4, 0.19458, 11, 0.00585, 0, 10.0, 27),
];

/// Prints the paper-vs-ours tables of PLAN.md: `cargo test --release print_reproduction -- --ignored --nocapture`.
#[test]
#[ignore = "report generator, not a check"]
fn print_reproduction_tables() {
    use super::dynamic::{solve, solve_unrestricted, RviSettings};
    use super::queue::QueueModel;
    let mark = |same: bool| if same { "" } else { " ≠" };
    println!("Table 1.1 (λ = 0.01, μ = 1): N(γ, K), printed / ours\n");
    println!(
        "| γ | {} | ∞ (eq. 1.12) |",
        TABLE_1_1_BUFFERS.map(|k| format!("K={k}")).join(" | ")
    );
    println!("|---|{}---|", "---|".repeat(TABLE_1_1_BUFFERS.len()));
    for (gamma, row) in TABLE_1_1 {
        let cells: Vec<String> = TABLE_1_1_BUFFERS
            .iter()
            .zip(row)
            .map(|(&k, printed)| {
                let ours = QueueModel::new(0.01, 1.0, k, gamma)
                    .unwrap()
                    .optimal_crawlers()
                    .crawlers;
                format!("{printed} / {ours}{}", mark(ours == printed))
            })
            .collect();
        let approx = QueueModel::new(0.01, 1.0, 50, gamma)
            .unwrap()
            .approximate_crawlers();
        println!(
            "| {gamma} | {} | {TABLE_1_1_INFINITY} / {approx}{} |",
            cells.join(" | "),
            mark(approx == TABLE_1_1_INFINITY)
        );
    }
    let settings = RviSettings::default();
    for (name, table) in [
        ("1.2 (N = N_s available)", &TABLE_1_2),
        ("1.3 (no limit on N)", &TABLE_1_3),
    ] {
        println!("\nTable {name}: printed / ours\n");
        let last = if table[0].iterations.is_some() {
            "N_iter (ours: chapter's rule / 1e-8 rule)"
        } else {
            "N_max (ours: curve top / most active)"
        };
        println!("| λ | K | γ | C_s | N_s | C_d | N_min | N̄ | {last} | RVI time |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for row in table.iter() {
            let stat = QueueModel::new(row.lambda, 1.0, row.buffer, row.gamma)
                .unwrap()
                .optimal_crawlers();
            let gamma = if row.gamma == 1.13 {
                17.0 / 15.0
            } else {
                row.gamma
            };
            let model = QueueModel::new(row.lambda, 1.0, row.buffer, gamma).unwrap();
            let start = std::time::Instant::now();
            let plan = match row.iterations {
                Some(_) => solve(&model, row.static_crawlers, &settings).unwrap(),
                None => solve_unrestricted(&model, &settings).unwrap(),
            };
            let elapsed = start.elapsed();
            let cd = format!("{:.5}", plan.cost);
            let cd_same = cd == format!("{:.5}", row.dynamic_cost);
            let mean = format!("{:.1}", plan.mean_active);
            let last = match (row.iterations, row.max_active) {
                (Some(n), _) => format!(
                    "{n} / {} / {}",
                    plan.paper_criterion_iterations.unwrap_or(0),
                    plan.iterations
                ),
                (_, Some(m)) => format!(
                    "{m} / {} / {}{}",
                    plan.policy.highest_activating_count.unwrap_or(0),
                    plan.max_active,
                    mark(plan.policy.highest_activating_count == Some(m))
                ),
                _ => String::new(),
            };
            println!(
                "| {} | {} | {}{} | {:.5} / {:.5}{} | {} / {}{} | {:.5} / {cd}{} | {} / {}{} | {:.1} / {mean}{} | {last} | {:.0} ms |",
                row.lambda,
                row.buffer,
                row.gamma,
                if row.gamma == 1.13 { "*" } else { "" },
                row.static_cost,
                stat.cost,
                mark(format!("{:.5}", stat.cost) == format!("{:.5}", row.static_cost) || (stat.cost - row.static_cost).abs() <= 0.5e-5 + 1e-12),
                row.static_crawlers,
                stat.crawlers,
                mark(stat.crawlers == row.static_crawlers),
                row.dynamic_cost,
                mark(cd_same),
                row.min_active,
                plan.min_active,
                mark(plan.min_active == row.min_active),
                row.mean_active,
                mark(mean == format!("{:.1}", row.mean_active)),
                elapsed.as_secs_f64() * 1e3
            );
        }
    }
    println!("\nFigures 1.5-1.7 (N = 16, K = 5, λ = 0.1): printed / ours\n");
    println!("| γ | cost | iterations (ours: chapter's rule / 1e-8 rule) |\n|---|---|---|");
    for (gamma, cost, iterations) in FIGURES_1_5_TO_1_7 {
        let plan = solve(&QueueModel::new(0.1, 1.0, 5, gamma).unwrap(), 16, &settings).unwrap();
        println!(
            "| {gamma} | {cost:.5} / {:.5} ({:.7}) | {iterations} / {} / {} |",
            plan.cost,
            plan.cost,
            plan.paper_criterion_iterations.unwrap_or(0),
            plan.iterations
        );
    }
}
