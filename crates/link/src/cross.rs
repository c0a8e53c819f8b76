//! Cross traffic: background packets from other users that share a direction's
//! bottleneck queue with the modelled flows.
//!
//! A source sends packets of `packet_bytes` at `rate_bps`, either all the time (constant
//! bit rate) or in on/off periods: `on` of sending, then `off` of silence, starting with
//! an on-period at time 0. With `exponential`, each period's length is drawn from an
//! exponential distribution with that mean (a Markov on/off source, the classic model of
//! aggregated web traffic), from the direction's own random stream, so the same seed gives
//! the same background. With `random_start`, time 0 falls at a random point of the cycle
//! instead: the source is on with probability `on / (on + off)`, for the rest of a period
//! (for exponential periods, memoryless, a fresh draw; for fixed ones, a uniform part), so
//! a run starts in the source's steady state rather than at the start of a burst.
//!
//! Cross packets go through the queue's limit and AQM like any packet (they can be
//! dropped, and they take their share of the rate and of the buffer), but not through the
//! direction's random loss process (its draws stay those of the modelled flows'), and
//! they leave the path at the bottleneck: nothing is delivered to the far end. Their
//! counts are kept apart in [`crate::DirectionStats`]; the bottleneck's ground truth
//! (occupancy, first drop, the packet log) includes them, as it is what really happened
//! there.
//!
//! On a preset, `cross=RATE[:ON:OFF[:exp]]` loads the down direction (the data direction
//! of a download) and `cross-up=...` the up direction: `geo-viasat:cross=50M`,
//! `thesis-sat:cross=10M:5s:5s:exp`.

use crate::error::LinkError;
use crate::random::{STREAM_CROSS, stream_rng};
use crate::spec::{MAX_DELAY, MAX_RATE_BPS};
use crate::units::{Nanos, duration_str, parse_duration, parse_rate_bps, to_nanos};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Size of a cross-traffic packet unless given: a full Ethernet frame's IP packet.
pub const DEFAULT_CROSS_PACKET_BYTES: u32 = 1500;

/// Background load on a direction's bottleneck. See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossTrafficSpec {
    /// Sending rate while on, bit/s.
    pub rate_bps: u64,
    /// Size of each packet, bytes (IP).
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// Length (or mean length) of an on-period; with `off`, an on/off source.
    #[serde(
        default,
        with = "duration_str::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub on: Option<Duration>,
    /// Length (or mean length) of an off-period.
    #[serde(
        default,
        with = "duration_str::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub off: Option<Duration>,
    /// Draw each period from an exponential distribution with the given mean.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exponential: bool,
    /// Start at a random point of the on/off cycle instead of at the start of an
    /// on-period (see the module docs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_start: bool,
}

fn default_packet_bytes() -> u32 {
    DEFAULT_CROSS_PACKET_BYTES
}

impl CrossTrafficSpec {
    /// Checks the values; field names in errors are relative to the spec.
    pub fn validate(&self) -> Result<(), LinkError> {
        if self.rate_bps == 0 || self.rate_bps > MAX_RATE_BPS {
            return Err(LinkError::invalid(
                "rate_bps",
                format!(
                    "{} must be between 1 and {MAX_RATE_BPS} bit/s",
                    self.rate_bps
                ),
            ));
        }
        if !(40..=65_535).contains(&self.packet_bytes) {
            return Err(LinkError::invalid(
                "packet_bytes",
                format!("{} must be between 40 and 65535 bytes", self.packet_bytes),
            ));
        }
        match (self.on, self.off) {
            (None, None) if self.exponential => Err(LinkError::invalid(
                "exponential",
                "needs on and off periods to draw",
            )),
            (None, None) if self.random_start => Err(LinkError::invalid(
                "random_start",
                "needs on and off periods (a constant source has no cycle)",
            )),
            (None, None) => Ok(()),
            (Some(on), Some(off)) => {
                for (field, d) in [("on", on), ("off", off)] {
                    if d.is_zero() || d > MAX_DELAY * 60 {
                        return Err(LinkError::invalid(
                            field,
                            "must be longer than 0 and at most 1 hour",
                        ));
                    }
                }
                Ok(())
            }
            _ => Err(LinkError::invalid(
                "on",
                "on and off go together (neither: constant bit rate)",
            )),
        }
    }

