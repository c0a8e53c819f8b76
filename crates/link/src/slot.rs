//! The slot process: a link's schedule of slots ([`SlotSpec`]) turned into values at a
//! time.
//!
//! Every value is a hash of (the schedule's seed, what is drawn, the slot's index), like
//! the path-change process of [`crate::delay`], so none depends on how often or in which
//! order the caller asks, and both directions of a path, which hold clones of the same
//! schedule, see the same handovers. Only the per-packet draw of a partial loss burst
//! (`plr` below 1) comes from a stream, the direction's own, in arrival order.
//!
//! Slot 0 runs from the epoch to the first boundary (at the phase); slot `k >= 1` starts
//! at boundary `k`, `phase + (k - 1) x interval`, which brings that slot's handover.

use crate::random::{
    STREAM_SLOT_LOSS, STREAM_SLOT_LOSS_LEN, STREAM_SLOT_OUTAGE, STREAM_SLOT_OUTAGE_LEN,
    STREAM_SLOT_PHASE, STREAM_SLOT_RATE_FORWARD, STREAM_SLOT_RATE_RETURN, STREAM_SLOT_RTT,
    STREAM_SLOT_SPIKE, STREAM_SLOT_SPIKE_LEN, STREAM_SLOTS, derive_seed, mix64,
};
use crate::spec::{HandoverEvent, LinkSpec, RateQuantile, RttQuantile, SlotPhase, SlotSpec};
use crate::units::{Nanos, from_nanos, to_nanos};
use std::time::Duration;

/// Where slots begin: boundaries at `first + k x interval`, `k >= 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotClock {
    first_ns: Nanos,
    interval_ns: Nanos,
}

impl SlotClock {
    pub(crate) fn new(first_ns: Nanos, interval_ns: Nanos) -> Self {
        SlotClock {
            first_ns,
            interval_ns: interval_ns.max(1),
        }
    }

    /// The slot that `t` falls in.
    pub(crate) fn index(&self, t: Nanos) -> u64 {
        if t < self.first_ns {
            0
        } else {
            1 + (t - self.first_ns) / self.interval_ns
        }
    }

    /// When slot `k` starts (slot 0 at the epoch).
    pub(crate) fn start(&self, k: u64) -> Nanos {
        match k {
            0 => 0,
            k => self
                .first_ns
                .saturating_add((k - 1).saturating_mul(self.interval_ns)),
        }
    }
}

/// Which leg of the path a direction is: the forward leg is the faster direction (down
/// where both are as fast), the return leg the other. The rate streams and the split of
/// the slot RTT go by leg, not by name, so that a link and its mirror (down and up
/// swapped, `LinkSpec::mirrored`) draw the same slots for the same physical direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leg {
    Forward,
    Return,
}

impl Leg {
    /// The legs of (down, up) for directions of these nominal rates.
    pub(crate) fn of_rates(down_bps: u64, up_bps: u64) -> (Leg, Leg) {
        if up_bps > down_bps {
            (Leg::Return, Leg::Forward)
        } else {
            (Leg::Forward, Leg::Return)
        }
    }
}

/// A distribution given by quantile points, drawn by linear interpolation of its inverse.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Quantiles {
    /// `(p, value)`, `p` strictly increasing from 0 to 1 (checked by validation).
    points: Vec<(f64, f64)>,
}

impl Quantiles {
    pub(crate) fn of_rates(q: &[RateQuantile]) -> Self {
        Quantiles {
            points: q.iter().map(|q| (q.p, q.rate_bps as f64)).collect(),
        }
    }

    pub(crate) fn of_rtts(q: &[RttQuantile]) -> Self {
        Quantiles {
            points: q.iter().map(|q| (q.p, to_nanos(q.rtt) as f64)).collect(),
        }
    }

    /// The value at cumulative probability `u` in `[0, 1)`.
    pub(crate) fn at(&self, u: f64) -> f64 {
        let i = self.points.partition_point(|&(p, _)| p <= u);
        match (i.checked_sub(1).map(|j| self.points[j]), self.points.get(i)) {
            (Some((p0, v0)), Some(&(p1, v1))) => v0 + (v1 - v0) * (u - p0) / (p1 - p0),
            (Some((_, v)), None) | (None, Some(&(_, v))) => v,
            (None, None) => 0.0,
        }
    }
}

/// A handover event's draw: whether and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
struct EventDraw {
    probability: f64,
    min_ns: Nanos,
    max_ns: Nanos,
    happens_stream: u64,
    length_stream: u64,
}

/// A link's slot schedule with its seed: what each slot and boundary holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SlotSchedule {
    clock: SlotClock,
    seed: u64,
    /// The directions' base delays: the part of the slot RTT that never changes.
    floor_down_ns: Nanos,
    floor_up_ns: Nanos,
    rtt: Option<Quantiles>,
    spike: Option<EventDraw>,
    outage: Option<EventDraw>,
    loss: Option<(EventDraw, f64)>,
}

