//! Long-RTT start-up aids for BBRv3 (spec options `floor`, `quanta`, `jump`,
//! `long-probe-rtt`), after picoquic's BBRv3 (`picoquic/bbr.c`), all off by default.
//!
//! The draft's Startup grows `max_bw` from delivery-rate samples taken over a round trip,
//! so it learns the bottleneck only as fast as its own sending doubles: from RFC 9002's
//! initial window on a 600 ms path it takes `log2(BDP / initial window)` rounds of 600 ms
//! before the pipe is full (BENCHMARKS.md, "BBRv3"). picoquic's BBRv3 does not use the
//! draft's Startup above [`LONG_RTT_THRESHOLD`] (`BBRCheckStartupLongRtt`: `rtt_min >
//! BBRLongRttThreshold`, 250 ms): it switches to a slow start of its own
//! (`BBREnterStartupLongRTT`, `BBRUpdateStartupLongRtt`) with three aids. This module
//! keeps the draft's states (Startup, Drain, ProbeBW, ProbeRTT) and their exits, and
//! gives each aid as a seed or a floor of one of the draft's variables, applied only while
//! in Startup on a path whose `min_rtt` exceeds [`LONG_RTT_THRESHOLD`] (`long-rtt=MS`):
//!
//! | option | draft variable | picoquic | constants |
//! |---|---|---|---|
//! | `floor` | `InitialCwnd` (so `cwnd` and `InitPacingRate`), seeded once at the first RTT | `BBREnterStartupLongRTT`: `PICOQUIC_CWIN_INITIAL x min(rtt_min, PICOQUIC_TARGET_SATELLITE_RTT) / PICOQUIC_TARGET_RENO_RTT` | [`crate::RttWindowFloor`]: 100 ms (`floor-ref=MS`), 610 ms (`floor-max-rtt=MS`) |
//! | `quanta` | `send_quantum` floored at a quarter of `cwnd`, at least 32 KiB | `picoquic_update_pacing_data(path_x, 1)` in the long-RTT state, i.e. `picoquic_update_pacing_window` with `slow_start` (`pacing.c`: `quantum = cwin / 4`, `quantum_min = 0x8000`) | [`crate::SlowStartBurst`]: 4 (`quanta-divisor=N`), 32 KiB (`quanta-min=BYTES`) |
//! | `jump` | `cwnd` floored at half the peak delivery rate x `min_rtt`, the pacing rate at `1.25 x cwnd / srtt` | `BBRUpdateStartupLongRtt`: `cwin >= peak_bandwidth_estimate x min_rtt / 2`, the peak from `picoquic_estimate_max_path_bandwidth` (`frames.c`, samples over more than 1 ms); the long-RTT state's pacing, `picoquic_update_pacing_window` with `slow_start` (`pacing_rate *= 1.25`) | [`crate::jump`]: 1/2 (`jump-fraction=F`), 1 ms (`jump-interval=MS`); [`JUMP_PACING_GAIN`] |
//! | `long-probe-rtt` | `ProbeRTTInterval` = `min_rtt` x 100 | `BBRUpdateMinRTT`: `probe_rtt_expired` after `min_rtt * 100` when `min_rtt > BBRLongRttThreshold` | [`LONG_PROBE_RTT_RTTS`] (`long-probe-rtt=N`) |
//!
//! Why each is a seed or floor and not picoquic's own state: picoquic floors its window at
//! half the peak rate's BDP and lets slow start double it; the jump floors `cwnd` the same
//! way, and the pacing rate so that the window leaves within a round trip; `max_bw` stays
//! the draft's (delivery-rate samples), so the draft's Startup grows `cwnd` by what is
//! acknowledged towards `2 x max_bw x min_rtt`, and its plateau and loss exits still end
//! Startup. The peak rate is not fed into `max_bw`: on a thin return link acknowledgements
//! bunch, a peak sample then measures the sender's own rate (its send interval), and
//! `max_bw` seeded from it raised the pacing rate that raised the next sample, a runaway
//! (grid point p63, 1 Mbit/s return: 26,000 packets lost against 4,200 without the jump).
//! The floors are below the draft's own targets when the peak is the sender's rate
//! (`0.5 x 2.77 x max_bw x min_rtt` < `2 x max_bw x min_rtt`). The quanta make the first
//! flights leave in bursts, so that their acknowledgements come back spaced by the
//! bottleneck and the peak rate measures it (at the draft's 1 ms quantum they measure the
//! sender's own pacing). picoquic's long-RTT state also paces at `1.25 x cwin / srtt` and
//! exits on HyStart's delay test; neither is taken: the draft's pacing gain and exits stay.
//!
//! ProbeRTT on GEO: the draft's ProbeRTT halves the window for at least 200 ms and a round
//! every 5 s; at a 600 ms RTT that is a round of 1.2 s (the 200 ms and the round trip) at
//! half a BDP every 5 s, a tenth of the link's time. A GEO path's propagation delay does
//! not change within a transfer; picoquic stretches the interval to 100 RTTs (60 s at
//! 600 ms), which `long-probe-rtt` does.

