//! The discrete-event loop: real quinn-proto endpoints over the link model, in virtual time.
//!
//! # Time
//!
//! Virtual time is a `Duration` since the run's epoch. quinn-proto wants `Instant`s, so the
//! run captures one `Instant` at its start (`base`) and hands quinn `base + t`. Only
//! differences of such instants ever matter to quinn, and `(base + a) - (base + b) = a - b`
//! exactly, so the value of `base` (the only wall-clock read) cannot influence a run.
//!
//! # The loop
//!
//! Events are: flow starts, link deliveries (`poll_timeout` of each link direction),
//! connection timers (`Connection::poll_timeout`: loss detection, PTO, delayed ACKs,
//! pacing, idle), the end of timed flows and the 10 ms sampling grid. At each event time,
//! in this fixed order:
//!
//! 1. flows whose start has come connect;
//! 2. every datagram that has reached the client (link "down") and then the server
//!    ("up") is handed to its endpoint (`Endpoint::handle`), and the resulting events to
//!    the connection;
//! 3. per flow (in flow order), per connection (client, then server): expired timers
//!    (`handle_timeout`), endpoint events, application events and actions, then
//!    `poll_transmit` until it returns `None` - each datagram goes into the link. quinn's
//!    pacer is what makes `poll_transmit` return `None` early; it then reports the pacing
//!    time through `poll_timeout`, which becomes a loop event;
//! 4. on a grid point, one series row per running flow.
//!
//! `poll_transmit` is always called with `max_datagrams = 1` and segmentation offload off,
//! so the link sees individual datagrams. Each datagram occupies its UDP payload plus
//! [`IP_UDP_OVERHEAD_BYTES`] on the link.
//!
//! # Applications
//!
//! A flow's data goes one way ([`DataDirection`](satquic_run::DataDirection)). On a
//! download the client opens one bidirectional stream once connected and sends an 8-byte
//! request (the response size, big-endian; `u64::MAX` for a timed flow), then FIN. On an
//! upload the client writes the data on that stream right away and the server reads it;
//! the link is then mirrored, so `down` is always the data direction. What follows says
//! "client" and "server" for a download's receiver and sender. The server
//! answers with that many zero bytes and finishes the stream. The client reads with
//! `ordered = false` and tracks the in-order prefix itself ([`InOrder`]): quinn-proto
//! 0.11's ordered reassembly refuses more than 1024 gaps in a stream buffer and kills the
//! connection ("too many gaps in stream buffer"), which the Viasat AQM (dropping one
//! arrival in four) produces within a second of overshoot. Reading unordered keeps the
//! connection alive; the per-MB times still count only bytes the application would have
//! in order. Flow-control credit then follows bytes received rather than the in-order
//! prefix, so a window is a little more generous while there are holes. The server
//! writes lazily, keeping
//! one to two MB more written than it has sent, so a 200 MB download does not hold
//! 200 MB in quinn's send buffer; the sender is never application-limited by this (it can
//! send at most one window per event). The client reads everything as soon as it arrives.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, NoneTokenStore, ServerConfig, StreamEvent, StreamId, TokenMemoryCache, TokenStore,
    VarInt, WriteError,
};
use satquic_cc::{CcEvent, EventSink, Observation, ResumeParams};
use satquic_link::{Direction, GroundTruthConfig, Path};

use satquic_run::probe::{
    EventCollector, ProbeFactory, ProbeHandle, ProbeState, SharedFactory,
    careful_resume_observation, controller_factory, read_probe,
};
use satquic_run::record::{
    self, ChunkRow, FlowDrops, FlowEvent, FlowStatus, LinkObservation, RunRecord, SeriesRow,
    push_mb_times,
};
use satquic_run::scenario::{MB, Scenario, TransportSpec, WindowUpdate, Workload};
use satquic_run::transport::{EndpointSettings, transport_config};
use satquic_run::{InOrder, ZEROS};

use crate::SimError;
use crate::null_cipher::{NullClientConfig, NullServerConfig, PacketCipher};
use crate::stack_qlog::FlowQlog;
use crate::tls::{self, SeededCidGenerator, Sessions, rng_seed_bytes, sub_seed};
use satquic_run::qlog::{StackQlog, Vantage};

use satquic_link::IP_UDP_OVERHEAD_BYTES;

/// Resolution of `series.csv`.
pub const SERIES_STEP: Duration = Duration::from_millis(10);

/// Trailing window over which the series' delivery rate is measured.
const DELIVERY_RATE_WINDOW: Duration = Duration::from_millis(100);

/// The server keeps at least this much written but unsent data (bytes) ...
const SEND_AHEAD_MIN: u64 = MB;
/// ... and tops up to this much when it falls below.
const SEND_AHEAD_MAX: u64 = 2 * MB;

/// Sub-seed domains: one independent random stream per consumer.
const SEED_LINK: u64 = 1;
const SEED_CLIENT_ENDPOINT: u64 = 2;
const SEED_SERVER_ENDPOINT: u64 = 3;
const SEED_CLIENT_CIDS: u64 = 4;
const SEED_SERVER_CIDS: u64 = 5;
const SEED_INITIAL_DCID: u64 = 6;
const SEED_SHAPER: u64 = 7;
/// The congestion controller's random choices (BBRv3's probe timing), per flow.
const SEED_CC: u64 = 8;

/// Options that do not change the simulated behaviour, only what is kept. (The qlog is
/// made from the record when it is written: [`satquic_run::WriteOptions`].)
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Keep every datagram offered to the link (time, direction, size, admitted): used
    /// by the determinism tests; costs memory on long runs.
    pub datagram_trace: bool,
    /// Keep the bytes of the first this many datagrams offered to the link (both
    /// directions, in order): lets a test look at what is on the wire.
    pub datagram_bytes: usize,
    /// Keep, per flow, 32 bytes exported from the TLS session (RFC 5705 exporter): they
    /// differ between runs with the same seed, proving TLS randomness is real.
    pub tls_exporter: bool,
    /// Set from another thread to stop the run early (a wall-clock timeout in the lab):
    /// the event loop checks it every [`CANCEL_CHECK_STEPS`] steps and the run returns
    /// [`SimError::Cancelled`]. It cannot change a run that completes.
    pub cancel: Option<Arc<AtomicBool>>,
    /// How packets are protected: the TLS suite's AEAD, or the null cipher that skips the
    /// cipher work and gives the same record ([`crate::null_cipher`]).
    pub packet_cipher: PacketCipher,
    /// Have quinn-proto write its own qlog (packet sent, received and lost, recovery
    /// metrics) for every connection, in virtual time ([`crate::stack_qlog`]); returned in
    /// [`RunOutput::stack_qlogs`]. One JSON event per packet: only when asked for.
    pub stack_qlog: bool,
}

