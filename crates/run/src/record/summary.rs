//! A run's `summary.json`: what a run observed of each flow and of the down link
//! ([`FlowInput`], [`LinkObservation`]) assembled into its [`Summary`], the same way for
//! simulated and real runs, with each flow's slow-start exit classified. Apart from the
//! record's files and their writing ([`super`]) because this is where the record's
//! numbers are computed.
//!
//! # Slow-start exit classes (seed 003)
//!
//! With `exit` the first (non-shadow) `SlowStartExit`, `loss` the first congestion event
//! the sender saw (quinn's loss detection, about an RTT after the drop), `capacity` the
//! bottleneck's capacity point from ground truth:
//!
//! - `late`: exit caused by loss, or `exit >= loss`, or no exit but a loss;
//! - `early`: `exit < capacity`, or an exit while the link never became saturated;
//! - `chokepoint`: `capacity <= exit < loss` (or no loss at all);
//! - `none`: no exit and no loss (the flow ended in slow start).
//!
//! The capacity point is the link's: the start of the busy period that ended in the first
//! congestion drop; without a congestion drop, the start of the busy period in progress at
//! the end of the run; without that either (the queue drained after the exit and never
//! overflowed), the start of the busy period in progress at the exit (`capacity_source`
//! says which). On a bandwidth-on-demand link it is never earlier than the time the
//! allocation first reached the plan rate (`full_allocation`): before that the queue
//! builds because the allocation lags, not because the plan rate is used up.

use std::time::Duration;

use satquic_cc::{CcEvent, ExitReason};
use satquic_link::{DirectionStats, DropReason, GroundTruth};
use serde::{Deserialize, Serialize};

use super::bottleneck::{BottleneckLog, DelayQuantiles};
use super::shared::{SharedPeriod, shared_period};
use super::{RECORD_SCHEMA, SeriesRow};
use crate::scenario::{Scenario, Workload};

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    /// The scenario as run (link, flows, seed, time cap).
    pub scenario: Scenario,
    /// `completed` (every flow finished), `capped` (the time cap ended the run) or
    /// `failed` (a flow failed and none was capped).
    pub outcome: String,
    /// Simulated seconds until the run ended.
    pub sim_time_s: f64,
    pub flows: Vec<FlowSummary>,
    /// Ground truth of the down-link bottleneck.
    pub link: LinkTruth,
    /// With two flows or more: the time they all shared the link, and what each got of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedPeriod>,
}

/// Per-flow results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    pub flow: u32,
    /// The flow's congestion control spec.
    pub cc: String,
    pub start_s: f64,
    /// `completed`, `capped` or `failed`.
    pub status: String,
    /// Why it failed.
    pub error: Option<String>,
    /// Bytes asked for (`null` for a timed flow).
    pub requested_bytes: Option<u64>,
    /// Bytes the receiving application (the client; the server of an upload) received.
    pub delivered_bytes: u64,
    /// Seconds from the flow's start until the receiver had the last byte.
    pub completion_time_s: Option<f64>,
    /// Seconds from the flow's start until the handshake completed at the client.
    pub handshake_time_s: Option<f64>,
    /// delivered bytes x 8 / (completion or end - start), bit/s.
    pub goodput_bps: f64,
    /// quinn's counters of the sending connection (the server; the client of an upload).
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_sent: u64,
    pub bytes_lost: u64,
    /// UDP datagrams and bytes the sender sent.
    pub udp_datagrams_sent: u64,
    pub udp_bytes_sent: u64,
    /// Congestion events quinn reported to the controller.
    pub congestion_events: u64,
    /// ACK frames the sender received (what the return link carried for this flow;
    /// thinned by ACK frequency).
    #[serde(default)]
    pub ack_frames_received: u64,
    /// First RTT sample at the sender and quinn's minimum RTT, seconds.
    pub first_rtt_s: Option<f64>,
    pub min_rtt_s: Option<f64>,
    /// This flow's down-link packets the link dropped, by reason.
    pub link_drops: std::collections::BTreeMap<String, u64>,
    /// This flow's client->server packets the link dropped.
    pub link_drops_up: u64,
    /// Its data packets' queueing delay at the bottleneck over the flow ([`super::bottleneck`];
    /// absent where the link is not in the process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_delay: Option<DelayQuantiles>,
    /// This flow's packets the sender cap's queue dropped before the link (absent when
    /// none: records without a cap, or whose cap never overflowed, stay as they were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sender_cap_drops: u64,
    /// When the link first dropped one of this flow's server->client packets.
    pub first_drop_at_s: Option<f64>,
    /// When the sender first learned of a loss (first congestion event).
    pub first_loss_detected_at_s: Option<f64>,
    /// The slow-start exit, if slow start ended.
    pub slow_start_exit: Option<ExitSummary>,
    /// Where SEARCH in shadow mode would have exited.
    pub shadow_exit: Option<ExitSummary>,
    /// The capacity point used for the classification, and where it came from
    /// (`congestion_drop`, `busy_at_end`, `busy_at_exit` or, on a BoD link,
    /// `full_allocation`).
    pub capacity_at_s: Option<f64>,
    pub capacity_source: Option<String>,
    /// `early`, `chokepoint`, `late` or `none` (see the module docs).
    pub exit_class: String,
    /// The same classification for the shadow exit.
    pub shadow_exit_class: Option<String>,
    /// (first loss detected - exit) / smoothed RTT at exit (seed 000 Fig. 8).
    pub exit_to_loss_ratio: Option<f64>,
    pub shadow_exit_to_loss_ratio: Option<f64>,
    /// A resumed run ([`Scenario::resume_after`](crate::Scenario::resume_after)): this
    /// flow's first connection; everything above describes the resumed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_connection: Option<FirstConnection>,
    /// A resumed run: what the resumed connection started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumption: Option<Resumption>,
    /// With an auto-tuned receive window (`TransportSpec::receive_window_autotune`): the
    /// data receiver's stream receive window when the flow ended, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_receive_window_end: Option<u64>,
}

