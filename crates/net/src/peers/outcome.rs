//! What a cell measured, and how a download is judged from what the client left: the
//! file under `{download}`, a number in the JSON it printed, or its progress, as its
//! adapter's `success` says (the rule is in the adapter file's docs, `adapter.rs`).
//!
//! A failure's reason quotes the last line of the client's log, and the server's when it
//! had exited: the first thing one reads in a matrix's table.

use std::path::Path;
use std::time::Duration;

use satquic_run::record::DelayQuantiles;

use super::adapter::{Role, Success, role_success};
use super::cell::{Cell, CellPaths};
use super::process::last_line;
use super::progress::ProgressLog;

/// What a cell measured.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutcome {
    /// `completed`, `failed` or `timeout` (the client did not exit within the cap).
    pub status: String,
    /// Why it failed; empty when completed.
    pub reason: String,
    /// The client's wall clock from its start to its exit.
    pub client_time: Option<Duration>,
    /// Bytes the client got (file size, its JSON or its progress).
    pub delivered_bytes: Option<u64>,
    /// When the client had each megabyte (empty when its adapter reads no progress).
    pub progress: ProgressLog,
    /// What the link did to the run's packets (`satquic link --summary-json`).
    pub link: Option<LinkTotals>,
}

/// The link's drops in one run, from `satquic link --summary-json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkTotals {
    /// Down packets dropped by the queue (full or AQM) and by random loss processes.
    pub drops_congestion: u64,
    pub drops_random: u64,
    /// Packets the sender cap's queue dropped.
    pub cap_drops: u64,
    /// The first down drop, seconds since the client started.
    pub first_drop_at_s: Option<f64>,
    /// Queueing delay of the download's packets at the link (the relay's books of the
    /// flow that carried the most down bytes, `satquic link --flows-json`).
    pub queue_delay: Option<DelayQuantiles>,
}

impl LinkTotals {
    /// From the relay's summary, with times moved to a client started at
    /// `client_unix_ms`.
    pub fn from_summary(text: &str, client_unix_ms: u64) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let down = v.get("down")?;
        let dropped = |names: &[&str]| {
            names
                .iter()
                .filter_map(|n| down.pointer(&format!("/dropped/{n}"))?.as_u64())
                .sum()
        };
        let started = v.get("started_unix_ms")?.as_u64()? as f64 / 1000.0;
        Some(LinkTotals {
            drops_congestion: dropped(&["queue_full", "aqm"]),
            drops_random: dropped(&["random_loss", "burst_loss"]),
            cap_drops: v
                .pointer("/sender_cap/dropped_packets")
                .and_then(|d| d.as_u64())
                .unwrap_or(0),
            first_drop_at_s: down
                .get("first_drop_s")
                .and_then(|t| t.as_f64())
                .map(|t| started + t - client_unix_ms as f64 / 1000.0),
            queue_delay: None,
        })
    }

    /// From the relay's books (`--flows-json`): the down queueing delay of the flow that
    /// carried the most down bytes (the cell's download; a client's stray connection
    /// carries little).
    pub fn queue_delay_from_flows(text: &str) -> Option<DelayQuantiles> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let down_bytes = |f: &&serde_json::Value| {
            f.pointer("/down/delivered_bytes")
                .and_then(|b| b.as_u64())
                .unwrap_or(0)
        };
        let flow = v.get("flows")?.as_array()?.iter().max_by_key(down_bytes)?;
        serde_json::from_value(flow.pointer("/down/queue_delay")?.clone()).ok()
    }
}

impl CellOutcome {
    pub(super) fn failed(reason: impl Into<String>) -> Self {
        CellOutcome {
            status: "failed".into(),
            reason: reason.into(),
            client_time: None,
            delivered_bytes: None,
            progress: ProgressLog::default(),
            link: None,
        }
    }
}

/// How a cell's client ended, as the runner saw it.
pub(super) struct ClientEnd {
    /// How the client ended (its exit status, or why the runner stopped it); `None` at
    /// the time cap.
    pub(super) status: Option<String>,
    /// From the client's start to its end.
    pub(super) elapsed: Duration,
    pub(super) progress: ProgressLog,
    /// The server still ran when the client ended.
    pub(super) server_alive: bool,
    pub(super) link: Option<LinkTotals>,
}

