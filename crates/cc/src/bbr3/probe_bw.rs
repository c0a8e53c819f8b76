//! ProbeBW (draft Sec. 5.3.3): the DOWN, CRUISE, REFILL and UP cycle, and the long-term
//! bound `inflight_hi` the probes adapt (Sec. 5.3.3.9, 5.5.10.2).

use std::time::Duration;

use rand_chacha::rand_core::Rng;

use super::{AckPhase, Bbr3, Bbr3State};

impl Bbr3 {
    pub(super) fn start_probe_bw_down(&mut self, now: Duration) {
        self.reset_congestion_signals();
        self.probe_up_cnt = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.state = Bbr3State::ProbeBwDown;
        self.pacing_gain = self.config.down_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    pub(super) fn start_probe_bw_cruise(&mut self) {
        self.state = Bbr3State::ProbeBwCruise;
        self.pacing_gain = self.config.cruise_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    fn start_probe_bw_refill(&mut self) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.state = Bbr3State::ProbeBwRefill;
        self.pacing_gain = self.config.cruise_pacing_gain;
        self.cwnd_gain = self.config.cwnd_gain;
    }

    fn start_probe_bw_up(&mut self) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = self.rs.delivery_rate;
        self.state = Bbr3State::ProbeBwUp;
        self.pacing_gain = self.config.up_pacing_gain;
        self.cwnd_gain = self.config.up_cwnd_gain;
        self.raise_inflight_hi_slope();
    }

