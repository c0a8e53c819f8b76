//! The composed controller: a window, RFC 9002 recovery, the start-up for the initial slow
//! start ([`crate::startup`]: a [`SlowStart`] and the start-up modifiers), an
//! [`Avoidance`] afterwards, and the other optional modifiers ([`crate::modifiers`]).
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
//! What each of its phase changes does to the window is [`crate::careful_resume`]'s
//! protocol (`Effect::apply`).
//!
//! # Order of operations
//!
//! Each hook runs these steps in this order; a step that says "stops" ends the hook. The
//! result depends on the order, which is why it is written down here: a step may only
//! change what its row says.
//!
//! The initial slow start is the start-up's ([`crate::startup`]): at the rows that name
//! it, the start-up decides (it owns the slow start, the growth, the floor, the jump and its
//! ceiling, the bursts and the drain) and returns effects ([`crate::startup`]'s `Effect`)
//! that the controller applies at once (`apply_startup`, `controller/startup.rs`). Where the
//! start-up runs a sequence of its own (A7-A11, E2), its table lists the steps.
//!
//! **`on_sent(now, bytes, pn)`** (`ack.rs`)
//!
//! | step | who | may change | why here |
//! |---|---|---|---|
//! | S1 | rounds | the last packet number; the first round's end | every send; read by E3 |
//! | S2 | start-up: the slow start (initial slow start only) | its own state (SEARCH's sent bytes) | it learns of every packet it will judge |
//! | S3 | Careful Resume | its phase; the window: the jump (Reconnaissance to Unvalidated), or the end of the Unvalidated Phase when the jump window is used up or an RTT passed | only a send tells that the window is full (the deferred jump) or used up |
//!
//! **`on_ack(now, sent, bytes, app_limited, rtt)`** (`ack.rs`), once per acknowledged packet
//!
//! | step | who | may change | why here |
//! |---|---|---|---|
//! | A1 | loss filter (`+loss-filter`), recent delivery | its count of packets since the last loss; the bytes acknowledged (the retreat's and the ceiling's [`crate::delivery`]) | every acknowledgement counts, in a recovery period or not |
//! | A2 | start-up: the jump's sampler (`+jump`, initial slow start only) | the delivery-rate sample of the batch; with `bound`, the burst the packet left in (by its send time); with `validate`, while the jump is judged, the flight it belongs to | every acknowledgement counts; E2 takes the samples |
//! | A3 | Careful Resume | its phase, PipeSize, observation; an RTT sample at most `saved_rtt x min-rtt` in the Unvalidated Phase is a path change: Safe Retreat, and the hook **stops** | the phase decides what the steps below may do; an acknowledgement that retreats is not growth |
//! | A4 | start-up: the drain (SEARCH's `drain` exit) decides, the controller applies | the window, stepped down; its end starts a recovery period; **stops** | the drain is the answer to the overshoot, not growth |
//! | A5 | recovery gate | nothing: an acknowledgement of a packet sent before the recovery period began **stops** | RFC 9002 Sec. 7.3.2 |
//! | A6 | rollback (`+rollback`) | window, `ssthresh` and the avoidance's state restored to before the reduction | the first acknowledgement past the gate ends the recovery period; growth then goes on from the restored window |
//! | A7-A11 | start-up (initial slow start): floor, ceiling, slow start, Careful Resume's hold, growth, in the order of its table ([`crate::startup`]); the controller applies what it returns | the window: raised to the long-RTT floor, grown by the slow start's increase times the growth up to the jump's ceiling, or set by the slow start's exit (then `ssthresh`, the avoidance's start, Careful Resume told, a drain if asked); reaching `ssthresh` ends the initial slow start | it sees every acknowledgement of the initial slow start, held or not, once recovery and rollback have had theirs |
//! | A12 | after the initial slow start (not application-limited, not held) | the window: classic slow start up to `ssthresh`, then the avoidance; the first acknowledgement after application-limited ones tells the avoidance how long it was limited | RFC 9002 Sec. 7.3.1, 7.3.3; RFC 9438 Sec. 4.2: CUBIC's `t` does not count that time |
//!
//! **`on_end_acks(now, in_flight, largest_acked)`** (`ack.rs`), once per ACK batch
//!
//! | step | who | may change | why here |
//! |---|---|---|---|
//! | E1 | flight, recent delivery, RTT envelope | the bytes in flight; a mark of the bytes acknowledged so far, a sixteenth of an RTT after the last ([`crate::delivery`]); the batch's RTT sample in the envelope of the latest and, while at most a few initial windows are in flight, in the path's unloaded RTT ([`crate::path_rtt`]) | quinn's own count, after the batch |
//! | E2 | start-up: the jump (`+jump`, initial slow start; no raise during a drain, nor unless Careful Resume is Normal), in the order of its table ([`crate::startup`]); the controller applies what it returns | the jump's estimates; the window, raised to the jump's target (bounded by the ceiling and `ssthresh`), and with each raise the slow start's history reset; with `validate`, its verdict: the window to the ceiling, or the end of the initial slow start (`jump-refused`) at what the path delivered | a rate needs the whole batch; Careful Resume's own jump and a drain own the window |
//! | E3 | rounds | the start-up's slow start's round end and the jump ceiling's release or, with `+jump:full`, its step down to a full path (initial slow start; [`crate::path_rtt`] has read the batch's RTT in E1; the controller applies the window it returns), Careful Resume's observation round, the loss filter's round (`rule=round`, `rule=queue`), the next round's end | RFC 9406 `windowEnd` |
//! | E4 | Careful Resume | its phase: Unvalidated to Validating or Normal (first unvalidated packet acknowledged, an RTT passed), Validating to Normal (`ss-cap` caps `ssthresh`), Safe Retreat to Normal (`ssthresh` capped, the avoidance learns PipeSize) | these wait for a batch's largest acknowledged packet |
//! | E5 | events | nothing (a `Sample` event) | the state after the batch |
//!
//! **`on_congestion_event(now, sent, persistent, lost_bytes)`** (`congestion.rs`)
//!
//! | step | who | may change | why here |
//! |---|---|---|---|
//! | C1 | loss count (`+rollback`) | the count of lost packets, tolerated or not; an ECN-CE mark cancels a pending undo | every report counts, before anyone filters it |
//! | C2 | loss filter (`+loss-filter`) | its smoothed loss rate and the round's loss count (a mark is not a loss to it); whether the loss is tolerated by its rule (never a mark, never persistent congestion) | it hears every loss once |
//! | C3 | `+loss-filter:cr` (every phase), `cr=validating` (the Validating Phase) | nothing: a tolerated loss **stops** here | Careful Resume does not hear it either |
//! | C4 | Careful Resume | its phase and flight: Reconnaissance to Normal; Unvalidated or Validating to Safe Retreat; persistent congestion to Normal, `ssthresh` capped | RFC 9959 Sec. 3.2-3.6 |
//! | C5 | Safe Retreat | the window (PipeSize x `retreat`, at most the window), a recovery period, the end of the initial slow start (not after a loss the filter lets pass: then the start-up goes on to `ssthresh` and the avoidance keeps the saved window as `W_max`); a `Congestion` event; **stops** | RFC 9959 Sec. 3.5: it replaces the reduction |
//! | C6 | loss filter's verdict | a tolerated loss: no reduction, no recovery period, no slow-start exit (C4's phase change still applies) | picoquic's rule |
//! | C7 | recovery gate | nothing: a loss of a packet sent before the recovery period began (or during the start-up's drain) reduces nothing more | RFC 9002 Sec. 7.3.2 |
//! | C8 | reduction | a rollback checkpoint (congestion avoidance only), a recovery period, `ssthresh` from the avoidance (from what the path delivered over the latest RTT when smaller than the window, on the first reduction with `+retreat`), the window to it, the end of the initial slow start (a `loss` exit) | RFC 9002 Sec. 7.3.2; RFC 9959 Sec. 3.5's retreat for any start-up |
//! | C9 | persistent congestion | the window to the minimum; the start-up's drain ended and its slow start reset, the avoidance reset; no undo | RFC 9002 Sec. 7.6.2 |
//! | C10 | events, then Careful Resume's phase change of C4 | a `Congestion` event if C8 or C9 ran | the window after the response |
//!
//! **`on_mtu_update(mtu)`**: the MSS; the window at least the new minimum (2 x MSS).
//! **`on_path_change(now)`**: Careful Resume only (Reconnaissance to Normal, Unvalidated to
//! Safe Retreat). Between the hooks quinn reads [`Controller::window`] (Careful Resume's
//! paced release of the jump), [`Controller::pacing_burst`] (the start-up's: `+burst`, the
//! initial slow start only, not during a drain, and only while Careful Resume is Normal;
//! `+burst:time` reads the rate E2 measured) and [`Controller::pacing_rate_bytes_per_sec`]
//! (`+unpaced`: a rate of 0, no pacing, the whole connection; otherwise the start-up's rate
//! while `+jump:validate` judges its flight; no hook reads or changes either, so they have
//! no row above).
//!
//! # Interactions the order decides
//!
//! Each is pinned by a test (in `tests/order_of_operations.rs` unless named otherwise):
//!
//! * A tolerated loss never ends the initial slow start (C6 before C8): the slow start
//!   goes on, and only a loss the filter answers ends it
//!   (`a_tolerated_loss_never_ends_the_initial_slow_start`).
//! * Tolerated losses still count against rollback's undo (C1 before C2): the losses of a
//!   recovery period, tolerated or not, decide whether its reduction is undone
//!   (`tolerated_losses_count_against_the_undo`).
//! * The floor can exceed the jump's ceiling (A7 is bounded by neither the ceiling nor
//!   `ssthresh`; the jump of E2 by both): on a slow path with a long RTT the window stays
//!   at the floor above twice the measured BDP (`the_floor_can_exceed_the_jump_ceiling`).
//! * The floor raises the window on an application-limited acknowledgement, where growth
//!   does not (A7 asks nothing of the application, A11 does)
//!   (`the_floor_applies_to_application_limited_acknowledgements`).
//! * After persistent congestion the initial slow start does not come back (C9): the
//!   slow start is reset but no longer asked, the window grows classically, without the
//!   start-up growth, to `ssthresh` (`after_persistent_congestion_the_window_grows_classically`).
//! * Without `loss-filter:cr` Safe Retreat answers a loss the filter lets pass (C4-C5
//!   before C6) (`careful_resume.rs`:
//!   `the_loss_filters_cr_option_retreats_for_bursts_and_marks_not_isolated_losses`).
//! * A jump being judged holds the window as Careful Resume's Unvalidated Phase does, but
//!   the slow start may still exit (A7, A11 skip; A9 runs)
//!   (`startup_safety.rs`: `the_window_does_not_grow_while_the_jump_is_judged`).
//! * A jump's raise resets the slow start (E2 before E3): SEARCH's look-back compares the
//!   raised flight with what was sent at the old rate, and its later ACKs would read as a
//!   plateau; the slow start starts its bins again, as after an idle period, while the
//!   ceiling bounds the window (`startup/mod.rs`: `the_jumps_step_resets_the_slow_start`).
//! * A window that reaches `ssthresh` in the initial slow start (only Careful Resume's
//!   `ss-cap` sets one before an exit) ends it without a `SlowStartExit` event (A11)
//!   (`careful_resume.rs`: `slow_start_cap_ends_slow_start_at_the_saved_capacity`).
//! * An ECN-CE mark cancels a pending undo and is never tolerated (C1, C2) (`rollback.rs`:
//!   `the_slow_start_exit_ecn_marks_and_persistent_congestion_stand`; `careful_resume.rs`:
//!   the loss filter's `cr` test above).

