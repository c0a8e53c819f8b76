//! What the jump is sized from: picoquic's peak delivery rate, and the queueing-delay
//! bound (ours), both measured on the acknowledgements of the initial slow start.

use std::time::Duration;

use super::{BOUND_SAMPLES, BURST_GAP};

/// How the queueing-delay bound is read: each queueing delay with `margin` added, against
/// the smallest RTT of a data packet or `connection_min` (the connection's minimum RTT,
/// handshake included) when that is smaller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// Added to every queueing delay.
    pub margin: Duration,
    /// The connection's minimum RTT as its estimator has it: the handshake's samples too,
    /// whose packets waited behind nothing of the data, and which a first data ACK delayed
    /// on a thin return link does not undercut.
    pub connection_min: Duration,
    /// The path's own jitter ([`crate::path_rtt`]'s, as `bound-jitter=K` reads it; zero on
    /// a path without jitter or with `bound-jitter=0`), which is not counted in a sample's
    /// delay.
    pub jitter: Duration,
}

/// One sample of the queueing-delay bound: `ahead` bytes left in a burst before a packet
/// whose acknowledgement came `span` after the burst's first packet was sent.
#[derive(Debug, Clone, Copy, PartialEq)]
struct BoundSample {
    ahead: u64,
    span: Duration,
}

/// The reference a bound sample is read against: the smallest RTT of a data packet so
/// far, and the bytes of its own burst that left ahead of that packet (it waited behind
/// them, so its RTT exceeds the path's by at most their time at the bottleneck).
#[derive(Debug, Clone, Copy, PartialEq)]
struct MinRtt {
    rtt: Duration,
    ahead: u64,
}

impl BoundSample {
    /// The rate it shows at reference `min`, bytes per second: the bytes ahead of the packet
    /// beyond those the reference packet waited behind, over the span less the minimum RTT
    /// and the path's own jitter (the packet's queueing delay plus the time the burst took
    /// to send) plus the margin. 0 when the sample shows nothing (no bytes beyond the
    /// reference's, or no delay).
    ///
    /// On a FIFO bottleneck of constant rate `C`, the `ahead` bytes left it between the
    /// burst's first arrival and the packet's departure, so `C >= ahead / (span - base)`
    /// with `base` the path's RTT; the reference packet's RTT is at most
    /// `base + min.ahead / C` plus its ACK's delay, so
    /// `C >= (ahead - min.ahead) / (span - min.rtt + that delay)`: with the margin at least
    /// the reference's ACK delay, the sample never exceeds the bottleneck's rate, whichever
    /// end sends and however the ACKs of the sample are delayed or bunched (late ACKs only
    /// lengthen `span`). A queue of other traffic ahead of the reference that was still
    /// there for the burst cancels out; one that shrank in between without the burst's
    /// packets coming back sooner than the reference (which would make a new reference)
    /// can shrink the delay by at most one ACK's bytes.
    ///
    /// Per-packet jitter adds to every sample's delay what the reference, the luckiest
    /// packet, did not wait: on a LEO path with up to 14 ms each way the bound read a
    /// fifth of a 55 Mbit/s bottleneck, and the ceiling then held the start-up's growth to
    /// what the path delivered. The jitter the path showed before the connection loaded it
    /// is not counted ([`Bound::jitter`]). On a FIFO wire (one that delays but never
    /// reorders) a burst's packet arrives no sooner than the largest draw of those ahead
    /// of it, above the mean for all but the shortest bursts, so the sample stays at most
    /// the rate but where its packets drew less than the path's usual jitter; the
    /// validation judges the jump that follows. Without jitter it is zero, and so is the
    /// change.
    fn rate(&self, min: MinRtt, bound: Bound) -> f64 {
        let credited = self.ahead.saturating_sub(min.ahead);
        let delay = self.span.saturating_sub(min.rtt + bound.jitter) + bound.margin;
        if credited == 0 || delay.is_zero() {
            return 0.0;
        }
        credited as f64 / delay.as_secs_f64()
    }
}

