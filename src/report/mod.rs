//! What each command tells: the summaries written to `summary.json` or printed with `--json`, their
//! assembly from what the job measured, and the text a person reads.

pub mod estimate;
pub mod evaluate;
pub mod memory;
pub mod run;
pub mod simulate;
pub mod sweep;
