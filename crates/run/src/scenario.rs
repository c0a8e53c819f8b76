//! What to simulate: a link, flows sharing it, a seed and a time cap.
//!
//! Every type here is plain data with serde, so the lab can read scenarios from TOML.
//! Durations are written like the link crate writes them: strings with a unit
//! (`"300ms"`, `"1.5s"`); sizes are bytes.

use std::time::Duration;

use satquic_cc::CcSpec;
use satquic_cc::profile::ReceiveWindows;
use satquic_link::units::{duration_str, parse_rate_bps};
use satquic_link::{Direction, DirectionSpec, LinkError, LinkSpec, QueueLimit};
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
    /// Resumption: every flow first runs its workload on a first connection; this long
    /// after the last first connection ended, each flow connects again and resumes, with
    /// the TLS session ticket (0-RTT), the address-validation token and the Careful
    /// Resume parameters (RFC 9959) its first connection left. The record describes the
    /// resumed connections; the first ones are summarised in each flow's
    /// `first_connection`. `None`: one connection per flow.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_str::option"
    )]
    pub resume_after: Option<Duration>,
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

    /// The cap as a link direction: its rate, no delay, and a drop-tail queue holding
    /// `latency` at that rate (at least 64 KiB). The simulator puts one in front of each
    /// flow's sender, `satquic link --sender-cap` one in front of the down direction.
    pub fn direction<T>(&self, seed: u64) -> Result<Direction<T>, LinkError> {
        let limit = (u128::from(self.rate_bps) * self.latency.as_nanos() / 8_000_000_000) as u64;
        let spec = DirectionSpec::simple(
            self.rate_bps,
            Duration::ZERO,
            QueueLimit::Bytes(limit.max(Self::MIN_QUEUE_BYTES)),
        );
        Direction::new(&spec, seed)
    }

    /// Smallest queue [`ShaperSpec::direction`] gives the cap.
    pub const MIN_QUEUE_BYTES: u64 = 1 << 16;

    /// The cap `auto` means (the default of `satquic sim` and campaign specs): the seeds'
    /// cap, except where the data direction of the link (nominal rate `link_bps`) is
    /// faster than it, so the cap would be the bottleneck; there no cap.
    pub fn auto_for(link_bps: u64) -> Option<Self> {
        let seeds = Self::seeds_server();
        (link_bps <= seeds.rate_bps).then_some(seeds)
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
        if rate.trim().ends_with('B') {
            return Err(format!(
                "invalid sender-cap '{text}': a rate is in bits per second, not bytes; write \
                 e.g. 200M or 200Mbit (200 MB/s is 1600M)"
            ));
        }
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
                direction: DataDirection::Download,
            }],
            seed,
            time_cap: DEFAULT_TIME_CAP,
            resume_after: None,
        }
    }

    /// The same scenario with another time cap.
    pub fn with_time_cap(mut self, time_cap: Duration) -> Self {
        self.time_cap = time_cap;
        self
    }

    /// The same scenario, resumed `gap` after its first connections ([`Self::resume_after`]).
    pub fn resumed_after(mut self, gap: Duration) -> Self {
        self.resume_after = Some(gap);
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
    /// Which end sends the data: the server (a download, the default) or the client (an
    /// upload, as picoquic's satellite tests do). All flows of a scenario go one way.
    #[serde(default, skip_serializing_if = "DataDirection::is_download")]
    pub direction: DataDirection,
}

/// Which end of a flow sends the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataDirection {
    /// The server sends, the client receives (the seeds' downloads).
    #[default]
    Download,
    /// The client sends right after the handshake, the server receives (`satquic sim -R`,
    /// picoquic's satellite tests). The run is timed to the last byte the server has.
    Upload,
}

impl DataDirection {
    /// True for [`DataDirection::Download`].
    pub fn is_download(&self) -> bool {
        *self == DataDirection::Download
    }
}

/// What a flow transfers. The data sender is the server unless the flow's
/// [`DataDirection`] says upload.
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
    /// Congestion control: a satquic-cc spec (`"cubic"`, `"cubic+search"`,
    /// `"newreno+hystart++"`, ...), parsed where it entered and written as its text. Only
    /// the server's (the data sender's) controller reports events.
    pub cc: CcSpec,
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
    /// What the data sender asks of the receiver's ACKs (draft-ietf-quic-ack-frequency);
    /// `None`: RFC 9000's default, an ACK every 2nd ack-eliciting packet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_frequency: Option<AckFrequencySpec>,
    /// Auto-tune the stream receive window (quinn-proto patch 5): it starts at
    /// [`AUTOTUNE_START_WINDOW`] (quinn's default, or `stream_receive_window` if smaller)
    /// and doubles while the application reads a window faster than the path delivers
    /// it, up to `stream_receive_window`. Off: the window is `stream_receive_window`
    /// from the start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub receive_window_autotune: bool,
    /// A probe timeout with nothing new to send resends the stream data of the oldest
    /// packet in flight instead of a PING (quinn-proto patch 11; RFC 9002 Sec. 6.2.4
    /// allows either): a lost last packet reaches the receiver one round trip sooner.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pto_probe_data: bool,
}

