//! The composed controller: a window, RFC 9002 recovery, a [`SlowStart`] for the initial
//! slow start and an [`Avoidance`] afterwards.
//!
//! It is independent of quinn (times are `Duration` offsets from an origin) so synthetic
//! ACK timelines can drive it directly; [`crate::QuinnController`] adapts it to quinn-proto.
//!
//! Recovery follows RFC 9002 Sec. 7.3.2: a congestion event for a packet sent after the
//! current recovery period started begins a new period and reduces the window once;
//! acknowledgements of packets sent before the period started do not grow the window.
//! Persistent congestion (Sec. 7.6.2) collapses the window to the minimum (2 x MSS).
//! The configured slow start runs for the initial slow start only (RFC 9406 Sec. 4.2's
//! recommendation); after a loss the window grows classically up to `ssthresh`. While the
//! sender is application-limited the window does not grow (Sec. 7.8), but the slow start
//! still sees every acknowledgement (SEARCH counts delivered bytes regardless).
//!
//! Careful Resume (RFC 9959, [`crate::careful_resume`]) rides along: it observes the
//! capacity in its Normal phase and, given saved parameters, sets the window at the jump,
//! freezes it until validation, and cuts it on congestion after the jump (Safe Retreat).
//! The slow start sees every packet throughout.

use std::time::Duration;

use crate::avoidance::{Avoidance, CaAck};
use crate::burst::SlowStartBurst;
use crate::careful_resume::{
    AckEffect, CarefulResume, CarefulResumeConfig, CarefulResumePhase, Effect, NotObserved,
    Observation, PacingRequirement, ResumeParams, ResumedController, Transition, Window,
};
use crate::event::{CcEvent, Emitter, ExitReason};
use crate::growth::{RttWindowFloor, StartupGrowth};
use crate::jump::{BdpJump, PeakRate};
use crate::loss_filter::{LossFilter, LossFilterConfig};
use crate::modifiers::Modifiers;
use crate::rollback::RollbackConfig;
use crate::slow_start::{AckSample, SlowStart, SsDecision};

/// RTT estimates handed in with each acknowledgement.
#[derive(Debug, Clone, Copy)]
pub struct RttInfo {
    /// RTT sample of the acknowledged packet (now - send time).
    pub latest: Duration,
    /// Smoothed RTT.
    pub smoothed: Duration,
    /// Minimum RTT.
    pub min: Duration,
}

impl RttInfo {
    /// All three estimates equal to `rtt` (synthetic timelines).
    pub fn fixed(rtt: Duration) -> Self {
        Self {
            latest: rtt,
            smoothed: rtt,
            min: rtt,
        }
    }
}

/// Largest window the controller will hold, in bytes (1 TiB): a cap that keeps
/// arithmetic finite when an aggressive slow start (Hybla on GEO) asks for the moon.
pub const MAX_WINDOW: u64 = 1 << 40;

