//! `satquic server`: a QUIC server on a real UDP socket (tokio + quinn) that serves the
//! perf protocol ([`crate::perf`]), HTTP/0.9 (`hq-interop`) and HTTP/3 (`h3`).
//!
//! The server is the data sender of downloads, so its congestion controller is the one
//! under test: every connection gets its own controller built from `--cc` (a satquic-cc
//! spec), with its own event log, and after a perf download the server sends the client a
//! [`ServerReport`](crate::perf::ServerReport).
//!
//! # Limits (one misbehaving client cannot exhaust it)
//!
//! - at most `max_connections` connections, at most `max_connections_per_address` of them
//!   from one IP address; further handshakes are refused at once (CONNECTION_REFUSED);
//! - a peer that stops answering is abandoned: when the server has sent to it and heard
//!   nothing back for [`SILENT_PEER_MIN`] or [`SILENT_PEER_RTTS`] smoothed RTTs, whichever
//!   is longer, the connection is closed (a client killed mid-download frees its slot in
//!   seconds, not after the idle timeout);
//! - address validation: a client must echo a Retry token before the server keeps any
//!   state for it (on by default), so spoofed or replayed Initials cost nothing;
//! - a handshake must finish within `handshake_timeout`, a request line or header within
//!   [`REQUEST_TIMEOUT`]; idle connections close after the transport's idle timeout;
//! - stream counts per connection are capped by the transport settings, a request may ask
//!   for at most `max_request_bytes` (a download "until stopped" ends there), uploads are
//!   cut there too;
//! - per-connection event logs keep at most [`MAX_EVENTS_PER_CONNECTION`] events, and
//!   only what the report sends (at most [`perf::MAX_REPORT_EVENTS`]) unless an in-process
//!   caller keeps connections.
//!
//! # Memory
//!
//! A connection holds what quinn keeps for it: records of its packets in flight (not
//! their data: downloads are sent from a static buffer), at most the send window of
//! unacknowledged stream data; received data not yet read, at most the receive window;
//! its congestion controller and its report's events. The windows are `--max-window`
//! (256 MiB by default), so an uploader that leaves gaps could make the server hold that
//! much per connection: size `--max-window` x `--max-connections` to the machine. In
//! practice (release build, loopback, measured with `ps`): 7.8 MB fresh; 0.13 to 0.35 MB
//! per downloading connection (64 connections 18 MB, 50 connections at 12 s 21 MB,
//! 20 x 1 GB 17 MB). Freed memory goes back to the system when connections end
//! ([`release_memory`]): after 300 clients killed at once, 50 killed after 12 s and 20
//! complete 1 GB downloads the server is at 12 MB (it stayed at 78 to 140 MB before).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Connection, Endpoint, Incoming, RecvStream, SendStream, ServerConfig, VarInt};
use satquic_cc::{CcEvent, EventSink, RemoteEndpoint, SavedStateStore};
use satquic_run::probe::{ProbeHandle, careful_resume_observation};
use satquic_run::token_log::SingleUseTokenLog;

use crate::NetError;
use crate::perf::{self, Receipt, Request, ServerReport};
use crate::tls::{ALPN_H3, ALPN_HQ, ALPN_PERF, Identity};
use crate::transport::NetTransport;

/// A request's header must arrive within this long.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Cap on the events kept per connection (Sample events are thinned to one per 10 ms).
pub const MAX_EVENTS_PER_CONNECTION: usize = 200_000;
/// Resolution of kept Sample events.
pub const SAMPLE_STEP: Duration = Duration::from_millis(10);
/// A peer that has not answered anything the server sent for this long (at least) is
/// abandoned. Longer than a LEO handover or a GEO beam switch; far shorter than the idle
/// timeout (30 s), which is what otherwise frees a dead client's connection.
pub const SILENT_PEER_MIN: Duration = Duration::from_secs(3);
/// ... or for this many smoothed RTTs, if longer: about three PTO backoffs (RFC 9002
/// Sec. 6.2; PTO = SRTT + 4 RTTVAR + max_ack_delay doubles after each).
pub const SILENT_PEER_RTTS: u32 = 8;
/// How often a connection checks whether its peer still answers.
pub const SILENCE_CHECK_INTERVAL: Duration = Duration::from_millis(250);
/// Application close code of an abandoned connection.
pub const CLOSE_PEER_SILENT: u32 = 0x110;
/// After a connection ends the server gives freed heap memory back to the system, at most
/// this often, and whenever the last one ends ([`release_memory`]).
pub const MEMORY_RELEASE_INTERVAL: Duration = Duration::from_secs(1);
/// Default of [`ServerOptions::max_connections_per_address`].
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 64;

