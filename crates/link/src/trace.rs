//! Mahimahi link traces (`mm-link`): one integer millisecond timestamp per line, each line
//! one delivery opportunity for one MTU-sized packet; lines with the same timestamp are
//! several opportunities in the same millisecond; when the trace ends it starts over,
//! shifted by its last timestamp.
//!
//! As in mahimahi's `LinkQueue`, the bytes of an opportunity can be shared by several
//! small packets and a packet larger than one opportunity uses several; bytes of an
//! opportunity that find the queue empty are lost (capacity is not banked).

use crate::error::LinkError;
use std::path::Path as FsPath;

/// A parsed mahimahi trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MahimahiTrace {
    timestamps_ms: Vec<u64>,
}

/// Largest accepted timestamp: about 11.6 days in ms.
const MAX_TIMESTAMP_MS: u64 = 1_000_000_000;

impl MahimahiTrace {
    /// Parses trace text. Blank lines and lines starting with `#` are ignored.
    pub fn parse(text: &str, origin: &str) -> Result<Self, LinkError> {
        let mut timestamps_ms = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let ts: u64 = line.parse().map_err(|_| LinkError::Trace {
                origin: origin.to_string(),
                reason: format!(
                    "line {}: {line:?} is not a whole number of milliseconds",
                    i + 1
                ),
            })?;
            timestamps_ms.push(ts);
        }
        Self::from_timestamps_ms(timestamps_ms, origin)
    }

    /// Reads and parses a trace file (a regular file of at most
    /// [`TRACE_FILE`](crate::file::TRACE_FILE)).
    pub fn load(path: &FsPath) -> Result<Self, LinkError> {
        let text = crate::file::read_to_string(path, crate::file::TRACE_FILE)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Checks a list of timestamps: non-empty, non-decreasing, last one above 0.
    pub fn from_timestamps_ms(timestamps_ms: Vec<u64>, origin: &str) -> Result<Self, LinkError> {
        let err = |reason: String| LinkError::Trace {
            origin: origin.to_string(),
            reason,
        };
        let Some(&last) = timestamps_ms.last() else {
            return Err(err("has no timestamps".into()));
        };
        if let Some(i) = timestamps_ms.windows(2).position(|w| w[1] < w[0]) {
            return Err(err(format!(
                "timestamp #{} ({} ms) is earlier than the one before it ({} ms)",
                i + 2,
                timestamps_ms[i + 1],
                timestamps_ms[i]
            )));
        }
        if last == 0 {
            return Err(err(
                "last timestamp is 0 ms; the trace must span at least 1 ms to repeat".into(),
            ));
        }
        if last > MAX_TIMESTAMP_MS {
            return Err(err(format!("last timestamp {last} ms is absurdly large")));
        }
        Ok(MahimahiTrace { timestamps_ms })
    }

    /// The opportunities, in milliseconds.
    pub fn timestamps_ms(&self) -> &[u64] {
        &self.timestamps_ms
    }

    /// Length of one repetition, in milliseconds (the last timestamp).
    pub fn period_ms(&self) -> u64 {
        *self.timestamps_ms.last().expect("validated non-empty")
    }

    /// Mean rate in bit/s if each opportunity carries `opportunity_bytes`.
    pub fn mean_rate_bps(&self, opportunity_bytes: u32) -> f64 {
        self.timestamps_ms.len() as f64 * opportunity_bytes as f64 * 8.0 * 1000.0
            / self.period_ms() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let t = MahimahiTrace::parse("1\n1\n2\n# comment\n\n4\n", "t").unwrap();
        assert_eq!(t.timestamps_ms(), &[1, 1, 2, 4]);
        assert_eq!(t.period_ms(), 4);
        assert!((t.mean_rate_bps(1500) - 12_000_000.0).abs() < 1e-6);
        assert!(MahimahiTrace::parse("", "t").is_err());
        assert!(MahimahiTrace::parse("0\n0\n", "t").is_err());
        assert!(MahimahiTrace::parse("3\n2\n", "t").is_err());
        let e = MahimahiTrace::parse("1\nfoo\n", "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(!e.contains('\n'));
    }
}
