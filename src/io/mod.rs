//! Files: Parquet readers and writers, schemas, input discovery, atomic publishing.
//!
//! Nothing here knows the math or the dataflow: the job hands rows to these writers and takes rows
//! from these readers.

pub mod baseline;
pub mod change_rates_out;
pub mod columns;
pub mod fetch_times;
pub mod fetched_in;
pub mod fetched_out;
pub mod history;
pub mod history_out;
pub mod host_dictionary;
pub mod host_name;
pub mod hosts;
pub mod hosts_out;
pub mod inputs;
pub mod learned;
pub mod manifest;
pub mod nights_plot;
pub mod out_lock;
pub mod page_numbers;
pub mod page_text;
pub mod pages;
pub mod pages_fill;
pub mod parquet_out;
pub mod plot;
pub mod politeness_key;
pub mod publish;
pub mod rates_in;
pub mod rates_out;
pub mod rejected_out;
pub mod row_groups;
pub mod schema;
pub mod state_in;
pub mod sweep_table;
pub mod verify;
pub mod visits_in;
pub mod visits_out;
