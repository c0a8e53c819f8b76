//! The links of the seeds, by name.
//!
//! | preset | seed | what |
//! |---|---|---|
//! | `geo-viasat` | 000 Sec 4.2, 4.5; 001 Sec III-IV | 150/150 Mbit/s, 300 ms each way, 36 MB queues, Viasat AQM |
//! | `geo-viasat-bod` | + 000 Sec 2.1.3; 003 Sec IV-A, Fig 2-3 | the same with bandwidth-on-demand on the down direction |
//! | `qir-terrestrial` | 002 Sec II-III | 20/20 Mbit/s, RTT 30 ms, 25-packet queues |
//! | `qir-sat` | 002 Sec III | 20/2 Mbit/s, 300 ms each way, 1 BDP queues (queue not stated) |
//! | `qir-satloss` | 002 Sec III | `qir-sat` + 1 % loss each way |
//! | `thesis-sat` | 004 Table 6.1 | 20/20 Mbit/s, 300 ms each way, `buffer` x BDP, `plr` |
//! | `thesis-terr` | 004 Table 6.1 | 20/20 Mbit/s, 50 ms each way, `buffer` x BDP, `plr` |
//! | `thesis-asym-<pct>` | 004 Table 6.3 | 20 Mbit/s down, 10/5/2/1/0.5/0.2 Mbit/s up, 300 ms |
//! | `leo` | 003 Sec IV-A, Tables II-III | ~100 Mbit/s, min RTT 30 ms, 10 Hz RTT noise, path changes every 15 s |
//! | `lte` | 003 Sec IV-A, Table II | min RTT 60 ms, 6 Hz RTT noise, varying capacity |
//! | `starlink-quiet` | Laniewski et al. 2025; Mohan et al. 2024; Huston 2024 | 15 s slots, median 292 Mbit/s down, RTT ~21 ms, handover spikes and loss |
//! | `starlink-busy` | Michel et al. 2022; Mohan et al. 2024; Starlink 2024 | 15 s slots, median 100 Mbit/s down, RTT ~50 ms, deep queues |
//! | `starlink-moving` | Laniewski et al. 2025 (calibrated) | 15 s slots, median 219 Mbit/s down, RTT ~28 ms, handover outages and loss |
//! | `sat-250-3` | picoquic `satellite_test.c` | 250 Mbit/s client to server, 3 Mbit/s back, 300 ms each way, no drops |
//! | `sat-50-10` | picoquic `satellite_test.c` | 50 / 10 Mbit/s, otherwise as `sat-250-3` |
//! | `sat-10-2` | picoquic `satellite_test.c` | 10 / 2 Mbit/s (and 20/2 as `sat-20-2`) |
//!
//! Parameterised presets take `name:key=value,key=value`, e.g.
//! `thesis-sat:buffer=0.5,plr=0.001`; `buffer` is the queue limit as a multiple of the
//! BDP (default 1), `plr` the random loss rate of each direction as a fraction (default 0).
//! The `sat-*` presets take `loss=N` (1 packet in N lost, picoquic's fixed pattern) and
//! `jitter=DURATION`, e.g. `sat-250-3:loss=64,jitter=3ms`. `geo-viasat-bod` takes
//! `lag-jitter=DURATION`, `phase=random` and `headroom-spread=S` (its allocation cycle's
//! randomness), e.g. `geo-viasat-bod:lag-jitter=1s,phase=random`, and `headroom=H`,
//! `period=`, `lag=`, `window=DURATION` (its allocator's shape); `geo-viasat-real` takes
//! the same. The GEO presets take their down rate and gateway queue's shape: `rate=RATE`,
//! `queue=SIZE`, `aqm-at=F`, `aqm-drop=P`, a thin return link: `up=RATE`, `up-queue=SIZE`,
//! and random loss, `plr=P`. `leo` takes `queue=SIZE` (down) and `path-extra=DURATION`.
//! The `starlink-*` presets take `phase=DURATION|random` (where the first slot boundary
//! falls; random by default), `slot-seed=N` (the same slots whatever the run's seed),
//! `queue=SIZE`, `up-queue=SIZE`, `handover=none` (no spikes, outages or loss bursts),
//! `rate-scale=F` (every slot rate times F) and `rtt-add=DURATION` (a farther server).
//! Every preset takes cross traffic, `cross=[Nx]RATE[:ON:OFF[:exp][:random]]` (N users of
//! that shape; see [`crate::cross`]), or `cross=none` to remove a preset's own.
//!
//! Conventions for all presets: MB means 10^6 bytes; "RTT x" without a split means x/2
//! each way; values the seeds leave open are documented on each preset function.

use crate::cross::CrossTrafficSpec;
use crate::error::LinkError;
use crate::spec::{
    BdpRateOf, BodSpec, DelaySpec, DirectionSpec, Discipline, JitterSpec, LinkSpec, LossSpec,
    OscillationSpec, PathChangeSpec, QueueLimit, QueueSpec, RateSpec, RateStep,
};
use crate::units::{format_duration, format_rate_bps, trim_float};
use std::time::Duration;

mod params;
mod starlink;
mod table;

use params::{
    geo_params, leo_params, no_params, parse_params, sat_params, starlink_params, thesis_params,
};
pub use starlink::{CASES as STARLINK_CASES, STARLINK_FLOOR_ONE_WAY, StarlinkCase};
#[cfg(test)]
use table::extra_text;
pub use table::{TABLE_WIDTH, table};

const MBPS: u64 = 1_000_000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// The asymmetry ratios of seed 004 Table 6.3 and their up rates (down is 20 Mbit/s).
pub const THESIS_ASYMMETRY: [(&str, u64); 6] = [
    ("50", 10_000_000),
    ("75", 5_000_000),
    ("90", 2_000_000),
    ("95", 1_000_000),
    ("97.5", 500_000),
    ("99", 200_000),
];