    /// Parses a preset parameter: `RATE[:ON:OFF[:exp][:random]]` (`50M`,
    /// `10M:5s:5s:exp`, `60M:2s:4s:exp:random`).
    pub fn parse_param(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').map(str::trim).collect();
        let rate_bps = parse_rate_bps(parts[0]).map_err(|e| format!("cross traffic rate: {e}"))?;
        let period = |p: &str| parse_duration(p).map_err(|e| format!("cross traffic period: {e}"));
        let spec = match parts.as_slice() {
            [_] => CrossTrafficSpec::constant(rate_bps),
            [_, on, off, flags @ ..]
                if matches!(flags, [] | ["exp"] | ["random"] | ["exp", "random"]) =>
            {
                CrossTrafficSpec {
                    on: Some(period(on)?),
                    off: Some(period(off)?),
                    exponential: flags.contains(&"exp"),
                    random_start: flags.contains(&"random"),
                    ..CrossTrafficSpec::constant(rate_bps)
                }
            }
            _ => {
                return Err(format!(
                    "cross traffic {text:?}: expected RATE, RATE:ON:OFF, then optionally :exp and :random"
                ));
            }
        };
        spec.validate().map_err(|e| e.to_string())?;
        Ok(spec)
    }

    /// A constant-bit-rate source of full-size packets.
    pub fn constant(rate_bps: u64) -> Self {
        CrossTrafficSpec {
            rate_bps,
            packet_bytes: DEFAULT_CROSS_PACKET_BYTES,
            on: None,
            off: None,
            exponential: false,
            random_start: false,
        }
    }
}

/// The running source: when its next packet arrives at the queue.
#[derive(Debug, Clone)]
pub(crate) struct CrossSource {
    spec: CrossTrafficSpec,
    rng: ChaCha8Rng,
    /// Arrival of the next packet.
    next: Nanos,
    /// End of the current on-period (`Nanos::MAX` for a constant source).
    on_until: Nanos,
    /// Time between packets while on.
    gap: Nanos,
}

impl CrossSource {
    pub(crate) fn new(spec: &CrossTrafficSpec, seed: u64) -> Self {
        let gap = (u128::from(spec.packet_bytes) * 8 * 1_000_000_000 / u128::from(spec.rate_bps))
            .max(1) as Nanos;
        let mut source = CrossSource {
            spec: spec.clone(),
            rng: stream_rng(seed, STREAM_CROSS),
            next: 0,
            on_until: Nanos::MAX,
            gap,
        };
        if let (Some(on), Some(off)) = (source.spec.on, source.spec.off) {
            source.on_until = source.period(on);
            if source.spec.random_start {
                let cycle = to_nanos(on) as f64 + to_nanos(off) as f64;
                let on_now = source.rng.random_bool(to_nanos(on) as f64 / cycle);
                // The rest of the current period: a fresh draw for exponential periods
                // (memoryless), a uniform part of a fixed one.
                let rest = |s: &mut Self, d: Duration| -> Nanos {
                    if s.spec.exponential {
                        s.period(d)
                    } else {
                        s.rng.random_range(1..=to_nanos(d).max(1))
                    }
                };
                if on_now {
                    source.on_until = rest(&mut source, on);
                } else {
                    source.next = rest(&mut source, off);
                    source.on_until = source.next.saturating_add(source.period(on));
                }
            }
        }
        source
    }

    /// Length of a period with mean (or fixed length) `d`, at least 1 ns.
    fn period(&mut self, d: Duration) -> Nanos {
        let mean = to_nanos(d);
        if self.spec.exponential {
            let u: f64 = self.rng.random();
            ((-(1.0 - u).ln()) * mean as f64).max(1.0) as Nanos
        } else {
            mean.max(1)
        }
    }

    /// When the next packet arrives.
    pub(crate) fn next_arrival(&self) -> Nanos {
        self.next
    }

    /// Size of each packet.
    pub(crate) fn packet_bytes(&self) -> u32 {
        self.spec.packet_bytes
    }