/// The composed congestion controller. See the module docs.
#[derive(Debug, Clone)]
pub struct Controller {
    /// Congestion window in bytes.
    cwnd: u64,
    /// Fractional bytes of window growth not yet whole.
    cwnd_carry: f64,
    /// Slow-start threshold in bytes; `u64::MAX` until the first exit or loss.
    ssthresh: u64,
    /// Maximum datagram size in bytes (`max_datagram_size` of RFC 9002).
    mss: u64,
    /// Largest window allowed, bytes.
    max_window: u64,
    /// Start of the current recovery period; `None` if none happened yet.
    recovery_start: Option<Duration>,
    /// Whether the initial slow start is over (exit or loss).
    initial_slow_start_done: bool,
    /// The slow start used for the initial slow start.
    slow_start: Box<dyn SlowStart>,
    /// Congestion avoidance and decrease.
    avoidance: Box<dyn Avoidance>,
    /// Packet number of the last packet sent.
    last_sent_pn: Option<u64>,
    /// The round ends when this packet number is acknowledged (RFC 9406 `windowEnd`).
    round_end_pn: Option<u64>,
    /// Where events go.
    events: Emitter,
    /// Careful Resume: observing, and resuming from saved parameters.
    cr: CarefulResume,
    /// How fast the initial slow start grows.
    growth: StartupGrowth,
    /// The window the controller started with, bytes.
    initial_window: u64,
    /// Bytes in flight at the end of the latest ACK batch.
    in_flight: u64,
    /// A drain after a slow-start exit in progress ([`Drain`]).
    drain: Option<Drain>,
    /// The jump towards the delivery-rate BDP during the initial slow start, if enabled.
    jump: Option<BdpJump>,
    /// The peak delivery rate the jump is sized from.
    peak_rate: PeakRate,
    /// Pacing bursts during the initial slow start, if enabled.
    burst: Option<SlowStartBurst>,
    /// The long-RTT window floor of the initial slow start, if enabled.
    floor: Option<RttWindowFloor>,
    /// RTT estimates of the latest acknowledgement (its sample goes into the samples).
    rtt: RttInfo,
    /// The filter that lets isolated losses pass without a reduction, if enabled.
    loss_filter: Option<LossFilter>,
    /// Undoing reductions whose recovery period lost few packets, if enabled.
    rollback: Option<RollbackConfig>,
    /// Packets declared lost so far (lost bytes over the MSS, rounded up per report).
    lost_packets: u64,
    /// The state before the current recovery period's reduction, while it may be undone.
    checkpoint: Option<Checkpoint>,
}

/// What a reduction changed, saved so that [`crate::rollback`] can undo it.
#[derive(Debug, Clone)]
struct Checkpoint {
    /// Window before the reduction, bytes (with its fraction).
    cwnd: f64,
    /// Slow-start threshold before the reduction, bytes.
    ssthresh: u64,
    /// Congestion avoidance before the reduction (CUBIC's `W_max`, `K`, `t_epoch`, ...).
    avoidance: Box<dyn Avoidance>,
    /// [`Controller::lost_packets`] before the losses that caused the reduction.
    lost_packets: u64,
}

/// A proportional drain after a slow-start exit that asked for one ([`SsDecision::Exit`]
/// with `drain`): the window steps down from the bytes in flight at the exit to the
/// target, and for every byte acknowledged meanwhile the sender sends `target / from`
/// bytes, as RFC 6937's Proportional Rate Reduction does in recovery. Dropping the
/// window to the target at once (as draft-chung-ccwg-search-09 Sec. 3.2 reads) silences
/// the sender until the bytes in flight, losses not yet detected included, fall below
/// the target; the link then idles, and quinn paces the restart at `1.25 x cwnd /
/// smoothed RTT` with an RTT still inflated by the queue being drained (measured on
/// geo-viasat: 16-40 Mbit/s of 150 for 0.7 s). Sending through the drain keeps the link
/// busy and the RTT samples fresh; the queue still empties, at `1 - target / from` of
/// the link rate.
#[derive(Debug, Clone, Copy)]
struct Drain {
    /// The window the drain ends at, bytes (the slow start's estimate of the BDP).
    target: u64,
    /// Bytes in flight when it began.
    from: u64,
    /// Bytes acknowledged since it began.
    acked: u64,
}

impl Drain {
    /// The window after `acked` bytes were acknowledged since the exit.
    fn window(&self) -> u64 {
        let ratio = self.target as f64 / self.from as f64;
        let window = self.from as f64 - self.acked as f64 * (1.0 - ratio);
        (window.max(self.target as f64)) as u64
    }
}

impl Controller {
    /// A controller starting at `initial_window` bytes.
    pub fn new(
        initial_window: u64,
        mss: u64,
        slow_start: Box<dyn SlowStart>,
        avoidance: Box<dyn Avoidance>,
        events: Emitter,
    ) -> Self {
        let mss = mss.max(1);
        let cwnd = initial_window.clamp(2 * mss, MAX_WINDOW);
        Self {
            cwnd,
            cwnd_carry: 0.0,
            ssthresh: u64::MAX,
            mss,
            max_window: MAX_WINDOW,
            recovery_start: None,
            initial_slow_start_done: false,
            slow_start,
            avoidance,
            last_sent_pn: None,
            round_end_pn: None,
            events,
            cr: CarefulResume::new(CarefulResumeConfig::default(), None, cwnd),
            growth: StartupGrowth::Double,
            initial_window: cwnd,
            in_flight: 0,
            drain: None,
            jump: None,
            peak_rate: PeakRate::default(),
            burst: None,
            floor: None,
            rtt: RttInfo::fixed(Duration::ZERO),
            loss_filter: None,
            rollback: None,
            lost_packets: 0,
            checkpoint: None,
        }
    }

