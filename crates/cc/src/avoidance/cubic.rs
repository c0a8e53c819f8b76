//! CUBIC congestion avoidance (RFC 9438).
//!
//! * Window function (Sec. 4.2): `W_cubic(t) = C * (t - K)^3 + W_max`, with
//!   `K = cbrt((W_max - cwnd_epoch) / C)`, windows in segments, `t` in seconds since the
//!   start of the current congestion-avoidance stage.
//! * Target (Sec. 4.4/4.5): `W_cubic(t + RTT)` clamped to `[cwnd, 1.5 cwnd]`; each
//!   acknowledged segment adds `(target - cwnd) / cwnd` segments.
//! * Reno-friendly region (Sec. 4.3): `W_est` starts at `cwnd_epoch` and grows by
//!   `alpha_cubic * segments_acked / cwnd`, `alpha_cubic = 3 (1 - beta) / (1 + beta)`
//!   until `W_est >= cwnd_prior`, then 1. When `W_cubic(t) < W_est`, `cwnd = W_est`.
//! * Multiplicative decrease (Sec. 4.6): `ssthresh = cwnd * beta_cubic` (0.7).
//! * Fast convergence (Sec. 4.7): if `cwnd < W_max` at a congestion event,
//!   `W_max = cwnd * (1 + beta) / 2`, else `W_max = cwnd`.
//! * Slow start ended without loss (Sec. 4.10, e.g. HyStart++ or SEARCH): `W_max` is
//!   undefined, so `cwnd_prior = W_max = cwnd` at the start of congestion avoidance and
//!   `K = 0`: the window grows smoothly from the exit window. (The seeds' quicly code
//!   leaves this state unset on a SEARCH exit; its window then explodes.)
//!
//! Every reduction stands: RFC 9438 Sec. 4.9.2's undo is for spurious losses, which quinn
//! does not report. quiche's undo of reductions that lost few packets is the controller
//! option `+rollback` ([`crate::rollback`]), outside the RFC.
//!
//! The stage starts (`t_epoch`) at the first acknowledgement processed in congestion
//! avoidance, i.e. after recovery ends, as in Linux and quinn; the RFC's "beginning of the
//! current congestion avoidance stage".
//!
//! # Options
//!
//! The spec name is `cubic`; it takes no options. The slow start is the part after `+`
//! (`classic` when none is given; see [`crate::spec`]). The constants are [`CubicConfig`]
//! fields, set with [`crate::AvoidanceConfig::Cubic`]:
//!
//! | field | meaning | default | source |
//! |---|---|---|---|
//! | [`CubicConfig::c`] | `C`: how fast the window grows away from `W_max`, segments / s^3 | 0.4 | RFC 9438 Sec. 4.1.1, 5.1 |
//! | [`CubicConfig::beta`] | `beta_cubic`: `ssthresh = cwnd x beta` on a congestion event; also sets `alpha_cubic` | 0.7 | RFC 9438 Sec. 4.6 |
//! | [`CubicConfig::fast_convergence`] | a congestion event below the previous `W_max` lowers `W_max` to `cwnd (1 + beta) / 2` | on | RFC 9438 Sec. 4.7 |
//! | [`CubicConfig::reno_friendly`] | the window follows `W_est` while `W_cubic(t) < W_est` | on | RFC 9438 Sec. 4.3 |

use std::time::Duration;

use super::{Avoidance, CaAck};

/// CUBIC constants (RFC 9438 Sec. 4.1 / 5). Defaults are the RFC's.
#[derive(Debug, Clone, PartialEq)]
pub struct CubicConfig {
    /// `C`, 0.4 segments / s^3.
    pub c: f64,
    /// `beta_cubic`, 0.7.
    pub beta: f64,
    /// Fast convergence on (Sec. 4.7).
    pub fast_convergence: bool,
    /// Reno-friendly region on (Sec. 4.3).
    pub reno_friendly: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        Self {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reno_friendly: true,
        }
    }
}

