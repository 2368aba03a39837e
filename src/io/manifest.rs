//! The manifest of a published run: every file with its row count and size, written before _SUCCESS.

use serde::{Deserialize, Serialize};

/// One output file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the output folder, '/'-separated.
    pub path: String,
    pub rows: u64,
    pub bytes: u64,
}

/// The list of files of a run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    pub version: String,
    /// The run that wrote the output (its staging folder's suffix): which run a published output
    /// is, for the processes of a cluster that lost their lead while it published.
    #[serde(default)]
    pub run_id: String,
    pub files: Vec<FileEntry>,
}
