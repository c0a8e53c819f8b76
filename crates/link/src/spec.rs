//! What a link *is*: the serde/TOML description of a path, its validation, and the
//! resolution of queue limits given as multiples of the path BDP.
//!
//! A [`LinkSpec`] holds two [`DirectionSpec`]s, `down` (server -> client, the data
//! direction of a download) and `up` (client -> server). Each direction has a rate, a
//! propagation delay, a bottleneck queue with a discipline, an optional loss process and an
//! optional bandwidth-on-demand process. Example (`geo-viasat`):
//!
//! ```toml
//! name = "geo-viasat"
//! description = "Viasat-like GEO link"
//! source = "seed 000 Sec 4.2, 4.5"
//!
//! [down]
//! rate = { kind = "constant", rate_bps = 150000000 }
//! delay = { base = "300ms" }
//! queue = { limit = { bytes = 36000000 }, discipline = { kind = "viasat_aqm" } }
//!
//! [up]
//! rate = { kind = "constant", rate_bps = 150000000 }
//! delay = { base = "300ms" }
//! queue = { limit = { bytes = 36000000 }, discipline = { kind = "viasat_aqm" } }
//! ```
//!
//! A direction may also carry background traffic of other users (`crate::cross`), e.g.
//! `cross_traffic = { rate_bps = 50000000, on = "5s", off = "5s", exponential = true }`
//! under `[down]` (`packet_bytes` defaults to 1500; without `on`/`off`, constant).
//!
//! A LEO link has a slot schedule, `[slots]` (`slots`): per-slot base RTT, a per-slot
//! rate (`rate = { kind = "slotted", quantiles = [...] }`) and a handover at each
//! boundary (an RTT spike, a short outage, a loss burst).
//!
//! Unknown fields are errors, durations are strings with a unit, rates are integers in
//! bit/s, probabilities are fractions in `[0, 1]` (`plr = 0.01` is 1 %). The checks
//! behind that, with their limits ([`MAX_RATE_BPS`] and the rest), are in `validate`.

use crate::error::{LinkError, toml_error_line};
use crate::trace::MahimahiTrace;
use crate::units::duration_str;
use serde::{Deserialize, Serialize};
use std::path::Path as FsPath;
use std::time::Duration;

mod slots;
mod validate;

pub use slots::{
    HandoverEvent, HandoverSpec, LossBurstSpec, MAX_SLOT, RateQuantile, RttQuantile, STARLINK_SLOT,
    SlotPhase, SlotSpec,
};

/// Largest accepted rate: 1 Tbit/s. Anything above is taken for a typo.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;
/// Largest accepted one-way base delay, jitter, swing or extra delay: 60 s.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// Largest accepted queue limit in bytes: 1 TB.
pub const MAX_QUEUE_BYTES: u64 = 1_000_000_000_000;

/// Shortest period, and shortest step of a rate schedule, the model accepts: 1 ms. The
/// model handles every rate step, oscillation or BoD period as an event, and the simulator
/// steps through virtual time from one event to the next: a schedule repeating every
/// nanosecond would take 10^9 events per simulated second (hours of wall time for `-t 2`).
/// A millisecond is the resolution of mahimahi traces, and no link in the seeds changes
/// faster.
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

/// Smallest queue in bytes: one datagram of QUIC's minimum size (1200 bytes of UDP
/// payload) with its IP and UDP headers. A smaller queue drops every QUIC packet.
pub const MIN_QUEUE_BYTES: u64 = 1200 + crate::IP_UDP_OVERHEAD_BYTES as u64;
/// Largest accepted queue limit in packets.
pub const MAX_QUEUE_PACKETS: u64 = 1_000_000_000;
/// Largest accepted queue limit as a multiple of the BDP.
pub const MAX_QUEUE_BDP: f64 = 1000.0;
/// The mahimahi link shell's delivery opportunity carries one MTU: 1500 bytes here.
pub const DEFAULT_OPPORTUNITY_BYTES: u32 = 1500;

/// A whole path: two directions plus what it is and where its numbers come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Short name, e.g. `geo-viasat`.
    pub name: String,
    /// One sentence for people.
    #[serde(default)]
    pub description: String,
    /// Where the values come from (seed and section, measurement, ...).
    #[serde(default)]
    pub source: String,
    /// Server -> client (the data direction of a download).
    pub down: DirectionSpec,
    /// Client -> server (ACKs of a download).
    pub up: DirectionSpec,
    /// A slot schedule shared by both directions: per-slot base RTT and capacity and a
    /// handover at each boundary (LEO; see [`SlotSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<SlotSpec>,
}

