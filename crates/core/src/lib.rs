//! The math of revisit, free of dataflow and files: every function here works on plain slices and
//! asks its environment only for all-reduces ([`reduce::AllReduce`]), so the same code runs in
//! unit tests and inside the distributed job.
//!
//! Layers, each importing only those above it:
//! - [`units`], [`exact_sum`], [`reduce`], [`memory`], [`wide`]: what a number is, exact sums,
//!   combining partials, how large arrays are backed, loops for the CPU's vector width;
//! - [`objective`]: each URL's best response to a price and the value of any rates;
//! - [`solve`]: the global multiplier, per-host caps and rates (the problem and its optimum);
//! - [`schedule`]: integer visits, host timetables, crawler assignment and sequencing, and the exact
//!   value of visit times;
//! - [`estimate`]: change rates from observation histories;
//! - [`balance`]: which worker holds each host, its pages evened out from a sample;
//! - [`fetch_time`]: staleness when fetches take random time;
//! - [`capacity`]: how many crawlers should feed an indexer.

pub mod balance;
pub mod capacity;
pub mod estimate;
pub mod exact_sum;
pub mod fetch_time;
pub mod memory;
pub mod objective;
pub mod reduce;
pub mod schedule;
pub mod solve;
pub mod units;
pub mod wide;
