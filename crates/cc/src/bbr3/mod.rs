//! BBRv3, following draft-ietf-ccwg-bbr-06, written for quinn-proto's controller hooks.
//!
//! BBR models the path by two numbers, the bottleneck bandwidth (`max_bw`, a windowed
//! maximum of delivery-rate samples over two ProbeBW cycles) and the round-trip
//! propagation time (`min_rtt`, a windowed minimum over 10 s), and sends at
//! `pacing_gain x bw` with at most `cwnd_gain x bw x min_rtt` in flight. Version 3 adds
//! bounds learned from loss: `inflight_hi` (the volume at which a probe saw more than
//! [`LOSS_THRESH`] loss; the draft's later name is `inflight_longterm`), `bw_lo` and
//! `inflight_lo` (cut by [`BETA`] in each round with loss outside a probe;
//! `bw_shortterm`, `inflight_shortterm`).
//!
//! The state machine (draft Sec. 5.3): **Startup** (pacing gain 2.77) until the
//! delivery rate stops growing by 25 % for three rounds or a round loses more than 2 %
//! in six loss events; **Drain** (0.5) until inflight is down to one BDP or for three
//! rounds; **ProbeBW**,
//! cycling DOWN (0.9) -> CRUISE (1.0) -> REFILL (1.0, one round) -> UP (1.25) -> DOWN,
//! with a probe every 2-3 s (random) or, for Reno coexistence, after `min(BDP in
//! packets, 63)` rounds; **ProbeRTT** (cwnd half a BDP for 200 ms and a round) when
//! no lower RTT was seen for 5 s.
//!
//! What a QUIC sender built on quinn-proto has, and how this module uses it:
//!
//! * **Per-packet delivery state** (Sec. 4.1, delivery rate samples): quinn's `on_sent`
//!   reports each transmitted datagram batch with its send time, `on_ack` each newly
//!   acknowledged packet with its send time but not its number. Each `on_sent` is kept
//!   as a `SendRecord` (delivered bytes, delivered time, first send time, lost bytes,
//!   inflight and app-limited state at send) in a queue ordered by send time; an ACK finds
//!   its record by send time. Packets sent in the same instant share a record. Records
//!   are dropped two smoothed RTTs behind the newest acknowledged send time, after quinn
//!   can still declare them lost.
//! * **Losses** come as one `on_congestion_event` per ACK that declared packets lost, with
//!   the send time of the newest lost one and the bytes lost: that packet's record gives
//!   the draft's `tx_in_flight` and `lost` for `IsInflightTooHigh` (Sec. 5.5.10.2).
//! * **Pacing** (Sec. 5.6.2) goes through quinn's pacer: quinn-proto patch 7
//!   (`Controller::pacing_rate`) lets the controller set the refill rate, and patch 4
//!   (`Controller::pacing_burst`) sets the bucket to the send quantum (Sec. 5.6.3:
//!   `pacing_rate x 1 ms`, 2 segments to 64 KB). Without patch 7 quinn paces at
//!   `1.25 x cwnd / smoothed RTT`, which for a cwnd of 2 BDP is 2.5 x the bottleneck
//!   rate: the window, not the rate, would then set how much queue BBR keeps.
//!   `bbr3:pacing=window` does exactly that, for comparison (BENCHMARKS.md).
//! * **App-limited** marking (Sec. 4.1.2.4): quinn reports whether the connection was
//!   app-limited before each ACK batch; the draft's `C.app_limited` mark is set then.
//! * **Recovery** (Sec. 5.6.4.4): no packet conservation. The draft's fast-recovery rule
//!   (cwnd to inflight at the first loss, then only what ACKs deliver for a round) is
//!   TCP's; QUIC has no recovery episode bounded by a retransmitted segment, and quinn
//!   reports a loss event per ACK. With 1 % random loss on a 1,250-packet BDP every round
//!   starts a new episode, the window stays at inflight and Startup never grows
//!   (measured with this module's tests: 9 % of a 20 Mbit/s, 600 ms path). As
//!   Chromium's and quiche's QUIC BBR do, losses act on the model only: `inflight_hi`,
//!   `bw_lo` and `inflight_lo`. QUIC's persistent congestion sets cwnd to the minimum
//!   ([`MIN_PIPE_CWND_SEGMENTS`]) as a TCP RTO does, restored once a packet sent after it
//!   is acknowledged.
//!
//! Randomness (ProbeBW's random cycle start and probe wait, Sec. 5.3.3.8.3) comes from a
//! ChaCha8 stream seeded by the caller ([`crate::CongestionConfig::seed`]); the
//! simulator derives it from the run seed and the flow, so runs stay byte-identical.
//!
//! On long paths Startup takes `log2(BDP / initial window)` rounds plus the three rounds
//! that prove the plateau, which Startup's own queue stretches: on `thesis-sat` (1.5 MB
//! BDP, 600 ms RTT) 14 rounds, 8.5 s, from RFC 9002's initial window (quinn's own BBR starts
//! from 200 datagrams). The draft's Startup has no delay-based exit and none is added here;
//! BENCHMARKS.md ("BBRv3") measures it.
//!
//! Where this module departs from the draft, each for a reason measured in its tests or in
//! BENCHMARKS.md:
//!
//! * no packet conservation in recovery (above);
//! * no ProbeRTT before Startup and Drain end (`check_probe_rtt`): on a 600 ms path
//!   they outlast the 5 s `ProbeRTTInterval`;
//! * an RTT sample equal to `probe_rtt_min_delay` refreshes it (Linux BBRv3's `<=`), so a
//!   path with a constant delay and an empty queue does not enter ProbeRTT every 5 s;
//! * `extra_acked` is capped at 100 ms of `bw` ([`EXTRA_ACKED_MAX_TIME`], Linux's
//!   `bbr_extra_acked_max_us`);
//! * Startup's high-loss exit counts quinn's loss events (one per ACK that declared
//!   losses) for the draft's lost ranges ([`STARTUP_FULL_LOSS_COUNT`]).
//!
//! What -06 changed from the -04 this module first followed, and this module follows: Drain
//! paces at 0.5 and ends after three rounds at the latest; the end of a probe's aftermath
//! (`ACKS_PROBE_STOPPING` at a round start) advances the max-bw filter once and ends the
//! probe's samples (-04 advanced it on every round of DOWN and CRUISE, so `max_bw` was a
//! two-round maximum; with the rest of this list, thesis-sat at 1 % loss went from 78 % to
//! 84 % of the link at seed 1, BENCHMARKS.md "BBRv3"); precautionary
//! bandwidth probing (Sec. 5.3.3.6) after a probe that lost too much; the loss round
//! starts at its first loss (`NoteLoss`); the extra-acked window is one round in Startup;
//! a probe's loss is judged per lost packet only.
//!
//! Section numbers and names cite draft-ietf-ccwg-bbr-06; the draft's later names `inflight_longterm`,
//! `inflight_shortterm` and `bw_shortterm` are `inflight_hi`, `inflight_lo` and `bw_lo` here,
//! the names of its earlier versions and of Linux.
//!
//! Spec: `bbr3[:NAME=VALUE,...]`, every constant of [`Bbr3Config`] by its option name.

