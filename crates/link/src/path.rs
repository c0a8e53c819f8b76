//! A path: the two directions of a [`LinkSpec`], built with distinct random streams and,
//! for a slotted link, one slot schedule they share.

use std::time::Duration;

use crate::direction::Direction;
use crate::error::LinkError;
use crate::random::{STREAM_DOWN, STREAM_UP, derive_seed};
use crate::slot::{Leg, Quantiles, SlotRecord, SlotSchedule};
use crate::spec::{LinkSpec, RateSpec};
use crate::truth::GroundTruthConfig;

/// Both directions of a path. `down` carries server -> client packets, `up` the reverse.
#[derive(Debug, Clone)]
pub struct Path<T> {
    /// Server -> client.
    pub down: Direction<T>,
    /// Client -> server.
    pub up: Direction<T>,
    /// The slot schedule both directions follow, with each direction's slotted rate.
    slots: Option<PathSlots>,
}

/// What a path keeps of its slot schedule to report it ([`Path::slots`]).
#[derive(Debug, Clone)]
struct PathSlots {
    schedule: SlotSchedule,
    /// Each direction's leg and slotted rate.
    down: (Leg, Option<Quantiles>),
    up: (Leg, Option<Quantiles>),
}

impl<T> Path<T> {
    /// Validates `spec`, resolves BDP queue limits (rate x base RTT) and builds both
    /// directions, each with its own sub-seed of `seed`; a slot schedule draws from
    /// `seed` unless the spec fixes its own.
    pub fn new(spec: &LinkSpec, seed: u64) -> Result<Self, LinkError> {
        Self::with_ground_truth(spec, seed, GroundTruthConfig::default())
    }

    /// As [`Path::new`], choosing what ground truth to record (both directions).
    pub fn with_ground_truth(
        spec: &LinkSpec,
        seed: u64,
        config: GroundTruthConfig,
    ) -> Result<Self, LinkError> {
        spec.validate()?;
        let resolved = spec.resolved();
        let schedule = SlotSchedule::of_link(&resolved, seed);
        let leg = |leg| schedule.clone().map(|s| (s, leg));
        let (down_leg, up_leg) = Leg::of_rates(
            resolved.down.rate.nominal_rate_bps(),
            resolved.up.rate.nominal_rate_bps(),
        );
        Ok(Path {
            down: Direction::build(
                &resolved.down,
                derive_seed(seed, STREAM_DOWN),
                config.clone(),
                leg(down_leg),
            )
            .map_err(|e| e.within("down"))?,
            up: Direction::build(
                &resolved.up,
                derive_seed(seed, STREAM_UP),
                config,
                leg(up_leg),
            )
            .map_err(|e| e.within("up"))?,
            slots: schedule.map(|schedule| PathSlots {
                schedule,
                down: (down_leg, slotted(&resolved.down.rate)),
                up: (up_leg, slotted(&resolved.up.rate)),
            }),
        })
    }

    /// The base (propagation) RTT at `t`: both directions' base delays of a packet
    /// leaving at `t` ([`Direction::base_delay_at`]), the slot's base RTT on a slotted
    /// link. RTT minus this is what queueing, jitter and handovers added.
    pub fn base_rtt_at(&self, t: Duration) -> Duration {
        self.down.base_delay_at(t) + self.up.base_delay_at(t)
    }

    /// The slots that start before `until`, as drawn: each one's span, base RTT, slotted
    /// rates and handover, one at a time (a day of 1 ms slots is 86.4 million of them).
    /// Empty for a link without a slot schedule.
    pub fn slots(&self, until: Duration) -> impl Iterator<Item = SlotRecord> + '_ {
        let p = self.slots.as_ref();
        let last = p.map(|p| {
            p.schedule
                .clock()
                .index(crate::units::to_nanos(until).saturating_sub(1))
        });
        let count = last.map_or(0, |last| last.saturating_add(1));
        (0..count)
            .filter_map(move |k| p.map(|p| (p, k)))
            .map(|(p, k)| {
                let mut record = p.schedule.record(k);
                let rate = |(leg, q): &(Leg, Option<Quantiles>)| {
                    q.as_ref().map(|q| p.schedule.rate_bps(*leg, q, k))
                };
                record.down_rate_bps = rate(&p.down);
                record.up_rate_bps = rate(&p.up);
                record
            })
            .filter(|r| r.end > r.start)
    }

    /// Earliest timeout of the two directions.
    pub fn poll_timeout(&self) -> Option<std::time::Duration> {
        match (self.down.poll_timeout(), self.up.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        }
    }
}

/// The quantiles of a slotted rate.
fn slotted(rate: &RateSpec) -> Option<Quantiles> {
    match rate {
        RateSpec::Slotted { quantiles } => Some(Quantiles::of_rates(quantiles)),
        _ => None,
    }
}
