//! The start-up: everything of the initial slow start in one place. [`Startup`] owns the
//! slow start's heuristic ([`SlowStart`]: SEARCH, HyStart++, ...), whether the initial slow
//! start is over, the start-up growth and long-RTT floors ([`crate::growth`]), the jump and
//! its ceiling ([`crate::jump`]), the pacing bursts ([`crate::burst`]) and the drain after
//! an exit that asks for one (SEARCH's `drain`). It reads what it needs of the controller
//! (`View`: the window, `ssthresh`, the RTT estimates, Careful Resume's phase and jump,
//! what the path delivered lately) and answers each hook with what the window should do
//! (`Effect`), which the controller applies, as Careful Resume's machine does
//! ([`crate::careful_resume`]). The window, recovery, the avoidance, Careful Resume, the
//! loss filter, rollback and the retreat stay the controller's.
//!
//! # Where it runs
//!
//! At these rows of the controller's order of operations ([`crate::controller`]), during the
//! initial slow start only (the drain outlives it: it begins at the exit):
//!
//! | hook | row | the start-up's method | what it decides |
//! |---|---|---|---|
//! | `on_sent` | S2 | `Startup::on_sent` | nothing: the slow start learns of the packet |
//! | `on_ack` | A2 | `Startup::sample_ack` | nothing: the jump's rate samples and judged flight |
//! | `on_ack` | A4 | `Startup::drain_on_ack` | the drain's step (`Effect::Drain`) |
//! | `on_ack` | A7-A11 | `Startup::on_ack` | the steps below, in order |
//! | `on_end_acks` | E2 | `Startup::on_end_acks` | the steps below, in order |
//! | `on_end_acks` | E3 | `Startup::on_round_end` | the slow start's round, and the jump's counts of rounds its ceiling held the window: on a path that showed no queue (from the third, the ceiling rises to `cap` x the window), and with `+jump:full` on one that showed a queue (from the third, the path is full: the ceiling's headroom falls to `full` and the window steps down to it, `Effect::Window`) |
//! | `on_congestion_event` | C7, C9 | [`Startup::draining`], `Startup::on_persistent_congestion` | a drain is a recovery period; persistent congestion ends it |
//! | between hooks | | `Startup::pacing_burst`, `Startup::pacing_rate` | `+burst`'s burst; the pacing rate while the jump is judged |
//!
//! **`Startup::on_ack`**, an acknowledgement past the recovery gate (A5) and rollback
//! (A6); each step may change only its own state and the window it returns:
//!
//! | step | who | may change | why here |
//! |---|---|---|---|
//! | A7 | long-RTT floor (`+floor`, `+growth:rtt`; unless Careful Resume holds or the jump is being judged) | the window, raised (`Effect::Window`); bounded by neither the jump's ceiling nor `ssthresh` | picoquic raises its minimum window on every RTT sample; the slow start then sees the raised window |
//! | A8 | jump ceiling (`+jump:cap`: `cap` x the bottleneck's rate x the path's RTT before the connection loaded it, [`crate::path_rtt`]; never below `cap` x what the path delivered over the latest RTT, nor the saved window of a Careful Resume jump that stands, nor what three window-limited rounds held there without a queue lifted it to: [`crate::path_rtt`]) | nothing; an acknowledgement at or above the ceiling, or while the jump is being judged, reaches the slow start as application-limited | a held window must not look like the path's plateau to SEARCH or HyStart++ |
//! | A9 | slow start | its own state; an exit (`Effect::Exit`) sets the window and `ssthresh`, starts the avoidance, tells Careful Resume (a delay-based exit ends Reconnaissance) and may start a drain | it sees every acknowledgement of the initial slow start, held or not |
//! | A10 | Careful Resume's hold (Unvalidated, Safe Retreat) | nothing: **stops**, the slow start's decision ignored | RFC 9959 Sec. 3.3, 3.5: the window does not grow |
//! | A11 | growth (`+growth`; not application-limited, not while the jump is being judged) | the window: the slow start's increase times the growth's multiplier, up to the jump's ceiling (`Effect::Window`); reaching `ssthresh` ends the initial slow start (`Effect::ThresholdReached`) | RFC 9002 Sec. 7.8: no growth while application-limited |
//!
//! **`Startup::on_end_acks`**, once per batch (E2), with `+jump`:
//!
//! | step | who | may change | why here |
//! |---|---|---|---|
//! | E2a | jump's estimates | its peak rate and queueing-delay bound (`bound`, re-read against its reference); then **stops** during a drain or unless Careful Resume is Normal | a rate needs the whole batch; Careful Resume's own jump and a drain own the window |
//! | E2b | jump's raise | the window, raised to the jump's target, bounded by the ceiling and `ssthresh` (`Effect::Window`); with `validate`, the first raise starts the judging of its flight; a raise resets the slow start's history (SEARCH compares deliveries with a sending the window no longer makes) | the target follows the estimates of this batch |
//! | E2c | jump's verdict (`validate`, while its flight is judged) | a flight that came back as it left: the window to the ceiling (`Effect::Window`); one that came back slower: the end of the initial slow start (`jump-refused`) at what the path delivered (`Effect::Exit`) | [`crate::jump`]'s validation: judged a quarter of a smoothed RTT after the flight began to come back |
//!
//! Within a hook the start-up keeps its `View` of the window up to date with the effects
//! it returns, so each step reads the window the step before left; the controller applies
//! them in the same order, to the same window.

