//! A jump of the window towards the path's bandwidth-delay product, estimated from the
//! peak delivery rate, during the initial slow start.
//!
//! On a long, fast path the first acknowledgements already tell the sender how fast the
//! bottleneck drains: the initial window leaves in a burst and its acknowledgements come
//! back spaced by the bottleneck. picoquic uses this (`picoquic_estimate_max_path_bandwidth`
//! in `frames.c`, `picoquic_cc_update_target_cwin_estimation` in `cc_common.c`): it keeps
//! the *peak* delivery rate measured over intervals longer than 1 ms, each rate being the
//! bytes delivered over the longer of the acknowledgement interval and the send interval
//! of the acknowledged packets, and while in slow start it raises the window to half the
//! peak rate times an RTT. [`BdpJump`] is that rule with its constants named:
//!
//! | constant | value | picoquic |
//! |---|---|---|
//! | [`JUMP_FRACTION`] | 1/2 | `min_win = max_win / 2` |
//! | [`PEAK_RATE_MIN_INTERVAL`] | 1 ms | `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN` |
//! | [`JumpRtt`] | minimum RTT (`rtt=min`) | BBR's long-RTT startup: `bbr_state->min_rtt`; CUBIC and NewReno: `smoothed_rtt` (`rtt=smoothed`) |
//! | [`JUMP_TRAIN_RTTS`] | off; with `train`, 1/4 of the minimum RTT | none: ours ([`PeakRate`]) |
//! | [`JUMP_CAP_BDPS`] | off; with `cap`, 2 | none: ours, BBR's Startup cwnd gain |
//! | `train-fraction` | off | none: ours; the train's estimate, robust, without the half |
//! | [`TRAIN_MIN_INTERVAL`] | 4 ms (`train-interval=MS`) | none: ours |
//!
//! The default is the minimum RTT, the pipe's own: a smoothed RTT inflated by a queue
//! multiplies the jump by that queue. On `thesis-asym-99`, where the ACKs queue on a thin
//! return link, the smoothed RTT made the jump overshoot (BENCHMARKS.md, "Start-up
//! mechanisms").
//!
//! Spec part
//! `+jump[:fraction=F,interval=MS,rtt=min|smoothed,train[=F],cap[=K],train-fraction=F,train-interval=MS]`.
//! The jump only raises the window during the initial slow start, never while Careful
//! Resume holds it or a drain steps it down, and leaves the exit to the slow start: a jump
//! to half the estimate followed by `G`-fold growth reaches the pipe in one round trip and
//! then relies on SEARCH (or HyStart++) to stop. quinn-proto paces the larger window at
//! `1.25 x cwnd / smoothed RTT`, so the jump is spread over a round trip rather than sent
//! as a burst. Its own bursts are so small on a long path (10 datagrams at 600 ms) that
//! after the initial window the samples measure that pacing, not the bottleneck; `+burst`
//! ([`crate::burst`]) paces the initial slow start in quarter windows, picoquic's way, so
//! that they measure the bottleneck again.
//!
//! With `cap`, the initial slow start also stops growing the window at
//! [`JUMP_CAP_BDPS`] x the estimated BDP (from the train samples when trains are measured)
//! and holds it there while the estimate does not rise; the jump never goes past it
//! either. The slow start's heuristic (SEARCH, HyStart++) sees the held acknowledgements as
//! application-limited, so a hold is not mistaken for the path's plateau. It keeps the
//! window from overfilling a bottleneck queue a SEARCH exit would come too late for (a
//! 1-BDP buffer at 600 ms: qir-sat), and a bandwidth-on-demand link whose early grants make
//! the estimate low lifts the hold as the grants grow.
//!
//! The rate is a maximum, and a packet train measures the bottleneck's rate, not the
//! share left by other traffic: on a shared bottleneck the jump can overshoot, which is why
//! picoquic takes only half of it and why it is an option, measured in BENCHMARKS.md
//! ("Start-up mechanisms").

use std::fmt;
use std::time::Duration;

use crate::modifiers::{SpecPart, write_part};

/// Share of the estimated bandwidth-delay product the window jumps to (picoquic: 1/2).
pub const JUMP_FRACTION: f64 = 0.5;

/// Shortest acknowledgement interval a delivery-rate sample is taken over (picoquic's
/// `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN`, 1 ms): shorter ones are too coarse.
pub const PEAK_RATE_MIN_INTERVAL: Duration = Duration::from_millis(1);