/// How many event-loop steps pass between two looks at [`RunOptions::cancel`] (a few
/// milliseconds of wall time).
pub const CANCEL_CHECK_STEPS: u64 = 4096;

/// One datagram offered to the link (see [`RunOptions::datagram_trace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEntry {
    /// Virtual time.
    pub at: Duration,
    /// `true` for server -> client.
    pub down: bool,
    /// Flow index.
    pub flow: u32,
    /// UDP payload size in bytes.
    pub size_bytes: u32,
    /// Whether the link queued it (false: dropped).
    pub admitted: bool,
}

/// What a run produced beyond the record.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// The deterministic record.
    pub record: RunRecord,
    /// Datagram trace, if asked for.
    pub trace: Vec<TraceEntry>,
    /// The first [`RunOptions::datagram_bytes`] datagrams, if asked for.
    pub datagrams: Vec<Vec<u8>>,
    /// quinn-proto's qlog of each connection and end, with [`RunOptions::stack_qlog`]
    /// (merge them with the record: [`satquic_run::qlog::connection_qlog_files`]).
    pub stack_qlogs: Vec<StackQlog>,
    /// TLS exporter values per flow, if asked for.
    pub tls_exporter: Vec<Option<[u8; 32]>>,
}

/// Runs a scenario to its end and returns its record.
pub fn run(scenario: &Scenario) -> Result<RunRecord, SimError> {
    Ok(run_with(scenario, &RunOptions::default())?.record)
}

/// Runs a scenario with options.
pub fn run_with(scenario: &Scenario, options: &RunOptions) -> Result<RunOutput, SimError> {
    if let Some(gap) = scenario.resume_after {
        return crate::resume::run_resumed(scenario, options, gap);
    }
    let shared = Shared::new(
        scenario.flows.len(),
        Sessions::FirstOnly,
        options.packet_cipher,
    );
    Ok(Simulation::run_pass(scenario, options, &shared, &[])?.output)
}

/// What the endpoints of a run keep beyond one connection: TLS sessions and, per flow,
/// the client's address-validation tokens (NEW_TOKEN, RFC 9000 Sec. 8.1.3). A resumed
/// run's two passes share one.
pub(crate) struct Shared {
    sessions: Sessions,
    server_crypto: Arc<dyn quinn_proto::crypto::ServerConfig>,
    client_crypto: Arc<dyn quinn_proto::crypto::ClientConfig>,
    tokens: Vec<Arc<dyn TokenStore>>,
    /// Per flow, the server's log of used tokens (`None`: the server sends no NEW_TOKEN).
    token_logs: Vec<Option<Arc<satquic_run::token_log::SingleUseTokenLog>>>,
}

impl Shared {
    pub(crate) fn new(flows: usize, sessions: Sessions, cipher: PacketCipher) -> Self {
        let tokens = (0..flows)
            .map(|_| -> Arc<dyn TokenStore> {
                match sessions {
                    Sessions::FirstOnly => Arc::new(NoneTokenStore),
                    Sessions::Resumable => Arc::new(TokenMemoryCache::new(1, 2)),
                }
            })
            .collect();
        let token_logs = (0..flows)
            .map(|_| (sessions == Sessions::Resumable).then(Default::default))
            .collect();
        let server_crypto: Arc<dyn quinn_proto::crypto::ServerConfig> =
            tls::server_crypto(sessions);
        let client_crypto: Arc<dyn quinn_proto::crypto::ClientConfig> =
            tls::client_crypto(sessions);
        let (server_crypto, client_crypto) = match cipher {
            PacketCipher::Tls => (server_crypto, client_crypto),
            PacketCipher::Null => (
                Arc::new(NullServerConfig(server_crypto)) as _,
                Arc::new(NullClientConfig(client_crypto)) as _,
            ),
        };
        Shared {
            sessions,
            server_crypto,
            client_crypto,
            tokens,
            token_logs,
        }
    }
}

/// One pass of a run: its output and, for each flow, what its data sender could save for
/// Careful Resume when the flow ended (only with [`Sessions::Resumable`]).
pub(crate) struct Pass {
    pub(crate) output: RunOutput,
    pub(crate) observations: Vec<Option<Result<Observation, String>>>,
    /// Per flow: (the data sender's address, the receiver's address).
    pub(crate) endpoints: Vec<(SocketAddr, SocketAddr)>,
    /// Per flow: whether the client's 0-RTT data was accepted.
    pub(crate) zero_rtt: Vec<bool>,
    /// Per flow: when it ended.
    pub(crate) ended_at: Vec<Duration>,
}

/// What travels through the link.
struct Packet {
    flow: u32,
    data: Vec<u8>,
}

struct Conn {
    handle: ConnectionHandle,
    conn: Connection,
    /// Something happened that may let the connection send (a datagram, a timer, an
    /// application action): poll it for transmits. This is how quinn's own driver behaves,
    /// and it matters: quinn's pacer sets its timer for when a whole burst of tokens is
    /// back, but a poll before that would already release single packets, so polling on
    /// unrelated events (another flow's packet, a sampling tick) would change the pacing.
    dirty: bool,
}

/// The receiving application of one flow (the client of a download, the server of an
/// upload).
#[derive(Default)]
struct Reader {
    stream: Option<StreamId>,
    /// Bytes received in order (the prefix an ordered reader would have).
    received: u64,
    in_order: InOrder,
    /// Virtual time at which the client had `k + 1` MB in order.
    mb_times: Vec<Duration>,
    /// ... and had received `k + 1` MB in any order (`read_total`).
    received_mb_times: Vec<Duration>,
    completed_at: Option<Duration>,
    /// Bytes read from the stream in any order (what quinn counts for flow control).
    read_total: u64,
    /// With [`WindowUpdate::Quicly`]: the connection credit announced so far.
    quicly_credit: Option<u64>,
}

/// The sending application of one flow (the server of a download, the client of an
/// upload).
#[derive(Default)]
struct Writer {
    stream: Option<StreamId>,
    /// Download: the request read so far.
    request: Vec<u8>,
    to_send: Option<u64>,
    written: u64,
    finished: bool,
    /// UDP payload bytes the sending connection has sent.
    udp_sent: u64,
}

