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
//!
//! The driver ([`run_client`]) is a list of steps, each in its file: `connect.rs` (the
//! configuration, the handshake, the close), `transfer.rs` (the transfer and its
//! progress), `intervals.rs` (the interval rows), `resumption.rs` (what a client keeps to
//! resume, in memory or in a file), `tokens.rs` (the servers' address-validation tokens
//! among it).

mod connect;
mod intervals;
mod resumption;
mod tokens;
mod transfer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use satquic_run::Workload;
use satquic_run::probe::read_probe;
use serde::Serialize;

use crate::NetError;
use crate::perf::{self, ServerReport};
use crate::tls::{ALPN_H3, ALPN_HQ, ALPN_PERF, Verify};
use crate::transport::NetTransport;

use connect::{ClientSetup, connect};
use intervals::IntervalTicker;
use transfer::{Progress, ending, transfer_until_done};

pub use resumption::{
    CLIENT_SAVED_CAPACITY, Resumption, STATE_FILE_MAX_BYTES, STATE_FORMAT, STATE_VERSION,
};
pub use tokens::{TOKEN_KEEP, TOKEN_MAX_BYTES, TOKEN_SERVERS, TOKENS_PER_SERVER};
pub use transfer::{STREAM_PACKET_OVERHEAD_BYTES, UPLOAD_AHEAD_MIN_BYTES, UPLOAD_POLL};

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
    /// Keep TLS sessions, address-validation tokens and (uploads) the client's Careful
    /// Resume parameters here, and resume from what an earlier run with the same store
    /// left: the request goes in 0-RTT (with a TLS session), with the token, and an
    /// upload's controller starts from the saved parameters. Writing a file-backed store
    /// back is the caller's ([`Resumption::save`]).
    pub resumption: Option<Arc<Resumption>>,
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

/// How long the client waits for its CONNECTION_CLOSE to leave (not the whole draining
/// period of RFC 9000 Sec. 10.2: the process is about to end). The endpoint never goes
/// idle within it (draining lasts three probe timeouts), so the client always waits this
/// long: long enough for the endpoint's driver to send one datagram on a loaded machine,
/// short enough not to count in a transfer timed from the client's start to its exit (the
/// peer matrix's clock; 200 ms did, on every satquic row).
pub const CLOSE_GRACE: Duration = Duration::from_millis(20);

/// The time cap of a run without one (`-t`/`--time-cap` absent): a year.
const NO_TIME_CAP: Duration = Duration::from_secs(365 * 86400);

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
    if options.alpn == Alpn::Perf && options.path.is_some() {
        // perf requests a size or a duration, never an object: the path was ignored.
        return Err(NetError::Usage(
            "--path needs --alpn hq-interop or h3; the perf protocol moves -n bytes or \
             runs for -t, it fetches no path"
                .into(),
        ));
    }
    if let Some(dir) = &options.qlog_dir {
        crate::qlog::prepare_qlog_dir(dir)?;
    }
    // SSLKEYLOGFILE is input too: refused here, before anything is printed.
    crate::tls::keylog::from_environment()?;
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
    let (config, mut setup) = ClientSetup::new(&options, start)?;
    let cap = options.time_cap.unwrap_or(NO_TIME_CAP);
    let mut connected = connect(&options, config, &setup.verifier, cap).await?;
    let connected_at = start.elapsed();
    // Connected: the saved set the controller started from is used up (a connection that
    // failed returned it when `setup` was dropped).
    if let Some(loan) = setup.resume_loan.take() {
        loan.spend();
    }

    let progress = Arc::new(Progress::new(start, options.progress.clone()));
    let conn = &connected.conn;
    let ticker =
        IntervalTicker::start(options.interval, conn, &progress, &setup.probe, on_interval);
    let zero_rtt_accepted = connected.zero_rtt_accepted.take();
    let (outcome, zero_rtt) = transfer_until_done(
        &options,
        conn,
        &progress,
        &setup.probe,
        cap,
        zero_rtt_accepted,
    )
    .await;
    let ended = start.elapsed();
    let (status, error, completed_at) = ending(outcome, ended);
    let intervals = ticker.finish().await;

    let server_report = transfer::server_report(&options, conn, status).await;
    let stats = conn.stats();
    if let (Some(r), Some(path)) = (&options.resumption, setup.resume_path) {
        r.save_observation(conn, path);
    }
    let sender_report = options.upload.then(|| {
        crate::server::sender_report(
            options.transport.spec.cc.as_str(),
            &setup.probe,
            &setup.events,
            stats,
            perf::MAX_REPORT_EVENTS,
        )
    });
    connected.close().await;

    let mut result = ClientResult {
        started_at: start,
        status: status.into(),
        error,
        upload: options.upload,
        requested_bytes: requested_bytes(&options),
        bytes: progress.bytes.load(Ordering::Relaxed),
        connected_at: Some(connected_at),
        first_byte_at: *lock(&progress.first_byte),
        completed_at,
        ended_at: ended,
        mb_times: lock(&progress.mb_times).clone(),
        received_mb_times: lock(&progress.received_mb_times).clone(),
        intervals,
        stats: Some(stats),
        server_report,
        sender_report,
        server_certificate: setup.verifier.seen(),
        probe: Some(read_probe(&setup.probe)),
        qlog_file: None,
        zero_rtt,
    };
    if let Some(dir) = &options.qlog_dir {
        result.qlog_file = Some(setup.write_qlog(dir, &options, &result)?);
    }
    Ok(result)
}

/// The bytes the client asked for: a perf or synthetic object's size; none for a timed
/// run or a `--path` object (whose size is the server's; the request names none).
fn requested_bytes(options: &ClientOptions) -> Option<u64> {
    match options.workload {
        _ if options.alpn != Alpn::Perf && options.path.is_some() => None,
        Workload::Download { bytes } => Some(bytes),
        Workload::Timed { .. } => None,
    }
}

/// Resolves when the caller interrupts the run ([`ClientOptions::interrupt`]); never
/// without an interrupt.
async fn interrupted(options: &ClientOptions) {
    match &options.interrupt {
        Some(n) => n.notified().await,
        None => std::future::pending().await,
    }
}