/// How long a train of acknowledgements lasts with `+jump:train` (ours), in minimum RTTs:
/// long enough to span one flight's acknowledgements as jitter spreads them, short enough
/// not to reach the next flight's: on `sat-250-3:jitter=3ms` a wide range of values around
/// it gives the same runs, and a whole RTT merges flights (BENCHMARKS.md, "Start-up
/// mechanisms").
pub const JUMP_TRAIN_RTTS: f64 = 0.25;

/// Shortest interval a train sample is taken over (`+jump:train`, ours): the first ACK
/// of a train handled `d` late inflates a sample over `T` by `T / (T - d)`, and on real
/// sockets `d` reaches milliseconds (scheduling at both ends). Through `satquic run` on
/// geo-viasat, 1 ms let some runs measure several times the link's rate, 4 ms kept the
/// worst run within a small multiple of it, and 8 ms loses the jitter row's first flight
/// (BENCHMARKS.md, "Start-up mechanisms").
pub const TRAIN_MIN_INTERVAL: Duration = Duration::from_millis(4);

/// How far the initial slow start grows the window with `+jump:cap` (ours), in estimated
/// bandwidth-delay products (peak delivery rate x minimum RTT): BBR's Startup cwnd gain
/// of 2 (draft-ietf-ccwg-bbr Sec. 5.3.1.1, `BBR.DefaultCwndGain` in Startup; `bbr3`'s
/// `STARTUP_CWND_GAIN`): a BDP in flight and at most one more queued at the bottleneck.
/// Beyond it, growth only fills the queue towards the loss that ends slow start.
pub const JUMP_CAP_BDPS: f64 = 2.0;

/// Which RTT estimate turns the peak rate into a bandwidth-delay product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JumpRtt {
    /// The minimum RTT (picoquic's BBR long-RTT startup).
    #[default]
    Min,
    /// The smoothed RTT (picoquic's CUBIC and NewReno).
    Smoothed,
}

/// The jump's configuration. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BdpJump {
    /// Share of peak rate x RTT the window is raised to, in (0, 1].
    pub fraction: f64,
    /// Shortest acknowledgement interval of a rate sample.
    pub min_interval: Duration,
    /// The RTT of the product.
    pub rtt: JumpRtt,
    /// If set, acknowledgements are also measured against the first one of their train,
    /// a train lasting this many minimum RTTs ([`PeakRate`]; ours, not picoquic's).
    pub train: Option<f64>,
    /// Shortest interval of a train sample.
    pub train_interval: Duration,
    /// If set, the initial slow start does not grow the window past this many times the
    /// estimated bandwidth-delay product (peak rate x minimum RTT; ours, not picoquic's).
    /// With trains measured, the rate is the peak of the train samples alone
    /// ([`PeakRate::train_peak`]): a sample over the 1 ms minimum interval is inflated by
    /// any bunching of the acknowledgements (on real sockets, by the receiver's and the
    /// sender's scheduling: through `satquic run` on qir-sat a 1 ms sample read a multiple
    /// of the link's rate; BENCHMARKS.md, "Start-up mechanisms"), which the jump's half
    /// tolerates and a ceiling of twice the BDP does not; a train spans a whole flight.
    pub cap: Option<f64>,
    /// If set (with trains measured), the window also jumps to this share of the train
    /// samples' peak x minimum RTT: a robust estimate needs no halving (ours).
    pub train_fraction: Option<f64>,
}

impl Default for BdpJump {
    /// picoquic's constants, with the minimum RTT.
    fn default() -> Self {
        Self {
            fraction: JUMP_FRACTION,
            min_interval: PEAK_RATE_MIN_INTERVAL,
            rtt: JumpRtt::Min,
            train: None,
            train_interval: TRAIN_MIN_INTERVAL,
            cap: None,
            train_fraction: None,
        }
    }
}

impl BdpJump {
    /// The window the jump asks for at `peak` bytes per second, with minimum RTT `min`
    /// and smoothed RTT `smoothed`.
    pub fn target(&self, peak: f64, min: Duration, smoothed: Duration) -> u64 {
        let rtt = match self.rtt {
            JumpRtt::Min => min,
            JumpRtt::Smoothed => smoothed,
        };
        (self.fraction * peak * rtt.as_secs_f64()) as u64
    }

    /// The window the jump asks for with the train samples' peak `train_peak` as well:
    /// the larger of [`Self::target`] and `train_fraction` x `train_peak` x minimum RTT.
    pub fn target_with_train(
        &self,
        peak: f64,
        train_peak: f64,
        min: Duration,
        smoothed: Duration,
    ) -> u64 {
        let train = match (self.train, self.train_fraction) {
            (Some(_), Some(f)) => (f * train_peak * min.as_secs_f64()) as u64,
            _ => 0,
        };
        self.target(peak, min, smoothed).max(train)
    }

