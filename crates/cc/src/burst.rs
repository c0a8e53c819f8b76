//! Pacing bursts of a quarter window during the initial slow start on long-RTT paths.
//!
//! quinn-proto's pacer sends at `1.25 x cwnd / smoothed RTT` in bursts of the window times
//! 2 ms over the RTT, at least 10 and at most 256 datagrams: at a 600 ms RTT that is 10
//! datagrams until the window reaches about 4 MB. Spread that thin, the acknowledgements
//! come back at the sender's own rate, and a delivery-rate sample (the start-up jump's,
//! [`crate::jump`]) measures the sender, not the bottleneck. picoquic paces the initial
//! slow start of a long-RTT path with bursts ("quanta") of a quarter of the window, at least
//! 32 KiB (`picoquic_update_pacing_window` in `pacing.c`); each burst crosses the
//! bottleneck back to back, and its acknowledgements are spaced by the bottleneck's rate.
//! The pacing rate stays quinn-proto's.
//!
//! | constant | value | picoquic (`pacing.c`, `picoquic_internal.h`) |
//! |---|---|---|
//! | [`BURST_DIVISOR`] | 4 | `quantum = cwin / 4` |
//! | [`BURST_MIN`] | 32 KiB | `quantum_min = 0x8000` |
//! | [`BURST_MIN_RTT`] | 60 ms | `smoothed_rtt > 4 * PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MAX` (15 ms) |
//! | `time=MS` | off | none: ours |
//!
//! With `time=MS` (ours) a burst also lasts at most that long at the bottleneck's rate as
//! the start-up jump measured it ([`crate::jump`]), but never less than the minimum: a
//! quarter window grows with the window, and once the window is near twice the BDP a
//! quarter of it at once is half a BDP of queue on top of the BDP the window already
//! queues. A burst sized in time still queues long enough to be measured, whatever the
//! rate.
//!
//! picoquic also takes the pacing rate times 15 ms when that is larger; above its 60 ms
//! RTT floor that is at most a fifteenth of the window divided by 4, never larger, so it
//! is left out. Outside the initial slow start, and while Careful Resume or a drain
//! controls the window, quinn-proto's own bursts apply.
//!
//! Spec part `+burst[:divisor=D,min=BYTES,min-rtt=MS,time=MS]`. Needs quinn-proto's
//! `Controller::pacing_burst` (patch 4, vendor/quinn-proto/SATQUIC-PATCH.md). Bursts load
//! the bottleneck's queue by up to a quarter window at once, which is why it is an option,
//! measured in BENCHMARKS.md ("Start-up mechanisms").

use std::fmt;
use std::time::Duration;

use crate::modifiers::{SpecPart, write_part};

/// Share of the window a burst carries: one over this (picoquic: `cwin / 4`).
pub const BURST_DIVISOR: u64 = 4;

/// Smallest burst in bytes (picoquic's `quantum_min`, `0x8000`).
pub const BURST_MIN: u64 = 0x8000;

/// Smoothed RTT above which the bursts apply (picoquic: four times its 15 ms
/// `PICOQUIC_MAX_BANDWIDTH_TIME_INTERVAL_MAX`).
pub const BURST_MIN_RTT: Duration = Duration::from_millis(60);

/// Slow-start pacing bursts. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowStartBurst {
    /// A burst is the window over this.
    pub divisor: u64,
    /// Smallest burst, bytes.
    pub min: u64,
    /// Smoothed RTT above which the bursts apply.
    pub min_rtt: Duration,
    /// If set, a burst lasts at most this long at the measured bottleneck rate.
    pub max_time: Option<Duration>,
}

impl Default for SlowStartBurst {
    /// picoquic's constants.
    fn default() -> Self {
        Self {
            divisor: BURST_DIVISOR,
            min: BURST_MIN,
            min_rtt: BURST_MIN_RTT,
            max_time: None,
        }
    }
}

impl SlowStartBurst {
    /// The burst for window `cwnd` at smoothed RTT `smoothed`, if the path is long enough,
    /// with `rate` the bottleneck's measured rate in bytes per second (0: not measured).
    pub fn burst(&self, cwnd: u64, smoothed: Duration, rate: f64) -> Option<u64> {
        let quarter = cwnd / self.divisor;
        let burst = match self.max_time.filter(|_| rate > 0.0) {
            Some(time) => quarter.min((rate * time.as_secs_f64()) as u64),
            None => quarter,
        };
        (smoothed > self.min_rtt).then(|| burst.max(self.min))
    }
}

