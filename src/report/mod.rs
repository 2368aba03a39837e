//! What each command tells: the summaries written to `summary.json` or printed with `--json`, their
//! assembly from what the job measured, and the text a person reads.

pub mod clock;
pub mod estimate;
pub mod evaluate;
pub mod format;
pub mod memory;
pub mod provenance;
pub mod rejects;
pub mod rows;
pub mod run;
pub mod simulate;
pub mod sweep;

/// Wall-clock seconds of a command whose phases are not told apart (every summary has a
/// `seconds` object; commands with phases list them beside `total`).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TotalSeconds {
    pub total: f64,
}
