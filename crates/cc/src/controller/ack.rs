//! The window on the way up: [`Controller::on_sent`], [`Controller::on_ack`] and
//! [`Controller::on_end_acks`], as the steps S, A and E of the order of operations
//! ([`crate::controller`]).

use std::time::Duration;

use crate::avoidance::CaAck;
use crate::careful_resume::{AckEffect, CarefulResumePhase};
use crate::event::{CcEvent, ExitReason};
use crate::jump::{BdpJump, Dispersion, JumpPhase, JumpVerdict, VALIDATE_SPAN_RTTS};
use crate::slow_start::{AckSample, SsDecision};

use super::{Controller, RttInfo};

impl Controller {
    /// `bytes` were sent at `now` in the packet numbered `pn`.
    pub fn on_sent(&mut self, now: Duration, bytes: u64, pn: u64) {
        // S1: rounds.
        self.last_sent_pn = Some(pn);
        if self.round_end_pn.is_none() {
            self.round_end_pn = Some(pn);
        }
        // S2: the slow start of the initial slow start.
        if !self.initial_slow_start_done {
            self.slow_start.on_sent(now, bytes);
        }
        // S3: Careful Resume.
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
        self.feed_ack_samplers(sent, bytes);
        // A3: Careful Resume; an acknowledgement that changes its phase goes no further.
        let cr = self.cr.on_ack(now, sent, bytes, app_limited, &rtt);
        if let AckEffect::Transition(t) = cr {
            self.apply_careful_resume(now, t);
            return;
        }
        // A4: a drain takes the acknowledgement.
        if self.drain_on_ack(now, bytes) {
            return;
        }
        // A5: RFC 9002 Sec. 7.3.2, no growth from packets sent before the recovery period.
        if self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        // A6: the first acknowledgement of a packet sent after the recovery period began
        // ends it.
        if let Some(checkpoint) = self.checkpoint.take() {
            self.end_recovery(now, checkpoint);
        }
        // A7-A11 in the initial slow start, A12 after it.
        let hold = !matches!(cr, AckEffect::Normal);
        if !self.initial_slow_start_done {
            self.initial_slow_start_on_ack(now, bytes, app_limited, hold, rtt);
        } else if app_limited {
            self.app_limited_since.get_or_insert(now);
        } else if !hold {
            self.end_application_limited(now);
            self.grow_after_initial_slow_start(now, bytes, rtt);
        }
    }

    /// A12's first acknowledgement that is not application-limited after some that were:
    /// the avoidance skips the pause (RFC 9438 Sec. 4.2).
    fn end_application_limited(&mut self, now: Duration) {
        if let Some(since) = self.app_limited_since.take() {
            self.avoidance
                .on_application_limited(now.saturating_sub(since));
        }
    }

    /// A1-A2: what hears every acknowledgement, in a recovery period or not: the loss
    /// filter's distance since the last loss, the bytes delivered this round trip (the
    /// retreat's), and the jump's delivery-rate samples (the jump belongs to the initial
    /// slow start, which never comes back).
    fn feed_ack_samplers(&mut self, sent: Duration, bytes: u64) {
        if let Some(filter) = self.loss_filter.as_mut() {
            filter.on_acked();
        }
        self.recent_delivery.on_ack(bytes);
        if self.jump.is_some() && !self.initial_slow_start_done {
            self.peak_rate.on_ack(sent, bytes);
            if let JumpPhase::Unvalidated(flight) = &mut self.jump_phase {
                flight.on_ack(sent, bytes);
            }
        }
    }

