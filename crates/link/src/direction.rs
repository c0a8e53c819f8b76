//! One direction of a path: input filter (loss, AQM, limit) -> FIFO queue -> server
//! (rate, schedule, trace, BoD) -> propagation (delay, jitter, oscillation, path changes).
//!
//! The API is pull-style, like quinn-proto: the caller tells the direction what arrived
//! ([`Direction::enqueue`]), asks when something can next arrive
//! ([`Direction::poll_timeout`]) and collects what has reached the far end
//! ([`Direction::poll_deliver`]). Internal events (departures, rate steps, BoD decisions)
//! are processed lazily, in time order, whenever the direction is given a `now`; results
//! therefore do not depend on how often the caller polls.
//!
//! Time only moves forward: a `now` earlier than one already seen is treated as the
//! latest time seen.

use crate::cross::CrossSource;
use crate::delay::DelayProcess;
use crate::error::LinkError;
use crate::loss::LossProcess;
use crate::random::{STREAM_AQM, STREAM_BURST_PACKETS, stream_rng};
use crate::service::{Server, min_opt};
use crate::slot::{Leg, SlotSchedule};
use crate::spec::{DirectionSpec, Discipline, QueueLimit, RateSpec};
use crate::truth::{DropReason, GroundTruth, GroundTruthConfig};
use crate::units::{Nanos, from_nanos, to_nanos};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::time::Duration;

/// Result of [`Direction::enqueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The packet is in the queue.
    Queued {
        /// Packet id (0, 1, 2, ... per direction, over all offered packets).
        id: u64,
    },
    /// The packet was dropped on arrival.
    Dropped {
        /// Packet id.
        id: u64,
        /// Why.
        reason: DropReason,
    },
}

impl Admission {
    /// True if the packet was queued.
    pub fn is_queued(&self) -> bool {
        matches!(self, Admission::Queued { .. })
    }

    /// The drop reason, if dropped.
    pub fn drop_reason(&self) -> Option<DropReason> {
        match self {
            Admission::Queued { .. } => None,
            Admission::Dropped { reason, .. } => Some(*reason),
        }
    }

    /// The packet id.
    pub fn id(&self) -> u64 {
        match self {
            Admission::Queued { id } | Admission::Dropped { id, .. } => *id,
        }
    }
}

/// A packet that reached the far end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered<T> {
    /// Packet id.
    pub id: u64,
    /// Size in bytes.
    pub size_bytes: u32,
    /// When it entered the queue.
    pub enqueued: Duration,
    /// How long it waited in the queue behind other packets (its own or cross traffic)
    /// before its transmission began: the bottleneck's queueing delay, without the packet's
    /// own serialization.
    pub waited: Duration,
    /// When its last bit left the bottleneck.
    pub departed: Duration,
    /// When it reached the far end (<= the `now` it was delivered at).
    pub arrival: Duration,
    /// What the caller gave to [`Direction::enqueue`].
    pub payload: T,
}

/// A packet and byte count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counter {
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
}

impl Counter {
    fn add(&mut self, size_bytes: u32) {
        self.packets += 1;
        self.bytes += u64::from(size_bytes);
    }
}

/// Counters of one direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Every packet given to `enqueue`.
    pub offered: Counter,
    /// Packets admitted to the queue.
    pub enqueued: Counter,
    /// Packets dropped, by [`DropReason`] (index with [`DirectionStats::dropped`]).
    pub dropped_by_reason: [Counter; 5],
    /// Packets that left the bottleneck.
    pub departed: Counter,
    /// Packets handed to the caller by `poll_deliver`.
    pub delivered: Counter,
    /// Largest queue occupancy seen (cross traffic included), bytes.
    pub max_queue_bytes: u64,
    /// Cross-traffic packets offered to the queue ([`crate::CrossTrafficSpec`]); the
    /// counters above count the caller's packets only.
    pub cross_offered: Counter,
    /// Cross-traffic packets dropped at the queue (limit or AQM).
    pub cross_dropped: Counter,
    /// Cross-traffic packets that left the bottleneck (and the path).
    pub cross_departed: Counter,
}

