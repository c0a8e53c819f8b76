//! qlog output of a run: the record seen from each flow's sender, for qvis and other qlog
//! tools.
//!
//! The qlog is derived from the [`RunRecord`] alone, like `series.csv`, so it is as
//! deterministic as the record: the same scenario and seed give byte-identical files. It
//! has no per-packet events (the record keeps none); it shows what the record shows,
//! under qlog's names where qlog has one.
//!
//! # Format
//!
//! qlog JSON-SEQ (draft-ietf-quic-qlog-main-schema, `qlog_version` `"0.3"`): every record
//! is an ASCII RS (0x1e), one JSON object and a newline; the first is the header. One file
//! holds one trace, and a trace is one flow: a one-flow run (every `satquic sim` run) gives
//! `qlog.sqlog`, a run with several flows one `qlog-flow<N>.sqlog` per flow, since qvis
//! opens one trace per JSON-SEQ file.
//!
//! The vantage point is the server, the sender whose congestion controller the record
//! follows. `common_fields` say `time_format` `"relative"` with `reference_time` 0: event
//! times are milliseconds of *virtual* time since the simulation start (not the flow's
//! start, not a wall clock), and the header repeats that in `satquic:time`.
//!
//! # Events
//!
//! In time order (at equal times, in this order):
//!
//! | event | when | data |
//! |---|---|---|
//! | `transport:connection_started` | the flow's start | `protocol`, `satquic:cc` (the flow's spec) |
//! | `satquic:handshake_done` | the client completed the handshake | `{}` |
//! | `recovery:congestion_state_updated` | a (non-shadow) `slow_start_exit` or a `congestion` event | `old`, `new` (`slow_start`, `congestion_avoidance`, `recovery`), `trigger` (the exit reason, `loss` or `persistent_congestion`) |
//! | `recovery:careful_resume_phase_updated` | a Careful Resume phase change (draft-ietf-tsvwg-careful-resume-qlog) | `old` (absent for the first), `new`, `trigger`, `state_data` (`pipesize`, `first_unvalidated_packet`, `last_unvalidated_packet`, `congestion_window`, `ssthresh`; bytes), `restored_data` (`previous_congestion_window` bytes, `previous_rtt` ms) |
//! | `satquic:<type>` | every satquic-cc event of the sender (`slow_start_exit`, `search_eval`, `hy_start_phase`, `congestion`, `sample`) | the `events.jsonl` line (seconds, as there) |
//! | `recovery:metrics_updated` | every `series.csv` row of the flow once the sender has a controller (`cwnd_bytes` > 0) | `congestion_window`, `bytes_in_flight`, `latest_rtt`, `smoothed_rtt` (ms; the RTTs once sampled) |
//! | `satquic:series` | every `series.csv` row of the flow | the whole `series.csv` row (delivery rate, bottleneck queue, delivered bytes) |
//! | `satquic:chunk_delivered` | each `chunks.csv` row of the flow | the row (`time_s` counts from the flow's start) |
//! | `satquic:transfer_ended` | the flow's end | `status`, `bytes` (delivered), `error`, `completion_time_s` |
//!
//! The same names as the client's qlog of `satquic client --qlog` (satquic-net), so both
//! tools produce the same shape.
//!
//! Limits: the end of a recovery period is not in the record, so a `congestion` event
//! after an earlier one reads `recovery` -> `recovery` (a new recovery period); a loss
//! exit and the congestion event it comes with are one transition. The flows' connections
//! are not closed (the simulator drops them), hence `satquic:transfer_ended` rather than
//! `transport:connection_closed`; a failed flow's end is not kept in the record and is
//! taken as the flow's last recorded row or event (within one 10 ms series step).

use satquic_cc::{CcEvent, ExitReason};
use serde_json::{Value, json};

use crate::record::{FlowSummary, RECORD_SCHEMA, RunRecord, sorted_keys};

/// qlog draft version written in the header.
pub const QLOG_VERSION: &str = "0.3";

/// The qlog files of a record: `(file name, contents)`, one per flow (see the module docs
/// for the names).
pub fn qlog_files(record: &RunRecord) -> Vec<(String, Vec<u8>)> {
    let flows = &record.summary.flows;
    flows
        .iter()
        .map(|f| {
            let name = if flows.len() == 1 {
                "qlog.sqlog".to_string()
            } else {
                format!("qlog-flow{}.sqlog", f.flow)
            };
            (name, flow_qlog(record, f))
        })
        .collect()
}