struct FlowRt {
    index: u32,
    start: Duration,
    workload: Workload,
    /// The client sends (an upload).
    upload: bool,
    transport: TransportSpec,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    client_ep: Endpoint,
    server_ep: Endpoint,
    client_cfg: ClientConfig,
    server_cfg: Arc<ServerConfig>,
    client: Option<Conn>,
    server: Option<Conn>,
    status: FlowStatus,
    capped: bool,
    connected_at: Option<Duration>,
    reader: Reader,
    writer: Writer,
    probe: ProbeHandle,
    events_sink: Arc<EventCollector>,
    /// Events kept for the record (Sample events thinned to one per series step).
    events: Vec<CcEvent>,
    next_sample_event: Duration,
    /// Smoothed RTT when the (real and shadow) slow-start exit was reported.
    rtt_at_exit: Option<Duration>,
    rtt_at_shadow_exit: Option<Duration>,
    /// Start of the bottleneck busy period in progress at the exit, if any.
    busy_since_at_exit: Option<Duration>,
    busy_since_at_shadow_exit: Option<Duration>,
    /// (time, acked bytes) for the trailing delivery rate.
    acked_history: std::collections::VecDeque<(Duration, u64)>,
    /// Stats snapshot taken when the flow ended.
    final_stats: Option<quinn_proto::ConnectionStats>,
    /// The receiver's auto-tuned stream window when the flow ended (auto-tuning only).
    final_receive_window: Option<u64>,
    final_probe: Option<ProbeState>,
    drops: FlowDrops,
    exporter: Option<[u8; 32]>,
    ended_at: Option<Duration>,
    /// Keep what the data sender observed for Careful Resume when the flow ends.
    observe: bool,
    observation: Option<Result<Observation, String>>,
    /// The client opened its stream in 0-RTT (a resumed TLS session).
    early_stream: bool,
    zero_rtt_accepted: bool,
    /// quinn-proto's qlog of the flow's connection ([`RunOptions::stack_qlog`]).
    qlog: Option<FlowQlog>,
}

/// The links a datagram crosses: the optional sender shaper, then the path.
struct Net {
    path: Path<Packet>,
    /// Per flow, the server-side rate limiter in front of the down link, if any.
    shapers: Vec<Option<Direction<Packet>>>,
}

pub(crate) struct Simulation {
    scenario: Scenario,
    options: RunOptions,
    base: Instant,
    now: Duration,
    net: Net,
    flows: Vec<FlowRt>,
    next_sample: Duration,
    series: Vec<SeriesRow>,
    trace: Tracer,
    /// The buffer the next datagram is written into ([`poll_datagram`]).
    spare: Vec<u8>,
    buf: Vec<u8>,
    end: Duration,
}

impl Simulation {
    /// Runs `scenario` once; flow `i` resumes from `resume[i]` if given.
    pub(crate) fn run_pass(
        scenario: &Scenario,
        options: &RunOptions,
        shared: &Shared,
        resume: &[Option<ResumeParams>],
    ) -> Result<Pass, SimError> {
        let mut sim = Simulation::new(scenario, options, shared, resume)?;
        sim.run_loop(options.cancel.as_deref())?;
        let observations = sim.flows.iter_mut().map(|f| f.observation.take()).collect();
        let endpoints = sim
            .flows
            .iter()
            .map(|f| {
                if f.upload {
                    (f.client_addr, f.server_addr)
                } else {
                    (f.server_addr, f.client_addr)
                }
            })
            .collect();
        let zero_rtt = sim.flows.iter().map(|f| f.zero_rtt_accepted).collect();
        let end = sim.end;
        let ended_at = sim
            .flows
            .iter()
            .map(|f| f.ended_at.unwrap_or(end))
            .collect();
        Ok(Pass {
            output: sim.finish(),
            observations,
            endpoints,
            zero_rtt,
            ended_at,
        })
    }