/// A burst of acknowledged packets: sent back to back (no pause over [`BURST_GAP`]),
/// acknowledged in sending order.
#[derive(Debug, Clone, Copy)]
struct Burst {
    /// When its first packet was sent.
    first_sent: Duration,
    /// When its newest acknowledged packet was sent.
    last_sent: Duration,
    /// Bytes acknowledged that were sent in it before its newest acknowledged packet.
    ahead: u64,
    /// Bytes of its newest acknowledged packet.
    last: u64,
}

/// A point a rate is measured from: bytes delivered, when they were acknowledged, when
/// the newest acknowledged packet was sent.
type Mark = (u64, Duration, Duration);

/// The rates the jump is sized from.
///
/// The peak delivery rate, picoquic's way: a sample is the bytes delivered since a
/// reference acknowledgement over the longer of the time since it and the time between
/// the sending of the packets the two acknowledged, taken once that time exceeds the
/// minimum interval; the reference then moves to the current acknowledgement.
///
/// The queueing-delay bound (ours, with a [`Bound`] reading): per batch, the bytes of the
/// newest acknowledged packet's burst that left ahead of it, over how much later than the
/// reference that packet came back (`BoundSample::rate`); the best [`BOUND_SAMPLES`] are
/// kept and read again as the reference moves.
#[derive(Debug, Clone, Default)]
pub struct PeakRate {
    /// Bytes acknowledged so far.
    delivered: u64,
    /// The reference: bytes delivered, when it was acknowledged, when its newest
    /// acknowledged packet was sent.
    reference: Option<Mark>,
    /// Send time of the newest packet acknowledged in the current batch.
    batch_sent: Option<Duration>,
    /// The peak rate, bytes per second.
    peak: f64,
    /// The burst of the newest acknowledged packet, for the queueing-delay bound.
    burst: Option<Burst>,
    /// Whether the current batch acknowledged a packet of `burst`.
    burst_acked: bool,
    /// When the first batch of acknowledgements ended: packets sent before it (the
    /// handshake's flight, sent before either end had an RTT sample) give no bound.
    first_ack_at: Option<Duration>,
    /// The best samples of the queueing-delay bound so far.
    bound_samples: [Option<BoundSample>; BOUND_SAMPLES],
    /// The reference the samples are read against: the smallest RTT of a data packet
    /// acknowledged after the first batch, taken as quinn takes its minimum (ACK arrival less
    /// the send time of the newest packet of a batch) but up to date on stock quinn-proto
    /// too, whose estimator learns of an ACK after the controller does.
    min_rtt: Option<MinRtt>,
    /// The queueing-delay bound ([`Self::bound`]) at the reference, bytes per second.
    bound: f64,
}

impl PeakRate {
    /// A packet sent at `sent` carrying `bytes` was acknowledged.
    pub fn on_ack(&mut self, sent: Duration, bytes: u64) {
        self.delivered = self.delivered.saturating_add(bytes);
        self.batch_sent = Some(self.batch_sent.map_or(sent, |s| s.max(sent)));
        self.on_burst_ack(sent, bytes);
    }

    /// Follows the burst of the newest acknowledged packet: a packet sent after the burst's
    /// newest within [`BURST_GAP`] extends it, a later one starts a new burst, an older
    /// one (acknowledged out of order) leaves it alone.
    fn on_burst_ack(&mut self, sent: Duration, bytes: u64) {
        if self.first_ack_at.is_none_or(|first| sent < first) {
            return;
        }
        match self.burst.as_mut() {
            Some(b) if sent < b.last_sent => return,
            Some(b) if sent - b.last_sent <= BURST_GAP => {
                b.ahead = b.ahead.saturating_add(b.last);
                b.last_sent = sent;
                b.last = bytes;
            }
            _ => {
                self.burst = Some(Burst {
                    first_sent: sent,
                    last_sent: sent,
                    ahead: 0,
                    last: bytes,
                })
            }
        }
        self.burst_acked = true;
    }