mod drain;
mod grow;
mod jump;
mod protocol;

use std::time::Duration;

use crate::burst::SlowStartBurst;
use crate::careful_resume::CarefulResumePhase;
use crate::event::Emitter;
use crate::growth::{RttWindowFloor, StartupGrowth};
use crate::jump::BdpJump;
use crate::slow_start::{AckSample, SlowStart, SsDecision};

use drain::Drain;
use grow::Grow;
pub use jump::CEILING_RELEASE_ROUNDS;
use jump::Jump;
pub(crate) use protocol::{Effect, Effects, View};

/// One acknowledgement as the start-up hears it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StartupAck {
    /// When it arrived.
    pub now: Duration,
    /// Bytes acknowledged.
    pub bytes: u64,
    /// Whether the sender was application-limited.
    pub app_limited: bool,
    /// Whether Careful Resume holds the window (Unvalidated, Safe Retreat).
    pub hold: bool,
}

/// The initial slow start of one connection. See the module docs.
#[derive(Debug, Clone)]
pub struct Startup {
    /// The slow start's heuristic (it decides the exit).
    slow_start: Box<dyn SlowStart>,
    /// Whether the initial slow start is over (exit, loss, or `ssthresh` reached); it
    /// never comes back.
    done: bool,
    /// The start-up growth and floors.
    grow: Grow,
    /// The jump towards the delivery-rate BDP, if enabled.
    jump: Option<Jump>,
    /// Pacing bursts during the initial slow start, if enabled.
    burst: Option<SlowStartBurst>,
    /// The drain after an exit that asked for one, while it lasts.
    drain: Option<Drain>,
}

impl Startup {
    /// The start-up of a controller whose window starts at `initial_window` bytes, with
    /// `slow_start` deciding the exit, doubling, and none of the modifiers.
    pub(crate) fn new(slow_start: Box<dyn SlowStart>, initial_window: u64) -> Self {
        Self {
            slow_start,
            done: false,
            grow: Grow {
                growth: StartupGrowth::Double,
                floor: None,
                initial_window,
            },
            jump: None,
            burst: None,
            drain: None,
        }
    }

    /// Sets how fast the initial slow start grows ([`crate::growth`]).
    pub(crate) fn set_growth(&mut self, growth: StartupGrowth) {
        self.grow.growth = growth;
    }

    /// Enables picoquic's long-RTT window floor ([`RttWindowFloor`]).
    pub(crate) fn set_floor(&mut self, floor: Option<RttWindowFloor>) {
        self.grow.floor = floor;
    }

