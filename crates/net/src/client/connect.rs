//! Setting up and opening the connection: the QUIC configuration (TLS, the transport
//! with satquic's controller, resumption), the handshake (or 0-RTT) and the close.
//!
//! A handshake that cannot succeed says why at once, where it can: nothing listening on
//! the port ([`nothing_listens`]), a refused certificate (with its fingerprint, for
//! `--pin`), an interrupt; otherwise it gives up after 30 s or the time cap.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quinn::crypto::rustls::QuicClientConfig;
use quinn::{ClientConfig, Connection, Endpoint, VarInt};
use quinn_proto::{ConnectionIdGenerator, RandomConnectionIdGenerator};
use satquic_cc::{EventSink, RemoteEndpoint};
use satquic_run::probe::ProbeHandle;
use satquic_run::qlog::QlogBuffer;

use super::{CLOSE_GRACE, ClientOptions, ClientResult, interrupted, lock};
use crate::NetError;
use crate::perf;
use crate::persist::saved::Loan;
use crate::server::EventStore;
use crate::tls::ServerVerifier;

/// Length of the client's first destination connection ID: quinn's default (its
/// `MAX_CID_SIZE`), at least the 8 bytes RFC 9000 Sec. 7.2 asks for.
const ODCID_LEN: usize = 20;

/// Longest a handshake may take (less when the time cap is shorter).
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(30);

/// What the client's connection is checked and recorded with.
pub(super) struct ClientSetup {
    /// Checks the server's certificate, and remembers what it saw.
    pub(super) verifier: Arc<ServerVerifier>,
    /// The client's own controller (what an upload's sender does).
    pub(super) probe: ProbeHandle,
    /// The controller's events.
    pub(super) events: Arc<EventStore>,
    /// quinn-proto's own qlog, with `--qlog`.
    stack_qlog: Option<QlogBuffer>,
    /// The original destination connection ID, once quinn chose it.
    odcid: Arc<Mutex<Option<quinn_proto::ConnectionId>>>,
    /// The path the client's own Careful Resume observation is saved for: uploads with a
    /// [`Resumption`](super::Resumption) only.
    pub(super) resume_path: Option<RemoteEndpoint>,
    /// The saved set the client's controller started from, until the connection is up.
    pub(super) resume_loan: Option<Loan>,
}

impl ClientSetup {
    /// Builds the transport (from the flow's `start`; an upload's controller resumes from
    /// the parameters saved for its path, if any), the TLS configuration and the QUIC
    /// client configuration (returned beside the setup: connecting consumes it).
    pub(super) fn new(
        options: &ClientOptions,
        start: Instant,
    ) -> Result<(ClientConfig, Self), NetError> {
        // The qlog wants every event; otherwise only what the record reports.
        let events = Arc::new(if options.qlog_dir.is_some() {
            EventStore::default()
        } else {
            EventStore::for_report()
        });
        // The client is the data sender of uploads only: its Careful Resume matters there.
        let resume_path = options
            .resumption
            .as_ref()
            .filter(|_| options.upload)
            .map(|_| super::resumption::path_to(options.server));
        let (resume, resume_loan) = options
            .resumption
            .as_ref()
            .zip(resume_path)
            .and_then(|(r, path)| r.lend_saved(path))
            .unzip();
        let (mut transport, probe) = options.transport.build_resuming(
            Some(events.clone() as Arc<dyn EventSink>),
            start,
            resume,
        )?;
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
        let (crypto, verifier) = tls_config(options)?;
        let mut config = ClientConfig::new(Arc::new(
            QuicClientConfig::try_from(crypto).map_err(|e| NetError::Setup(e.to_string()))?,
        ));
        config.transport_config(Arc::new(transport));
        if let Some(r) = &options.resumption {
            config.token_store(r.token_store(options.server));
        }
        let odcid_slot = odcid.clone();
        config.initial_dst_cid_provider(Arc::new(move || {
            let cid = RandomConnectionIdGenerator::new(ODCID_LEN).generate_cid();
            lock(&odcid_slot).get_or_insert(cid);
            cid
        }));
        let setup = ClientSetup {
            verifier,
            probe,
            events,
            stack_qlog,
            odcid,
            resume_path,
            resume_loan,
        };
        Ok((config, setup))
    }

