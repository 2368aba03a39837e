//! From rates to who crawls what: hosts assigned to crawlers.

pub mod assign;
