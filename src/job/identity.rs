//! The run's identity, agreed by every worker before any work: the largest of the workers' id
//! candidates, and the earliest of their start times. It names the staging folder and is written
//! into the summary and every file.

use revisit_core::reduce::{AllReduce, Combine};
use serde::{Deserialize, Serialize};

use super::channel::Reducer;
use crate::report::provenance::RunIdentity;

/// Agrees on the run's identity (every worker takes part).
pub fn agree(reducer: &mut Reducer<'_>) -> RunIdentity {
    let mine = RunIdentity::now();
    let agreed = reducer.all_reduce(Candidate {
        id: mine.id,
        started_us: mine.started_us,
    });
    RunIdentity {
        id: agreed.id,
        started_us: agreed.started_us,
    }
}

#[derive(Clone, Serialize, Deserialize)]
struct Candidate {
    id: u64,
    started_us: i64,
}

impl Combine for Candidate {
    fn combine(&mut self, o: Self) {
        self.id = self.id.max(o.id);
        self.started_us = self.started_us.min(o.started_us);
    }
}

/// `agreed` named by `run_id` (16 hex digits, the id the output lock was taken with), so that the
/// lock, the staging folder, the manifest and the provenance name the run alike.
pub fn with_id(agreed: RunIdentity, run_id: &str) -> RunIdentity {
    RunIdentity {
        id: u64::from_str_radix(run_id, 16).unwrap_or(agreed.id),
        ..agreed
    }
}
