//! ProbeRTT and the min-RTT estimate (draft Sec. 5.3.4), and the restart from idle
//! (Sec. 5.4).

use std::time::Duration;

use super::{AckPhase, Bbr3, Bbr3State};

impl Bbr3 {
    /// `UpdateMinRTT` (Sec. 5.3.4.3). A sample equal to `probe_rtt_min_delay`
    /// refreshes it (Linux BBRv3's `<=`; the draft writes `<`): it shows the queue is as
    /// empty as at the minimum, and on a path with a constant propagation delay a strict
    /// comparison would enter ProbeRTT every 5 s however empty the queue.
    ///
    /// Neither estimate expires before Drain ends (with `check_probe_rtt`'s deviation): on
    /// a 600 ms path Startup can last as long as the filter, and an expiry would adopt an
    /// RTT sample inflated by Startup's own queue as `min_rtt`, doubling the BDP estimate
    /// (seen in this module's tests when Drain straddled the 10 s `MinRTTFilterLen`).
    pub(super) fn update_min_rtt(&mut self, now: Duration) {
        let starting = matches!(self.state, Bbr3State::Startup | Bbr3State::Drain);
        self.probe_rtt_expired =
            !starting && now > self.probe_rtt_min_stamp + self.probe_rtt_interval();
        if let Some(rtt) = self.rs.rtt
            && (self.probe_rtt_min_delay.is_none_or(|d| rtt <= d) || self.probe_rtt_expired)
        {
            self.probe_rtt_min_delay = Some(rtt);
            self.probe_rtt_min_stamp = now;
        }
        let min_rtt_expired =
            !starting && now > self.min_rtt_stamp + self.config.min_rtt_filter_len;
        if let Some(d) = self.probe_rtt_min_delay
            && (self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired)
        {
            self.min_rtt = Some(d);
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
    }

    /// `CheckProbeRTT`, not before Startup and Drain are over: a deviation from the
    /// draft, which enters ProbeRTT from any state. On a 600 ms path Startup and Drain
    /// last longer than the 5 s `ProbeRTTInterval`; the draft's ProbeRTT then interrupts
    /// Startup, which resumes with its queue rebuilt at 1.2 s rounds and exits seconds
    /// later, and the next ProbeRTT falls into Drain (on thesis-sat ProbeBW then begins
    /// about twice as late; BENCHMARKS.md, "BBRv3"). Startup's queue is drained by Drain,
    /// which is what ProbeRTT would do.
    pub(super) fn check_probe_rtt(&mut self, now: Duration) {
        if self.state != Bbr3State::ProbeRtt
            && self.probe_rtt_expired
            && !self.idle_restart
            && !matches!(self.state, Bbr3State::Startup | Bbr3State::Drain)
        {
            // `EnterProbeRTT`.
            self.state = Bbr3State::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = self.config.probe_rtt_cwnd_gain;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == Bbr3State::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        if self.rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `HandleProbeRTT`.
    fn handle_probe_rtt(&mut self, now: Duration) {
        // Samples taken at ProbeRTT's low inflight say nothing of the bandwidth.
        self.mark_app_limited();
        match self.probe_rtt_done_stamp {
            None if self.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + self.config.probe_rtt_duration);
                self.probe_rtt_round_done = false;
                self.start_round();
            }
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
            None => {}
        }
    }

    /// `CheckProbeRTTDone`.
    fn check_probe_rtt_done(&mut self, now: Duration) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            // Schedule the next ProbeRTT.
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            // `ExitProbeRTT`.
            self.reset_lower_bounds();
            if self.full_bw_reached {
                self.start_probe_bw_down(now);
                self.start_probe_bw_cruise();
            } else {
                self.enter_startup();
            }
        }
    }

    /// `ProbeRTTCwnd`.
    pub(super) fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, self.config.probe_rtt_cwnd_gain)
            .max(self.min_pipe_cwnd())
    }

    /// `HandleRestartFromIdle` (Sec. 5.4).
    pub(super) fn handle_restart_from_idle(&mut self, now: Duration) {
        self.idle_restart = true;
        self.extra_acked_interval_start = now;
        if self.state.is_probe_bw() {
            self.set_pacing_rate_with_gain(1.0);
        } else if self.state == Bbr3State::ProbeRtt {
            self.check_probe_rtt_done(now);
        }
    }

    pub(super) fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.recovery_start.is_none() && self.state != Bbr3State::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }
}