    /// Takes the queueing-delay bound's sample of a batch that ended at `now`, and reads
    /// the kept samples again. A sample is the bytes that left in the burst ahead of its
    /// newest acknowledged packet (beyond those the reference waited behind) over how much
    /// later than the reference that packet came back plus how long the burst took to
    /// send: the bottleneck cannot have drained them faster, since they were all queued or
    /// in flight ahead of the packet when it reached the bottleneck.
    ///
    /// A batch whose packet came back sooner than the reference is the new reference, and
    /// gives no sample: the queue ahead of it was shorter than the reference's, so the
    /// reference was not the path's RTT, and the packet itself waited behind its burst.
    fn bound_sample(&mut self, now: Duration, bound: Bound) {
        if let Some(b) = self.burst.filter(|_| std::mem::take(&mut self.burst_acked)) {
            let rtt = now.saturating_sub(b.last_sent);
            match self.reference(bound) {
                // Strictly later: an estimator that already took this batch's sample holds
                // it as its minimum, and a packet is no reference for its own burst.
                Some(min) if rtt > min.rtt => {
                    let sample = BoundSample {
                        ahead: b.ahead,
                        span: now.saturating_sub(b.first_sent),
                    };
                    self.keep_bound_sample(sample, min, bound);
                }
                _ => {
                    self.min_rtt = Some(MinRtt {
                        rtt,
                        ahead: b.ahead,
                    })
                }
            }
        }
        self.bound = match self.reference(bound) {
            Some(min) => self
                .bound_samples
                .iter()
                .flatten()
                .map(|s| s.rate(min, bound))
                .fold(0.0, f64::max),
            None => 0.0,
        };
    }

    /// The reference samples are read against: the smallest RTT of a data packet, or the
    /// connection's minimum with nothing ahead when that is smaller (the handshake's, when
    /// the first data ACK was held up on its way back). Before any data packet came back,
    /// none.
    fn reference(&self, bound: Bound) -> Option<MinRtt> {
        let own = self.min_rtt?;
        Some(
            if bound.connection_min < own.rtt && !bound.connection_min.is_zero() {
                MinRtt {
                    rtt: bound.connection_min,
                    ahead: 0,
                }
            } else {
                own
            },
        )
    }

    /// Keeps `sample` in place of the weakest kept one at reference `min`, if it is
    /// stronger.
    fn keep_bound_sample(&mut self, sample: BoundSample, min: MinRtt, bound: Bound) {
        let rate = sample.rate(min, bound);
        let weakest = self
            .bound_samples
            .iter_mut()
            .min_by(|a, b| {
                let (a, b) = (
                    a.map_or(-1.0, |s| s.rate(min, bound)),
                    b.map_or(-1.0, |s| s.rate(min, bound)),
                );
                a.total_cmp(&b)
            })
            .expect("BOUND_SAMPLES is not zero");
        if weakest.is_none_or(|w| w.rate(min, bound) < rate) {
            *weakest = Some(sample);
        }
    }

    /// The queueing-delay bound so far, bytes per second (0 before the first sample): the
    /// largest rate the bottleneck was shown to drain at.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// A batch of acknowledgements received at `now` ended; returns the peak rate (bytes
    /// per second) if it rose. With `bound`, the queueing-delay bound takes its sample too.
    pub fn on_end_acks(
        &mut self,
        now: Duration,
        min_interval: Duration,
        bound: Option<Bound>,
    ) -> Option<f64> {
        if let Some(bound) = bound {
            self.bound_sample(now, bound);
        }
        self.first_ack_at.get_or_insert(now);
        let sent = self.batch_sent.take()?;
        let here = (self.delivered, now, sent);
        let Some(from) = self.reference else {
            self.reference = Some(here);
            return None;
        };
        let rate = self.rate_since(from, now, sent, min_interval)?;
        self.reference = Some(here);
        (rate > self.peak).then(|| {
            self.peak = rate;
            rate
        })
    }