use std::time::Duration;

use super::Bbr3;
use crate::burst::SlowStartBurst;
use crate::growth::RttWindowFloor;
use crate::jump::{BdpJump, PeakRate};

/// `min_rtt` above which the aids apply (picoquic's `BBRLongRttThreshold`, 250 ms).
pub const LONG_RTT_THRESHOLD: Duration = Duration::from_millis(250);

/// The pacing rate's floor in Startup with `jump`, over `cwnd / srtt` (picoquic's
/// long-RTT state paces with `picoquic_update_pacing_window(.., slow_start = 1, ..)`:
/// `pacing_rate *= 1.25`).
pub const JUMP_PACING_GAIN: f64 = 1.25;

/// ProbeRTT's interval on a long path, in minimum RTTs (picoquic `BBRUpdateMinRTT`:
/// `min_rtt * 100`).
pub const LONG_PROBE_RTT_RTTS: u32 = 100;

/// Which long-RTT aids are on, with their constants. All off: the draft.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LongRttStart {
    /// [`LONG_RTT_THRESHOLD`] (`long-rtt=MS`).
    pub threshold: Duration,
    /// `floor`: `InitialCwnd` raised for the RTT.
    pub floor: Option<RttWindowFloor>,
    /// `quanta`: Startup's send quantum floored at a share of `cwnd`.
    pub quanta: Option<SlowStartBurst>,
    /// `jump`: `max_bw` seeded with a share of the peak delivery rate.
    pub jump: Option<BdpJump>,
    /// `long-probe-rtt[=N]`: ProbeRTT every N minimum RTTs.
    pub probe_rtt_rtts: Option<u32>,
}

impl Default for LongRttStart {
    fn default() -> Self {
        Self {
            threshold: LONG_RTT_THRESHOLD,
            floor: None,
            quanta: None,
            jump: None,
            probe_rtt_rtts: None,
        }
    }
}

/// The aid options, for error messages.
pub(crate) const LONG_RTT_OPTIONS: &str = "floor, floor-ref=MS, floor-max-rtt=MS, quanta, \
     quanta-divisor=N, quanta-min=BYTES, jump, jump-fraction=F, jump-interval=MS, \
     long-probe-rtt[=N], long-rtt=MS";

/// Milliseconds in (0, 60000] for aid option `key`.
fn millis(key: &str, value: &str) -> Result<Duration, String> {
    value
        .parse()
        .ok()
        .filter(|ms: &f64| ms.is_finite() && *ms > 0.0 && *ms <= 60_000.0)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .ok_or_else(|| format!("bbr3 option {key}={value} must be milliseconds in (0, 60000]"))
}

/// A whole number in `[min, max]` for aid option `key`.
fn count(key: &str, value: &str, min: u64, max: u64) -> Result<u64, String> {
    value
        .parse()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| {
            format!("bbr3 option {key}={value} must be a whole number between {min} and {max}")
        })
}

impl LongRttStart {
    /// Takes aid option `key[=value]`; `None` if `key` is not an aid's.
    pub(crate) fn parse_option(
        &mut self,
        key: &str,
        value: Option<&str>,
    ) -> Option<Result<(), String>> {
        const KEYS: &[&str] = &[
            "floor",
            "floor-ref",
            "floor-max-rtt",
            "quanta",
            "quanta-divisor",
            "quanta-min",
            "jump",
            "jump-fraction",
            "jump-interval",
            "long-probe-rtt",
            "long-rtt",
        ];
        KEYS.contains(&key).then(|| self.set_option(key, value))
    }