/// The first connection of a resumed run's flow (the figures of [`FlowSummary`] that
/// compare a first connection with a resumed one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstConnection {
    pub status: String,
    pub delivered_bytes: u64,
    pub completion_time_s: Option<f64>,
    pub handshake_time_s: Option<f64>,
    pub goodput_bps: f64,
    pub packets_lost: u64,
    /// This flow's down-link (data direction) packets the link dropped, all reasons.
    pub link_drops: u64,
    pub exit_class: String,
}

impl FirstConnection {
    /// The first connection's figures from its own summary.
    pub fn of(f: &FlowSummary) -> Self {
        FirstConnection {
            status: f.status.clone(),
            delivered_bytes: f.delivered_bytes,
            completion_time_s: f.completion_time_s,
            handshake_time_s: f.handshake_time_s,
            goodput_bps: f.goodput_bps,
            packets_lost: f.packets_lost,
            link_drops: f.link_drops.values().sum(),
            exit_class: f.exit_class.clone(),
        }
    }
}

/// What a resumed connection started from: the TLS session (0-RTT) and the Careful
/// Resume parameters (RFC 9959) its data sender kept from the first connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumption {
    /// Seconds between the end of the first connections and the resumed ones.
    pub gap_s: f64,
    /// The client's 0-RTT data (the request, or the upload's first bytes) was accepted.
    pub zero_rtt: bool,
    /// The saved parameters handed to the data sender's controller (Sec. 3.1 `saved_cwnd`
    /// bytes, `saved_rtt` seconds), if any ...
    pub saved_cwnd: Option<u64>,
    pub saved_rtt_s: Option<f64>,
    /// ... or why there were none (nothing observed, expired, path changed).
    pub not_resumed: Option<String>,
    /// When the window jumped (entering the Unvalidated Phase) and to what, bytes.
    pub jump_at_s: Option<f64>,
    pub jump_cwnd: Option<u64>,
    /// The trigger that ended Careful Resume (its last phase change to `normal`), e.g.
    /// `last_unvalidated_packet_acknowledged`, `packet_loss`, `rtt_not_validated`.
    pub ended_by: Option<String>,
    /// Entered Safe Retreat (congestion after the jump).
    pub safe_retreat: bool,
}

/// A slow-start exit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitSummary {
    pub at_s: f64,
    pub reason: ExitReason,
    pub cwnd_before: u64,
    pub cwnd_after: u64,
    pub ssthresh: u64,
    /// The sender's smoothed RTT when it exited.
    pub rtt_s: Option<f64>,
}

/// Down-link ground truth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkTruth {
    /// Start of the busy period that ended in the first congestion drop.
    pub capacity_at_s: Option<f64>,
    /// Start of the busy period in progress at the end of the run.
    pub busy_at_end_since_s: Option<f64>,
    pub first_congestion_drop_at_s: Option<f64>,
    pub first_congestion_drop_reason: Option<String>,
    /// First drop of any reason.
    pub first_drop_at_s: Option<f64>,
    /// Drops by reason (packets).
    pub drops: std::collections::BTreeMap<String, u64>,
    pub max_queue_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// With bandwidth on demand: when the allocation first reached the plan rate.
    pub full_allocation_at_s: Option<f64>,
    /// Up-link drops (all reasons).
    pub up_drops: u64,
    /// Bytes the up (return) link delivered, IP/UDP headers included: ACKs and requests.
    #[serde(default)]
    pub up_delivered_bytes: u64,
}

