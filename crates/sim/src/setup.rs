//! How a run is built before its first event: the link (mirrored for uploads) and the
//! sender shapers, then per flow its seeds, congestion controllers, TLS and transport
//! configuration, endpoints and addresses. Apart from the event loop ([`crate::engine`]):
//! nothing here runs per packet, and every random stream a run draws from is named here.
//!
//! # Seeds
//!
//! Every consumer of randomness gets its own stream, `sub_seed(seed, domain)`: the link
//! from the run seed, each flow from `sub_seed(run seed, 1000 + flow index)` and, within a
//! flow, its endpoints, connection IDs and congestion controller from the flow seed. A
//! change in one consumer (a flow more, a controller that draws more) leaves the others'
//! streams as they were.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::{
    ClientConfig, Endpoint, EndpointConfig, NoneTokenStore, ServerConfig, TokenMemoryCache,
    TokenStore, TransportConfig,
};
use satquic_cc::{EventSink, ResumeParams};
use satquic_link::{Direction, GroundTruthConfig, Path};
use satquic_run::probe::{EventCollector, ProbeFactory, SharedFactory, controller_factory};
use satquic_run::qlog::Vantage;
use satquic_run::record::{BottleneckLog, FlowDrops, FlowStatus};
use satquic_run::scenario::{FlowSpec, Scenario, TransportSpec, Workload};
use satquic_run::transport::{EndpointSettings, transport_config};

use crate::SimError;
use crate::app::{Reader, Writer};
use crate::engine::{Net, Packet, RunOptions, SERIES_STEP};
use crate::flow::FlowRt;
use crate::null_cipher::{NullClientConfig, NullServerConfig, PacketCipher};
use crate::stack_qlog::FlowQlog;
use crate::tls::{self, SeededCidGenerator, Sessions, rng_seed_bytes, sub_seed};

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

/// Most flows of one run: each takes an address pair `10.0.x.y`/`10.1.x.y` with
/// `x, y < 250`.
const MAX_FLOWS: usize = 250 * 250;

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

/// Whether the run is an upload: a scenario has flows, all of them one way.
pub(crate) fn upload(scenario: &Scenario) -> Result<bool, SimError> {
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
    Ok(upload)
}

/// The links a run's datagrams cross: the path and, per flow, its sender shaper.
pub(crate) fn net(scenario: &Scenario, upload: bool) -> Result<Net, SimError> {
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
    let shapers = scenario
        .flows
        .iter()
        .enumerate()
        .map(|(i, flow)| shaper(scenario.seed, i, flow))
        .collect::<Result<_, _>>()?;
    Ok(Net { path, shapers })
}

/// Flow `i`'s rate limiter in front of the down link, if its transport has one.
fn shaper(seed: u64, i: usize, flow: &FlowSpec) -> Result<Option<Direction<Packet>>, SimError> {
    let Some(spec) = &flow.transport.sender_shaper else {
        return Ok(None);
    };
    let seed = sub_seed(seed, SEED_SHAPER + 100 * i as u64);
    spec.direction(seed)
        .map(Some)
        .map_err(|e| SimError::Invalid(format!("flow {i}: sender_shaper: {e}")))
}

/// Flow `i` of `scenario`, configured and not yet started; it resumes from `resume`
/// if given. `base` is the run's origin for quinn's `Instant`s.
pub(crate) fn flow(
    i: usize,
    scenario: &Scenario,
    options: &RunOptions,
    shared: &Shared,
    resume: Option<ResumeParams>,
    base: Instant,
) -> Result<FlowRt, SimError> {
    let spec = &scenario.flows[i];
    let index = flow_index(i, spec)?;
    let flow_seed = sub_seed(scenario.seed, 1000 + u64::from(index));
    let upload = !spec.direction.is_download();
    let controllers = Controllers::new(&spec.transport, resume, flow_seed, base);
    let (server_cc, client_cc) = controllers.by_role(upload);
    let qlog = options.stack_qlog.then(FlowQlog::new);
    let transport_for =
        |factory, vantage| transport(i, &spec.transport, factory, qlog.as_ref(), vantage, base);
    let server_cfg = server_config(shared, i, transport_for(server_cc, Vantage::Server)?);
    let client_transport = transport_for(client_cc, Vantage::Client)?;
    let client_cfg = client_config(shared, i, client_transport, flow_seed, qlog.as_ref());
    let client_ep = endpoint(flow_seed, SEED_CLIENT_ENDPOINT, SEED_CLIENT_CIDS, None);
    let server_ep = endpoint(
        flow_seed,
        SEED_SERVER_ENDPOINT,
        SEED_SERVER_CIDS,
        Some(server_cfg.clone()),
    );
    let (client_addr, server_addr) = addresses(i);
    Ok(FlowRt {
        index,
        start: spec.start,
        workload: spec.workload.clone(),
        upload,
        transport: spec.transport.clone(),
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
        probe: controllers.probe,
        events_sink: controllers.events_sink,
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
        bottleneck: BottleneckLog::default(),
        exporter: None,
        ended_at: None,
        observe: shared.sessions == Sessions::Resumable,
        observation: None,
        early_stream: false,
        zero_rtt_accepted: false,
        qlog,
    })
}