/// Judges a cell whose client ended as `end`: completed, timed out or failed (and why).
pub(super) fn judge(cell: &Cell, role: &Role, paths: &CellPaths, end: ClientEnd) -> CellOutcome {
    let ClientEnd {
        status,
        elapsed,
        progress,
        server_alive,
        link,
    } = end;
    let got = delivered(role, cell, &paths.download, &paths.client_out, &progress);
    let Some(status) = status else {
        return CellOutcome {
            status: "timeout".into(),
            reason: format!(
                "the client had not finished after {} s ({} of {} bytes)",
                cell.time_cap.as_secs_f64(),
                got.map_or("?".into(), |b| b.to_string()),
                cell.size_bytes
            ),
            client_time: None,
            delivered_bytes: got,
            progress,
            link,
        };
    };
    let judged_by_progress = role_success(role) == Some(Success::Progress);
    let enough = if judged_by_progress {
        got.is_some_and(|b| b >= cell.size_bytes)
    } else {
        got == Some(cell.size_bytes)
    };
    if enough {
        // A client judged by its progress is timed by it too (to the sample that
        // showed the last byte).
        let client_time = if judged_by_progress {
            progress
                .time_to(cell.size_bytes)
                .map_or(elapsed, Duration::from_secs_f64)
        } else {
            elapsed
        };
        return CellOutcome {
            status: "completed".into(),
            reason: String::new(),
            client_time: Some(client_time),
            delivered_bytes: got,
            progress,
            link,
        };
    }
    let mut reason = format!(
        "client ended ({status}) with {} of {} bytes: {}",
        got.map_or("no".into(), |b| b.to_string()),
        cell.size_bytes,
        last_line(&paths.client_log)
    );
    if !server_alive {
        reason.push_str(&format!(
            "; the server had exited: {}",
            last_line(&paths.server_log)
        ));
    }
    CellOutcome {
        status: "failed".into(),
        reason,
        client_time: None,
        delivered_bytes: got,
        progress,
        link,
    }
}

/// Bytes the client got, as its adapter says to judge them.
fn delivered(
    role: &Role,
    cell: &Cell,
    download: &Path,
    stdout: &Path,
    progress: &ProgressLog,
) -> Option<u64> {
    match role_success(role)? {
        Success::Progress => Some(progress.max_bytes),
        Success::File => std::fs::metadata(download.join(&cell.file))
            .ok()
            .map(|m| m.len()),
        Success::StdoutJson(pointer) => {
            let text = std::fs::read_to_string(stdout).ok()?;
            let value: serde_json::Value = serde_json::from_str(&text).ok()?;
            value.pointer(&pointer)?.as_u64()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_totals_come_from_the_relay_summary_in_client_time() {
        let text = r#"{"started_unix_ms": 1000000, "down": {"dropped": {"queue_full": 5,
            "aqm": 2, "random_loss": 1, "burst_loss": 0, "too_large": 0}, "first_drop_s": 8.5},
            "up": {}, "sender_cap": {"offered_packets": 9, "dropped_packets": 3}}"#;
        let t = LinkTotals::from_summary(text, 1_000_500).unwrap();
        assert_eq!((t.drops_congestion, t.drops_random, t.cap_drops), (7, 1, 3));
        assert!((t.first_drop_at_s.unwrap() - 8.0).abs() < 1e-9);
        assert_eq!(LinkTotals::from_summary("{}", 0), None);
    }

    #[test]
    fn the_queue_delay_is_the_download_flows() {
        let flow = |bytes: u64, p95: f64| {
            format!(
                r#"{{"flow": 0, "down": {{"link_packets": 9, "link_drops": 0,
                "delivered_bytes": {bytes}, "queue_delay": {{"p50_ms": 1.0, "p95_ms": {p95},
                "max_ms": 30.0, "packets": 9}}}}, "up": {{}}}}"#
            )
        };
        let text = format!(
            r#"{{"flows": [{}, {}], "data_direction": "down"}}"#,
            flow(1_000, 99.0),
            flow(5_000_000, 12.5)
        );
        let q = LinkTotals::queue_delay_from_flows(&text).unwrap();
        assert_eq!((q.p50_ms, q.p95_ms, q.packets), (1.0, 12.5, 9));
        assert_eq!(LinkTotals::queue_delay_from_flows(r#"{"flows": []}"#), None);
        assert_eq!(LinkTotals::queue_delay_from_flows("not json"), None);
    }
}
