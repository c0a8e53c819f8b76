//! qlog output (JSON-SEQ, draft-ietf-quic-qlog-main-schema 0.3 framing) for the client.
//!
//! quinn's own qlog support needs an extra crate, so this writes what satquic knows:
//! connection start and end, one `recovery:metrics_updated` per interval row, and
//! satquic's own events in a `satquic:` category (`satquic:interval`, the client's
//! congestion-control events, the server's report of its own). Times are milliseconds
//! since the flow's start.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use satquic_cc::CcEvent;
use serde_json::{Value, json};

use crate::NetError;
use crate::client::{ClientOptions, ClientResult};

fn record(out: &mut Vec<u8>, value: &Value) {
    out.push(0x1e);
    serde_json::to_writer(&mut *out, value).expect("JSON values serialize");
    out.push(b'\n');
}

fn event_name(event: &Value) -> String {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("event");
    format!("satquic:{kind}")
}

/// Writes `<dir>/client-<unix ms>-<port>.sqlog` and returns its path.
pub fn write_client_qlog(
    dir: &Path,
    options: &ClientOptions,
    result: &ClientResult,
    client_events: &[CcEvent],
) -> Result<PathBuf, NetError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| NetError::Usage(format!("--qlog {}: {e}", dir.display())))?;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let reference_ms = now_ms.saturating_sub(result.ended_at.as_millis());
    let mut out = Vec::new();
    record(
        &mut out,
        &json!({
            "qlog_version": "0.3",
            "qlog_format": "JSON-SEQ",
            "title": "satquic client",
            "trace": {
                "vantage_point": {"type": "client"},
                "common_fields": {"time_format": "relative", "reference_time": reference_ms as u64},
            }
        }),
    );
    record(
        &mut out,
        &json!({"time": 0.0, "name": "transport:connection_started",
            "data": {"dst_ip": options.server.ip().to_string(), "dst_port": options.server.port(),
                     "protocol": "QUIC"}}),
    );
    if let Some(t) = result.connected_at {
        record(
            &mut out,
            &json!({"time": t.as_secs_f64() * 1e3, "name": "satquic:handshake_done", "data": {}}),
        );
    }
    for row in &result.intervals {
        let t = row.end_s * 1e3;
        let mut metrics = serde_json::Map::new();
        if let Some(rtt) = row.rtt_s {
            metrics.insert("smoothed_rtt".into(), json!(rtt * 1e3));
        }
        if let Some(cwnd) = row.cwnd_bytes {
            metrics.insert("congestion_window".into(), json!(cwnd));
        }
        record(
            &mut out,
            &json!({"time": t, "name": "recovery:metrics_updated", "data": metrics}),
        );
        record(
            &mut out,
            &json!({"time": t, "name": "satquic:interval", "data": row}),
        );
    }
    for event in client_events {
        let value = satquic_run::record::FlowEvent {
            flow: 0,
            event: event.clone(),
        }
        .to_json();
        let t = value.get("at").and_then(Value::as_f64).unwrap_or(0.0) * 1e3;
        record(
            &mut out,
            &json!({"time": t, "name": event_name(&value), "data": value}),
        );
    }
    if let Some(report) = &result.server_report {
        for event in &report.events {
            let t = event.get("at").and_then(Value::as_f64).unwrap_or(0.0) * 1e3;
            record(
                &mut out,
                &json!({"time": t, "name": format!("{}:server", event_name(event)), "data": event}),
            );
        }
    }
    record(
        &mut out,
        &json!({"time": result.ended_at.as_secs_f64() * 1e3, "name": "satquic:transfer_ended",
            "data": {"status": result.status, "bytes": result.bytes,
                     "error": result.error}}),
    );
    let path = dir.join(format!("client-{now_ms}-{}.sqlog", options.server.port()));
    let tmp = dir.join(format!(".client-{now_ms}.sqlog.tmp"));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&out)?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| NetError::Setup(format!("cannot write qlog in {}: {e}", dir.display())))?;
    Ok(path)
}