/// Where a flow stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowStatus {
    Pending,
    Running,
    Completed,
    Failed(String),
}

/// Link drops of one flow's packets.
#[derive(Debug, Default, Clone)]
pub struct FlowDrops {
    /// The first down-link drop: when (run time) and why.
    pub first_down_drop: Option<(Duration, DropReason)>,
    /// Down-link drops by reason, in [`DropReason::ALL`] order.
    pub down_by_reason: [u64; DropReason::ALL.len()],
    /// Up-link (client -> server) drops.
    pub up_packets: u64,
    /// Dropped by the sender shaper's queue.
    pub shaper_packets: u64,
}

impl FlowDrops {
    /// Counts a down-link admission of this flow's packet at run time `now`.
    pub fn on_down(&mut self, now: Duration, admission: satquic_link::Admission) {
        if let satquic_link::Admission::Dropped { reason, .. } = admission {
            self.first_down_drop.get_or_insert((now, reason));
            if let Some(i) = DropReason::ALL.iter().position(|r| *r == reason) {
                self.down_by_reason[i] += 1;
            }
        }
    }
}

/// What a run observed of one flow, simulated or real; [`summarize`] turns it into the
/// flow's [`FlowSummary`]. Times are run time (since the run's start) unless a name says
/// otherwise.
#[derive(Debug, Clone)]
pub struct FlowInput {
    pub index: u32,
    pub start: Duration,
    pub workload: Workload,
    pub cc: String,
    pub status: FlowStatus,
    /// The time cap ended the flow.
    pub capped: bool,
    pub delivered_bytes: u64,
    pub connected_at: Option<Duration>,
    pub completed_at: Option<Duration>,
    pub ended_at: Duration,
    /// quinn's counters of the sending connection.
    pub stats: Option<quinn_proto::ConnectionStats>,
    /// The first RTT sample at the sender (a duration, not a time).
    pub first_rtt: Option<Duration>,
    /// When the sender first learned of a loss (its first congestion event).
    pub first_loss_detected: Option<Duration>,
    /// The sender's congestion-control events, times in run time.
    pub events: Vec<CcEvent>,
    /// The sender's smoothed RTT at its (shadow) slow-start exit.
    pub rtt_at_exit: Option<Duration>,
    pub rtt_at_shadow_exit: Option<Duration>,
    /// Start of the link's busy period in progress at the (shadow) exit, if known.
    pub busy_since_at_exit: Option<Duration>,
    pub busy_since_at_shadow_exit: Option<Duration>,
    pub drops: FlowDrops,
    /// Its data packets at the bottleneck: queueing delays and drops over time.
    pub bottleneck: BottleneckLog,
    /// The receiver's auto-tuned stream receive window at the end, if it auto-tunes.
    pub stream_receive_window_end: Option<u64>,
}

/// The down-link bottleneck as a run saw it: ground truth and counters on the link
/// model's own clock, whose time zero is `epoch` before the run's (zero in the
/// simulator; an emulated run's relay starts before its flow).
#[derive(Debug, Clone, Copy)]
pub struct LinkObservation<'a> {
    pub truth: &'a GroundTruth,
    pub down: &'a DirectionStats,
    pub up: &'a DirectionStats,
    /// The run's start on the link's clock.
    pub epoch: Duration,
}