    fn new(
        scenario: &Scenario,
        options: &RunOptions,
        shared: &Shared,
        resume: &[Option<ResumeParams>],
    ) -> Result<Self, SimError> {
        if scenario.flows.is_empty() {
            return Err(SimError::Invalid("scenario has no flows".into()));
        }
        let upload = !scenario.flows[0].direction.is_download();
        if scenario
            .flows
            .iter()
            .any(|f| f.direction.is_download() == upload)
        {
            return Err(SimError::Invalid(
                "flows mix uploads and downloads; a run goes one way".into(),
            ));
        }
        // `down` is the data direction: for uploads the link is mirrored, so that the
        // record's down-link fields (queue, drops, ground truth) describe the data path.
        let link = if upload {
            scenario.link.mirrored()
        } else {
            scenario.link.clone()
        };
        let path = Path::with_ground_truth(
            &link,
            sub_seed(scenario.seed, SEED_LINK),
            GroundTruthConfig {
                packet_log: false,
                occupancy_resolution: SERIES_STEP,
            },
        )
        .map_err(|e| SimError::Invalid(e.to_string()))?;
        let mut shapers = Vec::with_capacity(scenario.flows.len());
        for (i, flow) in scenario.flows.iter().enumerate() {
            shapers.push(match &flow.transport.sender_shaper {
                None => None,
                Some(spec) => {
                    let seed = sub_seed(scenario.seed, SEED_SHAPER + 100 * i as u64);
                    Some(
                        spec.direction(seed).map_err(|e| {
                            SimError::Invalid(format!("flow {i}: sender_shaper: {e}"))
                        })?,
                    )
                }
            });
        }
        // The only wall-clock read of a run: an arbitrary origin for quinn's Instants.
        let base = Instant::now();
        let mut flows = Vec::with_capacity(scenario.flows.len());
        for (i, flow) in scenario.flows.iter().enumerate() {
            let index = u32::try_from(i).map_err(|_| SimError::Invalid("too many flows".into()))?;
            if i >= 250 * 250 {
                return Err(SimError::Invalid("too many flows (max 62500)".into()));
            }
            if let Workload::Download { bytes: 0 } = flow.workload {
                return Err(SimError::Invalid(format!("flow {i}: download of 0 bytes")));
            }
            let flow_seed = sub_seed(scenario.seed, 1000 + u64::from(index));
            let events_sink = EventCollector::new();
            let cc_seed = sub_seed(flow_seed, SEED_CC);
            let sender_cc = controller_factory(
                &flow.transport,
                Some(events_sink.clone() as Arc<dyn EventSink>),
                base,
                resume.get(i).copied().flatten(),
                cc_seed,
            )
            .map_err(|e| SimError::Invalid(e.to_string()))?;
            let (probe_factory, probe) = ProbeFactory::new(sender_cc, base);
            let receiver_cc = controller_factory(&flow.transport, None, base, None, !cc_seed)
                .map_err(|e| SimError::Invalid(e.to_string()))?;

            let mut server_cfg = ServerConfig::new(
                shared.server_crypto.clone(),
                Arc::new(tls::FixedTokenKey::new()),
            );
            let endpoint = EndpointSettings::simulated();
            let qlog = options.stack_qlog.then(FlowQlog::new);
            let transport = |factory, vantage| {
                let mut config = transport_config(&flow.transport, &endpoint, factory)
                    .map_err(|e| SimError::Invalid(format!("flow {i}: {e}")))?;
                if let Some(qlog) = &qlog {
                    config.qlog_stream(qlog.stream(vantage, base));
                }
                Ok::<_, SimError>(Arc::new(config))
            };
            let upload = !flow.direction.is_download();
            let probe_factory: SharedFactory = probe_factory;
            let (server_cc, client_cc) = if upload {
                (receiver_cc, probe_factory)
            } else {
                (probe_factory, receiver_cc)
            };
            server_cfg.transport_config(transport(server_cc, Vantage::Server)?);
            if let Some(log) = &shared.token_logs[i] {
                // One NEW_TOKEN per connection (RFC 9000 Sec. 8.1.3), for the next one.
                let mut tokens = quinn_proto::ValidationTokenConfig::default();
                tokens.log(log.clone()).sent(1);
                server_cfg.validation_token_config(tokens);
            }
            server_cfg.time_source(Arc::new(tls::FixedClock));
            let server_cfg = Arc::new(server_cfg);

            let mut client_cfg = ClientConfig::new(shared.client_crypto.clone());
            client_cfg.transport_config(transport(client_cc, Vantage::Client)?);
            client_cfg.token_store(shared.tokens[i].clone());
            let dcid_gen = std::sync::Mutex::new(SeededCidGenerator::new(sub_seed(
                flow_seed,
                SEED_INITIAL_DCID,
            )));
            let odcid_slot = qlog.as_ref().map(FlowQlog::odcid_slot);
            client_cfg.initial_dst_cid_provider(Arc::new(move || {
                let cid = dcid_gen
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .next_cid(tls::MAX_CID_LEN);
                if let Some(slot) = &odcid_slot {
                    slot.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_or_insert(cid);
                }
                cid
            }));

            let endpoint = |rng_domain: u64, cid_domain: u64, server: Option<Arc<ServerConfig>>| {
                let mut cfg = EndpointConfig::new(Arc::new(tls::FixedHmacKey::new()));
                cfg.rng_seed(Some(rng_seed_bytes(sub_seed(flow_seed, rng_domain))));
                let cid_seed = sub_seed(flow_seed, cid_domain);
                let counter = std::sync::atomic::AtomicU64::new(0);
                cfg.cid_generator(move || {
                    // Each generator the endpoint asks for gets its own stream.
                    let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Box::new(SeededCidGenerator::new(sub_seed(cid_seed, n)))
                });
                // PLPMTUD where the transport asks for it (`mtu_discovery`); the link
                // carries any datagram size.
                Endpoint::new(Arc::new(cfg), server, true, None)
            };
            let client_ep = endpoint(SEED_CLIENT_ENDPOINT, SEED_CLIENT_CIDS, None);
            let server_ep = endpoint(
                SEED_SERVER_ENDPOINT,
                SEED_SERVER_CIDS,
                Some(server_cfg.clone()),
            );

            // 10.0.x.y for clients, 10.1.x.y for servers: one address pair per flow.
            let (hi, lo) = ((i / 250) as u8, (i % 250) as u8 + 1);
            let client_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, hi, lo)), 50_000);
            let server_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, hi, lo)), 443);
            flows.push(FlowRt {
                index,
                start: flow.start,
                workload: flow.workload.clone(),
                upload,
                transport: flow.transport.clone(),
                client_addr,
                server_addr,
                client_ep,
                server_ep,
                client_cfg,
                server_cfg,
                client: None,
                server: None,
                status: FlowStatus::Pending,
                capped: false,
                connected_at: None,
                reader: Reader::default(),
                writer: Writer::default(),
                probe,
                events_sink,
                events: Vec::new(),
                next_sample_event: Duration::ZERO,
                rtt_at_exit: None,
                rtt_at_shadow_exit: None,
                busy_since_at_exit: None,
                busy_since_at_shadow_exit: None,
                acked_history: Default::default(),
                final_stats: None,
                final_receive_window: None,
                final_probe: None,
                drops: FlowDrops::default(),
                exporter: None,
                ended_at: None,
                observe: shared.sessions == Sessions::Resumable,
                observation: None,
                early_stream: false,
                zero_rtt_accepted: false,
                qlog,
            });
        }
        Ok(Simulation {
            scenario: scenario.clone(),
            options: options.clone(),
            base,
            now: Duration::ZERO,
            net: Net { path, shapers },
            flows,
            next_sample: Duration::ZERO,
            series: Vec::new(),
            trace: Tracer {
                keep_entries: options.datagram_trace,
                entries: Vec::new(),
                keep_bytes: options.datagram_bytes,
                bytes: Vec::new(),
            },
            spare: Vec::new(),
            buf: Vec::with_capacity(usize::from(u16::MAX)),
            end: Duration::ZERO,
        })
    }

    fn all_done(&self) -> bool {
        self.flows
            .iter()
            .all(|f| matches!(f.status, FlowStatus::Completed | FlowStatus::Failed(_)))
    }

    /// Earliest next event, never earlier than `now`.
    fn next_event(&mut self) -> Duration {
        let mut next = self.next_sample;
        let mut consider = |t: Option<Duration>| {
            if let Some(t) = t {
                next = next.min(t);
            }
        };
        consider(self.net.path.poll_timeout());
        for shaper in self.net.shapers.iter().flatten() {
            consider(shaper.poll_timeout());
        }
        for f in &mut self.flows {
            match f.status {
                FlowStatus::Pending => consider(Some(f.start)),
                FlowStatus::Running => {
                    // The earlier of the two deadlines, turned into simulated time once
                    // (the conversion is monotonic, so the minimum is the same).
                    let deadline = [&mut f.client, &mut f.server]
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c.conn.poll_timeout())
                        .min();
                    consider(deadline.map(|t| t.saturating_duration_since(self.base)));
                    if let Workload::Timed { duration } = f.workload {
                        consider(Some(f.start + duration));
                    }
                }
                _ => {}
            }
        }
        next.max(self.now)
    }

    fn run_loop(&mut self, cancel: Option<&AtomicBool>) -> Result<(), SimError> {
        let cap = self.scenario.time_cap;
        let mut steps: u64 = 0;
        loop {
            if steps % CANCEL_CHECK_STEPS == 0 && cancel.is_some_and(|c| c.load(Ordering::Relaxed))
            {
                return Err(SimError::Cancelled);
            }
            steps += 1;
            let next = self.next_event();
            if next > cap {
                self.now = cap;
                break;
            }
            self.now = next;
            self.step();
            if self.all_done() {
                break;
            }
        }
        self.end = self.now;
        let end = self.end;
        for f in &mut self.flows {
            if matches!(f.status, FlowStatus::Running | FlowStatus::Pending) {
                f.capped = true;
                end_flow(f, end);
            }
        }
        Ok(())
    }

    fn step(&mut self) {
        let now = self.now;
        let at = self.base + now;
        // 1. Flow starts.
        for i in 0..self.flows.len() {
            if self.flows[i].status == FlowStatus::Pending && self.flows[i].start <= now {
                self.start_flow(i, at);
            }
        }
        // 2. Deliveries: down (the data direction, to receivers), then up (to senders).
        for shaper in self.net.shapers.iter_mut().flatten() {
            while let Some(d) = shaper.poll_deliver(now) {
                let flow = d.payload.flow as usize;
                let admission = self.net.path.down.enqueue(now, d.size_bytes, d.payload);
                if let Some(f) = self.flows.get_mut(flow) {
                    f.drops.on_down(now, admission);
                }
            }
        }
        while let Some(d) = self.net.path.down.poll_deliver(now) {
            self.deliver(true, d.payload, at);
        }
        while let Some(d) = self.net.path.up.poll_deliver(now) {
            self.deliver(false, d.payload, at);
        }
        // 3. Timers, events, applications, transmissions.
        for i in 0..self.flows.len() {
            if self.flows[i].status == FlowStatus::Running {
                self.drive_flow(i, at);
            }
        }
        // 4. Series.
        if now >= self.next_sample {
            self.sample(self.next_sample);
            self.next_sample += SERIES_STEP;
        }
    }

    fn start_flow(&mut self, i: usize, at: Instant) {
        let f = &mut self.flows[i];
        match f
            .client_ep
            .connect(at, f.client_cfg.clone(), f.server_addr, tls::SERVER_NAME)
        {
            Ok((handle, mut conn)) => {
                if conn.has_0rtt() {
                    // A resumed TLS session: the request (or the upload) goes in 0-RTT.
                    let requested = f.workload.requested_bytes();
                    open_data_stream(f.upload, requested, &mut f.writer, &mut f.reader, &mut conn);
                    f.early_stream = true;
                }
                f.client = Some(Conn {
                    handle,
                    conn,
                    dirty: true,
                });
                f.status = FlowStatus::Running;
            }
            Err(e) => {
                f.status = FlowStatus::Failed(format!("connect: {e}"));
                end_flow(f, self.now);
            }
        }
    }

    /// Hands a datagram that came out of the down (`to_receiver`) or up direction to its
    /// endpoint.
    fn deliver(&mut self, to_receiver: bool, packet: Packet, at: Instant) {
        let Some(f) = self.flows.get_mut(packet.flow as usize) else {
            return;
        };
        if f.status != FlowStatus::Running {
            return;
        }
        let to_client = to_receiver != f.upload;
        let (ep, conn, remote) = if to_client {
            (&mut f.client_ep, &mut f.client, f.server_addr)
        } else {
            (&mut f.server_ep, &mut f.server, f.client_addr)
        };
        self.buf.clear();
        // The packet's own buffer becomes quinn's receive buffer (no copy).
        let data = BytesMut::from(Bytes::from(packet.data));
        match ep.handle(at, remote, None, None, data, &mut self.buf) {
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(c) = conn.as_mut().filter(|c| c.handle == handle) {
                    c.conn.handle_event(event);
                    c.dirty = true;
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                if to_client || conn.is_some() {
                    ep.ignore(incoming);
                } else {
                    match ep.accept(incoming, at, &mut self.buf, Some(f.server_cfg.clone())) {
                        Ok((handle, c)) => {
                            *conn = Some(Conn {
                                handle,
                                conn: c,
                                dirty: true,
                            })
                        }
                        Err(e) => {
                            if let Some(response) = e.response {
                                let data = self.buf[..response.size].to_vec();
                                let flow = f.index;
                                self.send(!to_receiver, flow, data);
                            }
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(transmit)) => {
                let data = self.buf[..transmit.size].to_vec();
                let flow = f.index;
                // A response from the receiver's endpoint goes up, from the sender's down.
                self.send(!to_receiver, flow, data);
            }
            None => {}
        }
    }

    /// Offers a datagram to the link.
    fn send(&mut self, down: bool, flow: u32, data: Vec<u8>) {
        send_on(
            &mut self.net,
            &mut self.trace,
            &mut self.flows[flow as usize].drops,
            self.now,
            down,
            flow,
            data,
        );
    }

    fn drive_flow(&mut self, i: usize, at: Instant) {
        let now = self.now;
        let f = &mut self.flows[i];
        // Timed flows end at their deadline.
        if let Workload::Timed { duration } = f.workload
            && now >= f.start + duration
        {
            f.status = FlowStatus::Completed;
            f.reader.completed_at = Some(now);
            end_flow(f, now);
            return;
        }
        for pass in 0..3 {
            // Timers and endpoint events; after the first pass only what transmitting
            // queued (new connection IDs, ...) is left.
            let mut changed = false;
            if let Some(c) = f.client.as_mut() {
                changed |= service_connection(c, &mut f.client_ep, at);
            }
            if let Some(c) = f.server.as_mut() {
                changed |= service_connection(c, &mut f.server_ep, at);
            }
            if pass > 0 && !changed {
                break;
            }
            if f.client.as_ref().is_some_and(|c| c.dirty) {
                client_app(f, now);
                if f.status != FlowStatus::Running {
                    return;
                }
            }
            if f.server.as_ref().is_some_and(|c| c.dirty) {
                server_app(f, now);
                if f.status != FlowStatus::Running {
                    return;
                }
            }
            let flow = f.index;
            // Client first, then server; the sender keeps its stream topped up.
            for client in [true, false] {
                let sender = client == f.upload;
                let conn = if client { &mut f.client } else { &mut f.server };
                let Some(c) = conn.as_mut().filter(|c| c.dirty) else {
                    continue;
                };
                c.dirty = false;
                loop {
                    if sender {
                        top_up(&mut f.writer, &mut c.conn);
                    }
                    let Some(data) = poll_datagram(&mut c.conn, at, &mut self.spare) else {
                        break;
                    };
                    if sender {
                        f.writer.udp_sent += data.len() as u64;
                    }
                    send_on(
                        &mut self.net,
                        &mut self.trace,
                        &mut f.drops,
                        now,
                        sender,
                        flow,
                        data,
                    );
                }
            }
        }
        collect_events(f, &self.net.path);
    }

    fn sample(&mut self, t: Duration) {
        let queue_bytes = self.net.path.down.queue_bytes();
        let link_departed_bytes = Some(self.net.path.down.stats().departed.bytes);
        for f in &mut self.flows {
            if f.status != FlowStatus::Running {
                continue;
            }
            let p = read_probe(&f.probe);
            f.acked_history.push_back((t, p.acked_bytes));
            while f
                .acked_history
                .front()
                .is_some_and(|(t0, _)| t.saturating_sub(*t0) > DELIVERY_RATE_WINDOW)
            {
                f.acked_history.pop_front();
            }
            let delivery_rate_bps = match f.acked_history.front() {
                Some(&(t0, a0)) if t > t0 => {
                    ((p.acked_bytes - a0) as f64 * 8.0 / (t - t0).as_secs_f64()).round() as u64
                }
                _ => 0,
            };
            self.series.push(SeriesRow {
                time_s: t.as_secs_f64(),
                flow: f.index,
                cwnd_bytes: p.cwnd,
                in_flight_bytes: p.in_flight,
                latest_rtt_s: p.latest_rtt.map(|d| d.as_secs_f64()),
                smoothed_rtt_s: p.smoothed_rtt.map(|d| d.as_secs_f64()),
                delivery_rate_bps,
                queue_bytes,
                delivered_bytes: f.reader.received,
                link_departed_bytes,
            });
        }
    }

    fn finish(mut self) -> RunOutput {
        let end = self.end;
        let truth = self.net.path.down.finish(end).clone();
        self.net.path.up.finish(end);
        let down_stats = self.net.path.down.stats().clone();
        let up_stats = self.net.path.up.stats().clone();
        let mut flows = Vec::with_capacity(self.flows.len());
        let mut chunks = Vec::new();
        let mut received_chunks = Vec::new();
        let mut events = Vec::new();
        let mut exporters = Vec::new();
        let mut stack_qlogs = Vec::new();
        for f in &mut self.flows {
            // Drain what the sink got after the last collection.
            for e in f.events_sink.take() {
                push_event(f, e);
            }
            for (rows, times) in [
                (&mut chunks, &f.reader.mb_times),
                (&mut received_chunks, &f.reader.received_mb_times),
            ] {
                let since_start = times
                    .iter()
                    .map(|t| t.saturating_sub(f.start).as_secs_f64());
                rows.extend(ChunkRow::of_flow(f.index, since_start));
            }
            for e in &f.events {
                events.push(FlowEvent {
                    flow: f.index,
                    event: e.clone(),
                });
            }
            exporters.push(f.exporter.filter(|_| self.options.tls_exporter));
            if let Some(qlog) = &f.qlog {
                stack_qlogs.extend(qlog.finish(f.index, f.upload));
            }
            let probe = f
                .final_probe
                .clone()
                .unwrap_or_else(|| read_probe(&f.probe));
            flows.push(record::FlowInput {
                index: f.index,
                start: f.start,
                workload: f.workload.clone(),
                cc: f.transport.cc.clone(),
                status: f.status.clone(),
                capped: f.capped,
                delivered_bytes: f.reader.received,
                connected_at: f.connected_at,
                completed_at: f.reader.completed_at,
                ended_at: f.ended_at.unwrap_or(end),
                stats: f.final_stats,
                first_rtt: probe.first_rtt,
                first_loss_detected: probe.first_congestion,
                events: f.events.clone(),
                rtt_at_exit: f.rtt_at_exit,
                rtt_at_shadow_exit: f.rtt_at_shadow_exit,
                busy_since_at_exit: f.busy_since_at_exit,
                busy_since_at_shadow_exit: f.busy_since_at_shadow_exit,
                drops: f.drops.clone(),
                stream_receive_window_end: f.final_receive_window,
            });
        }
        let link = LinkObservation {
            truth: &truth,
            down: &down_stats,
            up: &up_stats,
            epoch: Duration::ZERO,
        };
        let summary = record::summarize(&self.scenario, end, &flows, &link);
        RunOutput {
            record: RunRecord {
                summary,
                chunks,
                received_chunks,
                events,
                series: self.series,
                sim_time: end,
            },
            trace: self.trace.entries,
            datagrams: self.trace.bytes,
            stack_qlogs,
            tls_exporter: exporters,
        }
    }
}

/// What a run keeps of the datagrams it offers to the link ([`RunOptions::datagram_trace`],
/// [`RunOptions::datagram_bytes`]).
struct Tracer {
    keep_entries: bool,
    entries: Vec<TraceEntry>,
    keep_bytes: usize,
    bytes: Vec<Vec<u8>>,
}

fn send_on(
    net: &mut Net,
    trace: &mut Tracer,
    drops: &mut FlowDrops,
    now: Duration,
    down: bool,
    flow: u32,
    data: Vec<u8>,
) {
    let size = data.len() as u32;
    if trace.bytes.len() < trace.keep_bytes {
        trace.bytes.push(data.clone());
    }
    let packet = Packet { flow, data };
    let wire = size + IP_UDP_OVERHEAD_BYTES;
    let shaper = net.shapers.get_mut(flow as usize).and_then(Option::as_mut);
    let admitted = match (down, shaper) {
        (true, Some(shaper)) => {
            let a = shaper.enqueue(now, wire, packet);
            if !a.is_queued() {
                drops.shaper_packets += 1;
            }
            a.is_queued()
        }
        (true, None) => {
            let a = net.path.down.enqueue(now, wire, packet);
            drops.on_down(now, a);
            a.is_queued()
        }
        (false, _) => {
            let a = net.path.up.enqueue(now, wire, packet);
            if !a.is_queued() {
                drops.up_packets += 1;
            }
            a.is_queued()
        }
    };
    if trace.keep_entries {
        trace.entries.push(TraceEntry {
            at: now,
            down,
            flow,
            size_bytes: size,
            admitted,
        });
    }
}

/// The next datagram of `conn`, written by quinn straight into the buffer the link will
/// carry (no copy). `spare` is that buffer: a poll that finds nothing to send leaves it
/// for the next one, so only datagrams cost an allocation (most polls, one per arriving
/// packet, find nothing).
fn poll_datagram(conn: &mut Connection, at: Instant, spare: &mut Vec<u8>) -> Option<Vec<u8>> {
    spare.clear();
    spare.reserve(usize::from(conn.current_mtu()));
    let transmit = conn.poll_transmit(at, 1, spare)?;
    spare.truncate(transmit.size);
    Some(std::mem::take(spare))
}

/// Timers and endpoint events of one connection. Returns whether anything happened.
fn service_connection(c: &mut Conn, ep: &mut Endpoint, at: Instant) -> bool {
    let mut changed = false;
    if c.conn.poll_timeout().is_some_and(|t| t <= at) {
        c.conn.handle_timeout(at);
        changed = true;
    }
    while let Some(event) = c.conn.poll_endpoint_events() {
        changed = true;
        if let Some(reply) = ep.handle_event(c.handle, event) {
            c.conn.handle_event(reply);
        }
    }
    c.dirty |= changed;
    changed
}

/// Ends a flow: keeps the sender's stats and drops both connections (their remaining
/// packets in the link are discarded on arrival).
fn end_flow(f: &mut FlowRt, now: Duration) {
    let (sender, receiver) = if f.upload {
        (&f.client, &f.server)
    } else {
        (&f.server, &f.client)
    };
    f.final_stats = sender.as_ref().map(|c| c.conn.stats());
    if f.transport.receive_window_autotune {
        f.final_receive_window = receiver.as_ref().map(|c| c.conn.stream_receive_window());
    }
    if f.observe {
        f.observation = Some(match sender {
            Some(c) => careful_resume_observation(c.conn.congestion_state().clone_box()),
            None => Err("the data sender never connected".into()),
        });
    }
    f.final_probe = Some(read_probe(&f.probe));
    f.ended_at = Some(now);
    f.client = None;
    f.server = None;
}

/// The client opens the data stream and either asks for a download (an 8-byte request)
/// or starts its upload.
fn open_data_stream(
    upload: bool,
    requested: u64,
    writer: &mut Writer,
    reader: &mut Reader,
    conn: &mut Connection,
) {
    let Some(id) = conn.streams().open(Dir::Bi) else {
        return;
    };
    if upload {
        writer.stream = Some(id);
        writer.to_send = Some(requested);
    } else {
        let request = requested.to_be_bytes();
        let mut stream = conn.send_stream(id);
        // 8 bytes always fit in the initial stream credit (quinn's peers grant far
        // more, and 0-RTT remembers them), so one write takes all of it.
        let _ = stream.write(&request);
        let _ = stream.finish();
        reader.stream = Some(id);
    }
}

/// The client: connects, opens the stream (in 0-RTT when it resumes a TLS session, else
/// once connected) and either asks for a download or starts its upload; on a download,
/// reads.
fn client_app(f: &mut FlowRt, now: Duration) {
    let Some(c) = f.client.as_mut() else { return };
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Connected => {
                f.connected_at = Some(now);
                if !f.upload && f.transport.window_update == WindowUpdate::Quicly {
                    // Park the window before any stream data is read.
                    quicly_window_update(&mut c.conn, &mut f.reader, f.transport.receive_window);
                }
                f.zero_rtt_accepted = f.early_stream && c.conn.accepted_0rtt();
                if f.early_stream && !f.zero_rtt_accepted {
                    // The server refused 0-RTT: quinn dropped the early stream (RFC 9000
                    // Sec. 4.6.1), so the client's side starts over in 1-RTT.
                    if f.upload {
                        let udp_sent = f.writer.udp_sent;
                        f.writer = Writer {
                            udp_sent,
                            ..Writer::default()
                        };
                    } else {
                        f.reader.stream = None;
                    }
                }
                if !f.zero_rtt_accepted {
                    let requested = f.workload.requested_bytes();
                    open_data_stream(
                        f.upload,
                        requested,
                        &mut f.writer,
                        &mut f.reader,
                        &mut c.conn,
                    );
                }
                if let Ok(exported) = export_key(&c.conn) {
                    f.exporter = Some(exported);
                }
            }
            Event::ConnectionLost { reason } if f.reader.completed_at.is_none() => {
                f.status = FlowStatus::Failed(format!("connection lost: {reason}"));
            }
            _ => {}
        }
    }
    if !f.upload {
        read_data(&mut c.conn, &mut f.reader, &mut f.status, &f.transport, now);
    }
    if f.status != FlowStatus::Running {
        end_flow(f, now);
    }
}