    /// The delivery rate from `from` to an acknowledgement at `now` of a packet sent at
    /// `sent`, if the interval is long enough and the packets are in sending order.
    fn rate_since(
        &self,
        (delivered, acked_at, sent_at): Mark,
        now: Duration,
        sent: Duration,
        min_interval: Duration,
    ) -> Option<f64> {
        if sent < sent_at {
            return None;
        }
        let receive = now.saturating_sub(acked_at);
        if receive <= min_interval {
            return None;
        }
        let interval = receive.max(sent - sent_at);
        Some((self.delivered - delivered) as f64 / interval.as_secs_f64())
    }

    /// The peak rate so far, bytes per second (0 before the first sample).
    pub fn peak(&self) -> f64 {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BOUND_MARGIN, PEAK_RATE_MIN_INTERVAL};
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    /// The bound read with the default margin, the connection's minimum RTT unknown.
    const BOUND: Bound = Bound {
        margin: BOUND_MARGIN,
        connection_min: Duration::ZERO,
        jitter: Duration::ZERO,
    };

    #[test]
    fn a_burst_measures_the_bottleneck_by_its_acknowledgement_spacing() {
        // 20 packets of 1,250 bytes sent together at t = 0, delivered at 10 Mbit/s
        // (1 ms per packet), one ACK per 2 packets, 300 ms after sending.
        let mut rate = PeakRate::default();
        for ack in 0..10 {
            for _ in 0..2 {
                rate.on_ack(Duration::ZERO, 1250);
            }
            rate.on_end_acks(
                ms(300.0 + 2.0 * f64::from(ack)),
                PEAK_RATE_MIN_INTERVAL,
                None,
            );
        }
        // Samples over 2 ms: 2 x 1,250 bytes each.
        assert!((rate.peak() - 1_250_000.0).abs() < 1.0, "{}", rate.peak());
    }

    #[test]
    fn paced_sending_bounds_the_rate_by_the_send_interval() {
        // ACKs bunched 1.5 ms apart for packets sent 10 ms apart: the send interval rules.
        let mut rate = PeakRate::default();
        rate.on_ack(ms(0.0), 1000);
        rate.on_end_acks(ms(300.0), PEAK_RATE_MIN_INTERVAL, None);
        rate.on_ack(ms(10.0), 1000);
        assert_eq!(
            rate.on_end_acks(ms(301.5), PEAK_RATE_MIN_INTERVAL, None),
            Some(100_000.0)
        );
        // Intervals at or below the minimum give no sample.
        rate.on_ack(ms(20.0), 1000);
        assert_eq!(
            rate.on_end_acks(ms(302.0), PEAK_RATE_MIN_INTERVAL, None),
            None
        );
    }

    /// A burst of `packets` x 1,200 bytes sent at once at `sent` (ms) through a FIFO
    /// bottleneck of `rate` bytes per second and a 600 ms RTT, acknowledged every
    /// `per_ack` packets as the receiver gets them: the arrival (ms) of each ACK, and the
    /// packets acknowledged by then.
    fn burst_acks(sent: f64, packets: u32, per_ack: u32, rate: f64) -> Vec<(f64, u32)> {
        (1..=packets)
            .filter(|p| p % per_ack == 0 || *p == packets)
            .map(|p| (sent + 600.0 + f64::from(p) * 1200.0 / rate * 1000.0, p))
            .collect()
    }

    /// A rate estimate whose connection received its first ACK at 0 (a handshake).
    fn handshaken() -> PeakRate {
        let mut rates = PeakRate::default();
        rates.on_end_acks(ms(0.0), PEAK_RATE_MIN_INTERVAL, None);
        rates
    }

    /// Feeds `acks` (arrival in ms, packets acknowledged so far) of a burst sent at `sent`.
    fn feed(rates: &mut PeakRate, sent: f64, acks: &[(f64, u32)]) {
        feed_reading(rates, sent, acks, BOUND);
    }

    /// [`feed`] with the bound read as `bound` says.
    fn feed_reading(rates: &mut PeakRate, sent: f64, acks: &[(f64, u32)], bound: Bound) {
        let mut acked = 0;
        for &(at, upto) in acks {
            for _ in acked..upto {
                rates.on_ack(ms(sent), 1200);
            }
            acked = upto;
            rates.on_end_acks(ms(at), PEAK_RATE_MIN_INTERVAL, Some(bound));
        }
    }

