//! Ground truth: what the bottleneck really did, for analyses that a real capture could
//! only estimate (seed 003 Sec V-B infers the capacity point from latency offsets; here it
//! is read off the queue).
//!
//! Always recorded (cheap): counters, the first drop time per reason, the capacity point,
//! the queue occupancy per resolution bin and, with BoD, the allocation changes. Recorded on
//! request ([`GroundTruthConfig::packet_log`]): one [`PacketRecord`] per offered packet.
//!
//! **Capacity point.** A busy period is a stretch of time during which the queue (counting
//! the packet being transmitted) is not empty. The capacity point is the start of the busy
//! period during which the first *congestion* drop (`QueueFull` or `Aqm`) happens: from then
//! on the bottleneck never idled until it overflowed, so that is when the sender first
//! offered more than the link could carry for good. Random losses are not congestion.
//! Before the first congestion drop the point is unknown ([`GroundTruth::capacity_time`]
//! is `None`). For a run that ends without a congestion drop,
//! [`GroundTruth::capacity_time_at_end`] returns the start of the busy period still in
//! progress at the end (the queue was still growing or draining then), or `None` if the
//! queue was empty at the end. That choice can call a short burst still queued at the end
//! "capacity"; callers that care can check how long that busy period lasted.

use crate::units::{Nanos, from_nanos, to_nanos};
use std::time::Duration;

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// The queue limit would have been exceeded (drop-tail). Congestion.
    QueueFull,
    /// Dropped at random by the AQM above its threshold. Congestion.
    Aqm,
    /// Bernoulli random loss at the link input. Not congestion.
    RandomLoss,
    /// Gilbert-Elliott loss at the link input. Not congestion.
    BurstLoss,
    /// The packet alone is larger than the queue limit in bytes. Not congestion.
    TooLarge,
}

impl DropReason {
    /// Every reason, in index order.
    pub const ALL: [DropReason; 5] = [
        DropReason::QueueFull,
        DropReason::Aqm,
        DropReason::RandomLoss,
        DropReason::BurstLoss,
        DropReason::TooLarge,
    ];

    /// True for drops caused by the queue (queue full, AQM).
    pub fn is_congestion(self) -> bool {
        matches!(self, DropReason::QueueFull | DropReason::Aqm)
    }

    /// A snake_case name for tables and records.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::Aqm => "aqm",
            DropReason::RandomLoss => "random_loss",
            DropReason::BurstLoss => "burst_loss",
            DropReason::TooLarge => "too_large",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// What to record beyond the always-on ground truth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundTruthConfig {
    /// Keep one [`PacketRecord`] per offered packet (about 48 bytes each). Off by default.
    pub packet_log: bool,
    /// Width of the queue-occupancy bins. Default 1 ms.
    pub occupancy_resolution: Duration,
}

impl Default for GroundTruthConfig {
    fn default() -> Self {
        GroundTruthConfig {
            packet_log: false,
            occupancy_resolution: Duration::from_millis(1),
        }
    }
}

/// What happened to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketFate {
    /// In the queue (not yet fully transmitted).
    Queued,
    /// Left the bottleneck at `departed`; reaches the far end at `arrival`.
    Departed {
        /// Last bit transmitted.
        departed: Duration,
        /// Arrival at the far end.
        arrival: Duration,
    },
    /// Dropped on arrival at the bottleneck (at its `offered` time).
    Dropped(DropReason),
}

/// Per-packet log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketRecord {
    /// Packet id, as in [`Admission`](crate::Admission).
    pub id: u64,
    /// Size in bytes.
    pub size_bytes: u32,
    /// Arrival at the bottleneck (enqueue or drop time).
    pub offered: Duration,
    /// What became of it.
    pub fate: PacketFate,
}

/// Queue occupancy in one resolution bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OccupancyBin {
    /// Start of the bin.
    pub start: Duration,
    /// Largest occupancy during the bin, bytes.
    pub max_bytes: u64,
    /// Occupancy at the end of the bin (after its last change), bytes.
    pub end_bytes: u64,
}

/// Queue occupancy over time, one [`OccupancyBin`] per resolution bin in which the
/// occupancy changed (bins without a change are omitted: the occupancy stayed at the
/// previous bin's `end_bytes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OccupancySeries {
    resolution_ns: Nanos,
    bins: Vec<OccupancyBin>,
}

impl OccupancySeries {
    fn new(resolution: Duration) -> Self {
        OccupancySeries {
            resolution_ns: to_nanos(resolution).max(1),
            bins: Vec::new(),
        }
    }

