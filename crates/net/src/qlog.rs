//! qlog output (JSON-SEQ, draft-ietf-quic-qlog-main-schema 0.3 framing) for the client
//! and the server, one file per connection and vantage point named as the QUIC interop
//! runner's `QLOGDIR` convention has it (`<odcid>_client.sqlog`, `<odcid>_server.sqlog`).
//!
//! quinn-proto's own events (its `qlog` feature: `transport:packet_sent`,
//! `transport:packet_received`, `recovery:packet_lost`, `recovery:metrics_updated`, ...)
//! merged in time order with what satquic knows: connection start and end, one
//! `recovery:metrics_updated` per interval row, and satquic's own events in a `satquic:`
//! category (`satquic:interval`, the client's congestion-control events, the server's
//! report of its own). Times are milliseconds since the flow's start.

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

/// Writes the client's qlog into `dir` and returns its path: `<odcid>_client.sqlog`, the
/// QUIC interop runner's `QLOGDIR` name, when the connection's original destination
/// connection ID is known, else `client-<unix ms>-<port>.sqlog`. `stack` is quinn-proto's
/// own JSON-SEQ for the connection (packets sent, received and lost, recovery metrics),
/// merged in time order with satquic's events.
pub fn write_client_qlog(
    dir: &Path,
    options: &ClientOptions,
    result: &ClientResult,
    client_events: &[CcEvent],
    stack: &[u8],
    odcid: Option<&str>,
) -> Result<PathBuf, NetError> {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let reference_ms = now_ms.saturating_sub(result.ended_at.as_millis());
    let mut header = json!({
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ",
        "title": "satquic client",
        "trace": {
            "vantage_point": {"type": "client"},
            "common_fields": {"time_format": "relative", "reference_time": reference_ms as u64},
        }
    });
    if let Some(odcid) = odcid {
        header["trace"]["common_fields"]["ODCID"] = json!(odcid);
    }
    let mut events: Vec<(f64, Value)> = Vec::new();
    events.push((
        0.0,
        json!({"time": 0.0, "name": "transport:connection_started",
            "data": {"dst_ip": options.server.ip().to_string(), "dst_port": options.server.port(),
                     "protocol": "QUIC"}}),
    ));
    if let Some(t) = result.connected_at {
        let t = t.as_secs_f64() * 1e3;
        events.push((
            t,
            json!({"time": t, "name": "satquic:handshake_done", "data": {}}),
        ));
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
        events.push((
            t,
            json!({"time": t, "name": "recovery:metrics_updated", "data": metrics}),
        ));
        events.push((
            t,
            json!({"time": t, "name": "satquic:interval", "data": row}),
        ));
    }
    events.extend(cc_events(client_events));
    if let Some(report) = &result.server_report {
        for event in &report.events {
            let t = event.get("at").and_then(Value::as_f64).unwrap_or(0.0) * 1e3;
            events.push((
                t,
                json!({"time": t, "name": format!("{}:server", event_name(event)), "data": event}),
            ));
        }
    }
    let end = result.ended_at.as_secs_f64() * 1e3;
    events.push((
        end,
        json!({"time": end, "name": "satquic:transfer_ended",
            "data": {"status": result.status, "bytes": result.bytes,
                     "error": result.error}}),
    ));
    let name = match odcid {
        Some(odcid) => format!("{odcid}_client.sqlog"),
        None => format!("client-{now_ms}-{}.sqlog", options.server.port()),
    };
    write_qlog(dir, &name, &header, events, stack)
}