mod config;
mod quinn;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use crate::controller::RttInfo;

pub use config::*;
pub use quinn::QuinnBbr3;

/// BBR's states (draft Sec. 5.1), ProbeBW split into its four phases (Sec. 5.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bbr3State {
    /// Sec. 5.3.1: rate doubling each round.
    Startup,
    /// Sec. 5.3.2: drain Startup's queue.
    Drain,
    /// Sec. 5.3.3.1: pace below the estimate, drain what the probe queued.
    ProbeBwDown,
    /// Sec. 5.3.3.2: pace at the estimate, leave headroom.
    ProbeBwCruise,
    /// Sec. 5.3.3.3: one round at the estimate to refill the pipe before probing.
    ProbeBwRefill,
    /// Sec. 5.3.3.4: probe for more bandwidth, raise `inflight_hi`.
    ProbeBwUp,
    /// Sec. 5.3.4: drain the queue to measure the propagation RTT.
    ProbeRtt,
}

impl Bbr3State {
    /// One of ProbeBW's phases.
    pub fn is_probe_bw(self) -> bool {
        matches!(
            self,
            Self::ProbeBwDown | Self::ProbeBwCruise | Self::ProbeBwRefill | Self::ProbeBwUp
        )
    }

    /// Sending above the estimate to find more bandwidth (Sec. 5.3.3.9 and 5.5.10.3,
    /// `IsProbingBW`): Startup, REFILL and UP, where the lower bounds do not apply.
    fn is_probing_bw(self) -> bool {
        matches!(self, Self::Startup | Self::ProbeBwRefill | Self::ProbeBwUp)
    }
}

/// Where ProbeBW's ACKs stand relative to a probe (Sec. 2.14, `BBR.ack_phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
    Refilling,
}

/// What the sender knew when it sent a datagram batch (Sec. 4.1.2.1.2, per-packet state).
#[derive(Debug, Clone, Copy)]
struct SendRecord {
    /// Send time.
    sent: Duration,
    /// `C.delivered` at send, bytes.
    delivered: u64,
    /// `C.delivered_time` at send.
    delivered_time: Duration,
    /// `C.first_send_time` at send.
    first_send_time: Duration,
    /// `C.lost` at send, bytes.
    lost: u64,
    /// Bytes in flight just after this send (`tx_in_flight`).
    tx_in_flight: u64,
    /// The connection was app-limited when it was sent.
    app_limited: bool,
}

/// The rate sample of one ACK batch (Sec. 4.1.2.1.3 and 4.1.2.3), built from its newest-sent packet.
#[derive(Debug, Clone, Copy, Default)]
struct RateSample {
    /// Some acknowledged packet had a send record.
    has_record: bool,
    /// `rs.prior_delivered`: `C.delivered` when that packet was sent.
    prior_delivered: u64,
    /// `rs.prior_time`: `C.delivered_time` when it was sent.
    prior_time: Duration,
    /// Its send time minus the first send time of its flight.
    send_elapsed: Duration,
    /// Send time of the packet the sample is taken from.
    newest_sent: Duration,
    /// `rs.is_app_limited`.
    is_app_limited: bool,
    /// `rs.tx_in_flight`, bytes.
    tx_in_flight: u64,
    /// `rs.lost`: bytes lost between its send and now.
    lost: u64,
    /// RTT of that packet.
    rtt: Option<Duration>,
    /// Bytes newly acknowledged by the batch (`rs.newly_acked`).
    newly_acked: u64,
    /// `rs.delivered`: bytes delivered over the sample's interval.
    delivered: u64,
    /// `rs.delivery_rate`, bytes per second; 0 when the interval is shorter than min_rtt.
    delivery_rate: f64,
}

/// A windowed maximum over the last `len` intervals (rounds or ProbeBW cycles), for the
/// max-bw (Sec. 5.5.3) and extra-acked (Sec. 5.5.9) filters.
#[derive(Debug, Clone)]
struct WindowedMax {
    slots: Vec<f64>,
    index: u64,
}

impl WindowedMax {
    fn new(len: u32) -> Self {
        Self {
            slots: vec![0.0; len.max(1) as usize],
            index: 0,
        }
    }

    /// Moves to interval `index`, forgetting intervals that left the window.
    fn advance_to(&mut self, index: u64) {
        let len = self.slots.len() as u64;
        let steps = index.saturating_sub(self.index).min(len);
        for i in 1..=steps {
            let slot = ((self.index + i) % len) as usize;
            self.slots[slot] = 0.0;
        }
        self.index = self.index.max(index);
    }

    fn update(&mut self, index: u64, value: f64) {
        self.advance_to(index);
        let slot = (self.index % self.slots.len() as u64) as usize;
        if value > self.slots[slot] {
            self.slots[slot] = value;
        }
    }

    fn get(&self) -> f64 {
        self.slots.iter().copied().fold(0.0, f64::max)
    }