/// The server: accepts the stream; on a download, reads the request (the writer then
/// sends); on an upload, reads the data.
fn server_app(f: &mut FlowRt, now: Duration) {
    let Some(c) = f.server.as_mut() else { return };
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Connected if f.upload && f.transport.window_update == WindowUpdate::Quicly => {
                quicly_window_update(&mut c.conn, &mut f.reader, f.transport.receive_window);
            }
            Event::Stream(StreamEvent::Opened { dir: Dir::Bi })
                if (if f.upload {
                    f.reader.stream
                } else {
                    f.writer.stream
                })
                .is_none() =>
            {
                let id = c.conn.streams().accept(Dir::Bi);
                if f.upload {
                    f.reader.stream = id;
                } else {
                    f.writer.stream = id;
                }
            }
            Event::ConnectionLost { reason } if f.upload && f.reader.completed_at.is_none() => {
                f.status = FlowStatus::Failed(format!("connection lost: {reason}"));
            }
            // On a download the client decides the flow's outcome; a server-side error
            // shows there.
            _ => {}
        }
    }
    if f.upload {
        read_data(&mut c.conn, &mut f.reader, &mut f.status, &f.transport, now);
        if f.status != FlowStatus::Running {
            end_flow(f, now);
        }
        return;
    }
    let app = &mut f.writer;
    if let (Some(id), None) = (app.stream, app.to_send) {
        let mut recv = c.conn.recv_stream(id);
        if let Ok(mut chunks) = recv.read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => app.request.extend_from_slice(&chunk.bytes),
                    Ok(None) => {
                        if let Ok(size) = <[u8; 8]>::try_from(app.request.as_slice()) {
                            app.to_send = Some(u64::from_be_bytes(size));
                        }
                        break;
                    }
                    Err(_) => break,
                }
            }
            let _ = chunks.finalize();
        }
    }
}