impl DirectionStats {
    /// Drops for one reason.
    pub fn dropped(&self, reason: DropReason) -> Counter {
        self.dropped_by_reason[reason.index()]
    }

    /// All drops.
    pub fn dropped_total(&self) -> Counter {
        let mut c = Counter::default();
        for d in &self.dropped_by_reason {
            c.packets += d.packets;
            c.bytes += d.bytes;
        }
        c
    }
}

#[derive(Debug, Clone)]
struct Queued<T> {
    id: u64,
    size_bytes: u32,
    enqueued: Nanos,
    /// `None` for a cross-traffic packet.
    payload: Option<T>,
}

/// One direction of a path. `T` is whatever the caller wants back on delivery.
#[derive(Debug, Clone)]
pub struct Direction<T> {
    queue: VecDeque<Queued<T>>,
    queue_bytes: u64,
    limit: QueueLimit,
    discipline: Discipline,
    aqm_rng: ChaCha8Rng,
    loss: LossProcess,
    /// The link's slot schedule, for its loss bursts, with the stream of the per-packet
    /// draws of a partial burst.
    bursts: Option<(SlotSchedule, ChaCha8Rng)>,
    server: Server,
    delay: DelayProcess,
    /// Departed packets on their way to the far end, in arrival order.
    pipe: VecDeque<Delivered<T>>,
    now: Nanos,
    next_id: u64,
    stats: DirectionStats,
    truth: GroundTruth,
    /// Background traffic into the queue, if the spec has some.
    cross: Option<CrossSource>,
    /// When the latest packet (any, cross traffic included) left the bottleneck: the next
    /// head's transmission begins then, or when it arrives if the queue was empty.
    last_departure: Nanos,
    /// No departure, rate or BoD change or cross-traffic arrival is due before this time,
    /// as of the last [`Self::process_due`]: advancing to an earlier time only accounts
    /// service. [`Self::admit`], which changes the queue, the head packet and the BoD
    /// measurement, resets it to 0.
    quiet_until: Nanos,
}

impl<T> Direction<T> {
    /// Builds a direction; randomness comes from `seed`. A queue limit given as a BDP
    /// multiple must be resolved first ([`LinkSpec::resolved`](crate::LinkSpec::resolved),
    /// done by [`Path::new`](crate::Path::new)).
    pub fn new(spec: &DirectionSpec, seed: u64) -> Result<Self, LinkError> {
        Self::with_ground_truth(spec, seed, GroundTruthConfig::default())
    }

    /// As [`Direction::new`], choosing what ground truth to record.
    pub fn with_ground_truth(
        spec: &DirectionSpec,
        seed: u64,
        config: GroundTruthConfig,
    ) -> Result<Self, LinkError> {
        if matches!(spec.rate, RateSpec::Slotted { .. }) {
            return Err(LinkError::invalid(
                "rate",
                "kind \"slotted\" needs the link's [slots] schedule; build a Path",
            ));
        }
        Self::build(spec, seed, config, None)
    }

    /// A direction of a path: with the link's slot schedule, if it has one, and the leg
    /// of it this direction is.
    pub(crate) fn build(
        spec: &DirectionSpec,
        seed: u64,
        config: GroundTruthConfig,
        slots: Option<(SlotSchedule, Leg)>,
    ) -> Result<Self, LinkError> {
        spec.validate()?;
        if matches!(spec.queue.limit, QueueLimit::Bdp(_)) {
            return Err(LinkError::invalid(
                "queue.limit.bdp",
                "needs the path's base RTT; build a Path or resolve the LinkSpec first",
            ));
        }
        let server = Server::new(&spec.rate, spec.bod.as_ref(), seed, slots.as_ref());
        let truth = GroundTruth::new(
            config,
            server.initial_allocation(),
            spec.rate.nominal_rate_bps(),
        );
        Ok(Direction {
            queue: VecDeque::new(),
            queue_bytes: 0,
            limit: spec.queue.limit,
            discipline: spec.queue.discipline,
            aqm_rng: stream_rng(seed, STREAM_AQM),
            loss: LossProcess::new(&spec.loss, seed),
            bursts: slots
                .as_ref()
                .map(|(s, _)| (s.clone(), stream_rng(seed, STREAM_BURST_PACKETS))),
            server,
            delay: DelayProcess::new(&spec.delay, seed, slots),
            pipe: VecDeque::new(),
            now: 0,
            next_id: 0,
            stats: DirectionStats::default(),
            truth,
            cross: spec
                .cross_traffic
                .as_ref()
                .map(|c| CrossSource::new(c, seed)),
            last_departure: 0,
            quiet_until: 0,
        })
    }

