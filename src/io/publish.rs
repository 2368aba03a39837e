//! Atomic publishing: a run writes into a staging folder beside the output and swaps it into place
//! only when complete, `_SUCCESS` last; a failed run leaves the last good output untouched.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::manifest::Manifest;

/// Name of the marker a complete output carries.
pub const SUCCESS: &str = "_SUCCESS";
/// Name of the manifest file.
pub const MANIFEST: &str = "manifest.json";

/// Refuses to run if `out` exists and is not a revisit output (we would replace it).
pub fn check_replaceable(out: &Path) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!(
            "--out {} exists and is a file; give a folder",
            out.display()
        );
    }
    let empty = fs::read_dir(out)?.next().is_none();
    if empty || out.join(SUCCESS).exists() || out.join(MANIFEST).exists() {
        return Ok(());
    }
    bail!(
        "--out {} exists and is not a revisit output (no {SUCCESS}); it would be replaced: remove it or choose another folder",
        out.display()
    )
}

/// The staging folder of run `run_id` for output `out`: a hidden sibling, on the same filesystem so
/// that the final rename is atomic.
pub fn staging_dir(out: &Path, run_id: &str) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parent.join(format!(".{name}.staging-{run_id}"))
}

/// The path of file `rel` in the staging folder `staging`, its folders created.
pub fn staged_file(staging: &Path, rel: &str) -> Result<PathBuf> {
    let path = staging.join(rel);
    std::fs::create_dir_all(path.parent().unwrap_or(staging))
        .with_context(|| format!("creating {}", path.display()))?;
    Ok(path)
}

/// Writes the manifest and `_SUCCESS` into `staging`, then swaps it into `out`'s place.
///
/// The swap is the moment of publication: after it, the output is complete and nothing undoes it
/// (removing the previous output, now in `staging`'s place, is best effort).
pub fn publish(staging: &Path, out: &Path, manifest: &Manifest) -> Result<()> {
    let text = serde_json::to_string_pretty(manifest)?;
    fs::write(staging.join(MANIFEST), text).context("writing the manifest")?;
    fs::write(staging.join(SUCCESS), b"").context("writing _SUCCESS")?;
    sync_dir(staging);
    check_replaceable(out)?;
    if out.exists() {
        if exchange(staging, out).is_ok() {
            // `staging` now holds the previous output (unless a process that gave up moved it away)
            if let Err(e) = fs::remove_dir_all(staging) {
                eprintln!(
                    "[revisit] warning: the previous output, moved to {}, could not be removed ({e}); the next run removes it",
                    staging.display()
                );
            }
        } else if !staging.exists() {
            bail!(
                "the staging folder {} is gone (another process of the cluster gave up and moved it away)",
                staging.display()
            );
        } else {
            // No atomic exchange on this filesystem: move the old output aside first (a reader may
            // see no output for an instant, never a partial one), and back if the new one cannot
            // take its place.
            let mut aside = OsString::from(staging.as_os_str());
            aside.push(".old");
            let aside = PathBuf::from(aside);
            fs::rename(out, &aside).with_context(|| format!("moving {} aside", out.display()))?;
            if let Err(e) = fs::rename(staging, out) {
                fs::rename(&aside, out).ok();
                return Err(e)
                    .with_context(|| format!("moving the new output to {}", out.display()));
            }
            fs::remove_dir_all(&aside).ok();
        }
    } else {
        fs::rename(staging, out)
            .with_context(|| format!("moving the new output to {}", out.display()))?;
    }
    if let Some(parent) = out.parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// Moves a staging folder out of the lead's reach (a process giving up during publication), best
/// effort: the lead's swap then fails, or has already happened.
pub fn abandon(staging: &Path) {
    let mut to = OsString::from(staging.as_os_str());
    to.push(".abandoned");
    fs::rename(staging, PathBuf::from(to)).ok();
}

/// The run id of the complete output at `out` (its manifest's, when `_SUCCESS` is there).
pub fn published_run(out: &Path) -> Option<String> {
    if !out.join(SUCCESS).exists() {
        return None;
    }
    let text = fs::read_to_string(out.join(MANIFEST)).ok()?;
    let manifest: Manifest = serde_json::from_str(&text).ok()?;
    Some(manifest.run_id).filter(|id| !id.is_empty())
}

/// The staging folders of earlier runs into `out` (dead runs, when the caller holds the lock).
pub fn stale_staging(out: &Path) -> Vec<PathBuf> {
    let Some(name) = out.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.staging-");
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Refuses an output folder that publishing cannot replace safely: one without a name of its own
/// (`.`, `/`), the current folder or one holding it (it would be swapped away under the running
/// process), or one inside an earlier revisit output (replacing that one would delete this one).
pub fn check_location(out: &Path) -> Result<()> {
    if out.file_name().is_none() {
        bail!(
            "--out {} has no folder name of its own: give the folder to write, e.g. --out out (the output is built beside it and swapped into place)",
            out.display()
        );
    }
    if let Ok(cwd) = std::env::current_dir() {
        if cwd.starts_with(out) {
            bail!(
                "--out {} is the current folder or holds it: the output is swapped into place whole, so write it elsewhere (e.g. --out out)",
                out.display()
            );
        }
    }
    for ancestor in out.ancestors().skip(1) {
        if ancestor.join(SUCCESS).exists() && ancestor.join(MANIFEST).exists() {
            bail!(
                "--out {} is inside the revisit output {}, which the next run into it would replace whole: give a folder outside it",
                out.display(),
                ancestor.display()
            );
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) {
    if let Ok(f) = fs::File::open(dir) {
        let _ = f.sync_all(); // best effort: not every filesystem syncs folders
    }
}

/// Atomically exchanges two paths (Linux renameat2 RENAME_EXCHANGE).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let ca = CString::new(a.as_os_str().as_bytes())?;
    let cb = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: two valid NUL-terminated paths; renameat2 does not retain them.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no atomic exchange",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_replaces_a_previous_output_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        for generation in 0..2 {
            let staging = staging_dir(&out, &format!("run{generation}"));
            fs::create_dir_all(staging.join("rates")).unwrap();
            fs::write(staging.join("rates/gen.txt"), format!("{generation}")).unwrap();
            publish(&staging, &out, &Manifest::default()).unwrap();
            assert_eq!(
                fs::read_to_string(out.join("rates/gen.txt")).unwrap(),
                format!("{generation}")
            );
            assert!(out.join(SUCCESS).exists() && !staging.exists());
        }
        let leftovers: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the output remains");
    }

    #[test]
    fn a_foreign_folder_is_not_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("precious.txt"), "x").unwrap();
        let err = check_replaceable(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("not a revisit output"), "{err}");
    }
}
