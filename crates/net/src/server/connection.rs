//! One connection, from its admission to its end: the controller built for it (from saved
//! Careful Resume parameters when its client has some), the handshake, the application
//! protocol its client chose, and what outlives it.
//!
//! Each connection runs in its own task with its own controller and event log; what an
//! in-process caller reads of it (emulated runs) is its [`ConnectionInfo`].

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quinn::{Connecting, Connection, Incoming, VarInt, ZeroRttAccepted};
use satquic_cc::{EventSink, RemoteEndpoint};
use satquic_run::probe::ProbeHandle;
use satquic_run::qlog::QlogBuffer;

use super::admission::{ActiveGuard, CLOSE_HANDSHAKE_TIMEOUT, CLOSE_PEER_SILENT, until_silent};
use super::events::EventStore;
use super::perf_streams::serve_perf;
use super::resume::{lend_saved, save_observation};
use super::{ServerOptions, ServerState, lock};
use crate::persist::saved::Loan;
use crate::tls::{ALPN_H3, ALPN_HQ, ALPN_PERF};

/// One connection's sender-side state, for in-process callers (emulated runs).
pub struct ConnectionInfo {
    pub remote: SocketAddr,
    /// When the server accepted the Initial: the origin of event and probe times.
    pub accepted_at: Instant,
    pub cc: String,
    pub events: Arc<EventStore>,
    pub probe: ProbeHandle,
    /// The connection while it is up.
    connection: Mutex<Option<Connection>>,
    /// quinn's statistics once it closed.
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

/// Accepts an admitted connection: its controller (from the Careful Resume parameters
/// saved for its client, if any), its event log and qlog, then a task that runs it to its
/// end. A controller that cannot be built refuses the connection.
pub(super) fn accept(state: &Arc<ServerState>, incoming: Incoming) {
    let accepted_at = Instant::now();
    let events = Arc::new(event_store(&state.options));
    let endpoint = RemoteEndpoint::new(incoming.local_ip(), incoming.remote_address().ip());
    let (resume, loan) = lend_saved(state, endpoint).unzip();
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
    // The server sends no keep-alives: they kept a connection whose client had nothing to
    // do (no request, no keep-alive of its own) open for good, holding its slot, where the
    // idle timeout is to close it. A client that wants its connection kept asks for it.
    transport.keep_alive_interval(None);
    let stack_qlog = state.options.qlog_dir.as_ref().map(|_| {
        let buffer = QlogBuffer::default();
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
    // A client whose address is validated (by a token from an earlier connection, RFC
    // 9000 Sec. 8.1.3, or by a Retry) is answered in 0.5-RTT, since no amplification
    // limit applies: with its request in 0-RTT, the response starts one round trip
    // earlier. Its handshake must still complete within the timeout.
    let validated = incoming.remote_address_validated();
    let c = &state.counters;
    let connecting = match incoming.accept_with(Arc::new(config)) {
        Ok(c) => c,
        Err(_) => {
            c.handshake_failures.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    c.accepted.fetch_add(1, Ordering::Relaxed);
    let info = Arc::new(ConnectionInfo {
        remote,
        accepted_at,
        cc: state.options.transport.spec.cc.to_string(),
        events,
        probe,
        connection: Mutex::new(None),
        final_stats: Mutex::new(None),
    });
    keep(state, &info);
    let guard = ActiveGuard::new(state.clone(), remote.ip());
    let task = ConnectionTask {
        state: state.clone(),
        info,
        endpoint,
        loan,
        validated,
        odcid,
        stack_qlog,
    };
    tokio::spawn(task.run(connecting, guard));
}

/// The event log of a new connection: every event when someone reads them (in-process
/// callers that keep connections, the qlog), else only what the report sends.
fn event_store(options: &ServerOptions) -> EventStore {
    if options.keep_connections > 0 || options.qlog_dir.is_some() {
        EventStore::default()
    } else {
        EventStore::for_report()
    }
}

/// Keeps `info` among the most recent connections, for in-process callers that asked for
/// some ([`ServerOptions::keep_connections`]).
fn keep(state: &ServerState, info: &Arc<ConnectionInfo>) {
    if state.options.keep_connections > 0 {
        let mut kept = lock(&state.kept);
        if kept.len() >= state.options.keep_connections {
            kept.pop_front();
        }
        kept.push_back(info.clone());
    }
}

/// What a connection's task holds, from its handshake to its end.
struct ConnectionTask {
    state: Arc<ServerState>,
    info: Arc<ConnectionInfo>,
    /// The pair of addresses its Careful Resume observation is saved for.
    endpoint: RemoteEndpoint,
    /// The saved set its controller started from, until its handshake ends.
    loan: Option<Loan>,
    /// The client proved its address (a token or a Retry): served in 0.5-RTT.
    validated: bool,
    /// The original destination connection ID, in hex: the qlog's name.
    odcid: String,
    /// quinn-proto's own qlog, with `--qlog`.
    stack_qlog: Option<QlogBuffer>,
}

impl ConnectionTask {
    /// Runs the connection: handshake, service until it closes or the peer falls silent,
    /// then what outlives it (Careful Resume's observation, final statistics, the qlog).
    /// `_active` counts it as active until the end.
    async fn run(mut self, connecting: Connecting, _active: ActiveGuard) {
        let loan = self.loan.take();
        let Some((conn, handshake)) = self.open(connecting).await else {
            self.handshake_failed();
            return;
        };
        *lock(&self.info.connection) = Some(conn.clone());
        self.serve(&conn, handshake, loan).await;
        self.finish(&conn);
    }

    /// The connection once it can be served, and what resolves when its handshake
    /// completes: a validated client's at once (0.5-RTT; the handshake goes on), `None`
    /// then; anyone else's after the handshake, within `handshake_timeout`.
    async fn open(&self, connecting: Connecting) -> Option<(Connection, Option<ZeroRttAccepted>)> {
        let connecting = if self.validated {
            match connecting.into_0rtt() {
                Ok((conn, handshake)) => return Some((conn, Some(handshake))),
                Err(connecting) => connecting,
            }
        } else {
            connecting
        };
        match tokio::time::timeout(self.state.options.handshake_timeout, connecting).await {
            Ok(Ok(conn)) => Some((conn, None)),
            _ => None,
        }
    }

    /// Serves the protocol the handshake chose until the connection closes, or closes it
    /// when the peer stops answering or its handshake (`handshake`, still under way in
    /// 0.5-RTT) does not complete within `handshake_timeout`. The saved set on `loan` is
    /// spent when the handshake completes, else given back.
    async fn serve(
        &self,
        conn: &Connection,
        handshake: Option<ZeroRttAccepted>,
        loan: Option<Loan>,
    ) {
        let state = &self.state;
        let alpn = conn
            .handshake_data()
            .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|d| d.protocol)
            .unwrap_or_default();
        let serve = async {
            match alpn.as_slice() {
                ALPN_PERF => serve_perf(state, conn, &self.info).await,
                ALPN_HQ => crate::http::serve_hq(state, conn).await,
                ALPN_H3 => crate::http::serve_h3(state, conn.clone()).await,
                _ => conn.close(VarInt::from_u32(0x178), b"no application protocol"),
            }
            let _ = conn.closed().await;
        };
        tokio::select! {
            () = serve => {}
            () = until_silent(conn) => {
                state.counters.abandoned.fetch_add(1, Ordering::Relaxed);
                conn.close(VarInt::from_u32(CLOSE_PEER_SILENT), b"peer stopped answering");
            }
            () = self.until_handshake_fails(conn, handshake, loan) => {
                self.handshake_failed();
                conn.close(VarInt::from_u32(CLOSE_HANDSHAKE_TIMEOUT), b"handshake timed out");
            }
        }
    }

    /// Returns if the handshake does not complete within `handshake_timeout`; once it
    /// has, spends `loan` and pends for ever.
    async fn until_handshake_fails(
        &self,
        conn: &Connection,
        handshake: Option<ZeroRttAccepted>,
        loan: Option<Loan>,
    ) {
        if let Some(handshake) = handshake {
            let timeout = self.state.options.handshake_timeout;
            // On a server it resolves when the handshake completes or the connection ends
            // (its value is whether 0-RTT was accepted, false here either way); an ended
            // connection has its reason set before it resolves.
            let ended = tokio::time::timeout(timeout, handshake).await.is_err()
                || conn.close_reason().is_some();
            if ended {
                return;
            }
        }
        if let Some(loan) = loan {
            loan.spend();
            let c = &self.state.counters;
            c.resumed.fetch_add(1, Ordering::Relaxed);
        }
        std::future::pending().await
    }

    fn handshake_failed(&self) {
        let c = &self.state.counters;
        c.handshake_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// What outlives a closed connection: its Careful Resume observation, its final
    /// statistics, and its qlog.
    fn finish(&self, conn: &Connection) {
        save_observation(&self.state, conn, self.endpoint);
        *lock(&self.info.final_stats) = Some(conn.stats());
        *lock(&self.info.connection) = None;
        if let (Some(dir), Some(stack)) = (&self.state.options.qlog_dir, &self.stack_qlog) {
            // Closed: quinn wrote its last events. A qlog that cannot be written is
            // logged, never fatal for the server.
            if let Err(e) = crate::qlog::write_server_qlog(
                dir,
                &self.odcid,
                self.info.remote,
                &self.info.events.events(),
                &stack.take(),
                self.info.accepted_at.elapsed(),
            ) {
                tracing::warn!("{e}");
            }
        }
    }
}
