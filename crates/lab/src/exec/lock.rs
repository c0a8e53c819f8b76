//! One invocation per campaign directory (or per shard of it) at a time.
//!
//! An invocation holds `DIR/.lock` (a whole campaign) or `DIR/.lock-shard-I-of-N` (one
//! shard, so the shards of a job array still share a directory) for as long as it runs.
//! The file is created with `create_new`, which is atomic on local file systems and on
//! NFSv3+; it holds the holder's process id and host name and is removed when the
//! invocation ends, however it ends short of being killed.
//!
//! A lock left by a killed invocation is stale. It is taken over when it names this host
//! and a process id that no longer runs (checked in `/proc`, so on Linux), or a Slurm job
//! (array task) that `squeue` no longer lists: a shard cancelled on one node of a cluster
//! does not block the resubmitted shard on another. Anywhere else the message names the
//! file to delete once no satquic runs there.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::LabError;

/// A held lock; dropping it removes the file.
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn lock_name(shard: Option<(usize, usize)>) -> String {
    match shard {
        None => ".lock".into(),
        Some((i, n)) => format!(".lock-shard-{i}-of-{n}"),
    }
}

/// This machine's name as the kernel knows it, or "" where that cannot be read.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// The Slurm job (`ARRAYJOB_TASK` for an array task) this process runs in, if any.
fn slurm_job() -> Option<String> {
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    let job = match (var("SLURM_ARRAY_JOB_ID"), var("SLURM_ARRAY_TASK_ID")) {
        (Some(array), Some(task)) => format!("{array}_{task}"),
        _ => var("SLURM_JOB_ID")?,
    };
    is_job_id(&job).then_some(job)
}

fn is_job_id(job: &str) -> bool {
    !job.is_empty() && job.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// Whether Slurm says job `job` has ended: `squeue` lists it no more (or no longer
/// knows it). None where squeue cannot tell (not installed, controller unreachable).
fn slurm_job_ended(job: &str) -> Option<bool> {
    let o = std::process::Command::new("squeue")
        .args(["-h", "-o", "%T", "-j", job])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    if o.status.success() {
        return Some(String::from_utf8_lossy(&o.stdout).trim().is_empty());
    }
    String::from_utf8_lossy(&o.stderr)
        .contains("Invalid job id")
        .then_some(true)
}

/// Whether the lock's text names a process of this host that has ended, or a Slurm job
/// that has.
fn is_stale(text: &str) -> bool {
    is_stale_with(text, &host_name(), &slurm_job_ended)
}

fn is_stale_with(text: &str, here: &str, slurm_ended: &dyn Fn(&str) -> Option<bool>) -> bool {
    let mut fields = text.split_whitespace();
    let (Some(pid), Some(host)) = (fields.next(), fields.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if !here.is_empty() && host == here && Path::new("/proc/self").exists() {
        return !Path::new("/proc").join(pid.to_string()).exists();
    }
    fields
        .find_map(|f| f.strip_prefix("slurm-job="))
        .filter(|job| is_job_id(job))
        .and_then(slurm_ended)
        .unwrap_or(false)
}

/// Takes the lock of `dir` for a whole campaign (`shard = None`) or one shard. A whole
/// campaign also conflicts with any running shard, and a shard with a whole campaign.
pub fn lock(dir: &Path, shard: Option<(usize, usize)>) -> Result<DirLock, LabError> {
    let path = dir.join(lock_name(shard));
    let held = take(&path)?;
    // The other kind of invocation: a whole campaign excludes every shard and back.
    let conflict = std::fs::read_dir(dir)
        .map_err(|e| LabError::Io(format!("{}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| match shard {
            None => name.starts_with(".lock-shard-"),
            Some(_) => name == ".lock",
        })
        .find(|name| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            !is_stale(&text)
        });
    if let Some(name) = conflict {
        return Err(in_use(&dir.join(name)));
    }
    Ok(held)
}

fn in_use(path: &Path) -> LabError {
    let holder = std::fs::read_to_string(path).unwrap_or_default();
    LabError::Usage(format!(
        "{} is in use by another satquic (lock {}: {}); if none runs, delete the lock",
        path.parent().unwrap_or(path).display(),
        path.display(),
        holder.trim()
    ))
}

fn take(path: &Path) -> Result<DirLock, LabError> {
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(mut file) => {
                let _ = match slurm_job() {
                    Some(job) => writeln!(
                        file,
                        "{} {} slurm-job={job}",
                        std::process::id(),
                        host_name()
                    ),
                    None => writeln!(file, "{} {}", std::process::id(), host_name()),
                };
                return Ok(DirLock {
                    path: path.to_path_buf(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                if !is_stale(&text) {
                    return Err(in_use(path));
                }
                // A killed invocation's lock: remove it and try once more (a racing
                // invocation that removes it first wins the create_new).
                let _ = std::fs::remove_file(path);
            }
            Err(e) => return Err(LabError::Io(format!("{}: {e}", path.display()))),
        }
    }
    Err(in_use(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("satquic-lock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_second_invocation_is_refused_until_the_first_ends() {
        let d = dir("second");
        let first = lock(&d, None).unwrap();
        let err = lock(&d, None).unwrap_err().to_string();
        assert!(err.contains("in use") && !err.contains('\n'), "{err}");
        assert!(
            lock(&d, Some((0, 2))).is_err(),
            "a shard waits for the campaign"
        );
        drop(first);
        let a = lock(&d, Some((0, 2))).unwrap();
        let _b = lock(&d, Some((1, 2))).unwrap();
        assert!(lock(&d, Some((0, 2))).is_err(), "the same shard twice");
        assert!(lock(&d, None).is_err(), "the campaign waits for its shards");
        drop(a);
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_killed_invocation_s_lock_on_this_host_is_taken_over() {
        if host_name().is_empty() {
            return;
        }
        let d = dir("stale");
        // No process has pid 2^31 - 1 (Linux's pid_max is at most 2^22).
        std::fs::write(d.join(".lock"), format!("2147483647 {}\n", host_name())).unwrap();
        let held = lock(&d, None).unwrap();
        let text = std::fs::read_to_string(d.join(".lock")).unwrap();
        assert!(text.starts_with(&std::process::id().to_string()), "{text}");
        drop(held);
        assert!(!d.join(".lock").exists());
        // Another host's lock is never guessed stale.
        std::fs::write(d.join(".lock"), "2147483647 elsewhere\n").unwrap();
        assert!(lock(&d, None).is_err());
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn another_node_s_lock_is_stale_once_its_slurm_job_has_ended() {
        let ended = |job: &str| match job {
            "41_3" => Some(true),
            "41_4" => Some(false),
            _ => None,
        };
        let stale = |text: &str| is_stale_with(text, "node-b", &ended);
        assert!(stale("123 node-a slurm-job=41_3\n"), "cancelled task");
        assert!(
            !stale("123 node-a slurm-job=41_4\n"),
            "a task still running"
        );
        assert!(!stale("123 node-a slurm-job=41_5\n"), "squeue cannot tell");
        assert!(!stale("123 node-a\n"), "no job named");
        assert!(!stale("123 node-a slurm-job=41;rm\n"), "not a job id");
    }
}
