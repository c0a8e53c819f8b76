//! What the path delivered lately: the bytes acknowledged over the latest round trip and
//! the delivery rate, without a record per acknowledgement. The retreat
//! ([`crate::retreat`]) reduces from it, and the start-up jump's ceiling never holds the
//! window below what it shows the path carries ([`crate::jump`]).

use std::time::Duration;

/// How many marks `RecentDelivery` keeps: at [`MARK_SPACING_DIVISOR`] marks per smoothed
/// RTT they reach two smoothed RTTs back, past the latest RTT of a queue that doubled it.
pub const DELIVERY_MARKS: usize = 32;

/// Marks of `RecentDelivery` are at least the smoothed RTT over this apart.
pub const MARK_SPACING_DIVISOR: u32 = 16;

/// The recent delivery rate is taken over the smoothed RTT over this: four marks.
pub const RECENT_RATE_DIVISOR: u32 = 4;

/// What the path delivered lately: the bytes acknowledged so far, marked at most
/// [`DELIVERY_MARKS`] times, [`MARK_SPACING_DIVISOR`] marks per smoothed RTT, so that the
/// bytes acknowledged over the latest RTT are known to a sixteenth of an RTT without a
/// record per acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecentDelivery {
    /// Bytes acknowledged so far.
    delivered: u64,
    /// `(when, bytes acknowledged by then)`, a ring; `next` is the oldest once full.
    marks: [Option<(Duration, u64)>; DELIVERY_MARKS],
    /// Where the next mark goes.
    next: usize,
}

impl Default for RecentDelivery {
    fn default() -> Self {
        Self {
            delivered: 0,
            marks: [None; DELIVERY_MARKS],
            next: 0,
        }
    }
}

impl RecentDelivery {
    /// A packet of `bytes` was acknowledged.
    pub(crate) fn on_ack(&mut self, bytes: u64) {
        self.delivered = self.delivered.saturating_add(bytes);
    }

    /// A batch of acknowledgements ended at `now`, smoothed RTT `smoothed`: marks the bytes
    /// acknowledged by then if the newest mark is old enough.
    pub(crate) fn on_end_acks(&mut self, now: Duration, smoothed: Duration) {
        let newest = self.marks[(self.next + DELIVERY_MARKS - 1) % DELIVERY_MARKS];
        let spacing = smoothed / MARK_SPACING_DIVISOR;
        if newest.is_none_or(|(at, _)| now.saturating_sub(at) >= spacing) {
            self.marks[self.next] = Some((now, self.delivered));
            self.next = (self.next + 1) % DELIVERY_MARKS;
        }
    }

    /// Bytes acknowledged since the newest mark at least `back` before `now` (the oldest if
    /// none is that old), and how long ago that mark was (`back` without any mark).
    fn since(&self, now: Duration, back: Duration) -> (u64, Duration) {
        let before = now.saturating_sub(back);
        let marks = self.marks.iter().flatten();
        let from = marks
            .clone()
            .filter(|(at, _)| *at <= before)
            .max_by_key(|(at, _)| *at)
            .or_else(|| marks.min_by_key(|(at, _)| *at));
        from.map_or((self.delivered, back), |(at, d)| {
            (self.delivered - d, now.saturating_sub(*at))
        })
    }

    /// The delivery rate over the latest RTT `latest` before `now`, bytes per second: a
    /// rate the path has shown it carries, so never above its bottleneck's, however jitter
    /// or late ACKs spread the acknowledgements. 0 until a mark is at least `latest` old
    /// (less than a round trip of acknowledgements is not yet what the path carries).
    pub(crate) fn round_trip_rate(&self, now: Duration, latest: Duration) -> f64 {
        let marked = self
            .marks
            .iter()
            .flatten()
            .any(|(at, _)| *at + latest <= now);
        let (bytes, interval) = self.since(now, latest);
        if !marked || interval.is_zero() {
            0.0
        } else {
            bytes as f64 / interval.as_secs_f64()
        }
    }