    /// `PickProbeWait` (Sec. 5.3.3.8.3): 0 or 1 rounds already counted, and a wait of
    /// `probe_wait_base` plus up to `probe_wait_random`, both from the seeded stream.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_bw_probe = self.rng.next_u64() & 1;
        let unit = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.bw_probe_wait =
            self.config.probe_wait_base + self.config.probe_wait_random.mul_f64(unit);
    }

    /// `UpdateProbeBWCyclePhase`.
    pub(super) fn update_probe_bw_cycle_phase(&mut self, now: Duration) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model() {
            return;
        }
        if !self.state.is_probe_bw() {
            return;
        }
        match self.state {
            Bbr3State::ProbeBwDown => {
                if self.is_time_to_probe_bw(now) {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            Bbr3State::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            Bbr3State::ProbeBwRefill if self.round_start => {
                self.bw_probe_samples = true;
                self.start_probe_bw_up();
                return;
            }
            _ => {}
        }
        if self.state == Bbr3State::ProbeBwUp && self.is_time_to_go_down() {
            self.prev_probe_too_high = false;
            self.start_probe_bw_down(now);
        }
    }

    /// `IsTimeToCruise`.
    fn is_time_to_cruise(&self) -> bool {
        if self.in_flight > self.inflight_with_headroom() {
            return false;
        }
        self.in_flight <= self.inflight(self.max_bw, 1.0)
    }

    /// `IsTimeToGoDown`.
    fn is_time_to_go_down(&mut self) -> bool {
        // Precautionary bandwidth probing, deceleration (Sec. 5.3.3.6): the last probe
        // lost too much at `inflight_hi`, so this one stops when it gets there.
        if self.prev_probe_too_high && self.in_flight >= self.inflight_hi {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_hi {
            self.reset_full_bw();
            self.full_bw = self.rs.delivery_rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// `IsTimeToProbeBW`: starts REFILL when it is.
    fn is_time_to_probe_bw(&mut self, now: Duration) -> bool {
        if now > self.cycle_stamp + self.bw_probe_wait || self.is_reno_coexistence_probe_time() {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// `IsRenoCoexistenceProbeTime`: a Reno flow would have grown its window by the
    /// BDP in packets by now.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = self.target_inflight() / self.mss;
        self.rounds_since_bw_probe >= reno_rounds.min(self.config.reno_max_rounds)
    }

    /// `TargetInflight`.
    fn target_inflight(&self) -> u64 {
        self.bdp_multiple(self.bw, 1.0).min(self.cwnd)
    }

    /// `AdaptLongTermModel` (Sec. 5.3.3.9): true when it started a new phase. A sample
    /// that lost too much raises nothing here; the loss itself is handled per lost packet
    /// (`handle_lost`, Sec. 5.5.10.2), as -06 does (-02 also reacted on the ACK).
    fn adapt_long_term_model(&mut self) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            // The first ACKs of the probe's own packets.
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // End of the probe's aftermath: a new cycle for the max-bw filter, once. -06
            // leaves this phase here (`ACKS_INIT`) and stops treating samples as probe
            // samples; -04 did neither, so the filter advanced on every round of DOWN
            // and CRUISE (`max_bw` became a two-round maximum) and a random loss in
            // CRUISE could still set `inflight_hi`.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !self.rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // Precautionary bandwidth probing, acceleration (Sec. 5.3.3.6): the short
            // probe after a lossy one lost little, so probe again, fully.
            if self.state.is_probe_bw()
                && self.prev_probe_precautionary
                && !self.prev_probe_too_high
            {
                self.start_probe_bw_refill();
                return true;
            }
        }
        if self.is_inflight_too_high(self.rs.lost, self.rs.tx_in_flight) {
            return false;
        }
        if self.inflight_hi == u64::MAX {
            return false;
        }
        if self.rs.tx_in_flight > self.inflight_hi {
            self.inflight_hi = self.rs.tx_in_flight;
        }
        if self.state == Bbr3State::ProbeBwUp {
            self.probe_inflight_hi_upward();
        }
        false
    }

    /// `IsInflightTooHigh`: the sample lost more than `loss_thresh` of what was in flight.
    fn is_inflight_too_high(&self, lost: u64, tx_in_flight: u64) -> bool {
        lost as f64 > tx_in_flight as f64 * self.config.loss_thresh
    }

    /// `HandleInflightTooHigh`: the probe found the volume the path drops at.
    fn handle_inflight_too_high(&mut self, now: Duration, tx_in_flight: u64, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !app_limited {
            let floor = (self.target_inflight() as f64 * self.config.beta) as u64;
            self.inflight_hi = tx_in_flight.max(floor);
        }
        if self.state == Bbr3State::ProbeBwUp {
            self.start_probe_bw_down(now);
        }
    }

    /// `HandleLostPacket` (Sec. 5.5.10.2) for quinn's loss event: the newest lost
    /// packet's record stands for the lost packets.
    pub(super) fn handle_lost(&mut self, now: Duration, sent: Duration, lost_bytes: u64) {
        if !self.bw_probe_samples {
            return;
        }
        let idx = self.records.partition_point(|r| r.sent < sent);
        let Some(record) = self.records.get(idx).filter(|r| r.sent == sent).copied() else {
            return;
        };
        let lost = self.lost - record.lost;
        if self.is_inflight_too_high(lost, record.tx_in_flight) {
            // `InflightAtLoss`: the inflight at which the loss rate crossed
            // the threshold, assuming the losses came last.
            let size = lost_bytes.min(record.tx_in_flight);
            let inflight_prev = (record.tx_in_flight - size) as f64;
            let lost_prev = lost.saturating_sub(size) as f64;
            let thresh = self.config.loss_thresh;
            let lost_prefix = ((thresh * inflight_prev - lost_prev) / (1.0 - thresh)).max(0.0);
            let inflight = (inflight_prev + lost_prefix) as u64;
            self.handle_inflight_too_high(now, inflight, record.app_limited);
        }
    }

    /// `ProbeInflightLongtermUpward`: grow `inflight_hi` 1, 2, 4... segments per round.
    fn probe_inflight_hi_upward(&mut self) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += self.rs.newly_acked;
        if self.bw_probe_up_acks >= self.probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    /// `RaiseInflightLongtermSlope`.
    fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        // Bytes acknowledged per segment of growth.
        self.probe_up_cnt = (self.cwnd / growth_this_round).max(self.mss);
    }
}
