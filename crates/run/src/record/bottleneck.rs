//! What a flow's data packets met at the bottleneck: how long each delivered packet waited
//! in the queue, and when the link dropped one. Kept per flow, from the link model's ground
//! truth (the simulator's link, the relay's in real time), so that a run reports its
//! latency under load as queueing-delay quantiles over the whole flow or over any interval
//! (the time the flows of a run shared the link: [`super::shared`]).
//!
//! The delay is the time a packet waited behind other packets (its flow's own, other
//! flows', cross traffic) before its transmission began: the bottleneck's share of "RTT
//! minus the path's base RTT" in the data direction, without propagation, jitter or the
//! packet's own serialization, so an idle path reads 0 whatever its delay.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One flow's data packets at the bottleneck, in run time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BottleneckLog {
    /// Per packet that left the bottleneck, in departure order: when it left and how long
    /// it waited in the queue.
    departures: Vec<(Duration, Duration)>,
    /// When the link dropped one of the flow's data packets (any reason), in order.
    drops: Vec<Duration>,
}

/// Quantiles of the queueing delay of a set of packets, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DelayQuantiles {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Packets the quantiles are taken over.
    pub packets: u64,
}

impl BottleneckLog {
    /// A packet left the bottleneck at `departed` after waiting `waited` in its queue.
    pub fn on_departed(&mut self, departed: Duration, waited: Duration) {
        self.departures.push((departed, waited));
    }

    /// The link dropped a packet at `at`.
    pub fn on_dropped(&mut self, at: Duration) {
        self.drops.push(at);
    }

    /// The departures from `from` (inclusive) to `to` (exclusive).
    fn departures_in(&self, from: Duration, to: Duration) -> &[(Duration, Duration)] {
        let lo = self.departures.partition_point(|(t, _)| *t < from);
        let hi = self.departures.partition_point(|(t, _)| *t < to);
        &self.departures[lo..hi.max(lo)]
    }

    /// Queueing-delay quantiles of the packets that left from `from` to `to`; `None`
    /// without any.
    pub fn queue_delay(&self, from: Duration, to: Duration) -> Option<DelayQuantiles> {
        let mut waited: Vec<Duration> = self
            .departures_in(from, to)
            .iter()
            .map(|(_, w)| *w)
            .collect();
        if waited.is_empty() {
            return None;
        }
        waited.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let at = |q: f64| ms(waited[((waited.len() - 1) as f64 * q).round() as usize]);
        Some(DelayQuantiles {
            p50_ms: at(0.5),
            p95_ms: at(0.95),
            max_ms: ms(waited[waited.len() - 1]),
            packets: waited.len() as u64,
        })
    }

    /// Queueing-delay quantiles over the whole flow.
    pub fn queue_delay_overall(&self) -> Option<DelayQuantiles> {
        self.queue_delay(Duration::ZERO, Duration::MAX)
    }

    /// The packets that reached the bottleneck from `from` to `to` and how many of them
    /// it dropped: (departed + dropped, dropped). A packet counts by when it left or was
    /// dropped.
    pub fn arrivals_and_drops(&self, from: Duration, to: Duration) -> (u64, u64) {
        let departed = self.departures_in(from, to).len() as u64;
        let lo = self.drops.partition_point(|t| *t < from);
        let hi = self.drops.partition_point(|t| *t < to);
        let dropped = hi.saturating_sub(lo) as u64;
        (departed + dropped, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn quantiles_count_the_packets_of_the_interval_only() {
        let mut log = BottleneckLog::default();
        // 100 packets 10 ms apart, the k-th having waited k ms.
        for k in 0..100 {
            log.on_departed(ms(10 * k), ms(k));
        }
        let all = log.queue_delay_overall().unwrap();
        assert_eq!(all.packets, 100);
        assert_eq!((all.p50_ms, all.p95_ms, all.max_ms), (50.0, 94.0, 99.0));
        // From 500 ms (inclusive) to 600 ms (exclusive): packets 50-59.
        let part = log.queue_delay(ms(500), ms(600)).unwrap();
        assert_eq!(part.packets, 10);
        assert_eq!((part.p50_ms, part.max_ms), (55.0, 59.0));
        assert_eq!(log.queue_delay(ms(2000), ms(3000)), None);
        assert_eq!(log.queue_delay(ms(600), ms(500)), None);
    }

    #[test]
    fn losses_are_counted_against_the_packets_that_reached_the_link() {
        let mut log = BottleneckLog::default();
        for k in 0..10 {
            log.on_departed(ms(k), Duration::ZERO);
        }
        for t in [3, 4, 12] {
            log.on_dropped(ms(t));
        }
        assert_eq!(log.arrivals_and_drops(ms(0), ms(10)), (12, 2));
        assert_eq!(log.arrivals_and_drops(ms(10), ms(20)), (1, 1));
        assert_eq!(log.arrivals_and_drops(ms(20), ms(30)), (0, 0));
    }
}
