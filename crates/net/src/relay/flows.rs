//! The flow table: one flow per client address, each with its own upstream socket (like
//! a NAT) and a task that receives the server's answers on it.
//!
//! The table is bounded (`max_flows`) without letting strangers lock real clients out: a
//! flow is *established* only once the server answered it with something other than
//! Version Negotiation and the client then sent again ([`FlowState`]); until then it is
//! forgotten after [`UNANSWERED_FLOW_TIMEOUT`] without traffic, and when the table is
//! full the oldest such flow makes room for a new client ([`make_room`]). So one datagram
//! per source port, answered by Version Negotiation, a Retry or an Initial the sender
//! never follows up, cannot fill the table. A flow with no datagram either way for the
//! idle timeout is forgotten by its own task.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::forward::send_retry;
use super::recv::{GroReceiver, RecvBuffers};
use super::{Event, RelayOptions, Shared, count_direct, lock};

/// A flow not yet established ([`FlowState`]) is forgotten after this long without a
/// datagram: more than a handshake round trip over a GEO link with a full queue.
pub const UNANSWERED_FLOW_TIMEOUT: Duration = Duration::from_secs(10);

/// How far a flow got, for [`make_room`]: only an established flow holds its slot
/// against a new client. Kept in an `AtomicU8` shared by the I/O thread (client side)
/// and the flow's task (server side).
pub(super) struct FlowState;

impl FlowState {
    /// Only the client has sent (or the server answered with Version Negotiation only).
    pub(super) const NEW: u8 = 0;
    /// The server sent a datagram other than Version Negotiation.
    pub(super) const ANSWERED: u8 = 1;
    /// The client sent again after the server's answer: a peer that receives at its
    /// address and goes on, not one datagram from a spoofed or vanished port.
    pub(super) const ESTABLISHED: u8 = 2;

