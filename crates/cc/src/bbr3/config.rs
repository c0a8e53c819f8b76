//! [`Bbr3Config`]: BBRv3's constants, each overridable from the spec (`bbr3:NAME=VALUE,...`).

use std::fmt;
use std::time::Duration;

use super::long_rtt::{LONG_RTT_OPTIONS, LongRttStart};

/// Startup's pacing gain, `4 ln 2` rounded as the draft does (Sec. 2.5
/// `BBR.StartupPacingGain`; Sec. 5.3.1.1, Startup Dynamics): the smallest gain that doubles the sending rate each round.
pub const STARTUP_PACING_GAIN: f64 = 2.77;
/// Startup's cwnd gain (Sec. 5.3.1.1: `BBR.DefaultCwndGain`, after `BBRStartupCwndGain`).
pub const STARTUP_CWND_GAIN: f64 = 2.0;
/// Drain's pacing gain (Sec. 2.5 and 5.3.2, Drain; `BBR.DrainPacingGain`): at most
/// `1 / BBR.StartupCwndGain` drains Startup's queue within a round. -06 uses 0.5; up to
/// -05 it was 0.35 (`1 / 2.77`).
pub const DRAIN_PACING_GAIN: f64 = 0.5;
/// Rounds after which Drain ends even if inflight is still above the BDP (Sec. 5.3.2,
/// `CheckDrainDone`, new in -06).
pub const DRAIN_MAX_ROUNDS: u64 = 3;
/// The cwnd gain of Drain, ProbeBW_DOWN, CRUISE and REFILL (Sec. 2.6;
/// `BBR.DefaultCwndGain`): room for delayed and aggregated ACKs.
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// ProbeBW_DOWN's pacing gain (Sec. 5.3.3.1, ProbeBW_DOWN): leaves headroom and drains a
/// queue the probe built.
pub const PROBE_BW_DOWN_PACING_GAIN: f64 = 0.90;
/// ProbeBW_CRUISE's and ProbeBW_REFILL's pacing gain (Sec. 5.3.3.2, 5.3.3.3).
pub const PROBE_BW_CRUISE_PACING_GAIN: f64 = 1.0;
/// ProbeBW_UP's pacing gain (Sec. 5.3.3.4, ProbeBW_UP).
pub const PROBE_BW_UP_PACING_GAIN: f64 = 1.25;
/// ProbeBW_UP's cwnd gain (Sec. 5.3.3.4): lets inflight exceed 2 BDP while probing.
pub const PROBE_BW_UP_CWND_GAIN: f64 = 2.25;
/// ProbeRTT's cwnd, a multiple of the estimated BDP (Sec. 2.16.2 and 5.6.4.5;
/// `BBR.ProbeRTTCwndGain`).
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// How long ProbeRTT holds inflight at its cwnd, at least (Sec. 2.16.2 and
/// 5.3.4.1; `BBR.ProbeRTTDuration`).
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// How long `probe_rtt_min_delay` lasts before ProbeRTT is entered to refresh it (Sec.
/// 2.16.2 and 5.3.4.1, `BBR.ProbeRTTInterval`).
pub const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
/// Window of the min-RTT filter (Sec. 2.16.1 and 5.5.7.2, `BBR.MinRTTFilterLen`).
pub const MIN_RTT_FILTER_LEN: Duration = Duration::from_secs(10);
/// Window of the max-bandwidth filter in ProbeBW cycles (Sec. 2.11 and 5.5.3,
/// `BBR.MaxBwFilterLen`).
pub const MAX_BW_FILTER_LEN: u32 = 2;
/// Window of the extra-acked (ACK aggregation) filter in round trips (Sec. 5.5.9,
/// `BBR.ExtraAckedFilterLen`).
pub const EXTRA_ACKED_FILTER_LEN: u32 = 10;
/// Most ACK aggregation the cwnd makes room for, as time at `bw`: Linux BBR's
/// `bbr_extra_acked_max_us` (100 ms), not in the draft (Sec. 5.5.9 caps `extra_acked` at
/// the cwnd only). Without it the extra-acked estimate grows whenever the link delivers a
/// little faster than `bw` (the pacing margin does that), and ProbeBW_UP's cwnd grew well
/// past its 2.25 BDP gain on a deep buffer in this module's tests.
pub const EXTRA_ACKED_MAX_TIME: Duration = Duration::from_millis(100);
/// Highest loss rate per round a probe tolerates before it sets `inflight_hi` (Sec.
/// 5.5.10.2, `BBR.LossThresh`).
pub const LOSS_THRESH: f64 = 0.02;
/// Multiplicative decrease of `bw_lo` / `inflight_lo` per round with loss and floor of a
/// loss-set `inflight_hi` (Sec. 2.8 and 5.5.10.3, `BBR.Beta`).
pub const BETA: f64 = 0.7;
/// Share of `inflight_hi` left free in ProbeBW_CRUISE and ProbeRTT for other flows (Sec.
/// 2.8, `BBR.Headroom`; `InflightWithHeadroom` in Sec. 5.3.3.9).
pub const HEADROOM: f64 = 0.15;
/// Smallest cwnd in segments (Sec. 2.8 and 5.6.4.3, `BBR.MinPipeCwnd`: 4 x SMSS).
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;
/// Rounds with losses that, together with a loss rate above [`LOSS_THRESH`], end Startup
/// (Sec. 5.3.1.3, `BBRStartupFullLossCnt`). Counted here in quinn's loss events (one per
/// ACK that declared packets lost), the closest a QUIC sender sees to the draft's
/// discontiguous lost ranges.
pub const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// Growth of the delivery rate per round below which a round counts as not growing (Sec.
/// 5.3.1.2, "Exiting Acceleration Based on Bandwidth Plateau", `CheckFullBWReached`: 25 %).
pub const FULL_BW_GROWTH: f64 = 1.25;
/// Rounds without that growth after which the pipe is full (Sec. 5.3.1.2,
/// `CheckFullBWReached`: `BBR.full_bw_count >= 3`).
pub const FULL_BW_COUNT: u32 = 3;
/// Pacing margin below the estimated bandwidth, in percent (Sec. 5.6.2,
/// `BBR.PacingMarginPercent`).
pub const PACING_MARGIN_PERCENT: f64 = 1.0;
/// Largest send quantum in bytes (Sec. 5.6.3: 64 KBytes).
pub const SEND_QUANTUM_MAX: u64 = 64 * 1024;
/// The send quantum is the pacing rate times this interval (Sec. 5.6.3: 1 ms).
pub const SEND_QUANTUM_INTERVAL: Duration = Duration::from_millis(1);
/// Shortest wall-clock wait between bandwidth probes (Sec. 5.3.3.8.3,
/// `PickProbeWait`: 2 s).
pub const PROBE_WAIT_BASE: Duration = Duration::from_secs(2);
/// Range of the uniform random time added to [`PROBE_WAIT_BASE`] (Sec. 5.3.3.8.3: 0 to
/// 1 s).
pub const PROBE_WAIT_RANDOM: Duration = Duration::from_secs(1);
/// Most rounds between bandwidth probes for Reno coexistence (Sec. 5.3.3.8.3,
/// `IsRenoCoexistenceProbeTime`: 63).
pub const RENO_MAX_ROUNDS: u64 = 63;

