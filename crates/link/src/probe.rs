//! A link seen the way measurement studies see a real one: idle pings at a fixed interval
//! (their RTTs, or their loss) and the capacity a saturating sender would get, second by
//! second. `satquic presets --probe LINK` prints it; `scripts/leo_calibrate.py` puts it
//! beside a public trace, computing the same statistics from both.
//!
//! The pings cross the real model (queue, jitter, spikes, loss bursts), one small packet
//! each way, the reply sent the moment the request arrives, on an otherwise idle path;
//! the capacity is [`Direction::capacity_bytes_between`](crate::Direction::capacity_bytes_between),
//! what an ideal sender that kept the queue busy gets through (the link's rate, 0 in an
//! outage). The link's slots over the same span are [`Path::slots`], drawn one by one.

use std::time::Duration;

use crate::error::LinkError;
use crate::path::Path;
use crate::spec::LinkSpec;

/// Bytes of an ICMP echo of ping's default 56 data bytes on the wire: 56 + 8 (ICMP) + 20
/// (IPv4).
pub const PING_BYTES: u32 = 84;

/// The ping interval of the Starlink-on-the-Autobahn data set's ping traces: about 14.5 ms
/// between echo requests (Laniewski et al., OJCOMS 2025; consecutive `icmp_seq` in its
/// notebooks' printed traces are 8-20 ms apart, 14.5 ms on average).
pub const AUTOBAHN_PING_INTERVAL: Duration = Duration::from_micros(14_500);

/// What to probe.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    /// How long (pings and capacity alike).
    pub duration: Duration,
    /// Time between echo requests.
    pub ping_interval: Duration,
    /// Bytes of one echo request or reply on the link.
    pub ping_bytes: u32,
    /// The seed the link model is built with.
    pub seed: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            duration: Duration::from_secs(3600),
            ping_interval: AUTOBAHN_PING_INTERVAL,
            ping_bytes: PING_BYTES,
            seed: 1,
        }
    }
}

/// One echo request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ping {
    /// When it was sent.
    pub sent: Duration,
    /// Its RTT, `None` if the request or the reply was lost.
    pub rtt: Option<Duration>,
}

/// What a probe saw.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    /// Every echo request, in order.
    pub pings: Vec<Ping>,
    /// Capacity of the down direction in each whole second, bit/s.
    pub down_bps: Vec<f64>,
    /// ... and of the up direction.
    pub up_bps: Vec<f64>,
}

/// Most pings a probe sends: a day at [`AUTOBAHN_PING_INTERVAL`] (each one is held until
/// the probe ends, some 40 bytes apiece).
pub const MAX_PINGS: u128 = 6_000_000;

/// Probes `spec` for `config.duration`.
pub fn probe(spec: &LinkSpec, config: &ProbeConfig) -> Result<ProbeReport, LinkError> {
    let pings = config.duration.as_nanos() / config.ping_interval.as_nanos().max(1);
    if pings > MAX_PINGS {
        return Err(LinkError::invalid(
            "ping_interval",
            format!(
                "{} pings ({:?} every {:?}) are more than the {MAX_PINGS} a probe holds \
                 (a day every 14.5ms); probe for less time or ping less often",
                pings, config.duration, config.ping_interval
            ),
        ));
    }
    // The queue-occupancy record (a bin per millisecond in which the queue changed, two
    // per ping each way) is not read here: one bin for the whole probe. With 1 ms bins a
    // day of pings took more than 1 GB.
    let truth = crate::truth::GroundTruthConfig {
        occupancy_resolution: config.duration.max(Duration::from_millis(1)),
        ..Default::default()
    };
    let mut path: Path<usize> = Path::with_ground_truth(spec, config.seed, truth)?;
    let pings = ping(&mut path, config);
    let seconds = config.duration.as_secs();
    let per_second = |d: &crate::Direction<usize>| -> Vec<f64> {
        (0..seconds)
            .map(|s| {
                let bytes = d
                    .capacity_bytes_between(Duration::from_secs(s), Duration::from_secs(s + 1))
                    .unwrap_or(0);
                bytes as f64 * 8.0
            })
            .collect()
    };
    Ok(ProbeReport {
        down_bps: per_second(&path.down),
        up_bps: per_second(&path.up),
        pings,
    })
}

/// Sends the echo requests and collects their replies: each request goes up, its reply
/// goes down the moment the request arrives.
fn ping(path: &mut Path<usize>, config: &ProbeConfig) -> Vec<Ping> {
    let interval_ns = config.ping_interval.as_nanos().max(1);
    let count = config.duration.as_nanos() / interval_ns;
    let mut pings: Vec<Ping> = (0..count)
        .map(|i| Ping {
            sent: Duration::from_nanos(u64::try_from(i * interval_ns).unwrap_or(u64::MAX)),
            rtt: None,
        })
        .collect();
    let mut next = 0;
    loop {
        let send_at = pings.get(next).map(|p| p.sent);
        let Some(now) = [send_at, path.poll_timeout()].into_iter().flatten().min() else {
            break;
        };
        if send_at == Some(now) {
            path.up.enqueue(now, config.ping_bytes, next);
            next += 1;
        }
        while let Some(request) = path.up.poll_deliver(now) {
            path.down
                .enqueue(request.arrival, config.ping_bytes, request.payload);
        }
        while let Some(reply) = path.down.poll_deliver(now) {
            let p = &mut pings[reply.payload];
            p.rtt = Some(reply.arrival - p.sent);
        }
    }
    pings
}