/// Every preset name (parameterised presets with their defaults).
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = [
        "geo-viasat",
        "geo-viasat-bod",
        "geo-viasat-real",
        "qir-terrestrial",
        "qir-sat",
        "qir-satloss",
        "thesis-sat",
        "thesis-terr",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(
        THESIS_ASYMMETRY
            .iter()
            .map(|(p, _)| format!("thesis-asym-{p}")),
    );
    v.push("leo".into());
    v.push("lte".into());
    v.extend(starlink::CASES.iter().map(|c| c.name.to_string()));
    v.extend(PICOQUIC_SATELLITE.iter().map(|(n, ..)| n.to_string()));
    v
}

/// picoquic's satellite test links (`picoquictest/satellite_test.c`): name, rate in the
/// data direction (client to server) and back, bit/s. `sat-20-2` is the link of its
/// `satellite_preemptive_fc` test (QIR-SE's SAT rates).
pub const PICOQUIC_SATELLITE: [(&str, u64, u64); 4] = [
    ("sat-250-3", 250 * MBPS, 3 * MBPS),
    ("sat-50-10", 50 * MBPS, 10 * MBPS),
    ("sat-20-2", 20 * MBPS, 2 * MBPS),
    ("sat-10-2", 10 * MBPS, 2 * MBPS),
];

/// picoquic's loss pattern: bit 28 of a 64-bit mask (`0x10000000`), one packet in 64.
pub const PICOQUIC_LOSS_OFFSET: u32 = 28;

/// The queue of the `sat-*` presets, in seconds at the direction's rate: picoquic's
/// simulated links have no queue limit; 10 s is more than any of its tests builds up.
pub const SAT_QUEUE_SECONDS: u64 = 10;

/// The GEO presets' return buffer with `up=RATE` and no `up-queue=`: this long at the
/// return rate. Our choice (no seed gives the terminal's buffer), about a BDP of the
/// 600 ms path, so that a return link filled with ACKs can double the RTT but not more.
pub const RETURN_BUFFER: Duration = Duration::from_millis(600);

/// Every preset, with default parameters.
pub fn all() -> Vec<LinkSpec> {
    names()
        .iter()
        .map(|n| lookup(n).expect("every listed preset resolves"))
        .collect()
}

/// Looks up a preset by name, with optional parameters: `thesis-sat:buffer=0.5,plr=0.001`.
pub fn lookup(name: &str) -> Result<LinkSpec, LinkError> {
    let name = name.trim();
    let (base, mut params) = match name.split_once(':') {
        Some((b, p)) => (b.trim(), parse_params(b.trim(), p)?),
        None => (name, Vec::new()),
    };
    let given = !params.is_empty();
    // Cross traffic applies to any preset (crate::cross): `cross` loads the down
    // direction, `cross-up` the up direction.
    // `none` removes a preset's own (`geo-viasat-real:cross-up=none`).
    let mut cross = |key: &str| -> Result<Option<Option<CrossTrafficSpec>>, LinkError> {
        let Some(i) = params.iter().position(|(k, _)| k == key) else {
            return Ok(None);
        };
        let (_, v) = params.remove(i);
        if v == "none" {
            return Ok(Some(None));
        }
        CrossTrafficSpec::parse_param(&v)
            .map(|c| Some(Some(c)))
            .map_err(|message| LinkError::PresetParameter {
                preset: base.to_string(),
                message: format!("{key}: {message}"),
            })
    };
    let (cross_down, cross_up) = (cross("cross")?, cross("cross-up")?);
    let thesis = |f: fn(f64, f64) -> LinkSpec| -> Result<LinkSpec, LinkError> {
        let (buffer, plr) = thesis_params(base, &params)?;
        Ok(f(buffer, plr))
    };
    let mut spec = match base {
        "geo-viasat" => geo_params(base, &params, geo_viasat())?,
        "geo-viasat-bod" => geo_params(base, &params, geo_viasat_bod())?,
        "geo-viasat-real" => geo_params(base, &params, geo_viasat_real())?,
        "qir-terrestrial" => no_params(base, &params, qir_terrestrial())?,
        "qir-sat" => no_params(base, &params, qir_sat())?,
        "qir-satloss" => no_params(base, &params, qir_satloss())?,
        "leo" => leo_params(base, &params, leo())?,
        "lte" => no_params(base, &params, lte())?,
        other if starlink::case(other).is_some() => {
            let case = starlink::case(other).expect("checked");
            starlink_params(base, &params, case.link())?
        }
        "thesis-sat" => thesis(thesis_sat)?,
        "thesis-terr" => thesis(thesis_terr)?,
        other if PICOQUIC_SATELLITE.iter().any(|(n, ..)| *n == other) => {
            let (loss_every, jitter) = sat_params(base, &params)?;
            picoquic_satellite(base, loss_every, jitter).expect("listed in PICOQUIC_SATELLITE")
        }
        other => match other.strip_prefix("thesis-asym-") {
            Some(pct) if THESIS_ASYMMETRY.iter().any(|(p, _)| *p == pct) => {
                let (buffer, plr) = thesis_params(base, &params)?;
                thesis_asym(pct, buffer, plr)?
            }
            _ => {
                return Err(LinkError::UnknownPreset {
                    name: name.to_string(),
                    valid: names().join(", "),
                });
            }
        },
    };
    if let Some(c) = cross_down {
        spec.down.cross_traffic = c;
    }
    if let Some(c) = cross_up {
        spec.up.cross_traffic = c;
    }
    if given {
        spec.name = name.to_string();
    }
    Ok(spec)
}