    /// Enables the jump towards the delivery-rate BDP ([`crate::jump`]).
    pub(crate) fn set_jump(&mut self, jump: Option<BdpJump>) {
        self.jump = jump.map(Jump::new);
    }

    /// Enables pacing bursts of a quarter window ([`crate::burst`]).
    pub(crate) fn set_burst(&mut self, burst: Option<SlowStartBurst>) {
        self.burst = burst;
    }

    /// The slow start in use.
    pub fn slow_start(&self) -> &dyn SlowStart {
        self.slow_start.as_ref()
    }

    /// Whether the initial slow start has ended.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether a drain after the exit is in progress.
    pub fn draining(&self) -> bool {
        self.drain.is_some()
    }

    /// Ends the initial slow start from outside (a loss, Careful Resume's Safe Retreat);
    /// true if it was still on.
    pub(crate) fn end(&mut self) -> bool {
        !std::mem::replace(&mut self.done, true)
    }

    /// S2: `bytes` were sent at `now`.
    /// `window_full`: the packet left no room for another in the window (the jump's
    /// ceiling counts only rounds the window held the sender in).
    pub(crate) fn on_sent(&mut self, now: Duration, bytes: u64, window_full: bool) {
        if !self.done {
            self.slow_start.on_sent(now, bytes);
            if let Some(jump) = self.jump.as_mut() {
                jump.on_sent(window_full);
            }
        }
    }

    /// A2: a packet of `bytes` sent at `sent` was acknowledged (in a recovery period or
    /// not): the jump's samples.
    pub(crate) fn sample_ack(&mut self, sent: Duration, bytes: u64) {
        if let Some(jump) = self.jump.as_mut().filter(|_| !self.done) {
            jump.on_ack(sent, bytes);
        }
    }

    /// A4: a drain in progress steps the window down instead of growing it (`Drain`);
    /// `None` if there is none, and the acknowledgement goes on.
    pub(crate) fn drain_on_ack(&mut self, bytes: u64) -> Option<Effect> {
        let (window, ended) = self.drain.as_mut()?.on_ack(bytes);
        if ended {
            self.drain = None;
        }
        Some(Effect::Drain { window, ended })
    }

    /// A7-A11: an acknowledgement past the recovery gate during the initial slow start.
    /// The floor raises the window (unless Careful Resume holds it or the jump is judged);
    /// the slow start sees every acknowledgement, those held at the ceiling or while the
    /// jump is judged as application-limited (a held window is not the path's plateau);
    /// Careful Resume's hold then stops; the slow start's increase grows the window (not
    /// while application-limited or judged), or its exit ends the initial slow start.
    pub(crate) fn on_ack(&mut self, ack: StartupAck, view: &mut View, events: &Emitter) -> Effects {
        let judged = self.jump.as_ref().is_some_and(Jump::holds);
        if let Some(jump) = self.jump.as_mut() {
            jump.on_slow_start_ack(ack.app_limited);
        }
        // A7: the floor.
        let floor = if ack.hold || judged {
            Effect::None
        } else {
            self.grow.raise_to_floor(view)
        };
        // A8: the ceiling.
        let ceiling = self.ceiling(ack.now, view);
        let held = judged || ceiling.is_some_and(|c| view.cwnd >= c);
        // A9: the slow start.
        let decision = self
            .slow_start
            .on_ack(&self.sample(ack, held, view), events);
        if ack.hold {
            // A10, RFC 9959 Sec. 3.3: the CWND is not increased in the Unvalidated Phase.
            return Effects::new(floor, Effect::None);
        }
        // A11: growth, or the slow start's exit.
        let then = match decision {
            SsDecision::Grow { increase } if !ack.app_limited && !judged => {
                self.grow.grow(increase, ceiling, view)
            }
            SsDecision::Grow { .. } => Effect::None,
            SsDecision::Exit {
                cwnd,
                ssthresh,
                reason,
                drain,
            } => Effect::Exit {
                cwnd,
                ssthresh,
                reason,
                drain,
            },
        };
        Effects::new(floor, self.settle(then))
    }

