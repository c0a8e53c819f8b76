//! The Starlink presets: a terminal on a quiet evening, on a busy one, and on the move,
//! each a slotted link ([`SlotSpec`]) whose every value comes from a public measurement
//! or is a stated choice.
//!
//! What all three share (Mohan et al., "A Multifaceted Look at Starlink Performance", WWW
//! 2024, Sec. 6 and its repository's `controlled/16c/plot.py`; G. Huston, "A transport
//! protocol's view of Starlink", APNIC blog, May 2024):
//!
//! - 15-second slots on a globally synchronised schedule (seconds 12, 27, 42 and 57 of
//!   every minute); a run starts at a random point of the cycle (`phase=random`, the
//!   default; `phase=DURATION` fixes it).
//! - Per slot, a base RTT and a capacity each way, drawn independently of the slot before
//!   (the Autobahn trace's consecutive slot means correlate at 0.28, and down with up at
//!   0.40; neither is modelled).
//! - At each boundary an RTT spike (Huston: "the latency spikes at handover impose an
//!   additional 30ms to 50ms"; on the move, an outage during which packets wait) and, at
//!   some boundaries, a loss burst.
//! - Per-packet jitter each way (Huston: mean jitter between successive RTTs 6.7 ms).
//! - Drop-tail queues at the gateway (down) and the dish (up), sized in time at the median
//!   slot rate.
//!
//! The base RTTs are those of pings to the PoP's gateway (`100.64.0.1`, Laniewski et al.)
//! unless a case says otherwise: a server near the PoP. Each case's numbers, and how the
//! probe of the model compares with the data, are in its function's docs and in
//! `crates/lab/campaigns/leo-grid/README.md` (`scripts/leo_calibrate.py`).

use std::time::Duration;

use crate::spec::{
    DelaySpec, DirectionSpec, HandoverEvent, HandoverSpec, JitterSpec, LinkSpec, LossBurstSpec,
    LossSpec, QueueLimit, QueueSpec, RateQuantile, RateSpec, RttQuantile, STARLINK_SLOT, SlotPhase,
    SlotSpec,
};

/// Each direction's base delay, the floor of every slot's RTT: at Starlink's 550 km the
/// shortest terminal-satellite-gateway path takes 3.7 ms (G. Huston, "TCP and Starlink",
/// INNOG 8, May 2025: "at a height of 550km, the minimum signal propagation delay to reach
/// the satellite and back is 3.7ms").
pub const STARLINK_FLOOR_ONE_WAY: Duration = Duration::from_micros(3_700);

/// One Starlink case: what the three presets set differently. Rates in Mbit/s, times in
/// microseconds (so that the tables read like the sources).
#[derive(Debug, Clone, Copy)]
pub struct StarlinkCase {
    /// Preset name.
    pub name: &'static str,
    /// One line for `satquic presets`.
    pub description: &'static str,
    /// Where the numbers come from.
    pub source: &'static str,
    /// Slot base RTT quantiles: (p, microseconds).
    pub rtt_us: &'static [(f64, u64)],
    /// Per-packet jitter each way, uniform in `[0, this]`, microseconds.
    pub jitter_us: u64,
    /// Slot capacity down: (p, Mbit/s).
    pub down_mbps: &'static [(f64, f64)],
    /// Slot capacity up: (p, Mbit/s).
    pub up_mbps: &'static [(f64, f64)],
    /// Queue depth at the median slot rate, each direction, microseconds.
    pub queue_us: u64,
    /// RTT spike at a boundary: (probability, min, max microseconds).
    pub spike: Option<(f64, u64, u64)>,
    /// Outage at a boundary: (probability, min, max microseconds).
    pub outage: Option<(f64, u64, u64)>,
    /// Loss burst at a boundary: (probability, min, max microseconds); all packets lost.
    pub loss: Option<(f64, u64, u64)>,
}