/// `sat-<fwd>-<ret>`: picoquic's satellite test links (`picoquictest/satellite_test.c`),
/// as its tests drive them: the *client* sends (the test reverses the roles of a download
/// over John Border's 250/3 Mbit/s model), so the data direction is up (client to server)
/// at the first rate and the return direction down at the second. Run them with an upload
/// (`satquic sim -R`) to measure what picoquic measures. 300 ms each way; picoquic's links
/// have no queue limit, so the queues hold [`SAT_QUEUE_SECONDS`] at their rate and never
/// drop. `loss_every`: 1 packet in N lost in each direction at picoquic's position
/// ([`PICOQUIC_LOSS_OFFSET`]; picoquic shares one mask between the directions).
/// `jitter`: uniform extra delay per packet in `[0, jitter]`, each direction.
pub fn picoquic_satellite(
    name: &str,
    loss_every: Option<u32>,
    jitter: Option<Duration>,
) -> Option<LinkSpec> {
    let &(base, fwd, ret) = PICOQUIC_SATELLITE.iter().find(|(n, ..)| *n == name)?;
    let loss = match loss_every {
        Some(every) => LossSpec::Periodic {
            every,
            offset: PICOQUIC_LOSS_OFFSET.min(every - 1),
        },
        None => LossSpec::None,
    };
    let dir = |rate: u64| {
        let queue = QueueSpec::drop_tail(QueueLimit::Bytes(rate / 8 * SAT_QUEUE_SECONDS));
        let mut d = direction(rate, ms(300), queue, loss);
        d.delay.jitter = jitter.map(|max| JitterSpec { max });
        d
    };
    Some(LinkSpec {
        name: base.into(),
        description: format!(
            "picoquic satellite test: {} client to server (data), {} back, 300 ms each way, no queue limit",
            format_rate_bps(fwd),
            format_rate_bps(ret)
        ),
        source: "picoquic picoquictest/satellite_test.c".into(),
        down: dir(ret),
        up: dir(fwd),
        slots: None,
    })
}

fn direction(rate_bps: u64, delay: Duration, queue: QueueSpec, loss: LossSpec) -> DirectionSpec {
    DirectionSpec {
        rate: RateSpec::constant(rate_bps),
        delay: DelaySpec::fixed(delay),
        queue,
        loss,
        bod: None,
        cross_traffic: None,
    }
}

fn bernoulli(plr: f64) -> LossSpec {
    if plr > 0.0 {
        LossSpec::Bernoulli { plr }
    } else {
        LossSpec::None
    }
}

fn viasat_queue() -> QueueSpec {
    QueueSpec {
        limit: QueueLimit::Bytes(36_000_000),
        bdp_rate_of: BdpRateOf::This,
        discipline: Discipline::viasat(),
    }
}

/// `geo-viasat`: the Viasat-like GEO link of seeds 000/001.
///
/// 150 Mbit/s each way, 300 ms one-way delay each way (600 ms base RTT), a 36 MB queue per
/// direction (seed 000 Sec 4.5 / 001 Sec IV: the Docker + `tc` testbed), with the Viasat
/// gateway AQM: while the queue holds more than 18 MB (half the limit), 25 % of arriving
/// packets are dropped at random (seed 000 Sec 4.2 / 001 Sec III, the real link).
///
/// Choices where the seeds are open: MB = 10^6 bytes (18 MB at 150 Mbit/s is 0.96 s of
/// queue, matching SEEDS.md's "~1 s"); the seeds' `tc` testbed does not mention the AQM,
/// which describes the real gateway; following SEEDS.md and DESIGN.md it is applied here,
/// to both directions (on the up direction a download's ACKs never reach it). No random
/// loss (the first-RTT and wireless losses of the real link are excluded from the seeds'
/// analyses). Up is 150 Mbit/s as in the testbed; the real return link is thinner.
pub fn geo_viasat() -> LinkSpec {
    LinkSpec {
        name: "geo-viasat".into(),
        description: "Viasat-like GEO: 150/150 Mbit/s, 300 ms each way, 36 MB queues, AQM drops 25% above 18 MB".into(),
        source: "seed 000 Sec 4.2 + 4.5, seed 001 Sec III-IV".into(),
        down: direction(150 * MBPS, ms(300), viasat_queue(), LossSpec::None),
        up: direction(150 * MBPS, ms(300), viasat_queue(), LossSpec::None),
        slots: None,
    }
}

/// `geo-viasat-bod`: [`geo_viasat`] plus bandwidth-on-demand on the down direction, so the
/// RTT oscillates during a sender's ramp-up as on the real Viasat link (seed 000 Sec 2.1.3;
/// seed 003 Sec IV-A and Fig 2-3: RTT spectrum peak at 0.5 Hz, a ~2 s period).
///
/// Parameters ([`BodSpec::default`]): an allocation decision every 2 s, granted 600 ms
/// later (one GEO round trip of request/grant signalling), measuring the offered load over
/// the last 500 ms, granting 3x that (headroom), between 2 Mbit/s (idle allocation) and the
/// 150 Mbit/s plan. The 2 s allocation cycle is what sets the period: after each grant the
/// queue drains, the sender then outgrows the grant and the queue builds until the next one.
///
/// Calibration (test `crates/link/tests/bod_calibration.rs`): classic slow start, 10 x
/// 1200 B initial window, one ACK per packet, no pacing. The RTT averaged per 50 ms bin,
/// detrended, has its DFT peak at **1.99 s** between the first ACK and full allocation
/// (8.6 s). The allocation steps 2 -> 4.5 -> 19 -> 98 -> 150 Mbit/s at 2.6, 4.6, 6.6 and
/// 8.6 s. The RTT returns to the 0.60 s base after each grant and peaks at about 0.79,
/// 1.09 and **1.21 s** in the cycles ending at 2.9, 5.2 and 7.2 s: a swing growing from
/// ~0.2 s to **~0.6 s** as the rates grow. The first AQM drop follows at 9.2 s. The period
/// is the same (1.99 s) with an ACK every 2 packets, with pacing, and with both. In a scan
/// of nearby values (period 1.8-2.2 s, lag 0.3-0.6 s, window 0.5-2 s, headroom 2-6) most
/// combinations stay within 1.7-2.3 s; a few lock onto half or 1.5 times the allocation
/// period. The real simulator re-checks it with QUIC.
///
/// The seeds give the period, not the mechanism's parameters: the allocator is a stylised
/// stand-in for Viasat's scheduler, not a model of it.
pub fn geo_viasat_bod() -> LinkSpec {
    let mut spec = geo_viasat();
    spec.name = "geo-viasat-bod".into();
    spec.description = "geo-viasat + bandwidth-on-demand on the down direction (RTT oscillates with a ~2 s period during ramp-up)".into();
    spec.source = "seed 000 Sec 2.1.3 + 4.2 + 4.5, seed 003 Sec IV-A Fig 2-3".into();
    spec.down.bod = Some(BodSpec::default());
    spec
}