    /// What the path delivers per round trip at `now`, with latest RTT `latest` and smoothed
    /// RTT `smoothed`: the larger of the bytes acknowledged over the latest RTT and the
    /// delivery rate over the last quarter of a smoothed RTT times the latest RTT. The
    /// first loss of a start-up comes soon after the flight that overfilled the queue began
    /// to be acknowledged, before a whole RTT of it was; the rate sees the path carry it.
    /// Bunched acknowledgements can only raise it, which makes the retreat milder.
    pub(crate) fn per_round_trip(
        &self,
        now: Duration,
        latest: Duration,
        smoothed: Duration,
    ) -> u64 {
        let over_rtt = self.since(now, latest).0;
        let (recent, interval) = self.since(now, smoothed / RECENT_RATE_DIVISOR);
        let at_recent_rate = if interval.is_zero() {
            0
        } else {
            (recent as f64 * latest.as_secs_f64() / interval.as_secs_f64()) as u64
        };
        over_rtt.max(at_recent_rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn the_latest_rtt_delivered_what_was_acknowledged_since_a_mark_that_old() {
        let mut d = RecentDelivery::default();
        // 1,000 bytes every 10 ms at a smoothed RTT of 480 ms: a mark every 30 ms (the
        // first batch at least 30 ms after the newest mark), the 32 kept reaching back to
        // 60 ms.
        for k in 0..=100 {
            d.on_ack(1000);
            d.on_end_acks(ms(10 * k), ms(480));
        }
        // Over the latest 600 ms at 1 s: since the mark at 390 ms, 61 batches.
        assert_eq!(d.since(ms(1000), ms(600)), (61_000, ms(610)));
        assert!((d.round_trip_rate(ms(1000), ms(600)) - 100_000.0).abs() < 1e-6);
        // A steady 100 kB/s: the larger of 61 kB since that mark and the rate over the last
        // 130 ms (13 kB) times 600 ms.
        assert_eq!(d.per_round_trip(ms(1000), ms(600), ms(480)), 61_000);
        // Older than the oldest mark (at 60 ms): since the oldest.
        assert_eq!(d.since(ms(1000), ms(2000)), (94_000, ms(940)));
        // Nothing marked yet: everything so far, and no rate yet.
        let mut fresh = RecentDelivery::default();
        fresh.on_ack(500);
        assert_eq!(fresh.since(ms(10), ms(600)), (500, ms(600)));
        fresh.on_end_acks(ms(10), ms(480));
        assert_eq!(fresh.round_trip_rate(ms(20), ms(600)), 0.0);
    }

    #[test]
    fn a_rate_that_began_late_in_the_round_trip_counts_for_all_of_it() {
        let mut d = RecentDelivery::default();
        // Nothing for 450 ms, then 1,000 bytes every 10 ms (100 kB/s) up to 600 ms.
        for k in 0..=60 {
            if k > 45 {
                d.on_ack(1000);
            }
            d.on_end_acks(ms(10 * k), ms(160));
        }
        // Over the latest 600 ms only 15 kB came, but the path carries 60 kB per 600 ms.
        assert_eq!(d.since(ms(600), ms(600)).0, 15_000);
        assert_eq!(d.per_round_trip(ms(600), ms(600), ms(160)), 60_000);
    }

    #[test]
    fn marks_are_spaced_by_a_sixteenth_of_the_smoothed_rtt() {
        let mut d = RecentDelivery::default();
        // Batches every 1 ms at a 640 ms smoothed RTT: a mark every 40 ms.
        for k in 0..=1000 {
            d.on_ack(100);
            d.on_end_acks(ms(k), ms(640));
        }
        // The 32 marks reach back 1,240 ms.
        assert_eq!(d.since(ms(1000), ms(600)), (600 * 100, ms(600)));
        assert_eq!(d.since(ms(1000), ms(900)), (920 * 100, ms(920)));
    }
}
