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
//!   [`REQUEST_TIMEOUT`]; idle connections close after the transport's idle timeout (the
//!   server sends no keep-alives of its own);
//! - stream counts per connection are capped by the transport settings, a request may ask
//!   for at most `max_request_bytes` (a download "until stopped" ends there), uploads are
//!   cut there too;
//! - per-connection event logs keep at most [`MAX_EVENTS_PER_CONNECTION`] events, and
//!   only what the report sends (at most [`perf::MAX_REPORT_EVENTS`](crate::perf::MAX_REPORT_EVENTS)) unless an in-process
//!   caller keeps connections.
//!
//! # Memory
//!
//! A connection holds what quinn keeps for it: records of its packets in flight (not
//! their data: downloads are sent from a static buffer), at most the send window of
//! unacknowledged stream data (hq-interop and h3 responses, which are fresh memory, are
//! written at most [`WRITE_AHEAD_BYTES`](crate::http::WRITE_AHEAD_BYTES) ahead of what the
//! connection has sent, but what is in flight is a copy there: 30 h3 downloads on a
//! CPU-bound loopback held 4.1 GB, 565 MB with `--max-window 16M`); received data not yet read, at most the receive window;
//! its congestion controller and its report's events. The windows are `--max-window`
//! (256 MiB by default), so an uploader that leaves gaps could make the server hold that
//! much per connection: size `--max-window` x `--max-connections` to the machine. In
//! practice (release build, loopback, measured with `ps`): 7.8 MB fresh; 0.13 to 0.35 MB
//! per downloading connection (64 connections 18 MB, 50 connections at 12 s 21 MB,
//! 20 x 1 GB 17 MB). Freed memory goes back to the system when connections end
//! ([`release_memory`]): after 300 clients killed at once, 50 killed after 12 s and 20
//! complete 1 GB downloads the server is at 12 MB (it stayed at 78 to 140 MB before).
//!
//! # Where things are
//!
//! The server's options, state and handle are here; `admission.rs` decides which
//! connections it takes and enforces the limits above, `connection.rs` runs each one,
//! `perf_streams.rs` serves the perf protocol (`crate::http` the others), `events.rs` is a
//! connection's bounded event log, `report.rs` the sender's report, `resume.rs` the
//! Careful Resume store (in memory, and on disk with `--resume-store`),
//! `token_key.rs` the address-validation key that outlives a restart (`--token-key`),
//! `used_tokens.rs` the record of the tokens used (beside the key), and `files.rs` when
//! those files are written.

mod admission;
mod connection;
mod events;
mod files;
mod perf_streams;
mod report;
mod resume;
mod token_key;
mod used_tokens;

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, Incoming, ServerConfig, VarInt};
use quinn_proto::crypto::HandshakeTokenKey;
use satquic_run::token_log::SingleUseTokenLog;
use used_tokens::UsedTokens;

use crate::NetError;
use crate::persist::saved::SavedStates;
use crate::tls::{ALPN_H3, ALPN_HQ, ALPN_PERF, Identity};
use crate::transport::NetTransport;

pub use admission::{
    CLOSE_HANDSHAKE_TIMEOUT, CLOSE_PEER_SILENT, MEMORY_RELEASE_INTERVAL, SILENCE_CHECK_INTERVAL,
    SILENT_PEER_MIN, SILENT_PEER_RTTS, memory_releases, release_memory,
};
pub use connection::ConnectionInfo;
pub use events::{EventStore, MAX_EVENTS_PER_CONNECTION, SAMPLE_STEP};
pub use files::FILE_WRITE_INTERVAL;
pub(crate) use report::sender_report;
pub use report::server_report;
pub use resume::{SAVED_STATE_CAPACITY, STORE_FILE_MAX_BYTES, STORE_FORMAT, STORE_VERSION};
pub use token_key::TOKEN_KEY_BYTES;
pub use used_tokens::{USED_TOKENS_FILE_MAX_BYTES, USED_TOKENS_FORMAT, USED_TOKENS_VERSION};

