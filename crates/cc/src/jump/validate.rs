//! Whether the path carried the jump's flight (`+jump:validate`, ours): the flight sent
//! after the jump is judged by how it came back before the window grows past the jump.
//!
//! The jump is sized from the bottleneck's rate, and a burst measures that rate whether or
//! not other traffic shares the bottleneck: its packets queue back to back. Paced over a
//! round trip, the jump's flight shows whether the path has room for it. On a path it has
//! to itself, packets sent no faster than the bottleneck drains leave it as they came, and
//! their acknowledgements span what their sends spanned; packets sent faster come back at
//! the bottleneck's rate. Beside traffic that keeps the bottleneck busy, the flight's
//! packets queue behind that traffic and come back at our share of the rate: the
//! *dispersion* an available-bandwidth probe reads (pathload's self-loading trains, Jain and
//! Dovrolis, "End-to-end available bandwidth", SIGCOMM 2002), here read off the jump's own
//! flight. Careful Resume (RFC 9959) validates its jump by the loss that follows it; this
//! judges the start-up jump a round trip sooner, before the overshoot it would otherwise
//! learn of by losing it.
//!
//! **Jitter.** Whether the flight came back as it left is read off its queueing delay: the
//! ACKs span what the sends spanned plus how much later the last packets took than the
//! first. A LEO path's per-packet jitter (several ms on a 40 ms path, as much as a quarter
//! RTT's span of ACKs) moves each RTT by itself, so the first and last samples alone would
//! refuse a jump on an empty path; a queue raises every sample, so the growth is read
//! between the smallest RTT of the flight's first [`VALIDATE_RTT_BATCHES`] batches and of
//! its last ones.

use std::time::Duration;

/// How many ACK batches at each end of the jump's flight its queueing delay is read from
/// (ours): the smallest RTT of a few samples is the path's without its jitter.
pub const VALIDATE_RTT_BATCHES: usize = 4;

/// The smallest RTT of the first [`VALIDATE_RTT_BATCHES`] batches and of the latest ones.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FlightRtts {
    /// The smallest RTT of the first batches, microseconds (`u32::MAX`: none yet).
    early: u32,
    /// How many first batches it is the smallest of.
    early_batches: u8,
    /// The RTTs of the latest batches, microseconds (`u32::MAX`: none), a ring; `next`
    /// is the oldest once full. Microseconds keep the jump's phase small.
    late: [u32; VALIDATE_RTT_BATCHES],
    next: u8,
}

impl Default for FlightRtts {
    fn default() -> Self {
        Self {
            early: u32::MAX,
            early_batches: 0,
            late: [u32::MAX; VALIDATE_RTT_BATCHES],
            next: 0,
        }
    }
}

impl FlightRtts {
    fn on_batch(&mut self, rtt: Duration) {
        let micros = u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX - 1);
        if usize::from(self.early_batches) < VALIDATE_RTT_BATCHES {
            self.early = self.early.min(micros);
            self.early_batches += 1;
        }
        self.late[usize::from(self.next)] = micros;
        self.next = ((usize::from(self.next) + 1) % VALIDATE_RTT_BATCHES) as u8;
    }

    /// How much later the latest packets took than the first, jitter aside.
    fn growth(&self) -> Duration {
        let late = self.late.iter().copied().min().unwrap_or(u32::MAX);
        if self.early == u32::MAX || late == u32::MAX {
            return Duration::ZERO;
        }
        Duration::from_micros(u64::from(late.saturating_sub(self.early)))
    }
}

/// How the jump's flight came back: for the packets sent since the jump, the send time of
/// each ACK batch's newest one against the batch's arrival.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispersion {
    /// When the jump was taken: packets sent from then on are its flight.
    jumped_at: Duration,
    /// Send time of the newest flight packet acknowledged in the current batch.
    batch_sent: Option<Duration>,
    /// Flight bytes acknowledged in the current batch.
    batch_bytes: u64,
    /// (newest send time, arrival) of the first batch that acknowledged flight packets.
    first: Option<(Duration, Duration)>,
    /// The same of the latest such batch.
    last: Option<(Duration, Duration)>,
    /// Flight bytes acknowledged after the first such batch.
    bytes: u64,
    /// The flight's RTTs at either end.
    rtts: FlightRtts,
}

/// What [`Dispersion::verdict`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JumpVerdict {
    /// The flight came back as fast as it left, or at the bottleneck's rate.
    Pass,
    /// It came back slower than both; the path delivered it at this rate, bytes per second.
    Fail {
        /// Bytes per second.
        delivery_rate: f64,
    },
}

impl Dispersion {
    /// The flight of a jump taken at `jumped_at`.
    pub fn new(jumped_at: Duration) -> Self {
        Self {
            jumped_at,
            batch_sent: None,
            batch_bytes: 0,
            first: None,
            last: None,
            bytes: 0,
            rtts: FlightRtts::default(),
        }
    }

    /// A packet sent at `sent` carrying `bytes` was acknowledged.
    pub fn on_ack(&mut self, sent: Duration, bytes: u64) {
        if sent >= self.jumped_at {
            self.batch_sent = Some(self.batch_sent.map_or(sent, |s| s.max(sent)));
            self.batch_bytes = self.batch_bytes.saturating_add(bytes);
        }
    }

    /// A batch of acknowledgements ended at `now`.
    pub fn on_end_acks(&mut self, now: Duration) {
        let bytes = std::mem::take(&mut self.batch_bytes);
        let Some(sent) = self.batch_sent.take() else {
            return;
        };
        self.rtts.on_batch(now.saturating_sub(sent));
        if self.first.is_none() {
            self.first = Some((sent, now));
        } else {
            self.bytes = self.bytes.saturating_add(bytes);
            self.last = Some((sent, now));
        }
    }