/// Flow `i`'s index in the record, once its workload is known to be one a run can do.
fn flow_index(i: usize, spec: &FlowSpec) -> Result<u32, SimError> {
    let index = u32::try_from(i).map_err(|_| SimError::Invalid("too many flows".into()))?;
    if i >= MAX_FLOWS {
        return Err(SimError::Invalid("too many flows (max 62500)".into()));
    }
    if let Workload::Download { bytes: 0 } = spec.workload {
        return Err(SimError::Invalid(format!("flow {i}: download of 0 bytes")));
    }
    Ok(index)
}

/// A flow's two congestion controllers: the data sender's, behind the probe that the
/// series reads and reporting its events to the flow, and the receiver's, silent (its
/// events are not recorded).
struct Controllers {
    sender: SharedFactory,
    receiver: SharedFactory,
    probe: satquic_run::probe::ProbeHandle,
    events_sink: Arc<EventCollector>,
}

impl Controllers {
    fn new(
        transport: &TransportSpec,
        resume: Option<ResumeParams>,
        flow_seed: u64,
        base: Instant,
    ) -> Self {
        let events_sink = EventCollector::new();
        let cc_seed = sub_seed(flow_seed, SEED_CC);
        let sender_cc = controller_factory(
            transport,
            Some(events_sink.clone() as Arc<dyn EventSink>),
            base,
            resume,
            cc_seed,
        );
        let (sender, probe) = ProbeFactory::new(sender_cc, base);
        let receiver = controller_factory(transport, None, base, None, !cc_seed);
        Controllers {
            sender,
            receiver,
            probe,
            events_sink,
        }
    }

    /// (the server's, the client's): on an upload the client sends.
    fn by_role(&self, upload: bool) -> (SharedFactory, SharedFactory) {
        if upload {
            (self.receiver.clone(), self.sender.clone())
        } else {
            (self.sender.clone(), self.receiver.clone())
        }
    }
}

/// One end's transport configuration: the flow's spec with its congestion controller,
/// and quinn-proto's own qlog of that end when asked for.
fn transport(
    i: usize,
    spec: &TransportSpec,
    factory: SharedFactory,
    qlog: Option<&FlowQlog>,
    vantage: Vantage,
    base: Instant,
) -> Result<Arc<TransportConfig>, SimError> {
    let mut config = transport_config(spec, &EndpointSettings::simulated(), factory)
        .map_err(|e| SimError::Invalid(format!("flow {i}: {e}")))?;
    if let Some(qlog) = qlog {
        config.qlog_stream(qlog.stream(vantage, base));
    }
    Ok(Arc::new(config))
}

/// The server's configuration: the run's TLS, one NEW_TOKEN per connection when the
/// run resumes, and a fixed clock for its tokens.
fn server_config(shared: &Shared, i: usize, transport: Arc<TransportConfig>) -> Arc<ServerConfig> {
    let mut server_cfg = ServerConfig::new(
        shared.server_crypto.clone(),
        Arc::new(tls::FixedTokenKey::new()),
    );
    server_cfg.transport_config(transport);
    if let Some(log) = &shared.token_logs[i] {
        // One NEW_TOKEN per connection (RFC 9000 Sec. 8.1.3), for the next one.
        let mut tokens = quinn_proto::ValidationTokenConfig::default();
        tokens.log(log.clone()).sent(1);
        server_cfg.validation_token_config(tokens);
    }
    server_cfg.time_source(Arc::new(tls::FixedClock));
    Arc::new(server_cfg)
}

/// The client's configuration: the run's TLS and token store, and initial destination
/// connection IDs from the flow's seed (noted for the qlog's file names).
fn client_config(
    shared: &Shared,
    i: usize,
    transport: Arc<TransportConfig>,
    flow_seed: u64,
    qlog: Option<&FlowQlog>,
) -> ClientConfig {
    let mut client_cfg = ClientConfig::new(shared.client_crypto.clone());
    client_cfg.transport_config(transport);
    client_cfg.token_store(shared.tokens[i].clone());
    let dcid_gen = std::sync::Mutex::new(SeededCidGenerator::new(sub_seed(
        flow_seed,
        SEED_INITIAL_DCID,
    )));
    let odcid_slot = qlog.map(FlowQlog::odcid_slot);
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
    client_cfg
}

/// An endpoint whose randomness and connection IDs come from the flow's seed.
fn endpoint(
    flow_seed: u64,
    rng_domain: u64,
    cid_domain: u64,
    server: Option<Arc<ServerConfig>>,
) -> Endpoint {
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
}

/// 10.0.x.y for clients, 10.1.x.y for servers: one address pair per flow.
fn addresses(i: usize) -> (SocketAddr, SocketAddr) {
    let (hi, lo) = ((i / 250) as u8, (i % 250) as u8 + 1);
    let client_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, hi, lo)), 50_000);
    let server_addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, hi, lo)), 443);
    (client_addr, server_addr)
}