    /// A7-A11: an acknowledgement during the initial slow start.
    fn initial_slow_start_on_ack(
        &mut self,
        now: Duration,
        bytes: u64,
        app_limited: bool,
        hold: bool,
        rtt: RttInfo,
    ) {
        // A jump being judged holds the window as Careful Resume's Unvalidated Phase does,
        // but the slow start may still exit.
        let jump_holds = self.jump_phase.holds();
        if !hold && !jump_holds {
            self.raise_to_floor(rtt);
        }
        // A8: the jump's ceiling ([`BdpJump::cap`](crate::jump::BdpJump::cap)). A window
        // held there limits the sending as the application would: the slow start's
        // heuristic must not read it as the path's plateau.
        let ceiling = self.jump_ceiling(now, rtt.min);
        let capped = jump_holds || ceiling.is_some_and(|c| self.cwnd >= c);
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
            // A10, RFC 9959 Sec. 3.3: the CWND is not increased in the Unvalidated Phase.
            return;
        }
        match decision {
            SsDecision::Grow { increase } => {
                if !app_limited && !jump_holds {
                    self.grow_initial_window(now, increase, ceiling, rtt.smoothed);
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
    }

    /// A7: the long-RTT floors (`+growth:rtt` on the smoothed RTT, `+floor` on the minimum
    /// RTT) raise the window; neither the jump's ceiling nor `ssthresh` bounds them.
    fn raise_to_floor(&mut self, rtt: RttInfo) {
        let floor = self
            .growth
            .window_floor(self.initial_window, rtt.smoothed)
            .max(
                self.floor
                    .and_then(|f| f.window_floor(self.initial_window, rtt.min)),
            );
        if let Some(floor) = floor
            && floor > self.cwnd
        {
            self.set_window(floor as f64);
        }
    }

    /// A11: the slow start's increase, times the start-up growth, up to the jump's ceiling
    /// (a window already past it stays where it is).
    fn grow_initial_window(
        &mut self,
        now: Duration,
        increase: u64,
        ceiling: Option<u64>,
        smoothed: Duration,
    ) {
        let increase = increase as f64 * self.growth.multiplier(smoothed);
        let before = self.cwnd;
        let mut window = self.cwnd as f64 + increase;
        if let Some(ceiling) = ceiling {
            window = window.min(ceiling.max(before) as f64);
        }
        self.set_window(window);
        if self.cwnd >= self.ssthresh {
            // RFC 9002 Sec. 7.3.1: slow start only while cwnd < ssthresh. A threshold set
            // before any exit (Careful Resume's `ss-cap`) ends it as a reached threshold,
            // not as a heuristic's exit.
            self.set_window(before.max(self.ssthresh) as f64);
            self.initial_slow_start_done = true;
            self.avoidance.on_slow_start_exit(now, self.cwnd, self.mss);
        }
    }

    /// A12: after the initial slow start, classic slow start up to `ssthresh` (RFC 9002
    /// Sec. 7.3.1), then the avoidance.
    fn grow_after_initial_slow_start(&mut self, now: Duration, bytes: u64, rtt: RttInfo) {
        if self.in_slow_start() {
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

    /// A9: the slow start's heuristic exits: its window and threshold, the avoidance
    /// starts, and Careful Resume hears of it (a delay-based exit in Reconnaissance ends
    /// it).
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

    /// The largest window the initial slow start may reach under `+jump:cap` at `now` and
    /// minimum RTT `min`: from the estimate the cap reads or what the path delivered over the
    /// latest RTT (see [`BdpJump::ceiling_from`](crate::jump::BdpJump::ceiling_from)), but
    /// never below the saved window Careful Resume jumped to, unless that proved wrong.
    /// Careful Resume paces its jump, so the rates measured meanwhile are its pacing's, not
    /// the bottleneck's; the saved window was measured on this path and the jump tested it.
    fn jump_ceiling(&self, now: Duration, min: Duration) -> Option<u64> {
        // Only a capped jump has a ceiling: the other controllers do not pay for reading
        // the delivery marks on every acknowledgement of their slow start.
        let jump = self.jump.filter(|j| j.cap.is_some())?;
        let delivered = self.recent_delivery.round_trip_rate(now, self.rtt.latest);
        let ceiling = jump.ceiling_from(&self.peak_rate, min, delivered)?;
        Some(ceiling.max(self.resumed_window()))
    }

    /// The saved window of a Careful Resume jump that has not proved wrong (0 without one).
    fn resumed_window(&self) -> u64 {
        match self.cr.restored() {
            Some(saved) if self.cr.jump_cwnd() > 0 && !self.cr.invalidated() => saved.saved_cwnd,
            _ => 0,
        }
    }

    /// A batch of acknowledgements ended. `largest_acked` closes a round when it reaches
    /// the round's end packet.
    pub fn on_end_acks(&mut self, now: Duration, in_flight: u64, largest_acked: Option<u64>) {
        self.in_flight = in_flight;
        self.recent_delivery.on_end_acks(now, self.rtt.smoothed);
        self.jump_on_end_acks(now);
        self.end_round(now, largest_acked);
        // E4: Careful Resume's acknowledgement-driven phase changes.
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

    /// E2: the jump (`+jump`, initial slow start only) samples the batch's delivery rate
    /// and raises the window to its target, never past the ceiling or `ssthresh`, and not
    /// while a drain or Careful Resume controls the window; with `validate`, once it has
    /// jumped it judges the flight sent since before the window grows past the target.
    fn jump_on_end_acks(&mut self, now: Duration) {
        let Some(jump) = self.jump.filter(|_| !self.initial_slow_start_done) else {
            return;
        };
        let bound = jump.bound_reading(self.rtt.min);
        self.peak_rate.on_end_acks(now, jump.min_interval, bound);
        if self.drain.is_some() || self.cr.phase() != CarefulResumePhase::Normal {
            return;
        }
        match self.jump_phase {
            JumpPhase::Open | JumpPhase::Validated => self.jump_to_target(now, jump),
            JumpPhase::Unvalidated(mut flight) => {
                flight.on_end_acks(now);
                self.jump_to_target(now, jump);
                self.judge_jump(now, jump, flight);
            }
            JumpPhase::Refused => {}
        }
    }

    /// Raises the window to the jump's target, never past the ceiling or `ssthresh`; with
    /// `validate`, the first raise starts the judging of its flight.
    fn jump_to_target(&mut self, now: Duration, jump: BdpJump) {
        let target = jump.target_from(&self.peak_rate, self.rtt.min, self.rtt.smoothed);
        // Never past the ceiling: picoquic's peak rate can be several times the bottleneck's
        // when a thin return link bunches the ACKs.
        let target = self
            .jump_ceiling(now, self.rtt.min)
            .map_or(target, |c| target.min(c));
        if target > self.cwnd {
            self.set_window(target.min(self.ssthresh) as f64);
            if jump.validate.is_some() && self.jump_phase == JumpPhase::Open {
                self.jump_phase = JumpPhase::Unvalidated(Dispersion::new(now));
            }
        }
    }

    /// Judges the jump's `flight` once it has come back over a quarter of a smoothed RTT
    /// ([`Dispersion`]): one that came back as fast as it left raises the window to the
    /// ceiling (a second jump) and lets it grow; one that came back slower ends the initial
    /// slow start with the window at what the path delivered per round trip.
    fn judge_jump(&mut self, now: Duration, jump: BdpJump, flight: Dispersion) {
        let span = self.rtt.smoothed.mul_f64(VALIDATE_SPAN_RTTS);
        let ratio = jump.validate.unwrap_or(1.0);
        match flight.verdict(span, ratio, self.peak_rate.bound()) {
            None => self.jump_phase = JumpPhase::Unvalidated(flight),
            Some(JumpVerdict::Pass) => {
                self.jump_phase = JumpPhase::Validated;
                if let Some(ceiling) = self.jump_ceiling(now, self.rtt.min)
                    && ceiling > self.cwnd
                {
                    self.set_window(ceiling.min(self.ssthresh) as f64);
                }
            }
            Some(JumpVerdict::Fail { delivery_rate }) => {
                self.jump_phase = JumpPhase::Refused;
                let delivered = (delivery_rate * self.rtt.latest.as_secs_f64()) as u64;
                let cwnd = delivered.min(self.cwnd);
                self.exit_slow_start(now, cwnd, cwnd, ExitReason::JumpRefused);
            }
        }
    }

    /// E3: a round ends when the largest acknowledged packet reaches the round's end: the
    /// initial slow start's round (RFC 9406 `windowEnd`) and Careful Resume's observation.
    fn end_round(&mut self, now: Duration, largest_acked: Option<u64>) {
        if let (Some(largest), Some(end)) = (largest_acked, self.round_end_pn)
            && largest >= end
        {
            if !self.initial_slow_start_done {
                self.slow_start.on_round_end(now);
            }
            self.cr.on_round_end(now);
            if let Some(filter) = self.loss_filter.as_mut() {
                filter.on_round_end();
            }
            self.round_end_pn = self.last_sent_pn.map(|pn| pn.max(largest + 1));
        }
    }
}
