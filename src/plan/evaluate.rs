//! The plan of `revisit evaluate`.

use revisit_core::fetch_time::FetchTime;
use revisit_core::objective::Objective;

use super::{Cluster, Options, PagesPlan};
use crate::io::visits_in::{HorizonSource, VisitsFile};

/// The objectives whose optimum `evaluate` compares with (their cost is a freshness measure).
pub const OBJECTIVES: [Objective; 3] = [
    Objective::Harmonic,
    Objective::Binary,
    Objective::BinaryFixed,
];

/// What `evaluate` values: a rates table or a timetable.
#[derive(Clone, Debug)]
pub enum Table {
    /// Rates tables as given (Parquet files, folders, globs, or a CSV file).
    Rates(Vec<String>),
    /// Visits tables, their footers read, and where the horizon they repeat over came from (the
    /// pages plan's horizon is that horizon).
    Visits {
        files: Vec<VisitsFile>,
        horizon_source: HorizonSource,
    },
}

/// What `evaluate` does.
#[derive(Clone, Debug)]
pub struct EvaluatePlan {
    pub pages: PagesPlan,
    pub cluster: Cluster,
    pub table: Table,
    /// Bandwidth of the optima, fetches per day (None: what the table uses).
    pub bandwidth: Option<f64>,
    /// The fetch-time law (`--fetch-time`) as given and as read.
    pub fetch_time: Option<(String, FetchTime)>,
    /// A Monte Carlo check of a timetable's exact value (`--simulate`).
    pub monte_carlo: Option<MonteCarloPlan>,
    pub quiet: bool,
    /// Every option as resolved, for provenance.
    pub options: Options,
}

/// Poisson changes drawn against a cyclic timetable for some horizons, seeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MonteCarloPlan {
    pub horizons: u64,
    pub seed: u64,
}