    /// Enables undoing reductions whose recovery period lost few packets
    /// ([`crate::rollback`]).
    pub fn set_rollback(&mut self, config: Option<RollbackConfig>) {
        self.rollback = config;
        self.checkpoint = None;
    }

    /// Enables the filter that reduces the window only for repeated losses
    /// ([`crate::loss_filter`]).
    pub fn set_loss_filter(&mut self, config: Option<LossFilterConfig>) {
        self.loss_filter = config.map(LossFilter::new);
    }

    /// Enables the jump towards the delivery-rate BDP during the initial slow start
    /// ([`crate::jump`]).
    pub fn set_jump(&mut self, jump: Option<BdpJump>) {
        self.jump = jump;
    }

    /// Enables pacing bursts of a quarter window during the initial slow start
    /// ([`crate::burst`]).
    pub fn set_burst(&mut self, burst: Option<SlowStartBurst>) {
        self.burst = burst;
    }

    /// Enables picoquic's long-RTT window floor during the initial slow start
    /// ([`RttWindowFloor`]).
    pub fn set_floor(&mut self, floor: Option<RttWindowFloor>) {
        self.floor = floor;
    }

    /// Sets how fast the initial slow start grows ([`crate::growth`]).
    pub fn set_growth(&mut self, growth: StartupGrowth) {
        self.growth = growth;
    }

    /// Enables the modifiers of `modifiers` ([`crate::modifiers`]), and Careful Resume with
    /// the parameters to resume from (none: only observe). Call before the first packet is
    /// sent.
    pub fn set_modifiers(&mut self, modifiers: &Modifiers, resume: Option<ResumeParams>) {
        self.set_growth(modifiers.growth);
        self.set_jump(modifiers.jump);
        self.set_burst(modifiers.burst);
        self.set_floor(modifiers.floor);
        self.set_loss_filter(modifiers.loss_filter);
        self.set_rollback(modifiers.rollback);
        self.set_careful_resume(modifiers.careful_resume.clone(), resume);
    }

    /// Configures Careful Resume and the parameters to resume from (none: only observe).
    /// Call before the first packet is sent.
    pub fn set_careful_resume(
        &mut self,
        config: CarefulResumeConfig,
        resume: Option<ResumeParams>,
    ) {
        self.cr = CarefulResume::new(config, resume, self.cwnd);
    }

    /// Caps the window (bytes).
    pub fn set_max_window(&mut self, max_window: u64) {
        self.max_window = max_window.clamp(2 * self.mss, MAX_WINDOW);
        self.cwnd = self.cwnd.min(self.max_window);
    }

    /// Bytes that may be in flight: the congestion window, except while Careful Resume
    /// paces its jump (RFC 9959 Sec. 3.3), when it is released over the RTT.
    pub fn window(&self) -> u64 {
        self.cr.window(self.cwnd).max(self.minimum_window())
    }

    /// The pacer's burst, bytes, if the controller asks for one: during the initial slow
    /// start with `+burst` ([`crate::burst`]), unless Careful Resume or a drain controls
    /// the window.
    pub fn pacing_burst(&self) -> Option<u64> {
        let burst = self.burst?;
        if self.initial_slow_start_done
            || self.drain.is_some()
            || self.cr.phase() != CarefulResumePhase::Normal
        {
            return None;
        }
        burst.burst(self.window(), self.rtt.smoothed)
    }

    /// The congestion window (CWND) in bytes.
    pub fn congestion_window(&self) -> u64 {
        self.cwnd
    }

    /// Careful Resume state: phase, PipeSize, jump.
    pub fn careful_resume(&self) -> &CarefulResume {
        &self.cr
    }

    /// The pacing Careful Resume requires now (RFC 9959 Sec. 3.3, 4.3.2), if any.
    pub fn pacing(&self) -> Option<PacingRequirement> {
        self.cr.pacing()
    }