/// One direction of a path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    /// Capacity of the bottleneck.
    pub rate: RateSpec,
    /// Propagation delay from the bottleneck's output to the far end.
    pub delay: DelaySpec,
    /// The bottleneck buffer.
    pub queue: QueueSpec,
    /// Random loss at the link input (the packet never enters the queue).
    #[serde(default, skip_serializing_if = "LossSpec::is_none")]
    pub loss: LossSpec,
    /// Bandwidth-on-demand: the usable rate follows the offered load with a lag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bod: Option<BodSpec>,
    /// Background traffic of other users sharing the bottleneck ([`CrossTrafficSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_traffic: Option<crate::CrossTrafficSpec>,
}

/// Capacity of the bottleneck over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RateSpec {
    /// A fixed rate.
    Constant {
        /// Bits per second.
        rate_bps: u64,
    },
    /// A piecewise-constant rate: each step holds from its `from` time until the next step.
    Schedule {
        /// Steps sorted by `from`; the first starts at `0s`. A step may be `0` (an outage).
        steps: Vec<RateStep>,
        /// If set, the schedule repeats with this period (must exceed the last `from`).
        #[serde(
            default,
            with = "duration_str::option",
            skip_serializing_if = "Option::is_none"
        )]
        repeat_every: Option<Duration>,
    },
    /// A mahimahi link-shell trace: each line is a millisecond timestamp at which one
    /// delivery opportunity of `opportunity_bytes` occurs; the trace repeats after its last
    /// timestamp. Give `file` (read by [`LinkSpec::from_toml_file`] relative to the TOML
    /// file, or by [`LinkSpec::from_toml_str`] relative to the working directory) or the
    /// inline `timestamps_ms`.
    MahimahiTrace {
        /// Trace file to load; replaced by `timestamps_ms` once loaded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
        /// Delivery opportunities, milliseconds since the start of the trace.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        timestamps_ms: Vec<u64>,
        /// Bytes one opportunity can carry (mahimahi: one MTU).
        #[serde(default = "default_opportunity_bytes")]
        opportunity_bytes: u32,
    },
    /// A new rate in every slot of the link's schedule ([`SlotSpec`], which the link must
    /// have), drawn from these quantiles: a fraction `p` of the slots have a rate of at
    /// most `rate_bps`, linear in between. Sorted by `p`, from 0 to 1. The faster
    /// direction and the slower one draw from streams of their own, so that a link and
    /// its mirror give each physical direction the same rates.
    Slotted {
        /// The distribution of the per-slot rate.
        quantiles: Vec<RateQuantile>,
    },
}

fn default_opportunity_bytes() -> u32 {
    DEFAULT_OPPORTUNITY_BYTES
}

/// One step of a [`RateSpec::Schedule`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// When the step starts (since the epoch, or since the start of the period if the
    /// schedule repeats).
    #[serde(with = "duration_str")]
    pub from: Duration,
    /// Bits per second from then on.
    pub rate_bps: u64,
}

/// One-way propagation delay: `base` + oscillation + path-change step + jitter, never
/// reordering packets (see the crate docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpec {
    /// The minimum one-way delay.
    #[serde(with = "duration_str")]
    pub base: Duration,
    /// Random extra delay per packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterSpec>,
    /// A periodic extra delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oscillation: Option<OscillationSpec>,
    /// A random extra delay that changes in steps at a fixed interval (LEO reconfiguration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_changes: Option<PathChangeSpec>,
}

/// Per-packet jitter: an extra delay drawn uniformly from `[0, max]`.
///
/// Because the wire is FIFO (`arrival = max(previous arrival, departure + delay)`), packets
/// sent closer together than `max` tend to arrive as if delayed by nearly `max`: at high
/// packet rates jitter mostly raises the delay (by up to `max`) and smooths its variation,
/// as on a real link where a packet cannot overtake the one in front of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterSpec {
    /// Largest extra delay.
    #[serde(with = "duration_str")]
    pub max: Duration,
}

/// A sinusoidal extra delay `peak_to_peak * (1 - cos(2 pi t / period)) / 2`: zero at the
/// epoch, `peak_to_peak` half a period later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OscillationSpec {
    /// Difference between the largest and the smallest extra delay.
    #[serde(with = "duration_str")]
    pub peak_to_peak: Duration,
    /// Period of the oscillation.
    #[serde(with = "duration_str")]
    pub period: Duration,
}

