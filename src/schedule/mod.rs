//! From rates to who crawls what and when: integer visits per horizon, per-host timetables, crawler
//! assignment and sequencing, and the exact and simulated value of a timetable.

pub mod assign;
pub mod greedy;
pub mod interval;
pub mod visits;

#[cfg(test)]
mod visits_tests;