/// Nanoseconds in `s` seconds (record times come from `Duration`s, so this is exact).
fn ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

/// Milliseconds as qlog wants them, without the noise of `s * 1e3` (`70.00000000000001`).
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Event order at equal times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Started,
    /// quinn-proto's own events ([`connection_qlog_files`]).
    Stack,
    Handshake,
    Controller,
    Metrics,
    Chunk,
    Ended,
}

struct Events(Vec<(u64, Rank, Value)>);

impl Events {
    fn push(&mut self, at_ns: u64, rank: Rank, name: &str, data: Value) {
        self.0.push((
            at_ns,
            rank,
            json!({"time": ms(at_ns), "name": name, "data": data}),
        ));
    }
}

/// The sender's congestion state as far as the record tells.
struct CongestionState {
    /// qlog's name of the current state.
    current: &'static str,
    /// A loss exit was just reported: the congestion event that follows it (the
    /// controller reports both for the same loss) is the same transition.
    loss_exit: bool,
}

impl CongestionState {
    fn new() -> Self {
        CongestionState {
            current: "slow_start",
            loss_exit: false,
        }
    }

    /// The `recovery:congestion_state_updated` data for `event`, if it is a transition.
    fn update(&mut self, event: &CcEvent) -> Option<Value> {
        let (new, trigger) = match event {
            CcEvent::SlowStartExit {
                reason,
                shadow: false,
                ..
            } => {
                self.loss_exit = *reason == ExitReason::Loss;
                let new = if self.loss_exit {
                    "recovery"
                } else {
                    "congestion_avoidance"
                };
                (new, reason.as_str())
            }
            CcEvent::Congestion { persistent, .. } => {
                if std::mem::take(&mut self.loss_exit) && !persistent {
                    return None;
                }
                let trigger = if *persistent {
                    "persistent_congestion"
                } else {
                    "loss"
                };
                ("recovery", trigger)
            }
            _ => return None,
        };
        let old = std::mem::replace(&mut self.current, new);
        Some(json!({"old": old, "new": new, "trigger": trigger}))
    }
}

/// The `recovery:careful_resume_phase_updated` data (draft-ietf-tsvwg-careful-resume-qlog)
/// of a Careful Resume phase change: `old`, `new`, `trigger`, `state_data` (PipeSize, the
/// first and last unvalidated packet numbers, cwnd and ssthresh in bytes) and
/// `restored_data` (the saved window in bytes and RTT in ms).
fn careful_resume_phase(event: &CcEvent) -> Option<Value> {
    let CcEvent::CarefulResumePhaseUpdated {
        old,
        new,
        trigger,
        pipesize,
        first_unvalidated_packet,
        last_unvalidated_packet,
        cwnd,
        ssthresh,
        saved_cwnd,
        saved_rtt,
        ..
    } = event
    else {
        return None;
    };
    let mut state = serde_json::Map::new();
    state.insert("pipesize".into(), (*pipesize).into());
    if let Some(pn) = first_unvalidated_packet {
        state.insert("first_unvalidated_packet".into(), (*pn).into());
    }
    if let Some(pn) = last_unvalidated_packet {
        state.insert("last_unvalidated_packet".into(), (*pn).into());
    }
    state.insert("congestion_window".into(), (*cwnd).into());
    if *ssthresh != u64::MAX {
        state.insert("ssthresh".into(), (*ssthresh).into());
    }
    let mut data = serde_json::Map::new();
    if let Some(old) = old {
        data.insert("old".into(), old.as_str().into());
    }
    data.insert("new".into(), new.as_str().into());
    if let Some(trigger) = trigger {
        data.insert("trigger".into(), trigger.as_str().into());
    }
    data.insert("state_data".into(), Value::Object(state));
    data.insert(
        "restored_data".into(),
        json!({
            "previous_congestion_window": saved_cwnd,
            "previous_rtt": saved_rtt.as_secs_f64() * 1e3,
        }),
    );
    Some(Value::Object(data))
}

