//! Progress parsing: when a peer's client had each megabyte, read from what it leaves
//! behind while it runs (its download file's size, its stdout) or prints at its exit.
//!
//! The per-MB times make time-to-N-MB curves beside the simulator's (`chunks.csv` of a
//! matrix run). A peer says how its progress is read in its adapter (`progress`, the
//! table in [the adapter file's docs](super::adapter)); [`ProgressReader`] reads it while
//! the client runs, each part of its output once however often it is polled.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use satquic_run::record::push_mb_times;

use super::adapter::Role;

/// How often a `file` progress looks at the download's size (and the runner at the
/// client).
pub const PROGRESS_POLL: Duration = Duration::from_millis(5);

/// How a client's progress is read (the module's table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    File,
    StdoutJson(String),
    StdoutLines(String),
}

impl Progress {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "file" => Ok(Progress::File),
            t if t.starts_with("stdout-json:/") => {
                Ok(Progress::StdoutJson(t["stdout-json:".len()..].to_string()))
            }
            t if t.starts_with("stdout-lines:") && t.len() > "stdout-lines:".len() => Ok(
                Progress::StdoutLines(t["stdout-lines:".len()..].to_string()),
            ),
            t => Err(format!(
                "progress = {t:?}: expected \"file\", \"stdout-json:/POINTER\" or \"stdout-lines:PREFIX\""
            )),
        }
    }

    /// A client role's progress: its own, else `file` when its success is a file.
    pub(super) fn of(role: &Role) -> Option<Progress> {
        match (&role.progress, role.success.as_deref()) {
            (Some(p), _) => Progress::parse(p).ok(),
            (None, Some("file") | None) => Some(Progress::File),
            (None, Some(_)) => None,
        }
    }
}

/// What a client's progress said: when it had each megabyte, and the most bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressLog {
    /// `mb_times_s[k]`: seconds from the origin until the client had k+1 MB.
    pub mb_times_s: Vec<f64>,
    pub max_bytes: u64,
    /// When `max_bytes` was first reached (each sample that raised it).
    raised_at: Vec<(f64, u64)>,
}

impl ProgressLog {
    /// The client had `bytes` at `time_s` (samples in time order).
    pub fn add(&mut self, time_s: f64, bytes: u64) {
        if bytes > self.max_bytes {
            self.raised_at.push((time_s.max(0.0), bytes));
        }
        self.max_bytes = self.max_bytes.max(bytes);
        push_mb_times(&mut self.mb_times_s, bytes, time_s.max(0.0));
    }

    /// When the client first had at least `bytes`.
    pub fn time_to(&self, bytes: u64) -> Option<f64> {
        self.raised_at
            .iter()
            .find(|(_, b)| *b >= bytes)
            .map(|p| p.0)
    }

    /// From stdout lines `PREFIX UNIX_MS, BYTES`, times since `origin_unix_ms`; lines
    /// that do not parse are ignored (a client's other output).
    pub fn from_lines(text: &str, prefix: &str, origin_unix_ms: u64) -> Self {
        let mut log = ProgressLog::default();
        for line in text.lines() {
            log.add_line(line, prefix, origin_unix_ms);
        }
        log
    }

    /// One line of a client's output, as [`ProgressLog::from_lines`] reads it.
    fn add_line(&mut self, line: &str, prefix: &str, origin_unix_ms: u64) {
        let Some(rest) = line.trim_start().strip_prefix(prefix) else {
            return;
        };
        let mut fields = rest.split(',').map(str::trim);
        if let (Some(Ok(ms)), Some(Ok(bytes))) = (
            fields.next().map(str::parse::<u64>),
            fields.next().map(str::parse::<u64>),
        ) {
            self.add(ms.saturating_sub(origin_unix_ms) as f64 / 1000.0, bytes);
        }
    }

    /// From an array of `{"mb": N, "time_s": T}` at `pointer` of a JSON document.
    pub fn from_json(text: &str, pointer: &str) -> Self {
        let mut log = ProgressLog::default();
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return log;
        };
        let Some(rows) = value.pointer(pointer).and_then(|v| v.as_array()) else {
            return log;
        };
        let mut points: Vec<(u64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r.get("mb")?.as_u64()?, r.get("time_s")?.as_f64()?)))
            .collect();
        points.sort_by_key(|p| p.0);
        for (mb, t) in points {
            log.add(t, mb * satquic_run::MB);
        }
        log
    }
}

/// The lines a growing file gained since the last look, so that a client's output is
/// read once however often it is polled.
#[derive(Default)]
struct TailLines {
    offset: u64,
    /// The start of a line whose end has not been written yet.
    partial: Vec<u8>,
}