    /// The largest window the initial slow start grows to at `peak` bytes per second and
    /// minimum RTT `min`, if capped and the rate was measured.
    pub fn ceiling(&self, peak: f64, min: Duration) -> Option<u64> {
        let cap = self.cap?;
        (peak > 0.0).then_some((cap * peak * min.as_secs_f64()) as u64)
    }

    /// The trains measured at minimum RTT `min`, if any.
    pub fn train_at(&self, min: Duration) -> Option<Train> {
        self.train.map(|f| Train {
            length: min.mul_f64(f),
            min_interval: self.train_interval,
        })
    }
}

/// The value of jump option `key` as a finite number that `ok` accepts; otherwise a
/// one-line error saying it must be `what`.
fn number(key: &str, value: &str, ok: impl Fn(f64) -> bool, what: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && ok(*v))
        .ok_or_else(|| format!("jump option {key}={value} must be {what}"))
}

/// The value of jump option `key` as milliseconds in (0, 1000].
fn millis(key: &str, value: &str) -> Result<Duration, String> {
    let ms = number(
        key,
        value,
        |ms| ms > 0.0 && ms <= 1000.0,
        "milliseconds in (0, 1000]",
    )?;
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// In (0, 1].
fn in_unit(v: f64) -> bool {
    v > 0.0 && v <= 1.0
}

impl SpecPart for BdpJump {
    const NAME: &'static str = "jump";
    const STANDALONE_REFUSAL: &'static str = "has its own startup and takes no jump";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                Some(("fraction", v)) => {
                    out.fraction = number("fraction", v, in_unit, "a number in (0, 1]")?;
                }
                Some(("interval", v)) => out.min_interval = millis("interval", v)?,
                Some(("cap", v)) => {
                    out.cap = Some(number("cap", v, |k| k >= 1.0, "a number of BDPs >= 1")?);
                }
                Some(("train-fraction", v)) => {
                    out.train_fraction =
                        Some(number("train-fraction", v, in_unit, "a number in (0, 1]")?);
                }
                Some(("train-interval", v)) => out.train_interval = millis("train-interval", v)?,
                None if opt == "cap" => out.cap = Some(JUMP_CAP_BDPS),
                None if opt == "train" => out.train = Some(JUMP_TRAIN_RTTS),
                Some(("train", v)) => {
                    out.train = Some(number("train", v, in_unit, "a number of RTTs in (0, 1]")?);
                }
                Some(("rtt", "min")) => out.rtt = JumpRtt::Min,
                Some(("rtt", "smoothed")) => out.rtt = JumpRtt::Smoothed,
                _ => {
                    return Err(format!(
                        "unknown jump option '{opt}'; valid: fraction=F, interval=MS, rtt=min|smoothed, train[=F], cap[=K], train-fraction=F, train-interval=MS"
                    ));
                }
            }
        }
        Ok(out)
    }

    fn options(&self) -> Option<Vec<String>> {
        let mut opts = Vec::new();
        if self.fraction != JUMP_FRACTION {
            opts.push(format!("fraction={}", self.fraction));
        }
        if self.min_interval != PEAK_RATE_MIN_INTERVAL {
            opts.push(format!(
                "interval={}",
                self.min_interval.as_secs_f64() * 1000.0
            ));
        }
        if self.rtt == JumpRtt::Smoothed {
            opts.push("rtt=smoothed".into());
        }
        match self.train {
            Some(JUMP_TRAIN_RTTS) => opts.push("train".into()),
            Some(train) => opts.push(format!("train={train}")),
            None => {}
        }
        match self.cap {
            Some(JUMP_CAP_BDPS) => opts.push("cap".into()),
            Some(cap) => opts.push(format!("cap={cap}")),
            None => {}
        }
        if let Some(f) = self.train_fraction {
            opts.push(format!("train-fraction={f}"));
        }
        if self.train_interval != TRAIN_MIN_INTERVAL {
            opts.push(format!(
                "train-interval={}",
                self.train_interval.as_secs_f64() * 1000.0
            ));
        }
        Some(opts)
    }
}

impl fmt::Display for BdpJump {
    /// The `+jump[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

/// How trains of acknowledgements are measured: each lasts `length`, and a train sample
/// spans at least `min_interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Train {
    /// How long a train lasts from its first acknowledgement.
    pub length: Duration,
    /// Shortest interval of a train sample.
    pub min_interval: Duration,
}

