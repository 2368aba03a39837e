//! revisit: freshness-optimal, polite crawl rates and timetables as a timely-dataflow batch job.
//!
//! The math is the `revisit-core` crate (no dataflow, no files). Here: [`io`] reads and writes
//! files; [`job`] is the dataflow that shards hosts over workers and drives the solver's rounds;
//! [`cli`] turns command lines into plans and runs them; [`report`] is what a run tells.

pub mod cli;
pub mod gen;
pub mod io;
pub mod job;
pub mod report;
pub mod rfc3339;
