//! Input discovery: files, folders (searched recursively for *.parquet) and glob patterns.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The Parquet files named by `specs` (files, folders or globs), sorted and without repeats.
pub fn expand(specs: &[String]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for spec in specs {
        let path = Path::new(spec);
        let before = files.len();
        if path.is_dir() {
            collect_dir(path, &mut files)?;
            if files.len() == before {
                bail!("input folder {spec} holds no *.parquet file");
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
            bail!("input {spec} does not exist (give files, folders or glob patterns of Parquet page sets)");
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

fn collect_dir(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
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
        if p.is_dir() {
            collect_dir(&p, out)?;
        } else if name.ends_with(".parquet") {
            out.push(p);
        }
    }
    Ok(())
}
