//! The window on the way up: [`Controller::on_sent`], [`Controller::on_ack`] and
//! [`Controller::on_end_acks`], as the steps S, A and E of the order of operations
//! ([`crate::controller`]).

use std::time::Duration;

use crate::avoidance::CaAck;
use crate::careful_resume::AckEffect;
use crate::event::{CcEvent, Emitter};
use crate::startup::{Startup, StartupAck, View};

use super::{Controller, RttInfo};

impl Controller {
    /// `bytes` were sent at `now` in the packet numbered `pn`.
    pub fn on_sent(&mut self, now: Duration, bytes: u64, pn: u64) {
        // S1: rounds.
        self.last_sent_pn = Some(pn);
        if self.round_end_pn.is_none() {
            self.round_end_pn = Some(pn);
        }
        // S2: the initial slow start: its slow start, and whether the window is full (as
        // Careful Resume counts the flight: quinn-proto sends while `flight + MTU < window`).
        let window_full = (self.cr.flight_size())
            .saturating_add(bytes)
            .saturating_add(self.mss)
            >= self.cwnd;
        self.startup.on_sent(now, bytes, window_full);
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
        if let Some(step) = self.startup.drain_on_ack(bytes) {
            self.apply_startup(now, step);
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
        if !self.startup.done() {
            self.initial_slow_start_on_ack(now, bytes, app_limited, hold);
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
        self.startup.sample_ack(sent, bytes);
    }

    /// A7-A11: an acknowledgement during the initial slow start: the start-up decides
    /// ([`Startup::on_ack`](crate::startup::Startup::on_ack)), the controller applies.
    fn initial_slow_start_on_ack(
        &mut self,
        now: Duration,
        bytes: u64,
        app_limited: bool,
        hold: bool,
    ) {
        let ack = StartupAck {
            now,
            bytes,
            app_limited,
            hold,
        };
        let (startup, mut view, events) = self.startup_and_view();
        let effects = startup.on_ack(ack, &mut view, events);
        self.apply_startup_effects(now, effects);
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

    /// A batch of acknowledgements ended. `largest_acked` closes a round when it reaches
    /// the round's end packet.
    pub fn on_end_acks(&mut self, now: Duration, in_flight: u64, largest_acked: Option<u64>) {
        self.in_flight = in_flight;
        self.recent_delivery.on_end_acks(now, self.rtt.smoothed);
        self.path_rtt.on_sample(self.rtt.latest, in_flight);
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

    /// E2: the jump (`+jump`, initial slow start only) samples the batch and may raise the
    /// window or end the initial slow start: the start-up decides
    /// ([`Startup::on_end_acks`](crate::startup::Startup::on_end_acks)), the controller
    /// applies.
    fn jump_on_end_acks(&mut self, now: Duration) {
        let (startup, mut view, _) = self.startup_and_view();
        let effects = startup.on_end_acks(now, &mut view);
        self.apply_startup_effects(now, effects);
    }

    /// E3: a round ends when the largest acknowledged packet reaches the round's end: the
    /// initial slow start's round (RFC 9406 `windowEnd`) and Careful Resume's observation.
    fn end_round(&mut self, now: Duration, largest_acked: Option<u64>) {
        if let (Some(largest), Some(end)) = (largest_acked, self.round_end_pn)
            && largest >= end
        {
            let (startup, mut view, _) = self.startup_and_view();
            let effect = startup.on_round_end(now, &mut view);
            self.apply_startup(now, effect);
            self.cr.on_round_end(now);
            if let Some(filter) = self.loss_filter.as_mut() {
                filter.on_round_end();
            }
            self.round_end_pn = self.last_sent_pn.map(|pn| pn.max(largest + 1));
        }
    }

    /// The start-up, the `View` of the controller it reads, and where events go: borrowed
    /// apart, so the start-up can decide while it reads the rest of the controller.
    fn startup_and_view(&mut self) -> (&mut Startup, View<'_>, &Emitter) {
        let view = View::new(
            self.cr_window(),
            self.rtt,
            &self.cr,
            &self.recent_delivery,
            &self.path_rtt,
        );
        (&mut self.startup, view, &self.events)
    }
}
