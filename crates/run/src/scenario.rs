//! What to simulate: a link, flows sharing it, a seed and a time cap.
//!
//! Every type here is plain data with serde, so the lab can read scenarios from TOML.
//! Durations are written like the link crate writes them: strings with a unit
//! (`"300ms"`, `"1.5s"`); sizes are bytes.

use std::time::Duration;

use satquic_link::LinkSpec;
use satquic_link::units::{duration_str, parse_rate_bps};
use serde::{Deserialize, Serialize};

/// One megabyte as the record counts it: 1,000,000 bytes (decimal, like the seeds' "200 MB"
/// downloads and the link crate's `"36 MB"` queues). `chunks.csv` has one row per MB.
pub const MB: u64 = 1_000_000;

/// One mebibyte, 1,048,576 bytes (QIR-SE's "10 MiB" file).
pub const MIB: u64 = 1 << 20;

/// The default flow-control windows: 256 MiB, so that they never limit (seed 000 raised
/// quicly's 16 MB default to 256 MB for the same reason).
pub const UNLIMITED_WINDOW: u64 = 256 * MIB;

/// Default time cap of a run, as in the seeds' campaigns.
pub const DEFAULT_TIME_CAP: Duration = Duration::from_secs(60);

/// A complete run description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The path all flows share (one bottleneck per direction).
    pub link: LinkSpec,
    /// The flows, each its own QUIC connection between its own client and server endpoint.
    pub flows: Vec<FlowSpec>,
    /// Seeds everything random in the run: the link's processes, quinn-proto's RNGs,
    /// connection IDs.
    pub seed: u64,
    /// The run stops here even if flows are unfinished (they are reported as capped).
    #[serde(default = "default_time_cap", with = "duration_str")]
    pub time_cap: Duration,
}

/// A sender-side shaper: a FIFO served at `rate_bps`, holding at most `latency` worth of
/// data (tc TBF's `latency`); no delay of its own. TBF's burst allowance is not modelled
/// (200 kb in the seeds, 0.1 ms at 200 Mbit/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperSpec {
    /// Rate in bit/s.
    pub rate_bps: u64,
    /// Queue limit expressed as time at `rate_bps`.
    #[serde(with = "duration_str")]
    pub latency: Duration,
}

impl ShaperSpec {
    /// The seeds' server shaper: 200 Mbit/s, 1.5 s latency (seed 000 Sec. 4.7).
    pub fn seeds_server() -> Self {
        ShaperSpec {
            rate_bps: 200_000_000,
            latency: Duration::from_millis(1500),
        }
    }

    /// Parses a sender cap as `satquic sim --sender-cap` and campaign specs write it:
    /// `RATE[:LATENCY]` with RATE in bit/s as [`parse_rate_bps`] reads it (`200M:1.5s`;
    /// without a latency the seeds' 1.5 s), or `none` for no cap. Errors are one line.
    pub fn parse_cap(text: &str) -> Result<Option<Self>, String> {
        if text.trim().eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        let (rate, latency) = match text.split_once(':') {
            Some((r, l)) => (r, Some(l)),
            None => (text, None),
        };
        let rate_bps = parse_rate_bps(rate).map_err(|_| {
            format!("invalid sender-cap '{text}': expected RATE[:LATENCY] like 200M:1.5s, or none")
        })?;
        let latency = match latency {
            Some(l) => satquic_link::units::parse_duration(l)
                .map_err(|e| format!("invalid sender-cap latency: {e}"))?,
            None => Self::seeds_server().latency,
        };
        if latency.is_zero() {
            return Err(format!(
                "invalid sender-cap '{text}': latency must be above 0"
            ));
        }
        Ok(Some(Self { rate_bps, latency }))
    }
}

fn default_time_cap() -> Duration {
    DEFAULT_TIME_CAP
}

impl Scenario {
    /// One download of `bytes` starting at time zero, the seeds' basic experiment.
    pub fn download(link: LinkSpec, transport: TransportSpec, bytes: u64, seed: u64) -> Self {
        Scenario {
            link,
            flows: vec![FlowSpec {
                start: Duration::ZERO,
                transport,
                workload: Workload::Download { bytes },
            }],
            seed,
            time_cap: DEFAULT_TIME_CAP,
        }
    }

    /// The same scenario with another time cap.
    pub fn with_time_cap(mut self, time_cap: Duration) -> Self {
        self.time_cap = time_cap;
        self
    }
}

/// One flow: a client that connects at `start` and runs its workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// When the client starts its handshake, since the start of the run.
    #[serde(default, with = "duration_str")]
    pub start: Duration,
    /// Congestion control and windows, applied to both endpoints of the connection.
    #[serde(default)]
    pub transport: TransportSpec,
    /// What the flow transfers.
    pub workload: Workload,
}

