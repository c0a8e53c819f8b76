//! Whether the path shows a queue, told apart from its jitter: the lower envelope of the
//! latest RTT samples (the smallest of the last few batches') against the connection's
//! minimum RTT. A queue raises every sample, so it lifts the envelope; per-packet jitter (a
//! LEO path's several ms on 20-40 ms) spreads the samples above the envelope and leaves the
//! envelope near the minimum.
//!
//! | constant | value | source |
//! |---|---|---|
//! | [`ENVELOPE_SAMPLES`] | 8 batches | ours: the smallest of a few samples is the path's RTT without its jitter |
//! | [`QUEUE_FRACTION`] | 1/8 of the minimum RTT | [`crate::loss_filter::LOSS_FILTER_QUEUE_FRACTION`]'s reading: half the smallest queue of satquic's GEO paths, above a LEO path's envelope noise |
//!
//! The minimum is the connection's, not a windowed one: a window held at a standing queue
//! for longer than such a window (BBR's 10 s) would make the queue the base, and BBR's
//! ProbeRTT, which drains it to measure again, has no counterpart here. A step up in the
//! path's own delay therefore reads as a queue.

use std::time::Duration;

pub use crate::loss_filter::LOSS_FILTER_QUEUE_FRACTION as QUEUE_FRACTION;

/// How many of the latest batches' RTTs the envelope is the smallest of (ours).
pub const ENVELOPE_SAMPLES: usize = 8;

/// The envelope of the latest RTT samples. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct PathRtt {
    /// The latest batches' RTTs, a ring; `next` is the oldest once full.
    recent: [Option<Duration>; ENVELOPE_SAMPLES],
    next: usize,
}

impl PathRtt {
    /// A batch of acknowledgements ended with the RTT sample `latest`.
    pub(crate) fn on_sample(&mut self, latest: Duration) {
        if latest.is_zero() {
            return;
        }
        self.recent[self.next] = Some(latest);
        self.next = (self.next + 1) % ENVELOPE_SAMPLES;
    }

    /// The smallest RTT of the latest [`ENVELOPE_SAMPLES`] batches.
    fn envelope(&self) -> Option<Duration> {
        self.recent.iter().flatten().min().copied()
    }

    /// Whether the latest samples show a queue on a path whose minimum RTT is `min`: their
    /// envelope above it by more than [`QUEUE_FRACTION`] of it.
    pub(crate) fn shows_queue(&self, min: Duration) -> bool {
        self.envelope().is_some_and(|envelope| {
            envelope.saturating_sub(min).as_secs_f64() > QUEUE_FRACTION * min.as_secs_f64()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    fn fed(n: u32, rtt: impl Fn(u32) -> f64) -> PathRtt {
        let mut p = PathRtt::default();
        for i in 0..n {
            p.on_sample(ms(rtt(i)));
        }
        p
    }

    #[test]
    fn jitter_shows_no_queue_and_a_queue_does() {
        // 30 ms of minimum with up to 12 ms of jitter, spread over every 13 batches.
        let jitter = |i: u32| f64::from((i * 5) % 13);
        assert!(!fed(400, |i| 30.0 + jitter(i)).shows_queue(ms(30.0)));
        // The same jitter on a queue that grows by 0.05 ms a batch (20 ms in 400).
        let queued = fed(400, |i| 30.0 + jitter(i) + 0.05 * f64::from(i));
        assert!(queued.shows_queue(ms(30.0)));
        // A standing queue stays a queue however long it stands.
        assert!(fed(100_000, |_| 45.0).shows_queue(ms(30.0)));
    }

    #[test]
    fn nothing_is_read_before_a_sample() {
        let mut p = PathRtt::default();
        p.on_sample(Duration::ZERO);
        assert!(!p.shows_queue(ms(30.0)));
    }
}
