//! The check before publication: every file the manifest lists is in the staging folder, as the
//! publishing process sees it, with the size and row count its writer reported.
//!
//! On a cluster, other processes wrote most of the files: a file missing or different here means
//! they wrote to storage this process does not see, which a run must never publish.

use std::path::Path;

use anyhow::{bail, Result};

use super::columns::open_parquet;
use super::manifest::FileEntry;

/// Checks every entry of `files` under `staging`; `writer` names who wrote a file (for the message).
pub fn verify(staging: &Path, files: &[FileEntry], writer: impl Fn(&str) -> String) -> Result<()> {
    let mut problems = Vec::new();
    for f in files {
        let path = staging.join(&f.path);
        let problem = match std::fs::metadata(&path) {
            Err(_) => Some("is not there".to_owned()),
            Ok(m) if m.len() != f.bytes => Some(format!(
                "has {} bytes where its writer wrote {}",
                m.len(),
                f.bytes
            )),
            Ok(_) => match open_parquet(&path, "") {
                Err(e) => Some(format!("is not readable Parquet ({e:#})")),
                Ok(b) => {
                    let rows = b.metadata().file_metadata().num_rows() as u64;
                    (rows != f.rows)
                        .then(|| format!("has {rows} rows where its writer wrote {}", f.rows))
                }
            },
        };
        if let Some(p) = problem {
            problems.push(format!("{} (written by {}) {p}", f.path, writer(&f.path)));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let shown: Vec<&String> = problems.iter().take(5).collect();
    bail!(
        "the output is not what its writers wrote, as this process sees {}: {}{}; nothing published. \
         Every process must write to storage the publishing process sees (--out on a shared filesystem, \
         at the same path on every machine)",
        staging.display(),
        shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("; "),
        if problems.len() > shown.len() {
            format!(" (and {} more)", problems.len() - shown.len())
        } else {
            String::new()
        }
    )
}