/// When the flow ended: completion, the run's end for a capped flow, the last thing the
/// record has of a failed one.
fn end_ns(record: &RunRecord, flow: &FlowSummary) -> u64 {
    let start = ns(flow.start_s);
    match (flow.status.as_str(), flow.completion_time_s) {
        ("completed", Some(t)) => start + ns(t),
        ("failed", _) => {
            let series = record
                .series
                .iter()
                .filter(|r| r.flow == flow.flow)
                .map(|r| ns(r.time_s));
            let events = record
                .events
                .iter()
                .filter(|e| e.flow == flow.flow)
                .map(|e| e.event.at().as_nanos() as u64);
            let chunks = record
                .chunks
                .iter()
                .filter(|c| c.flow == flow.flow)
                .map(|c| start + ns(c.time_s));
            series.chain(events).chain(chunks).fold(start, u64::max)
        }
        _ => ns(record.summary.sim_time_s),
    }
}

/// The qlog of one flow.
pub fn flow_qlog(record: &RunRecord, flow: &FlowSummary) -> Vec<u8> {
    let events = flow_events(record, flow);
    let title = trace_title(record, flow);
    let mut header = header(
        record,
        flow,
        &title,
        "satquic-sim run record as qlog; times are virtual",
    );
    header["trace"]["vantage_point"] = json!({"type": "server", "name": "satquic-sim sender"});
    json_seq(&header, events.0.iter().map(|(_, _, e)| e))
}

/// "satquic sim: LINK flow N (CC), seed S".
fn trace_title(record: &RunRecord, flow: &FlowSummary) -> String {
    let scenario = &record.summary.scenario;
    format!(
        "satquic sim: {} flow {} ({}), seed {}",
        scenario.link.name, flow.flow, flow.cc, scenario.seed
    )
}

/// The header record of a flow's trace (the vantage point is the caller's to set).
fn header(record: &RunRecord, flow: &FlowSummary, title: &str, description: &str) -> Value {
    let scenario = &record.summary.scenario;
    json!({
        "qlog_version": QLOG_VERSION,
        "qlog_format": "JSON-SEQ",
        "title": title,
        "description": description,
        "trace": {
            "title": title,
            "vantage_point": {},
            "common_fields": {"time_format": "relative", "reference_time": 0,
                              "protocol_type": ["QUIC"]},
            "satquic:time": "virtual: milliseconds since the simulation start",
            "satquic:record_schema": RECORD_SCHEMA,
            "satquic:flow": flow.flow,
            "satquic:seed": scenario.seed,
            "satquic:link": scenario.link.name,
        }
    })
}

/// A JSON-SEQ file: the header, then the events.
fn json_seq<'a>(header: &Value, events: impl ExactSizeIterator<Item = &'a Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 * (events.len() + 1));
    write_record(&mut out, header);
    for event in events {
        write_record(&mut out, event);
    }
    out
}

/// satquic's events of one flow, in time order (the module docs' table).
fn flow_events(record: &RunRecord, flow: &FlowSummary) -> Events {
    let summary = &record.summary;
    let index = flow.flow;
    let start = ns(flow.start_s);
    let mut events = Events(Vec::new());
    if start <= ns(summary.sim_time_s) {
        events.push(
            start,
            Rank::Started,
            "transport:connection_started",
            json!({"protocol": "QUIC", "satquic:cc": flow.cc}),
        );
    }
    if let Some(t) = flow.handshake_time_s {
        events.push(
            start + ns(t),
            Rank::Handshake,
            "satquic:handshake_done",
            json!({}),
        );
    }
    let mut state = CongestionState::new();
    for e in record.events.iter().filter(|e| e.flow == index) {
        let at = e.event.at().as_nanos() as u64;
        if let Some(data) = state.update(&e.event) {
            events.push(
                at,
                Rank::Controller,
                "recovery:congestion_state_updated",
                data,
            );
        }
        if let Some(data) = careful_resume_phase(&e.event) {
            events.push(
                at,
                Rank::Controller,
                "recovery:careful_resume_phase_updated",
                data,
            );
        }
        let data = e.to_json();
        let name = format!(
            "satquic:{}",
            data.get("type").and_then(Value::as_str).unwrap_or("event")
        );
        events.push(at, Rank::Controller, &name, data);
    }
    for row in record.series.iter().filter(|r| r.flow == index) {
        let at = ns(row.time_s);
        let row_json = serde_json::to_value(row).expect("series rows serialize");
        if row.cwnd_bytes == 0 {
            // No controller yet (the server connection is not accepted): not a window.
            events.push(at, Rank::Metrics, "satquic:series", row_json);
            continue;
        }
        let mut metrics = serde_json::Map::new();
        metrics.insert("congestion_window".into(), row.cwnd_bytes.into());
        metrics.insert("bytes_in_flight".into(), row.in_flight_bytes.into());
        if let Some(rtt) = row.latest_rtt_s {
            metrics.insert("latest_rtt".into(), ms(ns(rtt)).into());
        }
        if let Some(rtt) = row.smoothed_rtt_s {
            metrics.insert("smoothed_rtt".into(), ms(ns(rtt)).into());
        }
        events.push(
            at,
            Rank::Metrics,
            "recovery:metrics_updated",
            Value::Object(metrics),
        );
        events.push(at, Rank::Metrics, "satquic:series", row_json);
    }
    for chunk in record.chunks.iter().filter(|c| c.flow == index) {
        let row = serde_json::to_value(chunk).expect("chunk rows serialize");
        events.push(
            start + ns(chunk.time_s),
            Rank::Chunk,
            "satquic:chunk_delivered",
            row,
        );
    }
    events.push(
        end_ns(record, flow),
        Rank::Ended,
        "satquic:transfer_ended",
        json!({"status": flow.status, "bytes": flow.delivered_bytes, "error": flow.error,
               "completion_time_s": flow.completion_time_s}),
    );
    // Stable: events of one kind keep the record's order.
    events.0.sort_by_key(|(at, rank, _)| (*at, *rank));
    events
}