impl SpecPart for SlowStartBurst {
    const NAME: &'static str = "burst";
    const STANDALONE_REFUSAL: &'static str = "is paced by its own rule and takes no burst";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                Some(("divisor", v)) => {
                    out.divisor = v
                        .parse()
                        .ok()
                        .filter(|d: &u64| (1..=64).contains(d))
                        .ok_or_else(|| {
                            format!("burst option divisor={v} must be a whole number in 1..=64")
                        })?;
                }
                Some(("min", v)) => {
                    out.min = v
                        .parse()
                        .ok()
                        .filter(|b: &u64| (1..=1 << 30).contains(b))
                        .ok_or_else(|| {
                            format!("burst option min={v} must be bytes in 1..=1073741824")
                        })?;
                }
                Some(("min-rtt", v)) => {
                    let ms: f64 = v
                        .parse()
                        .ok()
                        .filter(|ms: &f64| ms.is_finite() && *ms >= 0.0 && *ms <= 60_000.0)
                        .ok_or_else(|| {
                            format!("burst option min-rtt={v} must be milliseconds in [0, 60000]")
                        })?;
                    out.min_rtt = Duration::from_secs_f64(ms / 1000.0);
                }
                Some(("time", v)) => {
                    let ms: f64 = v
                        .parse()
                        .ok()
                        .filter(|ms: &f64| ms.is_finite() && *ms > 0.0 && *ms <= 60_000.0)
                        .ok_or_else(|| {
                            format!("burst option time={v} must be milliseconds in (0, 60000]")
                        })?;
                    out.max_time = Some(Duration::from_secs_f64(ms / 1000.0));
                }
                _ => {
                    return Err(format!(
                        "unknown burst option '{opt}'; valid: divisor=D, min=BYTES, min-rtt=MS, time=MS"
                    ));
                }
            }
        }
        Ok(out)
    }

    fn options(&self) -> Option<Vec<String>> {
        let mut opts = Vec::new();
        if self.divisor != BURST_DIVISOR {
            opts.push(format!("divisor={}", self.divisor));
        }
        if self.min != BURST_MIN {
            opts.push(format!("min={}", self.min));
        }
        if self.min_rtt != BURST_MIN_RTT {
            opts.push(format!("min-rtt={}", self.min_rtt.as_secs_f64() * 1000.0));
        }
        if let Some(time) = self.max_time {
            opts.push(format!("time={}", time.as_secs_f64() * 1000.0));
        }
        Some(opts)
    }
}

impl fmt::Display for SlowStartBurst {
    /// The `+burst[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarter_window_at_least_32_kib_on_long_paths_only() {
        let b = SlowStartBurst::default();
        let geo = Duration::from_millis(600);
        assert_eq!(b.burst(12_000, geo, 0.0), Some(BURST_MIN));
        assert_eq!(b.burst(1_000_000, geo, 0.0), Some(250_000));
        assert_eq!(b.burst(1_000_000, Duration::from_millis(60), 0.0), None);
        assert_eq!(b.burst(1_000_000, Duration::from_millis(20), 0.0), None);
        // Without `time` the measured rate changes nothing.
        assert_eq!(b.burst(1_000_000, geo, 1e6), Some(250_000));
    }

    #[test]
    fn a_burst_sized_in_time_lasts_at_most_that_long_at_the_measured_rate() {
        let b = SlowStartBurst::parse_options("min=65536,time=10").unwrap();
        let geo = Duration::from_millis(600);
        // 150 MB window at 1 Gbit/s (125 MB/s): 10 ms is 1.25 MB, not 37.5 MB.
        assert_eq!(b.burst(150_000_000, geo, 125e6), Some(1_250_000));
        // Never below the minimum (10 Mbit/s: 12.5 kB in 10 ms).
        assert_eq!(b.burst(1_000_000, geo, 1.25e6), Some(65_536));
        // Never above the quarter window; before a rate is measured, the quarter window.
        assert_eq!(b.burst(2_000_000, geo, 125e6), Some(500_000));
        assert_eq!(b.burst(150_000_000, geo, 0.0), Some(37_500_000));
    }

    #[test]
    fn options_round_trip_and_bad_ones_are_refused() {
        let b = SlowStartBurst::parse_options("divisor=8,min=20000,min-rtt=100,time=4").unwrap();
        assert_eq!(b.divisor, 8);
        assert_eq!(b.min, 20_000);
        assert_eq!(b.min_rtt, Duration::from_millis(100));
        assert_eq!(b.max_time, Some(Duration::from_millis(4)));
        assert_eq!(
            b.to_string(),
            "+burst:divisor=8,min=20000,min-rtt=100,time=4"
        );
        assert_eq!(SlowStartBurst::default().to_string(), "+burst");
        for bad in [
            "divisor=0",
            "divisor=x",
            "min=0",
            "min-rtt=-1",
            "rate=2",
            "time=0",
        ] {
            let e = SlowStartBurst::parse_options(bad).unwrap_err();
            assert!(e.contains("burst option"), "{e}");
            assert!(!e.contains('\n'));
        }
    }
}
