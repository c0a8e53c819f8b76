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
//! With `users` above 1 the source is that many independent on/off users of this shape,
//! each at `rate_bps` while on: their sum is the load. Many small users make a load that
//! fluctuates around its mean (`users x rate x on / (on + off)`) instead of switching
//! between nothing and everything, the superposition behind the classic models of
//! aggregated traffic. The users draw from one stream, in turn, so one user gives exactly
//! the draws of a single source.
//!
//! Cross packets go through the queue's limit and AQM like any packet (they can be
//! dropped, and they take their share of the rate and of the buffer), but not through the
//! direction's random loss process (its draws stay those of the modelled flows'), and
//! they leave the path at the bottleneck: nothing is delivered to the far end. Their
//! counts are kept apart in [`crate::DirectionStats`]; the bottleneck's ground truth
//! (occupancy, first drop, the packet log) includes them, as it is what really happened
//! there.
//!
//! On a preset, `cross=[Nx]RATE[:ON:OFF[:exp][:random]]` loads the down direction (the data
//! direction of a download) and `cross-up=...` the up direction: `geo-viasat:cross=50M`,
//! `thesis-sat:cross=10M:5s:5s:exp`, `geo-viasat-real:cross=40x1M:5s:15s:exp:random`
//! (40 users of 1 Mbit/s, each on a quarter of the time).

use crate::error::LinkError;
use crate::random::{STREAM_CROSS, stream_rng};
use crate::spec::{MAX_DELAY, MAX_RATE_BPS, MIN_PERIOD};
use crate::units::format_duration;
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
    /// Independent on/off users of this shape, each at `rate_bps` while on (see the module
    /// docs); 1 is a single source.
    #[serde(default = "one_user", skip_serializing_if = "is_one_user")]
    pub users: u32,
}

/// Most users a source may stand for.
pub const MAX_CROSS_USERS: u32 = 1_000;

fn default_packet_bytes() -> u32 {
    DEFAULT_CROSS_PACKET_BYTES
}

fn one_user() -> u32 {
    1
}

fn is_one_user(users: &u32) -> bool {
    *users == 1
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
        if !(1..=MAX_CROSS_USERS).contains(&self.users) {
            return Err(LinkError::invalid(
                "users",
                format!("{} must be between 1 and {MAX_CROSS_USERS}", self.users),
            ));
        }
        match (self.on, self.off) {
            (None, None) if self.users > 1 => Err(LinkError::invalid(
                "users",
                "needs on and off periods (constant users add up to one constant source)",
            )),
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
                    if d < MIN_PERIOD || d > MAX_DELAY * 60 {
                        return Err(LinkError::invalid(
                            field,
                            format!(
                                "is {}; it must be at least {} and at most 1 hour",
                                format_duration(d),
                                format_duration(MIN_PERIOD)
                            ),
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

    /// Parses a preset parameter: `[Nx]RATE[:ON:OFF[:exp][:random]]` (`50M`,
    /// `10M:5s:5s:exp`, `60M:2s:4s:exp:random`, `40x1M:5s:15s:exp:random`).
    pub fn parse_param(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split(':').map(str::trim).collect();
        let (users, rate) = match parts[0].split_once(['x', 'X']) {
            Some((n, rate)) => {
                let n = n.trim().parse::<u32>().map_err(|_| {
                    format!("cross traffic users {n:?}: expected a count, as in 40x1M")
                })?;
                (n, rate.trim())
            }
            None => (1, parts[0]),
        };
        let rate_bps = parse_rate_bps(rate).map_err(|e| format!("cross traffic rate: {e}"))?;
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
                    "cross traffic {text:?}: expected [Nx]RATE, [Nx]RATE:ON:OFF, then optionally :exp and :random"
                ));
            }
        };
        let spec = CrossTrafficSpec { users, ..spec };
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
            users: 1,
        }
    }
}

/// The running source: when each user's next packet arrives at the queue.
#[derive(Debug, Clone)]
pub(crate) struct CrossSource {
    spec: CrossTrafficSpec,
    rng: ChaCha8Rng,
    /// One per user.
    users: Vec<User>,
    /// The user whose packet comes next (the earliest; the first of equals).
    due: usize,
    /// Time between a user's packets while on.
    gap: Nanos,
}

#[derive(Debug, Clone, Copy)]
struct User {
    /// Arrival of the next packet.
    next: Nanos,
    /// End of the current on-period (`Nanos::MAX` for a constant source).
    on_until: Nanos,
}

impl CrossSource {
    pub(crate) fn new(spec: &CrossTrafficSpec, seed: u64) -> Self {
        let gap = (u128::from(spec.packet_bytes) * 8 * 1_000_000_000 / u128::from(spec.rate_bps))
            .max(1) as Nanos;
        let mut source = CrossSource {
            spec: spec.clone(),
            rng: stream_rng(seed, STREAM_CROSS),
            users: Vec::with_capacity(spec.users as usize),
            due: 0,
            gap,
        };
        for _ in 0..spec.users.max(1) {
            let user = source.first_user();
            source.users.push(user);
        }
        source.find_due();
        source
    }

