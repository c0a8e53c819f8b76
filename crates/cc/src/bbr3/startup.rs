//! Startup and Drain (draft Sec. 5.3.1, 5.3.2): when the pipe is full, and when
//! Startup's queue is drained.

use std::time::Duration;

use super::{Bbr3, Bbr3State, DRAIN_MAX_ROUNDS};

impl Bbr3 {
    /// Sec. 5.3.1.3: a Startup round with at least `startup_full_loss_count` loss events
    /// and a loss rate above `loss_thresh` means the pipe is full.
    pub(super) fn check_startup_high_loss(&mut self) {
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

    /// `ResetFullBW`.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// `CheckFullBWReached` (Sec. 5.3.1.2).
    pub(super) fn check_full_bw_reached(&mut self) {
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
    pub(super) fn check_startup_done(&mut self) {
        if self.state == Bbr3State::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    pub(super) fn enter_startup(&mut self) {
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
    pub(super) fn check_drain_done(&mut self, now: Duration) {
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
}
