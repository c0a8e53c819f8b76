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
//!
//! The default is the minimum RTT, the pipe's own: a smoothed RTT inflated by a queue
//! multiplies the jump by that queue. On `thesis-asym-99`, where the ACKs queue on a thin
//! return link, the smoothed RTT made the jump overshoot (BENCHMARKS.md).
//!
//! Spec part `+jump[:fraction=F,interval=MS,rtt=min|smoothed]`. The jump only raises the window during the
//! initial slow start, never while Careful Resume holds it or a drain steps it down, and
//! leaves the exit to the slow start: a jump to half the estimate followed by `G`-fold
//! growth reaches the pipe in one round trip and then relies on SEARCH (or HyStart++) to
//! stop. quinn-proto paces the larger window at `1.25 x cwnd / smoothed RTT`, so the jump
//! is spread over a round trip rather than sent as a burst. Its own bursts are so small on
//! a long path (10 datagrams at 600 ms) that after the initial window the samples measure
//! that pacing, not the bottleneck; `+burst` ([`crate::burst`]) paces the initial slow
//! start in quarter windows, picoquic's way, so that they measure the bottleneck again.
//!
//! The rate is a maximum, and a packet train measures the bottleneck's rate, not the
//! share left by other traffic: on a shared bottleneck the jump can overshoot, which is why
//! picoquic takes only half of it and why it is an option, measured in BENCHMARKS.md
//! ("Start-up: a jump to the delivery-rate BDP").

use std::fmt;
use std::time::Duration;

/// Share of the estimated bandwidth-delay product the window jumps to (picoquic: 1/2).
pub const JUMP_FRACTION: f64 = 0.5;

/// Shortest acknowledgement interval a delivery-rate sample is taken over (picoquic's
/// `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MIN`, 1 ms): shorter ones are too coarse.
pub const PEAK_RATE_MIN_INTERVAL: Duration = Duration::from_millis(1);

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
}

impl Default for BdpJump {
    /// picoquic's constants, with the minimum RTT.
    fn default() -> Self {
        Self {
            fraction: JUMP_FRACTION,
            min_interval: PEAK_RATE_MIN_INTERVAL,
            rtt: JumpRtt::Min,
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

    /// Parses the options of a `+jump[:...]` spec part; errors are one line.
    pub(crate) fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                Some(("fraction", v)) => {
                    out.fraction = v
                        .parse()
                        .ok()
                        .filter(|f: &f64| f.is_finite() && *f > 0.0 && *f <= 1.0)
                        .ok_or_else(|| {
                            format!("jump option fraction={v} must be a number in (0, 1]")
                        })?;
                }
                Some(("interval", v)) => {
                    let ms: f64 = v
                        .parse()
                        .ok()
                        .filter(|ms: &f64| ms.is_finite() && *ms > 0.0 && *ms <= 1000.0)
                        .ok_or_else(|| {
                            format!("jump option interval={v} must be milliseconds in (0, 1000]")
                        })?;
                    out.min_interval = Duration::from_secs_f64(ms / 1000.0);
                }
                Some(("rtt", "min")) => out.rtt = JumpRtt::Min,
                Some(("rtt", "smoothed")) => out.rtt = JumpRtt::Smoothed,
                _ => {
                    return Err(format!(
                        "unknown jump option '{opt}'; valid: fraction=F, interval=MS, rtt=min|smoothed"
                    ));
                }
            }
        }
        Ok(out)
    }
}

impl fmt::Display for BdpJump {
    /// The `+jump[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        crate::spec::write_part(f, "jump", &opts)
    }
}

/// The peak delivery rate, picoquic's way: a sample is the bytes delivered since a
/// reference acknowledgement over the longer of the time since it and the time between
/// the sending of the packets the two acknowledged, taken once that time exceeds the
/// minimum interval; the reference then moves to the current acknowledgement.
#[derive(Debug, Clone, Default)]
pub struct PeakRate {
    /// Bytes acknowledged so far.
    delivered: u64,
    /// The reference: bytes delivered, when it was acknowledged, when its newest
    /// acknowledged packet was sent.
    reference: Option<(u64, Duration, Duration)>,
    /// Send time of the newest packet acknowledged in the current batch.
    batch_sent: Option<Duration>,
    /// The peak rate, bytes per second.
    peak: f64,
}

impl PeakRate {
    /// A packet sent at `sent` carrying `bytes` was acknowledged.
    pub fn on_ack(&mut self, sent: Duration, bytes: u64) {
        self.delivered = self.delivered.saturating_add(bytes);
        self.batch_sent = Some(self.batch_sent.map_or(sent, |s| s.max(sent)));
    }

    /// A batch of acknowledgements received at `now` ended; returns the peak rate (bytes
    /// per second) if it rose.
    pub fn on_end_acks(&mut self, now: Duration, min_interval: Duration) -> Option<f64> {
        let sent = self.batch_sent.take()?;
        let Some((delivered, acked_at, sent_at)) = self.reference else {
            self.reference = Some((self.delivered, now, sent));
            return None;
        };
        if sent < sent_at {
            return None;
        }
        let receive = now.saturating_sub(acked_at);
        if receive <= min_interval {
            return None;
        }
        let interval = receive.max(sent - sent_at);
        let rate = (self.delivered - delivered) as f64 / interval.as_secs_f64();
        self.reference = Some((self.delivered, now, sent));
        (rate > self.peak).then(|| {
            self.peak = rate;
            rate
        })
    }

    /// The peak rate so far, bytes per second (0 before the first sample).
    pub fn peak(&self) -> f64 {
        self.peak
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
            rate.on_end_acks(ms(300.0 + 2.0 * f64::from(ack)), PEAK_RATE_MIN_INTERVAL);
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
        rate.on_end_acks(ms(300.0), PEAK_RATE_MIN_INTERVAL);
        rate.on_ack(ms(10.0), 1000);
        assert_eq!(
            rate.on_end_acks(ms(301.5), PEAK_RATE_MIN_INTERVAL),
            Some(100_000.0)
        );
        // Intervals at or below the minimum give no sample.
        rate.on_ack(ms(20.0), 1000);
        assert_eq!(rate.on_end_acks(ms(302.0), PEAK_RATE_MIN_INTERVAL), None);
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in [
            "",
            "fraction=0.25",
            "interval=2",
            "fraction=1,interval=0.5",
            "rtt=smoothed",
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
            "big",
        ] {
            let e = BdpJump::parse_options(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            crate::spec::split_part("cubic+search+growth:x=3+jump+cr:jump-on-confirm", "jump"),
            (
                "cubic+search+growth:x=3+cr:jump-on-confirm".to_string(),
                Some("")
            )
        );
        assert_eq!(
            crate::spec::split_part("cubic+cr:jump-on-confirm", "jump"),
            ("cubic+cr:jump-on-confirm".to_string(), None)
        );
    }
}