/// Which rate quinn's pacer sends at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bbr3Pacing {
    /// The draft's pacing rate (`pacing_gain x bw`), handed to quinn's pacer through
    /// `Controller::pacing_rate` (quinn-proto patch 7) with the send quantum as its burst.
    #[default]
    Rate,
    /// quinn's own `1.25 x cwnd / smoothed RTT` (spec `pacing=window`), the send quantum
    /// as its burst: what BBRv3 would get from an unpatched quinn-proto, for comparison.
    Window,
}

/// BBRv3's configuration: the draft's constants by default. See [`crate::bbr3`].
#[derive(Debug, Clone, PartialEq)]
pub struct Bbr3Config {
    /// [`STARTUP_PACING_GAIN`] (`startup-gain=F`).
    pub startup_pacing_gain: f64,
    /// [`STARTUP_CWND_GAIN`] (`startup-cwnd-gain=F`).
    pub startup_cwnd_gain: f64,
    /// [`DRAIN_PACING_GAIN`] (`drain-gain=F`).
    pub drain_pacing_gain: f64,
    /// [`DEFAULT_CWND_GAIN`] (`cwnd-gain=F`).
    pub cwnd_gain: f64,
    /// [`PROBE_BW_DOWN_PACING_GAIN`] (`down-gain=F`).
    pub down_pacing_gain: f64,
    /// [`PROBE_BW_CRUISE_PACING_GAIN`] (`cruise-gain=F`).
    pub cruise_pacing_gain: f64,
    /// [`PROBE_BW_UP_PACING_GAIN`] (`up-gain=F`).
    pub up_pacing_gain: f64,
    /// [`PROBE_BW_UP_CWND_GAIN`] (`up-cwnd-gain=F`).
    pub up_cwnd_gain: f64,
    /// [`PROBE_RTT_CWND_GAIN`] (`probe-rtt-gain=F`).
    pub probe_rtt_cwnd_gain: f64,
    /// [`PROBE_RTT_DURATION`] (`probe-rtt-duration=MS`).
    pub probe_rtt_duration: Duration,
    /// [`PROBE_RTT_INTERVAL`] (`probe-rtt-interval=MS`).
    pub probe_rtt_interval: Duration,
    /// [`MIN_RTT_FILTER_LEN`] (`min-rtt-window=MS`).
    pub min_rtt_filter_len: Duration,
    /// [`MAX_BW_FILTER_LEN`] (`bw-cycles=N`).
    pub max_bw_filter_len: u32,
    /// [`EXTRA_ACKED_FILTER_LEN`] (`extra-acked-rounds=N`).
    pub extra_acked_filter_len: u32,
    /// [`EXTRA_ACKED_MAX_TIME`] (`extra-acked-max=MS`).
    pub extra_acked_max_time: Duration,
    /// [`LOSS_THRESH`] (`loss-thresh=F`).
    pub loss_thresh: f64,
    /// [`BETA`] (`beta=F`).
    pub beta: f64,
    /// [`HEADROOM`] (`headroom=F`).
    pub headroom: f64,
    /// [`MIN_PIPE_CWND_SEGMENTS`] (`min-pipe=N`).
    pub min_pipe_cwnd_segments: u64,
    /// [`STARTUP_FULL_LOSS_COUNT`] (`full-loss-count=N`).
    pub startup_full_loss_count: u32,
    /// [`FULL_BW_GROWTH`] (`full-bw-growth=F`).
    pub full_bw_growth: f64,
    /// [`FULL_BW_COUNT`] (`full-bw-rounds=N`).
    pub full_bw_count: u32,
    /// [`PACING_MARGIN_PERCENT`] (`pacing-margin=F`, percent).
    pub pacing_margin_percent: f64,
    /// [`SEND_QUANTUM_MAX`] (`max-quantum=BYTES`).
    pub send_quantum_max: u64,
    /// [`PROBE_WAIT_BASE`] (`probe-wait=MS`).
    pub probe_wait_base: Duration,
    /// [`PROBE_WAIT_RANDOM`] (`probe-wait-random=MS`).
    pub probe_wait_random: Duration,
    /// [`RENO_MAX_ROUNDS`] (`reno-rounds=N`).
    pub reno_max_rounds: u64,
    /// Which rate quinn's pacer uses (`pacing=rate|window`).
    pub pacing: Bbr3Pacing,
    /// The long-RTT start-up aids (`floor`, `quanta`, `jump`, `long-probe-rtt`; all off:
    /// the draft). See `long_rtt.rs`.
    pub long_rtt: LongRttStart,
}