/// A uniform draw in `[0, 1)` for `index` of one quantity of the schedule.
fn unit(seed: u64, stream: u64, index: u64) -> f64 {
    let h = mix64(derive_seed(seed, stream) ^ mix64(index));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

impl SlotSchedule {
    /// The schedule of `spec`, if it has one, for a link model built with `seed`.
    pub(crate) fn of_link(spec: &LinkSpec, seed: u64) -> Option<Self> {
        let slots = spec.slots.as_ref()?;
        Some(Self::new(
            slots,
            spec.down.delay.base,
            spec.up.delay.base,
            seed,
        ))
    }

    fn new(spec: &SlotSpec, floor_down: Duration, floor_up: Duration, seed: u64) -> Self {
        let seed = spec.seed.unwrap_or_else(|| derive_seed(seed, STREAM_SLOTS));
        let interval_ns = to_nanos(spec.interval).max(1);
        let first_ns = match spec.phase {
            SlotPhase::At(d) => to_nanos(d),
            SlotPhase::Random => (unit(seed, STREAM_SLOT_PHASE, 0) * interval_ns as f64) as Nanos,
        };
        let draw = |e: &HandoverEvent, happens_stream, length_stream| EventDraw {
            probability: e.probability,
            min_ns: to_nanos(e.min),
            max_ns: to_nanos(e.max).max(to_nanos(e.min)),
            happens_stream,
            length_stream,
        };
        let h = &spec.handover;
        SlotSchedule {
            clock: SlotClock::new(first_ns, interval_ns),
            seed,
            floor_down_ns: to_nanos(floor_down),
            floor_up_ns: to_nanos(floor_up),
            rtt: (!spec.rtt.is_empty()).then(|| Quantiles::of_rtts(&spec.rtt)),
            spike: h
                .spike
                .as_ref()
                .map(|e| draw(e, STREAM_SLOT_SPIKE, STREAM_SLOT_SPIKE_LEN)),
            outage: h
                .outage
                .as_ref()
                .map(|e| draw(e, STREAM_SLOT_OUTAGE, STREAM_SLOT_OUTAGE_LEN)),
            loss: h.loss.as_ref().map(|l| {
                (
                    draw(&l.event(), STREAM_SLOT_LOSS, STREAM_SLOT_LOSS_LEN),
                    l.plr,
                )
            }),
        }
    }

    pub(crate) fn clock(&self) -> SlotClock {
        self.clock
    }

    /// The first boundary after `t`.
    pub(crate) fn next_boundary_after(&self, t: Nanos) -> Nanos {
        self.clock.start(self.clock.index(t) + 1)
    }

    /// Slot `k`'s base RTT (the floor where no RTT distribution is given).
    pub(crate) fn rtt_ns(&self, k: u64) -> Nanos {
        let floor = self.floor_down_ns + self.floor_up_ns;
        match &self.rtt {
            Some(q) => (q.at(unit(self.seed, STREAM_SLOT_RTT, k)).round() as Nanos).max(floor),
            None => floor,
        }
    }

    /// What slot `k` adds to `leg`'s base delay: half the slot RTT above the floor (the
    /// forward leg takes the smaller half of an odd nanosecond).
    pub(crate) fn extra_ns(&self, leg: Leg, k: u64) -> Nanos {
        let extra = self.rtt_ns(k) - self.floor_down_ns - self.floor_up_ns;
        match leg {
            Leg::Forward => extra / 2,
            Leg::Return => extra - extra / 2,
        }
    }

    /// Slot `k`'s rate for `leg`, drawn from `quantiles`.
    pub(crate) fn rate_bps(&self, leg: Leg, quantiles: &Quantiles, k: u64) -> u64 {
        let stream = match leg {
            Leg::Forward => STREAM_SLOT_RATE_FORWARD,
            Leg::Return => STREAM_SLOT_RATE_RETURN,
        };
        quantiles.at(unit(self.seed, stream, k)).round() as u64
    }

    /// How long an event lasts from boundary `k`, if that boundary brings it.
    fn event(&self, e: &EventDraw, k: u64) -> Option<Nanos> {
        if k == 0 || unit(self.seed, e.happens_stream, k) >= e.probability {
            return None;
        }
        let span = (e.max_ns - e.min_ns) as f64;
        Some(e.min_ns + (span * unit(self.seed, e.length_stream, k)).round() as Nanos)
    }

    /// The spike at boundary `k`, if any.
    pub(crate) fn spike_ns(&self, k: u64) -> Option<Nanos> {
        self.spike.as_ref().and_then(|e| self.event(e, k))
    }

    /// The outage at boundary `k`, if any.
    pub(crate) fn outage_ns(&self, k: u64) -> Option<Nanos> {
        self.outage.as_ref().and_then(|e| self.event(e, k))
    }

    /// The loss burst at boundary `k`, if any: its length and loss probability.
    pub(crate) fn loss_burst(&self, k: u64) -> Option<(Nanos, f64)> {
        let (e, plr) = self.loss.as_ref()?;
        self.event(e, k).map(|d| (d, *plr))
    }

    /// True if the schedule may stop service at some boundary.
    pub(crate) fn has_outages(&self) -> bool {
        self.outage.is_some()
    }

    /// How long after `t` a packet leaving at `t` is held by a boundary's spike (0 outside
    /// one): released at the end of the spike.
    pub(crate) fn hold_ns(&self, t: Nanos) -> Nanos {
        let k = self.clock.index(t);
        let since = t - self.clock.start(k);
        match self.spike_ns(k) {
            Some(d) if since < d => d - since,
            _ => 0,
        }
    }

    /// The end of the outage `t` falls in, if it falls in one.
    pub(crate) fn outage_end(&self, t: Nanos) -> Option<Nanos> {
        let k = self.clock.index(t);
        let start = self.clock.start(k);
        self.outage_ns(k)
            .map(|d| start.saturating_add(d))
            .filter(|&end| t < end)
    }

    /// The loss probability at `t`: the burst's where `t` falls in one, else 0.
    pub(crate) fn loss_at(&self, t: Nanos) -> f64 {
        let k = self.clock.index(t);
        let since = t - self.clock.start(k);
        match self.loss_burst(k) {
            Some((d, plr)) if since < d => plr,
            _ => 0.0,
        }
    }

    /// Slot `k` for people and analyses.
    pub(crate) fn record(&self, k: u64) -> SlotRecord {
        SlotRecord {
            index: k,
            start: from_nanos(self.clock.start(k)),
            end: from_nanos(self.clock.start(k + 1)),
            base_rtt: from_nanos(self.rtt_ns(k)),
            down_rate_bps: None,
            up_rate_bps: None,
            spike: self.spike_ns(k).map(from_nanos),
            outage: self.outage_ns(k).map(from_nanos),
            loss: self.loss_burst(k).map(|(d, _)| from_nanos(d)),
            loss_plr: self.loss_burst(k).map_or(0.0, |(_, p)| p),
        }
    }
}

/// One slot of a path's schedule, as drawn ([`Path::slots`](crate::Path::slots)).
#[derive(Debug, Clone, PartialEq)]
pub struct SlotRecord {
    /// Slot index: 0 before the first boundary, then 1, 2, ...
    pub index: u64,
    /// Its start (the boundary that brings its handover; the epoch for slot 0).
    pub start: Duration,
    /// Its end (the next boundary).
    pub end: Duration,
    /// Its base RTT: both directions' base delays plus what the slot adds.
    pub base_rtt: Duration,
    /// The down direction's rate in this slot, where it is slotted.
    pub down_rate_bps: Option<u64>,
    /// The up direction's rate in this slot, where it is slotted.
    pub up_rate_bps: Option<u64>,
    /// The RTT spike at its start, if any.
    pub spike: Option<Duration>,
    /// The outage at its start, if any.
    pub outage: Option<Duration>,
    /// The loss burst at its start, if any ...
    pub loss: Option<Duration>,
    /// ... and the loss probability of a packet during it (0 without a burst).
    pub loss_plr: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_counts_slots_from_the_phase() {
        let c = SlotClock::new(4_000, 15_000);
        assert_eq!(
            [0, 3_999, 4_000, 18_999, 19_000].map(|t| c.index(t)),
            [0, 0, 1, 1, 2]
        );
        assert_eq!([0, 1, 2, 3].map(|k| c.start(k)), [0, 4_000, 19_000, 34_000]);
        let at_epoch = SlotClock::new(0, 15_000);
        assert_eq!(at_epoch.index(0), 1, "slot 0 is empty with a boundary at 0");
    }

    #[test]
    fn quantiles_interpolate_their_inverse() {
        let q = Quantiles {
            points: vec![(0.0, 10.0), (0.5, 20.0), (1.0, 60.0)],
        };
        assert_eq!(q.at(0.0), 10.0);
        assert_eq!(q.at(0.25), 15.0);
        assert_eq!(q.at(0.5), 20.0);
        assert_eq!(q.at(0.75), 40.0);
        assert!((q.at(0.999_999) - 60.0).abs() < 1e-3);
    }

    #[test]
    fn draws_are_uniform_and_do_not_repeat_across_streams() {
        let n = 20_000u64;
        let mean = (0..n).map(|k| unit(7, STREAM_SLOT_RTT, k)).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        assert_ne!(
            unit(7, STREAM_SLOT_RATE_FORWARD, 3),
            unit(7, STREAM_SLOT_RATE_RETURN, 3)
        );
        assert_eq!(unit(7, STREAM_SLOT_RTT, 3), unit(7, STREAM_SLOT_RTT, 3));
    }
}