impl TailLines {
    /// The complete lines appended to `path` since the last call; with `last`, also a
    /// final line without its newline.
    fn read_new(&mut self, path: &Path, last: bool) -> Vec<String> {
        use std::io::Seek;
        if let Ok(mut f) = std::fs::File::open(path)
            && f.seek(std::io::SeekFrom::Start(self.offset)).is_ok()
            && let Ok(n) = f.read_to_end(&mut self.partial)
        {
            self.offset += n as u64;
        }
        let complete = if last {
            self.partial.len()
        } else {
            self.partial
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1)
        };
        let text: Vec<u8> = self.partial.drain(..complete).collect();
        String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Reads a running client's progress the way its adapter says, into a [`ProgressLog`]:
/// the download file's size at each poll, the stdout lines it appended since the last
/// poll, or (at its exit) the JSON it printed.
pub(super) struct ProgressReader {
    kind: Option<Progress>,
    /// What the client has shown so far.
    log: ProgressLog,
    /// The file a `file` progress watches.
    download_file: PathBuf,
    /// The client's stdout.
    stdout: PathBuf,
    /// The client's start, the origin of `file` and `stdout-lines` times.
    started: Instant,
    started_unix_ms: u64,
    /// The client's output read so far (lines progress: only what it appended since).
    stdout_tail: TailLines,
}

impl ProgressReader {
    pub(super) fn new(
        role: &Role,
        download_file: PathBuf,
        stdout: PathBuf,
        started: Instant,
        started_unix_ms: u64,
    ) -> Self {
        ProgressReader {
            kind: Progress::of(role),
            log: ProgressLog::default(),
            download_file,
            stdout,
            started,
            started_unix_ms,
            stdout_tail: TailLines::default(),
        }
    }

    /// What the client has shown so far.
    pub(super) fn log(&self) -> &ProgressLog {
        &self.log
    }

    /// The log, once the client is gone.
    pub(super) fn into_log(self) -> ProgressLog {
        self.log
    }

    /// Adds what the client has shown since the last call; `at_exit` is the time of its
    /// exit, after which the rest of its output (and its JSON) is read.
    pub(super) fn read(&mut self, at_exit: Option<f64>) {
        let progress = &mut self.log;
        match &self.kind {
            Some(Progress::File) => {
                if let Ok(m) = std::fs::metadata(&self.download_file) {
                    let t = at_exit.unwrap_or_else(|| self.started.elapsed().as_secs_f64());
                    progress.add(t, m.len());
                }
            }
            Some(Progress::StdoutLines(prefix)) => {
                for line in self.stdout_tail.read_new(&self.stdout, at_exit.is_some()) {
                    progress.add_line(&line, prefix, self.started_unix_ms);
                }
            }
            Some(Progress::StdoutJson(pointer)) if at_exit.is_some() => {
                let text = std::fs::read_to_string(&self.stdout).unwrap_or_default();
                *progress = ProgressLog::from_json(&text, pointer);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_read_from_stdout_lines_and_json() {
        // qperf's byteslog: wall-clock ms and bytes, at each megabyte passed; other
        // lines ignored; times from the client's start.
        let text = "setting data count to 3000000\nbyteslog: 1000500, 1000100\n\
                    second 0: 8 mbit/s (1000 bytes received)\nbyteslog: 1000750, 2500000\n\
                    byteslog: 1001000, 3000001\nexiting after 3000001 bytes received\n";
        let log = ProgressLog::from_lines(text, "byteslog:", 1_000_000);
        assert_eq!(log.mb_times_s, [0.5, 0.75, 1.0]);
        assert_eq!(log.max_bytes, 3_000_001);
        assert_eq!(log.time_to(2_000_000), Some(0.75));
        assert_eq!(log.time_to(3_000_001), Some(1.0));
        assert_eq!(log.time_to(3_000_002), None);
        assert_eq!(
            ProgressLog::from_lines("byteslog: x, 1", "byteslog:", 0),
            ProgressLog::default()
        );
        // satquic's chunks (any order), and a document without them.
        let json = r#"{"chunks": [{"flow": 0, "mb": 2, "time_s": 1.5}, {"flow": 0, "mb": 1, "time_s": 1.0}]}"#;
        let log = ProgressLog::from_json(json, "/chunks");
        assert_eq!(log.mb_times_s, [1.0, 1.5]);
        assert_eq!(log.max_bytes, 2_000_000);
        assert!(
            ProgressLog::from_json("{}", "/chunks")
                .mb_times_s
                .is_empty()
        );
        // A file polled: a sample that passes two megabytes gives both its time.
        let mut log = ProgressLog::default();
        for (t, b) in [
            (0.1, 10),
            (0.2, 999_999),
            (0.3, 2_000_000),
            (0.4, 2_100_000),
        ] {
            log.add(t, b);
        }
        assert_eq!(log.mb_times_s, [0.3, 0.3]);
    }

    #[test]
    fn a_growing_output_is_read_once_line_by_line() {
        let path = std::env::temp_dir().join(format!("satquic-tail-{}", std::process::id()));
        let append = |text: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        let mut tail = TailLines::default();
        assert!(tail.read_new(&path, false).is_empty(), "no file yet");
        append("byteslog: 1, 2\nbyteslog: 3,");
        assert_eq!(tail.read_new(&path, false), ["byteslog: 1, 2"]);
        assert!(
            tail.read_new(&path, false).is_empty(),
            "the half line waits"
        );
        append(" 4\nnext");
        assert_eq!(tail.read_new(&path, false), ["byteslog: 3, 4"]);
        assert_eq!(
            tail.read_new(&path, true),
            ["next"],
            "at the end, the last line"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