/// What `satquic server` is told.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub listen: SocketAddr,
    /// PEM certificate chain and key; `None`: a fresh self-signed certificate.
    pub cert: Option<(PathBuf, PathBuf)>,
    pub transport: NetTransport,
    /// Directory served over hq-interop and h3 (synthetic `/<size>` objects otherwise).
    pub www: Option<PathBuf>,
    pub max_connections: usize,
    /// At most this many of them from one IP address.
    pub max_connections_per_address: usize,
    /// Largest download or upload one request may ask for, bytes.
    pub max_request_bytes: u64,
    /// Ask every new client to prove its address with a Retry round trip.
    pub retry: bool,
    pub handshake_timeout: Duration,
    /// Keep the state of this many recent connections for in-process callers
    /// ([`Server::connections`]); 0 keeps none.
    pub keep_connections: usize,
    /// Write each connection's qlog into this directory when it ends
    /// (`<odcid>_server.sqlog`: quinn-proto's events merged with satquic's).
    pub qlog_dir: Option<PathBuf>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            listen: SocketAddr::from(([0, 0, 0, 0], 4433)),
            cert: None,
            transport: NetTransport::default(),
            www: None,
            max_connections: 256,
            max_connections_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
            max_request_bytes: 100_000_000_000,
            retry: true,
            handshake_timeout: Duration::from_secs(10),
            keep_connections: 0,
            qlog_dir: None,
        }
    }
}

/// Counters of a running server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub active_connections: usize,
    pub accepted: u64,
    pub refused: u64,
    pub retries_sent: u64,
    pub handshake_failures: u64,
    pub requests: u64,
    pub bad_requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Connections whose congestion controller started from saved parameters (Careful
    /// Resume, RFC 9959).
    pub resumed: u64,
    /// Connections closed because the peer stopped answering ([`SILENT_PEER_MIN`]).
    pub abandoned: u64,
}

#[derive(Default)]
struct Counters {
    active: AtomicUsize,
    accepted: AtomicU64,
    refused: AtomicU64,
    retries: AtomicU64,
    handshake_failures: AtomicU64,
    requests: AtomicU64,
    bad_requests: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    resumed: AtomicU64,
    abandoned: AtomicU64,
}

/// One connection's sender-side state, for in-process callers (emulated runs).
pub struct ConnectionInfo {
    pub remote: SocketAddr,
    /// When the server accepted the Initial: the origin of event and probe times.
    pub accepted_at: Instant,
    pub cc: String,
    pub events: Arc<EventStore>,
    pub probe: ProbeHandle,
    connection: Mutex<Option<Connection>>,
    final_stats: Mutex<Option<quinn::ConnectionStats>>,
}

impl ConnectionInfo {
    /// quinn's statistics: live while the connection is up, final afterwards.
    pub fn stats(&self) -> Option<quinn::ConnectionStats> {
        if let Some(c) = lock(&self.connection).as_ref() {
            return Some(c.stats());
        }
        *lock(&self.final_stats)
    }

    /// The current smoothed RTT, while the connection is up.
    pub fn rtt(&self) -> Option<Duration> {
        lock(&self.connection).as_ref().map(|c| c.rtt())
    }
}

/// A bounded event sink: Sample events thinned to one per [`SAMPLE_STEP`], at most
/// [`MAX_EVENTS_PER_CONNECTION`] events; or, made with [`EventStore::for_report`], only
/// what a [`ServerReport`] carries.
pub struct EventStore {
    inner: Mutex<(Vec<CcEvent>, Option<Duration>)>,
    /// Most events kept.
    capacity: usize,
    /// Keep Sample and SearchEval events (in-process callers draw series from them).
    per_ack: bool,
}

impl Default for EventStore {
    fn default() -> Self {
        EventStore {
            inner: Mutex::default(),
            capacity: MAX_EVENTS_PER_CONNECTION,
            per_ack: true,
        }
    }
}

