//! Whether the path shows a queue, told apart from its jitter: the lower envelope of the
//! latest RTT samples (the smallest of the last few batches') against the connection's
//! minimum RTT. A queue raises every sample, so it lifts the envelope; per-packet jitter (a
//! LEO path's several ms on 20-40 ms) spreads the samples above the envelope and leaves the
//! envelope near the minimum.
//!
//! It also keeps the path's RTT before the connection loaded it (`PathRtt::unloaded`):
//! the mean of the first samples taken while little was in flight. Per-packet jitter delays
//! the ACKs of a window by its mean, not its minimum, so a window of the path's rate x the
//! minimum RTT leaves a jittery path idle, and bytes acknowledged now were sent a mean RTT
//! ago. The start-up's ceiling sizes the window by it and SEARCH looks back by it under a
//! start-up growth (`lookback=auto`): on a path without jitter it is the minimum. How far it
//! is above the minimum, no more than the samples' successive steps show, is the path's own
//! jitter (`PathRtt::jitter`), which the start-up's queueing-delay bound does not read as
//! queueing ([`crate::jump`]).
//!
//! | constant | value | source |
//! |---|---|---|
//! | [`ENVELOPE_SAMPLES`] | 8 batches | ours: the smallest of a few samples is the path's RTT without its jitter |
//! | [`QUEUE_FRACTION`] | 1/8 of the minimum RTT | [`crate::loss_filter::LOSS_FILTER_QUEUE_FRACTION`]'s reading: half the smallest queue of satquic's GEO paths, above a LEO path's envelope noise |
//! | [`UNLOADED_SAMPLES`] | 32 batches | ours: with the mean of at most 16 samples of flights up to 2 initial windows SEARCH under 3x growth still exited falsely on 18 of 50 timelines with +-40 % jitter, with 32 of flights up to 4 on 2 of 30 (`tests/search_timelines.rs`) |
//! | [`JITTER_PER_STEP`] | 1 mean step between successive unloaded samples | ours: two thirds of a uniform jitter's mean above the minimum |
//! | [`JITTER_MIN_FRACTION`] | 1/32 of the minimum RTT | ours: a GEO path's samples spread by their own bursts' queue |
//! | [`UNLOADED_FLIGHT_WINDOWS`] | 4 initial windows in flight | ours: 48 kB, a queue of 4 ms at 100 Mbit/s; a window a long-RTT floor or a jump raised is larger, so GEO paths keep the minimum |
//!
//! The minimum is the connection's, not a windowed one: a window held at a standing queue
//! for longer than such a window (BBR's 10 s) would make the queue the base, and BBR's
//! ProbeRTT, which drains it to measure again, has no counterpart here. A step up in the
//! path's own delay therefore reads as a queue.

use std::time::Duration;

pub use crate::loss_filter::LOSS_FILTER_QUEUE_FRACTION as QUEUE_FRACTION;

/// How many of the latest batches' RTTs the envelope is the smallest of (ours).
pub const ENVELOPE_SAMPLES: usize = 8;

/// How many of the connection's first batches' RTTs its unloaded RTT is the mean of, at most
/// (ours: a LEO path's jitter, up to 14 ms on 20-40 ms, needs about this many for its mean).
pub const UNLOADED_SAMPLES: u32 = 32;

/// The bytes in flight, in initial windows, up to which a batch's RTT sample counts as the
/// unloaded path's (ours: four initial windows, 48 kB, queue for 4 ms at 100 Mbit/s; a
/// flight a long-RTT floor or a jump has raised is larger and never counts, so on GEO paths
/// the unloaded RTT stays the minimum).
pub const UNLOADED_FLIGHT_WINDOWS: u64 = 4;

/// The path's own jitter in mean differences between successive unloaded samples, at most
/// what their mean is above the minimum (ours: for a delay drawn uniformly from `[0, J]`
/// the mean difference of two draws is `J / 3`, two thirds of its mean above the minimum;
/// the start-up's bound does not count it, [`crate::jump`]). At 1.5, the full mean of a
/// uniform draw, a latecomer beside BBRv3 on starlink-busy raised the incumbent's p95
/// queueing delay 12.7 ms above a `cubic` latecomer's, for six more of the LEO grid's 102
/// point-directions at least as fast as `cubic` and `bbr3` (BENCHMARKS.md, "Scorecard").
pub const JITTER_PER_STEP: f64 = 1.0;