/// `starlink-quiet`: a fixed dish (Standard plan) off-peak. Capacity: the Standard plan's
/// 64,092 one-second iperf3 samples (Laniewski, Lanfer, Aschenbruck, "Measuring Mobile
/// Starlink Performance: A Comprehensive Look", IEEE OJCOMS 2025, data set
/// sys-uos/Starlink-on-the-Autobahn, notebook `Analysis_Fig6ab`): down p25/p50/p75 198 /
/// 292 / 360 Mbit/s, max 504; up 14.9 / 21.2 / 30.4, max 82. The tails below p25 and above
/// p75 are chosen (a slot averages 15 s, so its spread is narrower than a second's).
/// RTT: the same study's Standard pings to the gateway (Fig. 6c, 2.3 M pings): median
/// about 21 ms, interquartile 18-23 ms, whiskers 12-31 ms, read off the figure; slot base
/// RTTs and jitter fitted so that the model's pings match (18.0 / 20.7 / 22.8 ms, p1-p99
/// 11.3-31.5). Handovers, from the stationary dish's pings (notebook `Analysis_Fig7_Fig8`):
/// the highest RTT within a second of a boundary has a median of about 72 ms (Fig. 7, read;
/// Huston: spikes of 30-50 ms), a spike of 40-75 ms here (model: 71 ms); pings were lost
/// within 300 ms of 371 of 2,267 boundaries (16 %), 2.36 pings in a row on average, a
/// loss burst of 5-40 ms at 18 % of the boundaries here (model: 16 %, 2.3 pings).
/// Queues: 40 ms at the median rate, Starlink's own peak-hour worst case after its 2024
/// latency work (US p99 below 65 ms against a 33 ms median; Starlink, "Improving
/// Starlink's latency", March 2024) less the median.
pub const QUIET: StarlinkCase = StarlinkCase {
    name: "starlink-quiet",
    description: "Starlink, fixed dish, quiet evening: 15 s slots, 40-500 Mbit/s down (median 292), RTT to the PoP ~21 ms, 40-75 ms spikes and some loss at handovers",
    source: "Laniewski et al. OJCOMS 2025 (Starlink-on-the-Autobahn, Standard plan); Mohan et al. WWW 2024; Huston APNIC 2024; Starlink 2024",
    rtt_us: &[
        (0.0, 9_000),
        (0.1, 14_000),
        (0.25, 16_000),
        (0.5, 19_000),
        (0.75, 20_500),
        (0.9, 23_000),
        (1.0, 30_000),
    ],
    jitter_us: 2_000,
    down_mbps: &[
        (0.0, 40.0),
        (0.1, 120.0),
        (0.25, 198.0),
        (0.5, 292.0),
        (0.75, 360.0),
        (0.9, 420.0),
        (1.0, 500.0),
    ],
    up_mbps: &[
        (0.0, 3.0),
        (0.1, 9.0),
        (0.25, 14.9),
        (0.5, 21.2),
        (0.75, 30.4),
        (0.9, 38.0),
        (1.0, 60.0),
    ],
    queue_us: 40_000,
    spike: Some((1.0, 40_000, 75_000)),
    outage: None,
    loss: Some((0.18, 5_000, 40_000)),
};

