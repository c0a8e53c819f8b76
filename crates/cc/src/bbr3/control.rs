//! BBR's outputs (draft Sec. 5.6): the pacing rate, the send quantum and the congestion
//! window, with the inflight volumes they derive from.

use super::{Bbr3, Bbr3State, SEND_QUANTUM_INTERVAL};

impl Bbr3 {
    /// The smallest cwnd, bytes (Sec. 5.6.4.1).
    pub(super) fn min_pipe_cwnd(&self) -> u64 {
        self.config.min_pipe_cwnd_segments * self.mss
    }

    /// `SetPacingRateWithGain` (Sec. 5.6.2).
    pub(super) fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = gain * self.bw * (100.0 - self.config.pacing_margin_percent) / 100.0;
        if rate > 0.0 && (self.full_bw_reached || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    pub(super) fn set_pacing_rate(&mut self) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
    }

    /// `SetSendQuantum` (Sec. 5.6.3).
    pub(super) fn set_send_quantum(&mut self) {
        let quantum = (self.pacing_rate * SEND_QUANTUM_INTERVAL.as_secs_f64()) as u64;
        self.send_quantum =
            quantum.clamp(2 * self.mss, self.config.send_quantum_max.max(2 * self.mss));
        if let Some(floor) = self.long_rtt_quantum() {
            // `quanta` (long_rtt.rs): Startup's bursts on a long path.
            self.send_quantum = self.send_quantum.max(floor);
        }
    }

    /// `BDPMultiple`: `gain x bw x min_rtt`, the initial cwnd before an RTT is known.
    pub(super) fn bdp_multiple(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => self.initial_cwnd,
            Some(rtt) => (gain * bw * rtt.as_secs_f64()) as u64,
        }
    }

    /// `QuantizationBudget` (Sec. 5.6.4.2).
    fn quantization_budget(&self, inflight: u64) -> u64 {
        let offload_budget = 3 * self.send_quantum;
        let mut inflight = inflight.max(offload_budget).max(self.min_pipe_cwnd());
        if self.state == Bbr3State::ProbeBwUp {
            inflight += 2 * self.mss;
        }
        inflight
    }

    /// `Inflight`.
    pub(super) fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// `InflightWithHeadroom` (Sec. 5.3.3.9).
    pub(super) fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_hi == u64::MAX {
            return u64::MAX;
        }
        let headroom = ((self.config.headroom * self.inflight_hi as f64) as u64).max(self.mss);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(self.min_pipe_cwnd())
    }

    /// `SetCwnd` (Sec. 5.6.4.6) with `BoundCwndForModel` (Sec. 5.6.4.7).
    pub(super) fn set_cwnd(&mut self) {
        // `UpdateMaxInflight`.
        let inflight = self.bdp_multiple(self.bw, self.cwnd_gain) + self.extra_acked;
        self.max_inflight = self.quantization_budget(inflight);
        let acked = self.rs.newly_acked;
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + acked).min(self.max_inflight);
        } else if self.cwnd < self.max_inflight || self.delivered < self.initial_cwnd {
            self.cwnd += acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        // `BoundCwndForProbeRTT`.
        if self.state == Bbr3State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // `BoundCwndForModel`.
        let mut cap = if self.state.is_probe_bw() && self.state != Bbr3State::ProbeBwCruise {
            self.inflight_hi
        } else if matches!(self.state, Bbr3State::ProbeRtt | Bbr3State::ProbeBwCruise) {
            self.inflight_with_headroom()
        } else {
            u64::MAX
        };
        cap = cap.min(self.inflight_lo).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }
}