/// A GEO terminal's return link, as `geo-viasat-real` has it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReturnLink {
    /// Its rate, bit/s.
    pub rate_bps: u64,
    /// The terminal's drop-tail buffer in front of it, bytes.
    pub buffer_bytes: u64,
    /// Other traffic sharing it, bit/s while on ...
    pub other_bps: u64,
    /// ... on for this long on average (exponential, from a random point of the cycle) ...
    pub other_on: Duration,
    /// ... and off for this long on average.
    pub other_off: Duration,
}

/// `geo-viasat-real`'s return link. Fitted by `satquic calibrate` (BENCHMARKS.md, "Round
/// 5"); no seed gives these values.
pub const REAL_RETURN: ReturnLink = ReturnLink {
    rate_bps: 4 * MBPS,
    buffer_bytes: 2_000_000,
    other_bps: 2 * MBPS,
    other_on: Duration::from_secs(2),
    other_off: Duration::from_secs(4),
};

/// `geo-viasat-real`: [`geo_viasat_bod`] with the consumer terminal's thin, shared return
/// link in place of the testbed's symmetric 150 Mbit/s: the link that stands for the seeds'
/// real Viasat link in `satquic reproduce` (seeds 000/001 datasets, 003 Tables II-III).
///
/// SEEDS.md lists the real link's return as thin, and seed 000 Sec. 2.6 puts its RTT growth
/// on "queuing during uplink reservations as the transmission rate increases"; 003 Sec.
/// III on "the scheduling of TCP acknowledgments on the uplink". No seed gives the return
/// rate, the terminal's buffer or its other traffic, so they are fitted ([`REAL_RETURN`]):
/// 4 Mbit/s, 2 MB drop-tail, and 2 Mbit/s of other traffic in exponential bursts of 2 s on,
/// 4 s off, from a random point of the cycle (the run-to-run randomness). At 150 Mbit/s
/// QUIC's ACKs (one per two 1200 B packets) need ~3 Mbit/s, so the return link is full
/// when the forward link is and the other traffic is on: the buffer fills and drops, and
/// after a slow start's overshoot the RTT stays at 4-7 s while the sender recovers (one
/// 200 MB NewReno run: 20,049 packets dropped on the return link). Every GEO parameter
/// applies (`up=`, `up-queue=`, `cross-up=RATE:ON:OFF[:exp][:random]` or `cross-up=none`).
pub fn geo_viasat_real() -> LinkSpec {
    let r = REAL_RETURN;
    let mut spec = geo_viasat_bod();
    spec.name = "geo-viasat-real".into();
    spec.description = "geo-viasat-bod + the terminal's thin, shared return link (4 Mbit/s, 2 MB buffer, 2 Mbit/s of other traffic on/off), fitted to the seeds' real-link results".into();
    spec.source = "seed 000 Sec 2.6 + Tables 1-4, seed 001, seed 003 Tables II-III; return link fitted (satquic calibrate)".into();
    spec.up.rate = RateSpec::constant(r.rate_bps);
    spec.up.queue = QueueSpec::drop_tail(QueueLimit::Bytes(r.buffer_bytes));
    spec.up.cross_traffic = Some(CrossTrafficSpec {
        on: Some(r.other_on),
        off: Some(r.other_off),
        exponential: true,
        random_start: true,
        ..CrossTrafficSpec::constant(r.other_bps)
    });
    spec
}

/// `qir-terrestrial`: QIR-SE's TERRESTRIAL scenario (seed 002 Sec III): 20 Mbit/s each way,
/// RTT 30 ms (15 ms each way), a 25-packet queue, no loss.
///
/// Choices: the 30 ms RTT is split evenly; the 25-packet limit applies to each direction
/// and counts the packet in transmission.
pub fn qir_terrestrial() -> LinkSpec {
    let q = || QueueSpec::drop_tail(QueueLimit::Packets(25));
    LinkSpec {
        name: "qir-terrestrial".into(),
        description: "QIR-SE TERRESTRIAL: 20/20 Mbit/s, RTT 30 ms, 25-packet queues".into(),
        source: "seed 002 Sec III".into(),
        down: direction(20 * MBPS, ms(15), q(), LossSpec::None),
        up: direction(20 * MBPS, ms(15), q(), LossSpec::None),
        slots: None,
    }
}

/// `qir-sat`: QIR-SE's SAT scenario (seed 002 Sec III): 20 Mbit/s forward (down), 2 Mbit/s
/// return (up), 300 ms one-way delay each way, no loss.
///
/// The seed does not state the queue size. Chosen: 1 BDP of each direction's own rate
/// (600 ms base RTT): 1.5 MB down, 150 kB up, drop-tail.
pub fn qir_sat() -> LinkSpec {
    let q = || QueueSpec::drop_tail(QueueLimit::Bdp(1.0));
    LinkSpec {
        name: "qir-sat".into(),
        description: "QIR-SE SAT: 20/2 Mbit/s, 300 ms each way, 1 BDP queues (queue size not stated in the seed)".into(),
        source: "seed 002 Sec III".into(),
        down: direction(20 * MBPS, ms(300), q(), LossSpec::None),
        up: direction(2 * MBPS, ms(300), q(), LossSpec::None),
        slots: None,
    }
}