mod ack;
mod congestion;
mod startup;

use std::time::Duration;

use crate::avoidance::Avoidance;
use crate::burst::SlowStartBurst;
use crate::careful_resume::{
    CarefulResume, CarefulResumeConfig, NotObserved, Observation, PacingRequirement, ResumeParams,
    ResumedController, Transition, Window,
};
use crate::delivery::RecentDelivery;
use crate::event::Emitter;
use crate::growth::{RttWindowFloor, StartupGrowth};
use crate::jump::BdpJump;
use crate::loss_filter::{LossFilter, LossFilterConfig};
use crate::modifiers::Modifiers;
use crate::path_rtt::PathRtt;
use crate::retreat::Retreat;
use crate::rollback::RollbackConfig;
use crate::slow_start::SlowStart;
use crate::startup::Startup;
use crate::unpaced::Unpaced;

use congestion::Checkpoint;

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

/// A window of `cwnd` bytes as the controller holds it: at least `min`, at most `max`
/// (the fraction is kept as the carry).
pub(crate) fn bounded_window(cwnd: f64, min: u64, max: u64) -> f64 {
    cwnd.clamp(min as f64, max as f64)
}

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
    /// The initial slow start: its slow start, growth, floor, jump, bursts and drain.
    startup: Startup,
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
    /// Bytes in flight at the end of the latest ACK batch.
    in_flight: u64,
    /// quinn-proto's pacing off, if enabled.
    unpaced: Option<Unpaced>,
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
    /// The first reduction taken from what the path delivered, if enabled.
    retreat: Option<Retreat>,
    /// What the path delivered lately (the retreat's base, the start-up ceiling's floor).
    recent_delivery: RecentDelivery,
    /// The envelope of the latest RTT samples: whether the path shows a queue (the jump
    /// ceiling's release).
    path_rtt: PathRtt,
    /// Whether the window was reduced for congestion before.
    reduced: bool,
    /// Whether Careful Resume's Safe Retreat was entered on a loss the loss filter let pass
    /// (RFC 9959's MUST retreats on any loss in the Unvalidated Phase).
    retreat_tolerated: bool,
    /// When the acknowledgements after the initial slow start began to be
    /// application-limited, while they are (RFC 9438 Sec. 4.2).
    app_limited_since: Option<Duration>,
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
            startup: Startup::new(slow_start, cwnd),
            avoidance,
            last_sent_pn: None,
            round_end_pn: None,
            events,
            cr: CarefulResume::new(CarefulResumeConfig::default(), None, cwnd),
            in_flight: 0,
            unpaced: None,
            rtt: RttInfo::fixed(Duration::ZERO),
            loss_filter: None,
            rollback: None,
            lost_packets: 0,
            checkpoint: None,
            retreat: None,
            recent_delivery: RecentDelivery::default(),
            path_rtt: PathRtt::new(cwnd),
            reduced: false,
            retreat_tolerated: false,
            app_limited_since: None,
        }
    }

    /// Turns quinn-proto's pacing off ([`crate::unpaced`]).
    pub fn set_unpaced(&mut self, unpaced: Option<Unpaced>) {
        self.unpaced = unpaced;
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
        self.startup.set_jump(jump);
    }

    /// Enables pacing bursts of a quarter window during the initial slow start
    /// ([`crate::burst`]).
    pub fn set_burst(&mut self, burst: Option<SlowStartBurst>) {
        self.startup.set_burst(burst);
    }

    /// Enables picoquic's long-RTT window floor during the initial slow start
    /// ([`RttWindowFloor`]).
    pub fn set_floor(&mut self, floor: Option<RttWindowFloor>) {
        self.startup.set_floor(floor);
    }

    /// Sets how fast the initial slow start grows ([`crate::growth`]).
    pub fn set_growth(&mut self, growth: StartupGrowth) {
        self.startup.set_growth(growth);
    }

    /// Enables the modifiers of `modifiers` ([`crate::modifiers`]), and Careful Resume with
    /// the parameters to resume from (none: only observe). Call before the first packet is
    /// sent.
    pub fn set_modifiers(&mut self, modifiers: &Modifiers, resume: Option<ResumeParams>) {
        self.set_growth(modifiers.growth);
        self.set_jump(modifiers.jump);
        self.set_burst(modifiers.burst);
        self.set_unpaced(modifiers.unpaced);
        self.set_floor(modifiers.floor);
        self.set_loss_filter(modifiers.loss_filter);
        self.set_rollback(modifiers.rollback);
        self.retreat = modifiers.retreat;
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
        self.startup
            .pacing_burst(self.window(), self.rtt.smoothed, self.cr.phase())
    }

    /// The pacing rate, bytes per second, the controller asks of quinn-proto's pacer: 0 (no
    /// pacing) with `+unpaced` ([`crate::unpaced`]); while `+jump:validate` judges its
    /// flight, no slower than the bottleneck rate the jump measured (quinn-proto's own
    /// `1.25 x window / smoothed RTT` when that is faster), so the flight crosses the path
    /// at the rate it is judged against; otherwise none (quinn-proto's own rate).
    pub fn pacing_rate_bytes_per_sec(&self) -> Option<u64> {
        if let Some(unpaced) = self.unpaced {
            let _ = unpaced;
            return Some(Unpaced::PACING_RATE_BYTES_PER_SEC);
        }
        self.startup.pacing_rate(self.window(), self.rtt.smoothed)
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

    /// Applies a Careful Resume phase change to the window (`Effect::apply` says how),
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
        self.startup.done()
    }

    /// RFC 9002 `kMinimumWindow`: 2 x max datagram size.
    pub fn minimum_window(&self) -> u64 {
        2 * self.mss
    }

    /// The slow start's per-connection state size in bytes.
    pub fn slow_start_state_size(&self) -> usize {
        self.startup.slow_start().state_size()
    }

    /// The slow start in use.
    pub fn slow_start(&self) -> &dyn SlowStart {
        self.startup.slow_start()
    }

    /// The initial slow start ([`crate::startup`]).
    pub fn startup(&self) -> &Startup {
        &self.startup
    }

    /// The avoidance in use.
    pub fn avoidance(&self) -> &dyn Avoidance {
        self.avoidance.as_ref()
    }

    fn set_window(&mut self, cwnd: f64) {
        let cwnd = bounded_window(cwnd, self.minimum_window(), self.max_window);
        self.cwnd = cwnd.floor() as u64;
        self.cwnd_carry = cwnd - self.cwnd as f64;
    }

    /// The path MTU changed.
    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.mss = u64::from(mtu).max(1);
        self.cwnd = self.cwnd.max(self.minimum_window());
    }
}

