//! Hybla congestion avoidance (Caini & Firrincieli 2004, Sec. 3): each acknowledged
//! segment grows the window by `rho^2 / cwnd` segments, `rho = max(RTT / RTT0, 1)`, so a
//! long-RTT flow gains `rho^2` segments per RTT, i.e. as much per unit of time as a
//! reference flow with RTT `RTT0`. The decrease is Reno's halving.
//!
//! # Options
//!
//! The spec name is `hybla`; without a `+SLOWSTART` it brings Hybla's own slow start
//! ([`crate::slow_start::hybla`]) with the same `RTT0`, otherwise the slow start named.
//!
//! | option | meaning | default | source |
//! |---|---|---|---|
//! | `rtt0=MS` (`hybla:rtt0=MS`) | [`HyblaAvoidance::rtt0`]: the reference RTT `RTT0`, milliseconds | 25 ms ([`HYBLA_RTT0`](crate::slow_start::HYBLA_RTT0)) | Caini & Firrincieli 2004; Linux `tcp_hybla.c` `rtt0` |
//!
//! `hybla:rtt0=MS` sets the slow start's `RTT0` only when no slow start is named:
//! `hybla:rtt0=50+hybla` gives the avoidance 50 ms and the slow start its default 25 ms
//! (write `hybla:rtt0=50+hybla:rtt0=50`). The decrease factor is a field, for a
//! [`crate::Controller`] built by hand; [`crate::CongestionConfig`] uses 0.5:
//!
//! | field | meaning | default | source |
//! |---|---|---|---|
//! | [`HyblaAvoidance::loss_reduction_factor`] | `ssthresh = cwnd x factor` on a congestion event | 0.5 | Reno's halving, as Linux `tcp_hybla.c` (`tcp_reno_ssthresh`) |

use std::time::Duration;

use super::{Avoidance, CaAck};
use crate::slow_start::HyblaSlowStart;

/// Hybla avoidance.
#[derive(Debug, Clone, PartialEq)]
pub struct HyblaAvoidance {
    /// Reference RTT `RTT0` (25 ms).
    pub rtt0: Duration,
    /// Multiplicative decrease factor (Reno: 0.5).
    pub loss_reduction_factor: f64,
}

impl HyblaAvoidance {
    /// Hybla avoidance with reference RTT `rtt0`.
    pub fn new(rtt0: Duration) -> Self {
        Self {
            rtt0,
            loss_reduction_factor: 0.5,
        }
    }
}

impl Avoidance for HyblaAvoidance {
    fn name(&self) -> &'static str {
        "hybla"
    }

    fn on_ack(&mut self, ack: &CaAck) -> f64 {
        let rho = HyblaSlowStart::rho(ack.smoothed_rtt, self.rtt0);
        let cwnd = ack.cwnd.max(1.0);
        cwnd + rho * rho * ack.mss as f64 * ack.bytes as f64 / cwnd
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