/// `qir-satloss`: QIR-SE's SATLOSS scenario (seed 002 Sec III): [`qir_sat`] with a 1 %
/// Bernoulli packet loss rate in each direction (PLR is set per direction in QIR-SE).
pub fn qir_satloss() -> LinkSpec {
    let mut spec = qir_sat();
    spec.name = "qir-satloss".into();
    spec.description =
        "QIR-SE SATLOSS: qir-sat + 1% random loss each way (queue size not stated in the seed)"
            .into();
    spec.down.loss = LossSpec::Bernoulli { plr: 0.01 };
    spec.up.loss = LossSpec::Bernoulli { plr: 0.01 };
    spec
}

fn thesis(
    name: &str,
    down_bps: u64,
    up_bps: u64,
    delay: Duration,
    buffer: f64,
    plr: f64,
) -> LinkSpec {
    let q = || QueueSpec {
        limit: QueueLimit::Bdp(buffer),
        bdp_rate_of: BdpRateOf::Down,
        discipline: Discipline::DropTail,
    };
    LinkSpec {
        name: name.into(),
        description: format!(
            "thesis {}: {}/{}, {} each way, {} x BDP bfifo queues, {}% loss each way",
            if name.contains("asym") {
                "asymmetric SAT"
            } else if delay < ms(100) {
                "TERR"
            } else {
                "SAT"
            },
            format_rate_bps(down_bps),
            format_rate_bps(up_bps),
            format_duration(delay),
            trim_float(buffer),
            trim_float(plr * 100.0)
        ),
        source: "seed 004 Sec 5.3.1, Tables 6.1 + 6.3".into(),
        down: direction(down_bps, delay, q(), bernoulli(plr)),
        up: direction(up_bps, delay, q(), bernoulli(plr)),
        slots: None,
    }
}

/// `thesis-sat`: the thesis' SAT link (seed 004 Table 6.1): 20 Mbit/s each way, 300 ms
/// one-way delay each way (600 ms RTT), a `bfifo` queue of `buffer` x BDP (BDP = 20 Mbit/s
/// x 600 ms = 1.5 MB; the thesis uses 0.25, 0.5, 1 (default) and 2), random loss `plr`
/// (0, 0.001 and 0.01 in the thesis).
///
/// Choices: netem applies the loss and the same byte limit to both router queues, so both
/// directions get `plr` and a limit of `buffer` x the *down* BDP.
pub fn thesis_sat(buffer: f64, plr: f64) -> LinkSpec {
    thesis("thesis-sat", 20 * MBPS, 20 * MBPS, ms(300), buffer, plr)
}

/// `thesis-terr`: the thesis' TERR baseline (seed 004 Table 6.1): as [`thesis_sat`] with a
/// 50 ms one-way delay (100 ms RTT, BDP = 250 kB).
pub fn thesis_terr(buffer: f64, plr: f64) -> LinkSpec {
    thesis("thesis-terr", 20 * MBPS, 20 * MBPS, ms(50), buffer, plr)
}

/// `thesis-asym-<pct>`: the thesis' asymmetric SAT links (seed 004 Table 6.3): 20 Mbit/s
/// down, up = 10, 5, 2, 1, 0.5, 0.2 Mbit/s for 50, 75, 90, 95, 97.5, 99 % asymmetry
/// (`1 - up/down`), 300 ms each way, 1 BDP queues by default, `plr` each way.
///
/// Choice: the up queue has the same byte limit as the down queue (`buffer` x the down
/// BDP, 1.5 MB at the default), as TEACUP configures one buffer size for both router
/// queues; the thesis does not say otherwise. On the thinnest links that lets ACKs queue
/// for seconds rather than be dropped. Upstream cross-traffic (thesis Table 6.6) is a
/// workload, not part of the link.
pub fn thesis_asym(pct: &str, buffer: f64, plr: f64) -> Result<LinkSpec, LinkError> {
    let up = THESIS_ASYMMETRY
        .iter()
        .find(|(p, _)| *p == pct)
        .map(|(_, up)| *up)
        .ok_or_else(|| LinkError::UnknownPreset {
            name: format!("thesis-asym-{pct}"),
            valid: names().join(", "),
        })?;
    Ok(thesis(
        &format!("thesis-asym-{pct}"),
        20 * MBPS,
        up,
        ms(300),
        buffer,
        plr,
    ))
}

/// `leo`: a Starlink-like LEO path standing in for the LEO link of seed 003 (Sec IV-A,
/// Table II): ~100 Mbit/s down, minimum RTT ~30 ms (15 ms each way), RTT noise with a
/// ~0.1 s period (the 10 Hz spectral peak of Fig 3d), and a path change every 15 s
/// (Starlink reassigns satellites on a 15 s schedule) that moves the one-way delay by a
/// random 0-20 ms per direction (`path-extra`), so that runs at different times of the
/// seed's day see base RTTs from 30 to 70 ms.
///
/// Values the seed leaves open, chosen: up 20 Mbit/s; the noise is an 8 ms peak-to-peak
/// 100 ms sinusoid on the down delay plus up to 2 ms of per-packet jitter each way; queues
/// of 1.5 MB down (`queue`) / 0.5 MB up; drop-tail; no random loss. The changes happen
/// 15 s, 30 s, ... after the run's start, not at wall-clock seconds.
///
/// Fitted (issue 13) to 003 Table II's LEO distribution (capacity 0.4 (0.1) s, first loss
/// 0.6 (0.1) s, SEARCH exit 0.5 (0.1) s) and Table III's SEARCH classes (3.9 / 57.1 / 39 %
/// early / late / chokepoint), with campaign b's SEARCH 2.0 variants, over a grid of the
/// two open values (queue 1-2 MB, path-extra 10-20 ms; BENCHMARKS.md "A LEO link fitted
/// to 003"). Until 2026-11-26 they were 2.5 MB and 5 ms (`leo:queue=2.5MB,path-extra=5ms`),
/// which gave every run the same capacity and loss times (sd 0.02-0.03 s) and 75 %
/// chokepoint exits.
pub fn leo() -> LinkSpec {
    let delay = |osc: bool| DelaySpec {
        base: ms(15),
        jitter: Some(JitterSpec { max: ms(2) }),
        oscillation: osc.then(|| OscillationSpec {
            peak_to_peak: ms(8),
            period: ms(100),
        }),
        path_changes: Some(PathChangeSpec {
            interval: Duration::from_secs(15),
            first_at: None,
            max_extra: ms(20),
        }),
    };
    LinkSpec {
        name: "leo".into(),
        description: "Starlink-like LEO: 100/20 Mbit/s, min RTT 30 ms, 10 Hz RTT noise, path change every 15 s".into(),
        source: "seed 003 Sec IV-A (Fig 3c-d), Table II; other values chosen".into(),
        down: DirectionSpec {
            rate: RateSpec::constant(100 * MBPS),
            delay: delay(true),
            queue: QueueSpec::drop_tail(QueueLimit::Bytes(1_500_000)),
            loss: LossSpec::None,
            bod: None,
            cross_traffic: None,
        },
        up: DirectionSpec {
            rate: RateSpec::constant(20 * MBPS),
            delay: delay(false),
            queue: QueueSpec::drop_tail(QueueLimit::Bytes(500_000)),
            loss: LossSpec::None,
            bod: None,
            cross_traffic: None,
        },
        slots: None,
    }
}