/// The primitives Careful Resume's effects use (`Effect::apply`).
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

    /// A Safe Retreat entered on a loss the loss filter let pass leaves the start-up on:
    /// after the retreat, the window grows towards `ssthresh` by the profile's own slow
    /// start (its jump bounded by `ssthresh`, `crate::startup`), as RFC 9959 Sec. 3.5 lets
    /// normal CC's slow start do, and reaching `ssthresh` keeps the avoidance's `W_max`.
    fn end_initial_slow_start_by_loss(&mut self, now: Duration, cwnd_before: u64) {
        if !self.retreat_tolerated {
            self.end_startup_by_loss(now, cwnd_before);
        }
    }

    /// A Safe Retreat entered on a loss the loss filter let pass ends with the avoidance's
    /// `W_max` at the saved window, not at `cwnd` (PipeSize): to this controller the loss
    /// was no congestion ([`crate::loss_filter`]), and CUBIC's `W_max` is where congestion
    /// was last seen (RFC 9438 Sec. 4.6). RFC 9959 Sec. 3.5's MUSTs (the window, `ssthresh`)
    /// are applied as they are.
    fn avoidance_learns_congestion(&mut self, now: Duration, cwnd: u64) {
        let learnt = match self.cr.restored() {
            Some(saved) if self.retreat_tolerated => cwnd.max(saved.saved_cwnd),
            _ => cwnd,
        };
        let _ = self.avoidance.on_congestion(now, learnt, self.mss);
    }
}