impl Default for Bbr3Config {
    /// The draft's constants.
    fn default() -> Self {
        Self {
            startup_pacing_gain: STARTUP_PACING_GAIN,
            startup_cwnd_gain: STARTUP_CWND_GAIN,
            drain_pacing_gain: DRAIN_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            down_pacing_gain: PROBE_BW_DOWN_PACING_GAIN,
            cruise_pacing_gain: PROBE_BW_CRUISE_PACING_GAIN,
            up_pacing_gain: PROBE_BW_UP_PACING_GAIN,
            up_cwnd_gain: PROBE_BW_UP_CWND_GAIN,
            probe_rtt_cwnd_gain: PROBE_RTT_CWND_GAIN,
            probe_rtt_duration: PROBE_RTT_DURATION,
            probe_rtt_interval: PROBE_RTT_INTERVAL,
            min_rtt_filter_len: MIN_RTT_FILTER_LEN,
            max_bw_filter_len: MAX_BW_FILTER_LEN,
            extra_acked_filter_len: EXTRA_ACKED_FILTER_LEN,
            extra_acked_max_time: EXTRA_ACKED_MAX_TIME,
            loss_thresh: LOSS_THRESH,
            beta: BETA,
            headroom: HEADROOM,
            min_pipe_cwnd_segments: MIN_PIPE_CWND_SEGMENTS,
            startup_full_loss_count: STARTUP_FULL_LOSS_COUNT,
            full_bw_growth: FULL_BW_GROWTH,
            full_bw_count: FULL_BW_COUNT,
            pacing_margin_percent: PACING_MARGIN_PERCENT,
            send_quantum_max: SEND_QUANTUM_MAX,
            probe_wait_base: PROBE_WAIT_BASE,
            probe_wait_random: PROBE_WAIT_RANDOM,
            reno_max_rounds: RENO_MAX_ROUNDS,
            pacing: Bbr3Pacing::Rate,
            long_rtt: LongRttStart::default(),
        }
    }
}