    /// Sets aid option `key` (one of the aids') to `value`.
    fn set_option(&mut self, key: &str, value: Option<&str>) -> Result<(), String> {
        let mut floor = self.floor.unwrap_or_default();
        let mut quanta = self.quanta.unwrap_or_default();
        let mut jump = self.jump.unwrap_or_default();
        let flag = matches!(key, "floor" | "quanta" | "jump")
            || (key == "long-probe-rtt" && value.is_none());
        let v = match (flag, value) {
            (true, Some(v)) => return Err(format!("bbr3 option {key} takes no value (got ={v})")),
            (true, None) => "",
            (false, Some(v)) => v,
            (false, None) => return Err(format!("bbr3 option {key} needs =VALUE")),
        };
        match key {
            "floor" | "floor-ref" | "floor-max-rtt" => {
                match key {
                    "floor-ref" => floor.reference = millis(key, v)?,
                    "floor-max-rtt" => floor.max_rtt = millis(key, v)?,
                    _ => {}
                }
                self.floor = Some(floor);
            }
            "quanta" | "quanta-divisor" | "quanta-min" => {
                match key {
                    "quanta-divisor" => quanta.divisor = count(key, v, 1, 64)?,
                    "quanta-min" => quanta.min = count(key, v, 1200, 1 << 26)?,
                    _ => {}
                }
                self.quanta = Some(quanta);
            }
            "jump" | "jump-fraction" | "jump-interval" => {
                match key {
                    "jump-fraction" => {
                        jump.fraction = v
                            .parse()
                            .ok()
                            .filter(|f: &f64| *f > 0.0 && *f <= 1.0)
                            .ok_or_else(|| {
                                format!("bbr3 option {key}={v} must be a number in (0, 1]")
                            })?;
                    }
                    "jump-interval" => jump.min_interval = millis(key, v)?,
                    _ => {}
                }
                self.jump = Some(jump);
            }
            "long-probe-rtt" if flag => self.probe_rtt_rtts = Some(LONG_PROBE_RTT_RTTS),
            "long-probe-rtt" => self.probe_rtt_rtts = Some(count(key, v, 1, 10_000)? as u32),
            _ => self.threshold = millis(key, v)?,
        }
        Ok(())
    }

    /// The aid options that differ from the default, as spec text.
    pub(crate) fn options(&self) -> Vec<String> {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut out = Vec::new();
        if let Some(f) = self.floor {
            out.push("floor".into());
            let d = RttWindowFloor::default();
            if f.reference != d.reference {
                out.push(format!("floor-ref={}", ms(f.reference)));
            }
            if f.max_rtt != d.max_rtt {
                out.push(format!("floor-max-rtt={}", ms(f.max_rtt)));
            }
        }
        if let Some(q) = self.quanta {
            out.push("quanta".into());
            let d = SlowStartBurst::default();
            if q.divisor != d.divisor {
                out.push(format!("quanta-divisor={}", q.divisor));
            }
            if q.min != d.min {
                out.push(format!("quanta-min={}", q.min));
            }
        }
        if let Some(j) = self.jump {
            out.push("jump".into());
            let d = BdpJump::default();
            if j.fraction != d.fraction {
                out.push(format!("jump-fraction={}", j.fraction));
            }
            if j.min_interval != d.min_interval {
                out.push(format!("jump-interval={}", ms(j.min_interval)));
            }
        }
        match self.probe_rtt_rtts {
            Some(LONG_PROBE_RTT_RTTS) => out.push("long-probe-rtt".into()),
            Some(n) => out.push(format!("long-probe-rtt={n}")),
            None => {}
        }
        if self.threshold != LONG_RTT_THRESHOLD {
            out.push(format!("long-rtt={}", ms(self.threshold)));
        }
        out
    }
}

