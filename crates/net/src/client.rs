//! `satquic client`: downloads (or uploads with `reverse`) over the perf protocol, or
//! fetches a path over `hq-interop` or `h3` from any QUIC server, and reports like
//! iperf3/qperf: interval rows, the time to each MB, connection setup and first byte.
//!
//! All times are measured from the flow's start: the moment the client starts its
//! handshake (as in the simulator's record).
//!
//! Perf and hq-interop downloads are read unordered and the in-order prefix is tracked here
//! ([`InOrder`](satquic_run::InOrder)): quinn 0.11's ordered reassembly gives up on a stream with more than 1024
//! gaps, which a lossy satellite link (the Viasat AQM drops one arrival in four above its
//! threshold) produces within a second. The per-MB times count only in-order bytes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{ClientConfig, Connection, Endpoint, VarInt};
use quinn_proto::{ConnectionIdGenerator, RandomConnectionIdGenerator};
use satquic_cc::EventSink;
use satquic_run::Workload;
use satquic_run::probe::{ProbeHandle, read_probe};
use satquic_run::qlog::QlogBuffer;
use satquic_run::record::push_mb_times;
use serde::Serialize;

use crate::NetError;
use crate::perf::{self, Receipt, Request, ServerReport};
use crate::server::EventStore;
use crate::tls::{ALPN_H3, ALPN_HQ, ALPN_PERF, ServerVerifier, Verify};
use crate::transport::NetTransport;
use satquic_run::{InOrder, ZEROS};

/// Which application protocol the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// satquic's perf protocol (downloads, uploads, server report).
    Perf,
    /// HTTP/0.9 of the QUIC interop runner.
    Hq,
    /// HTTP/3.
    H3,
}

impl Alpn {
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "perf" | "satquic-perf" => Ok(Alpn::Perf),
            "hq-interop" | "hq" => Ok(Alpn::Hq),
            "h3" => Ok(Alpn::H3),
            other => Err(format!(
                "unknown --alpn '{other}'; valid: perf, hq-interop, h3"
            )),
        }
    }

    fn id(self) -> &'static [u8] {
        match self {
            Alpn::Perf => ALPN_PERF,
            Alpn::Hq => ALPN_HQ,
            Alpn::H3 => ALPN_H3,
        }
    }
}

/// What the client does.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub server: SocketAddr,
    /// TLS server name (SNI).
    pub server_name: String,
    pub alpn: Alpn,
    /// `Download { bytes }` (`-n`) or `Timed { duration }` (`-t`).
    pub workload: Workload,
    /// Upload instead of download (perf protocol only).
    pub upload: bool,
    /// Path for hq-interop/h3 (default `/<bytes>`, the synthetic object of that size).
    pub path: Option<String>,
    pub transport: NetTransport,
    /// How the server's certificate is checked.
    pub verify: Verify,
    /// Interval of the progress rows; `None`: no rows.
    pub interval: Option<Duration>,
    /// Give up after this long (reported as `capped`).
    pub time_cap: Option<Duration>,
    /// Wait for the server's report after a perf download.
    pub want_server_report: bool,
    /// Write a qlog (JSON-SEQ) file into this directory.
    pub qlog_dir: Option<PathBuf>,
    /// Mirror of the in-order bytes received so far, for callers that sample it live.
    pub progress: Option<Arc<AtomicU64>>,
    /// Notified (`notify_one`) to end the run early, as Ctrl-C does: the client closes the
    /// connection (CONNECTION_CLOSE, so the server frees it at once) and returns what it
    /// has, with status `interrupted`.
    pub interrupt: Option<Arc<tokio::sync::Notify>>,
    /// Keep TLS sessions and address-validation tokens here, and resume from what an
    /// earlier run with the same store left: the request goes in 0-RTT.
    pub resumption: Option<Arc<Resumption>>,
}

/// What a client keeps between its connections to resume one, in memory: its TLS
/// configuration, whose session cache holds the server's tickets (for 0-RTT, RFC 9001
/// Sec. 4.6; rustls resumes a session only with the configuration and certificate
/// verifier that made it), and the server's address-validation tokens (NEW_TOKEN, RFC
/// 9000 Sec. 8.1.3, which let the server answer at once). Share one between the runs of
/// one process, with the same server and options; rustls cannot write its tickets out,
/// so a new process starts afresh.
pub struct Resumption {
    tls: Mutex<Option<(Arc<rustls::ClientConfig>, Arc<ServerVerifier>)>>,
    tokens: Arc<dyn quinn_proto::TokenStore>,
}