/// Writes the server's qlog of one connection, `<odcid>_server.sqlog` in `dir`: quinn's
/// own events (`stack`) merged with the connection's congestion-control events
/// (`events`, times since `accepted`, as quinn's are). `remote` is the client.
pub fn write_server_qlog(
    dir: &Path,
    odcid: &str,
    remote: std::net::SocketAddr,
    events: &[CcEvent],
    stack: &[u8],
    ended_at: std::time::Duration,
) -> Result<PathBuf, NetError> {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let header = json!({
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ",
        "title": "satquic server",
        "trace": {
            "vantage_point": {"type": "server"},
            "common_fields": {"time_format": "relative",
                              "reference_time": now_ms.saturating_sub(ended_at.as_millis()) as u64,
                              "ODCID": odcid},
        }
    });
    let mut all = vec![(
        0.0,
        json!({"time": 0.0, "name": "transport:connection_started",
            "data": {"src_ip": remote.ip().to_string(), "src_port": remote.port(),
                     "protocol": "QUIC"}}),
    )];
    all.extend(cc_events(events));
    write_qlog(dir, &format!("{odcid}_server.sqlog"), &header, all, stack)
}

/// satquic's congestion-control events as qlog events (`satquic:<type>`), times in ms.
fn cc_events(events: &[CcEvent]) -> Vec<(f64, Value)> {
    events
        .iter()
        .map(|event| {
            let value = satquic_run::record::FlowEvent {
                flow: 0,
                event: event.clone(),
            }
            .to_json();
            let t = value.get("at").and_then(Value::as_f64).unwrap_or(0.0) * 1e3;
            (
                t,
                json!({"time": t, "name": event_name(&value), "data": value}),
            )
        })
        .collect()
}

/// Checks at start that `dir` (`--qlog DIR`) can take qlogs: creates it if missing (the
/// last component only: its parent must exist, so a mistyped path makes no tree of
/// directories), refuses a path that is not a directory or where no file can be created,
/// so that a server does not serve for hours and write nothing (its qlogs are written when
/// each connection ends, where a failure can only be logged).
pub fn prepare_qlog_dir(dir: &Path) -> Result<(), NetError> {
    let usage = |what: String| NetError::Usage(format!("--qlog {}: {what}", dir.display()));
    if dir.exists() && !dir.is_dir() {
        return Err(usage(
            "not a directory; give a directory for the qlog files (it is created if missing)"
                .into(),
        ));
    }
    create_last_component(dir).map_err(usage)?;
    let probe = dir.join(format!(".satquic-qlog-probe-{}", std::process::id()));
    std::fs::File::create(&probe).map_err(|e| usage(format!("cannot write in it: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Makes the directory `dir` if it is missing, only it: a missing parent is an error.
fn create_last_component(dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!(
            "its parent {} does not exist (satquic creates only the last directory)",
            parent.display()
        ));
    }
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(format!("cannot create it: {e}")),
    }
}

/// Writes `header`, then `events` and quinn's own (`stack`, JSON-SEQ) in time order
/// (stable: at one time, satquic's first), to `dir/name`, through a temporary file.
fn write_qlog(
    dir: &Path,
    name: &str,
    header: &Value,
    mut events: Vec<(f64, Value)>,
    stack: &[u8],
) -> Result<PathBuf, NetError> {
    create_last_component(dir)
        .map_err(|e| NetError::Usage(format!("qlog directory {}: {e}", dir.display())))?;
    events.extend(satquic_run::qlog::json_seq_events(stack));
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    record(&mut out, header);
    for (_, event) in &events {
        record(&mut out, event);
    }
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&out)?;
        std::fs::rename(&tmp, &path)
    };
    write().map_err(|e| NetError::Setup(format!("cannot write qlog in {}: {e}", dir.display())))?;
    Ok(path)
}

/// quinn-proto's qlog stream for a connection's `TransportConfig`, written into `buffer`
/// and timed from `start`.
pub fn stack_stream(
    buffer: &satquic_run::qlog::QlogBuffer,
    title: &str,
    start: std::time::Instant,
) -> Option<quinn_proto::QlogStream> {
    let mut qlog = quinn_proto::QlogConfig::default();
    qlog.writer(Box::new(buffer.clone()))
        .title(Some(title.into()))
        .start_time(start);
    qlog.into_stream()
}