/// Reads everything that arrived on the data stream, tracks the in-order prefix and the
/// per-MB times, and completes the flow at the FIN.
fn read_data(
    conn: &mut Connection,
    app: &mut Reader,
    status: &mut FlowStatus,
    transport: &TransportSpec,
    now: Duration,
) {
    let Some(id) = app.stream else { return };
    let mut recv = conn.recv_stream(id);
    if let Ok(mut chunks) = recv.read(false) {
        let mut finished = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    app.read_total += chunk.bytes.len() as u64;
                    app.received = app.in_order.insert(chunk.offset, chunk.bytes.len() as u64);
                }
                Ok(None) => {
                    finished = true;
                    break;
                }
                Err(quinn_proto::ReadError::Blocked) => break,
                Err(e) => {
                    *status = FlowStatus::Failed(format!("read: {e}"));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        push_mb_times(&mut app.mb_times, app.received, now);
        push_mb_times(&mut app.received_mb_times, app.read_total, now);
        if finished && app.completed_at.is_none() {
            app.completed_at = Some(now);
            *status = FlowStatus::Completed;
        }
    }
    if transport.window_update == WindowUpdate::Quicly {
        quicly_window_update(conn, app, transport.receive_window);
    }
}

/// Quinn's knob for the announced credit is the receive window: raising it by `d` raises
/// the credit by `d` (and queues MAX_DATA); lowering it by `d` makes the next `d` bytes
/// read add no credit ("shrink debt"). Keeping the window at a token 8 bytes with a debt
/// equal to the unused credit freezes the credit between updates; an update raises the
/// window by the increment and lowers it again, which adds the increment to the debt.
/// (A window of 8 rather than 0 keeps quinn from queueing a MAX_DATA after every read:
/// it sends one when the unannounced credit reaches window / 8.)
const QUICLY_PARKED_WINDOW: u64 = 8;