impl Resumption {
    pub fn new() -> Self {
        Resumption {
            tls: Mutex::new(None),
            tokens: Arc::new(quinn_proto::TokenMemoryCache::default()),
        }
    }
}

impl Default for Resumption {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Resumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resumption")
    }
}

impl ClientOptions {
    /// A plain download of `bytes` from `server` with default settings, accepting any
    /// certificate ([`Verify::Any`]: for servers the caller started itself; set
    /// `verify` for others).
    pub fn download(server: SocketAddr, bytes: u64) -> Self {
        ClientOptions {
            server,
            server_name: "localhost".into(),
            alpn: Alpn::Perf,
            workload: Workload::Download { bytes },
            upload: false,
            path: None,
            transport: NetTransport::default(),
            verify: Verify::Any,
            interval: None,
            time_cap: None,
            want_server_report: true,
            qlog_dir: None,
            progress: None,
            interrupt: None,
            resumption: None,
        }
    }
}

/// Length of the client's first destination connection ID: quinn's default (its
/// `MAX_CID_SIZE`), at least the 8 bytes RFC 9000 Sec. 7.2 asks for.
const ODCID_LEN: usize = 20;

/// How long the client waits for its CONNECTION_CLOSE to leave (not the whole draining
/// period of RFC 9000 Sec. 10.2: the process is about to end).
pub const CLOSE_GRACE: Duration = Duration::from_millis(200);

/// Per-packet bytes that are not stream data in an upload's packets: a short header
/// (1 + 8-byte connection ID + up to 4-byte packet number), the AEAD tag (16) and a
/// STREAM frame header (up to 11). Acknowledged packet bytes less this are the stream
/// bytes the server has (an estimate at most ~0.5 % low: quinn does not tell how much of a
/// stream is acknowledged).
pub const STREAM_PACKET_OVERHEAD_BYTES: u64 = 40;
/// An upload writes at most this far ahead of what is acknowledged, beyond twice the
/// congestion window (and 1/64 of what it wrote, for the estimate's error): what a TCP
/// socket buffer does for iperf3. Without a bound quinn buffers up to its send window
/// (256 MiB), so a timed upload would run on for as long as that takes to drain, and the
/// bytes written say nothing about the bytes delivered.
pub const UPLOAD_AHEAD_MIN_BYTES: u64 = 64 * 1024;
/// How often an upload re-reads the acknowledged bytes while it waits.
pub const UPLOAD_POLL: Duration = Duration::from_millis(2);

/// Called with each interval row as it is made.
pub type IntervalCallback = Box<dyn FnMut(&IntervalRow) + Send>;

/// One interval row (iperf3's table).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalRow {
    pub start_s: f64,
    pub end_s: f64,
    /// Application bytes moved in the interval (in order, for downloads).
    pub bytes: u64,
    pub rate_bps: f64,
    /// The client connection's smoothed RTT.
    pub rtt_s: Option<f64>,
    /// The client's congestion window (meaningful when it sends: uploads).
    pub cwnd_bytes: Option<u64>,
    /// Packets the client's connection declared lost in the interval.
    pub lost_packets: u64,
}

