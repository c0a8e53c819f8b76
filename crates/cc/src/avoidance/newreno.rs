//! NewReno congestion avoidance and decrease as in RFC 9002 Sec. 7.3 and Appendix B.5:
//! `cwnd += max_datagram_size * acked_bytes / cwnd` per acknowledged packet, and
//! `ssthresh = cwnd * kLossReductionFactor` (0.5) on a congestion event.
//!
//! # Options
//!
//! The spec name is `newreno` (alias `reno`). The slow start is the part after `+`
//! (`classic` when none is given; see [`crate::spec`]). The one constant is a field and a
//! spec option:
//!
//! | option | field | meaning | default | source |
//! |---|---|---|---|---|
//! | `loss-reduction=F` | [`NewRenoAvoidance::loss_reduction_factor`] | `kLossReductionFactor`: `ssthresh = cwnd x factor` on a congestion event | 0.5 ([`LOSS_REDUCTION_FACTOR`]) | RFC 9002 Sec. 7.3.2, Appendix B.1 |
//!
//! quicly's Reno, which the seeds' qperf runs used (seed 000 Sec. 2.4), is this algorithm
//! with 0.7 (`QUICLY_RENO_BETA` in quicly's `include/quicly/cc.h`): `newreno:loss-reduction=0.7`.

use std::time::Duration;

use super::{Avoidance, CaAck};

/// RFC 9002 `kLossReductionFactor`.
pub const LOSS_REDUCTION_FACTOR: f64 = 0.5;

/// NewReno avoidance (RFC 9002).
#[derive(Debug, Clone, PartialEq)]
pub struct NewRenoAvoidance {
    /// `kLossReductionFactor`, 0.5.
    pub loss_reduction_factor: f64,
}

impl Default for NewRenoAvoidance {
    fn default() -> Self {
        Self {
            loss_reduction_factor: LOSS_REDUCTION_FACTOR,
        }
    }
}

impl Avoidance for NewRenoAvoidance {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn on_ack(&mut self, ack: &CaAck) -> f64 {
        let cwnd = ack.cwnd.max(1.0);
        cwnd + ack.mss as f64 * ack.bytes as f64 / cwnd
    }

    fn on_congestion(&mut self, _now: Duration, cwnd: u64, _mss: u64) -> u64 {
        (cwnd as f64 * self.loss_reduction_factor) as u64
    }

    fn on_slow_start_exit(&mut self, _now: Duration, _cwnd: u64, _mss: u64) {}

    fn reset(&mut self) {}

    fn clone_box(&self) -> Box<dyn Avoidance> {
        Box::new(self.clone())
    }
}