    /// The capacity to save for a later connection (RFC 9959 Sec. 3.1), observed only in
    /// Careful Resume's Normal phase.
    pub fn observe(&self) -> Result<Observation, NotObserved> {
        self.cr.observe()
    }

    /// The sender learnt that the path changed (RFC 9959 Sec. 3.2, 3.3): Careful Resume
    /// stops, retreating if it already jumped.
    pub fn on_path_change(&mut self, now: Duration) {
        if let Some(t) = self.cr.on_path_change(self.cr_window()) {
            self.apply_careful_resume(now, t);
        }
    }

    fn cr_window(&self) -> Window {
        Window {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            mss: self.mss,
            max_window: self.max_window,
        }
    }

    /// Applies a Careful Resume phase change to the window ([`Effect::apply`] says how),
    /// then reports it.
    fn apply_careful_resume(&mut self, now: Duration, t: Transition) {
        t.effect.apply(now, self);
        self.cr
            .report(&self.events, now, &t, self.cwnd, self.ssthresh);
    }

    /// Slow-start threshold in bytes (`u64::MAX` while unset).
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Whether the controller is in slow start.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Whether the initial slow start has ended.
    pub fn initial_slow_start_done(&self) -> bool {
        self.initial_slow_start_done
    }

    /// RFC 9002 `kMinimumWindow`: 2 x max datagram size.
    pub fn minimum_window(&self) -> u64 {
        2 * self.mss
    }

    /// The slow start's per-connection state size in bytes.
    pub fn slow_start_state_size(&self) -> usize {
        self.slow_start.state_size()
    }

    /// The slow start in use.
    pub fn slow_start(&self) -> &dyn SlowStart {
        self.slow_start.as_ref()
    }

    /// The avoidance in use.
    pub fn avoidance(&self) -> &dyn Avoidance {
        self.avoidance.as_ref()
    }

    fn set_window(&mut self, cwnd: f64) {
        let cwnd = cwnd.clamp(self.minimum_window() as f64, self.max_window as f64);
        self.cwnd = cwnd.floor() as u64;
        self.cwnd_carry = cwnd - self.cwnd as f64;
    }

    /// `bytes` were sent at `now` in the packet numbered `pn`.
    pub fn on_sent(&mut self, now: Duration, bytes: u64, pn: u64) {
        self.last_sent_pn = Some(pn);
        if self.round_end_pn.is_none() {
            self.round_end_pn = Some(pn);
        }
        if !self.initial_slow_start_done {
            self.slow_start.on_sent(now, bytes);
        }
        if let Some(t) = self
            .cr
            .on_sent(now, bytes, pn, self.cr_window(), &self.events)
        {
            self.apply_careful_resume(now, t);
        }
    }