/// How a client run ended.
#[derive(Debug, Clone)]
pub struct ClientResult {
    /// The flow's start: when the client began its handshake.
    pub started_at: Instant,
    /// `completed`, `capped`, `interrupted` or `failed`.
    pub status: String,
    pub error: Option<String>,
    pub upload: bool,
    pub requested_bytes: Option<u64>,
    /// Application bytes moved (in order).
    pub bytes: u64,
    /// Handshake done, since the flow's start; with 0-RTT, when the connection could
    /// send its request (at once).
    pub connected_at: Option<Duration>,
    /// First application byte received (downloads) or acknowledged (uploads).
    pub first_byte_at: Option<Duration>,
    pub completed_at: Option<Duration>,
    pub ended_at: Duration,
    /// When the client had `k + 1` MB (10^6 bytes) in order.
    pub mb_times: Vec<Duration>,
    /// When it had received `k + 1` MB in any order (perf downloads, which read out of
    /// order; empty where reads are ordered): what qperf's `byteslog` counts, for
    /// comparisons with it.
    pub received_mb_times: Vec<Duration>,
    pub intervals: Vec<IntervalRow>,
    pub stats: Option<quinn::ConnectionStats>,
    pub server_report: Option<ServerReport>,
    /// The client's own view as the data sender (uploads): what the server reports after
    /// a download.
    pub sender_report: Option<ServerReport>,
    /// SHA-256 of the certificate the server presented.
    pub server_certificate: Option<String>,
    /// The client's own congestion controller (uploads).
    pub probe: Option<satquic_run::probe::ProbeState>,
    pub qlog_file: Option<PathBuf>,
    /// With [`ClientOptions::resumption`] and a session to resume: whether the server
    /// accepted the 0-RTT request (`None`: no 0-RTT attempted).
    pub zero_rtt: Option<bool>,
}

/// Shared progress of a transfer.
struct Progress {
    start: Instant,
    bytes: AtomicU64,
    mirror: Option<Arc<AtomicU64>>,
    first_byte: Mutex<Option<Duration>>,
    mb_times: Mutex<Vec<Duration>>,
    received_mb_times: Mutex<Vec<Duration>>,
}

impl Progress {
    fn set(&self, total: u64) {
        let now = self.start.elapsed();
        let old = self.bytes.swap(total, Ordering::Relaxed);
        if let Some(m) = &self.mirror {
            m.store(total, Ordering::Relaxed);
        }
        if old == 0 && total > 0 {
            lock(&self.first_byte).get_or_insert(now);
        }
        push_mb_times(&mut lock(&self.mb_times), total, now);
    }