/// The smallest jitter a path is read to have, as a share of its minimum RTT (ours: the
/// unloaded samples of a GEO path without jitter differ by their own bursts' queue and ACK
/// timing, 0.05-0.3 ms at 600 ms; read as jitter, the queueing-delay bound of picoquic's
/// suite's resumed rows rose enough to take the window past the saved capacity, and their
/// p95 queueing delay went from 39-307 ms to 73-459 ms; starlink-quiet's 2 ms on 29 ms is
/// 1/15, and at 1/8 two of the LEO grid's point-directions lost what the bound gained).
pub const JITTER_MIN_FRACTION: f64 = 1.0 / 32.0;

/// The envelope of the latest RTT samples. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PathRtt {
    /// The latest batches' RTTs, a ring; `next` is the oldest once full.
    recent: [Option<Duration>; ENVELOPE_SAMPLES],
    next: usize,
    /// The first [`UNLOADED_SAMPLES`] batches' RTTs taken with a small flight: how many,
    /// and their sum.
    unloaded: (u32, Duration),
    /// The unloaded samples' successive differences: the latest, and their sum.
    steps: (Option<Duration>, Duration),
    /// The most bytes in flight at which a sample counts as the unloaded path's.
    unloaded_flight: u64,
}

impl PathRtt {
    /// The envelope of a connection whose window starts at `initial_window` bytes.
    pub(crate) fn new(initial_window: u64) -> Self {
        Self {
            recent: [None; ENVELOPE_SAMPLES],
            next: 0,
            unloaded: (0, Duration::ZERO),
            steps: (None, Duration::ZERO),
            unloaded_flight: UNLOADED_FLIGHT_WINDOWS * initial_window,
        }
    }

    /// A batch of acknowledgements ended with the RTT sample `latest`, `in_flight` bytes
    /// still in flight.
    pub(crate) fn on_sample(&mut self, latest: Duration, in_flight: u64) {
        if latest.is_zero() {
            return;
        }
        self.recent[self.next] = Some(latest);
        self.next = (self.next + 1) % ENVELOPE_SAMPLES;
        if self.unloaded.0 < UNLOADED_SAMPLES && in_flight <= self.unloaded_flight {
            self.unloaded = (self.unloaded.0 + 1, self.unloaded.1 + latest);
            if let Some(previous) = self.steps.0 {
                self.steps.1 += latest.abs_diff(previous);
            }
            self.steps.0 = Some(latest);
        }
    }

    /// The path's RTT before the connection loaded it, at least the minimum `min`: the mean
    /// of its first [`UNLOADED_SAMPLES`] batches' RTTs taken with at most
    /// [`UNLOADED_FLIGHT_WINDOWS`] initial windows in flight. On a path without jitter it is the
    /// minimum; where per-packet jitter spreads the samples (a LEO path's mean is 1.2-1.5 x
    /// its minimum) a window of the path's rate x the minimum leaves the path idle while the
    /// jittered ACKs are late, and this RTT is what a window needs to keep it busy.
    pub(crate) fn unloaded(&self, min: Duration) -> Duration {
        match self.unloaded {
            (0, _) => min,
            (n, sum) => (sum / n).max(min),
        }
    }

    /// The path's own jitter: what its unloaded RTT is above the minimum `min`, but no more
    /// than `per_step` ([`JITTER_PER_STEP`]) x the mean difference between successive
    /// unloaded samples; zero before two, or where it is within [`JITTER_MIN_FRACTION`] of
    /// the minimum. A queue that grows while they are taken (another flow's start-up beside
    /// ours) lifts their mean but hardly their steps, and a standing one lifts neither;
    /// per-packet jitter spreads every step.
    pub(crate) fn jitter(&self, min: Duration, per_step: f64) -> Duration {
        let spread = self.unloaded(min).saturating_sub(min);
        match self.unloaded.0 {
            0 | 1 => Duration::ZERO,
            _ if spread.as_secs_f64() <= JITTER_MIN_FRACTION * min.as_secs_f64() => Duration::ZERO,
            n => spread.min((self.steps.1 / (n - 1)).mul_f64(per_step)),
        }
    }

