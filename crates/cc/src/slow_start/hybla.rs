//! Hybla slow start (C. Caini, R. Firrincieli, "TCP Hybla: a TCP enhancement for
//! heterogeneous networks", Int. J. Satellite Communications and Networking, 2004;
//! SEEDS.md "Other slow starts"): the growth is scaled so that a long-RTT flow opens its
//! window as fast, in time, as a reference flow with RTT `RTT0` = 25 ms.
//!
//! `rho = max(RTT / RTT0, 1)`, and each acknowledged segment grows the window by
//! `2^rho - 1` segments (byte-counted: `(2^rho - 1) * bytes`). On GEO (`rho` = 24) this
//! opens the window almost at once; Hybla relies on pacing to spread the burst, which
//! quinn's pacer provides. The increase saturates rather than overflows.
//!
//! # Options
//!
//! | option | meaning | default | source |
//! |---|---|---|---|
//! | `rtt0=MS` (`+hybla:rtt0=MS`) | the reference RTT `RTT0` ([`SlowStartConfig::Hybla`]), milliseconds | 25 ms ([`HYBLA_RTT0`]) | Caini & Firrincieli 2004; Linux `tcp_hybla.c` `rtt0` |
//!
//! `hybla` with no slow start named runs this one with the avoidance's `RTT0`
//! (`hybla:rtt0=MS`); a slow start named `+hybla` has its own, 25 ms unless given
//! ([`crate::avoidance::hybla`]).
//!
//! [`SlowStartConfig::Hybla`]: super::SlowStartConfig::Hybla

use std::time::Duration;

use super::{AckSample, SlowStart, SsDecision};
use crate::event::Emitter;

/// Hybla's reference RTT, 25 ms (Caini & Firrincieli, Sec. 3).
pub const HYBLA_RTT0: Duration = Duration::from_millis(25);

/// Hybla slow start; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HyblaSlowStart {
    /// Reference RTT (`RTT0`).
    rtt0: Duration,
}

impl HyblaSlowStart {
    /// Hybla slow start with reference RTT `rtt0` (the paper's value is [`HYBLA_RTT0`]).
    pub fn new(rtt0: Duration) -> Self {
        Self { rtt0 }
    }

    /// The normalized RTT `rho = max(rtt / rtt0, 1)`.
    pub fn rho(rtt: Duration, rtt0: Duration) -> f64 {
        if rtt0.is_zero() {
            return 1.0;
        }
        (rtt.as_secs_f64() / rtt0.as_secs_f64()).max(1.0)
    }
}

impl Default for HyblaSlowStart {
    fn default() -> Self {
        Self::new(HYBLA_RTT0)
    }
}

impl SlowStart for HyblaSlowStart {
    fn name(&self) -> &'static str {
        "hybla"
    }

    fn on_ack(&mut self, ack: &AckSample, _events: &Emitter) -> SsDecision {
        // Hybla uses the smoothed RTT once one exists; the minimum RTT would under-scale
        // when the first sample is inflated by the handshake.
        let rho = Self::rho(ack.smoothed_rtt, self.rtt0);
        let factor = rho.exp2() - 1.0;
        let increase = (factor * ack.bytes as f64).min(u64::MAX as f64 / 4.0) as u64;
        SsDecision::Grow { increase }
    }

    fn reset(&mut self) {}

    fn clone_box(&self) -> Box<dyn SlowStart> {
        Box::new(*self)
    }

    fn state_size(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}