    /// `total` bytes received in any order (perf downloads).
    fn set_received(&self, total: u64) {
        push_mb_times(
            &mut lock(&self.received_mb_times),
            total,
            self.start.elapsed(),
        );
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Validates the options without touching the network.
pub fn validate(options: &ClientOptions) -> Result<(), NetError> {
    options.transport.validate()?;
    if rustls::pki_types::ServerName::try_from(options.server_name.as_str()).is_err() {
        return Err(NetError::Usage(format!(
            "invalid server name '{}' (--sni): use a DNS name or an IP address",
            options.server_name
        )));
    }
    if options.upload && options.alpn != Alpn::Perf {
        return Err(NetError::Usage(
            "uploads (-R) need the perf protocol, not hq-interop or h3".into(),
        ));
    }
    if options.alpn != Alpn::Perf && matches!(options.workload, Workload::Timed { .. }) {
        return Err(NetError::Usage(
            "-t needs the perf protocol; use -n or a path with hq-interop/h3".into(),
        ));
    }
    if let Some(p) = &options.path
        && !p.starts_with('/')
    {
        return Err(NetError::Usage(format!("path '{p}' must start with '/'")));
    }
    match options.workload {
        Workload::Download { bytes: 0 } => {
            Err(NetError::Usage("size must be at least 1 byte".into()))
        }
        Workload::Timed { duration } if duration.is_zero() => {
            Err(NetError::Usage("-t must be above 0 seconds".into()))
        }
        _ => Ok(()),
    }
}

/// Runs one transfer. `on_interval` sees each interval row as it is made (for live
/// printing). Setup problems (bad options, no socket, handshake failure) are errors; a
/// transfer that breaks off after the handshake is a result with status `failed`.
pub async fn run_client(
    options: ClientOptions,
    on_interval: Option<IntervalCallback>,
) -> Result<ClientResult, NetError> {
    validate(&options)?;
    let start = Instant::now();
    // The qlog wants every event; otherwise only what the record reports.
    let events = Arc::new(if options.qlog_dir.is_some() {
        EventStore::default()
    } else {
        EventStore::for_report()
    });
    let (mut transport, probe) = options
        .transport
        .build(Some(events.clone() as Arc<dyn EventSink>), start)?;
    // quinn-proto's own qlog (packets sent, received and lost, recovery metrics), timed
    // from the flow's start like satquic's events, merged with them at the end.
    let stack_qlog = options.qlog_dir.as_ref().map(|_| {
        let buffer = QlogBuffer::default();
        transport.qlog_stream(crate::qlog::stack_stream(&buffer, "satquic client", start));
        buffer
    });
    // The original destination connection ID names the qlog file (the QUIC interop
    // runner's `<odcid>_client.sqlog`): quinn's own random choice, noted on the way.
    let odcid: Arc<Mutex<Option<quinn_proto::ConnectionId>>> = Arc::default();
    let kept = options
        .resumption
        .as_ref()
        .and_then(|r| lock(&r.tls).clone());
    let (crypto, verifier) = match kept {
        Some(kept) => kept,
        None => {
            let verifier = ServerVerifier::new(options.verify.clone())?;
            let mut crypto = crate::tls::client_crypto(verifier.clone(), options.alpn.id())?;
            crypto.enable_early_data = options.resumption.is_some();
            let crypto = Arc::new(crypto);
            if let Some(r) = &options.resumption {
                *lock(&r.tls) = Some((crypto.clone(), verifier.clone()));
            }
            (crypto, verifier)
        }
    };
    let mut config = ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(crypto).map_err(|e| NetError::Setup(e.to_string()))?,
    ));
    config.transport_config(Arc::new(transport));
    if let Some(r) = &options.resumption {
        config.token_store(r.tokens.clone());
    }
    let odcid_slot = odcid.clone();
    config.initial_dst_cid_provider(Arc::new(move || {
        let cid = RandomConnectionIdGenerator::new(ODCID_LEN).generate_cid();
        lock(&odcid_slot).get_or_insert(cid);
        cid
    }));
    let bind: SocketAddr = if options.server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let endpoint = Endpoint::client(bind)
        .map_err(|e| NetError::Setup(format!("cannot open a UDP socket: {e}")))?;
    let connecting = endpoint
        .connect_with(config, options.server, &options.server_name)
        .map_err(|e| NetError::Usage(format!("cannot connect to {}: {e}", options.server)))?;
    let cap = options.time_cap.unwrap_or(Duration::from_secs(365 * 86400));
    let handshake_limit = cap.min(Duration::from_secs(30));
    let interrupted = async {
        match &options.interrupt {
            Some(n) => n.notified().await,
            None => std::future::pending().await,
        }
    };
    // A resumed session sends the request in 0-RTT, without waiting for the handshake.
    let early = match options.resumption {
        Some(_) => connecting.into_0rtt(),
        None => Err(connecting),
    };
    let (connecting, zero_rtt_accepted) = match early {
        Ok((conn, accepted)) => (Ok(conn), Some(accepted)),
        Err(connecting) => (Err(connecting), None),
    };
    let handshake = match connecting {
        Ok(conn) => Ok(Ok(conn)),
        Err(connecting) => tokio::select! {
        h = tokio::time::timeout(handshake_limit, connecting) => h,
        () = nothing_listens(options.server) => {
            return Err(NetError::Transfer(format!(
                "connection refused: nothing listens on UDP {}",
                options.server
            )));
        }
        () = interrupted => {
            // Dropping the handshake closes it; let that close get out.
            let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
            return Err(NetError::Transfer(format!(
                "interrupted during the handshake with {}",
                options.server
            )));
        }
        },
    };
    let conn = match handshake {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            let seen = verifier.seen().unwrap_or_default();
            if let Some(why) = verifier.refused() {
                return Err(NetError::Transfer(format!(
                    "the certificate of {} was refused: {why} (sha256 {seen}; to trust this \
                     one server, --pin {seen})",
                    options.server
                )));
            }
            let seen = if seen.is_empty() {
                seen
            } else {
                format!(" (server certificate sha256 {seen})")
            };
            return Err(NetError::Transfer(format!(
                "handshake with {} failed: {e}{seen}",
                options.server
            )));
        }
        Err(_) => {
            return Err(NetError::Transfer(format!(
                "no handshake with {} within {} s",
                options.server,
                handshake_limit.as_secs()
            )));
        }
    };
    let connected_at = start.elapsed();

    let progress = Arc::new(Progress {
        start,
        bytes: AtomicU64::new(0),
        mirror: options.progress.clone(),
        first_byte: Mutex::new(None),
        mb_times: Mutex::new(Vec::new()),
        received_mb_times: Mutex::new(Vec::new()),
    });
    let done = Arc::new(AtomicBool::new(false));
    let intervals = Arc::new(Mutex::new(Vec::new()));
    let ticker = options.interval.map(|every| {
        tokio::spawn(ticker(
            every,
            conn.clone(),
            progress.clone(),
            done.clone(),
            intervals.clone(),
            probe.clone(),
            on_interval,
        ))
    });

    let attempt = || async {
        let transfer = transfer(&options, &conn, &progress, &probe);
        let interrupted = async {
            match &options.interrupt {
                Some(n) => n.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            o = tokio::time::timeout(cap.saturating_sub(start.elapsed()), transfer) => Some(o),
            () = interrupted => None,
        }
    };
    let mut outcome = attempt().await;
    // The handshake is over once the transfer is (or the connection is gone).
    let zero_rtt = match zero_rtt_accepted {
        Some(accepted) => Some(accepted.await),
        None => None,
    };
    if zero_rtt == Some(false) && matches!(outcome, Some(Ok(Err(_)))) {
        // The server refused 0-RTT and dropped the request sent in it (RFC 9001 Sec.
        // 4.6.2): ask again in 1-RTT.
        progress.set(0);
        outcome = attempt().await;
    }
    let ended = start.elapsed();
    let (status, error, completed_at) = match outcome {
        Some(Ok(Ok(()))) => ("completed", None, Some(ended)),
        Some(Ok(Err(e))) => ("failed", Some(e.to_string()), None),
        Some(Err(_)) => ("capped", None, None),
        None => ("interrupted", None, None),
    };
    done.store(true, Ordering::Relaxed);
    if let Some(t) = ticker {
        let _ = t.await;
    }
    let mut server_report = None;
    if status == "completed"
        && options.alpn == Alpn::Perf
        && !options.upload
        && options.want_server_report
        && matches!(options.workload, Workload::Download { .. })
    {
        let wait = (conn.rtt() * 4).max(Duration::from_secs(2));
        server_report = tokio::time::timeout(wait, read_report(&conn))
            .await
            .ok()
            .flatten();
    }
    let stats = conn.stats();
    let sender_report = options.upload.then(|| {
        crate::server::sender_report(
            &options.transport.spec.cc,
            &probe,
            &events,
            stats,
            perf::MAX_REPORT_EVENTS,
        )
    });
    conn.close(VarInt::from_u32(perf::CLOSE_DONE), b"done");
    // Let the close frame out, without waiting for the whole draining period.
    let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;

    let bytes = progress.bytes.load(Ordering::Relaxed);
    let mut result = ClientResult {
        started_at: start,
        status: status.into(),
        error,
        upload: options.upload,
        // A --path object's size is the server's; the request names none.
        requested_bytes: match options.workload {
            _ if options.alpn != Alpn::Perf && options.path.is_some() => None,
            Workload::Download { bytes } => Some(bytes),
            Workload::Timed { .. } => None,
        },
        bytes,
        connected_at: Some(connected_at),
        first_byte_at: *lock(&progress.first_byte),
        completed_at,
        ended_at: ended,
        mb_times: lock(&progress.mb_times).clone(),
        received_mb_times: lock(&progress.received_mb_times).clone(),
        intervals: std::mem::take(&mut *lock(&intervals)),
        stats: Some(stats),
        server_report,
        sender_report,
        server_certificate: verifier.seen(),
        probe: Some(read_probe(&probe)),
        qlog_file: None,
        zero_rtt,
    };
    if let Some(dir) = &options.qlog_dir {
        let stack = stack_qlog
            .as_ref()
            .map(QlogBuffer::take)
            .unwrap_or_default();
        let odcid =
            lock(&odcid).map(|cid| cid.iter().map(|b| format!("{b:02x}")).collect::<String>());
        result.qlog_file = Some(crate::qlog::write_client_qlog(
            dir,
            &options,
            &result,
            &events.events(),
            &stack,
            odcid.as_deref(),
        )?);
    }
    Ok(result)
}