/// Path changes: at `first_at`, `first_at + interval`, ... the extra delay jumps to a new
/// value drawn uniformly from `[0, max_extra]` (from the period before `first_at` on, too).
/// A direction's own slot clock, on the same mechanism as the link's [`SlotSpec`] (which
/// also draws rates and handovers, for both directions at once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathChangeSpec {
    /// Time between changes.
    #[serde(with = "duration_str")]
    pub interval: Duration,
    /// Time of the first change (default: `interval`).
    #[serde(
        default,
        with = "duration_str::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub first_at: Option<Duration>,
    /// Largest extra delay of a path.
    #[serde(with = "duration_str")]
    pub max_extra: Duration,
}

/// The bottleneck buffer: its limit and its discipline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// How much the queue holds (the packet being transmitted counts).
    pub limit: QueueLimit,
    /// For `limit = { bdp = .. }`: whose rate multiplies the base RTT (default: this
    /// direction's own rate).
    #[serde(default, skip_serializing_if = "BdpRateOf::is_this")]
    pub bdp_rate_of: BdpRateOf,
    /// What the queue drops.
    #[serde(default)]
    pub discipline: Discipline,
}

/// A queue limit, written `{ bytes = 36000000 }`, `{ packets = 25 }` or `{ bdp = 1.0 }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueLimit {
    /// Bytes (the sum of queued packet sizes).
    Bytes(u64),
    /// Packets, whatever their size.
    Packets(u64),
    /// A multiple of the BDP = nominal rate x base RTT of the whole path; resolved to
    /// bytes when the [`Path`](crate::Path) is built ([`LinkSpec::resolved`]).
    Bdp(f64),
}

/// Whose rate defines the BDP of a `bdp` queue limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BdpRateOf {
    /// This direction's nominal rate.
    #[default]
    This,
    /// The down direction's nominal rate.
    Down,
    /// The up direction's nominal rate.
    Up,
}

impl BdpRateOf {
    fn is_this(&self) -> bool {
        *self == BdpRateOf::This
    }
}

/// Queue discipline.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Discipline {
    /// Drop an arrival only if it does not fit.
    #[default]
    DropTail,
    /// The Viasat gateway AQM (seed 000 Sec 4.2, 001 Sec III): while the queue is above
    /// `threshold_fraction` of its limit, drop each arrival with `drop_probability`;
    /// drop-tail at the limit.
    ViasatAqm {
        /// Occupancy (fraction of the limit, in the limit's unit) above which arrivals are
        /// dropped at random. Seed value 0.5 (18 MB of 36 MB).
        #[serde(default = "default_aqm_threshold")]
        threshold_fraction: f64,
        /// Probability of dropping an arrival while above the threshold. Seed value 0.25.
        #[serde(default = "default_aqm_drop")]
        drop_probability: f64,
    },
}

fn default_aqm_threshold() -> f64 {
    0.5
}
fn default_aqm_drop() -> f64 {
    0.25
}

impl Discipline {
    /// The Viasat AQM with the seeds' values (above 50 % of the limit, drop 25 %).
    pub fn viasat() -> Self {
        Discipline::ViasatAqm {
            threshold_fraction: default_aqm_threshold(),
            drop_probability: default_aqm_drop(),
        }
    }
}

/// Random loss at the link input.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossSpec {
    /// No random loss.
    #[default]
    None,
    /// Each packet is lost independently with probability `plr`.
    Bernoulli {
        /// Packet loss rate, a fraction (0.01 = 1 %).
        plr: f64,
    },
    /// Two-state Gilbert-Elliott chain, stepped once per packet (transition first, then
    /// the loss draw in the new state). With `loss_in_good = 0` and `loss_in_bad = 1` the
    /// mean loss burst is `1 / p_bad_to_good` packets.
    GilbertElliott {
        /// Per-packet probability of going from the good to the bad state.
        p_good_to_bad: f64,
        /// Per-packet probability of going from the bad to the good state.
        p_bad_to_good: f64,
        /// Loss probability in the good state.
        #[serde(default)]
        loss_in_good: f64,
        /// Loss probability in the bad state.
        #[serde(default = "one")]
        loss_in_bad: f64,
    },
    /// A fixed pattern: of every `every` packets offered, the one at position `offset`
    /// (counting from 0) is lost, with no randomness. picoquic's satellite tests lose 1
    /// packet in 64 this way (a rotating 64-bit loss mask with one bit set,
    /// `picoquictest/satellite_test.c`), so that every implementation sees the same losses.
    /// Recorded as `random_loss` (not congestion).
    Periodic {
        /// Period in packets, at least 2.
        every: u32,
        /// Position of the lost packet within each period, below `every`.
        #[serde(default)]
        offset: u32,
    },
}