/// The valid `bbr3:` options, for error messages.
pub(crate) const BBR3_OPTIONS: &str = "startup-gain=F, startup-cwnd-gain=F, drain-gain=F, \
     cwnd-gain=F, down-gain=F, cruise-gain=F, up-gain=F, up-cwnd-gain=F, probe-rtt-gain=F, \
     probe-rtt-duration=MS, probe-rtt-interval=MS, min-rtt-window=MS, bw-cycles=N, \
     extra-acked-rounds=N, extra-acked-max=MS, loss-thresh=F, beta=F, headroom=F, min-pipe=N, full-loss-count=N, \
     full-bw-growth=F, full-bw-rounds=N, pacing-margin=F, max-quantum=BYTES, probe-wait=MS, \
     probe-wait-random=MS, reno-rounds=N, pacing=rate|window, and the long-RTT aids";

/// One option: its spec name and how to read, check and write it.
enum Field {
    /// A gain or fraction in `(min, max]`.
    Float(fn(&mut Bbr3Config) -> &mut f64, f64, f64),
    /// Milliseconds in `[min, max]`.
    Millis(fn(&mut Bbr3Config) -> &mut Duration, f64, f64),
    /// A whole number in `[min, max]`.
    Count(fn(&mut Bbr3Config) -> &mut u64, u64, u64),
    /// A whole number in `[min, max]`, stored as `u32`.
    Count32(fn(&mut Bbr3Config) -> &mut u32, u32, u32),
}