/// A `Write` into a buffer the caller keeps a handle to: where quinn-proto's qlog
/// (`QlogConfig::writer`) goes until it is merged with satquic's events.
#[derive(Clone, Default)]
pub struct QlogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for QlogBuffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl QlogBuffer {
    /// Takes what was written so far.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The events of a JSON-SEQ qlog (RFC 7464 records), without its header record (the
/// first one, which has no `time`): each event's time (its `time` field, milliseconds)
/// and the event. Records that do not parse are skipped.
pub fn json_seq_events(json_seq: &[u8]) -> Vec<(f64, serde_json::Value)> {
    json_seq
        .split(|b| *b == 0x1e)
        .filter_map(|r| serde_json::from_slice::<serde_json::Value>(r).ok())
        .filter_map(|v| Some((v.get("time")?.as_f64()?, v)))
        .collect()
}

/// Which end of a connection a qlog is written from (qlog's `vantage_point.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vantage {
    Client,
    Server,
}

impl Vantage {
    /// qlog's name: `client`, `server`.
    pub fn name(self) -> &'static str {
        match self {
            Vantage::Client => "client",
            Vantage::Server => "server",
        }
    }
}

/// quinn-proto's own qlog of one connection, as its `qlog` feature wrote it (JSON-SEQ: a
/// header, then `transport:packet_sent`, `transport:packet_received`,
/// `recovery:packet_lost`, `recovery:metrics_updated`, ...), for [`connection_qlog_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackQlog {
    /// The flow the connection belongs to.
    pub flow: u32,
    /// The end that wrote it.
    pub vantage: Vantage,
    /// Whether that end sends the flow's data (the end whose controller the record follows).
    pub data_sender: bool,
    /// The connection's original destination connection ID, in hex (names the file).
    pub odcid: String,
    /// Whether the record describes this connection (false for the first connection of a
    /// resumed run, whose record is the resumed connection's).
    pub in_record: bool,
    /// quinn-proto's JSON-SEQ; event times in milliseconds since the start of the
    /// simulation pass the connection ran in.
    pub json_seq: Vec<u8>,
}

/// Nanoseconds in `ms` milliseconds, for ordering (quinn's times are `f32` ms).
fn ns_of_ms(ms: f64) -> u64 {
    (ms.max(0.0) * 1e6).round() as u64
}

/// One JSON-SEQ file per connection and vantage point, named as the QUIC interop runner's
/// `QLOGDIR` convention has it (`<odcid>_<client|server>.sqlog`, quic-go's names): the
/// events quinn-proto wrote for that end, merged in time order with satquic's events of
/// the flow. The data sender's file gets all of them (the [module](self) table: slow-start
/// exits, SEARCH evaluations, Careful Resume phases, the link's ground truth in
/// `satquic:series`); the receiver's only the flow's start, handshake, delivered chunks
/// and end. At equal times quinn's events come after `transport:connection_started` and
/// before satquic's others. A connection the record does not describe (the first of a
/// resumed run, whose ODCID the resumed one repeats: both passes replay the same seeds)
/// gets quinn's events alone, in `first-<odcid>_<client|server>.sqlog`.
pub fn connection_qlog_files(record: &RunRecord, stacks: &[StackQlog]) -> Vec<(String, Vec<u8>)> {
    stacks
        .iter()
        .filter_map(|stack| {
            let flow = record.summary.flows.iter().find(|f| f.flow == stack.flow)?;
            // A resumed run's two connections replay the same seeds, so they share an
            // ODCID: the first one's files say so in their name.
            let first = if stack.in_record { "" } else { "first-" };
            Some((
                format!("{first}{}_{}.sqlog", stack.odcid, stack.vantage.name()),
                connection_qlog(record, flow, stack),
            ))
        })
        .collect()
}

