//! Pacing the jump (RFC 9959 Sec. 3.3, 4.3.2): what the RFC requires, and the credit
//! through which the controller's window releases the jump at `jump_cwnd / RTT` (see the
//! module docs, *Pacing*).

use std::time::Duration;

/// The pacing Careful Resume requires while unvalidated packets are sent (Sec. 3.3,
/// 4.3.2): `ITT = current RTT x MPS / jump_cwnd`, bursts of at most `max_burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacingRequirement {
    /// `jump_cwnd / rtt`, bytes per second.
    pub rate_bytes_per_sec: f64,
    /// Largest burst in bytes (the IW unless configured).
    pub max_burst: u64,
    /// The jump window the rate derives from.
    pub jump_cwnd: u64,
    /// The current RTT the rate derives from.
    pub rtt: Duration,
}

impl PacingRequirement {
    /// The inter-packet transmission time for a packet of `bytes` (Sec. 4.3.2 ITT).
    pub fn interval(&self, bytes: u64) -> Duration {
        if self.jump_cwnd == 0 {
            return Duration::ZERO;
        }
        self.rtt.mul_f64(bytes as f64 / self.jump_cwnd as f64)
    }
}

/// The credit that releases the jump in the Unvalidated Phase: `max_burst` at the jump,
/// then `jump_cwnd` per current RTT (Sec. 4.3.2's rhythm). The controller's window lets
/// out only the credit not yet used ([`super::CarefulResume::window`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct JumpPacer {
    /// Bytes the pacing allows since the jump (burst + rate x time).
    credit: f64,
    /// Bytes sent since the jump.
    sent: u64,
    /// When the credit was last brought up to date.
    at: Duration,
}

impl JumpPacer {
    pub(super) fn new() -> Self {
        Self {
            credit: 0.0,
            sent: 0,
            at: Duration::ZERO,
        }
    }

    /// The jump at `now`: a credit of one burst of `max_burst` bytes.
    pub(super) fn start(&mut self, now: Duration, max_burst: u64) {
        self.credit = max_burst as f64;
        self.sent = 0;
        self.at = now;
    }

    /// Adds the credit earned until `now` at `jump_cwnd` bytes per `rtt`.
    pub(super) fn advance(&mut self, now: Duration, jump_cwnd: u64, rtt: Duration) {
        if now > self.at {
            let dt = (now - self.at).as_secs_f64();
            self.credit += jump_cwnd as f64 * dt / rtt.as_secs_f64();
            self.at = now;
        }
    }

    /// `bytes` were sent.
    pub(super) fn on_sent(&mut self, bytes: u64) {
        self.sent = self.sent.saturating_add(bytes);
    }

    /// Credit not used yet, bytes.
    pub(super) fn unsent(&self) -> u64 {
        (self.credit - self.sent as f64).max(0.0) as u64
    }
}