const FIELDS: &[(&str, Field)] = &[
    (
        "startup-gain",
        Field::Float(|c| &mut c.startup_pacing_gain, 1.0, 16.0),
    ),
    (
        "startup-cwnd-gain",
        Field::Float(|c| &mut c.startup_cwnd_gain, 1.0, 16.0),
    ),
    (
        "drain-gain",
        Field::Float(|c| &mut c.drain_pacing_gain, 0.0, 1.0),
    ),
    ("cwnd-gain", Field::Float(|c| &mut c.cwnd_gain, 0.0, 16.0)),
    (
        "down-gain",
        Field::Float(|c| &mut c.down_pacing_gain, 0.0, 1.0),
    ),
    (
        "cruise-gain",
        Field::Float(|c| &mut c.cruise_pacing_gain, 0.0, 2.0),
    ),
    ("up-gain", Field::Float(|c| &mut c.up_pacing_gain, 1.0, 4.0)),
    (
        "up-cwnd-gain",
        Field::Float(|c| &mut c.up_cwnd_gain, 0.0, 16.0),
    ),
    (
        "probe-rtt-gain",
        Field::Float(|c| &mut c.probe_rtt_cwnd_gain, 0.0, 1.0),
    ),
    (
        "probe-rtt-duration",
        Field::Millis(|c| &mut c.probe_rtt_duration, 0.0, 60_000.0),
    ),
    (
        "probe-rtt-interval",
        Field::Millis(|c| &mut c.probe_rtt_interval, 1.0, 3_600_000.0),
    ),
    (
        "min-rtt-window",
        Field::Millis(|c| &mut c.min_rtt_filter_len, 1.0, 3_600_000.0),
    ),
    (
        "bw-cycles",
        Field::Count32(|c| &mut c.max_bw_filter_len, 1, 16),
    ),
    (
        "extra-acked-rounds",
        Field::Count32(|c| &mut c.extra_acked_filter_len, 1, 64),
    ),
    (
        "extra-acked-max",
        Field::Millis(|c| &mut c.extra_acked_max_time, 0.0, 60_000.0),
    ),
    (
        "loss-thresh",
        Field::Float(|c| &mut c.loss_thresh, 0.0, 0.5),
    ),
    ("beta", Field::Float(|c| &mut c.beta, 0.0, 1.0)),
    ("headroom", Field::Float(|c| &mut c.headroom, 0.0, 0.9)),
    (
        "min-pipe",
        Field::Count(|c| &mut c.min_pipe_cwnd_segments, 1, 1000),
    ),
    (
        "full-loss-count",
        Field::Count32(|c| &mut c.startup_full_loss_count, 1, 1000),
    ),
    (
        "full-bw-growth",
        Field::Float(|c| &mut c.full_bw_growth, 1.0, 4.0),
    ),
    (
        "full-bw-rounds",
        Field::Count32(|c| &mut c.full_bw_count, 1, 100),
    ),
    (
        "pacing-margin",
        Field::Float(|c| &mut c.pacing_margin_percent, -1.0, 50.0),
    ),
    (
        "max-quantum",
        Field::Count(|c| &mut c.send_quantum_max, 1200, 1 << 24),
    ),
    (
        "probe-wait",
        Field::Millis(|c| &mut c.probe_wait_base, 0.0, 3_600_000.0),
    ),
    (
        "probe-wait-random",
        Field::Millis(|c| &mut c.probe_wait_random, 0.0, 3_600_000.0),
    ),
    (
        "reno-rounds",
        Field::Count(|c| &mut c.reno_max_rounds, 1, 1 << 20),
    ),
];

