//! What workers send each other, in columnar batches: input rows to their host's worker
//! ([`rows`], their origins as [`origins`]), URL claims to find URLs listed under several hosts ([`claims`]), solved rows to
//! their crawler's writer ([`rated`]), visited hosts to their crawler's timetable writer
//! ([`visits`] for a cyclic night, [`due`] for a rolling one), what a night learned to its
//! crawler's writer ([`learned`]).

pub mod claims;
pub mod due;
pub mod host_memo;
pub mod learned;
pub mod origins;
pub mod rated;
pub mod rows;
pub mod visits;

/// Text bytes after which a batch in transit is sent (bounds buffering, amortises per-record costs).
pub const BATCH_TEXT_BYTES: usize = 1 << 20;
/// Room past [`BATCH_TEXT_BYTES`] for the row that crosses it (a longer row grows the batch once).
pub const BATCH_TEXT_SLACK: usize = 4 << 10;