    /// The maximum over the latest `intervals` intervals only (at least the current one).
    fn get_recent(&self, intervals: u64) -> f64 {
        let len = self.slots.len() as u64;
        (0..intervals.clamp(1, len))
            .map(|i| self.slots[((self.index + len - i) % len) as usize])
            .fold(0.0, f64::max)
    }
}

/// One BBRv3 sender. Times are offsets from an origin the caller chooses; sizes are bytes,
/// rates bytes per second.
#[derive(Debug, Clone)]
pub struct Bbr3 {
    config: Bbr3Config,
    /// Current state or ProbeBW phase.
    state: Bbr3State,
    /// Maximum datagram size, bytes (the draft's SMSS).
    mss: u64,
    /// Initial cwnd, bytes.
    initial_cwnd: u64,
    /// Congestion window, bytes.
    cwnd: u64,
    /// Pacing rate, bytes per second.
    pacing_rate: f64,
    /// The initial pacing rate was set from a measured RTT.
    pacing_rate_from_rtt: bool,
    /// Send quantum, bytes (Sec. 5.6.3).
    send_quantum: u64,
    pacing_gain: f64,
    cwnd_gain: f64,
    rng: ChaCha8Rng,

    // Delivery-rate sampling (Sec. 4.1).
    /// `C.delivered`: bytes acknowledged so far.
    delivered: u64,
    /// `C.delivered_time`: when `delivered` last grew.
    delivered_time: Duration,
    /// `C.first_send_time`: send time of the packet that starts the current flight.
    first_send_time: Duration,
    /// `C.lost`: bytes declared lost so far.
    lost: u64,
    /// `C.app_limited`: `delivered` at which the app-limited phase ends, 0 when not.
    app_limited_until: u64,
    /// Bytes in flight, quinn's figure at the last ACK batch updated by sends and losses.
    in_flight: u64,
    records: VecDeque<SendRecord>,
    /// The batch being acknowledged.
    rs: RateSample,
    /// Smoothed RTT at the latest ACK.
    srtt: Option<Duration>,

    // Round counting (Sec. 5.5.1).
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    rounds_since_bw_probe: u64,

    // Model (Sec. 5.5).
    max_bw_filter: WindowedMax,
    cycle_count: u64,
    max_bw: f64,
    /// `BBR.bw`: `min(max_bw, bw_lo)`.
    bw: f64,
    bw_lo: f64,
    bw_latest: f64,
    inflight_hi: u64,
    inflight_lo: u64,
    inflight_latest: u64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Duration,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Duration,
    probe_rtt_expired: bool,
    extra_acked_filter: WindowedMax,
    extra_acked: u64,
    extra_acked_interval_start: Duration,
    extra_acked_delivered: u64,
    /// Largest `max_inflight` computed (`UpdateMaxInflight`).
    max_inflight: u64,

    /// `BBR.drain_start_round`: `round_count` when Drain began.
    drain_start_round: u64,

    // Full pipe (Sec. 5.3.1.2).
    full_bw: f64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,

    // Congestion signals (Sec. 5.5.10).
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    lost_in_round: u64,
    delivered_at_loss_round: u64,
    bw_probe_samples: bool,
    /// The latest probe lost more than `loss_thresh` (`BBR.prev_probe_too_high`).
    prev_probe_too_high: bool,
    /// The latest probe stopped at `inflight_hi` as a precaution
    /// (`BBR.prev_probe_precautionary`).
    prev_probe_precautionary: bool,

    // ProbeBW (Sec. 5.3.3).
    ack_phase: AckPhase,
    cycle_stamp: Duration,
    bw_probe_wait: Duration,
    bw_probe_up_rounds: u32,
    bw_probe_up_acks: u64,
    probe_up_cnt: u64,
    cwnd_limited: bool,
    cwnd_limited_prev_round: bool,

    // ProbeRTT (Sec. 5.3.4).
    probe_rtt_done_stamp: Option<Duration>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    idle_restart: bool,

    /// Persistent congestion cut the window at this time; it is restored when a packet
    /// sent after it is acknowledged.
    recovery_start: Option<Duration>,
}

impl Bbr3 {
    /// A sender in Startup with `initial_cwnd` bytes, segments of `mss` bytes, and its
    /// random choices drawn from `seed`.
    pub fn new(config: Bbr3Config, mss: u64, initial_cwnd: u64, seed: u64) -> Self {
        let mss = mss.max(1);
        let initial_cwnd = initial_cwnd.max(mss);
        // Sec. 5.6.2 `InitPacingRate`: no SRTT yet, so 1 ms (replaced at the first RTT
        // sample, see `init_pacing_rate_from_rtt`).
        let pacing_rate = config.startup_pacing_gain * initial_cwnd as f64 / 1e-3;
        let mut bbr = Self {
            state: Bbr3State::Startup,
            mss,
            initial_cwnd,
            cwnd: initial_cwnd,
            pacing_rate,
            pacing_rate_from_rtt: false,
            send_quantum: 2 * mss,
            pacing_gain: config.startup_pacing_gain,
            cwnd_gain: config.startup_cwnd_gain,
            rng: ChaCha8Rng::seed_from_u64(seed),
            delivered: 0,
            delivered_time: Duration::ZERO,
            first_send_time: Duration::ZERO,
            lost: 0,
            app_limited_until: 0,
            in_flight: 0,
            records: VecDeque::new(),
            rs: RateSample::default(),
            srtt: None,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            rounds_since_bw_probe: 0,
            max_bw_filter: WindowedMax::new(config.max_bw_filter_len),
            cycle_count: 0,
            max_bw: 0.0,
            bw: 0.0,
            bw_lo: f64::INFINITY,
            bw_latest: 0.0,
            inflight_hi: u64::MAX,
            inflight_lo: u64::MAX,
            inflight_latest: 0,
            min_rtt: None,
            min_rtt_stamp: Duration::ZERO,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: Duration::ZERO,
            probe_rtt_expired: false,
            extra_acked_filter: WindowedMax::new(config.extra_acked_filter_len),
            extra_acked: 0,
            extra_acked_interval_start: Duration::ZERO,
            extra_acked_delivered: 0,
            max_inflight: 0,
            drain_start_round: 0,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            lost_in_round: 0,
            delivered_at_loss_round: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            ack_phase: AckPhase::Init,
            cycle_stamp: Duration::ZERO,
            bw_probe_wait: Duration::ZERO,
            bw_probe_up_rounds: 0,
            bw_probe_up_acks: 0,
            probe_up_cnt: u64::MAX,
            cwnd_limited: false,
            cwnd_limited_prev_round: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            idle_restart: false,
            recovery_start: None,
            config,
        };
        bbr.set_send_quantum();
        bbr
    }