/// `lte`: a 4G LTE path standing in for the LTE link of seed 003 (Sec IV-A, Table II):
/// minimum RTT ~60 ms (30 ms each way), RTT noise with a 6 Hz peak (period 1/6 s), and a
/// capacity that varies over time.
///
/// Values the seed leaves open, chosen: the down rate repeats a 10 s schedule of 40, 25,
/// 50, 15, 30 Mbit/s (2 s each, mean 32 Mbit/s, plan/peak 50); up 10 Mbit/s; the noise is a
/// 10 ms peak-to-peak sinusoid with a 166.667 ms period on the down delay plus up to 3 ms of
/// jitter each way; queues of 6 MB down (about 1.6 s at the mean rate, so the first loss
/// comes ~1.6 s after capacity as in Table II's LTE capacity 0.3 s / loss 1.9 s; LTE base
/// stations buffer deeply per user) and 1 MB up; drop-tail; no random loss.
pub fn lte() -> LinkSpec {
    let step = |s: u64, mbps: u64| RateStep {
        from: Duration::from_secs(s),
        rate_bps: mbps * MBPS,
    };
    LinkSpec {
        name: "lte".into(),
        description: "4G LTE: 15-50 Mbit/s varying down (10 s cycle), 10 Mbit/s up, min RTT 60 ms, 6 Hz RTT noise".into(),
        source: "seed 003 Sec IV-A (Fig 3e-f), Table II; other values chosen".into(),
        down: DirectionSpec {
            rate: RateSpec::Schedule {
                steps: vec![step(0, 40), step(2, 25), step(4, 50), step(6, 15), step(8, 30)],
                repeat_every: Some(Duration::from_secs(10)),
            },
            delay: DelaySpec {
                base: ms(30),
                jitter: Some(JitterSpec { max: ms(3) }),
                oscillation: Some(OscillationSpec {
                    peak_to_peak: ms(10),
                    period: Duration::from_micros(166_667),
                }),
                path_changes: None,
            },
            queue: QueueSpec::drop_tail(QueueLimit::Bytes(6_000_000)),
            loss: LossSpec::None,
            bod: None,
            cross_traffic: None,
        },
        up: DirectionSpec {
            rate: RateSpec::constant(10 * MBPS),
            delay: DelaySpec {
                base: ms(30),
                jitter: Some(JitterSpec { max: ms(3) }),
                oscillation: None,
                path_changes: None,
            },
            queue: QueueSpec::drop_tail(QueueLimit::Bytes(1_000_000)),
            loss: LossSpec::None,
            bod: None,
            cross_traffic: None,
        },
        slots: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_fits_in_its_width_and_names_every_preset_twice() {
        let text = table();
        for line in text.lines() {
            assert!(line.chars().count() <= TABLE_WIDTH, "{line}");
        }
        for spec in all() {
            let name = format!("{} ", spec.name);
            assert!(text.lines().any(|l| l.starts_with(&name)), "{}", spec.name);
            let note = format!("{}: ", spec.name);
            assert!(text.lines().any(|l| l.starts_with(&note)), "{}", spec.name);
        }
    }

    #[test]
    fn every_name_resolves_and_validates() {
        for spec in all() {
            spec.validate()
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            crate::Path::<()>::new(&spec, 1).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        }
    }

    #[test]
    fn cross_traffic_is_a_parameter_of_every_preset() {
        let geo = lookup("geo-viasat:cross=50M").unwrap();
        assert_eq!(geo.name, "geo-viasat:cross=50M");
        assert_eq!(
            geo.down.cross_traffic,
            Some(CrossTrafficSpec::constant(50_000_000))
        );
        assert_eq!(geo.up.cross_traffic, None);
        let thesis = lookup("thesis-sat:buffer=2,cross-up=1M:1s:3s:exp").unwrap();
        let up = thesis.up.cross_traffic.unwrap();
        assert_eq!((up.rate_bps, up.exponential), (1_000_000, true));
        assert_eq!(thesis.down.cross_traffic, None);
        let sat = lookup("sat-250-3:loss=64,cross=100M").unwrap();
        assert!(sat.down.cross_traffic.is_some());
        let users = lookup("geo-viasat-real:cross=40x1M:5s:15s:exp:random").unwrap();
        let down = users.down.cross_traffic.as_ref().unwrap();
        assert_eq!((down.users, down.rate_bps), (40, 1_000_000));
        assert!(extra_text(&users).contains("other traffic 40 x 1 Mbit/s down"));
        for bad in [
            "geo-viasat:cross=fast",
            "leo:cross=10M:1s",
            "qir-sat:cross-up=0",
            "geo-viasat:cross=0x1M:1s:1s",
        ] {
            let e = lookup(bad).unwrap_err().to_string();
            assert!(e.contains("cross") && !e.contains('\n'), "{bad}: {e}");
        }
        // Without the parameter, nothing changes.
        assert_eq!(lookup("geo-viasat").unwrap(), geo_viasat());
    }

    #[test]
    fn parameter_errors_are_clear() {
        let e = lookup("thesis-sat:buffer=0").unwrap_err().to_string();
        assert!(e.contains("buffer"), "{e}");
        let e = lookup("thesis-sat:speed=1").unwrap_err().to_string();
        assert!(
            e.contains("unknown parameter") && e.contains("buffer, plr"),
            "{e}"
        );
        let e = lookup("qir-sat:plr=0.1").unwrap_err().to_string();
        assert!(e.contains("takes no parameters"), "{e}");
        let e = lookup("geo-viasat:buffer=2").unwrap_err().to_string();
        assert!(
            e.contains("unknown parameter") && e.contains("queue, aqm-at"),
            "{e}"
        );
        let e = lookup("geo").unwrap_err().to_string();
        assert!(
            e.contains("geo-viasat-bod") && e.contains("thesis-asym-97.5"),
            "{e}"
        );
        let e = lookup("thesis-asym-42").unwrap_err().to_string();
        assert!(e.contains("unknown link preset"), "{e}");
        let e = lookup("thesis-sat:plr").unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
        let e = lookup("thesis-sat:plr=1,plr=0").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        let e = lookup("thesis-sat:plr=abc").unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
        let e = lookup("thesis-sat:plr=1.5").unwrap_err().to_string();
        assert!(e.contains("[0, 1]"), "{e}");
        for (bad, says) in [
            ("geo-viasat-bod:phase=sometimes", "random or fixed"),
            ("geo-viasat-bod:lag-jitter=2s", "below the period"),
            ("geo-viasat-bod:lag-jitter=soon", "lag-jitter"),
            ("geo-viasat-bod:buffer=2", "lag-jitter, phase"),
            ("geo-viasat-bod:headroom=0.5", "headroom"),
            ("geo-viasat-bod:headroom=lots", "headroom"),
            ("geo-viasat-bod:headroom-spread=2.5", "headroom_spread"),
            ("geo-viasat-bod:headroom-spread=some", "headroom-spread"),
            ("geo-viasat-bod:lag-jitter=1s,period=1s", "below the period"),
            ("geo-viasat-bod:window=0s", "window"),
        ] {
            let e = lookup(bad).unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn geo_viasat_bod_takes_its_allocators_randomness() {
        let spec = lookup("geo-viasat-bod:lag-jitter=1s,phase=random").unwrap();
        let bod = spec.down.bod.as_ref().unwrap();
        assert_eq!(bod.lag_jitter, Duration::from_secs(1));
        assert!(bod.random_phase);
        assert_eq!(spec.name, "geo-viasat-bod:lag-jitter=1s,phase=random");
        let shaped = lookup("geo-viasat-bod:headroom=1.5,period=4s,lag=1s,window=2s").unwrap();
        let bod = shaped.down.bod.as_ref().unwrap();
        assert_eq!(
            (bod.headroom, bod.period, bod.lag, bod.window),
            (
                1.5,
                Duration::from_secs(4),
                Duration::from_secs(1),
                Duration::from_secs(2)
            )
        );
        let spread = lookup("geo-viasat-bod:headroom-spread=1.5").unwrap();
        assert_eq!(spread.down.bod.as_ref().unwrap().headroom_spread, 1.5);
        // Without parameters, the calibrated preset: no randomness in the allocator.
        let plain = lookup("geo-viasat-bod").unwrap();
        assert_eq!(plain.down.bod, Some(BodSpec::default()));
        assert!(!BodSpec::default().random_phase && BodSpec::default().lag_jitter.is_zero());
    }

    #[test]
    fn the_geo_presets_take_their_gateway_queues_shape() {
        for base in ["geo-viasat", "geo-viasat-bod"] {
            let spec = lookup(&format!("{base}:queue=72MB,aqm-at=0.7,aqm-drop=0.1")).unwrap();
            for q in [&spec.down.queue, &spec.up.queue] {
                assert_eq!(q.limit, QueueLimit::Bytes(72_000_000), "{base}");
                assert_eq!(
                    q.discipline,
                    Discipline::ViasatAqm {
                        threshold_fraction: 0.7,
                        drop_probability: 0.1
                    },
                    "{base}"
                );
            }
            // Without them, the seeds' 36 MB and 25 % above half.
            let plain = lookup(base).unwrap();
            assert_eq!(plain.down.queue, viasat_queue());
            assert_eq!(plain.up.queue, viasat_queue());
            for bad in ["aqm-at=1.5", "aqm-drop=-0.1", "aqm-at=x", "queue=lots"] {
                let e = lookup(&format!("{base}:{bad}")).unwrap_err().to_string();
                assert!(e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
            }
        }
        // The real plan's 144 Mbit/s in place of the testbed's 150, down only.
        let plan = lookup("geo-viasat-bod:rate=144M").unwrap();
        assert_eq!(plan.down.rate, RateSpec::constant(144_000_000));
        assert_eq!(plan.up.rate, RateSpec::constant(150_000_000));
        assert!(lookup("geo-viasat:rate=fast").is_err());
        // The allocator's parameters belong to the BoD preset only.
        let e = lookup("geo-viasat:phase=random").unwrap_err().to_string();
        assert!(e.contains("unknown parameter \"phase\""), "{e}");
        let both = lookup("geo-viasat-bod:queue=50MB,headroom=2").unwrap();
        assert_eq!(both.down.queue.limit, QueueLimit::Bytes(50_000_000));
        assert_eq!(both.down.bod.as_ref().unwrap().headroom, 2.0);
    }

    #[test]
    fn the_geo_presets_take_a_thin_return_link() {
        for base in ["geo-viasat", "geo-viasat-bod"] {
            // `queue=` sets both directions, but the return buffer wins whatever the order.
            let spec = lookup(&format!("{base}:up-queue=2MB,up=4M,queue=50MB")).unwrap();
            assert_eq!(spec.up.rate, RateSpec::constant(4_000_000), "{base}");
            assert_eq!(spec.up.queue.limit, QueueLimit::Bytes(2_000_000), "{base}");
            assert_eq!(spec.up.queue.discipline, Discipline::DropTail, "{base}");
            assert_eq!(
                spec.down.queue.limit,
                QueueLimit::Bytes(50_000_000),
                "{base}"
            );
            assert_eq!(spec.down.rate, RateSpec::constant(150_000_000), "{base}");
            // `up=` alone: RETURN_BUFFER at the return rate (600 ms at 4 Mbit/s = 300 kB).
            let alone = lookup(&format!("{base}:up=4M")).unwrap();
            assert_eq!(alone.up.queue.limit, QueueLimit::Bytes(300_000), "{base}");
            let lossy = lookup(&format!("{base}:plr=0.000002")).unwrap();
            assert_eq!(lossy.down.loss, LossSpec::Bernoulli { plr: 2e-6 }, "{base}");
            assert_eq!(lossy.up.loss, LossSpec::Bernoulli { plr: 2e-6 }, "{base}");
            assert_eq!(
                lookup(&format!("{base}:plr=0")).unwrap().down.loss,
                LossSpec::None
            );
            for bad in ["up=slow", "up-queue=deep", "up=0", "plr=2", "plr=often"] {
                let e = lookup(&format!("{base}:{bad}")).unwrap_err().to_string();
                assert!(e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
            }
        }
    }

    #[test]
    fn geo_viasat_real_is_the_bod_link_with_the_fitted_return() {
        let r = REAL_RETURN;
        let real = lookup("geo-viasat-real").unwrap();
        let same = lookup(&format!(
            "geo-viasat-bod:up={},up-queue={},cross-up={}:{}s:{}s:exp:random",
            r.rate_bps,
            r.buffer_bytes,
            r.other_bps,
            r.other_on.as_secs(),
            r.other_off.as_secs()
        ))
        .unwrap();
        assert_eq!((&real.down, &real.up), (&same.down, &same.up));
        assert_eq!(real.down, geo_viasat_bod().down);
        // Its parameters are the GEO presets'; `cross-up=none` takes the other traffic off.
        let quiet = lookup("geo-viasat-real:cross-up=none,up=3M").unwrap();
        assert_eq!(quiet.up.cross_traffic, None);
        assert_eq!(quiet.up.rate, RateSpec::constant(3_000_000));
        assert_eq!(quiet.up.queue.limit, QueueLimit::Bytes(r.buffer_bytes));
        let deep = lookup("geo-viasat-real:queue=50MB").unwrap();
        assert_eq!(deep.down.queue.limit, QueueLimit::Bytes(50_000_000));
        assert_eq!(deep.up.queue, real.up.queue);
        assert!(lookup("geo-viasat-real:cross-up=lots").is_err());
    }

    #[test]
    fn leo_takes_its_queue_and_path_change_spread() {
        let extra = |s: &LinkSpec| {
            [&s.down, &s.up].map(|d| d.delay.path_changes.as_ref().unwrap().max_extra)
        };
        let fitted = lookup("leo").unwrap();
        assert_eq!(fitted.down.queue.limit, QueueLimit::Bytes(1_500_000));
        assert_eq!(extra(&fitted), [ms(20), ms(20)]);
        // The values before the fit, as parameters.
        let old = lookup("leo:queue=2.5MB,path-extra=5ms").unwrap();
        assert_eq!(old.down.queue.limit, QueueLimit::Bytes(2_500_000));
        assert_eq!(old.up.queue, fitted.up.queue);
        assert_eq!(extra(&old), [ms(5), ms(5)]);
        for bad in ["queue=big", "path-extra=soon", "rtt=5ms"] {
            let e = lookup(&format!("leo:{bad}")).unwrap_err().to_string();
            assert!(e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
        }
    }

    #[test]
    fn picoquic_satellite_links_send_fast_from_the_client() {
        let spec = lookup("sat-250-3").unwrap();
        assert_eq!(spec.up.rate.nominal_rate_bps(), 250_000_000);
        assert_eq!(spec.down.rate.nominal_rate_bps(), 3_000_000);
        assert_eq!(spec.base_rtt(), Duration::from_millis(600));
        assert!(spec.up.loss.is_none() && spec.up.delay.jitter.is_none());
        let lossy = lookup("sat-250-3:loss=64,jitter=3ms").unwrap();
        assert_eq!(lossy.name, "sat-250-3:loss=64,jitter=3ms");
        for d in [&lossy.up, &lossy.down] {
            assert_eq!(
                d.loss,
                LossSpec::Periodic {
                    every: 64,
                    offset: 28
                }
            );
            assert_eq!(d.delay.jitter, Some(JitterSpec { max: ms(3) }));
        }
        for bad in [
            "sat-250-3:loss=1",
            "sat-250-3:loss=x",
            "sat-250-3:jitter=3",
            "sat-50-10:plr=0.1",
        ] {
            let e = lookup(bad).unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("sat-"), "{bad}: {e}");
        }
    }

    #[test]
    fn periodic_loss_drops_exactly_one_packet_in_n_at_its_offset() {
        let mut spec = lookup("sat-10-2:loss=64").unwrap();
        spec.up.queue.limit = QueueLimit::Bytes(1_000_000_000_000);
        let mut path = crate::Path::<u32>::new(&spec, 7).unwrap();
        let dropped: Vec<u32> = (0..640)
            .filter(|&i| !path.up.enqueue(Duration::ZERO, 100, i).is_queued())
            .collect();
        let expected: Vec<u32> = (0..10).map(|k| 64 * k + 28).collect();
        assert_eq!(dropped, expected);
        assert_eq!(spec.up.loss.mean_loss_rate(), 1.0 / 64.0);
        let bad = LossSpec::Periodic {
            every: 4,
            offset: 4,
        };
        spec.up.loss = bad;
        assert!(
            spec.validate()
                .unwrap_err()
                .to_string()
                .contains("loss.offset")
        );
    }
}