    /// A packet of `bytes` sent at `sent` was acknowledged at `now`.
    pub fn on_ack(
        &mut self,
        now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        rtt: RttInfo,
    ) {
        self.rtt = rtt;
        if let Some(filter) = self.loss_filter.as_mut() {
            filter.on_acked();
        }
        // The jump belongs to the initial slow start, which never comes back.
        if self.jump.is_some() && !self.initial_slow_start_done {
            self.peak_rate.on_ack(sent, bytes);
        }
        let cr = self.cr.on_ack(now, sent, bytes, app_limited, &rtt);
        if let AckEffect::Transition(t) = cr {
            self.apply_careful_resume(now, t);
            return;
        }
        // The drain does not grow the window: it steps it down (see [`Drain`]).
        if let Some(drain) = self.drain.as_mut() {
            drain.acked = drain.acked.saturating_add(bytes);
            let window = drain.window();
            if window <= drain.target {
                // Packets sent during the drain met the queue it drained: their losses
                // belong to the same recovery period.
                self.drain = None;
                self.recovery_start = Some(now);
            }
            self.set_window(window as f64);
            return;
        }
        if self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        // The first acknowledgement of a packet sent after the recovery period began ends it.
        if let Some(checkpoint) = self.checkpoint.take() {
            self.end_recovery(now, checkpoint);
        }
        let hold = !matches!(cr, AckEffect::Normal);
        if !self.initial_slow_start_done {
            let floor = self
                .growth
                .window_floor(self.initial_window, rtt.smoothed)
                .max(
                    self.floor
                        .and_then(|f| f.window_floor(self.initial_window, rtt.min)),
                );
            if let Some(floor) = floor
                && floor > self.cwnd
                && !hold
            {
                self.set_window(floor as f64);
            }
            // The jump's ceiling, from the train samples when trains are measured (see
            // [`BdpJump::cap`]). A window held there limits the sending as the application
            // would: the slow start's heuristic must not read it as the path's plateau.
            let ceiling = self.jump_ceiling(rtt.min);
            let capped = ceiling.is_some_and(|c| self.cwnd >= c);
            let sample = AckSample {
                now,
                bytes,
                rtt: rtt.latest,
                min_rtt: rtt.min,
                smoothed_rtt: rtt.smoothed,
                app_limited: app_limited || capped,
                cwnd: self.cwnd,
                mss: self.mss,
                growth_per_rtt: self.growth.per_rtt(rtt.smoothed),
            };
            let decision = self.slow_start.on_ack(&sample, &self.events);
            if hold {
                // RFC 9959 Sec. 3.3: the CWND is not increased in the Unvalidated Phase.
                return;
            }
            match decision {
                SsDecision::Grow { increase } => {
                    if !app_limited {
                        let increase = increase as f64 * self.growth.multiplier(rtt.smoothed);
                        let before = self.cwnd;
                        let mut window = self.cwnd as f64 + increase;
                        if let Some(ceiling) = ceiling {
                            window = window.min(ceiling.max(before) as f64);
                        }
                        self.set_window(window);
                        if self.cwnd >= self.ssthresh {
                            // RFC 9002 Sec. 7.3.1: slow start only while cwnd < ssthresh. A
                            // threshold set before any exit (Careful Resume's `ss-cap`) ends
                            // it as a reached threshold, not as a heuristic's exit.
                            self.set_window(before.max(self.ssthresh) as f64);
                            self.initial_slow_start_done = true;
                            self.avoidance.on_slow_start_exit(now, self.cwnd, self.mss);
                        }
                    }
                }
                SsDecision::Exit {
                    cwnd,
                    ssthresh,
                    reason,
                    drain,
                } => {
                    self.exit_slow_start(now, cwnd, ssthresh, reason);
                    if drain {
                        self.start_drain(now);
                    }
                }
            }
            return;
        }
        if app_limited || hold {
            return;
        }
        if self.in_slow_start() {
            // Slow start after a loss: classic, bounded by ssthresh (RFC 9002 Sec. 7.3.1).
            self.set_window(self.cwnd.saturating_add(bytes).min(self.ssthresh) as f64);
            return;
        }
        let ack = CaAck {
            now,
            bytes,
            cwnd: self.cwnd as f64 + self.cwnd_carry,
            mss: self.mss,
            smoothed_rtt: rtt.smoothed,
            min_rtt: rtt.min,
        };
        let next = self.avoidance.on_ack(&ack);
        self.set_window(next);
    }

    /// The recovery period of `checkpoint` ended: undo its reduction if it lost few packets
    /// ([`crate::rollback`]).
    fn end_recovery(&mut self, now: Duration, checkpoint: Checkpoint) {
        let Some(config) = self.rollback else {
            return;
        };
        let lost_packets = self.lost_packets - checkpoint.lost_packets;
        if (self.cwnd as f64) >= checkpoint.cwnd
            || !config.undoes(lost_packets, self.cwnd / self.mss)
        {
            return;
        }
        self.set_window(checkpoint.cwnd);
        self.ssthresh = checkpoint.ssthresh;
        self.avoidance = checkpoint.avoidance;
        let cwnd_after = self.cwnd;
        self.events.emit(|| CcEvent::CongestionUndone {
            at: now,
            lost_packets,
            cwnd_after,
        });
    }

