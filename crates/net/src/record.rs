//! Turning a real transfer into the simulator's record types ([`satquic_run::record`]),
//! so `satquic client -J`, `satquic run` and `satquic sim` are read by the same code.

use std::collections::BTreeMap;
use std::time::Duration;

use satquic_cc::ExitReason;
use satquic_run::record::{ChunkRow, ExitSummary, FlowSummary, RECORD_SCHEMA, classify};
use serde_json::{Value, json};

use crate::client::{ClientOptions, ClientResult};
use crate::perf::ServerReport;

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The first (non-shadow when `shadow` is false) slow-start exit in report events.
fn exit_from_events(events: &[Value], shadow: bool, offset_s: f64) -> Option<ExitSummary> {
    events.iter().find_map(|e| {
        if e.get("type")?.as_str()? != "slow_start_exit"
            || e.get("shadow").and_then(Value::as_bool).unwrap_or(false) != shadow
        {
            return None;
        }
        let reason: ExitReason = serde_json::from_value(e.get("reason")?.clone()).ok()?;
        Some(ExitSummary {
            at_s: e.get("at")?.as_f64()? + offset_s,
            reason,
            cwnd_before: e.get("cwnd_before")?.as_u64()?,
            cwnd_after: e.get("cwnd_after")?.as_u64()?,
            ssthresh: e.get("ssthresh")?.as_u64()?,
            rtt_s: None,
        })
    })
}

/// A [`FlowSummary`] for a client transfer. Sender-side fields come from the server's
/// report when there is one (its times shifted by `server_offset_s`, the server's
/// connection start relative to the flow's start); link fields are empty (the client
/// cannot see the link) unless the caller fills them.
pub fn flow_summary(
    result: &ClientResult,
    cc: &str,
    report: Option<&ServerReport>,
    server_offset_s: f64,
    capacity: Option<(f64, &str)>,
) -> FlowSummary {
    let elapsed = result.completed_at.unwrap_or(result.ended_at);
    let goodput_bps = if elapsed.is_zero() {
        0.0
    } else {
        result.bytes as f64 * 8.0 / secs(elapsed)
    };
    let events = report.map(|r| r.events.as_slice()).unwrap_or(&[]);
    let exit = exit_from_events(events, false, server_offset_s);
    let shadow = exit_from_events(events, true, server_offset_s);
    let first_loss = report
        .and_then(|r| r.first_loss_detected_at_s)
        .map(|t| t + server_offset_s);
    let d = |s: f64| Duration::from_secs_f64(s.max(0.0));
    let cap = capacity.map(|(c, _)| d(c));
    let class = |e: &Option<ExitSummary>| {
        classify(
            e.as_ref().map(|e| (d(e.at_s), e.reason)),
            first_loss.map(d),
            cap,
        )
        .to_string()
    };
    FlowSummary {
        flow: 0,
        cc: report.map_or_else(|| cc.to_string(), |r| r.cc.clone()),
        start_s: 0.0,
        status: result.status.clone(),
        error: result.error.clone(),
        requested_bytes: result.requested_bytes,
        delivered_bytes: result.bytes,
        completion_time_s: result.completed_at.map(secs),
        handshake_time_s: result.connected_at.map(secs),
        goodput_bps,
        packets_sent: report.map_or(0, |r| r.packets_sent),
        packets_lost: report.map_or(0, |r| r.packets_lost),
        bytes_sent: report.map_or(0, |r| r.bytes_sent),
        bytes_lost: report.map_or(0, |r| r.bytes_lost),
        udp_datagrams_sent: report.map_or(0, |r| r.udp_datagrams_sent),
        udp_bytes_sent: report.map_or(0, |r| r.bytes_sent),
        congestion_events: report.map_or(0, |r| r.congestion_events),
        ack_frames_received: report.map_or(0, |r| r.ack_frames_received),
        first_rtt_s: report.and_then(|r| r.first_rtt_s),
        min_rtt_s: report.and_then(|r| r.min_rtt_s),
        link_drops: BTreeMap::new(),
        link_drops_up: 0,
        queue_delay: None,
        sender_cap_drops: 0,
        first_drop_at_s: None,
        first_loss_detected_at_s: first_loss,
        exit_class: class(&exit),
        shadow_exit_class: shadow.as_ref().map(|_| class(&shadow)),
        exit_to_loss_ratio: None,
        shadow_exit_to_loss_ratio: None,
        first_connection: None,
        resumption: None,
        stream_receive_window_end: None,
        slow_start_exit: exit,
        shadow_exit: shadow,
        capacity_at_s: capacity.map(|(c, _)| c),
        capacity_source: capacity.map(|(_, s)| s.to_string()),
    }
}

/// Per-MB rows of `chunks.csv` for flow 0.
pub fn chunk_rows(result: &ClientResult) -> Vec<ChunkRow> {
    mb_rows(&result.mb_times)
}

/// Per-MB rows of `received_chunks.csv` (bytes in any order; perf downloads only).
pub fn received_chunk_rows(result: &ClientResult) -> Vec<ChunkRow> {
    mb_rows(&result.received_mb_times)
}

fn mb_rows(times: &[Duration]) -> Vec<ChunkRow> {
    ChunkRow::of_flow(0, times.iter().map(|t| secs(*t)))
}

/// `satquic client -J`: the record's summary fields (`schema`, `outcome`, `flows`), its
/// `chunks` and `events` (the server's, shifted to the flow's start when known), plus what
/// only a client has (`intervals`, `client`). `scenario` and `link` are null: a real
/// network has no scenario and the client cannot see the link's ground truth.
pub fn client_json(options: &ClientOptions, result: &ClientResult) -> Value {
    // The data sender's view: the server's report of a download, the client's own of an
    // upload. The server's clock starts when it accepts the connection, about one RTT
    // (the Retry round trip) after the flow's start; its events keep that base. The
    // client's clock is the flow's.
    let report = result
        .server_report
        .as_ref()
        .or(result.sender_report.as_ref());
    let time_base = if result.server_report.is_some() {
        "server connection accept"
    } else {
        "flow start"
    };
    let summary = flow_summary(
        result,
        options.transport.spec.cc.as_str(),
        report,
        0.0,
        None,
    );
    let events: Vec<Value> = report.map(|r| r.events.clone()).unwrap_or_default();
    json!({
        "schema": RECORD_SCHEMA,
        "source": "client",
        "scenario": null,
        "outcome": result.status,
        "flows": [summary],
        "link": null,
        "chunks": chunk_rows(result),
        // Perf downloads only: the MB received in any order (qperf's count).
        "received_chunks": received_chunk_rows(result),
        "events": events,
        "events_time_base": time_base,
        "intervals": result.intervals,
        "client": {
            "server": options.server.to_string(),
            "alpn": format!("{:?}", options.alpn).to_lowercase(),
            "upload": result.upload,
            "certificate_sha256": result.server_certificate,
            "connect_time_s": result.connected_at.map(secs),
            "first_byte_s": result.first_byte_at.map(secs),
            "client_cc": options.transport.spec.cc,
            "qlog": result.qlog_file.as_ref().map(|p| p.display().to_string()),
            "rtt_s": result.stats.as_ref().map(|s| secs(s.path.rtt)),
            "lost_packets_client": result.stats.as_ref().map(|s| s.path.lost_packets),
        },
    })
}