    #[test]
    fn the_bound_measures_a_burst_by_its_queueing_delay_beyond_the_reference() {
        // 60 packets through 50 Mbit/s (6.25 MB/s), an ACK every 2: the first ACK (packet
        // 2, one packet ahead of it) is the reference; the last packet waited behind 58
        // more, 11.14 ms at the bottleneck.
        let mut rates = handshaken();
        feed(&mut rates, 0.0, &burst_acks(0.0, 60, 2, 6.25e6));
        let expected = 58.0 * 1200.0 / (58.0 * 1200.0 / 6.25e6 + 0.001);
        assert!((rates.bound() - expected).abs() < 1.0, "{}", rates.bound());
        assert!(rates.bound() < 6.25e6);
        // The same burst through 1 Gbit/s: 0.56 ms of queue, read with the 1 ms margin.
        let mut fast = handshaken();
        feed(&mut fast, 0.0, &burst_acks(0.0, 60, 2, 125e6));
        let expected = 58.0 * 1200.0 / (58.0 * 1200.0 / 125e6 + 0.001);
        assert!((fast.bound() - expected).abs() < 1.0, "{}", fast.bound());
    }

    /// A path whose jitter (10 ms here) delayed every ACK but the reference's: read as
    /// queueing it hides half the bottleneck's rate; the path's own jitter not counted,
    /// the burst reads as it would without jitter, and still not above the rate.
    #[test]
    fn the_paths_own_jitter_is_not_read_as_queueing() {
        let jittered: Vec<(f64, u32)> = burst_acks(0.0, 60, 2, 6.25e6)
            .into_iter()
            .enumerate()
            .map(|(i, (at, upto))| (if i == 0 { at } else { at + 10.0 }, upto))
            .collect();
        let read = |jitter: f64| {
            let mut rates = handshaken();
            let bound = Bound {
                jitter: ms(jitter),
                ..BOUND
            };
            feed_reading(&mut rates, 0.0, &jittered, bound);
            rates.bound()
        };
        let queueing = 58.0 * 1200.0 / 6.25e6;
        let as_queueing = 58.0 * 1200.0 / (queueing + 0.010 + 0.001);
        assert!((read(0.0) - as_queueing).abs() < 1.0, "{}", read(0.0));
        let without = 58.0 * 1200.0 / (queueing + 0.001);
        assert!((read(10.0) - without).abs() < 1.0, "{}", read(10.0));
        assert!(read(10.0) < 6.25e6);
    }

