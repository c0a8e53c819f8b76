//! BBR's model of the path (draft Sec. 5.5): round counting, the max-bw filter, the
//! latest delivery signals and the lower bounds (`bw_lo`, `inflight_lo`) learned from
//! loss, and the extra-acked (ACK aggregation) estimate. The long-term bound `inflight_hi`
//! is adapted by ProbeBW ([`super::probe_bw`]); `min_rtt` by ProbeRTT ([`super::probe_rtt`]).

use std::time::Duration;

use super::Bbr3;

/// A windowed maximum over the last `len` intervals (rounds or ProbeBW cycles), for the
/// max-bw (Sec. 5.5.3) and extra-acked (Sec. 5.5.9) filters.
#[derive(Debug, Clone)]
pub(super) struct WindowedMax {
    slots: Vec<f64>,
    index: u64,
}

impl WindowedMax {
    pub(super) fn new(len: u32) -> Self {
        Self {
            slots: vec![0.0; len.max(1) as usize],
            index: 0,
        }
    }

    /// Moves to interval `index`, forgetting intervals that left the window.
    pub(super) fn advance_to(&mut self, index: u64) {
        let len = self.slots.len() as u64;
        let steps = index.saturating_sub(self.index).min(len);
        for i in 1..=steps {
            let slot = ((self.index + i) % len) as usize;
            self.slots[slot] = 0.0;
        }
        self.index = self.index.max(index);
    }

    pub(super) fn update(&mut self, index: u64, value: f64) {
        self.advance_to(index);
        let slot = (self.index % self.slots.len() as u64) as usize;
        if value > self.slots[slot] {
            self.slots[slot] = value;
        }
    }

    pub(super) fn get(&self) -> f64 {
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

impl Bbr3 {
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
    pub(super) fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    /// `BBR.is_cwnd_limited`: the window limited sending in this or the last round.
    pub(super) fn is_cwnd_limited(&self) -> bool {
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
    pub(super) fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
        self.max_bw_filter.advance_to(self.cycle_count);
        self.max_bw = self.max_bw_filter.get();
    }

    /// `UpdateLatestDeliverySignals` (Sec. 5.5.10.3).
    pub(super) fn update_latest_delivery_signals(&mut self) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(self.rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(self.rs.delivered);
        if self.rs.has_record && self.rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    /// `AdvanceLatestDeliverySignals`.
    pub(super) fn advance_latest_delivery_signals(&mut self) {
        if self.loss_round_start {
            self.bw_latest = self.rs.delivery_rate;
            self.inflight_latest = self.rs.delivered;
        }
    }

    /// `UpdateCongestionSignals`, with Startup's high-loss exit (Sec. 5.3.1.3) checked
    /// on the round's totals before they are reset.
    pub(super) fn update_congestion_signals(&mut self) {
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
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = u64::MAX;
    }

    /// `ResetCongestionSignals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    /// `BoundBWForModel`.
    pub(super) fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.min(self.bw_lo);
    }

    /// `UpdateACKAggregation` (Sec. 5.5.9).
    pub(super) fn update_ack_aggregation(&mut self, now: Duration) {
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
}