impl LinkObservation<'_> {
    /// A link time as run time.
    fn run_time(&self, link_time: Duration) -> Duration {
        link_time.saturating_sub(self.epoch)
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The exit classes, in table order.
pub const EXIT_CLASSES: [&str; 4] = ["early", "chokepoint", "late", "none"];

/// On a bandwidth-on-demand link the queue also builds while the allocation lags the
/// offered rate, below the plan rate: the link is busy but not at its capacity. The
/// capacity point is therefore never earlier than the moment the allocation first reached
/// the plan rate, and there is none if it never did (an exit then counts as early, as in
/// 003 Table III, where HyStart exits at 1.3 s and the link reaches capacity at 23.1 s).
/// Links without BoD are unchanged.
fn not_before_full_allocation(
    link: &LinkObservation,
    capacity: Option<Duration>,
    source: Option<&'static str>,
) -> (Option<Duration>, Option<&'static str>) {
    if link.truth.allocation().is_empty() {
        return (capacity, source);
    }
    match (
        capacity,
        link.truth.full_allocation_at().map(|t| link.run_time(t)),
    ) {
        (Some(c), Some(full)) if full > c => (Some(full), Some("full_allocation")),
        (Some(c), Some(_)) => (Some(c), source),
        _ => (None, None),
    }
}

/// The capacity point of a run on this link (see the module docs) and where it came from
/// (`congestion_drop`, `busy_at_end`, `busy_at_exit`, `full_allocation`), in run time;
/// `busy_since_at_exit`: the start of the busy period in progress at the flow's exit, run
/// time. The same rule for the simulator's flows and for kernel TCP through `--tun`.
pub fn capacity_point(
    link: &LinkObservation,
    busy_since_at_exit: Option<Duration>,
) -> (Option<Duration>, Option<&'static str>) {
    let at = |t: Duration| link.run_time(t);
    let (capacity, source) = match (
        link.truth.capacity_time().map(at),
        link.truth.busy_since().map(at),
        busy_since_at_exit,
    ) {
        (Some(c), _, _) => (Some(c), Some("congestion_drop")),
        (None, Some(b), _) => (Some(b), Some("busy_at_end")),
        (None, None, Some(b)) => (Some(b), Some("busy_at_exit")),
        _ => (None, None),
    };
    not_before_full_allocation(link, capacity, source)
}

/// Classifies an exit (seed 003): see the module docs.
pub fn classify(
    exit: Option<(Duration, ExitReason)>,
    first_loss: Option<Duration>,
    capacity: Option<Duration>,
) -> &'static str {
    match (exit, first_loss) {
        (None, None) => "none",
        (None, Some(_)) => "late",
        (Some((_, ExitReason::Loss)), _) => "late",
        (Some((t, _)), Some(loss)) if t >= loss => "late",
        (Some((t, _)), _) => match capacity {
            Some(c) if t >= c => "chokepoint",
            _ => "early",
        },
    }
}

fn exit_summary(
    events: &[CcEvent],
    shadow_wanted: bool,
    rtt: Option<Duration>,
) -> Option<(ExitSummary, Duration, ExitReason)> {
    events.iter().find_map(|e| match e {
        CcEvent::SlowStartExit {
            at,
            reason,
            cwnd_before,
            cwnd_after,
            ssthresh,
            shadow,
        } if *shadow == shadow_wanted => Some((
            ExitSummary {
                at_s: secs(*at),
                reason: *reason,
                cwnd_before: *cwnd_before,
                cwnd_after: *cwnd_after,
                ssthresh: *ssthresh,
                rtt_s: rtt.map(secs),
            },
            *at,
            *reason,
        )),
        _ => None,
    })
}

fn drop_map(
    counts: impl Iterator<Item = (DropReason, u64)>,
) -> std::collections::BTreeMap<String, u64> {
    counts
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| (r.as_str().to_string(), n))
        .collect()
}

/// The summary of a run that ended at run time `end`: one assembly for simulated and
/// real runs. `series` gives the goodputs of the shared period.
pub fn summarize(
    scenario: &Scenario,
    end: Duration,
    inputs: &[FlowInput],
    link: &LinkObservation,
    series: &[SeriesRow],
) -> Summary {
    let flows: Vec<FlowSummary> = inputs.iter().map(|f| flow_summary(f, link)).collect();
    let outcome = if flows.iter().any(|f| f.status == "capped") {
        "capped"
    } else if flows.iter().any(|f| f.status == "failed") {
        "failed"
    } else {
        "completed"
    };
    Summary {
        schema: RECORD_SCHEMA.to_string(),
        scenario: scenario.clone(),
        outcome: outcome.to_string(),
        sim_time_s: secs(end),
        flows,
        link: link_truth(link),
        shared: shared_period(inputs, series),
    }
}