/// Where an auto-tuned stream receive window starts: quinn's default stream window
/// (1.25 MB, 100 Mbit/s x 100 ms), enough for 16.7 Mbit/s at a 600 ms RTT.
pub const AUTOTUNE_START_WINDOW: u64 = 1_250_000;

/// An ACK_FREQUENCY request (draft-ietf-quic-ack-frequency; quinn-proto 0.11 implements
/// the draft-04 wire format and both ends of it). The data sender asks at the start of
/// the connection; quinn keeps the values fixed for the connection and lowers the
/// requested delay to the RTT (at least 25 ms) on short paths. Written `N[:DELAY]`, e.g.
/// `32:25ms`: an ACK at least every N ack-eliciting packets and at most DELAY after the
/// first unacknowledged one. `N:DELAY:cwnd/D` also asks for an ACK at least every
/// cwnd / D bytes and asks again whenever the window doubled or halved the packets per
/// ACK (our quinn-proto patch, vendor/quinn-proto/SATQUIC-PATCH.md): more ACKs
/// while the window is small, N packets per ACK in bulk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckFrequencySpec {
    /// The receiver ACKs once it has this many unacknowledged ack-eliciting packets
    /// (the draft's Ack-Eliciting Threshold plus one; RFC 9000 Sec. 13.2.2: 2).
    pub packets_per_ack: u32,
    /// The draft's Requested Max Ack Delay.
    #[serde(with = "duration_str")]
    pub max_ack_delay: Duration,
    /// Out-of-order packets that make the receiver ACK at once (the draft's Reordering
    /// Threshold; it recommends the sender's packet threshold minus one, RFC 9002's 3 - 1).
    #[serde(default = "AckFrequencySpec::default_reordering_threshold")]
    pub reordering_threshold: u32,
    /// Also an ACK at least every congestion window / this many bytes, re-requested as
    /// the window changes (`packets_per_ack` is then the most packets per ACK); `None`:
    /// the fixed request. Written `:cwnd/D` after the delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_divisor: Option<u32>,
}

impl AckFrequencySpec {
    /// RFC 9002 Sec. 6.1.1's packet threshold (3) minus one, as the draft recommends.
    pub const DEFAULT_REORDERING_THRESHOLD: u32 = satquic_cc::profile::REORDERING_THRESHOLD;
    /// Delay used when `N[:DELAY]` gives none: RFC 9000's default max_ack_delay.
    pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);
    /// Largest N accepted.
    pub const MAX_PACKETS_PER_ACK: u32 = 1 << 20;

    fn default_reordering_threshold() -> u32 {
        Self::DEFAULT_REORDERING_THRESHOLD
    }

    /// Largest D of `:cwnd/D`.
    pub const MAX_WINDOW_DIVISOR: u32 = 1024;

    /// Parses `N[:DELAY][:cwnd/D]` (or `off` for `None`); errors are one line.
    pub fn parse(text: &str) -> Result<Option<Self>, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("off") || t.eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        let bad = || {
            format!(
                "invalid ack frequency '{text}': expected N[:DELAY][:cwnd/D] like 32:25ms or 16:25ms:cwnd/8, or off"
            )
        };
        let (t, window_divisor) = match t.rsplit_once(':') {
            Some((rest, w)) if w.trim().to_ascii_lowercase().starts_with("cwnd/") => {
                let d: u32 = w.trim()[5..].trim().parse().map_err(|_| bad())?;
                if !(1..=Self::MAX_WINDOW_DIVISOR).contains(&d) {
                    return Err(format!(
                        "ack frequency: the window divisor must be between 1 and {}, got {d}",
                        Self::MAX_WINDOW_DIVISOR
                    ));
                }
                (rest, Some(d))
            }
            _ => (t, None),
        };
        let (n, delay) = match t.split_once(':') {
            Some((n, d)) => (n, Some(d)),
            None => (t, None),
        };
        let packets_per_ack: u32 = n.trim().parse().map_err(|_| bad())?;
        let max_ack_delay = match delay {
            Some(d) => satquic_link::units::parse_duration(d)
                .map_err(|e| format!("invalid ack frequency delay: {e}"))?,
            None => Self::DEFAULT_MAX_ACK_DELAY,
        };
        let spec = AckFrequencySpec {
            packets_per_ack,
            max_ack_delay,
            reordering_threshold: Self::DEFAULT_REORDERING_THRESHOLD,
            window_divisor,
        };
        spec.validate()?;
        Ok(Some(spec))
    }

    /// Checks the ranges quinn and the draft accept; errors are one line.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=Self::MAX_PACKETS_PER_ACK).contains(&self.packets_per_ack) {
            return Err(format!(
                "ack frequency: packets per ACK must be between 1 and {}, got {}",
                Self::MAX_PACKETS_PER_ACK,
                self.packets_per_ack
            ));
        }
        // The draft's min_ack_delay floor (quinn advertises 1 ms) and a sane ceiling.
        if self.max_ack_delay < Duration::from_millis(1)
            || self.max_ack_delay > Duration::from_secs(10)
        {
            return Err("ack frequency: max ACK delay must be between 1 ms and 10 s".into());
        }
        Ok(())
    }
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
            cc: CcSpec::parse("cubic").expect("cubic parses"),
            initial_window: None,
            receive_window: UNLIMITED_WINDOW,
            stream_receive_window: UNLIMITED_WINDOW,
            send_window: UNLIMITED_WINDOW,
            initial_rtt: None,
            mtu: 1200,
            mtu_discovery: false,
            window_update: WindowUpdate::Quinn,
            sender_shaper: None,
            ack_frequency: None,
            receive_window_autotune: false,
            pto_probe_data: false,
        }
    }
}

