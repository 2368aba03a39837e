//! revisit: freshness-optimal, polite crawl rates and timetables as a timely-dataflow batch job.
//!
//! The math is the `revisit-core` crate (no dataflow, no files). Here, each layer importing only
//! those before it: [`io`] reads and writes files; [`plan`] is what a command will do, resolved
//! once; [`report`] is what it tells; [`job`] is the dataflow that shards hosts over workers and
//! drives the solver's rounds; [`cli`] turns command lines into plans and runs them. Under all of
//! them, [`append`], [`prefetch`] and [`time`] are helpers of byte strings, caches and timestamps,
//! and [`plain`] sends columns of numbers between processes as byte strings.

pub mod append;
pub mod cli;
pub mod gen;
pub mod io;
pub mod job;
pub mod plain;
pub mod plan;
pub mod prefetch;
pub mod report;
pub mod time;
