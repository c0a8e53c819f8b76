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
//!   `bbr3:pacing=window` does exactly that, for comparison (BENCHMARKS.md, "BBRv3").
//! * **App-limited** marking (Sec. 4.1.2.4): quinn reports whether the connection was
//!   app-limited before each ACK batch; the draft's `C.app_limited` mark is set then.
//! * **Recovery** (Sec. 5.6.4.4): no packet conservation. The draft's fast-recovery rule
//!   (cwnd to inflight at the first loss, then only what ACKs deliver for a round) is
//!   TCP's; QUIC has no recovery episode bounded by a retransmitted segment, and quinn
//!   reports a loss event per ACK. With 1 % random loss on a 1,250-packet BDP every round
//!   starts a new episode, the window stays at inflight and Startup never grows (this
//!   module's tests saw it use a small fraction of a 20 Mbit/s, 600 ms path). As
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
//! that prove the plateau, which Startup's own queue stretches: several seconds on
//! `thesis-sat` (1.5 MB BDP, 600 ms RTT) from RFC 9002's initial window (quinn's own BBR
//! starts from 200 datagrams). The draft's Startup has no delay-based exit and none is
//! added here; BENCHMARKS.md ("BBRv3") measures it. picoquic's long-RTT aids are
//! options, off by default (`long_rtt.rs`: `floor`, `quanta`, `jump`, `long-probe-rtt`):
//! each seeds or floors one of the draft's variables in Startup (ProbeRTT's interval for
//! the last) and leaves the state machine as it is.
//!
//! Where this module departs from the draft, each for a reason measured in its tests or in
//! BENCHMARKS.md ("BBRv3"):
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
//! two-round maximum; with the rest of this list, thesis-sat at 1 % loss uses more of the
//! link, BENCHMARKS.md "BBRv3"); precautionary
//! bandwidth probing (Sec. 5.3.3.6) after a probe that lost too much; the loss round
//! starts at its first loss (`NoteLoss`); the extra-acked window is one round in Startup;
//! a probe's loss is judged per lost packet only.
//!
//! Section numbers and names cite draft-ietf-ccwg-bbr-06; the draft's later names `inflight_longterm`,
//! `inflight_shortterm` and `bw_shortterm` are `inflight_hi`, `inflight_lo` and `bw_lo` here,
//! the names of its earlier versions and of Linux.
//!
//! Spec: `bbr3[:NAME=VALUE,...]`, every constant of [`Bbr3Config`] by its option name, and
//! the long-RTT aids by theirs.
//!
//! # Where each part lives
//!
//! The files follow the draft's structure; each method is named after the draft's
//! pseudocode function it implements (`UpdateMaxBw` is `update_max_bw`).
//!
//! | file | draft | what |
//! |---|---|---|
//! | `mod.rs` | Sec. 5.1, 5.2.3 | [`Bbr3`]'s state, quinn's events, the per-ACK update (`UpdateOnACK`) |
//! | `config.rs` | Sec. 2 | [`Bbr3Config`]: the draft's constants and their spec names |
//! | `delivery.rs` | Sec. 4.1 | per-packet send state and the rate sample of each ACK batch |
//! | `model.rs` | Sec. 5.5 | rounds, the max-bw filter, the lower bounds learned from loss, ACK aggregation |
//! | `startup.rs` | Sec. 5.3.1, 5.3.2 | Startup and Drain: a full pipe, and its queue drained |
//! | `probe_bw.rs` | Sec. 5.3.3 | ProbeBW's cycle and the long-term bound `inflight_hi` |
//! | `probe_rtt.rs` | Sec. 5.3.4, 5.4 | ProbeRTT, the min-RTT estimate, the restart from idle |
//! | `long_rtt.rs` | | picoquic's long-RTT start-up aids, as options (off by default) |
//! | `control.rs` | Sec. 5.6 | the outputs: pacing rate, send quantum, cwnd |

mod config;
mod control;
mod delivery;
mod long_rtt;
mod model;
mod probe_bw;
mod probe_rtt;
mod startup;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

use crate::controller::RttInfo;

pub use crate::adapter::QuinnBbr3;
pub use config::*;
use delivery::{RateSample, SendRecord};
pub use long_rtt::{LONG_PROBE_RTT_RTTS, LONG_RTT_THRESHOLD, LongRttStart};
use model::WindowedMax;

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

    /// The long-RTT start-up aids' state (`long_rtt.rs`).
    long_rtt: long_rtt::LongRttState,
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
            long_rtt: long_rtt::LongRttState::default(),
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

    /// The initial congestion window, bytes.
    pub fn initial_window(&self) -> u64 {
        self.initial_cwnd
    }

    /// Congestion window, bytes.
    pub fn window(&self) -> u64 {
        self.cwnd
    }

    /// Pacing rate, bytes per second.
    pub fn pacing_rate_bytes_per_sec(&self) -> f64 {
        self.pacing_rate
    }

    /// Send quantum, bytes: the pacer's burst (Sec. 5.6.3).
    pub fn send_quantum(&self) -> u64 {
        self.send_quantum
    }

    /// `BBR.max_bw`, bytes per second.
    pub fn max_bw_bytes_per_sec(&self) -> f64 {
        self.max_bw
    }

    /// `BBR.bw` (`min(max_bw, bw_lo)`), bytes per second.
    pub fn bw_bytes_per_sec(&self) -> f64 {
        self.bw
    }

    /// `BBR.bw_lo`, bytes per second (infinite when unset).
    pub fn bw_lo_bytes_per_sec(&self) -> f64 {
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
        if self.config.long_rtt.jump.is_some() {
            self.long_rtt.peak.on_ack(sent, bytes);
        }
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
        self.apply_long_rtt_start(now);
        self.update_control_parameters();
        self.floor_pacing_rate_at_cwnd();
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
}