/// The aids' state in a sender: the peak rate the jump measures, and whether the floor
/// was applied.
#[derive(Debug, Clone, Default)]
pub(super) struct LongRttState {
    /// The peak delivery rate (`jump`).
    pub(super) peak: PeakRate,
    /// The floor was applied (once, at the first RTT sample).
    pub(super) floor_done: bool,
}

impl Bbr3 {
    /// The path is long enough for the aids: `min_rtt` above the threshold.
    fn is_long_rtt(&self) -> bool {
        self.min_rtt
            .is_some_and(|rtt| rtt > self.config.long_rtt.threshold)
    }

    /// The aids that apply in Startup: the floor seeds `InitialCwnd` once (and with it
    /// `cwnd` and `InitPacingRate`), the jump floors `cwnd` at the peak rate's BDP share.
    /// Runs after the model's update, before the control parameters are set.
    pub(super) fn apply_long_rtt_start(&mut self, now: Duration) {
        let jump = self.config.long_rtt.jump;
        if let Some(j) = jump {
            self.long_rtt.peak.on_end_acks(now, j.min_interval, None);
        }
        if self.state != super::Bbr3State::Startup || !self.is_long_rtt() {
            return;
        }
        self.seed_initial_cwnd();
        if let Some(j) = jump {
            self.floor_cwnd_at_peak(j.fraction);
        }
    }

    /// `floor`: `InitialCwnd` = the RTT-scaled initial window, `cwnd` and the pacing rate
    /// raised to match (`InitPacingRate` with the new `InitialCwnd` and the smoothed RTT).
    fn seed_initial_cwnd(&mut self) {
        let (Some(floor), Some(min_rtt), Some(srtt)) =
            (self.config.long_rtt.floor, self.min_rtt, self.srtt)
        else {
            return;
        };
        if self.long_rtt.floor_done || srtt.is_zero() {
            return;
        }
        self.long_rtt.floor_done = true;
        let Some(seed) = floor.window_floor(self.initial_cwnd, min_rtt) else {
            return;
        };
        self.initial_cwnd = self.initial_cwnd.max(seed);
        self.cwnd = self.cwnd.max(self.initial_cwnd);
        let rate = self.config.startup_pacing_gain * self.initial_cwnd as f64 / srtt.as_secs_f64();
        self.pacing_rate = self.pacing_rate.max(rate);
    }

    /// `jump`: `cwnd` at least `fraction` x the peak rate x `min_rtt` (picoquic's
    /// `min_win`).
    fn floor_cwnd_at_peak(&mut self, fraction: f64) {
        let peak = self.long_rtt.peak.peak();
        if peak > 0.0 {
            self.cwnd = self.cwnd.max(self.bdp_multiple(fraction * peak, 1.0));
        }
    }

    /// `jump`: the pacing rate at least [`JUMP_PACING_GAIN`] x `cwnd` / smoothed RTT in
    /// Startup on a long path, so that a window raised by the jump is sent within a round
    /// trip (the draft's `2.77 x max_bw` follows the delivery rate, a round behind).
    pub(super) fn floor_pacing_rate_at_cwnd(&mut self) {
        if self.config.long_rtt.jump.is_none()
            || self.state != super::Bbr3State::Startup
            || !self.is_long_rtt()
        {
            return;
        }
        if let Some(srtt) = self.srtt.filter(|s| !s.is_zero()) {
            let rate = JUMP_PACING_GAIN * self.cwnd as f64 / srtt.as_secs_f64();
            self.pacing_rate = self.pacing_rate.max(rate);
        }
    }

    /// `quanta`: the send quantum's floor in Startup on a long path, if any.
    pub(super) fn long_rtt_quantum(&self) -> Option<u64> {
        let q = self.config.long_rtt.quanta?;
        if self.state != super::Bbr3State::Startup || !self.is_long_rtt() {
            return None;
        }
        q.burst(self.cwnd, self.srtt?, 0.0)
    }

    /// `long-probe-rtt`: ProbeRTT's interval, `min_rtt` x N on a long path, else the
    /// draft's.
    pub(super) fn probe_rtt_interval(&self) -> Duration {
        match (self.config.long_rtt.probe_rtt_rtts, self.min_rtt) {
            (Some(n), Some(rtt)) if self.is_long_rtt() => rtt * n,
            _ => self.config.probe_rtt_interval,
        }
    }
}