    /// The packet at [`Self::next_arrival`] was sent: schedules the one after it.
    pub(crate) fn advance(&mut self) {
        let next = self.next.saturating_add(self.gap);
        if next < self.on_until {
            self.next = next;
            return;
        }
        // The on-period ended: silence, then a new on-period.
        let (on, off) = (
            self.spec.on.unwrap_or_default(),
            self.spec.off.unwrap_or_default(),
        );
        let start = self.on_until.saturating_add(self.period(off));
        self.on_until = start.saturating_add(self.period(on));
        self.next = start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrivals(spec: &CrossTrafficSpec, until: Nanos) -> Vec<Nanos> {
        let mut s = CrossSource::new(spec, 7);
        let mut out = Vec::new();
        while s.next_arrival() < until {
            out.push(s.next_arrival());
            s.advance();
        }
        out
    }

    #[test]
    fn a_constant_source_sends_at_its_rate() {
        // 12 Mbit/s of 1,500-byte packets: one every 1 ms.
        let a = arrivals(&CrossTrafficSpec::constant(12_000_000), 1_000_000_000);
        assert_eq!(a.len(), 1000);
        assert!(a.windows(2).all(|w| w[1] - w[0] == 1_000_000));
    }

    #[test]
    fn an_on_off_source_is_silent_between_its_periods() {
        let spec = CrossTrafficSpec::parse_param("12M:100ms:300ms").unwrap();
        let a = arrivals(&spec, 800_000_000);
        // On 0-100 ms and 400-500 ms: 100 packets each.
        assert_eq!(a.len(), 200);
        assert!(
            a.iter()
                .all(|&t| t < 100_000_000 || (400_000_000..500_000_000).contains(&t))
        );
        // Exponential periods average out to the duty cycle and repeat with the seed.
        let exp = CrossTrafficSpec::parse_param("12M:100ms:300ms:exp").unwrap();
        let long = arrivals(&exp, 200_000_000_000);
        let duty = long.len() as f64 / 200_000.0;
        assert!((duty - 0.25).abs() < 0.05, "{duty}");
        assert_eq!(long, arrivals(&exp, 200_000_000_000));
    }

    #[test]
    fn a_random_start_begins_anywhere_in_the_cycle() {
        // 25 % duty: about a quarter of the seeds start in an on-period.
        let spec = CrossTrafficSpec::parse_param("12M:100ms:300ms:exp:random").unwrap();
        assert!(spec.random_start && spec.exponential);
        let firsts: Vec<Nanos> = (0..400)
            .map(|seed| CrossSource::new(&spec, seed).next_arrival())
            .collect();
        let on_at_zero = firsts.iter().filter(|&&t| t == 0).count();
        assert!((60..=140).contains(&on_at_zero), "{on_at_zero}");
        // The others start after a rest of an off-period, 300 ms on average.
        let off: Vec<f64> = firsts
            .iter()
            .filter(|&&t| t > 0)
            .map(|&t| t as f64)
            .collect();
        let mean = off.iter().sum::<f64>() / off.len() as f64;
        assert!((200e6..400e6).contains(&mean), "{mean}");
        // Fixed periods: a uniform part of the period, and the duty cycle is kept.
        let fixed = CrossTrafficSpec::parse_param("12M:100ms:300ms:random").unwrap();
        assert!(!fixed.exponential);
        let a = {
            let mut s = CrossSource::new(&fixed, 3);
            let mut n = 0u64;
            while s.next_arrival() < 40_000_000_000 {
                n += 1;
                s.advance();
            }
            n
        };
        assert!((9_900..=10_100).contains(&a), "{a}");
        // Without :random the source starts sending at 0 whatever the seed.
        let plain = CrossTrafficSpec::parse_param("12M:100ms:300ms:exp").unwrap();
        assert!((0..50).all(|seed| CrossSource::new(&plain, seed).next_arrival() == 0));
    }

    #[test]
    fn bad_parameters_are_one_line_errors() {
        for bad in [
            "",
            "0",
            "fast",
            "10M:1s",
            "10M:1s:0s",
            "10M:1s:1s:gauss",
            "10M:1s:1s:random:exp",
            "10M:1s:1s:exp:exp",
            "10M:random",
            "10M:x:1s",
        ] {
            let e = CrossTrafficSpec::parse_param(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
        let bad = CrossTrafficSpec {
            exponential: true,
            ..CrossTrafficSpec::constant(1_000_000)
        };
        assert!(bad.validate().is_err());
    }
}