    fn exit_slow_start(&mut self, now: Duration, cwnd: u64, ssthresh: u64, reason: ExitReason) {
        let before = self.cwnd;
        self.set_window(cwnd as f64);
        self.ssthresh = ssthresh.max(self.minimum_window()).min(self.cwnd);
        self.initial_slow_start_done = true;
        self.avoidance.on_slow_start_exit(now, self.cwnd, self.mss);
        self.events.emit(|| CcEvent::SlowStartExit {
            at: now,
            reason,
            cwnd_before: before,
            cwnd_after: self.cwnd,
            ssthresh: self.ssthresh,
            shadow: false,
        });
        if let Some(t) = self.cr.on_slow_start_exit() {
            self.apply_careful_resume(now, t);
        }
    }

    /// Starts a [`Drain`] from the bytes in flight down to the window just set. The drain
    /// is the answer to the overshoot, so it is also a recovery period: losses of packets
    /// sent before it ends do not cut the window again (one reduction per congestion
    /// event, RFC 9002 Sec. 7.3.2; packets sent during the drain meet the queue it drains).
    fn start_drain(&mut self, now: Duration) {
        self.recovery_start = Some(now);
        let target = self.cwnd;
        if self.in_flight > target {
            self.drain = Some(Drain {
                target,
                from: self.in_flight,
                acked: 0,
            });
            self.set_window(self.in_flight as f64);
        }
    }

    /// The largest window the initial slow start may reach under `+jump:cap` at minimum RTT
    /// `min`: from the train samples' peak when trains are measured (see [`BdpJump::cap`]).
    fn jump_ceiling(&self, min: Duration) -> Option<u64> {
        let j = self.jump?;
        let peak = if j.train.is_some() {
            self.peak_rate.train_peak()
        } else {
            self.peak_rate.peak()
        };
        j.ceiling(peak, min)
    }

    /// A batch of acknowledgements ended. `largest_acked` closes a round when it reaches
    /// the round's end packet.
    pub fn on_end_acks(&mut self, now: Duration, in_flight: u64, largest_acked: Option<u64>) {
        self.in_flight = in_flight;
        if let Some(jump) = self.jump.filter(|_| !self.initial_slow_start_done) {
            let train = jump.train_at(self.rtt.min);
            self.peak_rate.on_end_acks(now, jump.min_interval, train);
            if self.drain.is_none() && self.cr.phase() == CarefulResumePhase::Normal {
                let target = jump.target_with_train(
                    self.peak_rate.peak(),
                    self.peak_rate.train_peak(),
                    self.rtt.min,
                    self.rtt.smoothed,
                );
                // Never past the ceiling: on real sockets the peak can be several times
                // the train's estimate.
                let target = self
                    .jump_ceiling(self.rtt.min)
                    .map_or(target, |c| target.min(c));
                if target > self.cwnd {
                    self.set_window(target.min(self.ssthresh) as f64);
                }
            }
        }
        if let (Some(largest), Some(end)) = (largest_acked, self.round_end_pn) {
            if largest >= end {
                if !self.initial_slow_start_done {
                    self.slow_start.on_round_end(now);
                }
                self.cr.on_round_end(now);
                self.round_end_pn = self.last_sent_pn.map(|pn| pn.max(largest + 1));
            }
        }
        if let Some(t) = self.cr.on_end_acks(now, in_flight, largest_acked) {
            self.apply_careful_resume(now, t);
        }
        let (cwnd, rtt) = (self.cwnd, self.rtt.latest);
        self.events.emit(|| CcEvent::Sample {
            at: now,
            cwnd,
            in_flight,
            rtt,
        });
    }