/// The peak delivery rate, picoquic's way: a sample is the bytes delivered since a
/// reference acknowledgement over the longer of the time since it and the time between
/// the sending of the packets the two acknowledged, taken once that time exceeds the
/// minimum interval; the reference then moves to the current acknowledgement.
///
/// With a train length (`+jump:train=F`, ours), every acknowledgement is also measured
/// against the first one of its train, a train lasting `F` x the minimum RTT: when jitter
/// holds back one acknowledgement and bunches the next ones behind it, the moving
/// reference gives one sample over the gap, the train the whole flight's.
#[derive(Debug, Clone, Default)]
pub struct PeakRate {
    /// Bytes acknowledged so far.
    delivered: u64,
    /// The reference: bytes delivered, when it was acknowledged, when its newest
    /// acknowledged packet was sent.
    reference: Option<Mark>,
    /// The first acknowledgement of the current train, if trains are measured.
    train: Option<Mark>,
    /// Send time of the newest packet acknowledged in the current batch.
    batch_sent: Option<Duration>,
    /// The peak rate, bytes per second.
    peak: f64,
    /// The peak of the train samples alone, bytes per second.
    train_peak: f64,
}

/// A point a rate is measured from: bytes delivered, when they were acknowledged, when
/// the newest acknowledged packet was sent.
type Mark = (u64, Duration, Duration);

impl PeakRate {
    /// A packet sent at `sent` carrying `bytes` was acknowledged.
    pub fn on_ack(&mut self, sent: Duration, bytes: u64) {
        self.delivered = self.delivered.saturating_add(bytes);
        self.batch_sent = Some(self.batch_sent.map_or(sent, |s| s.max(sent)));
    }

