//! Files: Parquet readers and writers, schemas, input discovery, atomic publishing.
//!
//! Nothing here knows the math; the job layer moves what these functions read and write.

pub mod baseline;
pub mod columns;
pub mod fetch_times;
pub mod history;
pub mod host_name;
pub mod hosts;
pub mod inputs;
pub mod manifest;
pub mod pages;
pub mod pages_fill;
pub mod parquet_out;
pub mod plot;
pub mod publish;
pub mod rated;
pub mod rates_in;
pub mod rows;
pub mod schema;
pub mod sweep_table;
pub mod visits_in;