/// CUBIC avoidance state.
#[derive(Debug, Clone)]
pub struct Cubic {
    config: CubicConfig,
    /// `W_max` in bytes: window before the last reduction (after fast convergence).
    w_max: f64,
    /// `cwnd_prior` in bytes: window just before the last reduction.
    cwnd_prior: f64,
    /// `K` in seconds.
    k: f64,
    /// `t_epoch`: start of the current avoidance stage; `None` until its first ACK.
    epoch_start: Option<Duration>,
    /// `W_est` in bytes.
    w_est: f64,
}

impl Cubic {
    /// CUBIC with the given constants.
    pub fn new(config: CubicConfig) -> Self {
        Self {
            config,
            w_max: 0.0,
            cwnd_prior: 0.0,
            k: 0.0,
            epoch_start: None,
            w_est: 0.0,
        }
    }

    /// `alpha_cubic` of the Reno-friendly region.
    fn alpha(&self) -> f64 {
        3.0 * (1.0 - self.config.beta) / (1.0 + self.config.beta)
    }

    /// `W_cubic(t)` in bytes for `t` seconds into the stage.
    pub fn w_cubic(&self, t: f64, mss: f64) -> f64 {
        let d = t - self.k;
        self.config.c * mss * d * d * d + self.w_max
    }

    /// `K` in seconds, as computed at the start of the current stage.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// `W_max` in bytes.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// `t_epoch`, once the stage has started.
    pub fn epoch_start(&self) -> Option<Duration> {
        self.epoch_start
    }
}

impl Default for Cubic {
    fn default() -> Self {
        Self::new(CubicConfig::default())
    }
}

impl Avoidance for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_ack(&mut self, ack: &CaAck) -> f64 {
        let mss = ack.mss.max(1) as f64;
        let cwnd = ack.cwnd.max(mss);
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                // Start of a congestion-avoidance stage: cwnd_epoch = cwnd.
                self.epoch_start = Some(ack.now);
                if self.w_max < cwnd {
                    // No reduction happened (or W_max unknown): Sec. 4.10, K = 0.
                    self.w_max = cwnd;
                    self.k = 0.0;
                } else {
                    self.k = ((self.w_max - cwnd) / (self.config.c * mss)).cbrt();
                }
                if self.cwnd_prior <= 0.0 {
                    self.cwnd_prior = cwnd;
                }
                self.w_est = cwnd;
                ack.now
            }
        };
        let t = ack.now.saturating_sub(epoch).as_secs_f64();
        let rtt = ack.smoothed_rtt.as_secs_f64();
        let segments_acked = ack.bytes as f64 / mss;

        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            self.alpha()
        };
        self.w_est += alpha * segments_acked * mss * mss / cwnd;

        let w_cubic_t = self.w_cubic(t, mss);
        if self.config.reno_friendly && w_cubic_t < self.w_est {
            return self.w_est.max(cwnd);
        }
        let target = self.w_cubic(t + rtt, mss).clamp(cwnd, 1.5 * cwnd);
        cwnd + (target - cwnd) / cwnd * segments_acked * mss
    }

    fn on_congestion(&mut self, _now: Duration, cwnd: u64, _mss: u64) -> u64 {
        let cwnd = cwnd as f64;
        self.w_max = if self.config.fast_convergence && cwnd < self.w_max {
            cwnd * (1.0 + self.config.beta) / 2.0
        } else {
            cwnd
        };
        self.cwnd_prior = cwnd;
        self.epoch_start = None;
        (cwnd * self.config.beta) as u64
    }

    fn on_slow_start_exit(&mut self, _now: Duration, cwnd: u64, _mss: u64) {
        self.w_max = cwnd as f64;
        self.cwnd_prior = cwnd as f64;
        self.k = 0.0;
        self.epoch_start = None;
    }

    /// Sec. 4.2: "The elapsed time *t* [...] MUST NOT include periods during which *cwnd*
    /// has not been updated due to application-limited behavior": the stage's start moves
    /// later by the pause, as Linux's `bictcp_cwnd_event` moves its `epoch_start`.
    fn on_application_limited(&mut self, paused: Duration) {
        if let Some(start) = self.epoch_start.as_mut() {
            *start += paused;
        }
    }

    fn reset(&mut self) {
        *self = Self::new(self.config.clone());
    }

    fn clone_box(&self) -> Box<dyn Avoidance> {
        Box::new(self.clone())
    }
}