fn one() -> f64 {
    1.0
}

impl LossSpec {
    /// True for [`LossSpec::None`].
    pub fn is_none(&self) -> bool {
        matches!(self, LossSpec::None)
    }

    /// Long-run fraction of packets lost.
    pub fn mean_loss_rate(&self) -> f64 {
        match *self {
            LossSpec::None => 0.0,
            LossSpec::Bernoulli { plr } => plr,
            LossSpec::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                let total = p_good_to_bad + p_bad_to_good;
                if total == 0.0 {
                    loss_in_good
                } else {
                    let bad = p_good_to_bad / total;
                    bad * loss_in_bad + (1.0 - bad) * loss_in_good
                }
            }
            LossSpec::Periodic { every, .. } => 1.0 / f64::from(every),
        }
    }
}

/// Bandwidth-on-demand (BoD): the rate the link grants this direction follows the offered
/// load instead of being fixed, the way a GEO operator allocates capacity to a terminal.
///
/// Every `period` (on a grid from the epoch) the allocator measures the bytes offered to
/// the queue during the last `window`, multiplies that rate by `headroom`, clamps it to
/// `[min_rate_bps, plan]` (plan = the direction's nominal rate) and grants it `lag` later.
/// The link serves at `min(rate(t), allocation(t))`. During a sender's ramp-up the
/// allocation lags the rising offered rate, a queue builds, then drains when the next,
/// larger grant arrives; this repeats until the plan rate is granted, which is what makes
/// the RTT oscillate on real GEO links (seed 000 Sec 2.1.3, seed 003 Fig 2-3).
///
/// The defaults are the calibration of the `geo-viasat-bod` preset; see
/// [`presets`](crate::presets) for what they produce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BodSpec {
    /// Time between allocation decisions.
    #[serde(with = "duration_str")]
    pub period: Duration,
    /// Time from a decision to the grant taking effect (request/grant signalling).
    #[serde(with = "duration_str")]
    pub lag: Duration,
    /// How far back a decision measures the offered load.
    #[serde(with = "duration_str")]
    pub window: Duration,
    /// Allocation at the epoch, bit/s.
    pub initial_rate_bps: u64,
    /// The allocation never goes below this, bit/s (what an idle terminal keeps).
    pub min_rate_bps: u64,
    /// Factor applied to the measured offered rate (>= 1).
    pub headroom: f64,
    /// Each grant takes effect a further uniform random time in `[0, lag_jitter]` after
    /// `lag` (a scheduler that answers requests late when the beam is busy), drawn from the
    /// direction's own stream. Below `period`, so grants keep their order. Default 0.
    #[serde(with = "duration_str", skip_serializing_if = "Duration::is_zero")]
    pub lag_jitter: Duration,
    /// Each decision draws its factor uniformly from `[headroom - headroom_spread,
    /// headroom + headroom_spread]` instead of using `headroom` (a scheduler whose grants
    /// depend on what the rest of the beam asks for, so the ramp to the plan rate takes a
    /// varying number of periods), from the direction's own stream. `headroom -
    /// headroom_spread` must be at least 1. Default 0 (every grant uses `headroom`).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub headroom_spread: f64,
    /// The decision grid starts at a uniform random offset in `[0, period)` instead of at
    /// the epoch: a connection does not start in phase with the operator's allocation
    /// cycle. Default false (the grid is `k x period`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub random_phase: bool,
}

impl Default for BodSpec {
    /// The `geo-viasat-bod` calibration (see [`presets::geo_viasat_bod`](crate::presets::geo_viasat_bod)).
    fn default() -> Self {
        BodSpec {
            period: Duration::from_secs(2),
            lag: Duration::from_millis(600),
            window: Duration::from_millis(500),
            initial_rate_bps: 2_000_000,
            min_rate_bps: 2_000_000,
            headroom: 3.0,
            lag_jitter: Duration::ZERO,
            headroom_spread: 0.0,
            random_phase: false,
        }
    }
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

impl RateSpec {
    /// A constant rate.
    pub fn constant(rate_bps: u64) -> Self {
        RateSpec::Constant { rate_bps }
    }