    /// The smallest RTT of the latest [`ENVELOPE_SAMPLES`] batches.
    pub(crate) fn envelope(&self) -> Option<Duration> {
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

    const IW: u64 = 12_000;

    /// `n` samples, the first `small` of them with one initial window in flight, the rest
    /// with a hundred.
    fn fed_after(n: u32, small: u32, rtt: impl Fn(u32) -> f64) -> PathRtt {
        let mut p = PathRtt::new(IW);
        for i in 0..n {
            p.on_sample(ms(rtt(i)), if i < small { IW } else { 100 * IW });
        }
        p
    }

    fn fed(n: u32, rtt: impl Fn(u32) -> f64) -> PathRtt {
        fed_after(n, n, rtt)
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
    fn the_unloaded_rtt_is_the_first_samples_mean_never_below_the_minimum() {
        assert_eq!(PathRtt::new(IW).unloaded(ms(30.0)), ms(30.0));
        // The first 32 samples spread 30-42 ms by jitter; a queue that follows does not move it.
        let jitter = |i: u32| {
            if i < UNLOADED_SAMPLES {
                30.0 + f64::from(i % 4) * 4.0
            } else {
                90.0
            }
        };
        let unloaded = fed(400, jitter).unloaded(ms(30.0)).as_secs_f64() * 1000.0;
        assert!((unloaded - 36.0).abs() < 1e-6, "{unloaded}");
        // Only samples of a small flight count: a large one may have queued.
        let p = fed_after(400, 4, |i| if i < 4 { 30.0 } else { 42.0 });
        assert_eq!(p.unloaded(ms(30.0)), ms(30.0));
        assert_eq!(fed_after(400, 0, |_| 42.0).unloaded(ms(30.0)), ms(30.0));
        // Never below a minimum measured later.
        assert_eq!(fed(32, |_| 20.0).unloaded(ms(25.0)), ms(25.0));
    }

    /// The jitter of a path is what its unloaded RTT is above the minimum, no more than its
    /// samples' mean step: all of it for jitter, little of a queue that grows meanwhile.
    #[test]
    fn the_jitter_is_the_unloaded_spread_no_more_than_its_steps() {
        let jitter = |p: &PathRtt| p.jitter(ms(30.0), 1.0).as_secs_f64() * 1000.0;
        assert_eq!(jitter(&PathRtt::new(IW)), 0.0);
        assert_eq!(jitter(&fed(1, |_| 42.0)), 0.0);
        // A spread within 1/32 of the minimum is the samples' own bursts, not jitter.
        assert_eq!(jitter(&fed(400, |i| 30.0 + f64::from(i % 2) * 1.8)), 0.0);
        assert!(jitter(&fed(400, |i| 30.0 + f64::from(i % 2) * 2.0)) > 0.9);
        assert_eq!(jitter(&fed(400, |_| 30.0)), 0.0);
        // 30 and 42 ms by turns: 6 ms above the minimum on average, in steps of 12 ms; a
        // quarter step, 3 ms.
        let spread = fed(400, |i| 30.0 + f64::from(i % 2) * 12.0);
        assert!((jitter(&spread) - 6.0).abs() < 1e-6, "{}", jitter(&spread));
        let quarter = spread.jitter(ms(30.0), 0.25).as_secs_f64() * 1000.0;
        assert!((quarter - 3.0).abs() < 1e-6, "{quarter}");
        // A queue that grows by 0.5 ms a batch: 7.75 ms above the minimum on average, but
        // in steps of 0.5 ms.
        let ramp = fed(400, |i| 30.0 + 0.5 * f64::from(i.min(UNLOADED_SAMPLES)));
        assert!((jitter(&ramp) - 0.5).abs() < 1e-6, "{}", jitter(&ramp));
        // A standing queue: the minimum is the queue's, and nothing spreads.
        assert_eq!(fed(400, |_| 45.0).jitter(ms(45.0), 1.0), Duration::ZERO);
    }

    #[test]
    fn nothing_is_read_before_a_sample() {
        let mut p = PathRtt::new(IW);
        p.on_sample(Duration::ZERO, IW);
        assert!(!p.shows_queue(ms(30.0)));
    }
}
