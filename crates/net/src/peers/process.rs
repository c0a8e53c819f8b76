//! Process supervision: starting a peer's process with its output in log files, stopping
//! it (SIGTERM, then SIGKILL) whatever way the run ends, and reading what its logs say.
//!
//! A [`Running`] process is stopped when dropped, so an error anywhere in a cell (a port
//! that never binds, a client past the time cap) leaves no server or relay behind. SIGTERM
//! comes first because implementations flush their qlogs and key logs on it. Logs are cut
//! to their end ([`LOG_KEEP_BYTES`]) once a run is over: a chatty peer in a long matrix
//! would otherwise fill the disk.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The most of each log kept in a run directory.
const LOG_KEEP_BYTES: u64 = 64 * 1024;

/// A process that is killed when dropped.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) what: &'static str,
}

impl Running {
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        // SIGTERM first, so that qlogs and key logs are flushed; SIGKILL after 2 s.
        terminate(&self.child);
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        tracing::debug!("{} killed", self.what);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn terminate(child: &Child) {
    // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn terminate(_child: &Child) {}

/// Starts `words` in `cwd`, its stdout and stderr into files (the same file when the
/// paths are equal).
pub(super) fn spawn(
    what: &'static str,
    words: &[String],
    env: &[(String, String)],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
) -> Result<Running, String> {
    let open = |p: &Path| {
        std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    };
    let (program, args) = words.split_first().ok_or("empty command")?;
    let out = open(stdout)?;
    let err = if stdout == stderr {
        out.try_clone().map_err(|e| e.to_string())?
    } else {
        open(stderr)?
    };
    let child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {what} {program}: {e}"))?;
    Ok(Running { child, what })
}

/// A program by name (looked up in `PATH`) or path, if it exists.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// The last non-empty line of a log, for reasons.
pub(super) fn last_line(log: &Path) -> String {
    let text = tail(log, 4096);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map_or_else(|| "(no output)".into(), |l| l.chars().take(200).collect())
}

fn tail(path: &Path, bytes: u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    use std::io::Seek;
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(bytes)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Keeps only the end of a log that grew past [`LOG_KEEP_BYTES`].
pub(super) fn trim_log(path: &Path) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > LOG_KEEP_BYTES) {
        let kept = tail(path, LOG_KEEP_BYTES);
        let _ = std::fs::write(
            path,
            format!("[... cut to the last {LOG_KEEP_BYTES} bytes]\n{kept}"),
        );
    }
}
