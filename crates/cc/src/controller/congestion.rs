//! The answer to congestion: [`Controller::on_congestion_event`] as the steps C of the
//! order of operations ([`crate::controller`]), and the undo of a reduction at the end of
//! its recovery period ([`crate::rollback`]).

use std::time::Duration;

use crate::avoidance::Avoidance;
use crate::careful_resume::{Effect, Transition};
use crate::event::CcEvent;
use crate::loss_filter::{LOSS_FILTER_QUEUE_FRACTION, LossContext};

use super::Controller;

/// What a reduction changed, saved so that [`crate::rollback`] can undo it.
#[derive(Debug, Clone)]
pub(super) struct Checkpoint {
    /// Window before the reduction, bytes (with its fraction).
    cwnd: f64,
    /// Slow-start threshold before the reduction, bytes.
    ssthresh: u64,
    /// Congestion avoidance before the reduction (CUBIC's `W_max`, `K`, `t_epoch`, ...).
    avoidance: Box<dyn Avoidance>,
    /// [`Controller::lost_packets`] before the losses that caused the reduction.
    lost_packets: u64,
}

impl Controller {
    /// A6: the recovery period of `checkpoint` ended: undo its reduction if it lost few
    /// packets ([`crate::rollback`]).
    pub(super) fn end_recovery(&mut self, now: Duration, checkpoint: Checkpoint) {
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

    /// Packets were lost (or ECN-marked) up to one sent at `sent`.
    pub fn on_congestion_event(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent: bool,
        lost_bytes: u64,
    ) {
        let before_losses = self.count_losses(lost_bytes);
        let (tolerated, hidden_from_cr) = self.filter_loss(persistent, lost_bytes);
        // C3: `loss-filter:cr` keeps a tolerated loss from Careful Resume too (with
        // `cr=validating`, in the Validating Phase).
        if hidden_from_cr {
            return;
        }
        // C4: Careful Resume hears the congestion.
        let cr = self
            .cr
            .on_congestion(persistent, lost_bytes, self.cr_window());
        if let Some(t) = cr.filter(|t| matches!(t.effect, Effect::Retreat(_))) {
            self.retreat_tolerated = tolerated;
            self.safe_retreat(now, t, persistent, lost_bytes);
            return;
        }
        // C6: a loss the filter lets pass is not congestion: no reduction, no recovery
        // period, no end of the initial slow start.
        if !tolerated {
            self.respond_to_congestion(now, sent, persistent, lost_bytes, before_losses);
        }
        if let Some(t) = cr {
            self.apply_careful_resume(now, t);
        }
    }

    /// C1: counts the lost packets (lost bytes over the MSS, rounded up), tolerated or not,
    /// for [`crate::rollback`]; an ECN-CE mark (quinn reports it with no bytes lost) is
    /// congestion, so the current reduction stands. Returns the count before.
    fn count_losses(&mut self, lost_bytes: u64) -> u64 {
        let before = self.lost_packets;
        self.lost_packets += lost_bytes.div_ceil(self.mss);
        if lost_bytes == 0 {
            self.checkpoint = None;
        }
        before
    }

    /// C2-C3: the loss filter hears every loss once ([`crate::loss_filter`]); returns
    /// whether it lets this one pass (never a mark, which is congestion by definition, RFC
    /// 9002 Sec. 7.1, as picoquic treats it; never persistent congestion), and whether
    /// Careful Resume, in its phase, must not hear of it either (the filter's `cr` option).
    fn filter_loss(&mut self, persistent: bool, lost_bytes: u64) -> (bool, bool) {
        let mss = self.mss;
        let phase = self.cr.phase();
        let in_flight = self.in_flight.div_ceil(mss);
        let queueing = self.rtt_shows_queue();
        let at = LossContext {
            in_flight,
            queueing,
            in_initial_slow_start: !self.startup.done(),
        };
        let Some(filter) = self.loss_filter.as_mut() else {
            return (false, false);
        };
        let tolerated =
            lost_bytes > 0 && !filter.on_lost(lost_bytes.div_ceil(mss), at) && !persistent;
        (
            tolerated,
            tolerated && !filter.careful_resume_hears_tolerated(phase),
        )
    }

    /// Whether the latest RTT sample is above the minimum by more than
    /// [`LOSS_FILTER_QUEUE_FRACTION`] of it: a queue at the bottleneck.
    fn rtt_shows_queue(&self) -> bool {
        let queueing = self.rtt.latest.saturating_sub(self.rtt.min);
        queueing.as_secs_f64() > LOSS_FILTER_QUEUE_FRACTION * self.rtt.min.as_secs_f64()
    }

    /// The window a reduction at `now` starts from: the window, or with `+retreat` on the
    /// first reduction what the path delivers per round trip when that is less
    /// ([`crate::retreat`]).
    fn reduction_base(&self, now: Duration) -> u64 {
        match self.retreat {
            Some(_) if !self.reduced => self
                .cwnd
                .min(
                    self.recent_delivery
                        .per_round_trip(now, self.rtt.latest, self.rtt.smoothed),
                )
                .max(self.minimum_window()),
            _ => self.cwnd,
        }
    }

    /// C5, RFC 9959 Sec. 3.5: Safe Retreat replaces the normal reduction.
    fn safe_retreat(&mut self, now: Duration, t: Transition, persistent: bool, lost_bytes: u64) {
        self.apply_careful_resume(now, t);
        let cwnd = self.cwnd;
        self.events.emit(|| CcEvent::Congestion {
            at: now,
            lost_bytes,
            cwnd_after: cwnd,
            persistent,
        });
    }

    /// C7-C9: RFC 9002's response: one reduction per recovery period (a drain is one until
    /// it ends, [`crate::startup::Startup::start_drain`]), and persistent congestion's collapse.
    fn respond_to_congestion(
        &mut self,
        now: Duration,
        sent: Duration,
        persistent: bool,
        lost_bytes: u64,
        before_losses: u64,
    ) {
        let in_recovery =
            self.startup.draining() || self.recovery_start.is_some_and(|start| sent <= start);
        if !in_recovery {
            self.reduce_window(now, persistent, lost_bytes, before_losses);
        }
        if persistent {
            // RFC 9002 Sec. 7.6.2: collapse to the minimum window; start over.
            self.checkpoint = None;
            self.recovery_start = Some(now);
            self.set_window(self.minimum_window() as f64);
            self.startup.on_persistent_congestion();
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
    }

    /// C8: a new recovery period and the avoidance's reduction, which ends the initial slow
    /// start. A reduction for lost packets in congestion avoidance may be undone when its
    /// recovery period ends; a mark, persistent congestion or the end of slow start may
    /// not ([`crate::rollback`]).
    fn reduce_window(
        &mut self,
        now: Duration,
        persistent: bool,
        lost_bytes: u64,
        before_losses: u64,
    ) {
        self.checkpoint = (self.rollback.is_some()
            && lost_bytes > 0
            && !persistent
            && self.startup.done()
            && !self.in_slow_start())
        .then(|| Checkpoint {
            cwnd: self.cwnd as f64 + self.cwnd_carry,
            ssthresh: self.ssthresh,
            avoidance: self.avoidance.clone(),
            lost_packets: before_losses,
        });
        self.recovery_start = Some(now);
        let before = self.cwnd;
        let ssthresh = self
            .avoidance
            .on_congestion(now, self.reduction_base(now), self.mss);
        self.reduced = true;
        self.ssthresh = ssthresh.max(self.minimum_window());
        self.set_window(self.ssthresh as f64);
        self.end_startup_by_loss(now, before);
    }
}