    fn record(&mut self, t: Nanos, bytes: u64) {
        let start = from_nanos(t - t % self.resolution_ns);
        match self.bins.last_mut() {
            Some(last) if last.start == start => {
                last.max_bytes = last.max_bytes.max(bytes);
                last.end_bytes = bytes;
            }
            last => {
                let before = last.map_or(0, |b| b.end_bytes);
                self.bins.push(OccupancyBin {
                    start,
                    max_bytes: before.max(bytes),
                    end_bytes: bytes,
                });
            }
        }
    }

    /// Bin width.
    pub fn resolution(&self) -> Duration {
        from_nanos(self.resolution_ns)
    }

    /// The recorded bins, in time order.
    pub fn bins(&self) -> &[OccupancyBin] {
        &self.bins
    }

    /// Occupancy at the end of the resolution bin containing `t`, bytes.
    pub fn at(&self, t: Duration) -> u64 {
        let i = self.bins.partition_point(|b| b.start <= t);
        if i == 0 {
            0
        } else {
            self.bins[i - 1].end_bytes
        }
    }

    /// Largest occupancy in the resolution bins overlapping `[from, to]`, bytes.
    pub fn max_between(&self, from: Duration, to: Duration) -> u64 {
        let first = self.bins.partition_point(|b| b.start <= from);
        let carried = if first == 0 {
            0
        } else {
            self.bins[first - 1].end_bytes
        };
        let from_bin = if first == 0 {
            0
        } else if self.bins[first - 1].start + self.resolution() > from {
            self.bins[first - 1].max_bytes
        } else {
            carried
        };
        self.bins[first..]
            .iter()
            .take_while(|b| b.start <= to)
            .map(|b| b.max_bytes)
            .fold(from_bin.max(carried), u64::max)
    }

    /// `(t, occupancy at the end of t's bin)` for `t = 0, step, 2 step, ... <= until`.
    pub fn sampled(&self, step: Duration, until: Duration) -> Vec<(Duration, u64)> {
        let step = step.max(Duration::from_nanos(1));
        let mut out = Vec::new();
        let mut i = 0;
        let mut t = Duration::ZERO;
        while t <= until {
            while i < self.bins.len() && self.bins[i].start <= t {
                i += 1;
            }
            out.push((
                t,
                if i == 0 {
                    0
                } else {
                    self.bins[i - 1].end_bytes
                },
            ));
            t += step;
        }
        out
    }
}

/// Everything the direction knows about what happened.
#[derive(Debug, Clone)]
pub struct GroundTruth {
    config: GroundTruthConfig,
    occupancy: OccupancySeries,
    packets: Vec<PacketRecord>,
    first_drop: [Option<Duration>; 5],
    first_congestion_drop: Option<(Duration, DropReason)>,
    capacity: Option<Duration>,
    busy_since: Option<Duration>,
    busy_periods: u64,
    allocation: Vec<(Duration, u64)>,
    full_allocation_at: Option<Duration>,
    plan_rate_bps: u64,
}

impl GroundTruth {
    pub(crate) fn new(
        config: GroundTruthConfig,
        initial_allocation: Option<u64>,
        plan_rate_bps: u64,
    ) -> Self {
        let full_allocation_at = initial_allocation
            .filter(|&a| a >= plan_rate_bps)
            .map(|_| Duration::ZERO);
        GroundTruth {
            occupancy: OccupancySeries::new(config.occupancy_resolution),
            config,
            packets: Vec::new(),
            first_drop: [None; 5],
            first_congestion_drop: None,
            capacity: None,
            busy_since: None,
            busy_periods: 0,
            allocation: initial_allocation
                .map(|a| vec![(Duration::ZERO, a)])
                .unwrap_or_default(),
            full_allocation_at,
            plan_rate_bps,
        }
    }

    /// The recording options.
    pub fn config(&self) -> &GroundTruthConfig {
        &self.config
    }

    /// Queue occupancy over time.
    pub fn occupancy(&self) -> &OccupancySeries {
        &self.occupancy
    }

    /// Per-packet log (empty unless [`GroundTruthConfig::packet_log`]).
    pub fn packets(&self) -> &[PacketRecord] {
        &self.packets
    }

    /// First drop for this reason.
    pub fn first_drop(&self, reason: DropReason) -> Option<Duration> {
        self.first_drop[reason.index()]
    }

    /// First congestion drop (`QueueFull` or `Aqm`) and its reason.
    pub fn first_congestion_drop(&self) -> Option<(Duration, DropReason)> {
        self.first_congestion_drop
    }