/// The merged qlog of one connection and vantage point ([`connection_qlog_files`]).
fn connection_qlog(record: &RunRecord, flow: &FlowSummary, stack: &StackQlog) -> Vec<u8> {
    let mut events = Events(Vec::new());
    if stack.in_record {
        events.0 = flow_events(record, flow)
            .0
            .into_iter()
            .filter(|(_, rank, _)| {
                stack.data_sender
                    || matches!(
                        rank,
                        Rank::Started | Rank::Handshake | Rank::Chunk | Rank::Ended
                    )
            })
            .collect();
    }
    for (ms, event) in json_seq_events(&stack.json_seq) {
        events.0.push((ns_of_ms(ms), Rank::Stack, event));
    }
    events.0.sort_by_key(|(at, rank, _)| (*at, *rank));
    let vantage = stack.vantage.name();
    let title = format!("{} ({vantage}, {})", trace_title(record, flow), stack.odcid);
    let description = if stack.in_record {
        "quinn-proto's qlog of the connection merged with satquic's events; times are virtual"
    } else {
        "quinn-proto's qlog of the first connection of a resumed run (the record describes \
         the resumed one); times are virtual, since the start of the first connection's pass"
    };
    let mut header = header(record, flow, &title, description);
    header["trace"]["vantage_point"] =
        json!({"type": vantage, "name": format!("satquic-sim {vantage}")});
    header["trace"]["satquic:odcid"] = json!(stack.odcid);
    json_seq(&header, events.0.iter().map(|(_, _, e)| e))
}

/// One JSON-SEQ record (RFC 7464): RS, the JSON text, LF.
fn write_record(out: &mut Vec<u8>, value: &Value) {
    out.push(0x1e);
    // Sorted keys, as serde_json writes them without its `preserve_order` feature.
    serde_json::to_writer(&mut *out, &sorted_keys(value.clone())).expect("JSON values serialize");
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(reason: ExitReason) -> CcEvent {
        CcEvent::SlowStartExit {
            at: std::time::Duration::from_secs(1),
            reason,
            cwnd_before: 100,
            cwnd_after: 50,
            ssthresh: 50,
            shadow: false,
        }
    }

    fn congestion(persistent: bool) -> CcEvent {
        CcEvent::Congestion {
            at: std::time::Duration::from_secs(1),
            lost_bytes: 1200,
            cwnd_after: 50,
            persistent,
        }
    }

    #[test]
    fn a_loss_exit_and_its_congestion_event_are_one_transition() {
        let mut state = CongestionState::new();
        let t = state.update(&exit(ExitReason::Loss)).unwrap();
        assert_eq!(
            t,
            json!({"old": "slow_start", "new": "recovery", "trigger": "loss"})
        );
        assert_eq!(state.update(&congestion(false)), None);
        let t = state.update(&congestion(false)).unwrap();
        assert_eq!(
            t,
            json!({"old": "recovery", "new": "recovery", "trigger": "loss"})
        );
    }

    #[test]
    fn a_delay_exit_leads_to_congestion_avoidance_then_recovery() {
        let mut state = CongestionState::new();
        let shadow = CcEvent::SlowStartExit {
            at: std::time::Duration::ZERO,
            reason: ExitReason::Search,
            cwnd_before: 1,
            cwnd_after: 1,
            ssthresh: 1,
            shadow: true,
        };
        assert_eq!(state.update(&shadow), None, "a shadow exit changes nothing");
        let t = state.update(&exit(ExitReason::Search)).unwrap();
        assert_eq!(
            t,
            json!({"old": "slow_start", "new": "congestion_avoidance", "trigger": "search"})
        );
        let t = state.update(&congestion(false)).unwrap();
        assert_eq!(
            t,
            json!({"old": "congestion_avoidance", "new": "recovery", "trigger": "loss"})
        );
        let t = state.update(&congestion(true)).unwrap();
        assert_eq!(t["trigger"], "persistent_congestion");
    }
}
