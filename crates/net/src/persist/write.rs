//! Writing a state file so that no reader, and no crash, ever sees part of one: the bytes
//! go to a temporary file beside it (mode 0600, synced), which then takes the file's name
//! in one step, and the directory is synced so that the new name survives a power loss.
//!
//! - [`write_private`] replaces the file (`rename`): the last writer wins.
//! - [`create_private`] makes it only if there is none (`link`, which fails on an existing
//!   name): of two processes creating it at once, one makes it and the other reads it.
//!
//! A temporary file is named `.NAME.PID.N.tmp`. A process killed between its creation and
//! its rename leaves it behind; [`remove_leftovers`], called before a file is first read,
//! removes those of processes that no longer run (another running process may be writing
//! its own).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::PRIVATE_FILE_MODE;

/// Replaces `path` with `bytes`, atomically and with mode 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = write_temporary(path, bytes)?;
    let renamed = std::fs::rename(&temporary, path);
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed?;
    sync_directory(path)
}

/// Makes `path` hold `bytes` (mode 0600) if it does not exist: `true` if this call made
/// it, `false` if it was already there (it is then left as it is).
pub fn create_private(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let temporary = write_temporary(path, bytes)?;
    let linked = std::fs::hard_link(&temporary, path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => sync_directory(path).map(|()| true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// A new temporary file beside `path` holding `bytes`, synced, mode 0600.
fn write_temporary(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let temporary = temporary_beside(path);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(PRIVATE_FILE_MODE)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(e);
    }
    Ok(temporary)
}

/// A name beside `path` no other writer uses: `.NAME.PID.N.tmp`.
fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(
        ".{}.{}.{n}.tmp",
        file_name(path),
        std::process::id()
    ))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Syncs the directory of `path`, where a rename or link is recorded.
fn sync_directory(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Removes the temporary files beside `path` that writers killed mid-write left (those of
/// processes that no longer run); returns how many. Nothing else is touched.
pub fn remove_leftovers(path: &Path) -> usize {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let prefix = format!(".{}.", file_name(path));
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            writer_of(&name, &prefix).is_some_and(|pid| !running(pid))
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// The writer's process ID in a temporary file's name `PREFIX PID.N.tmp`, if it is one.
fn writer_of(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_suffix(".tmp")?;
    let (pid, n) = rest.split_once('.')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether a process with this ID runs (this one always does).
fn running(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::read_private;
    use crate::test_files::scratch;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The ID of a process that has ended.
    fn ended_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_file_is_replaced_whole_and_private() {
        let dir = scratch("write-replace");
        let path = dir.join("state.json");
        std::fs::write(&path, b"old").unwrap();
        write_private(&path, b"new").unwrap();
        assert_eq!(read_private(&path, 10).unwrap().unwrap(), b"new");
        assert_eq!(names(&dir), ["state.json"], "no temporary file left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_is_created_once_and_never_replaced() {
        let dir = scratch("write-create");
        let path = dir.join("key");
        assert!(create_private(&path, b"first").unwrap());
        assert!(!create_private(&path, b"second").unwrap());
        assert_eq!(read_private(&path, 10).unwrap().unwrap(), b"first");
        assert_eq!(names(&dir), ["key"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A creation stopped after any of its steps (as a kill -9 stops it: no clean-up)
    /// leaves either no file or the whole one, never an empty or partial one.
    #[test]
    fn a_creation_stopped_after_any_step_leaves_no_file_or_a_whole_one() {
        let dir = scratch("write-steps");
        let path = dir.join("key");
        let whole = [7u8; 32];
        // Stopped after the temporary file is written: no file yet.
        let temporary = write_temporary(&path, &whole).unwrap();
        assert_eq!(read_private(&path, 32), Ok(None));
        // Stopped after the link: the whole file.
        std::fs::hard_link(&temporary, &path).unwrap();
        assert_eq!(read_private(&path, 32).unwrap().unwrap(), whole);
        // The temporary file is the only leftover, and only its writer's: this process
        // runs, so it stays; under an ended writer's name it goes.
        assert_eq!(remove_leftovers(&path), 0);
        let orphan = dir.join(format!(".key.{}.0.tmp", ended_pid()));
        std::fs::rename(&temporary, &orphan).unwrap();
        assert_eq!(remove_leftovers(&path), 1);
        assert_eq!(names(&dir), ["key"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_temporary_files_of_ended_writers_are_removed() {
        let dir = scratch("write-leftovers");
        let path = dir.join("store.json");
        let ended = ended_pid();
        let mine = std::process::id();
        for name in [
            format!(".store.json.{ended}.3.tmp"),
            format!(".store.json.{mine}.0.tmp"),
            format!(".store.json.{ended}.x.tmp"),
            format!(".other.json.{ended}.0.tmp"),
            "store.json".to_string(),
        ] {
            std::fs::write(dir.join(name), b"").unwrap();
        }
        assert_eq!(remove_leftovers(&path), 1);
        let mut kept = vec![
            format!(".other.json.{ended}.0.tmp"),
            format!(".store.json.{ended}.x.tmp"),
            format!(".store.json.{mine}.0.tmp"),
            "store.json".to_string(),
        ];
        kept.sort();
        assert_eq!(names(&dir), kept);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn two_creators_at_once_agree_on_one_file() {
        let dir = scratch("write-race");
        let path = dir.join("key");
        let barrier = std::sync::Barrier::new(8);
        let made: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u8)
                .map(|i| {
                    let (path, barrier) = (&path, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        create_private(path, &[i; 32]).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(made.iter().filter(|m| **m).count(), 1, "{made:?}");
        assert_eq!(read_private(&path, 32).unwrap().unwrap().len(), 32);
        assert_eq!(names(&dir), ["key"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