    /// The configuration.
    pub fn config(&self) -> &Bbr3Config {
        &self.config
    }

    /// Current state or ProbeBW phase.
    pub fn state(&self) -> Bbr3State {
        self.state
    }

    /// Congestion window, bytes.
    pub fn window(&self) -> u64 {
        self.cwnd
    }

    /// Pacing rate, bytes per second.
    pub fn pacing_rate(&self) -> f64 {
        self.pacing_rate
    }

    /// Send quantum, bytes: the pacer's burst (Sec. 5.6.3).
    pub fn send_quantum(&self) -> u64 {
        self.send_quantum
    }

    /// `BBR.max_bw`, bytes per second.
    pub fn max_bw(&self) -> f64 {
        self.max_bw
    }

    /// `BBR.bw` (`min(max_bw, bw_lo)`), bytes per second.
    pub fn bw(&self) -> f64 {
        self.bw
    }

    /// `BBR.bw_lo`, bytes per second (infinite when unset).
    pub fn bw_lo(&self) -> f64 {
        self.bw_lo
    }

    /// `BBR.min_rtt`, once measured.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// `BBR.inflight_hi` (the draft's later `inflight_longterm`), bytes; `u64::MAX` unset.
    pub fn inflight_hi(&self) -> u64 {
        self.inflight_hi
    }

    /// `BBR.inflight_lo` (`inflight_shortterm`), bytes; `u64::MAX` unset.
    pub fn inflight_lo(&self) -> u64 {
        self.inflight_lo
    }

    /// Startup found the pipe full (`BBR.full_bw_reached`).
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Round trips counted so far (`BBR.round_count`).
    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    /// Bytes in flight as this controller counts them.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// The smallest cwnd, bytes (Sec. 5.6.4.1).
    fn min_pipe_cwnd(&self) -> u64 {
        self.config.min_pipe_cwnd_segments * self.mss
    }

    // ---- quinn's events ------------------------------------------------------------

    /// A datagram batch of `bytes` left at `now`.
    pub fn on_sent(&mut self, now: Duration, bytes: u64) {
        if self.in_flight == 0 {
            // Sec. 4.1.2.2: a new flight starts its delivery-rate interval here.
            self.first_send_time = now;
            self.delivered_time = now;
            if self.app_limited_until != 0 {
                self.handle_restart_from_idle(now);
            }
        }
        self.in_flight += bytes;
        // quinn sends while `in_flight + datagram < window`: one more would be blocked.
        if self.in_flight + self.mss >= self.cwnd {
            self.cwnd_limited = true;
        }
        match self.records.back_mut() {
            Some(last) if last.sent == now => last.tx_in_flight = self.in_flight,
            _ => self.records.push_back(SendRecord {
                sent: now,
                delivered: self.delivered,
                delivered_time: self.delivered_time,
                first_send_time: self.first_send_time,
                lost: self.lost,
                tx_in_flight: self.in_flight,
                app_limited: self.app_limited_until != 0,
            }),
        }
    }

    /// A packet of `bytes` sent at `sent` was acknowledged at `now` (one call per packet
    /// of an ACK batch; [`Self::on_end_acks`] closes the batch).
    pub fn on_ack(&mut self, now: Duration, sent: Duration, bytes: u64, rtt: RttInfo) {
        self.delivered += bytes;
        self.delivered_time = now;
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.rs.newly_acked += bytes;
        self.srtt = Some(rtt.smoothed);
        if let Some(start) = self.recovery_start
            && sent > start
        {
            // A packet sent after persistent congestion was declared got through.
            self.recovery_start = None;
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        let idx = self.records.partition_point(|r| r.sent < sent);
        let Some(record) = self.records.get(idx).filter(|r| r.sent == sent).copied() else {
            return;
        };
        // Sec. 4.1.2.3 `UpdateRateSample`: the sample follows the most recently sent
        // packet of the batch.
        if !self.rs.has_record || record.delivered >= self.rs.prior_delivered {
            self.rs.has_record = true;
            self.rs.prior_delivered = record.delivered;
            self.rs.prior_time = record.delivered_time;
            self.rs.is_app_limited = record.app_limited;
            self.rs.send_elapsed = record.sent.saturating_sub(record.first_send_time);
            self.rs.newest_sent = record.sent;
            self.rs.tx_in_flight = record.tx_in_flight;
            self.rs.lost = self.lost - record.lost;
            self.rs.rtt = Some(rtt.latest);
            self.first_send_time = record.sent;
        }
    }

    /// The ACK batch is complete; quinn counts `in_flight` bytes outstanding and reports
    /// whether the connection was app-limited before it.
    pub fn on_end_acks(&mut self, now: Duration, in_flight: u64, app_limited: bool) {
        self.in_flight = in_flight;
        if app_limited {
            self.mark_app_limited();
        }
        if self.rs.newly_acked == 0 {
            self.rs = RateSample::default();
            return;
        }
        self.generate_rate_sample();
        if !self.pacing_rate_from_rtt
            && let Some(srtt) = self.srtt.filter(|s| !s.is_zero())
        {
            // Sec. 5.6.2 `InitPacingRate` with the first SRTT quinn measured.
            self.pacing_rate_from_rtt = true;
            self.pacing_rate =
                self.config.startup_pacing_gain * self.initial_cwnd as f64 / srtt.as_secs_f64();
        }
        self.update_model_and_state(now);
        self.update_control_parameters();
        self.prune_records();
        self.rs = RateSample::default();
    }

    /// quinn declared `lost_bytes` lost at `now`, the newest of them sent at `sent`; with
    /// `persistent` all packets over the persistent-congestion period were lost.
    pub fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent: bool,
        lost_bytes: u64,
    ) {
        self.lost += lost_bytes;
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        if !self.loss_in_round {
            // `NoteLoss` (Sec. 5.5.10.2): the loss round ends one round after its first
            // loss, so the response sees a full round of the delivery process with it.
            self.loss_round_delivered = self.delivered;
            self.delivered_at_loss_round = self.delivered;
        }
        self.loss_in_round = true;
        self.loss_events_in_round += 1;
        self.lost_in_round += lost_bytes;
        self.handle_lost(now, sent, lost_bytes);
        if persistent {
            // RFC 9002 Sec. 7.6.2, as BBR treats a TCP RTO (Sec. 5.6.4.4): the model
            // stays, the window restarts from the minimum and is restored once a packet
            // sent after this is acknowledged.
            self.save_cwnd();
            self.cwnd = self.min_pipe_cwnd();
            self.recovery_start = Some(now);
        }
    }