    #[test]
    fn the_bound_never_exceeds_a_fifo_bottleneck_of_constant_rate() {
        // Bursts of many sizes, ACKed every 1 to 16 packets, through rates from 1 Mbit/s to
        // 1 Gbit/s, read without a margin (the ACKs come as the packets arrive): the
        // reference packet waited behind its ACK's other packets, and the bound discounts
        // them.
        let no_margin = Bound {
            margin: Duration::ZERO,
            connection_min: Duration::ZERO,
            jitter: Duration::ZERO,
        };
        for rate in [125e3, 1.25e6, 6.25e6, 125e6] {
            for per_ack in [1, 2, 8, 16] {
                for packets in [4, 16, 60, 200] {
                    let mut rates = handshaken();
                    let mut acked = 0;
                    for &(at, upto) in &burst_acks(0.0, packets, per_ack, rate) {
                        for _ in acked..upto {
                            rates.on_ack(ms(0.0), 1200);
                        }
                        acked = upto;
                        rates.on_end_acks(ms(at), PEAK_RATE_MIN_INTERVAL, Some(no_margin));
                        assert!(
                            rates.bound() <= rate * (1.0 + 1e-9),
                            "{} > {rate} ({packets} packets, ACK every {per_ack})",
                            rates.bound()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_zero_margin_never_divides_by_nothing() {
        // Two packets acknowledged together as the reference, then nothing queued: no
        // sample, not an infinite one.
        let no_margin = Bound {
            margin: Duration::ZERO,
            connection_min: Duration::ZERO,
            jitter: Duration::ZERO,
        };
        let mut rates = handshaken();
        rates.on_ack(ms(0.0), 1200);
        rates.on_ack(ms(0.0), 1200);
        rates.on_end_acks(ms(600.0), PEAK_RATE_MIN_INTERVAL, Some(no_margin));
        rates.on_ack(ms(0.0), 1200);
        rates.on_end_acks(ms(600.0), PEAK_RATE_MIN_INTERVAL, Some(no_margin));
        assert!(rates.bound().is_finite() && rates.bound() == 0.0);
    }

    #[test]
    fn bunched_acknowledgements_do_not_raise_the_bound() {
        // The ACKs of a 50 Mbit/s burst wait 11 ms behind a large packet on the return
        // link, then arrive 0.05 ms apart: their spacing reads 30 x 2,400 bytes over 1.5 ms,
        // 48 MB/s. The first of them is held up too, so the handshake's 600 ms, not it, is
        // the reference; the bound stays under the bottleneck's 6.25 MB/s.
        let natural = burst_acks(0.0, 60, 2, 6.25e6);
        let bunched: Vec<_> = natural
            .iter()
            .enumerate()
            .map(|(i, &(at, p))| (at.max(611.0 + 0.05 * i as f64), p))
            .collect();
        let mut rates = handshaken();
        let after_handshake = Bound {
            connection_min: ms(600.0),
            ..BOUND
        };
        feed_reading(&mut rates, 0.0, &bunched, after_handshake);
        assert!(
            rates.bound() > 0.0 && rates.bound() < 6.25e6,
            "{}",
            rates.bound()
        );
        // The 1 ms samples of the moving reference are fooled.
        assert!(rates.peak() > 6.25e6, "{}", rates.peak());
    }

    #[test]
    fn a_batch_that_comes_back_sooner_than_the_reference_is_the_new_reference() {
        // The first burst waited 200 ms behind another flow's queue; the next finds that
        // queue drained. Its first batch is the new reference and gives no sample: read
        // against the old one it would show 18 kB in no time at all.
        let mut rates = handshaken();
        let late: Vec<_> = burst_acks(0.0, 20, 2, 2.5e6)
            .into_iter()
            .map(|(at, p)| (at + 200.0, p))
            .collect();
        feed(&mut rates, 0.0, &late);
        let before = rates.bound();
        assert!(before > 0.0 && before < 2.5e6, "{before}");
        let sooner = burst_acks(1000.0, 15, 15, 2.5e6);
        feed(&mut rates, 1000.0, &sooner);
        assert!(rates.bound() < 2.5e6, "{}", rates.bound());
    }

    #[test]
    fn a_burst_sent_before_the_first_ack_gives_no_bound() {
        // A server's handshake flight leaves before it has heard from the client; its
        // client's flight is one packet. Neither measures the data direction.
        let mut rates = PeakRate::default();
        feed(&mut rates, 0.0, &burst_acks(0.0, 4, 4, 6.25e6));
        assert_eq!(rates.bound(), 0.0);
        // The first flight after it does.
        feed(&mut rates, 700.0, &burst_acks(700.0, 60, 2, 6.25e6));
        assert!(rates.bound() > 0.0);
    }

    #[test]
    fn out_of_order_acknowledgements_leave_the_burst_alone() {
        let mut rates = handshaken();
        feed(&mut rates, 10.0, &burst_acks(10.0, 60, 2, 6.25e6));
        let before = rates.bound();
        // A packet sent before the burst, acknowledged late: no sample, no new burst.
        rates.on_ack(ms(5.0), 1200);
        rates.on_end_acks(ms(640.0), PEAK_RATE_MIN_INTERVAL, Some(BOUND));
        assert_eq!(rates.bound(), before);
        // A packet 2 ms after the burst starts a new one: nothing ahead of it yet.
        rates.on_ack(ms(12.0), 1200);
        rates.on_end_acks(ms(641.0), PEAK_RATE_MIN_INTERVAL, Some(BOUND));
        assert_eq!(rates.bound(), before);
    }
}