/// A request's header must arrive within this long.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an address-validation token the server gives (NEW_TOKEN) is accepted: as long
/// as Careful Resume's saved parameters, so a client that returns within it is answered
/// at once and resumed. The client keeps tokens as long ([`crate::client::TOKEN_KEEP`]).
pub const TOKEN_LIFETIME: Duration = satquic_cc::careful_resume::DEFAULT_LIFETIME;
/// Default of [`ServerOptions::max_connections_per_address`].
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 64;
/// On shutdown, how long the server waits for its connections' tasks to end (their
/// Careful Resume observations saved) before it writes the store.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

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
    /// Keep the Careful Resume store in this file, so that it outlives the process
    /// (`--resume-store`; format and bounds in `resume.rs`'s docs).
    pub resume_store: Option<PathBuf>,
    /// Keep the address-validation token key in this file, made when missing, so that
    /// tokens given before a restart are still accepted (`--token-key`).
    pub token_key: Option<PathBuf>,
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
            resume_store: None,
            token_key: None,
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
    /// Resume, RFC 9959) and whose handshake completed.
    pub resumed: u64,
    /// Connections closed because the peer stopped answering ([`SILENT_PEER_MIN`]).
    pub abandoned: u64,
    /// Connections whose client proved its address with a token from an earlier
    /// connection (NEW_TOKEN, RFC 9000 Sec. 8.1.3), so was spared the Retry.
    pub tokens_accepted: u64,
    /// Client paths with saved Careful Resume parameters now.
    pub saved_paths: usize,
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
    tokens_accepted: AtomicU64,
}