/// `starlink-busy`: a loaded cell at peak hour, to a server beyond the PoP. RTT: median
/// about 50 ms, interquartile 40-60 ms, minimum 20 ms to European RIPE Atlas anchors
/// (Michel et al., IMC 2022; APNIC blog, November 2022), as Starlink's US peak-hour median
/// of 48.5 ms before March 2024 (Starlink, "Improving Starlink's latency"); jitter sized
/// for Huston's 6.7 ms mean successive-RTT jitter (model: 39.4 / 48.3 / 59.3 ms, 6.4 ms).
/// Capacity: per slot 10-370 Mbit/s (Mohan et al., WWW 2024), the middle chosen near the
/// crowd's median download, about 100 Mbit/s (Ookla Speedtest, US, 2022-2025: 62.5 to 105
/// Mbit/s); up 2-40 Mbit/s, median 11 (Ookla's 7.2 to Laniewski's Roam plan's 17.3).
/// Queues: 100 ms at the median rate, the pre-2024 peak-hour tail (p99 above 150 ms
/// against a 48.5 ms median). Handovers: Huston's 30-50 ms spikes, and a loss burst of
/// 10-60 ms at a quarter of the boundaries (Huston: 1-2 % loss unrelated to congestion;
/// no source gives the share per boundary).
pub const BUSY: StarlinkCase = StarlinkCase {
    name: "starlink-busy",
    description: "Starlink, busy evening: 15 s slots, 10-370 Mbit/s down (median 100), RTT to servers ~50 ms, deep queues, 30-50 ms spikes and loss at handovers",
    source: "Michel et al. IMC 2022; Mohan et al. WWW 2024; Huston APNIC 2024; Starlink 2024; Ookla 2022-2025",
    rtt_us: &[
        (0.0, 16_000),
        (0.25, 26_000),
        (0.5, 34_000),
        (0.75, 44_000),
        (0.9, 56_000),
        (1.0, 86_000),
    ],
    jitter_us: 14_000,
    down_mbps: &[
        (0.0, 10.0),
        (0.1, 35.0),
        (0.25, 60.0),
        (0.5, 100.0),
        (0.75, 160.0),
        (0.9, 240.0),
        (1.0, 370.0),
    ],
    up_mbps: &[
        (0.0, 2.0),
        (0.25, 7.0),
        (0.5, 11.0),
        (0.75, 16.0),
        (1.0, 40.0),
    ],
    queue_us: 100_000,
    spike: Some((1.0, 30_000, 50_000)),
    outage: None,
    loss: Some((0.25, 10_000, 60_000)),
};

/// `starlink-moving`: a flat high-performance dish on a car on a motorway, calibrated
/// against the Starlink-on-the-Autobahn data set (Laniewski et al., OJCOMS 2025; 4,861
/// one-second iperf3 samples, 19 April 2024, 18:23-20:43 local time, median speed 102
/// km/h). Capacity: the quantiles of its 263 whole 15 s slot means (slots aligned on
/// seconds 12, 27, 42, 57), down 18 / 103 / 151 / 219 / 278 / 335 / 454 Mbit/s at p0 /
/// p10 / p25 / p50 / p75 / p90 / p100, up 0 (0.5 here) / 5.2 / 8.3 / 15.1 / 20.8 / 28.3 /
/// 52.6 (`scripts/leo_calibrate.py` recomputes them from the data set). RTT: its 367,569
/// lossless pings to the gateway (Fig. 6c): median about 27.5 ms, interquartile 21.5-39,
/// whiskers 13-65, read off the figure; slot base RTTs and jitter fitted so that the
/// model's pings match (21.8 / 27.6 / 38.5, p1-p99 13.7-73.9). At a boundary the highest
/// RTT within a second has a median of about 105 ms (Fig. 7, read): here every boundary
/// stops the link for 60-150 ms (packets wait; model: 106 ms), which also takes 7 % off
/// the throughput of the second holding the boundary, where the data's iperf3 (TCP) loses
/// 18 % (180 against 219 Mbit/s; the rest is taken to be TCP's reaction to the loss).
/// Pings were lost within 300 ms of 47 % of the boundaries, 5-9 in a row (Fig. 8 and
/// notebook `Analysis_Fig7_Fig8`): a loss burst of 10-150 ms at 47 % of the boundaries
/// here (model: 47 %, 6.7 pings). Losses away from boundaries (bridges: 19 % of the pings
/// under one against 2 % elsewhere; 2.84 % of all pings) are not modelled (model: 0.3 %).
/// Queues as `starlink-quiet`.
pub const MOVING: StarlinkCase = StarlinkCase {
    name: "starlink-moving",
    description: "Starlink on a car on a motorway: 15 s slots, 18-454 Mbit/s down (median 219), RTT to the PoP ~28 ms, 60-150 ms outages and loss bursts at handovers",
    source: "Laniewski et al. OJCOMS 2025 (sys-uos/Starlink-on-the-Autobahn, calibrated: scripts/leo_calibrate.py); Mohan et al. WWW 2024; Huston APNIC 2024",
    rtt_us: &[
        (0.0, 10_000),
        (0.25, 16_000),
        (0.5, 21_000),
        (0.75, 32_500),
        (0.9, 45_000),
        (1.0, 70_000),
    ],
    jitter_us: 6_000,
    down_mbps: &[
        (0.0, 18.0),
        (0.1, 103.0),
        (0.25, 151.0),
        (0.5, 219.0),
        (0.75, 278.0),
        (0.9, 335.0),
        (1.0, 454.0),
    ],
    up_mbps: &[
        (0.0, 0.5),
        (0.1, 5.2),
        (0.25, 8.3),
        (0.5, 15.1),
        (0.75, 20.8),
        (0.9, 28.3),
        (1.0, 52.6),
    ],
    queue_us: 40_000,
    spike: None,
    outage: Some((1.0, 60_000, 150_000)),
    loss: Some((0.47, 10_000, 150_000)),
};

