//! Hand-built acknowledgements for driving a slow start directly, without a controller.

use std::time::Duration;

use satquic_cc::AckSample;

use super::MSS;

/// An ACK of `bytes` whose RTT sample `rtt` is also the minimum and the smoothed RTT, with a
/// window of 1 MB.
pub fn ack(now: Duration, bytes: u64, rtt: Duration) -> AckSample {
    AckSample {
        now,
        bytes,
        rtt,
        min_rtt: rtt,
        unloaded_rtt: rtt,
        smoothed_rtt: rtt,
        app_limited: false,
        cwnd: 1_000_000,
        mss: MSS,
        growth_per_rtt: 2.0,
    }
}
