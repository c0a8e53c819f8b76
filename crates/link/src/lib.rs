//! `satquic-link`: a model of a network path, one bottleneck per direction, for the
//! satquic simulator (virtual time) and the userspace relay (real time).
//!
//! The model does no I/O, reads no clock and knows nothing about QUIC: time is a
//! [`Duration`](std::time::Duration) since the run's epoch passed in by the caller, and
//! randomness comes from ChaCha8 streams derived from a `u64` seed. The same spec, seed and
//! calls give the same results, bit for bit.
//!
//! # What a direction models
//!
//! ```text
//!  enqueue(now, size) ─► loss ─► AQM / limit ─► FIFO queue ─► server ─► propagation ─► poll_deliver
//!                        (input)  (drop-tail,    (bytes,      (rate,     (delay, jitter,
//!                                  Viasat AQM)    packets,     schedule,  oscillation,
//!                                                 x BDP)       trace,     path changes)
//!                                                              BoD)
//! ```
//!
//! - **Loss** ([`LossSpec`]): Bernoulli or Gilbert-Elliott, applied at the link input: a
//!   lost packet never enters the queue. Reported as `RandomLoss` / `BurstLoss`, which are
//!   not congestion.
//! - **Queue** ([`QueueSpec`]): a limit in bytes, packets, or a multiple of the path BDP
//!   (nominal rate x base RTT of the whole path, resolved when the [`Path`] is built). The
//!   packet being transmitted counts toward the limit, as it sits in the bottleneck's buffer
//!   until its last bit is out. Disciplines: drop-tail, and the Viasat AQM of seeds 000/001
//!   (drop 25 % of arrivals at random while the queue is above half its limit).
//! - **Server** ([`RateSpec`]): a constant rate, a piecewise-constant schedule, or a
//!   mahimahi trace. Serialization is exact to the nanosecond; a rate change in the middle
//!   of a packet applies to its remaining bits. With [`BodSpec`] the rate is capped by a
//!   bandwidth-on-demand allocation that follows the offered load with a lag (GEO).
//! - **Propagation** ([`DelaySpec`]): a base one-way delay plus optional per-packet jitter,
//!   a sinusoidal oscillation and random steps at path changes. Delay variation never
//!   reorders: `arrival = max(previous arrival, departure + delay)`.
//! - **Slots** ([`SlotSpec`], LEO): a schedule both directions share. Each slot draws a
//!   base RTT (added to the directions' delays) and, where a direction's rate is
//!   `slotted`, its rate; each boundary may bring an RTT spike (a hold), an outage (no
//!   service) and a loss burst. Every draw is a hash of (seed, slot), so
//!   [`Path::base_rtt_at`], [`Direction::capacity_bps_at`] and [`Path::slots`] say what
//!   any time holds without running the link.
//!
//! # Driving it
//!
//! Pull-style, like quinn-proto: [`Direction::enqueue`] a packet when it reaches the
//! bottleneck, ask [`Direction::poll_timeout`] when something next happens, and collect
//! arrivals with [`Direction::poll_deliver`]. A `now` earlier than one already seen is
//! treated as the latest time seen. Each packet costs O(1) amortized (queues are
//! `VecDeque`s; nothing scans the queue).
//!
//! ```
//! use satquic_link::{Path, presets};
//! use std::time::Duration;
//!
//! let spec = presets::lookup("qir-terrestrial").unwrap();
//! let mut path: Path<&str> = Path::new(&spec, 42).unwrap();
//! path.down.enqueue(Duration::ZERO, 1200, "hello");
//! // 480 us to serialize at 20 Mbit/s, then 15 ms on the wire.
//! let t = path.down.poll_timeout().unwrap();
//! assert_eq!(t, Duration::from_micros(480) + Duration::from_millis(15));
//! assert!(path.down.poll_deliver(t - Duration::from_nanos(1)).is_none());
//! let pkt = path.down.poll_deliver(t).unwrap();
//! assert_eq!(pkt.arrival, t);
//! ```
//!
//! # Ground truth
//!
//! Each direction records what a capture could only estimate ([`GroundTruth`]): queue
//! occupancy per bin (1 ms by default), first drop per reason, the capacity point (the
//! start of the busy period that ended in the first congestion drop), BoD allocation
//! changes and, on request, a per-packet log.
//!
//! # Limits
//!
//! - One bottleneck per direction, no cross traffic of its own (the simulator adds flows);
//!   no per-flow scheduling (a single FIFO, like the seeds' `tc` queues).
//! - Packet sizes are what the caller passes; include header overhead there if wanted.
//! - No corruption, duplication or reordering. Loss is at the link input only.
//! - The BoD process is a stylised allocator calibrated to the RTT oscillation the seeds
//!   report, not a model of Viasat's real scheduler; the `leo` and `lte` presets are
//!   statistical stand-ins (sinusoid + jitter + steps), not traces of those networks, and
//!   the `starlink-*` presets draw slots from distributions fitted to public measurements
//!   (capacity is constant within a slot; slots are independent of each other).
//! - Time is kept in nanoseconds in a `u64`: about 584 years; later times are clamped.
//!
//! # Presets
//!
//! [`presets`] has the links of the seeds (`geo-viasat`, `qir-sat`, `thesis-sat:buffer=0.5`,
//! ...); [`presets::table`] renders them for `satquic presets`.

#![warn(missing_docs)]

mod bod;
mod cross;
mod delay;
mod direction;
mod error;
pub mod file;
mod loss;
mod path;
pub mod presets;
pub mod probe;
mod random;
mod service;
mod slot;
mod spec;
mod trace;
mod truth;
pub mod units;

/// Bytes an IPv4 + UDP header (20 + 8) adds to each datagram on the link: a QUIC
/// datagram of `n` UDP payload bytes occupies `n + IP_UDP_OVERHEAD_BYTES` of the modelled
/// link, in the simulator and in the real-time relay alike.
pub const IP_UDP_OVERHEAD_BYTES: u32 = 28;

pub use cross::{CrossTrafficSpec, DEFAULT_CROSS_PACKET_BYTES};
pub use direction::{Admission, Counter, Delivered, Direction, DirectionStats};
pub use error::LinkError;
pub use path::Path;
pub use slot::SlotRecord;
pub use spec::{
    BdpRateOf, BodSpec, DEFAULT_OPPORTUNITY_BYTES, DelaySpec, DirectionSpec, Discipline,
    HandoverEvent, HandoverSpec, JitterSpec, LinkSpec, LossBurstSpec, LossSpec, MAX_DELAY,
    MAX_QUEUE_BDP, MAX_QUEUE_BYTES, MAX_QUEUE_PACKETS, MAX_RATE_BPS, MAX_SLOT, MIN_PERIOD,
    OscillationSpec, PathChangeSpec, QueueLimit, QueueSpec, RateQuantile, RateSpec, RateStep,
    RttQuantile, STARLINK_SLOT, SlotPhase, SlotSpec,
};
pub use trace::MahimahiTrace;
pub use truth::{
    DropReason, GroundTruth, GroundTruthConfig, OccupancyBin, OccupancySeries, PacketFate,
    PacketRecord,
};