impl TransportSpec {
    /// The receive windows an endpoint of this spec advertises, for every controller the
    /// profile's included ([`satquic_cc::profile::apply_satellite_transport`] takes them):
    /// satquic's own are BDP-sized for any path (256 MiB), and an auto-tuned window
    /// (`receive_window_autotune`) costs first connections on fast GEO paths about a
    /// second (BENCHMARKS.md, "Receive windows: auto-tuning").
    pub fn receive_windows(&self) -> ReceiveWindows {
        if self.receive_window_autotune {
            ReceiveWindows::AutoTune {
                start: Some(self.stream_receive_window.min(AUTOTUNE_START_WINDOW)),
                max: self.stream_receive_window,
                connection: Some(self.receive_window),
            }
        } else {
            ReceiveWindows::Fixed {
                stream: self.stream_receive_window,
                connection: self.receive_window,
            }
        }
    }

    /// Default settings with congestion control `cc`.
    pub fn with_spec(cc: CcSpec) -> Self {
        TransportSpec {
            cc,
            ..TransportSpec::default()
        }
    }

    /// Default settings with congestion control `cc`, a spec written in code (tests,
    /// examples); a spec from input is parsed with [`CcSpec::parse`] and given to
    /// [`Self::with_spec`].
    ///
    /// # Panics
    ///
    /// If `cc` does not parse.
    pub fn with_cc(cc: impl AsRef<str>) -> Self {
        Self::with_spec(CcSpec::parse(cc.as_ref()).unwrap_or_else(|e| panic!("{e}")))
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
    fn ack_frequency_parses_its_grammar_and_refuses_in_one_line() {
        let a = AckFrequencySpec::parse("16:25ms:cwnd/4").unwrap().unwrap();
        assert_eq!(
            (a.packets_per_ack, a.max_ack_delay, a.window_divisor),
            (16, Duration::from_millis(25), Some(4))
        );
        let b = AckFrequencySpec::parse("32:CWND/8").unwrap().unwrap();
        assert_eq!(
            (b.packets_per_ack, b.max_ack_delay, b.window_divisor),
            (32, AckFrequencySpec::DEFAULT_MAX_ACK_DELAY, Some(8))
        );
        let c = AckFrequencySpec::parse("16:25ms").unwrap().unwrap();
        assert_eq!(c.window_divisor, None);
        // The fixed request serializes as before (no window_divisor key).
        assert!(
            !serde_json::to_string(&c)
                .unwrap()
                .contains("window_divisor")
        );
        assert_eq!(AckFrequencySpec::parse("off").unwrap(), None);
        for bad in [
            "16:25ms:cwnd/0",
            "16:25ms:cwnd/x",
            "16:25ms:cwnd/2000",
            "cwnd/4",
            "16:25ms:win/4",
        ] {
            let e = AckFrequencySpec::parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn flow_round_trips_through_json() {
        let flow = FlowSpec {
            start: Duration::from_millis(1500),
            transport: TransportSpec::with_cc("cubic+search"),
            workload: Workload::Timed {
                duration: Duration::from_secs(180),
            },
            direction: DataDirection::Download,
        };
        let json = serde_json::to_string(&flow).unwrap();
        assert!(json.contains("\"1500ms\""), "{json}");
        let back: FlowSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, flow);
    }
}
