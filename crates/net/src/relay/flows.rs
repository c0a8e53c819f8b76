//! The flow table: one flow per client address, each with its own upstream socket (like
//! a NAT) and a task that receives the server's answers on it.
//!
//! The table is bounded (`max_flows`) without letting strangers lock real clients out: a
//! flow the server has never answered is forgotten after [`UNANSWERED_FLOW_TIMEOUT`], and
//! when the table is full the oldest such flow makes room for a new client
//! ([`make_room`]). A flow with no datagram either way for the idle timeout is forgotten
//! by its own task.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::forward::send_retry;
use super::recv::{GroReceiver, RecvBuffers};
use super::{Event, RelayOptions, Shared, count_direct, lock};

/// A flow the server has not answered is forgotten after this long: more than a handshake
/// round trip over a GEO link with a full queue.
pub const UNANSWERED_FLOW_TIMEOUT: Duration = Duration::from_secs(10);

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
        let answered = Arc::new(AtomicBool::new(false));
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
                answered: answered.clone(),
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
                answered,
                direct_up: direct_up.clone(),
                task: task.abort_handle(),
            },
        );
        self.shared.flow_count.store(map.len(), Ordering::Relaxed);
        drop(map);
        Ok(Some(FlowRef {
            id,
            seen,
            direct_up,
        }))
    }
}

/// Whether a new flow may be added: the table has room, or its oldest unanswered flow
/// is forgotten to make some.
fn make_room(flows: &FlowMap, max_flows: usize, shared: &Shared, tx: &SyncSender<Event>) -> bool {
    let mut map = lock(flows);
    if map.len() < max_flows {
        return true;
    }
    let oldest = map
        .iter()
        .filter(|(_, f)| !f.answered.load(Ordering::Relaxed))
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
    /// The server has sent something to this flow.
    answered: Arc<AtomicBool>,
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
    answered: Arc<AtomicBool>,
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
                flow.answered.store(true, Ordering::Relaxed);
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
        let limit = if flow.answered.load(Ordering::Relaxed) {
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
