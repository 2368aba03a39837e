//! The lock on an output folder: one run at a time writes into `--out`, and the run holding the lock
//! may clear what dead runs left beside it.
//!
//! The lock is `flock` on a hidden file beside the output (`.NAME.lock`), held by the process that
//! publishes until it exits: the kernel releases it whatever way the process ends, so a lock is
//! never stale. The file says which run holds it (for the message a second run prints, and for the
//! other processes of a cluster, which check that they see it: shared storage).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::publish;

/// A held lock on an output folder.
#[derive(Debug)]
pub struct OutLock {
    /// Kept open: closing it releases the lock.
    _file: File,
    pub path: PathBuf,
    /// The run holding it.
    pub run_id: String,
    /// Staging folders of dead runs removed when the lock was taken.
    pub cleared: Vec<PathBuf>,
}

/// The lock file of output `out`.
pub fn lock_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parent.join(format!(".{name}.lock"))
}

/// A fresh run id: the clock and the process id, in hex.
pub fn new_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!("{:016x}", nanos ^ ((std::process::id() as u64) << 48))
}

impl OutLock {
    /// Takes the lock on `out` for a new run, or refuses naming the run that holds it; then removes
    /// the staging folders of earlier runs (dead: a live one would hold the lock).
    pub fn acquire(out: &Path) -> Result<OutLock> {
        publish::check_location(out)?;
        publish::check_replaceable(out)?;
        let path = lock_path(out);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("creating the folder of --out {}", out.display()))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        if !try_lock(&file)? {
            let mut holder = String::new();
            file.read_to_string(&mut holder).ok();
            let holder = holder.lines().collect::<Vec<_>>().join(", ");
            bail!(
                "another revisit run is writing --out {} ({}; lock {}): this run refuses rather than wait; run it when that one has finished, or give another --out",
                out.display(),
                if holder.is_empty() { "starting" } else { &holder },
                path.display()
            );
        }
        let run_id = new_run_id();
        let host = fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        file.set_len(0)?;
        file.rewind()?;
        write!(
            file,
            "run {run_id}\npid {}\nhost {}\n",
            std::process::id(),
            host.trim()
        )?;
        // the other processes of a cluster read it (on another machine: through the server)
        file.sync_all().ok();
        let mut cleared = Vec::new();
        for dead in publish::stale_staging(out) {
            let removed = if dead.is_dir() {
                fs::remove_dir_all(&dead)
            } else {
                fs::remove_file(&dead)
            };
            if removed.is_ok() {
                cleared.push(dead);
            }
        }
        Ok(OutLock {
            _file: file,
            path,
            run_id,
            cleared,
        })
    }
}

/// Checks, on a process that does not publish, that it sees the lock of run `run_id` on `out` as
/// the lead wrote it: the output must be on storage every process of the cluster sees.
pub fn check_visible(out: &Path, run_id: &str) -> Result<()> {
    let path = lock_path(out);
    let text = fs::read_to_string(&path).unwrap_or_default();
    let seen = text
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .unwrap_or("")
        .trim();
    if seen != run_id {
        bail!(
            "it does not see the lock file {} as process 0 wrote it (run {run_id}; here {}): --out must be on storage every process sees (a shared filesystem at the same path on every machine)",
            path.display(),
            if seen.is_empty() { "no such file".to_owned() } else { format!("run {seen}") }
        );
    }
    Ok(())
}

/// Tries an exclusive `flock`; false if another process holds it.
fn try_lock(file: &File) -> Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on an open descriptor we own; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(false);
    }
    Err(e).context("locking the output folder")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_output_is_refused_naming_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let first = OutLock::acquire(&out).unwrap();
        // flock is per open file: a second open in the same process conflicts like another process
        let err = OutLock::acquire(&out).unwrap_err().to_string();
        assert!(
            err.contains("another revisit run") && err.contains(&first.run_id),
            "{err}"
        );
        check_visible(&out, &first.run_id).unwrap();
        assert!(check_visible(&out, "0000").is_err());
        drop(first);
        OutLock::acquire(&out).unwrap();
    }

    #[test]
    fn dead_runs_staging_folders_are_cleared_by_the_next_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let dead = publish::staging_dir(&out, "dead");
        fs::create_dir_all(dead.join("rates")).unwrap();
        fs::write(dead.join("_SUCCESS"), "").unwrap();
        let keep = tmp.path().join(".other.staging-x");
        fs::create_dir_all(&keep).unwrap();
        let lock = OutLock::acquire(&out).unwrap();
        assert_eq!(lock.cleared, vec![dead.clone()]);
        assert!(!dead.exists() && keep.exists());
    }

    #[test]
    fn an_output_inside_an_output_or_the_current_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("old");
        fs::create_dir_all(&old).unwrap();
        fs::write(old.join(publish::SUCCESS), "").unwrap();
        fs::write(old.join(publish::MANIFEST), "{}").unwrap();
        let err = OutLock::acquire(&old.join("new")).unwrap_err().to_string();
        assert!(err.contains("inside the revisit output"), "{err}");
        let cwd = std::env::current_dir().unwrap();
        let err = publish::check_location(&cwd).unwrap_err().to_string();
        assert!(err.contains("current folder"), "{err}");
        assert!(publish::check_location(Path::new("/")).is_err());
    }
}
