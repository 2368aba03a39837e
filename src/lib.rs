//! revisit: freshness-optimal, polite crawl rates and timetables as a timely-dataflow batch job.
//!
//! Layers: [`objective`] and [`solve`] are the math (no timely, no files); [`io`] reads and writes
//! Parquet; [`job`] is the dataflow that shards hosts over workers and drives the solver's rounds.

pub mod estimate;
pub mod exact_sum;
pub mod gen;
pub mod io;
pub mod job;
pub mod objective;
pub mod plan;
pub mod report;
pub mod rfc3339;
pub mod schedule;
pub mod solve;
pub mod units;
