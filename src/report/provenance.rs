//! Where a result came from, recorded in every summary and in the key-value metadata of every
//! Parquet file a job writes: the revisit version, the run's id and start time, the inputs with
//! their sizes, the hosts table, and every option as resolved (job file merged, defaults filled).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::plan::Options;

/// The version written into summaries and file metadata.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// One input file: its path as the job saw it, its format and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    pub path: String,
    /// parquet, csv, tsv, seed list; `hosts` for a hosts table.
    pub format: String,
    pub bytes: u64,
    /// The hosts a hosts table lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<u64>,
}

impl InputFile {
    /// A page-set file.
    pub fn new(path: &Path, format: &str, bytes: u64) -> Self {
        InputFile {
            path: path.display().to_string(),
            format: format.to_owned(),
            bytes,
            hosts: None,
        }
    }

    /// A hosts table of `bytes` listing `hosts` hosts.
    pub fn hosts_table(path: &Path, bytes: u64, hosts: u64) -> Self {
        InputFile {
            hosts: Some(hosts),
            ..InputFile::new(path, "hosts", bytes)
        }
    }
}

/// A run's identity: an id every worker agrees on, and when it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunIdentity {
    pub id: u64,
    /// Microseconds since the Unix epoch.
    pub started_us: i64,
}

impl RunIdentity {
    /// A fresh identity for a single-process command: the clock, mixed with the process id.
    pub fn now() -> Self {
        let started_us = crate::time::now_us();
        RunIdentity {
            id: (started_us as u64).wrapping_mul(1_000) ^ ((std::process::id() as u64) << 48),
            started_us,
        }
    }

    /// The id as written: 16 hex digits.
    pub fn id_text(&self) -> String {
        format!("{:016x}", self.id)
    }
}

/// The provenance block every command's summary starts with.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Provenance {
    /// revisit's version.
    pub version: String,
    /// The command: run, sweep, evaluate, estimate, simulate.
    pub command: String,
    /// 16 hex digits, the same in the summary and in every file of the run.
    pub run_id: String,
    /// When the run started, UTC, RFC 3339.
    pub started_at: String,
    /// The input files, their formats and sizes.
    pub inputs: Vec<InputFile>,
    /// The hosts table, if any.
    pub hosts_table: Option<InputFile>,
    /// Every option, resolved: the command line over the job file over the defaults, by job-file
    /// key (null: neither given nor defaulted).
    pub options: Options,
}

impl Provenance {
    /// The provenance of `command` run as `identity` on `inputs`.
    pub fn new(
        command: &str,
        identity: RunIdentity,
        inputs: Vec<InputFile>,
        hosts_table: Option<InputFile>,
        options: &Options,
    ) -> Self {
        Provenance {
            version: VERSION.to_owned(),
            command: command.to_owned(),
            run_id: identity.id_text(),
            started_at: crate::time::format_timestamp(identity.started_us),
            inputs,
            hosts_table,
            options: options.clone(),
        }
    }

    /// The key-value metadata of every Parquet file of the run (`revisit.*`; lists and options as
    /// JSON).
    pub fn metadata(&self) -> Vec<(String, String)> {
        vec![
            ("revisit.version".into(), self.version.clone()),
            ("revisit.command".into(), self.command.clone()),
            ("revisit.run_id".into(), self.run_id.clone()),
            ("revisit.started_at".into(), self.started_at.clone()),
            ("revisit.inputs".into(), json(&self.inputs)),
            ("revisit.hosts_table".into(), json(&self.hosts_table)),
            ("revisit.options".into(), json(&self.options)),
        ]
    }
}

/// JSON text of plain data (which cannot fail to serialize).
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