    /// A packet of `size_bytes` arrives at the bottleneck at `now`. Loss processes apply
    /// first (the packet never enters the queue), then the size check, the AQM and the
    /// queue limit.
    pub fn enqueue(&mut self, now: Duration, size_bytes: u32, payload: T) -> Admission {
        let now = self.advance(now);
        self.admit(now, size_bytes, Some(payload))
    }

    /// Admits a packet at `now` (the clock is there already); `None` is cross traffic.
    fn admit(&mut self, now: Nanos, size_bytes: u32, payload: Option<T>) -> Admission {
        self.quiet_until = 0;
        let id = self.next_id;
        self.next_id += 1;
        let cross = payload.is_none();
        if cross {
            self.stats.cross_offered.add(size_bytes);
        } else {
            self.stats.offered.add(size_bytes);
        }
        if let Some(reason) = self.admission_drop(now, size_bytes, cross) {
            if cross {
                self.stats.cross_dropped.add(size_bytes);
            } else {
                self.stats.dropped_by_reason[reason.index()].add(size_bytes);
            }
            self.truth.on_drop(now, id, size_bytes, reason);
            return Admission::Dropped { id, reason };
        }
        let was_empty = self.queue.is_empty();
        self.queue.push_back(Queued {
            id,
            size_bytes,
            enqueued: now,
            payload,
        });
        self.queue_bytes += u64::from(size_bytes);
        if !cross {
            self.stats.enqueued.add(size_bytes);
        }
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queue_bytes);
        self.truth
            .on_admit(now, id, size_bytes, self.queue_bytes, was_empty);
        if was_empty {
            self.server.start_busy(now, size_bytes);
        }
        Admission::Queued { id }
    }

    /// Why a packet is dropped on arrival, if it is. Cross traffic skips the random loss
    /// processes (a handover's burst and the direction's own), whose draws belong to the
    /// caller's packets.
    fn admission_drop(&mut self, now: Nanos, size_bytes: u32, cross: bool) -> Option<DropReason> {
        if !cross && self.lost_in_burst(now) {
            return Some(DropReason::BurstLoss);
        }
        if !cross && let Some(reason) = self.loss.draw() {
            return Some(reason);
        }
        self.server.record_arrival(now, size_bytes);
        let size = u64::from(size_bytes);
        let (occupancy, limit, incoming) = match self.limit {
            QueueLimit::Bytes(b) => {
                if size > b {
                    return Some(DropReason::TooLarge);
                }
                (self.queue_bytes, b, size)
            }
            QueueLimit::Packets(p) => (self.queue.len() as u64, p, 1),
            QueueLimit::Bdp(_) => unreachable!("resolved at construction"),
        };
        if let Discipline::ViasatAqm {
            threshold_fraction,
            drop_probability,
        } = self.discipline
        {
            if occupancy as f64 > threshold_fraction * limit as f64
                && self.aqm_rng.random_bool(drop_probability)
            {
                return Some(DropReason::Aqm);
            }
        }
        if occupancy + incoming > limit {
            return Some(DropReason::QueueFull);
        }
        None
    }

    /// True if a packet offered at `now` falls in a handover's loss burst and is lost
    /// (always in a burst with `plr = 1`; a draw from the direction's stream below that).
    fn lost_in_burst(&mut self, now: Nanos) -> bool {
        let Some((schedule, rng)) = self.bursts.as_mut() else {
            return false;
        };
        match schedule.loss_at(now) {
            p if p >= 1.0 => true,
            p if p > 0.0 => rng.random_bool(p),
            _ => false,
        }
    }

    /// Earliest time at which [`Self::poll_deliver`] may return a packet: the next arrival
    /// on the wire or, while the queue is busy, the earliest the head of the queue could
    /// arrive (its departure, or an earlier rate step or BoD decision that could speed it
    /// up, plus the base delay, which no delay variation undercuts). The second is a lower
    /// bound, so a caller may find nothing then and ask again. `None` when nothing is
    /// queued or in flight. May be earlier than the last `now` if a packet is waiting to be
    /// collected.
    ///
    /// Departures and rate or BoD changes need no call of their own: the model processes
    /// them at their own times whenever it is next asked about a later time
    /// ([`Self::enqueue`], [`Self::poll_deliver`], [`Self::handle_timeout`]), so a caller
    /// that wakes only for arrivals sees the same packets at the same times.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let pipe = self.pipe.front().map(|d| to_nanos(d.arrival));
        let queued = if self.queue.is_empty() {
            None
        } else {
            min_opt(self.server.head_finish(), self.server.next_change(true))
                .map(|t| t.saturating_add(self.delay.min_delay_ns()))
        };
        min_opt(pipe, queued).map(from_nanos)
    }

    /// The next packet whose arrival at the far end is `<= now`, in FIFO order.
    pub fn poll_deliver(&mut self, now: Duration) -> Option<Delivered<T>> {
        let now = self.advance(now);
        if self
            .pipe
            .front()
            .is_some_and(|d| to_nanos(d.arrival) <= now)
        {
            let d = self.pipe.pop_front()?;
            self.stats.delivered.add(d.size_bytes);
            Some(d)
        } else {
            None
        }
    }

    /// Processes every internal event up to `now` (like quinn-proto's `handle_timeout`);
    /// `poll_deliver` and `enqueue` do this themselves.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.advance(now);
    }

    /// Advances to the end of a run and returns the ground truth, ready for
    /// [`GroundTruth::capacity_time_at_end`].
    pub fn finish(&mut self, end: Duration) -> &GroundTruth {
        self.advance(end);
        &self.truth
    }

    /// Bytes in the queue (including the packet being transmitted) as of the latest
    /// time given.
    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }

    /// Packets in the queue as of the latest time given.
    pub fn queue_packets(&self) -> usize {
        self.queue.len()
    }

    /// Packets that left the bottleneck but have not been delivered yet.
    pub fn in_flight_packets(&self) -> usize {
        self.pipe.len()
    }

    /// The latest time given.
    pub fn now(&self) -> Duration {
        from_nanos(self.now)
    }

    /// Service rate at the latest time given, bit/s (`None` for a mahimahi trace).
    pub fn current_rate_bps(&self) -> Option<u64> {
        self.server.current_rate_bps(self.now)
    }

    /// The link's capacity at `t`, bit/s: its rate (constant, scheduled or the slot's),
    /// 0 during a handover outage, before any BoD allocation. `None` for a mahimahi
    /// trace, whose capacity is a sequence of opportunities, not a rate. A pure function
    /// of `t`: it does not move the clock.
    pub fn capacity_bps_at(&self, t: Duration) -> Option<u64> {
        self.server.link_rate_bps(to_nanos(t))
    }

    /// Bytes the link can carry from `from` to `to` at [`Self::capacity_bps_at`]: what a
    /// sender that kept the queue busy would get through (the physical limit of a
    /// transfer integrates this). `None` for a mahimahi trace.
    pub fn capacity_bytes_between(&self, from: Duration, to: Duration) -> Option<u64> {
        self.server
            .bits_between(to_nanos(from), to_nanos(to))
            .map(|bits| u64::try_from(bits / 8).unwrap_or(u64::MAX))
    }

    /// The base (propagation) delay of a packet that leaves the bottleneck at `t`: the
    /// base delay plus the path change's and the slot's extras, without oscillation,
    /// jitter or a handover's hold. A packet's delay is at least this (FIFO order can
    /// only add to it); [`Path::base_rtt_at`](crate::Path::base_rtt_at) sums the two
    /// directions'.
    pub fn base_delay_at(&self, t: Duration) -> Duration {
        from_nanos(self.delay.base_delay(to_nanos(t)))
    }

    /// The queue limit (bytes or packets).
    pub fn queue_limit(&self) -> QueueLimit {
        self.limit
    }

    /// Counters.
    pub fn stats(&self) -> &DirectionStats {
        &self.stats
    }

    /// What really happened at the bottleneck.
    pub fn ground_truth(&self) -> &GroundTruth {
        &self.truth
    }

    /// Moves the clock to `now` (never backwards), processing events in time order.
    fn advance(&mut self, now: Duration) -> Nanos {
        let to = to_nanos(now).max(self.now);
        // The simulator advances each direction several times per event (every send and
        // delivery poll), and most calls find nothing due. Accounting alone moves no due
        // time: the fluid server's head finishes at `clock + ceil(remaining / rate)`, and
        // accounting takes exactly `rate x (to - clock)` off `remaining` as it moves
        // `clock` to `to`; a trace server's opportunities and the rate and BoD schedules
        // do not depend on the clock.
        if to >= self.quiet_until {
            self.process_due(to);
        }
        self.server.account(to, !self.queue.is_empty());
        self.now = to;
        to
    }

    /// Processes every departure, rate or BoD change and cross-traffic arrival due up to
    /// `to`, in time order, and notes when the next one is due ([`Self::quiet_until`]).
    fn process_due(&mut self, to: Nanos) {
        loop {
            let busy = !self.queue.is_empty();
            let departure = if busy {
                self.server.head_finish()
            } else {
                None
            };
            let change = self.server.next_change(busy);
            // Cross traffic arrives after a departure or rate change at the same instant.
            let internal = min_opt(departure, change);
            let cross = self.cross.as_ref().map(CrossSource::next_arrival);
            if let Some(at) = cross
                && at <= to
                && internal.is_none_or(|i| at < i)
                && let Some(source) = self.cross.as_mut()
            {
                let size = source.packet_bytes();
                source.advance();
                self.admit(at, size, None);
                continue;
            }
            match (departure, change) {
                (Some(d), c) if d <= to && c.is_none_or(|c| d <= c) => self.depart_head(d),
                // An event pinned at the end of representable time never fires.
                (_, Some(c)) if c <= to && c < Nanos::MAX => {
                    let out = self.server.apply_change(c, busy);
                    if let Some(rate) = out.new_allocation_bps {
                        self.truth.on_allocation(c, rate);
                    }
                }
                _ => {
                    // Nothing is due up to `to`.
                    self.quiet_until = min_opt(internal, cross).unwrap_or(Nanos::MAX);
                    return;
                }
            }
        }
    }

    fn depart_head(&mut self, t: Nanos) {
        let Some(head) = self.queue.pop_front() else {
            return;
        };
        self.queue_bytes -= u64::from(head.size_bytes);
        self.server
            .depart(t, self.queue.front().map(|q| q.size_bytes));
        let service_start = head.enqueued.max(self.last_departure);
        self.last_departure = t;
        let Some(payload) = head.payload else {
            // Cross traffic leaves the path at the bottleneck.
            self.stats.cross_departed.add(head.size_bytes);
            self.truth.on_depart(t, head.id, t, self.queue_bytes);
            if self.queue.is_empty() {
                self.truth.on_queue_empty();
            }
            return;
        };
        let arrival = self.delay.arrival_for(t);
        self.stats.departed.add(head.size_bytes);
        self.truth.on_depart(t, head.id, arrival, self.queue_bytes);
        if self.queue.is_empty() {
            self.truth.on_queue_empty();
        }
        self.pipe.push_back(Delivered {
            id: head.id,
            size_bytes: head.size_bytes,
            enqueued: from_nanos(head.enqueued),
            waited: from_nanos(service_start - head.enqueued),
            departed: from_nanos(t),
            arrival: from_nanos(arrival),
            payload,
        });
    }
}