/// What a flow transfers. The server is always the data sender (downloads, as in all the
/// seeds' experiments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Workload {
    /// The client opens one bidirectional stream and sends a small request naming the
    /// size; the server answers with `bytes` bytes and finishes the stream (the seeds' perf
    /// tool and HTTP/0.9). The flow completes when the client has read the whole stream.
    Download {
        /// Response size in bytes.
        bytes: u64,
    },
    /// A bulk download without a size: the server sends until the client has received for
    /// `duration` after its request, then the client closes (the thesis' 180 s bulk flows,
    /// iperf's `-t`).
    Timed {
        /// How long the client receives, counted from the flow's start.
        #[serde(with = "duration_str")]
        duration: Duration,
    },
}

impl Workload {
    /// Bytes the client asks for (`u64::MAX` for a timed flow: unlimited).
    pub fn requested_bytes(&self) -> u64 {
        match self {
            Workload::Download { bytes } => *bytes,
            Workload::Timed { .. } => u64::MAX,
        }
    }
}

/// Transport settings of one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransportSpec {
    /// Congestion control as a satquic-cc spec string (`"cubic"`, `"cubic+search"`,
    /// `"newreno+hystart++"`, ...). Only the server's (the data sender's) controller
    /// reports events.
    pub cc: String,
    /// Initial congestion window in bytes; `None` keeps the controller's default.
    pub initial_window: Option<u64>,
    /// Connection-level receive window advertised by each endpoint, bytes.
    pub receive_window: u64,
    /// Per-stream receive window advertised by each endpoint, bytes.
    pub stream_receive_window: u64,
    /// Maximum unacknowledged data the sender keeps, bytes.
    pub send_window: u64,
    /// RTT assumed before the first sample; `None` keeps quinn's 333 ms.
    #[serde(with = "duration_str::option")]
    pub initial_rtt: Option<Duration>,
    /// Largest UDP payload sent, bytes (quinn's `initial_mtu`; the IP/UDP headers come on
    /// top on the link). Default 1200, QUIC's minimum and quinn's initial value.
    pub mtu: u16,
    /// Let quinn probe for a larger MTU (PLPMTUD). Off by default for reproducible packet
    /// sizes; the link has no MTU limit of its own, so probing would climb to quinn's
    /// upper bound.
    pub mtu_discovery: bool,
    /// When the client raises the connection-level window it advertises (MAX_DATA).
    pub window_update: WindowUpdate,
    /// A rate limiter on the server's interface, in front of the down link (seed 000
    /// Sec. 4.7: tc TBF at 200 Mbit/s "so that loss comes from the satellite queue"). It
    /// also bounds how fast slow start can fill the bottleneck queue. Each flow's server
    /// has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_shaper: Option<ShaperSpec>,
}

/// The receiver's policy for announcing more connection-level credit (MAX_DATA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowUpdate {
    /// quinn's own: the credit follows the bytes read and is announced whenever it grew
    /// by 1/8 of the window, so the sender may have almost a whole window outstanding.
    #[default]
    Quinn,
    /// quicly's (seed 000 Sec. 4.6): the credit is raised to "read + window" only once
    /// more than half of the current credit is used, so the sender sees between half a
    /// window and a window - not BDP-aware, which is what stalled the seeds' 16 MB runs.
    Quicly,
}

impl Default for TransportSpec {
    fn default() -> Self {
        TransportSpec {
            cc: "cubic".to_string(),
            initial_window: None,
            receive_window: UNLIMITED_WINDOW,
            stream_receive_window: UNLIMITED_WINDOW,
            send_window: UNLIMITED_WINDOW,
            initial_rtt: None,
            mtu: 1200,
            mtu_discovery: false,
            window_update: WindowUpdate::Quinn,
            sender_shaper: None,
        }
    }
}

impl TransportSpec {
    /// Default settings with congestion control `cc`.
    pub fn with_cc(cc: impl Into<String>) -> Self {
        TransportSpec {
            cc: cc.into(),
            ..TransportSpec::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_defaults_never_limit() {
        let t = TransportSpec::default();
        assert_eq!(t.receive_window, 256 * 1024 * 1024);
        assert_eq!(t.mtu, 1200);
        assert!(!t.mtu_discovery);
    }

    #[test]
    fn flow_round_trips_through_json() {
        let flow = FlowSpec {
            start: Duration::from_millis(1500),
            transport: TransportSpec::with_cc("cubic+search"),
            workload: Workload::Timed {
                duration: Duration::from_secs(180),
            },
        };
        let json = serde_json::to_string(&flow).unwrap();
        assert!(json.contains("\"1500ms\""), "{json}");
        let back: FlowSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, flow);
    }
}