fn quicly_window_update(conn: &mut Connection, app: &mut Reader, window: u64) {
    let credit = match app.quicly_credit {
        Some(c) => c,
        None => {
            // First call: park the window; the initial credit is the configured window.
            conn.set_receive_window(varint(QUICLY_PARKED_WINDOW));
            app.quicly_credit = Some(window);
            window
        }
    };
    // quicly: announce more once more than half of the credit is used.
    if credit.saturating_sub(app.read_total) < window / 2 {
        let raise = app.read_total + window - credit;
        conn.set_receive_window(varint(QUICLY_PARKED_WINDOW + raise));
        conn.set_receive_window(varint(QUICLY_PARKED_WINDOW));
        app.quicly_credit = Some(credit + raise);
    }
}

fn varint(n: u64) -> VarInt {
    VarInt::from_u64(n).unwrap_or(VarInt::MAX)
}

fn export_key(conn: &Connection) -> Result<[u8; 32], ()> {
    let mut out = [0u8; 32];
    conn.crypto_session()
        .export_keying_material(&mut out, b"satquic-sim determinism check", b"")
        .map_err(|_| ())?;
    Ok(out)
}

/// Keeps between [`SEND_AHEAD_MIN`] and [`SEND_AHEAD_MAX`] bytes written but unsent.
fn top_up(app: &mut Writer, conn: &mut Connection) {
    let (Some(id), Some(total)) = (app.stream, app.to_send) else {
        return;
    };
    if app.finished || app.written >= app.udp_sent.saturating_add(SEND_AHEAD_MIN) {
        return;
    }
    let target = total.min(app.udp_sent.saturating_add(SEND_AHEAD_MAX));
    let mut stream = conn.send_stream(id);
    while app.written < target {
        let n = (target - app.written).min(ZEROS.len() as u64) as usize;
        // A static chunk: quinn keeps a reference to it instead of copying the bytes.
        let mut chunk = [Bytes::from_static(&ZEROS[..n])];
        match stream.write_chunks(&mut chunk) {
            Ok(w) if w.bytes == 0 => break,
            Err(WriteError::Blocked) => break,
            Ok(w) => app.written += w.bytes as u64,
            Err(_) => {
                app.finished = true;
                return;
            }
        }
    }
    if app.written == total {
        let _ = stream.finish();
        app.finished = true;
    }
}