    /// A8: the jump's ceiling (`+jump:cap`), if any.
    fn ceiling(&self, now: Duration, view: &View) -> Option<u64> {
        self.jump.as_ref()?.ceiling(now, view)
    }

    /// What the slow start's heuristic reads of the acknowledgement `ack`; `held` at the
    /// ceiling or while the jump is judged, it reads as application-limited.
    fn sample(&self, ack: StartupAck, held: bool, view: &View) -> AckSample {
        AckSample {
            now: ack.now,
            bytes: ack.bytes,
            rtt: view.rtt.latest,
            min_rtt: view.rtt.min,
            unloaded_rtt: view.unloaded_rtt(),
            smoothed_rtt: view.rtt.smoothed,
            app_limited: ack.app_limited || held,
            cwnd: view.cwnd,
            mss: view.mss,
            growth_per_rtt: self.grow.per_rtt(view.rtt.smoothed),
        }
    }

    /// An effect that ends the initial slow start ends it here.
    fn settle(&mut self, effect: Effect) -> Effect {
        if matches!(effect, Effect::Exit { .. } | Effect::ThresholdReached(_)) {
            self.done = true;
        }
        effect
    }

    /// E2: a batch of acknowledgements ended at `now`: the jump (`+jump`) samples the
    /// batch and raises the window to its target, not while a drain or Careful Resume
    /// (outside Normal) controls the window; with `validate` it judges its flight.
    pub(crate) fn on_end_acks(&mut self, now: Duration, view: &mut View) -> Effects {
        let may_raise = self.drain.is_none() && view.cr_phase == CarefulResumePhase::Normal;
        let Some(jump) = self.jump.as_mut().filter(|_| !self.done) else {
            return Effects::NONE;
        };
        let effects = jump.on_end_acks(now, view, may_raise);
        if effects.into_iter().any(|e| matches!(e, Effect::Window(_))) {
            // The jump stepped the window: the slow start's history describes a sending
            // the window no longer makes (SEARCH compares what is delivered with what was
            // sent a round trip before, at slow start's rate), so it starts again.
            self.slow_start.reset();
        }
        Effects::new(effects.first, self.settle(effects.then))
    }

    /// E3: a round ended at `now` (RFC 9406 `windowEnd`): the slow start's round, and
    /// whether the jump's ceiling held the window on a path that showed no queue.
    pub(crate) fn on_round_end(&mut self, now: Duration, view: &mut View) -> Effect {
        if self.done {
            return Effect::None;
        }
        self.slow_start.on_round_end(now);
        let effect = match self.jump.as_mut() {
            Some(jump) => jump.on_round_end(now, view),
            None => Effect::None,
        };
        self.settle(effect)
    }

    /// Applying an exit with `drain` (the window now `cwnd`, `in_flight` bytes in flight):
    /// starts a `Drain` from the bytes in flight down to the window; the window it starts
    /// at, if there is anything to drain.
    pub(crate) fn start_drain(&mut self, cwnd: u64, in_flight: u64) -> Option<u64> {
        self.drain = Drain::new(cwnd, in_flight);
        self.drain.map(|d| d.start())
    }

    /// C9, RFC 9002 Sec. 7.6.2: persistent congestion ends a drain and resets the slow
    /// start (which the initial slow start, over by then, no longer asks).
    pub(crate) fn on_persistent_congestion(&mut self) {
        self.drain = None;
        self.slow_start.reset();
    }

    /// The pacer's burst, bytes, for a window of `window` bytes at smoothed RTT `smoothed`:
    /// with `+burst`, during the initial slow start only, not during a drain, and only
    /// while Careful Resume (phase `cr_phase`) is Normal; `+burst:time` reads the rate the
    /// jump measured.
    pub(crate) fn pacing_burst(
        &self,
        window: u64,
        smoothed: Duration,
        cr_phase: CarefulResumePhase,
    ) -> Option<u64> {
        let burst = self.burst?;
        if self.done || self.drain.is_some() || cr_phase != CarefulResumePhase::Normal {
            return None;
        }
        let rate = self.jump.as_ref().map_or(0.0, Jump::rate_for_bursts);
        burst.burst(window, smoothed, rate)
    }

