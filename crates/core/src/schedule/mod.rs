//! From rates to who crawls what and when: integer visits per horizon, per-host timetables, crawler
//! assignment and sequencing, and the exact and simulated value of a timetable.

pub mod assign;
pub mod crawler;
pub mod due;
pub mod evaluate;
pub mod greedy;
pub mod interval;
pub mod night;
pub mod rendezvous;
pub mod simulate;
pub mod timetable;
pub mod visits;

#[cfg(test)]
mod timetable_tests;
#[cfg(test)]
mod visits_tests;