/// Moves new controller events into the flow's list (thinning `Sample`s to one per
/// series step) and notes the RTT and bottleneck state at a slow-start exit.
fn collect_events(f: &mut FlowRt, path: &Path<Packet>) {
    let new = f.events_sink.take();
    if new.is_empty() {
        return;
    }
    let probe = read_probe(&f.probe);
    let busy = path.down.ground_truth().busy_since();
    for e in new {
        if let CcEvent::SlowStartExit { shadow, .. } = &e {
            if *shadow {
                if f.rtt_at_shadow_exit.is_none() {
                    f.rtt_at_shadow_exit = probe.smoothed_rtt;
                    f.busy_since_at_shadow_exit = busy;
                }
            } else if f.rtt_at_exit.is_none() {
                f.rtt_at_exit = probe.smoothed_rtt;
                f.busy_since_at_exit = busy;
            }
        }
        push_event(f, e);
    }
}

fn push_event(f: &mut FlowRt, e: CcEvent) {
    if let CcEvent::Sample { at, .. } = e {
        if at < f.next_sample_event {
            return;
        }
        // Next grid point strictly after this sample.
        let step = SERIES_STEP.as_nanos();
        let k = at.as_nanos() / step + 1;
        f.next_sample_event = Duration::from_nanos((k * step) as u64);
    }
    f.events.push(e);
}