    /// Packets were lost (or ECN-marked) up to one sent at `sent`.
    pub fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent: bool,
        lost_bytes: u64,
    ) {
        let before_losses = self.lost_packets;
        self.lost_packets += lost_bytes.div_ceil(self.mss);
        if lost_bytes == 0 {
            // An ECN-CE mark is congestion: the current reduction stands ([`crate::rollback`]).
            self.checkpoint = None;
        }
        // The loss filter hears every loss once ([`crate::loss_filter`]); with its `cr`
        // option a loss it lets pass does not reach Careful Resume either.
        let mut tolerated = false;
        let mut covers_cr = false;
        if let Some(filter) = self.loss_filter.as_mut() {
            // quinn reports an ECN-CE mark as a congestion event with no bytes lost: a
            // mark is congestion by definition (RFC 9002 Sec. 7.1), as picoquic treats it.
            if lost_bytes > 0 {
                tolerated = !filter.on_lost(lost_bytes.div_ceil(self.mss)) && !persistent;
            }
            covers_cr = filter.config().careful_resume;
        }
        if tolerated && covers_cr {
            return;
        }
        let cr = self
            .cr
            .on_congestion(persistent, lost_bytes, self.cr_window());
        if let Some(t) = cr.filter(|t| matches!(t.effect, Effect::Retreat(_))) {
            // RFC 9959 Sec. 3.5: Safe Retreat replaces the normal reduction.
            self.apply_careful_resume(now, t);
            let cwnd = self.cwnd;
            self.events.emit(|| CcEvent::Congestion {
                at: now,
                lost_bytes,
                cwnd_after: cwnd,
                persistent,
            });
            return;
        }
        if tolerated {
            // An isolated loss: no reduction ([`crate::loss_filter`]).
            if let Some(t) = cr {
                self.apply_careful_resume(now, t);
            }
            return;
        }
        // A drain is a recovery period until it ends ([`Controller::start_drain`]).
        let in_recovery =
            self.drain.is_some() || self.recovery_start.is_some_and(|start| sent <= start);
        if persistent {
            self.drain = None;
        }
        if !in_recovery {
            // A reduction for lost packets in congestion avoidance may be undone when its
            // recovery period ends; a mark, persistent congestion or the end of slow start
            // may not ([`crate::rollback`]).
            self.checkpoint = (self.rollback.is_some()
                && lost_bytes > 0
                && !persistent
                && self.initial_slow_start_done
                && !self.in_slow_start())
            .then(|| Checkpoint {
                cwnd: self.cwnd as f64 + self.cwnd_carry,
                ssthresh: self.ssthresh,
                avoidance: self.avoidance.clone(),
                lost_packets: before_losses,
            });
            self.recovery_start = Some(now);
            let before = self.cwnd;
            let ssthresh = self.avoidance.on_congestion(now, self.cwnd, self.mss);
            self.ssthresh = ssthresh.max(self.minimum_window());
            self.set_window(self.ssthresh as f64);
            self.end_initial_slow_start_by_loss(now, before);
        }
        if persistent {
            // RFC 9002 Sec. 7.6.2: collapse to the minimum window; start over.
            self.checkpoint = None;
            self.recovery_start = Some(now);
            self.set_window(self.minimum_window() as f64);
            self.slow_start.reset();
            self.avoidance.reset();
        }
        if !in_recovery || persistent {
            let cwnd = self.cwnd;
            self.events.emit(|| CcEvent::Congestion {
                at: now,
                lost_bytes,
                cwnd_after: cwnd,
                persistent,
            });
        }
        if let Some(t) = cr {
            self.apply_careful_resume(now, t);
        }
    }

    /// The path MTU changed.
    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.mss = u64::from(mtu).max(1);
        self.cwnd = self.cwnd.max(self.minimum_window());
    }
}

/// The primitives Careful Resume's effects use ([`Effect::apply`]).
impl ResumedController for Controller {
    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn set_cwnd(&mut self, cwnd: u64) {
        self.set_window(cwnd as f64);
    }

    fn cap_ssthresh(&mut self, cap: u64) {
        self.ssthresh = self.ssthresh.min(cap).max(self.minimum_window());
    }

    fn start_recovery(&mut self, now: Duration) {
        self.recovery_start = Some(now);
    }

    fn end_initial_slow_start_by_loss(&mut self, now: Duration, cwnd_before: u64) {
        if !self.initial_slow_start_done {
            self.initial_slow_start_done = true;
            self.events.emit(|| CcEvent::SlowStartExit {
                at: now,
                reason: ExitReason::Loss,
                cwnd_before,
                cwnd_after: self.cwnd,
                ssthresh: self.ssthresh,
                shadow: false,
            });
        }
    }

    fn avoidance_learns_congestion(&mut self, now: Duration, cwnd: u64) {
        let _ = self.avoidance.on_congestion(now, cwnd, self.mss);
    }
}