    /// The path MTU changed to `mss` bytes.
    pub fn on_mtu_update(&mut self, mss: u64) {
        self.mss = mss.max(1);
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        self.set_send_quantum();
    }

    // ---- delivery rate (Sec. 4.1) ---------------------------------------------------

    /// `MarkConnectionAppLimited` (Sec. 4.1.2.4).
    fn mark_app_limited(&mut self) {
        self.app_limited_until = (self.delivered + self.in_flight).max(1);
    }

    /// `GenerateRateSample` (Sec. 4.1.2.3).
    fn generate_rate_sample(&mut self) {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !self.rs.has_record {
            return;
        }
        let ack_elapsed = self.delivered_time.saturating_sub(self.rs.prior_time);
        let interval = self.rs.send_elapsed.max(ack_elapsed);
        self.rs.delivered = self.delivered - self.rs.prior_delivered;
        // An interval shorter than the path's RTT cannot be a complete sample.
        let too_short = self.min_rtt.is_some_and(|m| interval < m);
        if !interval.is_zero() && !too_short {
            self.rs.delivery_rate = self.rs.delivered as f64 / interval.as_secs_f64();
        }
    }

    /// Drops send records quinn can no longer acknowledge or declare lost.
    fn prune_records(&mut self) {
        let keep = 2 * self.srtt.unwrap_or(Duration::from_secs(1));
        let horizon = self.rs.newest_sent.saturating_sub(keep);
        while self.records.front().is_some_and(|r| r.sent < horizon) {
            self.records.pop_front();
        }
    }

    // ---- the per-ACK update (Sec. 5.2.3, `UpdateOnACK`) ---------------------------

    fn update_model_and_state(&mut self, now: Duration) {
        self.update_latest_delivery_signals();
        self.update_congestion_signals();
        self.update_ack_aggregation(now);
        self.check_full_bw_reached();
        self.check_startup_done();
        self.check_drain_done(now);
        self.update_probe_bw_cycle_phase(now);
        self.update_min_rtt(now);
        self.check_probe_rtt(now);
        self.advance_latest_delivery_signals();
        self.bound_bw_for_model();
    }

    fn update_control_parameters(&mut self) {
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd();
    }