    /// Capacity point (see the module docs); `None` until the first congestion drop.
    pub fn capacity_time(&self) -> Option<Duration> {
        self.capacity
    }

    /// Capacity point for a run that has ended: [`Self::capacity_time`] if a congestion
    /// drop happened, else the start of the busy period in progress, else `None`. Advance
    /// the direction to the end of the run first ([`Direction::finish`](crate::Direction::finish)).
    pub fn capacity_time_at_end(&self) -> Option<Duration> {
        self.capacity.or(self.busy_since)
    }

    /// Start of the current busy period, if the queue is not empty.
    pub fn busy_since(&self) -> Option<Duration> {
        self.busy_since
    }

    /// Number of busy periods started so far.
    pub fn busy_periods(&self) -> u64 {
        self.busy_periods
    }

    /// BoD allocation changes `(time, rate bit/s)`, starting with the initial allocation at
    /// time 0; empty without BoD.
    pub fn allocation(&self) -> &[(Duration, u64)] {
        &self.allocation
    }

    /// When the BoD allocation first reached the plan rate.
    pub fn full_allocation_at(&self) -> Option<Duration> {
        self.full_allocation_at
    }

    pub(crate) fn on_admit(
        &mut self,
        t: Nanos,
        id: u64,
        size_bytes: u32,
        queue_bytes: u64,
        was_empty: bool,
    ) {
        if was_empty {
            self.busy_since = Some(from_nanos(t));
            self.busy_periods += 1;
        }
        self.occupancy.record(t, queue_bytes);
        if self.config.packet_log {
            self.packets.push(PacketRecord {
                id,
                size_bytes,
                offered: from_nanos(t),
                fate: PacketFate::Queued,
            });
        }
    }

    pub(crate) fn on_drop(&mut self, t: Nanos, id: u64, size_bytes: u32, reason: DropReason) {
        let at = from_nanos(t);
        self.first_drop[reason.index()].get_or_insert(at);
        if reason.is_congestion() && self.first_congestion_drop.is_none() {
            self.first_congestion_drop = Some((at, reason));
            // The queue cannot be empty at a congestion drop (an empty queue accepts any
            // packet that fits the limit), but stay total.
            self.capacity = Some(self.busy_since.unwrap_or(at));
        }
        if self.config.packet_log {
            self.packets.push(PacketRecord {
                id,
                size_bytes,
                offered: at,
                fate: PacketFate::Dropped(reason),
            });
        }
    }

    pub(crate) fn on_depart(&mut self, t: Nanos, id: u64, arrival: Nanos, queue_bytes: u64) {
        self.occupancy.record(t, queue_bytes);
        if self.config.packet_log {
            if let Some(rec) = usize::try_from(id)
                .ok()
                .and_then(|i| self.packets.get_mut(i))
            {
                rec.fate = PacketFate::Departed {
                    departed: from_nanos(t),
                    arrival: from_nanos(arrival),
                };
            }
        }
    }

    pub(crate) fn on_queue_empty(&mut self) {
        self.busy_since = None;
    }

    pub(crate) fn on_allocation(&mut self, t: Nanos, rate_bps: u64) {
        let at = from_nanos(t);
        self.allocation.push((at, rate_bps));
        if rate_bps >= self.plan_rate_bps && self.full_allocation_at.is_none() {
            self.full_allocation_at = Some(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_bins() {
        let mut s = OccupancySeries::new(Duration::from_millis(10));
        s.record(1_000_000, 100);
        s.record(2_000_000, 300);
        s.record(3_000_000, 200);
        s.record(25_000_000, 50);
        assert_eq!(s.bins().len(), 2);
        assert_eq!(s.bins()[0].max_bytes, 300);
        assert_eq!(s.bins()[0].end_bytes, 200);
        assert_eq!(
            s.bins()[1].max_bytes,
            200,
            "carries the level from before the change"
        );
        assert_eq!(s.at(Duration::from_millis(5)), 200);
        assert_eq!(s.at(Duration::from_millis(15)), 200);
        assert_eq!(s.at(Duration::from_millis(25)), 50);
        assert_eq!(
            s.max_between(Duration::from_millis(12), Duration::from_millis(18)),
            200
        );
        assert_eq!(
            s.max_between(Duration::ZERO, Duration::from_millis(30)),
            300
        );
        let v = s.sampled(Duration::from_millis(10), Duration::from_millis(30));
        assert_eq!(
            v,
            vec![
                (Duration::ZERO, 200),
                (Duration::from_millis(10), 200),
                (Duration::from_millis(20), 50),
                (Duration::from_millis(30), 50)
            ]
        );
    }
}