/// Returns if nothing listens at `server` (pends otherwise): a one-byte datagram, which
/// a QUIC server drops unread, sent from a connected socket comes back as an ICMP "port
/// unreachable" that the kernel reports as a refused connection. So a wrong port is
/// reported at once, not after the handshake timeout.
async fn nothing_listens(server: SocketAddr) {
    let bind: SocketAddr = if server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    if let Ok(sock) = tokio::net::UdpSocket::bind(bind).await
        && sock.connect(server).await.is_ok()
        && sock.send(&[0]).await.is_ok()
    {
        let mut buf = [0u8; 1];
        loop {
            match sock.recv(&mut buf).await {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return,
                Err(_) => break,
                // Something answered: it listens.
                Ok(_) => {}
            }
        }
    }
    std::future::pending().await
}

async fn read_report(conn: &Connection) -> Option<ServerReport> {
    let mut uni = conn.accept_uni().await.ok()?;
    let bytes = uni.read_to_end(perf::MAX_REPORT_BYTES).await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

async fn ticker(
    every: Duration,
    conn: Connection,
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    rows: Arc<Mutex<Vec<IntervalRow>>>,
    probe: ProbeHandle,
    mut on_row: Option<IntervalCallback>,
) {
    let mut last_bytes = 0u64;
    let mut last_lost = 0u64;
    let mut last_t = Duration::ZERO;
    let mut next = progress.start + every;
    loop {
        // Wake at the interval's end, or early when the transfer ends (checked often).
        while Instant::now() < next {
            if done.load(Ordering::Relaxed) {
                break;
            }
            let step = next
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(20));
            tokio::time::sleep(step).await;
        }
        let finished = done.load(Ordering::Relaxed);
        let t = progress.start.elapsed();
        let bytes = progress.bytes.load(Ordering::Relaxed);
        let stats = conn.stats();
        let span = t.saturating_sub(last_t);
        if span >= Duration::from_millis(1) || !finished {
            let delta = bytes - last_bytes.min(bytes);
            let p = read_probe(&probe);
            let row = IntervalRow {
                start_s: secs(last_t),
                end_s: secs(t),
                bytes: delta,
                rate_bps: if span.is_zero() {
                    0.0
                } else {
                    delta as f64 * 8.0 / secs(span)
                },
                rtt_s: Some(secs(conn.rtt())),
                cwnd_bytes: (p.sent_bytes > 0).then_some(stats.path.cwnd),
                lost_packets: stats.path.lost_packets - last_lost.min(stats.path.lost_packets),
            };
            if let Some(f) = on_row.as_mut() {
                f(&row);
            }
            lock(&rows).push(row);
        }
        if finished {
            return;
        }
        last_bytes = bytes;
        last_lost = stats.path.lost_packets;
        last_t = t;
        next += every;
    }
}