    /// A batch of acknowledgements received at `now` ended; returns the peak rate (bytes
    /// per second) if it rose. `train`: how trains are measured, if they are.
    pub fn on_end_acks(
        &mut self,
        now: Duration,
        min_interval: Duration,
        train: Option<Train>,
    ) -> Option<f64> {
        let sent = self.batch_sent.take()?;
        let here = (self.delivered, now, sent);
        let mut best = None::<f64>;
        match self.reference {
            None => self.reference = Some(here),
            Some(from) => {
                if let Some(rate) = self.rate_since(from, now, sent, min_interval) {
                    best = Some(rate);
                    self.reference = Some(here);
                }
            }
        }
        if let Some(train) = train {
            match self.train {
                Some(from) if now.saturating_sub(from.1) <= train.length => {
                    if let Some(rate) = self.rate_since(from, now, sent, train.min_interval) {
                        self.train_peak = self.train_peak.max(rate);
                        best = Some(best.map_or(rate, |b| b.max(rate)));
                    }
                }
                _ => self.train = Some(here),
            }
        }
        let rate = best?;
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

    /// The peak of the train samples alone, bytes per second (0 before the first).
    pub fn train_peak(&self) -> f64 {
        self.train_peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

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
        let jump = BdpJump::default();
        assert_eq!(jump.target(rate.peak(), ms(600.0), ms(900.0)), 375_000);
        let smoothed = BdpJump {
            rtt: JumpRtt::Smoothed,
            ..jump
        };
        assert_eq!(smoothed.target(rate.peak(), ms(600.0), ms(900.0)), 562_500);
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

    #[test]
    fn a_train_measures_a_flight_that_jitter_spread_out() {
        // A flight of 8 x 1,200 bytes sent within 0.4 ms, acknowledged in 4 ACKs of 2
        // packets: jitter delays all but the first by 5.5 ms, and bunches them.
        let flight = |rate: &mut PeakRate, train: Option<Train>| {
            let acks = [300.0, 305.5, 305.6, 305.7];
            for (i, at) in acks.into_iter().enumerate() {
                for p in 0..2 {
                    rate.on_ack(ms(0.05 * (2 * i + p) as f64), 1200);
                }
                rate.on_end_acks(ms(at), PEAK_RATE_MIN_INTERVAL, train);
            }
        };
        let mut moving = PeakRate::default();
        flight(&mut moving, None);
        // The moving reference: one sample, the second ACK's 2,400 bytes over the gap.
        assert!(
            (moving.peak() - 2400.0 / 0.0055).abs() < 1.0,
            "{}",
            moving.peak()
        );
        let mut train = PeakRate::default();
        assert_eq!(BdpJump::default().train_at(ms(600.0)), None);
        let length = BdpJump::parse_options("train").unwrap().train_at(ms(600.0));
        assert_eq!(
            length,
            Some(Train {
                length: ms(600.0 * JUMP_TRAIN_RTTS),
                min_interval: TRAIN_MIN_INTERVAL
            })
        );
        flight(&mut train, length);
        // The train: the last three ACKs' 7,200 bytes over 5.7 ms.
        assert!(
            (train.peak() - 7200.0 / 0.0057).abs() < 1.0,
            "{}",
            train.peak()
        );
        assert_eq!(train.train_peak(), train.peak());
        assert_eq!(moving.train_peak(), 0.0);
        // A train ends after its length: the next flight, one RTT later, starts a new one
        // instead of being measured over the idle round trip.
        let before = train.peak();
        train.on_ack(ms(600.0), 1200);
        assert_eq!(
            train.on_end_acks(ms(900.0), PEAK_RATE_MIN_INTERVAL, length),
            None
        );
        train.on_ack(ms(600.1), 1200);
        assert_eq!(
            train.on_end_acks(ms(900.05), PEAK_RATE_MIN_INTERVAL, length),
            None
        );
        assert_eq!(train.peak(), before);
    }

    #[test]
    fn bunched_acknowledgements_inflate_a_short_sample_not_the_train() {
        // ACKs of 2,400 bytes every 2 ms (1.2 MB/s) for packets sent in one burst; the one
        // due at 4 ms is handled at 5.9 ms, the next at 7 ms.
        let mut rate = PeakRate::default();
        let train = Some(Train {
            length: ms(150.0),
            min_interval: TRAIN_MIN_INTERVAL,
        });
        for at in [0.0, 2.0, 5.9, 7.0, 8.0] {
            rate.on_ack(ms(0.0), 2400);
            rate.on_end_acks(ms(300.0 + at), PEAK_RATE_MIN_INTERVAL, train);
        }
        // 5.9 -> 7 ms: 2,400 bytes over 1.1 ms.
        assert!(
            (rate.peak() - 2400.0 / 0.0011).abs() < 1.0,
            "{}",
            rate.peak()
        );
        // The train: 9,600 bytes over the 8 ms since its first ACK at best.
        assert!(
            (rate.train_peak() - 1_200_000.0).abs() < 1.0,
            "{}",
            rate.train_peak()
        );
    }

    #[test]
    fn the_train_fraction_jumps_to_the_trains_estimate_unhalved() {
        let (min, smoothed) = (ms(600.0), ms(900.0));
        let plain = BdpJump::parse_options("train").unwrap();
        // Half of the 3 MB/s peak x 600 ms; the train's 2 MB/s is not used.
        assert_eq!(plain.target_with_train(3e6, 2e6, min, smoothed), 900_000);
        let full = BdpJump::parse_options("train,train-fraction=1").unwrap();
        assert_eq!(full.target_with_train(3e6, 2e6, min, smoothed), 1_200_000);
        // The larger of the two: an inflated 1 ms peak still rules when it is the higher.
        assert_eq!(full.target_with_train(6e6, 2e6, min, smoothed), 1_800_000);
        // Without trains the option has nothing to read.
        let no_train = BdpJump::parse_options("train-fraction=1").unwrap();
        assert_eq!(no_train.target_with_train(3e6, 2e6, min, smoothed), 900_000);
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in [
            "",
            "fraction=0.25",
            "interval=2",
            "fraction=1,interval=0.5",
            "rtt=smoothed",
            "train",
            "train=0.1",
            "cap",
            "cap=3,train",
            "train,cap,train-fraction=1",
            "train,train-interval=2",
            "fraction=0.5,train=1",
        ] {
            let j = BdpJump::parse_options(text).unwrap();
            let printed = j.to_string();
            let opts = printed
                .strip_prefix("+jump")
                .unwrap()
                .trim_start_matches(':');
            assert_eq!(BdpJump::parse_options(opts), Ok(j), "{text} -> {printed}");
        }
        for bad in [
            "fraction=0",
            "fraction=1.5",
            "interval=0",
            "interval=x",
            "train=0",
            "train=2",
            "cap=0.5",
            "cap=x",
            "train-fraction=0",
            "train-fraction=2",
            "train-interval=0",
            "train-interval=x",
            "big",
        ] {
            let e = BdpJump::parse_options(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            crate::modifiers::split_part("cubic+search+growth:x=3+jump+cr:jump-on-confirm", "jump"),
            (
                "cubic+search+growth:x=3+cr:jump-on-confirm".to_string(),
                Some("")
            )
        );
        assert_eq!(
            crate::modifiers::split_part("cubic+cr:jump-on-confirm", "jump"),
            ("cubic+cr:jump-on-confirm".to_string(), None)
        );
    }
}