    /// `UpdateRound` (Sec. 5.5.1).
    fn update_round(&mut self) {
        if self.rs.has_record && self.rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_bw_probe += 1;
            self.round_start = true;
            self.cwnd_limited_prev_round = self.cwnd_limited;
            self.cwnd_limited = false;
        } else {
            self.round_start = false;
        }
    }

    /// `StartRound`: the round ends when a packet sent from now on is acknowledged.
    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    /// `BBR.is_cwnd_limited`: the window limited sending in this or the last round.
    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited || self.cwnd_limited_prev_round
    }

    /// `UpdateMaxBw` (Sec. 5.5.5).
    fn update_max_bw(&mut self) {
        self.update_round();
        let rate = self.rs.delivery_rate;
        if rate > 0.0 && (rate >= self.max_bw || !self.rs.is_app_limited) {
            self.max_bw_filter.update(self.cycle_count, rate);
            self.max_bw = self.max_bw_filter.get();
        }
    }

    /// `AdvanceMaxBwFilter` (Sec. 5.5.6): one ProbeBW cycle more.
    fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
        self.max_bw_filter.advance_to(self.cycle_count);
        self.max_bw = self.max_bw_filter.get();
    }

    /// `UpdateLatestDeliverySignals` (Sec. 5.5.10.3).
    fn update_latest_delivery_signals(&mut self) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(self.rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(self.rs.delivered);
        if self.rs.has_record && self.rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    /// `AdvanceLatestDeliverySignals`.
    fn advance_latest_delivery_signals(&mut self) {
        if self.loss_round_start {
            self.bw_latest = self.rs.delivery_rate;
            self.inflight_latest = self.rs.delivered;
        }
    }

    /// `UpdateCongestionSignals`, with Startup's high-loss exit (Sec. 5.3.1.3) checked
    /// on the round's totals before they are reset.
    fn update_congestion_signals(&mut self) {
        self.update_max_bw();
        if !self.loss_round_start {
            return;
        }
        self.check_startup_high_loss();
        self.adapt_lower_bounds_from_congestion();
        self.loss_in_round = false;
        self.loss_events_in_round = 0;
        self.lost_in_round = 0;
        self.delivered_at_loss_round = self.delivered;
    }

    /// Sec. 5.3.1.3: a Startup round with at least `startup_full_loss_count` loss events
    /// and a loss rate above `loss_thresh` means the pipe is full.
    fn check_startup_high_loss(&mut self) {
        if self.full_bw_reached || self.state != Bbr3State::Startup || !self.loss_in_round {
            return;
        }
        let delivered = self.delivered - self.delivered_at_loss_round;
        let total = (delivered + self.lost_in_round) as f64;
        if self.loss_events_in_round >= self.config.startup_full_loss_count
            && self.lost_in_round as f64 > self.config.loss_thresh * total
        {
            self.full_bw_reached = true;
            let bdp = self.bdp_multiple(self.max_bw, 1.0);
            self.inflight_hi = bdp.max(self.inflight_latest);
        }
    }

    /// `AdaptLowerBoundsFromCongestion` (Sec. 5.5.10.3).
    fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.state.is_probing_bw() || !self.loss_in_round {
            return;
        }
        // `InitLowerBounds`.
        if self.bw_lo.is_infinite() {
            self.bw_lo = self.max_bw;
        }
        if self.inflight_lo == u64::MAX {
            self.inflight_lo = self.cwnd;
        }
        // `LossLowerBounds`.
        self.bw_lo = self.bw_latest.max(self.config.beta * self.bw_lo);
        self.inflight_lo = self
            .inflight_latest
            .max((self.config.beta * self.inflight_lo as f64) as u64);
    }

    /// `ResetShortTermModel`.
    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = u64::MAX;
    }

    /// `ResetCongestionSignals`.
    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    /// `BoundBWForModel`.
    fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.min(self.bw_lo);
    }

    /// `UpdateACKAggregation` (Sec. 5.5.9).
    fn update_ack_aggregation(&mut self, now: Duration) {
        let interval = now.saturating_sub(self.extra_acked_interval_start);
        let mut expected = (self.bw * interval.as_secs_f64()) as u64;
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = now;
            expected = 0;
        }
        self.extra_acked_delivered += self.rs.newly_acked;
        let cap = (self.bw * self.config.extra_acked_max_time.as_secs_f64()) as u64;
        let extra = self
            .extra_acked_delivered
            .saturating_sub(expected)
            .min(self.cwnd)
            .min(cap);
        self.extra_acked_filter
            .update(self.round_count, extra as f64);
        // -06: the window is one round in Startup, `extra_acked_filter_len` rounds after.
        self.extra_acked = if self.full_bw_reached {
            self.extra_acked_filter.get() as u64
        } else {
            self.extra_acked_filter.get_recent(1) as u64
        };
    }

    // ---- Startup and Drain (Sec. 5.3.1, 5.3.2) -------------------------------------

    /// `ResetFullBW`.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// `CheckFullBWReached` (Sec. 5.3.1.2).
    fn check_full_bw_reached(&mut self) {
        if self.full_bw_now || !self.round_start || self.rs.is_app_limited {
            return;
        }
        if self.rs.delivery_rate >= self.full_bw * self.config.full_bw_growth {
            self.reset_full_bw();
            self.full_bw = self.rs.delivery_rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= self.config.full_bw_count;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// `CheckStartupDone`.
    fn check_startup_done(&mut self) {
        if self.state == Bbr3State::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    fn enter_startup(&mut self) {
        self.state = Bbr3State::Startup;
        self.pacing_gain = self.config.startup_pacing_gain;
        self.cwnd_gain = self.config.startup_cwnd_gain;
    }

    fn enter_drain(&mut self) {
        self.state = Bbr3State::Drain;
        self.drain_start_round = self.round_count;
        self.pacing_gain = self.config.drain_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    /// `CheckDrainDone`: inflight down to the BDP, or three rounds in Drain (-06: Startup
    /// may have overestimated the bandwidth against competing flows).
    fn check_drain_done(&mut self, now: Duration) {
        if self.state == Bbr3State::Drain
            && (self.in_flight <= self.inflight(self.max_bw, 1.0)
                || self.round_count > self.drain_start_round + DRAIN_MAX_ROUNDS)
        {
            // `EnterProbeBW`. Drain emptied the queue as ProbeRTT would have: the next
            // ProbeRTT is due a `probe_rtt_interval` from here (see `check_probe_rtt`).
            self.probe_rtt_min_stamp = now;
            self.cwnd_gain = self.config.cwnd_gain;
            self.start_probe_bw_down(now);
        }
    }

    // ---- ProbeBW (Sec. 5.3.3) ------------------------------------------------------

    fn start_probe_bw_down(&mut self, now: Duration) {
        self.reset_congestion_signals();
        self.probe_up_cnt = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.state = Bbr3State::ProbeBwDown;
        self.pacing_gain = self.config.down_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    fn start_probe_bw_cruise(&mut self) {
        self.state = Bbr3State::ProbeBwCruise;
        self.pacing_gain = self.config.cruise_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    fn start_probe_bw_refill(&mut self) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.state = Bbr3State::ProbeBwRefill;
        self.pacing_gain = self.config.cruise_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    fn start_probe_bw_up(&mut self) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = self.rs.delivery_rate;
        self.state = Bbr3State::ProbeBwUp;
        self.pacing_gain = self.config.up_pacing_gain;
        self.cwnd_gain = self.config.up_cwnd_gain;
        self.raise_inflight_hi_slope();
    }

    /// `PickProbeWait` (Sec. 5.3.3.8.3): 0 or 1 rounds already counted, and a wait of
    /// `probe_wait_base` plus up to `probe_wait_random`, both from the seeded stream.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_bw_probe = self.rng.next_u64() & 1;
        let unit = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.bw_probe_wait =
            self.config.probe_wait_base + self.config.probe_wait_random.mul_f64(unit);
    }

    /// `UpdateProbeBWCyclePhase`.
    fn update_probe_bw_cycle_phase(&mut self, now: Duration) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model() {
            return;
        }
        if !self.state.is_probe_bw() {
            return;
        }
        match self.state {
            Bbr3State::ProbeBwDown => {
                if self.is_time_to_probe_bw(now) {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            Bbr3State::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            Bbr3State::ProbeBwRefill if self.round_start => {
                self.bw_probe_samples = true;
                self.start_probe_bw_up();
                return;
            }
            _ => {}
        }
        if self.state == Bbr3State::ProbeBwUp && self.is_time_to_go_down() {
            self.prev_probe_too_high = false;
            self.start_probe_bw_down(now);
        }
    }

    /// `IsTimeToCruise`.
    fn is_time_to_cruise(&self) -> bool {
        if self.in_flight > self.inflight_with_headroom() {
            return false;
        }
        self.in_flight <= self.inflight(self.max_bw, 1.0)
    }

    /// `IsTimeToGoDown`.
    fn is_time_to_go_down(&mut self) -> bool {
        // Precautionary bandwidth probing, deceleration (Sec. 5.3.3.6): the last probe
        // lost too much at `inflight_hi`, so this one stops when it gets there.
        if self.prev_probe_too_high && self.in_flight >= self.inflight_hi {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_hi {
            self.reset_full_bw();
            self.full_bw = self.rs.delivery_rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// `IsTimeToProbeBW`: starts REFILL when it is.
    fn is_time_to_probe_bw(&mut self, now: Duration) -> bool {
        if now > self.cycle_stamp + self.bw_probe_wait || self.is_reno_coexistence_probe_time() {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// `IsRenoCoexistenceProbeTime`: a Reno flow would have grown its window by the
    /// BDP in packets by now.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = self.target_inflight() / self.mss;
        self.rounds_since_bw_probe >= reno_rounds.min(self.config.reno_max_rounds)
    }

    /// `TargetInflight`.
    fn target_inflight(&self) -> u64 {
        self.bdp_multiple(self.bw, 1.0).min(self.cwnd)
    }

    /// `AdaptLongTermModel` (Sec. 5.3.3.9): true when it started a new phase. A sample
    /// that lost too much raises nothing here; the loss itself is handled per lost packet
    /// (`handle_lost`, Sec. 5.5.10.2), as -06 does (-02 also reacted on the ACK).
    fn adapt_long_term_model(&mut self) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            // The first ACKs of the probe's own packets.
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // End of the probe's aftermath: a new cycle for the max-bw filter, once. -06
            // leaves this phase here (`ACKS_INIT`) and stops treating samples as probe
            // samples; -04 did neither, so the filter advanced on every round of DOWN
            // and CRUISE (`max_bw` became a two-round maximum) and a random loss in
            // CRUISE could still set `inflight_hi`.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !self.rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // Precautionary bandwidth probing, acceleration (Sec. 5.3.3.6): the short
            // probe after a lossy one lost little, so probe again, fully.
            if self.state.is_probe_bw()
                && self.prev_probe_precautionary
                && !self.prev_probe_too_high
            {
                self.start_probe_bw_refill();
                return true;
            }
        }
        if self.is_inflight_too_high(self.rs.lost, self.rs.tx_in_flight) {
            return false;
        }
        if self.inflight_hi == u64::MAX {
            return false;
        }
        if self.rs.tx_in_flight > self.inflight_hi {
            self.inflight_hi = self.rs.tx_in_flight;
        }
        if self.state == Bbr3State::ProbeBwUp {
            self.probe_inflight_hi_upward();
        }
        false
    }

    /// `IsInflightTooHigh`: the sample lost more than `loss_thresh` of what was in flight.
    fn is_inflight_too_high(&self, lost: u64, tx_in_flight: u64) -> bool {
        lost as f64 > tx_in_flight as f64 * self.config.loss_thresh
    }

    /// `HandleInflightTooHigh`: the probe found the volume the path drops at.
    fn handle_inflight_too_high(&mut self, now: Duration, tx_in_flight: u64, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !app_limited {
            let floor = (self.target_inflight() as f64 * self.config.beta) as u64;
            self.inflight_hi = tx_in_flight.max(floor);
        }
        if self.state == Bbr3State::ProbeBwUp {
            self.start_probe_bw_down(now);
        }
    }

    /// `HandleLostPacket` (Sec. 5.5.10.2) for quinn's loss event: the newest lost
    /// packet's record stands for the lost packets.
    fn handle_lost(&mut self, now: Duration, sent: Duration, lost_bytes: u64) {
        if !self.bw_probe_samples {
            return;
        }
        let idx = self.records.partition_point(|r| r.sent < sent);
        let Some(record) = self.records.get(idx).filter(|r| r.sent == sent).copied() else {
            return;
        };
        let lost = self.lost - record.lost;
        if self.is_inflight_too_high(lost, record.tx_in_flight) {
            // `InflightAtLoss`: the inflight at which the loss rate crossed
            // the threshold, assuming the losses came last.
            let size = lost_bytes.min(record.tx_in_flight);
            let inflight_prev = (record.tx_in_flight - size) as f64;
            let lost_prev = lost.saturating_sub(size) as f64;
            let thresh = self.config.loss_thresh;
            let lost_prefix = ((thresh * inflight_prev - lost_prev) / (1.0 - thresh)).max(0.0);
            let inflight = (inflight_prev + lost_prefix) as u64;
            self.handle_inflight_too_high(now, inflight, record.app_limited);
        }
    }

    /// `ProbeInflightLongtermUpward`: grow `inflight_hi` 1, 2, 4... segments per round.
    fn probe_inflight_hi_upward(&mut self) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += self.rs.newly_acked;
        if self.bw_probe_up_acks >= self.probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    /// `RaiseInflightLongtermSlope`.
    fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        // Bytes acknowledged per segment of growth.
        self.probe_up_cnt = (self.cwnd / growth_this_round).max(self.mss);
    }

    // ---- ProbeRTT (Sec. 5.3.4) -----------------------------------------------------

    /// `UpdateMinRTT` (Sec. 5.3.4.3). A sample equal to `probe_rtt_min_delay`
    /// refreshes it (Linux BBRv3's `<=`; the draft writes `<`): it shows the queue is as
    /// empty as at the minimum, and on a path with a constant propagation delay a strict
    /// comparison would enter ProbeRTT every 5 s however empty the queue.
    ///
    /// Neither estimate expires before Drain ends (with `check_probe_rtt`'s deviation): on
    /// a 600 ms path Startup lasts about 10 s, and an expiry would adopt an RTT sample
    /// inflated by Startup's own queue as `min_rtt`, doubling the BDP estimate (seen in
    /// this module's tests when Drain straddled the 10 s `MinRTTFilterLen`).
    fn update_min_rtt(&mut self, now: Duration) {
        let starting = matches!(self.state, Bbr3State::Startup | Bbr3State::Drain);
        self.probe_rtt_expired =
            !starting && now > self.probe_rtt_min_stamp + self.config.probe_rtt_interval;
        if let Some(rtt) = self.rs.rtt
            && (self.probe_rtt_min_delay.is_none_or(|d| rtt <= d) || self.probe_rtt_expired)
        {
            self.probe_rtt_min_delay = Some(rtt);
            self.probe_rtt_min_stamp = now;
        }
        let min_rtt_expired =
            !starting && now > self.min_rtt_stamp + self.config.min_rtt_filter_len;
        if let Some(d) = self.probe_rtt_min_delay
            && (self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired)
        {
            self.min_rtt = Some(d);
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
    }

    /// `CheckProbeRTT`, not before Startup and Drain are over: a deviation from the
    /// draft, which enters ProbeRTT from any state. On a 600 ms path Startup and Drain
    /// last longer than the 5 s `ProbeRTTInterval`; the draft's ProbeRTT then interrupts
    /// Startup, which resumes with its queue rebuilt at 1.2 s rounds and exits 6 s later,
    /// and the next ProbeRTT falls into Drain (measured on thesis-sat: ProbeBW from 15.8 s
    /// instead of 8.5 s). Startup's queue is drained by Drain, which is what ProbeRTT would
    /// do.
    fn check_probe_rtt(&mut self, now: Duration) {
        if self.state != Bbr3State::ProbeRtt
            && self.probe_rtt_expired
            && !self.idle_restart
            && !matches!(self.state, Bbr3State::Startup | Bbr3State::Drain)
        {
            // `EnterProbeRTT`.
            self.state = Bbr3State::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = self.config.probe_rtt_cwnd_gain;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == Bbr3State::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        if self.rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `HandleProbeRTT`.
    fn handle_probe_rtt(&mut self, now: Duration) {
        // Samples taken at ProbeRTT's low inflight say nothing of the bandwidth.
        self.mark_app_limited();
        match self.probe_rtt_done_stamp {
            None if self.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + self.config.probe_rtt_duration);
                self.probe_rtt_round_done = false;
                self.start_round();
            }
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
            None => {}
        }
    }

    /// `CheckProbeRTTDone`.
    fn check_probe_rtt_done(&mut self, now: Duration) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            // Schedule the next ProbeRTT.
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            // `ExitProbeRTT`.
            self.reset_lower_bounds();
            if self.full_bw_reached {
                self.start_probe_bw_down(now);
                self.start_probe_bw_cruise();
            } else {
                self.enter_startup();
            }
        }
    }

    /// `ProbeRTTCwnd`.
    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, self.config.probe_rtt_cwnd_gain)
            .max(self.min_pipe_cwnd())
    }

    /// `HandleRestartFromIdle` (Sec. 5.4).
    fn handle_restart_from_idle(&mut self, now: Duration) {
        self.idle_restart = true;
        self.extra_acked_interval_start = now;
        if self.state.is_probe_bw() {
            self.set_pacing_rate_with_gain(1.0);
        } else if self.state == Bbr3State::ProbeRtt {
            self.check_probe_rtt_done(now);
        }
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.recovery_start.is_none() && self.state != Bbr3State::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    // ---- control parameters (Sec. 5.6) ---------------------------------------------

    /// `SetPacingRateWithGain` (Sec. 5.6.2).
    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = gain * self.bw * (100.0 - self.config.pacing_margin_percent) / 100.0;
        if rate > 0.0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    fn set_pacing_rate(&mut self) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
    }

    /// `SetSendQuantum` (Sec. 5.6.3).
    fn set_send_quantum(&mut self) {
        let quantum = (self.pacing_rate * SEND_QUANTUM_INTERVAL.as_secs_f64()) as u64;
        self.send_quantum =
            quantum.clamp(2 * self.mss, self.config.send_quantum_max.max(2 * self.mss));
    }

    /// `BDPMultiple`: `gain x bw x min_rtt`, the initial cwnd before an RTT is known.
    fn bdp_multiple(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => self.initial_cwnd,
            Some(rtt) => (gain * bw * rtt.as_secs_f64()) as u64,
        }
    }

    /// `QuantizationBudget` (Sec. 5.6.4.2).
    fn quantization_budget(&self, inflight: u64) -> u64 {
        let offload_budget = 3 * self.send_quantum;
        let mut inflight = inflight.max(offload_budget).max(self.min_pipe_cwnd());
        if self.state == Bbr3State::ProbeBwUp {
            inflight += 2 * self.mss;
        }
        inflight
    }

    /// `Inflight`.
    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// `InflightWithHeadroom` (Sec. 5.3.3.9).
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_hi == u64::MAX {
            return u64::MAX;
        }
        let headroom = ((self.config.headroom * self.inflight_hi as f64) as u64).max(self.mss);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(self.min_pipe_cwnd())
    }

    /// `SetCwnd` (Sec. 5.6.4.6) with `BoundCwndForModel` (Sec. 5.6.4.7).
    fn set_cwnd(&mut self) {
        // `UpdateMaxInflight`.
        let inflight = self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked;
        self.max_inflight = self.quantization_budget(inflight);
        let acked = self.rs.newly_acked;
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + acked).min(self.max_inflight);
        } else if self.cwnd < self.max_inflight || self.delivered < self.initial_cwnd {
            self.cwnd += acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        // `BoundCwndForProbeRTT`.
        if self.state == Bbr3State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // `BoundCwndForModel`.
        let mut cap = if self.state.is_probe_bw() && self.state != Bbr3State::ProbeBwCruise {
            self.inflight_hi
        } else if matches!(self.state, Bbr3State::ProbeRtt | Bbr3State::ProbeBwCruise) {
            self.inflight_with_headroom()
        } else {
            u64::MAX
        };
        cap = cap.min(self.inflight_lo).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }
}