    /// The rate used for BDP and as the BoD plan rate: the constant rate, the largest step
    /// of a schedule or of a slotted rate, or the mean rate of a trace over one
    /// repetition. 0 for a trace that has not been loaded yet.
    pub fn nominal_rate_bps(&self) -> u64 {
        match self {
            RateSpec::Constant { rate_bps } => *rate_bps,
            RateSpec::Schedule { steps, .. } => steps.iter().map(|s| s.rate_bps).max().unwrap_or(0),
            RateSpec::Slotted { quantiles } => {
                quantiles.iter().map(|q| q.rate_bps).max().unwrap_or(0)
            }
            RateSpec::MahimahiTrace {
                timestamps_ms,
                opportunity_bytes,
                ..
            } => match timestamps_ms.last() {
                Some(&last) if last > 0 => {
                    let bits = timestamps_ms.len() as u128 * *opportunity_bytes as u128 * 8;
                    u64::try_from(bits * 1000 / last as u128).unwrap_or(u64::MAX)
                }
                _ => 0,
            },
        }
    }
}

impl DelaySpec {
    /// A fixed one-way delay.
    pub fn fixed(base: Duration) -> Self {
        DelaySpec {
            base,
            jitter: None,
            oscillation: None,
            path_changes: None,
        }
    }

    /// Largest possible one-way delay (base + all extras).
    pub fn max_delay(&self) -> Duration {
        self.base
            + self.jitter.as_ref().map_or(Duration::ZERO, |j| j.max)
            + self
                .oscillation
                .as_ref()
                .map_or(Duration::ZERO, |o| o.peak_to_peak)
            + self
                .path_changes
                .as_ref()
                .map_or(Duration::ZERO, |p| p.max_extra)
    }
}

impl QueueSpec {
    /// A drop-tail queue with the given limit.
    pub fn drop_tail(limit: QueueLimit) -> Self {
        QueueSpec {
            limit,
            bdp_rate_of: BdpRateOf::This,
            discipline: Discipline::DropTail,
        }
    }
}

impl DirectionSpec {
    /// A direction with a constant rate, a fixed delay and a drop-tail queue.
    pub fn simple(rate_bps: u64, delay: Duration, limit: QueueLimit) -> Self {
        DirectionSpec {
            rate: RateSpec::constant(rate_bps),
            delay: DelaySpec::fixed(delay),
            queue: QueueSpec::drop_tail(limit),
            loss: LossSpec::None,
            bod: None,
            cross_traffic: None,
        }
    }
}

impl LinkSpec {
    /// Parses and validates a TOML link spec. Trace files are read relative to the
    /// working directory.
    pub fn from_toml_str(text: &str) -> Result<Self, LinkError> {
        Self::parse_in(text, None)
    }

    /// Reads, parses and validates a TOML link spec (a regular file of at most
    /// [`LINK_FILE`](crate::file::LINK_FILE)); trace files are read relative to the TOML
    /// file's directory.
    pub fn from_toml_file(path: impl AsRef<FsPath>) -> Result<Self, LinkError> {
        let path = path.as_ref();
        let text = crate::file::read_to_string(path, crate::file::LINK_FILE)?;
        Self::parse_in(&text, path.parent())
    }

    fn parse_in(text: &str, dir: Option<&FsPath>) -> Result<Self, LinkError> {
        let mut spec: LinkSpec = toml::from_str(text).map_err(|e| toml_error_line(&e, text))?;
        spec.load_traces(dir)?;
        spec.validate()?;
        Ok(spec)
    }

    /// Reads the `file` of every mahimahi trace rate (relative to `dir`, or the working
    /// directory) into its `timestamps_ms`, and clears `file`.
    pub fn load_traces(&mut self, dir: Option<&FsPath>) -> Result<(), LinkError> {
        for (name, d) in [("down", &mut self.down), ("up", &mut self.up)] {
            if let RateSpec::MahimahiTrace {
                file,
                timestamps_ms,
                ..
            } = &mut d.rate
            {
                if let Some(f) = file.take() {
                    if !timestamps_ms.is_empty() {
                        return Err(LinkError::invalid(
                            format!("{name}.rate"),
                            "has both file and timestamps_ms; give one",
                        ));
                    }
                    let full = match dir {
                        Some(dir) => dir.join(&f),
                        None => FsPath::new(&f).to_path_buf(),
                    };
                    *timestamps_ms = MahimahiTrace::load(&full)?.timestamps_ms().to_vec();
                }
            }
        }
        Ok(())
    }