async fn transfer(
    options: &ClientOptions,
    conn: &Connection,
    progress: &Arc<Progress>,
    probe: &ProbeHandle,
) -> Result<(), NetError> {
    let requested = options.workload.requested_bytes();
    let deadline = match options.workload {
        Workload::Timed { duration } => Some(progress.start + duration),
        Workload::Download { .. } => None,
    };
    match options.alpn {
        Alpn::Perf if options.upload => upload(conn, requested, deadline, progress, probe).await,
        Alpn::Perf => download(conn, requested, deadline, progress).await,
        Alpn::Hq | Alpn::H3 => {
            let path = options
                .path
                .clone()
                .unwrap_or_else(|| format!("/{requested}"));
            let mut total = 0u64;
            let count = |n: usize| {
                total += n as u64;
                progress.set(total);
            };
            let got = if options.alpn == Alpn::Hq {
                crate::http::hq_download(conn, &path, count).await?
            } else {
                let authority = format!("{}:{}", options.server_name, options.server.port());
                crate::http::h3_download(conn, &authority, &path, count).await?
            };
            if options.path.is_none() && got != requested {
                return Err(NetError::Transfer(format!(
                    "received {got} of {requested} bytes"
                )));
            }
            Ok(())
        }
    }
}

async fn download(
    conn: &Connection,
    requested: u64,
    deadline: Option<Instant>,
    progress: &Arc<Progress>,
) -> Result<(), NetError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| NetError::Transfer(format!("{what}: {e}"));
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| fail("open stream", &e))?;
    let request = Request {
        size: requested,
        upload: false,
    };
    send.write_all(&request.encode())
        .await
        .map_err(|e| fail("send request", &e))?;
    let _ = send.finish();
    let mut in_order = InOrder::default();
    // quinn's unordered reads return each byte once.
    let mut received = 0u64;
    loop {
        let read = recv.read_chunk(usize::MAX, false);
        let chunk = match deadline {
            Some(d) => match tokio::time::timeout_at(d.into(), read).await {
                Ok(r) => r,
                Err(_) => {
                    let _ = recv.stop(VarInt::from_u32(0));
                    return Ok(());
                }
            },
            None => read.await,
        };
        match chunk {
            Ok(Some(chunk)) => {
                let prefix = in_order.insert(chunk.offset, chunk.bytes.len() as u64);
                received += chunk.bytes.len() as u64;
                progress.set_received(received);
                progress.set(prefix);
            }
            Ok(None) => break,
            Err(quinn::ReadError::Reset(code)) => {
                let why = match code.into_inner() as u32 {
                    perf::ERR_TOO_LARGE => "the server refused the size (above its --max-bytes)",
                    perf::ERR_BAD_REQUEST => "the server did not understand the request",
                    _ => "the server reset the stream",
                };
                return Err(NetError::Transfer(why.into()));
            }
            Err(e) => return Err(fail("download", &e)),
        }
    }
    let got = in_order.prefix();
    if requested != u64::MAX && got != requested {
        return Err(NetError::Transfer(format!(
            "received {got} of {requested} bytes"
        )));
    }
    Ok(())
}

