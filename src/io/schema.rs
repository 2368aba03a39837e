//! The output tables' schemas, with units, in one place (the README's schema tables mirror these).

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// Page sets as `revisit gen` writes them (the input schema with every optional column).
pub fn pages() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("importance", DataType::Float64, false),
        Field::new("change_rate", DataType::Float64, false),
        Field::new("complete_obs", DataType::Boolean, false),
    ]))
}

/// `rates/crawler=N/part-*.parquet`: one row per scheduled URL.
pub fn rates() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("importance", DataType::Float64, false),
        Field::new("change_rate", DataType::Float64, false),
        Field::new("complete_obs", DataType::Boolean, false),
        Field::new("crawl_rate", DataType::Float64, false),
        Field::new("crawl_probability", DataType::Float64, true),
        Field::new("host_capped", DataType::Boolean, false),
        Field::new("fetch_interval_s", DataType::Float64, false),
        Field::new("last_fetch_at", utc(), true),
        Field::new("next_fetch_at", utc(), false),
    ]))
}

/// Timestamps: microseconds, UTC.
fn utc() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Units of the rates table's numeric columns (written into the Parquet metadata).
pub const RATES_UNITS: &str = r#"{"importance":"relative weight","change_rate":"changes per day","crawl_rate":"fetches per day","crawl_probability":"probability of a fetch on each change notice","fetch_interval_s":"seconds between fetches (86400 / crawl_rate)","last_fetch_at":"UTC, microseconds; null: never fetched","next_fetch_at":"UTC, microseconds"}"#;

/// `visits/crawler=N/part-*.parquet`: one row per fetch of the crawler's night, by time.
pub fn visits() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("at_s", DataType::Float64, false),
        Field::new("url", DataType::Utf8, false),
        Field::new("host", DataType::Utf8, false),
        Field::new(VISITS_TIME, utc(), false),
    ]))
}

/// The visits table's fetch time column (UTC timestamp).
pub const VISITS_TIME: &str = "fetch_at";

/// Units of the visits table's columns.
pub const VISITS_UNITS: &str = r#"{"at_s":"seconds from the night's start (with --cyclic the timetable repeats every horizon); gaps hold to 1e-6 s","fetch_at":"UTC, microseconds (start + at_s)"}"#;

/// `hosts/part-*.parquet`: one row per host.
pub fn hosts() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, false),
        Field::new("crawler", DataType::Int32, false),
        // null: no politeness limit (min_delay_s 0)
        Field::new("cap", DataType::Float64, true),
        // null: unbounded (at multiplier 0, pages that would take any rate)
        Field::new("demand", DataType::Float64, true),
        Field::new("budget", DataType::Float64, false),
        Field::new("capped", DataType::Boolean, false),
        Field::new("multiplier", DataType::Float64, false),
    ]))
}

/// Units of the hosts table's numeric columns.
pub const HOSTS_UNITS: &str = r#"{"cap":"fetches per horizon","demand":"fetches per horizon at the global multiplier","budget":"fetches per horizon","multiplier":"utility per (fetch per day)"}"#;

/// `rejected/part-*.parquet`: every input row that was not scheduled, with its reason.
pub fn rejected() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("row", DataType::Int64, false),
        Field::new("column", DataType::Utf8, false),
        Field::new("reason", DataType::Utf8, false),
        Field::new("url", DataType::Utf8, true),
        Field::new("host", DataType::Utf8, true),
        Field::new("importance", DataType::Float64, true),
        Field::new("change_rate", DataType::Float64, true),
    ]))
}

/// `sweep.parquet` (and `sweep.csv`): one row per policy, politeness and bandwidth of a sweep.
pub fn sweep() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("policy", DataType::Utf8, false),
        Field::new("polite", DataType::Boolean, false),
        Field::new("bandwidth_fraction", DataType::Float64, false),
        Field::new("bandwidth", DataType::Float64, false),
        Field::new("bandwidth_used", DataType::Float64, false),
        Field::new("multiplier", DataType::Float64, false),
        Field::new("rounds", DataType::UInt32, false),
        Field::new("cost_harmonic", DataType::Float64, true),
        Field::new("cost_binary", DataType::Float64, false),
        Field::new("cost_fixed_interval", DataType::Float64, false),
        Field::new("freshness_poisson", DataType::Float64, false),
        Field::new("freshness_fixed_interval", DataType::Float64, false),
        Field::new("urls_starved", DataType::UInt64, false),
        Field::new("hosts_capped", DataType::UInt64, false),
    ]))
}

/// Units of the sweep table's numeric columns.
pub const SWEEP_UNITS: &str = r#"{"bandwidth_fraction":"fetches per day per valid URL","bandwidth":"fetches per day","bandwidth_used":"fetches per day","multiplier":"utility per (fetch per day)","cost_harmonic":"importance x ln (harmonic staleness, NeurIPS'19 eq. 2); null when a changing URL is starved (infinite)","cost_binary":"importance x share of time stale, Poisson crawls","cost_fixed_interval":"importance x share of time stale, evenly spaced crawls","freshness_poisson":"importance-weighted share of time fresh","freshness_fixed_interval":"importance-weighted share of time fresh"}"#;

/// `estimate --out`: every URL's estimated change rate and what it rests on.
pub fn change_rates() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("change_rate", DataType::Float64, false),
        Field::new("complete_obs", DataType::Boolean, false),
        Field::new("observations", DataType::UInt64, false),
        Field::new("changes", DataType::UInt64, false),
    ]))
}

/// A fetch log as `simulate` writes it (and `run --fetched` reads): one row per fetch.
pub fn fetched() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("fetched_at", utc(), false),
        Field::new("ok", DataType::Boolean, false),
    ]))
}