    /// Writes the run's qlog into `dir`: quinn-proto's events merged with satquic's,
    /// named after the original destination connection ID.
    pub(super) fn write_qlog(
        &self,
        dir: &std::path::Path,
        options: &ClientOptions,
        result: &ClientResult,
    ) -> Result<std::path::PathBuf, NetError> {
        let stack = self
            .stack_qlog
            .as_ref()
            .map(QlogBuffer::take)
            .unwrap_or_default();
        let odcid =
            lock(&self.odcid).map(|cid| cid.iter().map(|b| format!("{b:02x}")).collect::<String>());
        crate::qlog::write_client_qlog(
            dir,
            options,
            result,
            &self.events.events(),
            &stack,
            odcid.as_deref(),
        )
    }
}

/// The TLS configuration and certificate verifier: the ones a resumption store kept
/// (rustls resumes only with the configuration that made the session), else new ones,
/// kept there for the next run.
fn tls_config(
    options: &ClientOptions,
) -> Result<(Arc<rustls::ClientConfig>, Arc<ServerVerifier>), NetError> {
    let kept = options
        .resumption
        .as_ref()
        .and_then(|r| lock(&r.tls).clone());
    if let Some(kept) = kept {
        return Ok(kept);
    }
    let verifier = ServerVerifier::new(options.verify.clone())?;
    let mut crypto = crate::tls::client_crypto(verifier.clone(), options.alpn.id())?;
    crypto.enable_early_data = options.resumption.is_some();
    let crypto = Arc::new(crypto);
    if let Some(r) = &options.resumption {
        *lock(&r.tls) = Some((crypto.clone(), verifier.clone()));
    }
    Ok((crypto, verifier))
}

/// An open connection and its endpoint.
pub(super) struct Connected {
    pub(super) endpoint: Endpoint,
    pub(super) conn: Connection,
    /// With 0-RTT: resolves to whether the server accepted it.
    pub(super) zero_rtt_accepted: Option<quinn::ZeroRttAccepted>,
}

impl Connected {
    /// Closes the connection and lets the close frame out, without waiting for the whole
    /// draining period.
    pub(super) async fn close(&self) {
        self.conn.close(VarInt::from_u32(perf::CLOSE_DONE), b"done");
        let _ = tokio::time::timeout(CLOSE_GRACE, self.endpoint.wait_idle()).await;
    }
}

/// Opens a UDP socket and connects: in 0-RTT when resuming a session, else through the
/// handshake, within the handshake limit (at most `cap`).
pub(super) async fn connect(
    options: &ClientOptions,
    config: ClientConfig,
    verifier: &ServerVerifier,
    cap: Duration,
) -> Result<Connected, NetError> {
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
    let handshake_limit = cap.min(HANDSHAKE_LIMIT);
    // A resumed session sends the request in 0-RTT, without waiting for the handshake.
    let early = match options.resumption {
        Some(_) => connecting.into_0rtt(),
        None => Err(connecting),
    };
    let (conn, zero_rtt_accepted) = match early {
        Ok((conn, accepted)) => (conn, Some(accepted)),
        Err(connecting) => {
            let handshake = tokio::select! {
                h = tokio::time::timeout(handshake_limit, connecting) => h,
                () = nothing_listens(options.server) => {
                    return Err(NetError::Transfer(format!(
                        "connection refused: nothing listens on UDP {}",
                        options.server
                    )));
                }
                () = interrupted(options) => {
                    // Dropping the handshake closes it; let that close get out.
                    let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
                    return Err(NetError::Transfer(format!(
                        "interrupted during the handshake with {}",
                        options.server
                    )));
                }
            };
            (
                handshake_result(options, verifier, handshake_limit, handshake)?,
                None,
            )
        }
    };
    Ok(Connected {
        endpoint,
        conn,
        zero_rtt_accepted,
    })
}

/// The connection, or why the handshake failed: a refused certificate (and how to trust
/// it), another failure (with the certificate seen), or no answer within `limit`.
fn handshake_result(
    options: &ClientOptions,
    verifier: &ServerVerifier,
    limit: Duration,
    handshake: Result<Result<Connection, quinn::ConnectionError>, tokio::time::error::Elapsed>,
) -> Result<Connection, NetError> {
    match handshake {
        Ok(Ok(c)) => Ok(c),
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
            Err(NetError::Transfer(format!(
                "handshake with {} failed: {e}{seen}",
                options.server
            )))
        }
        Err(_) => Err(NetError::Transfer(format!(
            "no handshake with {} within {} s",
            options.server,
            limit.as_secs()
        ))),
    }
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
