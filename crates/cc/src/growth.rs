//! Start-up growth faster than doubling, for long-RTT paths.
//!
//! Slow start grows the window by the bytes acknowledged, doubling it every round trip.
//! From RFC 9002's 10-packet initial window that takes about 12 round trips, 7 s at a GEO
//! RTT of 600 ms, to fill a 250 Mbit/s pipe. A [`StartupGrowth`] multiplies the increase
//! the slow start asks for during the *initial* slow start, so the window grows by a
//! factor `G` per round trip instead of 2. It changes nothing else: the slow start still
//! decides when to leave (SEARCH's current draft compares delivered bytes with the bytes
//! sent one RTT earlier, so its test holds at any growth rate), and slow start after a
//! loss stays classic (RFC 9002 Sec. 7.3.1).
//!
//! | spec (`+growth:...`) | growth per round trip | source |
//! |---|---|---|
//! | (none) | 2 | RFC 5681 Sec. 3.1, RFC 9002 Sec. 7.3.1 |
//! | `x=G` | `G` (`1 < G <= MAX_FACTOR`) | ours: a fixed factor, e.g. 3 or 4 |
//! | `rtt` | `1 + min(srtt, max-rtt) / ref` when `srtt > ref`, else 2 | picoquic `cc_common.c`: the slow-start increase times RTT / 100 ms for RTTs above 100 ms, RTT capped at 610 ms |
//!
//! With `rtt` the window is also floored at the initial window times the same ratio as
//! soon as the handshake has measured the RTT ([`StartupGrowth::window_floor`]; picoquic
//! raises its minimum window the same way). `rtt` takes `ref=MS` ([`RTT_SCALED_REFERENCE`], 100 ms) and `max-rtt=MS`
//! ([`RTT_SCALED_MAX_RTT`], 610 ms): at a 600 ms GEO RTT the window grows 7x per round
//! trip, as picoquic's does; below 100 ms it doubles. Hybla's slow start
//! (`+hybla`, `2^(RTT/RTT0) - 1` per ACK) is the older, far steeper form of the same idea.
//!
//! Growth this fast overshoots by up to `G` times the pipe if nothing stops it, so it
//! belongs with a slow start that exits at the chokepoint (SEARCH) and with pacing
//! (quinn-proto paces at 1.25 x cwnd / smoothed RTT).

use std::fmt;
use std::time::Duration;

use crate::modifiers::{SpecPart, write_part};

/// picoquic's reference RTT for its long-RTT slow-start increase (`PICOQUIC_TARGET_RENO_RTT`,
/// 100 ms, in `cc_common.c`).
pub const RTT_SCALED_REFERENCE: Duration = Duration::from_millis(100);

/// picoquic's cap on the RTT used to scale the increase (`PICOQUIC_TARGET_SATELLITE_RTT`,
/// 610 ms).
pub const RTT_SCALED_MAX_RTT: Duration = Duration::from_millis(610);

/// Largest fixed growth factor a spec may ask for.
pub const MAX_FACTOR: f64 = 16.0;

/// How fast the window grows during the initial slow start. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum StartupGrowth {
    /// Doubling per round trip: the increase is what the slow start asks for.
    #[default]
    Double,
    /// A fixed factor per round trip: the increase is multiplied by `factor - 1`.
    Factor(f64),
    /// picoquic's long-RTT rule: the increase is multiplied by
    /// `min(srtt, max_rtt) / reference` when the smoothed RTT is above `reference`.
    RttScaled {
        reference: Duration,
        max_rtt: Duration,
    },
}

impl StartupGrowth {
    /// picoquic's rule with its constants.
    pub fn rtt_scaled() -> Self {
        Self::RttScaled {
            reference: RTT_SCALED_REFERENCE,
            max_rtt: RTT_SCALED_MAX_RTT,
        }
    }

    /// The multiplier applied to a slow-start increase at smoothed RTT `srtt`.
    pub fn multiplier(&self, srtt: Duration) -> f64 {
        match *self {
            Self::Double => 1.0,
            Self::Factor(g) => g - 1.0,
            Self::RttScaled { reference, max_rtt } => {
                if srtt > reference && !reference.is_zero() {
                    srtt.min(max_rtt).as_secs_f64() / reference.as_secs_f64()
                } else {
                    1.0
                }
            }
        }
    }

    /// How many times the window grows per round trip at smoothed RTT `srtt`: 2 for
    /// doubling, `G` for `x=G`, `1 + min(srtt, max_rtt) / reference` for `rtt`.
    pub fn per_rtt(&self, srtt: Duration) -> f64 {
        1.0 + self.multiplier(srtt)
    }

    /// picoquic's long-RTT window floor: with [`StartupGrowth::RttScaled`], once the RTT is
    /// known (the handshake gives the first sample) and while the initial slow start has
    /// not grown the window past it, the window is at least the initial window times
    /// `min(srtt, max_rtt) / reference` (10 packets become 60 at a 600 ms RTT). `None` for
    /// the other growths or short RTTs.
    pub fn window_floor(&self, initial_window: u64, srtt: Duration) -> Option<u64> {
        match *self {
            Self::RttScaled { reference, .. } if srtt > reference => {
                Some((initial_window as f64 * self.multiplier(srtt)) as u64)
            }
            _ => None,
        }
    }
}