/// The three cases, by name.
pub const CASES: [StarlinkCase; 3] = [QUIET, BUSY, MOVING];

/// The case of a preset name.
pub fn case(name: &str) -> Option<StarlinkCase> {
    CASES.into_iter().find(|c| c.name == name)
}

impl StarlinkCase {
    /// The median of a rate table, bit/s.
    fn median_bps(table: &[(f64, f64)]) -> f64 {
        let q = crate::slot::Quantiles::of_rates(&rate_quantiles(table));
        q.at(0.5)
    }

    /// A queue of `queue_us` at the median rate of `table`, bytes (at least 10 packets).
    fn queue_bytes(&self, table: &[(f64, f64)]) -> u64 {
        let bytes = Self::median_bps(table) * self.queue_us as f64 / 8e6;
        // Whole kB: the table reads better and nothing depends on the last bytes.
        ((bytes / 1000.0).round() as u64 * 1000).max(MIN_QUEUE_PACKETS * 1500)
    }

    /// The link of this case.
    pub fn link(&self) -> LinkSpec {
        let direction = |table: &[(f64, f64)]| DirectionSpec {
            rate: RateSpec::Slotted {
                quantiles: rate_quantiles(table),
            },
            delay: DelaySpec {
                jitter: (self.jitter_us > 0).then(|| JitterSpec {
                    max: Duration::from_micros(self.jitter_us),
                }),
                ..DelaySpec::fixed(STARLINK_FLOOR_ONE_WAY)
            },
            queue: QueueSpec::drop_tail(QueueLimit::Bytes(self.queue_bytes(table))),
            loss: LossSpec::None,
            bod: None,
            cross_traffic: None,
        };
        let event = |e: Option<(f64, u64, u64)>| {
            e.map(|(probability, min, max)| HandoverEvent {
                probability,
                min: Duration::from_micros(min),
                max: Duration::from_micros(max),
            })
        };
        LinkSpec {
            name: self.name.into(),
            description: self.description.into(),
            source: self.source.into(),
            down: direction(self.down_mbps),
            up: direction(self.up_mbps),
            slots: Some(SlotSpec {
                interval: STARLINK_SLOT,
                phase: SlotPhase::Random,
                seed: None,
                rtt: self
                    .rtt_us
                    .iter()
                    .map(|&(p, us)| RttQuantile {
                        p,
                        rtt: Duration::from_micros(us),
                    })
                    .collect(),
                handover: HandoverSpec {
                    spike: event(self.spike),
                    outage: event(self.outage),
                    loss: event(self.loss).map(|e| LossBurstSpec {
                        probability: e.probability,
                        min: e.min,
                        max: e.max,
                        plr: 1.0,
                    }),
                },
            }),
        }
    }
}

/// The smallest queue a preset gets, in full-size packets.
const MIN_QUEUE_PACKETS: u64 = 10;

fn rate_quantiles(table: &[(f64, f64)]) -> Vec<RateQuantile> {
    table
        .iter()
        .map(|&(p, mbps)| RateQuantile {
            p,
            rate_bps: (mbps * 1e6).round() as u64,
        })
        .collect()
}