/// One flow's results: status, goodput, quinn's counters, its drops, and its
/// slow-start exit classified against the link's capacity point.
fn flow_summary(f: &FlowInput, link: &LinkObservation) -> FlowSummary {
    let (status, error) = match (&f.status, f.capped) {
        (FlowStatus::Completed, _) => ("completed", None),
        (FlowStatus::Failed(e), _) => ("failed", Some(e.clone())),
        _ => ("capped", None),
    };
    let elapsed = f.completed_at.unwrap_or(f.ended_at).saturating_sub(f.start);
    let goodput_bps = if elapsed.is_zero() {
        0.0
    } else {
        f.delivered_bytes as f64 * 8.0 / elapsed.as_secs_f64()
    };
    let stats = f.stats.unwrap_or_default();
    let first_loss = f.first_loss_detected;
    let exit = exit_summary(&f.events, false, f.rtt_at_exit);
    let shadow = exit_summary(&f.events, true, f.rtt_at_shadow_exit);
    let (capacity, source) = capacity_point(link, f.busy_since_at_exit);
    let ratio = |exit: &Option<(ExitSummary, Duration, ExitReason)>, rtt: Option<Duration>| match (
        exit, first_loss, rtt,
    ) {
        (Some((_, t, _)), Some(loss), Some(rtt)) if !rtt.is_zero() => {
            Some((secs(loss) - secs(*t)) / secs(rtt))
        }
        _ => None,
    };
    let shadow_capacity =
        capacity.or_else(|| not_before_full_allocation(link, f.busy_since_at_shadow_exit, None).0);
    FlowSummary {
        flow: f.index,
        cc: f.cc.clone(),
        start_s: secs(f.start),
        status: status.to_string(),
        error,
        requested_bytes: match f.workload {
            Workload::Download { bytes } => Some(bytes),
            Workload::Timed { .. } => None,
        },
        delivered_bytes: f.delivered_bytes,
        completion_time_s: f.completed_at.map(|t| secs(t.saturating_sub(f.start))),
        handshake_time_s: f.connected_at.map(|t| secs(t.saturating_sub(f.start))),
        goodput_bps,
        packets_sent: stats.path.sent_packets,
        packets_lost: stats.path.lost_packets,
        bytes_sent: stats.udp_tx.bytes,
        bytes_lost: stats.path.lost_bytes,
        udp_datagrams_sent: stats.udp_tx.datagrams,
        udp_bytes_sent: stats.udp_tx.bytes,
        congestion_events: stats.path.congestion_events,
        ack_frames_received: stats.frame_rx.acks,
        first_rtt_s: f.first_rtt.map(secs),
        min_rtt_s: f.stats.map(|s| secs(s.path.min_rtt)),
        link_drops: drop_map(
            DropReason::ALL
                .iter()
                .zip(f.drops.down_by_reason)
                .map(|(r, n)| (*r, n)),
        ),
        link_drops_up: f.drops.up_packets,
        queue_delay: f.bottleneck.queue_delay_overall(),
        sender_cap_drops: f.drops.shaper_packets,
        first_drop_at_s: f.drops.first_down_drop.map(|(t, _)| secs(t)),
        first_loss_detected_at_s: first_loss.map(secs),
        exit_class: classify(exit.as_ref().map(|e| (e.1, e.2)), first_loss, capacity).to_string(),
        shadow_exit_class: shadow
            .as_ref()
            .map(|e| classify(Some((e.1, e.2)), first_loss, shadow_capacity).to_string()),
        exit_to_loss_ratio: ratio(&exit, f.rtt_at_exit),
        shadow_exit_to_loss_ratio: ratio(&shadow, f.rtt_at_shadow_exit),
        first_connection: None,
        resumption: None,
        stream_receive_window_end: f.stream_receive_window_end,
        slow_start_exit: exit.map(|e| e.0),
        shadow_exit: shadow.map(|e| e.0),
        capacity_at_s: capacity.map(secs),
        capacity_source: source.map(str::to_string),
    }
}

/// The down link's ground truth and counters, in run time.
fn link_truth(link: &LinkObservation) -> LinkTruth {
    let (truth, down_stats, up_stats) = (link.truth, link.down, link.up);
    let at = |t: Duration| link.run_time(t);
    let first_drop = DropReason::ALL
        .iter()
        .filter_map(|r| truth.first_drop(*r))
        .min()
        .map(at);
    LinkTruth {
        capacity_at_s: truth.capacity_time().map(at).map(secs),
        busy_at_end_since_s: truth.busy_since().map(at).map(secs),
        first_congestion_drop_at_s: truth.first_congestion_drop().map(|(t, _)| secs(at(t))),
        first_congestion_drop_reason: truth
            .first_congestion_drop()
            .map(|(_, r)| r.as_str().to_string()),
        first_drop_at_s: first_drop.map(secs),
        drops: drop_map(
            DropReason::ALL
                .iter()
                .map(|r| (*r, down_stats.dropped(*r).packets)),
        ),
        max_queue_bytes: down_stats.max_queue_bytes,
        delivered_packets: down_stats.delivered.packets,
        delivered_bytes: down_stats.delivered.bytes,
        full_allocation_at_s: truth.full_allocation_at().map(|t| secs(at(t))),
        up_drops: up_stats.dropped_total().packets,
        up_delivered_bytes: up_stats.delivered.bytes,
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