    /// The pacing rate, bytes per second, while `+jump:validate` judges its flight, for a
    /// window of `window` bytes at smoothed RTT `smoothed` (`Jump::pacing_rate`).
    /// Only during the initial slow start: one that ends while the flight is judged (a
    /// loss, the slow start's own exit, Careful Resume's Safe Retreat) leaves the flight
    /// unjudged, and the connection's pacing is quinn's again.
    pub(crate) fn pacing_rate(&self, window: u64, smoothed: Duration) -> Option<u64> {
        if self.done {
            return None;
        }
        self.jump.as_ref()?.pacing_rate(window, smoothed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::careful_resume::{CarefulResume, CarefulResumeConfig, Window};
    use crate::controller::RttInfo;
    use crate::delivery::RecentDelivery;
    use crate::path_rtt::PathRtt;

    /// A slow start that always grows and counts its resets.
    #[derive(Debug, Clone)]
    struct Counting(Arc<AtomicU32>);

    impl SlowStart for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn on_ack(&mut self, ack: &AckSample, _: &Emitter) -> SsDecision {
            SsDecision::Grow {
                increase: ack.bytes,
            }
        }
        fn reset(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn clone_box(&self) -> Box<dyn SlowStart> {
            Box::new(self.clone())
        }
        fn state_size(&self) -> usize {
            0
        }
    }

    /// The jump steps the window from a first flight of 20 packets sent together and
    /// acknowledged two by two as a 2.5 MB/s bottleneck drains them, 600 ms later: the slow
    /// start's history described the small window's sending, so it is reset, once per step.
    #[test]
    fn the_jumps_step_resets_the_slow_start() {
        const PACKET: u64 = 1200;
        let ms = |v: u64| Duration::from_millis(v);
        let resets = Arc::new(AtomicU32::new(0));
        let mut startup = Startup::new(Box::new(Counting(resets.clone())), 12_000);
        startup.set_jump(Some(BdpJump {
            cap: Some(1.5),
            bound: Some(1.0),
            validate: Some(crate::jump::VALIDATE_RATIO),
            ..BdpJump::default()
        }));
        let cr = CarefulResume::new(CarefulResumeConfig::default(), None, 12_000);
        let (delivery, path_rtt) = (RecentDelivery::default(), PathRtt::new(12_000));
        let rtt = RttInfo::fixed(ms(600));
        let mut cwnd = 24_000;
        let t0 = ms(600);
        let view_at = |cwnd| {
            let window = Window {
                cwnd,
                ssthresh: u64::MAX,
                mss: PACKET,
                max_window: u64::MAX,
            };
            View::new(window, rtt, &cr, &delivery, &path_rtt)
        };
        // The handshake's acknowledgement.
        startup.on_end_acks(t0, &mut view_at(cwnd));
        for _ in 0..20 {
            startup.on_sent(t0, PACKET, false);
        }
        let serialize = Duration::from_micros(480);
        for i in 0..10u32 {
            let now = t0 + ms(600) + serialize * (2 * i + 2);
            startup.sample_ack(t0, PACKET);
            startup.sample_ack(t0, PACKET);
            let mut view = view_at(cwnd);
            let effects = startup.on_end_acks(now, &mut view);
            cwnd = view.cwnd;
            let stepped = effects.into_iter().any(|e| matches!(e, Effect::Window(_)));
            assert_eq!(stepped, resets.load(Ordering::Relaxed) > 0, "batch {i}");
        }
        assert!(cwnd > 900_000, "the jump: {cwnd}");
        assert!(resets.load(Ordering::Relaxed) >= 1);
    }
}