    /// Serializes to TOML (durations as `"300ms"`; traces inline). An error here would
    /// come from the TOML writer; none is known for specs that pass validation.
    pub fn to_toml_string(&self) -> Result<String, LinkError> {
        toml::to_string(self).map_err(|e| {
            LinkError::invalid(
                "spec",
                format!(
                    "cannot be written as TOML: {}",
                    e.to_string().replace('\n', " ")
                ),
            )
        })
    }

    /// Minimum round-trip propagation delay: down base delay + up base delay, or the
    /// smallest slot RTT where the slot schedule draws one (it includes them).
    pub fn base_rtt(&self) -> Duration {
        let floor = self.down.delay.base + self.up.delay.base;
        let slot_min = self
            .slots
            .as_ref()
            .and_then(|s| s.rtt.iter().map(|q| q.rtt).min());
        slot_min.map_or(floor, |m| m.max(floor))
    }

    /// BDP in bytes for a rate: `rate_bps x base RTT / 8`.
    pub fn bdp_bytes(&self, rate_bps: u64) -> u64 {
        let bits = rate_bps as u128 * self.base_rtt().as_nanos() / 1_000_000_000;
        u64::try_from(bits / 8).unwrap_or(u64::MAX)
    }

    /// The queue limit of a direction in bytes or packets, with `bdp` multiples resolved:
    /// `round(multiple x rate x base RTT / 8)` bytes, at least 1.
    pub fn resolved_limit(&self, direction: &DirectionSpec) -> QueueLimit {
        match direction.queue.limit {
            QueueLimit::Bdp(multiple) => {
                let rate = match direction.queue.bdp_rate_of {
                    BdpRateOf::This => direction.rate.nominal_rate_bps(),
                    BdpRateOf::Down => self.down.rate.nominal_rate_bps(),
                    BdpRateOf::Up => self.up.rate.nominal_rate_bps(),
                };
                let bytes = (self.bdp_bytes(rate) as f64 * multiple).round();
                QueueLimit::Bytes((bytes as u64).clamp(1, MAX_QUEUE_BYTES))
            }
            other => other,
        }
    }

    /// A copy with every `bdp` queue limit replaced by its size in bytes, ready for
    /// [`Direction::new`](crate::Direction::new).
    pub fn resolved(&self) -> LinkSpec {
        let mut out = self.clone();
        out.down.queue.limit = self.resolved_limit(&self.down);
        out.up.queue.limit = self.resolved_limit(&self.up);
        out.down.queue.bdp_rate_of = BdpRateOf::This;
        out.up.queue.bdp_rate_of = BdpRateOf::This;
        out
    }

    /// The same path seen from the other end: resolved (so that `bdp` limits keep their
    /// sizes), with `down` and `up` swapped. A simulator whose data flows client to
    /// server runs on the mirrored link so that `down` is always the data direction.
    pub fn mirrored(&self) -> LinkSpec {
        let mut out = self.resolved();
        std::mem::swap(&mut out.down, &mut out.up);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nominal_rate_of_trace_is_its_mean() {
        // 12 opportunities of 1500 B in 12 ms = 12 Mbit/s.
        let r = RateSpec::MahimahiTrace {
            file: None,
            timestamps_ms: (1..=12).collect(),
            opportunity_bytes: 1500,
        };
        assert_eq!(r.nominal_rate_bps(), 12_000_000);
    }

    #[test]
    fn bdp_of_thesis_sat_is_1_5_mb() {
        let d = DirectionSpec::simple(20_000_000, Duration::from_millis(300), QueueLimit::Bdp(1.0));
        let spec = LinkSpec {
            name: "t".into(),
            description: String::new(),
            source: String::new(),
            down: d.clone(),
            up: d,
            slots: None,
        };
        assert_eq!(
            spec.resolved_limit(&spec.down),
            QueueLimit::Bytes(1_500_000)
        );
    }

    #[test]
    fn gilbert_elliott_mean_loss() {
        let l = LossSpec::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.24,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        };
        assert!((l.mean_loss_rate() - 0.04).abs() < 1e-12);
    }
}
