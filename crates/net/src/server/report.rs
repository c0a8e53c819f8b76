//! The data sender's report of a connection: quinn's statistics, the controller's probe
//! and its events, as the server sends it to a perf client after a download (and as a
//! client makes it of itself after an upload).

use quinn::Connection;
use satquic_cc::CcEvent;
use satquic_run::probe::ProbeHandle;

use super::connection::ConnectionInfo;
use super::events::EventStore;
use crate::perf::ServerReport;

/// The sender's view of a connection, as sent to the client.
pub fn server_report(info: &ConnectionInfo, conn: &Connection) -> ServerReport {
    report_with(info, conn.stats(), crate::perf::MAX_REPORT_EVENTS)
}

/// The sender's view built from `stats` and the connection's probe and events (at most
/// `max_events` of them; per-ACK samples and SEARCH evaluations are left out).
pub(crate) fn report_with(
    info: &ConnectionInfo,
    stats: quinn::ConnectionStats,
    max_events: usize,
) -> ServerReport {
    sender_report(&info.cc, &info.probe, &info.events, stats, max_events)
}

/// The data sender's view of a connection (the server's for downloads, the client's own
/// for uploads): quinn's `stats`, the controller's `probe` and at most `max_events` of its
/// events (per-ACK samples and SEARCH evaluations left out).
pub(crate) fn sender_report(
    cc: &str,
    probe: &ProbeHandle,
    events: &EventStore,
    stats: quinn::ConnectionStats,
    max_events: usize,
) -> ServerReport {
    let probe = satquic_run::probe::read_probe(probe);
    let events: Vec<serde_json::Value> = events
        .events()
        .into_iter()
        .filter(|e| !matches!(e, CcEvent::Sample { .. } | CcEvent::SearchEval { .. }))
        .take(max_events)
        .map(|event| satquic_run::record::FlowEvent { flow: 0, event }.to_json())
        .collect();
    ServerReport {
        cc: cc.to_string(),
        packets_sent: stats.path.sent_packets,
        packets_lost: stats.path.lost_packets,
        bytes_sent: stats.udp_tx.bytes,
        bytes_lost: stats.path.lost_bytes,
        udp_datagrams_sent: stats.udp_tx.datagrams,
        congestion_events: stats.path.congestion_events,
        ack_frames_received: stats.frame_rx.acks,
        first_rtt_s: probe.first_rtt.map(|d| d.as_secs_f64()),
        min_rtt_s: Some(stats.path.min_rtt.as_secs_f64()),
        first_loss_detected_at_s: probe.first_congestion.map(|d| d.as_secs_f64()),
        events,
    }
}