/// What every connection of a server shares: its options, counters, limits' state and
/// the Careful Resume store.
pub(crate) struct ServerState {
    pub(crate) options: ServerOptions,
    counters: Counters,
    /// Careful Resume (RFC 9959): what each client address's last connection observed
    /// (Sec. 3.1), handed to its next connection (Sec. 3.2).
    saved: Arc<Mutex<SavedStates>>,
    /// Where `saved` is written, with `--resume-store`.
    store_file: Option<resume::StoreFile>,
    /// The address-validation tokens used so far (single use, RFC 9000 Sec. 8.1.4), kept
    /// beside the key with `--token-key`.
    used_tokens: UsedTokens,
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
    /// Validates the options, loads or makes the certificate, reads the Careful Resume
    /// store and the token key when given, and binds the socket. Must be called inside a
    /// tokio runtime.
    pub fn bind(options: ServerOptions) -> Result<Self, NetError> {
        check_limits(&options)?;
        let www_root = www_root(&options)?;
        if let Some(dir) = &options.qlog_dir {
            crate::qlog::prepare_qlog_dir(dir)?;
        }
        let (saved, store_file) = resume::open_store(options.resume_store.as_deref())?;
        let (token_key, used_tokens) = address_validation(&options)?;
        let identity = match &options.cert {
            Some((cert, key)) => Identity::from_pem_files(cert, key)?,
            None => Identity::self_signed(&[])?,
        };
        let fingerprint = identity.fingerprint();
        let base_config = quic_config(&options, &identity, token_key, used_tokens.log.clone())?;
        let state = Arc::new(ServerState {
            options,
            counters: Counters::default(),
            kept: Mutex::new(VecDeque::new()),
            per_address: Mutex::new(HashMap::new()),
            released_at: Mutex::new(Instant::now()),
            saved: Arc::new(Mutex::new(saved)),
            store_file,
            used_tokens,
            base_config,
            www_root,
        });
        // The files are written at once (expired entries dropped, mode 0600), which also
        // proves them writable before the server listens.
        files::write_all(&state, false).map_err(|e| NetError::Usage(e.to_string()))?;
        let listen = state.options.listen;
        let endpoint = Endpoint::server(state.base_config.clone(), listen)
            .map_err(|e| NetError::Setup(format!("cannot listen on {listen}: {e}")))?;
        Ok(Server {
            endpoint,
            state,
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
            tokens_accepted: c.tokens_accepted.load(Ordering::Relaxed),
            saved_paths: lock(&self.state.saved).len(),
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

    /// Serves until the endpoint is closed ([`Server::close`]); writes the files it keeps
    /// (the Careful Resume store, the record of used tokens) whenever they changed, at
    /// most once a [`FILE_WRITE_INTERVAL`].
    pub async fn serve(&self) {
        let accept = async {
            while let Some(incoming) = self.endpoint.accept().await {
                self.on_incoming(incoming);
            }
        };
        tokio::select! {
            () = accept => {}
            () = files::keep_written(self.state.clone()) => {}
        }
    }

    /// Closes every connection and stops [`Server::serve`].
    pub fn close(&self) {
        self.endpoint
            .close(VarInt::from_u32(0), b"server shutting down");
    }

    /// Closes every connection, waits (at most [`SHUTDOWN_GRACE`]) for their tasks to
    /// save what they observed, then writes the files it keeps, the record of used tokens
    /// marked complete: what `satquic server` does on SIGINT and SIGTERM.
    pub async fn shut_down(&self) -> Result<(), NetError> {
        self.close();
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        while self.state.counters.active.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        files::write_all(&self.state, true)
    }

    /// A new connection: admitted (or refused, or sent a Retry), then accepted.
    fn on_incoming(&self, incoming: Incoming) {
        if let Some(incoming) = admission::admit(&self.state, incoming) {
            connection::accept(&self.state, incoming);
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

    /// Whether the server keeps files (`--resume-store`, `--token-key`).
    fn keeps_files(&self) -> bool {
        self.store_file.is_some() || self.options.token_key.is_some()
    }
}

/// The connection limits, checked.
fn check_limits(options: &ServerOptions) -> Result<(), NetError> {
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
    Ok(())
}

/// The `--www` directory, resolved, if one is given.
fn www_root(options: &ServerOptions) -> Result<Option<PathBuf>, NetError> {
    let Some(dir) = &options.www else {
        return Ok(None);
    };
    let root = dir
        .canonicalize()
        .map_err(|e| NetError::Usage(format!("--www {}: {e}", dir.display())))?;
    if !root.is_dir() {
        return Err(NetError::Usage(format!(
            "--www {}: not a directory",
            root.display()
        )));
    }
    Ok(Some(root))
}

/// The address-validation token key (`--token-key`, made when missing; `None`: quinn's
/// random one) and the record of used tokens (kept beside the key file).
fn address_validation(
    options: &ServerOptions,
) -> Result<(Option<Arc<dyn HandshakeTokenKey>>, UsedTokens), NetError> {
    let Some(path) = options.token_key.as_deref() else {
        return Ok((None, UsedTokens::in_memory()));
    };
    let (key, made) = token_key::load_or_create(path)?;
    let used = UsedTokens::open(path, made, SystemTime::now())?;
    Ok((Some(key), used))
}

/// The QUIC configuration every connection starts from: TLS with the server's
/// `identity`, the transport, the incoming-connection bound, and address validation with
/// `token_key` (quinn's random one without) and the record of used tokens `used`.
fn quic_config(
    options: &ServerOptions,
    identity: &Identity,
    token_key: Option<Arc<dyn HandshakeTokenKey>>,
    used: Arc<SingleUseTokenLog>,
) -> Result<ServerConfig, NetError> {
    let crypto = crate::tls::server_crypto(identity, &[ALPN_PERF, ALPN_HQ, ALPN_H3])?;
    let quic_crypto = QuicServerConfig::try_from(crypto)
        .map_err(|e| NetError::Setup(format!("TLS configuration: {e}")))?;
    let mut config = ServerConfig::with_crypto(Arc::new(quic_crypto));
    let (mut transport, _) = options.transport.build(None, Instant::now())?;
    // As every connection's own (connection.rs): no keep-alives from the server.
    transport.keep_alive_interval(None);
    config.transport_config(Arc::new(transport));
    config.max_incoming(options.max_connections.saturating_mul(4).max(16));
    // Address-validation tokens (NEW_TOKEN, RFC 9000 Sec. 8.1.3), one per connection,
    // each accepted once: a returning client is answered at once, in 0.5-RTT when it
    // resumes with 0-RTT.
    let mut tokens = quinn_proto::ValidationTokenConfig::default();
    tokens.log(used).sent(1).lifetime(TOKEN_LIFETIME);
    config.validation_token_config(tokens);
    // Without a key file quinn's random key dies with the process, and every token
    // given before a restart with it.
    if let Some(key) = token_key {
        config.token_key(key);
    }
    config.migration(false);
    Ok(config)
}

/// Locks a mutex, also one a panicking task left poisoned (counters and tables, still
/// consistent).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