impl SpecPart for StartupGrowth {
    const NAME: &'static str = "growth";
    const STANDALONE_REFUSAL: &'static str = "has its own startup and takes no growth";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = None;
        let mut reference = RTT_SCALED_REFERENCE;
        let mut max_rtt = RTT_SCALED_MAX_RTT;
        let mut scaled = false;
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                None if opt == "rtt" => scaled = true,
                Some(("x", v)) => {
                    let g: f64 = v
                        .parse()
                        .map_err(|_| format!("growth option x={v} is not a number"))?;
                    if !(g.is_finite() && g > 1.0 && g <= MAX_FACTOR) {
                        return Err(format!(
                            "growth option x={v} must be above 1 and at most {MAX_FACTOR}"
                        ));
                    }
                    out = Some(Self::Factor(g));
                }
                Some((key @ ("ref" | "max-rtt"), v)) => {
                    let d = rtt_option("growth", key, v)?;
                    if key == "ref" {
                        reference = d;
                    } else {
                        max_rtt = d;
                    }
                    scaled = true;
                }
                _ => {
                    return Err(format!(
                        "unknown growth option '{opt}'; valid: x=G, rtt, ref=MS, max-rtt=MS"
                    ));
                }
            }
        }
        match (out, scaled) {
            (Some(_), true) => Err("growth takes either x=G or rtt, not both".into()),
            (Some(g), false) => Ok(g),
            (None, true) => Ok(Self::RttScaled { reference, max_rtt }),
            (None, false) => Err("growth needs x=G or rtt".into()),
        }
    }

    /// `x=G` or `rtt[,ref=MS][,max-rtt=MS]`; nothing for doubling.
    fn options(&self) -> Option<Vec<String>> {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        match *self {
            Self::Double => None,
            Self::Factor(g) => Some(vec![format!("x={g}")]),
            Self::RttScaled { reference, max_rtt } => {
                let mut opts = vec!["rtt".to_string()];
                if reference != RTT_SCALED_REFERENCE {
                    opts.push(format!("ref={}", ms(reference)));
                }
                if max_rtt != RTT_SCALED_MAX_RTT {
                    opts.push(format!("max-rtt={}", ms(max_rtt)));
                }
                Some(opts)
            }
        }
    }
}

impl fmt::Display for StartupGrowth {
    /// The `+growth:...` spec part (empty for doubling).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

/// The value of a `ref=MS` or `max-rtt=MS` option of spec part `part`: milliseconds in
/// (0, 60000].
fn rtt_option(part: &str, key: &str, value: &str) -> Result<Duration, String> {
    value
        .parse()
        .ok()
        .filter(|ms: &f64| ms.is_finite() && *ms > 0.0 && *ms <= 60_000.0)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .ok_or_else(|| format!("{part} option {key}={value} must be milliseconds in (0, 60000]"))
}

/// picoquic's long-RTT window floor on its own, for any growth (spec part
/// `+floor[:ref=MS,max-rtt=MS,iw=BYTES]`): during the initial slow start, once an RTT has
/// been measured, the window is at least the initial window times `min(min_rtt, max_rtt) /
/// reference` when the minimum RTT exceeds `reference` (picoquic
/// `picoquic_cc_update_cwin_for_long_rtt` in `cc_common.c`, applied by its CUBIC and
/// NewReno on every RTT measurement of the initial slow start). At a 600 ms GEO RTT the
/// 10-packet initial window becomes 60 packets one round trip into the connection, and
/// the first flight after the handshake is six times larger. `+growth:rtt` includes the
/// same floor (on the smoothed RTT). The window it scales is the connection's initial
/// window unless `iw=BYTES` names another: picoquic scales its own, `PICOQUIC_CWIN_INITIAL`
/// = 10 x its 1,536-byte largest packet = [`PICOQUIC_INITIAL_WINDOW`] (quinn's is 10 x 1,200
/// bytes, RFC 9002's `kInitialWindow` at QUIC's minimum datagram size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttWindowFloor {
    /// RTT at which the floor is the initial window (picoquic: 100 ms).
    pub reference: Duration,
    /// Largest RTT the floor scales with (picoquic: 610 ms).
    pub max_rtt: Duration,
    /// The window the floor scales, bytes; `None`: the connection's initial window.
    pub initial_window: Option<u64>,
}

/// picoquic's initial window, `PICOQUIC_CWIN_INITIAL` (`picoquic_internal.h`): 10 x its
/// `PICOQUIC_MAX_PACKET_SIZE` of 1,536 bytes.
pub const PICOQUIC_INITIAL_WINDOW: u64 = 10 * 1536;

impl Default for RttWindowFloor {
    /// picoquic's constants.
    fn default() -> Self {
        Self {
            reference: RTT_SCALED_REFERENCE,
            max_rtt: RTT_SCALED_MAX_RTT,
            initial_window: None,
        }
    }
}

