//! What the controller does with the start-up's effects ([`crate::startup`]): the
//! start-up decides what the window of the initial slow start should do, the controller
//! applies it to the window, `ssthresh`, the avoidance, recovery and Careful Resume.

use std::time::Duration;

use crate::event::{CcEvent, ExitReason};
use crate::startup::{Effect, Effects};

use super::Controller;

impl Controller {
    /// Applies the start-up's `effects` at `now`, in order.
    pub(super) fn apply_startup_effects(&mut self, now: Duration, effects: Effects) {
        for effect in effects {
            self.apply_startup(now, effect);
        }
    }

    /// Applies one of the start-up's effects at `now` (`Effect` says what each does).
    pub(super) fn apply_startup(&mut self, now: Duration, effect: Effect) {
        match effect {
            Effect::None => {}
            Effect::Window(window) => self.set_window(window),
            Effect::ThresholdReached(window) => {
                self.set_window(window as f64);
                self.avoidance_starts(now);
            }
            Effect::Exit {
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
            Effect::Drain { window, ended } => {
                if ended {
                    self.recovery_start = Some(now);
                }
                self.set_window(window as f64);
            }
        }
    }

    /// The initial slow start ended (the start-up has marked it): its window and threshold,
    /// the avoidance starts, and Careful Resume hears of it (a delay-based exit in
    /// Reconnaissance ends it).
    fn exit_slow_start(&mut self, now: Duration, cwnd: u64, ssthresh: u64, reason: ExitReason) {
        let before = self.cwnd;
        self.set_window(cwnd as f64);
        self.ssthresh = ssthresh.max(self.minimum_window()).min(self.cwnd);
        self.avoidance_starts(now);
        self.emit_slow_start_exit(now, reason, before);
        if let Some(t) = self.cr.on_slow_start_exit() {
            self.apply_careful_resume(now, t);
        }
    }

    /// Ends the initial slow start, if it is still on, as a loss does: a `SlowStartExit`
    /// event with reason `loss`, from window `cwnd_before` to the current one.
    pub(super) fn end_startup_by_loss(&mut self, now: Duration, cwnd_before: u64) {
        if self.startup.end() {
            self.emit_slow_start_exit(now, ExitReason::Loss, cwnd_before);
        }
    }

    /// The `SlowStartExit` event of an exit at `now` for `reason`, from window
    /// `cwnd_before` to the current window and `ssthresh`.
    fn emit_slow_start_exit(&mut self, now: Duration, reason: ExitReason, cwnd_before: u64) {
        self.events.emit(|| CcEvent::SlowStartExit {
            at: now,
            reason,
            cwnd_before,
            cwnd_after: self.cwnd,
            ssthresh: self.ssthresh,
            shadow: false,
        });
    }

    /// The avoidance starts at the window as the initial slow start ends without a loss;
    /// after a Safe Retreat on a tolerated loss it keeps the `W_max` it learnt there (the
    /// saved window, [`crate::controller`]'s `avoidance_learns_congestion`).
    fn avoidance_starts(&mut self, now: Duration) {
        if !self.retreat_tolerated {
            self.avoidance.on_slow_start_exit(now, self.cwnd, self.mss);
        }
    }

    /// The drain an exit asked for: a recovery period begins, and the start-up drains from
    /// the bytes in flight down to the window just set. The drain is the answer to the
    /// overshoot, so losses of packets sent before it ends do not cut the window again (one
    /// reduction per congestion event, RFC 9002 Sec. 7.3.2; packets sent during the drain
    /// meet the queue it drains).
    fn start_drain(&mut self, now: Duration) {
        self.recovery_start = Some(now);
        if let Some(window) = self.startup.start_drain(self.cwnd, self.in_flight) {
            self.set_window(window as f64);
        }
    }
}