    /// Once the flight's ACKs span at least `span`: whether the flight came back at least
    /// `ratio` as fast as it was sent (the sends its ACKs acknowledge spanned at least
    /// `ratio` of their arrivals, their sends' span and the growth of its queueing delay)
    /// or at least `ratio` of `bottleneck_rate` (bytes per second; a flight sent faster
    /// than the bottleneck drains comes back at its rate).
    pub fn verdict(&self, span: Duration, ratio: f64, bottleneck_rate: f64) -> Option<JumpVerdict> {
        let ((sent0, acked0), (sent1, acked1)) = (self.first?, self.last?);
        let acked_span = acked1.saturating_sub(acked0);
        if acked_span < span || acked_span.is_zero() {
            return None;
        }
        let sent_span = sent1.saturating_sub(sent0);
        let delivery_rate = self.bytes as f64 / acked_span.as_secs_f64();
        let came_back = sent_span + self.rtts.growth();
        let as_sent = sent_span.as_secs_f64() >= ratio * came_back.as_secs_f64();
        let at_bottleneck = delivery_rate >= ratio * bottleneck_rate;
        Some(if as_sent || at_bottleneck {
            JumpVerdict::Pass
        } else {
            JumpVerdict::Fail { delivery_rate }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    /// A flight jumped at 1,000 ms, paced at `send_rate` bytes per second in packets of
    /// 1,200 bytes, through a FIFO bottleneck of `rate` where other traffic takes
    /// `others` of every second, 600 ms of RTT, an ACK per 8 packets: its dispersion after
    /// `packets` packets.
    fn flight(send_rate: f64, rate: f64, others: f64, packets: u32) -> Dispersion {
        let mut d = Dispersion::new(ms(1000.0));
        // Our packets are served at our share of the bottleneck, and never before they
        // arrive.
        let (ours, gap) = (rate * (1.0 - others), 1200.0 / send_rate);
        let mut departed = 0.0_f64;
        for p in 0..packets {
            let sent = 1000.0 + f64::from(p) * gap * 1000.0;
            departed = departed.max(sent + 300.0) + 1200.0 / ours * 1000.0;
            d.on_ack(ms(sent), 1200);
            if p % 8 == 7 {
                d.on_end_acks(ms(departed + 300.0));
            }
        }
        d
    }

    #[test]
    fn a_flight_on_an_empty_path_passes_whether_sent_below_or_above_its_rate() {
        let quarter_rtt = ms(150.0);
        // 2.5 MB/s bottleneck, bound read at 2.4 MB/s.
        for send_rate in [1.0e6, 2.4e6, 4.0e6] {
            let d = flight(send_rate, 2.5e6, 0.0, 800);
            assert_eq!(
                d.verdict(quarter_rtt, 0.8, 2.4e6),
                Some(JumpVerdict::Pass),
                "{send_rate}"
            );
        }
    }

    #[test]
    fn a_flight_beside_a_busy_flow_fails_at_its_share() {
        // Another flow keeps half of the bottleneck; we send at the whole rate.
        let d = flight(2.5e6, 2.5e6, 0.5, 800);
        match d.verdict(ms(150.0), 0.8, 2.4e6) {
            Some(JumpVerdict::Fail { delivery_rate }) => {
                assert!((delivery_rate - 1.25e6).abs() < 0.05e6, "{delivery_rate}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn jitter_does_not_refuse_a_flight_on_an_empty_path_and_a_queue_still_does() {
        // 40 ms of RTT with up to 12 ms of per-packet jitter, sent at half the rate of an
        // empty 2.5 MB/s path, an ACK per 2 packets, judged over a quarter RTT.
        // The first batch came back with the least jitter, the last with the most.
        let jitter = [
            0.5, 6.0, 3.0, 9.0, 11.0, 2.0, 7.0, 4.0, 1.0, 10.0, 5.0, 12.0,
        ];
        let flight = |extra_per_packet: f64| {
            let mut d = Dispersion::new(ms(1000.0));
            for p in 0..24u32 {
                let sent = 1000.0 + f64::from(p) * 0.96;
                d.on_ack(ms(sent), 1200);
                if p % 2 == 1 {
                    let rtt =
                        40.0 + jitter[(p as usize / 2) % 12] + extra_per_packet * f64::from(p);
                    d.on_end_acks(ms(sent + rtt));
                }
            }
            d
        };
        assert_eq!(
            flight(0.0).verdict(ms(10.0), 0.8, 2.4e6),
            Some(JumpVerdict::Pass)
        );
        // The same flight queued behind another flow: each packet 1 ms later than the one
        // before it.
        assert!(matches!(
            flight(1.0).verdict(ms(10.0), 0.8, 2.4e6),
            Some(JumpVerdict::Fail { .. })
        ));
    }

    #[test]
    fn no_verdict_before_the_flight_spans_enough_acks_nor_from_older_packets() {
        // 40 packets at 2.5 MB/s: 19 ms of ACKs, less than a quarter RTT.
        assert_eq!(
            flight(2.5e6, 2.5e6, 0.5, 40).verdict(ms(150.0), 0.8, 2.4e6),
            None
        );
        // Packets sent before the jump are not its flight.
        let mut d = Dispersion::new(ms(1000.0));
        for k in 0..100 {
            d.on_ack(ms(900.0), 1200);
            d.on_end_acks(ms(1500.0 + f64::from(k)));
        }
        assert_eq!(d.verdict(ms(10.0), 0.8, 2.4e6), None);
    }
}