async fn upload(
    conn: &Connection,
    requested: u64,
    deadline: Option<Instant>,
    progress: &Arc<Progress>,
    probe: &ProbeHandle,
) -> Result<(), NetError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| NetError::Transfer(format!("{what}: {e}"));
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| fail("open stream", &e))?;
    let request = Request {
        size: requested,
        upload: true,
    };
    send.write_all(&request.encode())
        .await
        .map_err(|e| fail("send request", &e))?;
    let header = request.encode().len() as u64;
    // Stream bytes the server has, estimated from the acknowledged packet bytes (see
    // STREAM_PACKET_OVERHEAD_BYTES), never more than written.
    let delivered = |written: u64| {
        let p = read_probe(probe);
        let mtu = u64::from(conn.stats().path.current_mtu).max(STREAM_PACKET_OVERHEAD_BYTES + 1);
        let payload = p.acked_bytes - p.acked_bytes * STREAM_PACKET_OVERHEAD_BYTES / mtu;
        (payload.saturating_sub(header).min(written), p.cwnd)
    };
    let mut written = 0u64;
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) || written >= requested {
            break;
        }
        let (got, cwnd) = delivered(written);
        progress.set(got);
        let ahead = cwnd.saturating_mul(2) + UPLOAD_AHEAD_MIN_BYTES + written / 64;
        if written - got > ahead {
            tokio::time::sleep(UPLOAD_POLL).await;
            continue;
        }
        let n = (requested - written).min(ZEROS.len() as u64) as usize;
        send.write_chunk(Bytes::from_static(&ZEROS[..n]))
            .await
            .map_err(|e| fail("upload", &e))?;
        written += n as u64;
    }
    let _ = send.finish();
    // The rows and the MB times keep following the acknowledgements until the receipt.
    let receipt = {
        let read = recv.read_to_end(64);
        tokio::pin!(read);
        loop {
            tokio::select! {
                r = &mut read => break r,
                () = tokio::time::sleep(UPLOAD_POLL) => progress.set(delivered(written).0),
            }
        }
    }
    .map_err(|e| fail("upload receipt", &e))?;
    let receipt =
        Receipt::decode(&receipt).ok_or_else(|| NetError::Transfer("bad upload receipt".into()))?;
    progress.set(receipt.bytes);
    if receipt.bytes != written {
        return Err(NetError::Transfer(format!(
            "server received {} of {written} bytes",
            receipt.bytes
        )));
    }
    Ok(())
}
