//! The description of a slotted link: a schedule of fixed-length slots shared by both
//! directions, each slot with its own base RTT and capacity, and a handover at every
//! boundary. This is how Starlink behaves: the satellite serving a terminal is reassigned
//! on a globally synchronised 15-second schedule, the minimum RTT and the throughput step
//! at those boundaries, and a boundary may bring an RTT spike, a short outage or a burst
//! of loss (Mohan et al., WWW 2024; G. Huston, APNIC blog, May 2024).
//!
//! ```toml
//! [down]
//! rate = { kind = "slotted", quantiles = [{ p = 0.0, rate_bps = 40000000 }, { p = 0.5, rate_bps = 290000000 }, { p = 1.0, rate_bps = 500000000 }] }
//! delay = { base = "5ms", jitter = { max = "3ms" } }
//! queue = { limit = { bytes = 1500000 } }
//!
//! [slots]
//! interval = "15s"
//! phase = "random"
//! rtt = [{ p = 0.0, rtt = "11ms" }, { p = 0.5, rtt = "19ms" }, { p = 1.0, rtt = "30ms" }]
//! handover = { spike = { min = "30ms", max = "50ms" }, loss = { probability = 0.16, min = "10ms", max = "60ms" } }
//! ```
//!
//! A link without `[slots]` has no schedule; `rate = { kind = "slotted" }` needs one. The
//! process that draws the slots is `crate::slot`.

use crate::units::duration_str;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// Starlink's slot length: satellites are reassigned every 15 seconds (Mohan et al., WWW
/// 2024, Sec. 6; Huston, APNIC blog, May 2024).
pub const STARLINK_SLOT: Duration = Duration::from_secs(15);

/// Longest accepted slot: an hour. A schedule is a LEO link's reconfiguration cycle;
/// nothing measured is slower, and a slower one is easier written as a rate schedule.
pub const MAX_SLOT: Duration = Duration::from_secs(3600);

/// The slot schedule of a link ([`LinkSpec::slots`](crate::LinkSpec::slots)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotSpec {
    /// Length of every slot (default 15 s, [`STARLINK_SLOT`]).
    #[serde(with = "duration_str", default = "starlink_slot")]
    pub interval: Duration,
    /// Where the first boundary falls after the epoch (the run's start).
    #[serde(default)]
    pub phase: SlotPhase,
    /// The schedule's own seed: with it, every run of this link (simulated or real time,
    /// download or upload, any run seed) sees the same slots; without it, the slots are
    /// drawn from the seed the link model is built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Each slot's base RTT (propagation, both ways, without jitter, spikes or queueing),
    /// drawn from these quantiles. It includes the directions' `delay.base`, which is
    /// its floor; the rest is added half to each direction. Empty: no per-slot RTT.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rtt: Vec<RttQuantile>,
    /// What happens at each boundary.
    #[serde(default, skip_serializing_if = "HandoverSpec::is_none")]
    pub handover: HandoverSpec,
}

fn starlink_slot() -> Duration {
    STARLINK_SLOT
}

impl SlotSpec {
    /// A 15-second schedule starting on a boundary, with nothing drawn per slot.
    pub fn starlink() -> Self {
        SlotSpec {
            interval: STARLINK_SLOT,
            phase: SlotPhase::default(),
            seed: None,
            rtt: Vec::new(),
            handover: HandoverSpec::default(),
        }
    }
}

/// When the first slot boundary falls after the epoch: at a fixed offset in
/// `[0, interval)` (`"4s"`; default `"0s"`, a boundary at the epoch), or `"random"`,
/// uniform in `[0, interval)` from the schedule's seed, so that runs with different seeds
/// start at different points of the cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotPhase {
    /// The first boundary this long after the epoch.
    At(Duration),
    /// Drawn from the schedule's seed.
    Random,
}

impl Default for SlotPhase {
    fn default() -> Self {
        SlotPhase::At(Duration::ZERO)
    }
}

impl SlotPhase {
    /// `"random"` or a duration (`"4s"`); errors are one line.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "random" => Ok(SlotPhase::Random),
            other => crate::units::parse_duration(other)
                .map(SlotPhase::At)
                .map_err(|e| format!("{e}, or \"random\"")),
        }
    }
}

impl Serialize for SlotPhase {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SlotPhase::At(d) => s.serialize_str(&crate::units::format_duration(*d)),
            SlotPhase::Random => s.serialize_str("random"),
        }
    }
}

impl<'de> Deserialize<'de> for SlotPhase {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        SlotPhase::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A point of a slot RTT distribution: a fraction `p` of the slots have a base RTT of at
/// most `rtt`. Between points the distribution is linear (the draw interpolates).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttQuantile {
    /// Cumulative probability in `[0, 1]`.
    pub p: f64,
    /// The base RTT at that probability.
    #[serde(with = "duration_str")]
    pub rtt: Duration,
}

/// A point of a slot capacity distribution ([`RateSpec::Slotted`](crate::RateSpec::Slotted)):
/// a fraction `p` of the slots have a rate of at most `rate_bps`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateQuantile {
    /// Cumulative probability in `[0, 1]`.
    pub p: f64,
    /// Bits per second at that probability.
    pub rate_bps: u64,
}

/// What a boundary may bring, each part optional and drawn per boundary, the same for
/// both directions (the terminal changes satellite once for both).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverSpec {
    /// An RTT spike: packets that leave either bottleneck during the first `d` after the
    /// boundary are held and released together at `boundary + d` (the deep buffers that
    /// ride out the re-pointing), so a packet sent at the boundary sees its RTT grow by
    /// `d`, and one sent later by less. `d` is drawn uniformly from `[min, max]`. The
    /// capacity is not lost: what was held leaves at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike: Option<HandoverEvent>,
    /// A short outage: the bottleneck of both directions sends nothing for the first `d`
    /// after the boundary (packets wait in the queue, which may overflow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<HandoverEvent>,
    /// A loss burst: packets that reach the link during the first `d` after the boundary
    /// are lost with probability `plr` (recorded as `burst_loss`, not congestion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossBurstSpec>,
}

impl HandoverSpec {
    /// True if no boundary brings anything.
    pub fn is_none(&self) -> bool {
        self.spike.is_none() && self.outage.is_none() && self.loss.is_none()
    }
}

/// A handover event of random length: at each boundary it happens with `probability`,
/// lasting a uniform draw from `[min, max]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverEvent {
    /// Chance that a boundary brings it (default 1: every boundary).
    #[serde(default = "always")]
    pub probability: f64,
    /// Shortest.
    #[serde(with = "duration_str")]
    pub min: Duration,
    /// Longest (below the slot interval).
    #[serde(with = "duration_str")]
    pub max: Duration,
}

/// A loss burst at a boundary: a [`HandoverEvent`] during which each packet is lost with
/// `plr`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossBurstSpec {
    /// Chance that a boundary brings a burst (default 1).
    #[serde(default = "always")]
    pub probability: f64,
    /// Shortest burst.
    #[serde(with = "duration_str")]
    pub min: Duration,
    /// Longest burst (below the slot interval).
    #[serde(with = "duration_str")]
    pub max: Duration,
    /// Loss probability of a packet during the burst (default 1: all lost).
    #[serde(default = "always")]
    pub plr: f64,
}

fn always() -> f64 {
    1.0
}

impl LossBurstSpec {
    /// Its timing, as a [`HandoverEvent`].
    pub fn event(&self) -> HandoverEvent {
        HandoverEvent {
            probability: self.probability,
            min: self.min,
            max: self.max,
        }
    }
}
