//! The real-time lock: what keeps one measurement on the wall clock (a test that times the
//! relay, the server's memory after a storm of clients, a benchmark) from running beside
//! another, which would share the CPU and distort both.
//!
//! Within a process the holders run one at a time. Across processes the lock is an
//! exclusive `flock` on the file that [`REALTIME_LOCK_ENV`] names, when it names one: the
//! lock `scripts/search-side-by-side.py --lock FILE` and the timed runs of BENCHMARKS.md
//! (`flock FILE ...`) take. Do not set the variable for a test run that itself runs under
//! `flock` on the same file: the tests would wait for their own caller.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};

/// The environment variable naming the lock file shared with other real-time work.
pub const REALTIME_LOCK_ENV: &str = "SATQUIC_REALTIME_LOCK";

/// Held while a real-time measurement runs; released when dropped.
pub struct RealTimeLock {
    _in_process: MutexGuard<'static, ()>,
    /// The open lock file whose `flock` is held (closing it releases the lock).
    _file: Option<File>,
}

impl RealTimeLock {
    /// Waits until no other holder in this process, and none of the file's (when
    /// [`REALTIME_LOCK_ENV`] names one), runs. A file that cannot be opened or locked is
    /// an error naming it.
    pub fn acquire() -> Result<Self, String> {
        static IN_PROCESS: Mutex<()> = Mutex::new(());
        let in_process = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
        let file = match std::env::var_os(REALTIME_LOCK_ENV) {
            Some(path) if !path.is_empty() => Some(lock_file(&path)?),
            _ => None,
        };
        Ok(RealTimeLock {
            _in_process: in_process,
            _file: file,
        })
    }
}

/// `path` opened (made if missing) and locked exclusively.
fn lock_file(path: &std::ffi::OsStr) -> Result<File, String> {
    let shown = std::path::Path::new(path).display();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{REALTIME_LOCK_ENV} {shown}: cannot open it: {e}"))?;
    // SAFETY: flock on a descriptor this function owns; it blocks until the lock is free.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("{REALTIME_LOCK_ENV} {shown}: cannot lock it: {e}"));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Two holders in one process follow one another.
    #[test]
    fn holders_run_one_at_a_time() {
        let first = RealTimeLock::acquire().unwrap();
        let start = Instant::now();
        let second = std::thread::spawn(move || {
            let _lock = RealTimeLock::acquire().unwrap();
            start.elapsed()
        });
        std::thread::sleep(Duration::from_millis(200));
        drop(first);
        assert!(second.join().unwrap() >= Duration::from_millis(200));
    }

    /// Across processes: a holder waits while another process holds the file (here
    /// `flock(1)`, as `flock FILE satquic ...` takes it).
    #[test]
    fn the_file_is_waited_for_while_another_process_holds_it() {
        let path = std::env::temp_dir().join(format!("satquic-rt-lock-{}", std::process::id()));
        let mut holder = match std::process::Command::new("flock")
            .arg(&path)
            .args(["sleep", "0.6"])
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                eprintln!("no flock(1) here ({e}): not tested");
                return;
            }
        };
        std::thread::sleep(Duration::from_millis(200));
        let start = Instant::now();
        let file = lock_file(path.as_os_str()).unwrap();
        assert!(
            start.elapsed() >= Duration::from_millis(200),
            "{:?}",
            start.elapsed()
        );
        drop(file);
        holder.wait().unwrap();
        let _ = std::fs::remove_file(&path);
    }
}