    /// A user's state at time 0, drawn in the order a single source always drew.
    fn first_user(&mut self) -> User {
        let mut user = User {
            next: 0,
            on_until: Nanos::MAX,
        };
        if let (Some(on), Some(off)) = (self.spec.on, self.spec.off) {
            user.on_until = self.period(on);
            if self.spec.random_start {
                let cycle = to_nanos(on) as f64 + to_nanos(off) as f64;
                let on_now = self.rng.random_bool(to_nanos(on) as f64 / cycle);
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
                    user.on_until = rest(self, on);
                } else {
                    user.next = rest(self, off);
                    user.on_until = user.next.saturating_add(self.period(on));
                }
            }
        }
        user
    }

    fn find_due(&mut self) {
        // Users are few (at most MAX_CROSS_USERS) and a scan per packet is cheaper than
        // the queue's own work for any realistic count.
        self.due = (0..self.users.len())
            .min_by_key(|&i| self.users[i].next)
            .unwrap_or(0);
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
        self.users[self.due].next
    }

    /// Size of each packet.
    pub(crate) fn packet_bytes(&self) -> u32 {
        self.spec.packet_bytes
    }

    /// The packet at [`Self::next_arrival`] was sent: schedules that user's next one.
    pub(crate) fn advance(&mut self) {
        let mut user = self.users[self.due];
        let next = user.next.saturating_add(self.gap);
        if next < user.on_until {
            user.next = next;
        } else {
            // The on-period ended: silence, then a new on-period.
            let (on, off) = (
                self.spec.on.unwrap_or_default(),
                self.spec.off.unwrap_or_default(),
            );
            let start = user.on_until.saturating_add(self.period(off));
            user.on_until = start.saturating_add(self.period(on));
            user.next = start;
        }
        self.users[self.due] = user;
        if self.users.len() > 1 {
            self.find_due();
        }
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

    /// On and off periods below [`MIN_PERIOD`] would make a cycle per nanosecond of
    /// virtual time (issue 32 item 2).
    #[test]
    fn periods_below_the_minimum_are_refused_with_it() {
        for text in ["12M:1ns:1s", "12M:1s:999us"] {
            let e = CrossTrafficSpec::parse_param(text).unwrap_err();
            assert!(e.contains("at least 1ms"), "{text}: {e}");
        }
        CrossTrafficSpec::parse_param("12M:1ms:1ms").unwrap();
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
    fn many_users_make_a_load_that_fluctuates_around_its_mean() {
        // 40 users of 1.2 Mbit/s (100 packets/s each), on a quarter of the time: 1,000
        // packets/s on average.
        let spec = CrossTrafficSpec::parse_param("40x1200K:1s:3s:exp:random").unwrap();
        assert_eq!((spec.users, spec.rate_bps), (40, 1_200_000));
        let a = arrivals(&spec, 400_000_000_000);
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "arrivals in order");
        let mut per_second = [0u32; 400];
        for &t in &a {
            per_second[(t / 1_000_000_000) as usize] += 1;
        }
        let mean = a.len() as f64 / 400.0;
        assert!((900.0..1100.0).contains(&mean), "{mean}");
        let sd = (per_second
            .iter()
            .map(|&n| (f64::from(n) - mean).powi(2))
            .sum::<f64>()
            / 400.0)
            .sqrt();
        // Binomial(40, 1/4) users on: SD 2.7 users of 100 packets/s (less, averaged
        // over a second); never all silent, never all on.
        assert!((100.0..300.0).contains(&sd), "{sd}");
        assert!(per_second.iter().all(|&n| (100..3000).contains(&n)));
        // One source of the same mean switches between nothing and everything.
        let single = CrossTrafficSpec::parse_param("48M:1s:3s:exp:random").unwrap();
        let b = arrivals(&single, 400_000_000_000);
        let mut busy = [false; 400];
        for &t in &b {
            busy[(t / 1_000_000_000) as usize] = true;
        }
        assert!(busy.iter().filter(|&&x| !x).count() > 100);
        // The same seed, the same users; one user is the single source it always was.
        assert_eq!(a, arrivals(&spec, 400_000_000_000));
        let one = CrossTrafficSpec::parse_param("1x12M:100ms:300ms:exp:random").unwrap();
        let plain = CrossTrafficSpec::parse_param("12M:100ms:300ms:exp:random").unwrap();
        assert_eq!(one, plain);
        assert_eq!(
            arrivals(&one, 10_000_000_000),
            arrivals(&plain, 10_000_000_000)
        );
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
            "0x1M:1s:1s",
            "x1M:1s:1s",
            "ax1M:1s:1s",
            "5x1M",
            "2000x1M:1s:1s",
            "5x:1s:1s",
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