    /// Notes a datagram from the client.
    pub(super) fn on_client(state: &AtomicU8) {
        let _ = state.compare_exchange(
            Self::ANSWERED,
            Self::ESTABLISHED,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Notes a datagram from the server.
    fn on_server(state: &AtomicU8, datagram: &[u8]) {
        if !is_version_negotiation(datagram) {
            let _ = state.compare_exchange(
                Self::NEW,
                Self::ANSWERED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    fn established(state: &AtomicU8) -> bool {
        state.load(Ordering::Relaxed) == Self::ESTABLISHED
    }
}

/// A QUIC Version Negotiation packet: a long header (first bit set) with version 0
/// (RFC 9000 Sec. 17.2.1). Any version's server sends it to any long-header datagram of
/// a version it does not speak, so it says nothing about the sender.
fn is_version_negotiation(datagram: &[u8]) -> bool {
    datagram.len() >= 5 && datagram[0] & 0x80 != 0 && datagram[1..5] == [0, 0, 0, 0]
}

/// The I/O thread's side of the table: it finds a client's flow, or makes one; the flows'
/// own tasks remove them.
pub(super) struct FlowTable {
    flows: FlowMap,
    next_id: u32,
    /// The server.
    to: SocketAddr,
    max_flows: usize,
    idle_timeout: Duration,
    /// The listening socket, when forwarding without a model.
    direct: Option<Arc<UdpSocket>>,
    /// The receive buffers every upstream socket shares.
    buffers: Arc<Mutex<RecvBuffers>>,
    shared: Arc<Shared>,
    tx: SyncSender<Event>,
}

/// A client's flow, as a datagram from the client needs it.
pub(super) struct FlowRef {
    pub(super) id: u32,
    /// [`FlowState`].
    pub(super) state: Arc<AtomicU8>,
    /// Last datagram either way, ms since the relay's epoch.
    pub(super) seen: Arc<AtomicU64>,
    /// The upstream socket, for direct forwarding (no model).
    pub(super) direct_up: Option<Arc<UdpSocket>>,
}

/// The scheduler thread is gone (the relay is stopping): the I/O thread ends too.
pub(super) struct SchedulerGone;

impl FlowTable {
    pub(super) fn new(
        options: &RelayOptions,
        direct: Option<Arc<UdpSocket>>,
        shared: Arc<Shared>,
        tx: SyncSender<Event>,
    ) -> Self {
        FlowTable {
            flows: Arc::new(Mutex::new(HashMap::new())),
            next_id: 0,
            to: options.to,
            max_flows: options.max_flows,
            idle_timeout: options.flow_idle_timeout,
            direct,
            buffers: RecvBuffers::shared(),
            shared,
            tx,
        }
    }

    /// The flow of client address `from`, made if it is new; `None` when a new one cannot
    /// be made (the table is full of answered flows, counted as refused, or no upstream
    /// socket could be opened): its datagram is dropped.
    pub(super) fn flow_of(&mut self, from: SocketAddr) -> Result<Option<FlowRef>, SchedulerGone> {
        let existing = lock(&self.flows).get(&from).map(|f| FlowRef {
            id: f.id,
            state: f.state.clone(),
            seen: f.seen.clone(),
            direct_up: f.direct_up.clone(),
        });
        match existing {
            Some(f) => Ok(Some(f)),
            None => self.add(from),
        }
    }

    /// Makes a flow for `from`: its upstream socket, the scheduler's copy of it (with a
    /// model), its task and its entry.
    fn add(&mut self, from: SocketAddr) -> Result<Option<FlowRef>, SchedulerGone> {
        if !make_room(&self.flows, self.max_flows, &self.shared, &self.tx) {
            self.shared.flows_refused.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let Some((std_sock, sock, up_receiver)) = upstream_socket(self.to, &self.buffers) else {
            return Ok(None);
        };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let now_ms = self.shared.start.elapsed().as_millis() as u64;
        let seen = Arc::new(AtomicU64::new(now_ms));
        let state = Arc::new(AtomicU8::new(FlowState::NEW));
        let (direct_up, upstream) = if self.direct.is_some() {
            (Some(Arc::new(std_sock)), None)
        } else {
            (None, Some(std_sock))
        };
        if let Some(upstream) = upstream
            && self
                .tx
                .send(Event::NewFlow {
                    id,
                    client: from,
                    upstream,
                })
                .is_err()
        {
            return Err(SchedulerGone);
        }
        let task = tokio::spawn(upstream_task(
            UpstreamFlow {
                id,
                client: from,
                sock,
                receiver: up_receiver,
                seen: seen.clone(),
                state: state.clone(),
                direct: self.direct.clone(),
            },
            self.flows.clone(),
            self.shared.clone(),
            self.tx.clone(),
            self.idle_timeout,
        ));
        let mut map = lock(&self.flows);
        map.insert(
            from,
            FlowEntry {
                id,
                created_ms: now_ms,
                seen: seen.clone(),
                state: state.clone(),
                direct_up: direct_up.clone(),
                task: task.abort_handle(),
            },
        );
        self.shared.flow_count.store(map.len(), Ordering::Relaxed);
        drop(map);
        Ok(Some(FlowRef {
            id,
            state,
            seen,
            direct_up,
        }))
    }
}

/// Whether a new flow may be added: the table has room, or its oldest flow that is not
/// established is forgotten to make some.
fn make_room(flows: &FlowMap, max_flows: usize, shared: &Shared, tx: &SyncSender<Event>) -> bool {
    let mut map = lock(flows);
    if map.len() < max_flows {
        return true;
    }
    let oldest = map
        .iter()
        .filter(|(_, f)| !FlowState::established(&f.state))
        .min_by_key(|(_, f)| f.created_ms)
        .map(|(client, _)| *client);
    let Some(client) = oldest else {
        return false;
    };
    if let Some(f) = map.remove(&client) {
        shared.flow_count.store(map.len(), Ordering::Relaxed);
        f.task.abort();
        let _ = tx.send(Event::FlowGone { id: f.id });
        shared.flows_evicted.fetch_add(1, Ordering::Relaxed);
    }
    true
}

/// One client address's flow, as the I/O thread keeps it.
struct FlowEntry {
    id: u32,
    /// When the flow was made, ms since the relay's epoch.
    created_ms: u64,
    /// Last datagram either way, ms since the relay's epoch.
    seen: Arc<AtomicU64>,
    /// [`FlowState`].
    state: Arc<AtomicU8>,
    /// The upstream socket, for direct forwarding (no model).
    direct_up: Option<Arc<UdpSocket>>,
    /// The flow's upstream task (ended when the flow is evicted).
    task: tokio::task::AbortHandle,
}

/// Client address -> its flow.
type FlowMap = Arc<Mutex<HashMap<SocketAddr, FlowEntry>>>;

/// What a flow's upstream task needs.
struct UpstreamFlow {
    id: u32,
    client: SocketAddr,
    sock: tokio::net::UdpSocket,
    receiver: GroReceiver,
    seen: Arc<AtomicU64>,
    state: Arc<AtomicU8>,
    /// The listening socket, when forwarding without a model.
    direct: Option<Arc<UdpSocket>>,
}

/// A socket connected to the server for one flow: a copy that sends (from the scheduler
/// or, without a model, the I/O thread) and the one the flow's task receives on.
fn upstream_socket(
    to: SocketAddr,
    buffers: &Arc<Mutex<RecvBuffers>>,
) -> Option<(UdpSocket, tokio::net::UdpSocket, GroReceiver)> {
    let bind: SocketAddr = if to.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let sock = UdpSocket::bind(bind).ok()?;
    sock.connect(to).ok()?;
    let receiver = GroReceiver::new(&sock, buffers.clone()).ok()?;
    sock.set_nonblocking(true).ok()?;
    let sender = sock.try_clone().ok()?;
    Some((
        sender,
        tokio::net::UdpSocket::from_std(sock).ok()?,
        receiver,
    ))
}

/// Receives the server's datagrams for one flow and sends them on (to the scheduler, or
/// straight to the client without a model), until the flow idles out.
async fn upstream_task(
    mut flow: UpstreamFlow,
    flows: FlowMap,
    shared: Arc<Shared>,
    tx: SyncSender<Event>,
    idle: Duration,
) {
    let mut batch: Vec<(Vec<u8>, Instant)> = Vec::new();
    loop {
        batch.clear();
        let recv = flow
            .receiver
            .recv(&flow.sock, |_, data, at| batch.push((data.to_vec(), at)));
        match tokio::time::timeout(idle.min(Duration::from_secs(1)), recv).await {
            Ok(Ok(())) => {
                for (data, _) in &batch {
                    FlowState::on_server(&flow.state, data);
                }
                flow.seen
                    .store(shared.start.elapsed().as_millis() as u64, Ordering::Relaxed);
                for (data, at) in batch.drain(..) {
                    if let Some(listen) = &flow.direct {
                        let ok = send_retry(|| listen.send_to(&data, flow.client));
                        count_direct(&shared.direct_down, ok, data.len());
                        continue;
                    }
                    let event = Event::Packet {
                        flow: flow.id,
                        down: true,
                        at,
                        data,
                    };
                    match tx.try_send(event) {
                        Ok(()) => {}
                        Err(TrySendError::Full(_)) => {
                            shared.overload_down.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(TrySendError::Disconnected(_)) => return,
                    }
                }
            }
            // The server's port is closed (ICMP): keep the flow until it idles out.
            Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(_) => {}
        }
        let limit = if FlowState::established(&flow.state) {
            idle
        } else {
            idle.min(UNANSWERED_FLOW_TIMEOUT)
        };
        let now_ms = shared.start.elapsed().as_millis() as u64;
        if now_ms.saturating_sub(flow.seen.load(Ordering::Relaxed)) >= limit.as_millis() as u64 {
            let mut map = lock(&flows);
            map.remove(&flow.client);
            shared.flow_count.store(map.len(), Ordering::Relaxed);
            drop(map);
            let _ = tx.send(Event::FlowGone { id: flow.id });
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only Version Negotiation, or one datagram each way (a Retry, an Initial nobody
    /// follows up), leaves a flow evictable; the client sending after a real answer
    /// establishes it (issue 32 item 4).
    #[test]
    fn a_flow_is_established_only_by_a_real_answer_and_a_client_that_goes_on() {
        let vn = [0x80, 0, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 1];
        let retry = [0xf0, 0, 0, 0, 1, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        let short = [0x40, 1, 2, 3, 4, 5];
        assert!(is_version_negotiation(&vn));
        assert!(!is_version_negotiation(&retry) && !is_version_negotiation(&short));
        assert!(!is_version_negotiation(&[0x80, 0, 0]));

        let state = AtomicU8::new(FlowState::NEW);
        for _ in 0..3 {
            FlowState::on_server(&state, &vn);
            FlowState::on_client(&state);
        }
        assert!(!FlowState::established(&state), "Version Negotiation only");
        FlowState::on_server(&state, &retry);
        assert!(!FlowState::established(&state), "one datagram each way");
        FlowState::on_server(&state, &short);
        assert!(
            !FlowState::established(&state),
            "the client has not sent again"
        );
        FlowState::on_client(&state);
        assert!(FlowState::established(&state));
        FlowState::on_server(&state, &vn);
        assert!(
            FlowState::established(&state),
            "established stays established"
        );
    }
}