impl Bbr3Config {
    /// Parses the options of `bbr3:OPTION,...` (already lower case, split at commas).
    pub(crate) fn parse_options(opts: &[&str]) -> Result<Self, String> {
        let mut c = Self::default();
        let mut seen: Vec<&str> = Vec::new();
        for opt in opts {
            let (key, value) = opt
                .split_once('=')
                .map_or((*opt, None), |(k, v)| (k, Some(v)));
            if seen.contains(&key) {
                return Err(format!("bbr3 option {key} given twice"));
            }
            seen.push(key);
            if let Some(r) = c.long_rtt.parse_option(key, value) {
                r?;
                continue;
            }
            let value = value.ok_or_else(|| {
                format!("unknown bbr3 option '{opt}'; valid: {BBR3_OPTIONS} ({LONG_RTT_OPTIONS})")
            })?;
            if key == "pacing" {
                c.pacing = match value {
                    "rate" => Bbr3Pacing::Rate,
                    "window" => Bbr3Pacing::Window,
                    _ => {
                        return Err(format!(
                            "bbr3 option pacing={value}: valid are rate, window"
                        ));
                    }
                };
                continue;
            }
            let Some((_, field)) = FIELDS.iter().find(|(name, _)| *name == key) else {
                return Err(format!(
                    "unknown bbr3 option '{opt}'; valid: {BBR3_OPTIONS} ({LONG_RTT_OPTIONS})"
                ));
            };
            match field {
                Field::Float(get, min, max) => {
                    let v: f64 = value
                        .parse()
                        .ok()
                        .filter(|v: &f64| v.is_finite() && *v > *min && *v <= *max)
                        .ok_or_else(|| {
                            format!("bbr3 option {key}={value} must be a number above {min} and at most {max}")
                        })?;
                    *get(&mut c) = v;
                }
                Field::Millis(get, min, max) => {
                    let v: f64 = value
                        .parse()
                        .ok()
                        .filter(|v: &f64| v.is_finite() && *v >= *min && *v <= *max)
                        .ok_or_else(|| {
                            format!("bbr3 option {key}={value} must be milliseconds between {min} and {max}")
                        })?;
                    *get(&mut c) = Duration::from_secs_f64(v / 1000.0);
                }
                Field::Count(get, min, max) => {
                    let v: u64 = value
                        .parse()
                        .ok()
                        .filter(|v| (*min..=*max).contains(v))
                        .ok_or_else(|| {
                            format!("bbr3 option {key}={value} must be a whole number between {min} and {max}")
                        })?;
                    *get(&mut c) = v;
                }
                Field::Count32(get, min, max) => {
                    let v: u32 = value
                        .parse()
                        .ok()
                        .filter(|v| (*min..=*max).contains(v))
                        .ok_or_else(|| {
                            format!("bbr3 option {key}={value} must be a whole number between {min} and {max}")
                        })?;
                    *get(&mut c) = v;
                }
            }
        }
        Ok(c)
    }

    /// The options that differ from the draft's, as spec text (`name=value`).
    pub(crate) fn options(&self) -> Vec<String> {
        let d = Self::default();
        let mut this = self.clone();
        let mut default = d;
        let mut out = Vec::new();
        for (name, field) in FIELDS {
            match field {
                Field::Float(get, ..) => {
                    let v = *get(&mut this);
                    if v != *get(&mut default) {
                        out.push(format!("{name}={v}"));
                    }
                }
                Field::Millis(get, ..) => {
                    let v = *get(&mut this);
                    if v != *get(&mut default) {
                        out.push(format!("{name}={}", v.as_secs_f64() * 1000.0));
                    }
                }
                Field::Count(get, ..) => {
                    let v = *get(&mut this);
                    if v != *get(&mut default) {
                        out.push(format!("{name}={v}"));
                    }
                }
                Field::Count32(get, ..) => {
                    let v = *get(&mut this);
                    if v != *get(&mut default) {
                        out.push(format!("{name}={v}"));
                    }
                }
            }
        }
        if self.pacing == Bbr3Pacing::Window {
            out.push("pacing=window".into());
        }
        out.extend(self.long_rtt.options());
        out
    }
}

impl fmt::Display for Bbr3Config {
    /// `bbr3` with the options that differ from the draft's.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opts = self.options();
        if opts.is_empty() {
            f.write_str("bbr3")
        } else {
            write!(f, "bbr3:{}", opts.join(","))
        }
    }
}
