//! Propagation delay from the bottleneck's output to the far end.
//!
//! `arrival = max(previous arrival, departure + base + oscillation(departure) +
//! path_extra(departure) + slot_extra(departure) + hold(departure) + jitter)`: the link is
//! a FIFO wire, so a packet whose draw would overtake the one before it arrives together
//! with it instead (delay variation never reorders). Jitter is drawn per departing packet,
//! in departure order; the path-change extra delay is a hash of (seed, path index), and
//! the slot's extra delay and a handover's hold come from the link's slot schedule
//! (`crate::slot`), so none depends on how often the caller polls.

use crate::random::{
    STREAM_JITTER, STREAM_PATH, derive_seed, mix64, stream_rng, uniform_from_hash,
};
use crate::slot::{Leg, SlotClock, SlotSchedule};
use crate::spec::DelaySpec;
use crate::units::{Nanos, to_nanos};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

#[derive(Debug, Clone)]
struct Oscillation {
    peak_to_peak_ns: f64,
    period_ns: Nanos,
}

#[derive(Debug, Clone)]
struct PathChanges {
    clock: SlotClock,
    max_extra_ns: Nanos,
    seed: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct DelayProcess {
    base_ns: Nanos,
    jitter_max_ns: Nanos,
    oscillation: Option<Oscillation>,
    path_changes: Option<PathChanges>,
    /// The link's slot schedule and which leg of it this direction is.
    slots: Option<(SlotSchedule, Leg)>,
    rng: ChaCha8Rng,
    last_arrival: Nanos,
}

impl DelayProcess {
    pub(crate) fn new(spec: &DelaySpec, seed: u64, slots: Option<(SlotSchedule, Leg)>) -> Self {
        DelayProcess {
            base_ns: to_nanos(spec.base),
            jitter_max_ns: spec.jitter.as_ref().map_or(0, |j| to_nanos(j.max)),
            oscillation: spec.oscillation.as_ref().map(|o| Oscillation {
                peak_to_peak_ns: to_nanos(o.peak_to_peak) as f64,
                period_ns: to_nanos(o.period).max(1),
            }),
            path_changes: spec.path_changes.as_ref().map(|p| {
                let interval_ns = to_nanos(p.interval).max(1);
                PathChanges {
                    clock: SlotClock::new(p.first_at.map_or(interval_ns, to_nanos), interval_ns),
                    max_extra_ns: to_nanos(p.max_extra),
                    seed: derive_seed(seed, STREAM_PATH),
                }
            }),
            slots,
            rng: stream_rng(seed, STREAM_JITTER),
            last_arrival: 0,
        }
    }

    /// A lower bound of every packet's delay: the base delay (oscillation, path-change
    /// and slot extras, holds and jitter only ever add to it).
    pub(crate) fn min_delay_ns(&self) -> Nanos {
        self.base_ns
    }

    /// The base delay of a packet leaving at `t`: the base, the path-change extra and
    /// the slot's extra, without oscillation, holds or jitter (the propagation delay an
    /// analysis subtracts to find queueing).
    pub(crate) fn base_delay(&self, t: Nanos) -> Nanos {
        let mut d = self.base_ns;
        if let Some(p) = &self.path_changes {
            let extra = uniform_from_hash(mix64(p.seed ^ mix64(p.clock.index(t))), p.max_extra_ns);
            d = d.saturating_add(extra);
        }
        if let Some((s, leg)) = &self.slots {
            d = d.saturating_add(s.extra_ns(*leg, s.clock().index(t)));
        }
        d
    }

    /// The deterministic part of the delay at time `t`: the base delay, the oscillation
    /// and a handover's hold.
    pub(crate) fn deterministic_delay(&self, t: Nanos) -> Nanos {
        let mut d = self.base_delay(t);
        if let Some(o) = &self.oscillation {
            let phase = (t % o.period_ns) as f64 / o.period_ns as f64;
            let extra = o.peak_to_peak_ns * (1.0 - (std::f64::consts::TAU * phase).cos()) / 2.0;
            d = d.saturating_add(extra.round() as u64);
        }
        if let Some((s, _)) = &self.slots {
            d = d.saturating_add(s.hold_ns(t));
        }
        d
    }

    /// Arrival time at the far end of a packet that left the bottleneck at `departure`.
    pub(crate) fn arrival_for(&mut self, departure: Nanos) -> Nanos {
        let mut d = self.deterministic_delay(departure);
        if self.jitter_max_ns > 0 {
            d = d.saturating_add(self.rng.random_range(0..=self.jitter_max_ns));
        }
        let arrival = departure.saturating_add(d).max(self.last_arrival);
        self.last_arrival = arrival;
        arrival
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{JitterSpec, OscillationSpec, PathChangeSpec};
    use std::time::Duration;

    #[test]
    fn oscillation_shape() {
        let spec = DelaySpec {
            oscillation: Some(OscillationSpec {
                peak_to_peak: Duration::from_millis(10),
                period: Duration::from_millis(100),
            }),
            ..DelaySpec::fixed(Duration::from_millis(15))
        };
        let p = DelayProcess::new(&spec, 1, None);
        assert_eq!(p.deterministic_delay(0), 15_000_000);
        assert_eq!(p.deterministic_delay(50_000_000), 25_000_000);
        assert_eq!(p.deterministic_delay(25_000_000), 20_000_000);
        assert_eq!(p.deterministic_delay(100_000_000), 15_000_000);
    }

    #[test]
    fn path_changes_are_steps_within_bounds() {
        let spec = DelaySpec {
            path_changes: Some(PathChangeSpec {
                interval: Duration::from_secs(15),
                first_at: Some(Duration::from_secs(12)),
                max_extra: Duration::from_millis(20),
            }),
            ..DelaySpec::fixed(Duration::from_millis(15))
        };
        let p = DelayProcess::new(&spec, 7, None);
        let s = |secs: f64| p.deterministic_delay((secs * 1e9) as u64);
        assert_eq!(s(0.0), s(11.9));
        assert_eq!(s(12.0), s(26.9));
        let distinct: std::collections::BTreeSet<_> =
            (0..50).map(|i| s(12.0 + 15.0 * i as f64)).collect();
        assert!(distinct.len() > 10, "steps should differ: {distinct:?}");
        assert!(
            distinct
                .iter()
                .all(|&d| (15_000_000..=35_000_000).contains(&d))
        );
    }

    #[test]
    fn jitter_never_reorders() {
        let spec = DelaySpec {
            jitter: Some(JitterSpec {
                max: Duration::from_millis(50),
            }),
            ..DelaySpec::fixed(Duration::from_millis(10))
        };
        let mut p = DelayProcess::new(&spec, 3, None);
        let mut last = 0;
        for i in 0..10_000u64 {
            let a = p.arrival_for(i * 100_000);
            assert!(a >= last);
            assert!(a >= i * 100_000 + 10_000_000);
            assert!(a <= i * 100_000 + 60_000_000);
            last = a;
        }
    }
}