impl RttWindowFloor {
    /// The floor for `initial_window` at minimum RTT `min_rtt`, if it is long.
    pub fn window_floor(&self, initial_window: u64, min_rtt: Duration) -> Option<u64> {
        let initial_window = self.initial_window.unwrap_or(initial_window);
        (min_rtt > self.reference && !self.reference.is_zero()).then(|| {
            let scaled = u128::from(initial_window) * min_rtt.min(self.max_rtt).as_nanos()
                / self.reference.as_nanos();
            u64::try_from(scaled).unwrap_or(u64::MAX)
        })
    }
}

impl SpecPart for RttWindowFloor {
    const NAME: &'static str = "floor";
    const STANDALONE_REFUSAL: &'static str = "has its own startup and takes no floor";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                Some((key @ ("ref" | "max-rtt"), v)) => {
                    let d = rtt_option("floor", key, v)?;
                    if key == "ref" {
                        out.reference = d;
                    } else {
                        out.max_rtt = d;
                    }
                }
                Some(("iw", v)) => {
                    out.initial_window = Some(
                        v.parse()
                            .ok()
                            .filter(|b: &u64| (1200..=1 << 30).contains(b))
                            .ok_or_else(|| {
                                format!("floor option iw={v} must be bytes in 1200..=1073741824")
                            })?,
                    );
                }
                _ => {
                    return Err(format!(
                        "unknown floor option '{opt}'; valid: ref=MS, max-rtt=MS, iw=BYTES"
                    ));
                }
            }
        }
        Ok(out)
    }

    fn options(&self) -> Option<Vec<String>> {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut opts = Vec::new();
        if self.reference != RTT_SCALED_REFERENCE {
            opts.push(format!("ref={}", ms(self.reference)));
        }
        if self.max_rtt != RTT_SCALED_MAX_RTT {
            opts.push(format!("max-rtt={}", ms(self.max_rtt)));
        }
        if let Some(iw) = self.initial_window {
            opts.push(format!("iw={iw}"));
        }
        Some(opts)
    }
}

impl fmt::Display for RttWindowFloor {
    /// The `+floor[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_floor_alone_is_picoquics_long_rtt_minimum_window() {
        let floor = RttWindowFloor::default();
        assert_eq!(
            floor.window_floor(12_000, Duration::from_millis(600)),
            Some(72_000)
        );
        assert_eq!(
            floor.window_floor(12_000, Duration::from_secs(2)),
            Some(73_200)
        );
        assert_eq!(floor.window_floor(12_000, Duration::from_millis(100)), None);
        let custom = RttWindowFloor::parse_options("ref=200,max-rtt=400").unwrap();
        assert_eq!(
            custom.window_floor(10_000, Duration::from_millis(600)),
            Some(20_000)
        );
        assert_eq!(custom.to_string(), "+floor:ref=200,max-rtt=400");
        assert_eq!(RttWindowFloor::default().to_string(), "+floor");
        // picoquic's own initial window, whatever the connection's.
        let picoquic = RttWindowFloor::parse_options("iw=15360").unwrap();
        assert_eq!(
            picoquic.window_floor(12_000, Duration::from_millis(600)),
            Some(6 * PICOQUIC_INITIAL_WINDOW)
        );
        assert_eq!(picoquic.to_string(), "+floor:iw=15360");
        for bad in ["ref=0", "max-rtt=x", "x=3", "iw=100", "iw=x"] {
            let e = RttWindowFloor::parse_options(bad).unwrap_err();
            assert!(e.contains("floor option"), "{e}");
        }
    }
    use super::*;

    #[test]
    fn rtt_scaled_growth_is_picoquics_rule() {
        let g = StartupGrowth::rtt_scaled();
        assert_eq!(g.multiplier(Duration::from_millis(50)), 1.0);
        assert_eq!(g.multiplier(Duration::from_millis(100)), 1.0);
        assert!((g.multiplier(Duration::from_millis(600)) - 6.0).abs() < 1e-9);
        assert!((g.multiplier(Duration::from_secs(2)) - 6.1).abs() < 1e-9);
        assert_eq!(StartupGrowth::Factor(4.0).multiplier(Duration::ZERO), 3.0);
        assert_eq!(
            StartupGrowth::Double.multiplier(Duration::from_secs(1)),
            1.0
        );
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in ["x=4", "rtt", "rtt,ref=50", "rtt,max-rtt=1000", "x=2.5"] {
            let g = StartupGrowth::parse_options(text).unwrap();
            let printed = g.to_string();
            let back = StartupGrowth::parse_options(printed.strip_prefix("+growth:").unwrap());
            assert_eq!(back, Ok(g), "{text} -> {printed}");
        }
        for bad in [
            "",
            "x=1",
            "x=17",
            "x=a",
            "rtt,x=3",
            "fast",
            "ref=0",
            "max-rtt=-1",
        ] {
            let e = StartupGrowth::parse_options(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            crate::modifiers::split_part("cubic+search+growth:x=4+cr", "growth"),
            ("cubic+search+cr".to_string(), Some("x=4"))
        );
        assert_eq!(
            crate::modifiers::split_part("cubic+search", "growth"),
            ("cubic+search".to_string(), None)
        );
    }
}
