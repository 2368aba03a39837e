//! Input discovery: files, folders (searched recursively) and glob patterns.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Names of the files a page-set folder is searched for: Parquet, CSV, TSV and seed lists.
pub const PAGE_EXTENSIONS: [&str; 4] = ["parquet", "csv", "tsv", "txt"];

/// The Parquet files named by `specs` (files, folders or globs), sorted and without repeats.
pub fn expand(specs: &[String]) -> Result<Vec<PathBuf>> {
    expand_with(specs, &["parquet"])
}

/// The page-set files named by `specs`: folders are searched for every [`PAGE_EXTENSIONS`] kind.
pub fn expand_pages(specs: &[String]) -> Result<Vec<PathBuf>> {
    expand_with(specs, &PAGE_EXTENSIONS)
}

/// The files named by `specs` (files, folders searched for names ending in one of `extensions`,
/// or globs), sorted and without repeats.
fn expand_with(specs: &[String], extensions: &[&str]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for spec in specs {
        let path = Path::new(spec);
        let before = files.len();
        if path.is_dir() {
            collect_dir(path, extensions, &mut files)?;
            if files.len() == before {
                let kinds: Vec<String> = extensions.iter().map(|e| format!("*.{e}")).collect();
                bail!("input folder {spec} holds no {} file", kinds.join(", "));
            }
        } else if path.is_file() {
            files.push(path.to_path_buf());
        } else if spec.contains(['*', '?', '[']) {
            for entry in glob::glob(spec).with_context(|| format!("bad glob pattern {spec}"))? {
                let p = entry.with_context(|| format!("reading a match of {spec}"))?;
                if p.is_file() {
                    files.push(p);
                }
            }
            if files.len() == before {
                bail!("input pattern {spec} matches no file");
            }
        } else {
            bail!("input {spec} does not exist (give files, folders or glob patterns)");
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The size of a file in bytes, for provenance (0 if it cannot be read: it was read already).
pub fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn collect_dir(dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("listing {}", dir.display()))?;
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name.starts_with('_') {
            continue; // hidden files and markers such as _SUCCESS
        }
        let wanted = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| extensions.iter().any(|w| e.eq_ignore_ascii_case(w)));
        if p.is_dir() {
            collect_dir(&p, extensions, out)?;
        } else if wanted {
            out.push(p);
        }
    }
    Ok(())
}