impl EventStore {
    /// Keeps only the events a report sends (no per-ACK samples or SEARCH evaluations),
    /// at most [`perf::MAX_REPORT_EVENTS`]: a few hundred kB per connection at most.
    pub fn for_report() -> Self {
        EventStore {
            inner: Mutex::default(),
            capacity: perf::MAX_REPORT_EVENTS,
            per_ack: false,
        }
    }

    pub fn events(&self) -> Vec<CcEvent> {
        lock(&self.inner).0.clone()
    }
}

impl EventSink for EventStore {
    fn record(&self, event: &CcEvent) {
        let per_ack = matches!(event, CcEvent::Sample { .. } | CcEvent::SearchEval { .. });
        if per_ack && !self.per_ack {
            return;
        }
        let mut g = lock(&self.inner);
        let (events, next_sample) = &mut *g;
        if events.len() >= self.capacity {
            return;
        }
        if let CcEvent::Sample { at, .. } = event {
            if next_sample.is_some_and(|n| *at < n) {
                return;
            }
            *next_sample = Some(*at + SAMPLE_STEP);
        }
        events.push(event.clone());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Client addresses whose Careful Resume parameters the server keeps (the oldest set
/// makes room); a set is a few dozen bytes.
pub const SAVED_STATE_CAPACITY: usize = 4096;

pub(crate) struct ServerState {
    pub(crate) options: ServerOptions,
    counters: Counters,
    /// Careful Resume (RFC 9959): what each client address's last connection observed
    /// (Sec. 3.1), handed to its next connection (Sec. 3.2).
    saved: Mutex<SavedStateStore>,
    /// Connections per client IP address (entries removed at zero).
    per_address: Mutex<HashMap<IpAddr, usize>>,
    /// When freed memory was last given back ([`release_memory`]).
    released_at: Mutex<Instant>,
    kept: Mutex<VecDeque<Arc<ConnectionInfo>>>,
    base_config: ServerConfig,
    www_root: Option<PathBuf>,
}

/// A bound, not yet serving server.
pub struct Server {
    endpoint: Endpoint,
    state: Arc<ServerState>,
    fingerprint: String,
}

impl Server {
    /// Validates the options, loads or makes the certificate and binds the socket. Must be
    /// called inside a tokio runtime.
    pub fn bind(options: ServerOptions) -> Result<Self, NetError> {
        options.transport.validate()?;
        if options.max_connections == 0 {
            return Err(NetError::Usage(
                "--max-connections must be at least 1".into(),
            ));
        }
        if options.max_connections_per_address == 0 {
            return Err(NetError::Usage(
                "--max-per-address must be at least 1".into(),
            ));
        }
        let www_root = match &options.www {
            Some(dir) => Some(
                dir.canonicalize()
                    .map_err(|e| NetError::Usage(format!("--www {}: {e}", dir.display())))?,
            ),
            None => None,
        };
        if let Some(dir) = &www_root
            && !dir.is_dir()
        {
            return Err(NetError::Usage(format!(
                "--www {}: not a directory",
                dir.display()
            )));
        }
        let identity = match &options.cert {
            Some((cert, key)) => Identity::from_pem_files(cert, key)?,
            None => Identity::self_signed(&[])?,
        };
        let fingerprint = identity.fingerprint();
        let crypto = crate::tls::server_crypto(&identity, &[ALPN_PERF, ALPN_HQ, ALPN_H3])?;
        let quic_crypto = QuicServerConfig::try_from(crypto)
            .map_err(|e| NetError::Setup(format!("TLS configuration: {e}")))?;
        let mut base_config = ServerConfig::with_crypto(Arc::new(quic_crypto));
        let (transport, _) = options.transport.build(None, Instant::now())?;
        base_config.transport_config(Arc::new(transport));
        base_config.max_incoming(options.max_connections.saturating_mul(4).max(16));
        // Address-validation tokens (NEW_TOKEN, RFC 9000 Sec. 8.1.3), one per connection,
        // valid as long as Careful Resume's saved parameters: a returning client is
        // answered at once, in 0.5-RTT when it resumes with 0-RTT.
        let mut tokens = quinn_proto::ValidationTokenConfig::default();
        tokens
            .log(Arc::new(SingleUseTokenLog::default()))
            .sent(1)
            .lifetime(satquic_cc::careful_resume::DEFAULT_LIFETIME);
        base_config.validation_token_config(tokens);
        base_config.migration(false);
        let endpoint = Endpoint::server(base_config.clone(), options.listen)
            .map_err(|e| NetError::Setup(format!("cannot listen on {}: {e}", options.listen)))?;
        Ok(Server {
            endpoint,
            state: Arc::new(ServerState {
                options,
                counters: Counters::default(),
                kept: Mutex::new(VecDeque::new()),
                per_address: Mutex::new(HashMap::new()),
                released_at: Mutex::new(Instant::now()),
                saved: Mutex::new(SavedStateStore::new(
                    SAVED_STATE_CAPACITY,
                    satquic_cc::careful_resume::DEFAULT_LIFETIME,
                )),
                base_config,
                www_root,
            }),
            fingerprint,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.endpoint
            .local_addr()
            .unwrap_or(self.state.options.listen)
    }

    /// SHA-256 of the server certificate (what a client passes to `--pin`).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The counters so far.
    pub fn stats(&self) -> ServerStats {
        let c = &self.state.counters;
        ServerStats {
            active_connections: c.active.load(Ordering::Relaxed),
            accepted: c.accepted.load(Ordering::Relaxed),
            resumed: c.resumed.load(Ordering::Relaxed),
            abandoned: c.abandoned.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            retries_sent: c.retries.load(Ordering::Relaxed),
            handshake_failures: c.handshake_failures.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            bad_requests: c.bad_requests.load(Ordering::Relaxed),
            bytes_sent: c.bytes_sent.load(Ordering::Relaxed),
            bytes_received: c.bytes_received.load(Ordering::Relaxed),
        }
    }

    /// The most recent connections (see [`ServerOptions::keep_connections`]).
    pub fn connections(&self) -> Vec<Arc<ConnectionInfo>> {
        lock(&self.state.kept).iter().cloned().collect()
    }

    /// A handle that can stop the server from elsewhere.
    pub fn endpoint(&self) -> Endpoint {
        self.endpoint.clone()
    }

    /// Serves until the endpoint is closed ([`Server::close`]).
    pub async fn serve(&self) {
        while let Some(incoming) = self.endpoint.accept().await {
            self.on_incoming(incoming);
        }
    }

    /// Closes every connection and stops [`Server::serve`].
    pub fn close(&self) {
        self.endpoint
            .close(VarInt::from_u32(0), b"server shutting down");
    }

    fn on_incoming(&self, incoming: Incoming) {
        let state = &self.state;
        let c = &state.counters;
        let from = incoming.remote_address().ip();
        let crowded = lock(&state.per_address).get(&from).copied().unwrap_or(0)
            >= state.options.max_connections_per_address;
        if crowded || c.active.load(Ordering::Relaxed) >= state.options.max_connections {
            c.refused.fetch_add(1, Ordering::Relaxed);
            incoming.refuse();
            return;
        }
        if state.options.retry && !incoming.remote_address_validated() {
            if incoming.may_retry() {
                c.retries.fetch_add(1, Ordering::Relaxed);
                let _ = incoming.retry();
            } else {
                incoming.ignore();
            }
            return;
        }
        let accepted_at = Instant::now();
        // Only in-process callers that keep connections read their per-ACK events.
        let events = Arc::new(
            if state.options.keep_connections > 0 || state.options.qlog_dir.is_some() {
                EventStore::default()
            } else {
                EventStore::for_report()
            },
        );
        let endpoint = RemoteEndpoint::new(incoming.local_ip(), incoming.remote_address().ip());
        let resume = lock(&state.saved).take(&endpoint, SystemTime::now()).ok();
        let (mut transport, probe) = match state.options.transport.build_resuming(
            Some(events.clone() as Arc<dyn EventSink>),
            accepted_at,
            resume,
        ) {
            Ok(t) => t,
            Err(_) => {
                incoming.refuse();
                return;
            }
        };
        let stack_qlog = state.options.qlog_dir.as_ref().map(|_| {
            let buffer = satquic_run::qlog::QlogBuffer::default();
            transport.qlog_stream(crate::qlog::stack_stream(
                &buffer,
                "satquic server",
                accepted_at,
            ));
            buffer
        });
        let odcid: String = incoming
            .orig_dst_cid()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut config = state.base_config.clone();
        config.transport_config(Arc::new(transport));
        let remote = incoming.remote_address();
        // A client that presented an address-validation token from an earlier connection
        // is answered in 0.5-RTT (RFC 9000 Sec. 8.1.3: no amplification limit): with its
        // request in 0-RTT, the response starts one round trip earlier.
        let returning = incoming.remote_address_validated();
        let connecting = match incoming.accept_with(Arc::new(config)) {
            Ok(c) => c,
            Err(_) => {
                c.handshake_failures.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        c.accepted.fetch_add(1, Ordering::Relaxed);
        if resume.is_some() {
            c.resumed.fetch_add(1, Ordering::Relaxed);
        }
        let info = Arc::new(ConnectionInfo {
            remote,
            accepted_at,
            cc: state.options.transport.spec.cc.clone(),
            events,
            probe,
            connection: Mutex::new(None),
            final_stats: Mutex::new(None),
        });
        if state.options.keep_connections > 0 {
            let mut kept = lock(&state.kept);
            if kept.len() >= state.options.keep_connections {
                kept.pop_front();
            }
            kept.push_back(info.clone());
        }
        let guard = ActiveGuard::new(state.clone(), from);
        let state = state.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let connecting = if returning {
                match connecting.into_0rtt() {
                    Ok((conn, _)) => Ok(conn),
                    Err(connecting) => Err(connecting),
                }
            } else {
                Err(connecting)
            };
            let handshake = match connecting {
                Ok(conn) => Ok(Ok(conn)),
                Err(connecting) => {
                    tokio::time::timeout(state.options.handshake_timeout, connecting).await
                }
            };
            let conn = match handshake {
                Ok(Ok(conn)) => conn,
                _ => {
                    state
                        .counters
                        .handshake_failures
                        .fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            *lock(&info.connection) = Some(conn.clone());
            let alpn = conn
                .handshake_data()
                .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
                .and_then(|d| d.protocol)
                .unwrap_or_default();
            let serve = async {
                match alpn.as_slice() {
                    ALPN_PERF => serve_perf(&state, &conn, &info).await,
                    ALPN_HQ => crate::http::serve_hq(&state, &conn).await,
                    ALPN_H3 => crate::http::serve_h3(&state, conn.clone()).await,
                    _ => conn.close(VarInt::from_u32(0x178), b"no application protocol"),
                }
                let _ = conn.closed().await;
            };
            tokio::select! {
                () = serve => {}
                () = until_silent(&conn) => {
                    state.counters.abandoned.fetch_add(1, Ordering::Relaxed);
                    conn.close(VarInt::from_u32(CLOSE_PEER_SILENT), b"peer stopped answering");
                }
            }
            // Sec. 3.1 "Updating": the connection's observation replaces the saved set.
            if let Ok(o) = careful_resume_observation(conn.congestion_state()) {
                lock(&state.saved).save(o.save(endpoint, SystemTime::now()));
            }
            *lock(&info.final_stats) = Some(conn.stats());
            *lock(&info.connection) = None;
            if let (Some(dir), Some(stack)) = (&state.options.qlog_dir, &stack_qlog) {
                // Closed: quinn wrote its last events. A qlog that cannot be written is
                // logged, never fatal for the server.
                if let Err(e) = crate::qlog::write_server_qlog(
                    dir,
                    &odcid,
                    remote,
                    &info.events.events(),
                    &stack.take(),
                    accepted_at.elapsed(),
                ) {
                    tracing::warn!("{e}");
                }
            }
        });
    }
}

/// Returns when the peer has not answered anything sent to it for [`SILENT_PEER_MIN`] or
/// [`SILENT_PEER_RTTS`] smoothed RTTs, whichever is longer. A peer with nothing to
/// answer (an idle connection) is not silent: the clock starts at the first datagram the
/// server sends after the peer's latest one.
async fn until_silent(conn: &Connection) {
    let mut tick = tokio::time::interval(SILENCE_CHECK_INTERVAL);
    let stats = conn.stats();
    let mut received = stats.udp_rx.datagrams;
    let mut sent_then = stats.udp_tx.datagrams;
    let mut unanswered_since: Option<Instant> = None;
    loop {
        tick.tick().await;
        let stats = conn.stats();
        if stats.udp_rx.datagrams != received {
            received = stats.udp_rx.datagrams;
            sent_then = stats.udp_tx.datagrams;
            unanswered_since = None;
        } else if stats.udp_tx.datagrams > sent_then {
            let since = *unanswered_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= (conn.rtt() * SILENT_PEER_RTTS).max(SILENT_PEER_MIN) {
                return;
            }
        }
    }
}

/// Gives the heap pages that freed memory left behind back to the system. glibc's
/// allocator keeps them (per thread arena) for reuse, so without this a server that once
/// held many connections (their packet records and buffers) keeps that footprint for
/// good: 50 clients killed mid-download left it at 140 MB, eighteen times its fresh size.
/// Elsewhere (musl, other systems) a no-op.
pub fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only returns free pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Counts a connection as active, in total and for its address, while it lives.
struct ActiveGuard(Arc<ServerState>, IpAddr);

impl ActiveGuard {
    fn new(state: Arc<ServerState>, from: IpAddr) -> Self {
        state.counters.active.fetch_add(1, Ordering::Relaxed);
        *lock(&state.per_address).entry(from).or_insert(0) += 1;
        ActiveGuard(state, from)
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let left = self.0.counters.active.fetch_sub(1, Ordering::Relaxed) - 1;
        {
            // Always when the last connection ends; otherwise at most once an interval.
            let mut released_at = lock(&self.0.released_at);
            if left == 0 || released_at.elapsed() >= MEMORY_RELEASE_INTERVAL {
                *released_at = Instant::now();
                release_memory();
            }
        }
        let mut per_address = lock(&self.0.per_address);
        if let Some(n) = per_address.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                per_address.remove(&self.1);
            }
        }
    }
}

impl ServerState {
    pub(crate) fn count_request(&self) {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_bad_request(&self) {
        self.counters.bad_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_sent(&self, bytes: u64) {
        self.counters.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn www_root(&self) -> Option<&std::path::Path> {
        self.www_root.as_deref()
    }
}

async fn serve_perf(state: &Arc<ServerState>, conn: &Connection, info: &Arc<ConnectionInfo>) {
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(_) => return,
        };
        let state = state.clone();
        let conn = conn.clone();
        let info = info.clone();
        tokio::spawn(async move {
            perf_stream(&state, &conn, &info, send, recv).await;
        });
    }
}

async fn read_request(recv: &mut RecvStream) -> Result<Request, u32> {
    let mut size = [0u8; 8];
    recv.read_exact(&mut size)
        .await
        .map_err(|_| perf::ERR_BAD_REQUEST)?;
    let size = u64::from_be_bytes(size);
    let mut len = [0u8; 2];
    match recv.read_exact(&mut len).await {
        Err(quinn::ReadExactError::FinishedEarly(0)) => {
            return Ok(Request {
                size,
                upload: false,
            });
        }
        Err(_) => return Err(perf::ERR_BAD_REQUEST),
        Ok(()) => {}
    }
    let len = u16::from_be_bytes(len) as usize;
    if len > perf::MAX_OPTIONS_LEN {
        return Err(perf::ERR_BAD_REQUEST);
    }
    let mut opts = vec![0u8; len];
    recv.read_exact(&mut opts)
        .await
        .map_err(|_| perf::ERR_BAD_REQUEST)?;
    Request::parse_options(size, &opts).map_err(|_| perf::ERR_BAD_REQUEST)
}

async fn perf_stream(
    state: &Arc<ServerState>,
    conn: &Connection,
    info: &Arc<ConnectionInfo>,
    mut send: SendStream,
    mut recv: RecvStream,
) {
    let request = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut recv)).await {
        Ok(Ok(r)) => r,
        Ok(Err(code)) => {
            state.count_bad_request();
            let _ = send.reset(VarInt::from_u32(code));
            let _ = recv.stop(VarInt::from_u32(code));
            return;
        }
        Err(_) => {
            state.count_bad_request();
            let _ = send.reset(VarInt::from_u32(perf::ERR_BAD_REQUEST));
            let _ = recv.stop(VarInt::from_u32(perf::ERR_BAD_REQUEST));
            return;
        }
    };
    let limit = state.options.max_request_bytes;
    if request.size != u64::MAX && request.size > limit {
        state.count_bad_request();
        let _ = send.reset(VarInt::from_u32(perf::ERR_TOO_LARGE));
        let _ = recv.stop(VarInt::from_u32(perf::ERR_TOO_LARGE));
        return;
    }
    state.count_request();
    if request.upload {
        let mut received = 0u64;
        let mut first: Option<Instant> = None;
        let mut last = Instant::now();
        loop {
            match recv.read_chunk(64 * 1024, false).await {
                Ok(Some(chunk)) => {
                    let now = Instant::now();
                    first.get_or_insert(now);
                    last = now;
                    received += chunk.bytes.len() as u64;
                    state
                        .counters
                        .bytes_received
                        .fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
                    if received > limit {
                        let _ = recv.stop(VarInt::from_u32(perf::ERR_TOO_LARGE));
                        let _ = send.reset(VarInt::from_u32(perf::ERR_TOO_LARGE));
                        return;
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        let micros = first.map_or(0, |f| last.duration_since(f).as_micros() as u64);
        let receipt = Receipt {
            bytes: received,
            micros,
        };
        let _ = send.write_all(&receipt.encode()).await;
        let _ = send.finish();
        let _ = send.stopped().await;
        return;
    }
    // Download: the request is complete; nothing more is read.
    let _ = recv.stop(VarInt::from_u32(0));
    // A download "until stopped" (iperf's -t) also ends at the per-request limit.
    let mut left = request.size.min(limit);
    while left > 0 {
        let n = left.min(satquic_run::ZEROS.len() as u64) as usize;
        if send
            .write_chunk(Bytes::from_static(&satquic_run::ZEROS[..n]))
            .await
            .is_err()
        {
            return; // the client stopped reading or went away
        }
        state.count_sent(n as u64);
        left -= n as u64;
    }
    if send.finish().is_err() {
        return;
    }
    // Every byte acknowledged: tell the client what the sender saw.
    if let Ok(None) = send.stopped().await {
        let report = server_report(info, conn);
        if let Ok(mut uni) = conn.open_uni().await
            && let Ok(json) = serde_json::to_vec(&report)
        {
            let _ = uni.write_all(&json).await;
            let _ = uni.finish();
        }
    }
}

/// The sender's view of a connection, as sent to the client.
pub fn server_report(info: &ConnectionInfo, conn: &Connection) -> ServerReport {
    report_with(info, conn.stats(), perf::MAX_REPORT_EVENTS)
}

/// The sender's view built from `stats` and the connection's probe and events (at most
/// `max_events` of them; per-ACK samples and SEARCH evaluations are left out).
pub(crate) fn report_with(
    info: &ConnectionInfo,
    stats: quinn::ConnectionStats,
    max_events: usize,
) -> ServerReport {
    sender_report(&info.cc, &info.probe, &info.events, stats, max_events)
}

/// The data sender's view of a connection (the server's for downloads, the client's own
/// for uploads): quinn's `stats`, the controller's `probe` and at most `max_events` of its
/// events (per-ACK samples and SEARCH evaluations left out).
pub(crate) fn sender_report(
    cc: &str,
    probe: &ProbeHandle,
    events: &EventStore,
    stats: quinn::ConnectionStats,
    max_events: usize,
) -> ServerReport {
    let probe = satquic_run::probe::read_probe(probe);
    let events: Vec<serde_json::Value> = events
        .events()
        .into_iter()
        .filter(|e| !matches!(e, CcEvent::Sample { .. } | CcEvent::SearchEval { .. }))
        .take(max_events)
        .map(|event| satquic_run::record::FlowEvent { flow: 0, event }.to_json())
        .collect();
    ServerReport {
        cc: cc.to_string(),
        packets_sent: stats.path.sent_packets,
        packets_lost: stats.path.lost_packets,
        bytes_sent: stats.udp_tx.bytes,
        bytes_lost: stats.path.lost_bytes,
        udp_datagrams_sent: stats.udp_tx.datagrams,
        congestion_events: stats.path.congestion_events,
        ack_frames_received: stats.frame_rx.acks,
        first_rtt_s: probe.first_rtt.map(|d| d.as_secs_f64()),
        min_rtt_s: Some(stats.path.min_rtt.as_secs_f64()),
        first_loss_detected_at_s: probe.first_congestion.map(|d| d.as_secs_f64()),
        events,
    }
}
