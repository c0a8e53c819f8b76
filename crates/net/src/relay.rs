//! `satquic link`: a UDP relay that applies the satquic-link path model in real time.
//!
//! Clients send to `listen`; the relay forwards to `to` (the server) and back. Each client
//! address gets its own upstream socket (like a NAT), so any UDP application works through
//! it: QUIC, DNS, a game. All flows share one [`Path`]: one bottleneck per direction, as in
//! the simulator. `up` is client -> server, `down` server -> client.
//!
//! # Timing
//!
//! The relay runs the *same* model as the simulator: time is `Instant::now() - start`
//! handed to [`Direction::enqueue`](satquic_link::Direction::enqueue) when a datagram
//! arrives (stamped by the receiving thread), and a scheduler thread sleeps until the
//! model's [`poll_timeout`](Path::poll_timeout), then sends every packet whose modelled
//! arrival has come. So a packet leaves at its modelled time plus the wake-up latency of
//! the scheduler thread, which is what [`DelayErrorHistogram`] measures (10 us bins).
//! Each datagram occupies its UDP payload plus [`IP_UDP_OVERHEAD_BYTES`] on the link,
//! as in the simulator.
//!
//! Without a link spec the relay forwards at once (no model): that is the "no limits"
//! mode whose forwarding rate BENCHMARKS.md reports.
//!
//! # With other QUIC (or UDP) tools
//!
//! The relay knows nothing about QUIC; point any client at `--listen` and the relay at its
//! server. Over the `qir-sat` preset (20/2 Mbit/s, 600 ms RTT), for example:
//!
//! ```text
//! satquic server -p 4433 --www ./www
//! satquic link --listen 127.0.0.1:4434 --to 127.0.0.1:4433 --link qir-sat
//! satquic client 127.0.0.1:4434 -n 10M -i 1          # perf protocol
//! gtlsclient -q --exit-on-all-streams-close --download=out 127.0.0.1 4434 \
//!     https://localhost:4434/10M                     # ngtcp2's client (h3), Debian ngtcp2-client
//! ```
//!
//! and the other way round, `satquic client --alpn h3 --path /file` through the relay to
//! another implementation's server (ngtcp2's `gtlsserver`, aioquic's `http3_server.py`).
//! Path MTU is not modelled: the relay forwards datagrams of any size.
//!
//! # Limits
//!
//! At most `max_flows` client addresses at once. A flow costs one upstream socket and a
//! small task (the receive buffers are shared by all flows) and is *unanswered* until the
//! server sends something back: an unanswered flow is forgotten after
//! [`UNANSWERED_FLOW_TIMEOUT`], and when the table is full the oldest unanswered flow
//! makes room for a new client (counted as `flows_evicted`), so datagrams from many
//! source ports (spoofed, or clients long gone) cannot lock real clients out. Only when
//! every flow is answered is a new client refused (`flows_refused`). A flow with no
//! traffic for `flow_idle_timeout` (`--flow-idle-timeout`) is forgotten. If the
//! scheduler falls behind by more than [`CHANNEL_CAPACITY`] datagrams, new arrivals are
//! dropped and counted as `overload` (never silently): a fidelity check asserts that
//! count is 0.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use satquic_link::{DirectionStats, DropReason, LinkSpec, Path};
use satquic_run::scenario::ShaperSpec;

use crate::NetError;
use crate::model::Model;

use satquic_link::IP_UDP_OVERHEAD_BYTES;
/// Datagrams that may wait between the receiving threads and the scheduler.
pub const CHANNEL_CAPACITY: usize = 1 << 16;
/// Socket buffer size asked for (the kernel caps it at `net.core.rmem_max`/`wmem_max`).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// A flow the server has not answered is forgotten after this long: more than a handshake
/// round trip over a GEO link with a full queue.
pub const UNANSWERED_FLOW_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`RelayOptions::max_flows`].
pub const DEFAULT_MAX_FLOWS: usize = 1024;
/// Default of [`RelayOptions::flow_idle_timeout`].
pub const DEFAULT_FLOW_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The scheduler spins instead of sleeping when the next event is this close.
const SPIN_THRESHOLD: Duration = Duration::from_micros(50);

/// What the relay is told.
#[derive(Debug, Clone)]
pub struct RelayOptions {
    /// Where clients send to.
    pub listen: SocketAddr,
    /// The server.
    pub to: SocketAddr,
    /// The path model; `None` forwards at once.
    pub link: Option<LinkSpec>,
    /// Seed of the model's random processes.
    pub seed: u64,
    /// A sender cap in front of the down direction (`--sender-cap`, [`crate::model`]);
    /// only with a model.
    pub sender_cap: Option<ShaperSpec>,
    /// Client addresses relayed at once.
    pub max_flows: usize,
    /// A flow with no datagram either way for this long is forgotten.
    pub flow_idle_timeout: Duration,
    /// Width of the queue-occupancy bins the ground truth keeps (a long-running relay
    /// wants coarse bins: memory grows by one bin per busy bin).
    pub occupancy_resolution: Duration,
}

impl RelayOptions {
    pub fn new(listen: SocketAddr, to: SocketAddr, link: Option<LinkSpec>) -> Self {
        RelayOptions {
            listen,
            to,
            link,
            seed: 1,
            sender_cap: None,
            max_flows: DEFAULT_MAX_FLOWS,
            flow_idle_timeout: DEFAULT_FLOW_IDLE_TIMEOUT,
            occupancy_resolution: Duration::from_secs(1),
        }
    }
}

/// Scheduling error of sent packets: actual send time minus modelled arrival, in 10 us
/// bins up to 100 ms (larger errors land in the last bin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayErrorHistogram {
    bins: Vec<u64>,
}

/// Width of a [`DelayErrorHistogram`] bin.
pub const DELAY_ERROR_BIN: Duration = Duration::from_micros(10);
const DELAY_ERROR_BINS: usize = 10_000;

impl Default for DelayErrorHistogram {
    fn default() -> Self {
        DelayErrorHistogram {
            bins: vec![0; DELAY_ERROR_BINS],
        }
    }
}

impl DelayErrorHistogram {
    pub(crate) fn add(&mut self, error: Duration) {
        let i = (error.as_nanos() / DELAY_ERROR_BIN.as_nanos()) as usize;
        self.bins[i.min(DELAY_ERROR_BINS - 1)] += 1;
    }

    /// Packets measured.
    pub fn count(&self) -> u64 {
        self.bins.iter().sum()
    }

    /// The `q` quantile (0..=1), as the upper edge of its bin.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let target = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.bins.iter().enumerate() {
            seen += c;
            if seen >= target {
                return Some(DELAY_ERROR_BIN * (i as u32 + 1));
            }
        }
        None
    }

    /// Largest error seen (bin upper edge).
    pub fn max(&self) -> Option<Duration> {
        self.bins
            .iter()
            .rposition(|c| *c > 0)
            .map(|i| DELAY_ERROR_BIN * (i as u32 + 1))
    }
}

/// One direction's counters as published by the scheduler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectionSnapshot {
    /// The model's counters (offered, queued, dropped by reason, delivered).
    pub stats: DirectionStats,
    /// Queue occupancy now, bytes (link bytes: payload + headers).
    pub queue_bytes: u64,
    /// Datagrams forwarded (sent on a socket).
    pub forwarded_packets: u64,
    /// UDP payload bytes forwarded.
    pub forwarded_bytes: u64,
    /// Datagrams the relay could not send (socket error).
    pub send_errors: u64,
    /// Datagrams dropped because the scheduler fell behind.
    pub overload_drops: u64,
    pub delay_error: DelayErrorHistogram,
}

impl DirectionSnapshot {
    /// Drops by a modelled rule.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.stats.dropped(reason).packets
    }
}

/// Everything the relay reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelaySnapshot {
    /// Time since the relay started.
    pub at: Duration,
    pub down: DirectionSnapshot,
    pub up: DirectionSnapshot,
    /// The sender cap in front of `down` (all zero without one).
    pub cap: DirectionSnapshot,
    pub flows: usize,
    /// New client addresses turned away: every flow was answered and the table full.
    pub flows_refused: u64,
    /// Unanswered flows forgotten to make room for a new client address.
    pub flows_evicted: u64,
}

enum Event {
    NewFlow {
        id: u32,
        client: SocketAddr,
        upstream: UdpSocket,
    },
    FlowGone {
        id: u32,
    },
    Packet {
        flow: u32,
        down: bool,
        at: Instant,
        data: Vec<u8>,
    },
}

struct Shared {
    start: Instant,
    stop: AtomicBool,
    published: Mutex<RelaySnapshot>,
    overload_up: AtomicU64,
    overload_down: AtomicU64,
    flows_refused: AtomicU64,
    flows_evicted: AtomicU64,
    /// Flows in the I/O thread's table.
    flow_count: AtomicUsize,
    /// Without a model the receiving thread forwards itself: (packets, bytes, errors).
    direct_up: [AtomicU64; 3],
    direct_down: [AtomicU64; 3],
}

fn count_direct(counters: &[AtomicU64; 3], ok: bool, bytes: usize) {
    if ok {
        counters[0].fetch_add(1, Ordering::Relaxed);
        counters[1].fetch_add(bytes as u64, Ordering::Relaxed);
    } else {
        counters[2].fetch_add(1, Ordering::Relaxed);
    }
}

/// A running relay.
pub struct Relay {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    scheduler: Option<JoinHandle<Option<Model<Pkt>>>>,
    io: Option<JoinHandle<()>>,
    io_stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A datagram inside the relay's model (opaque to callers).
pub struct Pkt {
    flow: u32,
    data: Vec<u8>,
}

/// Receives with quinn-udp: batches (recvmmsg) and GRO, so a sender using GSO (quinn
/// does by default) is split back into its datagrams at `stride` boundaries.
struct GroReceiver {
    state: quinn::udp::UdpSocketState,
    buffers: Arc<Mutex<RecvBuffers>>,
}

/// Receive buffers (512 KiB), shared by every socket of the relay's I/O thread: a read
/// fills them and hands each datagram on before the next read, and all reads run on one
/// thread, so a flow costs no buffer of its own.
struct RecvBuffers {
    bufs: Vec<Vec<u8>>,
    metas: Vec<quinn::udp::RecvMeta>,
}

impl RecvBuffers {
    fn shared() -> Arc<Mutex<RecvBuffers>> {
        let batch = RECV_BATCH.clamp(1, quinn::udp::BATCH_SIZE.max(1));
        Arc::new(Mutex::new(RecvBuffers {
            bufs: vec![vec![0u8; RECV_BUFFER]; batch],
            metas: vec![quinn::udp::RecvMeta::default(); batch],
        }))
    }
}

/// Datagrams read per system call.
const RECV_BATCH: usize = 8;
/// One receive buffer: the largest UDP datagram, or a GRO batch of them.
const RECV_BUFFER: usize = 64 * 1024;

impl GroReceiver {
    fn new(sock: &UdpSocket, buffers: Arc<Mutex<RecvBuffers>>) -> std::io::Result<Self> {
        let state = quinn::udp::UdpSocketState::new(sock.into())?;
        let _ = state.set_recv_buffer_size(sock.into(), SOCKET_BUFFER_BYTES);
        let _ = state.set_send_buffer_size(sock.into(), SOCKET_BUFFER_BYTES);
        Ok(GroReceiver { state, buffers })
    }

    /// Waits for datagrams and hands each one to `each` (source, bytes, receive time).
    async fn recv(
        &mut self,
        sock: &tokio::net::UdpSocket,
        mut each: impl FnMut(SocketAddr, &[u8], Instant),
    ) -> std::io::Result<()> {
        loop {
            sock.readable().await?;
            let mut guard = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
            let RecvBuffers { bufs, metas } = &mut *guard;
            let mut slices: Vec<std::io::IoSliceMut<'_>> = bufs
                .iter_mut()
                .map(|b| std::io::IoSliceMut::new(b))
                .collect();
            let state = &self.state;
            match sock.try_io(tokio::io::Interest::READABLE, || {
                state.recv(sock.into(), &mut slices, metas)
            }) {
                Ok(n) => {
                    let at = Instant::now();
                    drop(slices);
                    for (meta, buf) in metas.iter().zip(bufs.iter()).take(n) {
                        let stride = meta.stride.max(1);
                        for chunk in buf[..meta.len].chunks(stride) {
                            each(meta.addr, chunk, at);
                        }
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether datagrams sent to `to` arrive at a socket bound to `listen` (the same port on
/// the same address, or on any local address when either side is unspecified or
/// loopback).
fn sends_to_itself(listen: SocketAddr, to: SocketAddr) -> bool {
    let local = |ip: std::net::IpAddr| ip.is_unspecified() || ip.is_loopback();
    listen.port() == to.port()
        && (listen.ip() == to.ip()
            || (listen.ip().is_unspecified() && local(to.ip()))
            || (to.ip().is_unspecified() && local(listen.ip())))
}

impl Relay {
    /// Binds `listen`, builds the model and starts the relay's two threads.
    pub fn start(options: RelayOptions) -> Result<Relay, NetError> {
        if options.max_flows == 0 {
            return Err(NetError::Usage("--max-flows must be at least 1".into()));
        }
        let loop_error = |listen: SocketAddr| {
            NetError::Usage(format!(
                "--to {} is the relay's own address ({listen}): every datagram would loop \
                 back into the relay",
                options.to
            ))
        };
        if sends_to_itself(options.listen, options.to) {
            return Err(loop_error(options.listen));
        }
        let path = Model::of(
            options.link.as_ref(),
            options.seed,
            options.sender_cap.as_ref(),
            options.occupancy_resolution,
        )?;
        let listen = UdpSocket::bind(options.listen)
            .map_err(|e| NetError::Setup(format!("cannot listen on {}: {e}", options.listen)))?;
        let local_addr = listen
            .local_addr()
            .map_err(|e| NetError::Setup(e.to_string()))?;
        if sends_to_itself(local_addr, options.to) {
            return Err(loop_error(local_addr));
        }
        listen
            .set_nonblocking(true)
            .map_err(|e| NetError::Setup(e.to_string()))?;
        let listen_send = listen
            .try_clone()
            .map_err(|e| NetError::Setup(e.to_string()))?;
        let shared = Arc::new(Shared {
            start: Instant::now(),
            stop: AtomicBool::new(false),
            published: Mutex::new(RelaySnapshot::default()),
            overload_up: AtomicU64::new(0),
            overload_down: AtomicU64::new(0),
            flows_refused: AtomicU64::new(0),
            flows_evicted: AtomicU64::new(0),
            flow_count: AtomicUsize::new(0),
            direct_up: Default::default(),
            direct_down: Default::default(),
        });
        let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL_CAPACITY);
        let (io_stop, io_stop_rx) = tokio::sync::oneshot::channel();
        let direct = if options.link.is_none() {
            Some(Arc::new(
                listen_send
                    .try_clone()
                    .map_err(|e| NetError::Setup(e.to_string()))?,
            ))
        } else {
            None
        };
        let io_shared = shared.clone();
        let io_options = options.clone();
        let io = std::thread::Builder::new()
            .name("satquic-relay-io".into())
            .spawn(move || io_thread(listen, direct, io_options, io_shared, tx, io_stop_rx))
            .map_err(|e| NetError::Setup(e.to_string()))?;
        let sched_shared = shared.clone();
        let scheduler = std::thread::Builder::new()
            .name("satquic-relay-scheduler".into())
            .spawn(move || scheduler_thread(path, listen_send, sched_shared, rx))
            .map_err(|e| NetError::Setup(e.to_string()))?;
        Ok(Relay {
            local_addr,
            shared,
            scheduler: Some(scheduler),
            io: Some(io),
            io_stop: Some(io_stop),
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The latest counters (published by the scheduler at least every 10 ms).
    pub fn snapshot(&self) -> RelaySnapshot {
        let mut s = self
            .shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        s.up.overload_drops = self.shared.overload_up.load(Ordering::Relaxed);
        s.down.overload_drops = self.shared.overload_down.load(Ordering::Relaxed);
        s.flows_refused = self.shared.flows_refused.load(Ordering::Relaxed);
        s.flows_evicted = self.shared.flows_evicted.load(Ordering::Relaxed);
        s.flows = self.shared.flow_count.load(Ordering::Relaxed);
        for (d, c) in [
            (&mut s.up, &self.shared.direct_up),
            (&mut s.down, &self.shared.direct_down),
        ] {
            d.forwarded_packets += c[0].load(Ordering::Relaxed);
            d.forwarded_bytes += c[1].load(Ordering::Relaxed);
            d.send_errors += c[2].load(Ordering::Relaxed);
        }
        s
    }

    /// A function returning the down queue's occupancy (bytes), for samplers.
    pub fn snapshot_reader(&self) -> impl Fn() -> u64 + Send + 'static {
        let shared = self.shared.clone();
        move || {
            shared
                .published
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .down
                .queue_bytes
        }
    }

    /// When the relay started (the model's epoch).
    pub fn epoch(&self) -> Instant {
        self.shared.start
    }

    /// Stops both threads; returns the final counters and the model (for its ground
    /// truth), if one was used.
    pub fn stop(mut self) -> (RelaySnapshot, Option<Path<Pkt>>) {
        self.shutdown()
    }

    fn shutdown(&mut self) -> (RelaySnapshot, Option<Path<Pkt>>) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.io_stop.take() {
            let _ = s.send(());
        }
        if let Some(io) = self.io.take() {
            let _ = io.join();
        }
        let model = self.scheduler.take().and_then(|s| s.join().ok()).flatten();
        let snapshot = self.snapshot();
        (snapshot, model.map(|m| m.path))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if self.scheduler.is_some() {
            let _ = self.shutdown();
        }
    }
}

fn io_thread(
    listen: UdpSocket,
    direct: Option<Arc<UdpSocket>>,
    options: RelayOptions,
    shared: Arc<Shared>,
    tx: SyncSender<Event>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        shared.stop.store(true, Ordering::Relaxed);
        return;
    };
    rt.block_on(async move {
        let buffers = RecvBuffers::shared();
        let Ok(mut receiver) = GroReceiver::new(&listen, RecvBuffers::shared()) else {
            shared.stop.store(true, Ordering::Relaxed);
            return;
        };
        let Ok(listen) = tokio::net::UdpSocket::from_std(listen) else {
            shared.stop.store(true, Ordering::Relaxed);
            return;
        };
        let flows: FlowMap = Arc::new(Mutex::new(HashMap::new()));
        let mut next_id = 0u32;
        let mut stop = stop;
        let mut batch: Vec<(SocketAddr, Vec<u8>, Instant)> = Vec::new();
        loop {
            batch.clear();
            tokio::select! {
                _ = &mut stop => return,
                r = receiver.recv(&listen, |from, data, at| batch.push((from, data.to_vec(), at))) => {
                    // ICMP errors surface as receive errors on Linux; keep relaying.
                    if r.is_err() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                }
            }
            for (from, data, at) in batch.drain(..) {
                let existing = lock(&flows)
                    .get(&from)
                    .map(|f| (f.id, f.seen.clone(), f.direct_up.clone()));
                let (id, seen, up) = match existing {
                    Some(f) => f,
                    None => {
                        if !make_room(&flows, options.max_flows, &shared, &tx) {
                            shared.flows_refused.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        let Some((std_sock, sock, up_receiver)) =
                            upstream_socket(options.to, &buffers)
                        else {
                            continue;
                        };
                        let id = next_id;
                        next_id = next_id.wrapping_add(1);
                        let now_ms = shared.start.elapsed().as_millis() as u64;
                        let seen = Arc::new(AtomicU64::new(now_ms));
                        let answered = Arc::new(AtomicBool::new(false));
                        let (direct_up, upstream) = if direct.is_some() {
                            (Some(Arc::new(std_sock)), None)
                        } else {
                            (None, Some(std_sock))
                        };
                        if let Some(upstream) = upstream
                            && tx
                                .send(Event::NewFlow {
                                    id,
                                    client: from,
                                    upstream,
                                })
                                .is_err()
                        {
                            return;
                        }
                        let task = tokio::spawn(upstream_task(
                            UpstreamFlow {
                                id,
                                client: from,
                                sock,
                                receiver: up_receiver,
                                seen: seen.clone(),
                                answered: answered.clone(),
                                direct: direct.clone(),
                            },
                            flows.clone(),
                            shared.clone(),
                            tx.clone(),
                            options.flow_idle_timeout,
                        ));
                        let mut map = lock(&flows);
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
                        shared.flow_count.store(map.len(), Ordering::Relaxed);
                        drop(map);
                        (id, seen, direct_up)
                    }
                };
                seen.store(shared.start.elapsed().as_millis() as u64, Ordering::Relaxed);
                if let Some(up) = &up {
                    let ok = send_retry(|| up.send(&data));
                    count_direct(&shared.direct_up, ok, data.len());
                    continue;
                }
                let event = Event::Packet {
                    flow: id,
                    down: false,
                    at,
                    data,
                };
                match tx.try_send(event) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        shared.overload_up.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
        }
    });
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

struct Flow {
    client: SocketAddr,
    upstream: UdpSocket,
}

fn send_retry(f: impl Fn() -> std::io::Result<usize>) -> bool {
    for _ in 0..1000 {
        match f() {
            Ok(_) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(_) => return false,
        }
    }
    false
}

struct Scheduler {
    path: Option<Model<Pkt>>,
    listen: UdpSocket,
    flows: HashMap<u32, Flow>,
    shared: Arc<Shared>,
    down: DirectionSnapshot,
    up: DirectionSnapshot,
    cap: DirectionSnapshot,
    last_publish: Instant,
}

impl Scheduler {
    fn now(&self) -> Duration {
        self.shared.start.elapsed()
    }

    fn forward(&mut self, flow: u32, down: bool, data: &[u8], modelled: Option<Duration>) {
        let sent_at = self.now();
        let Some(f) = self.flows.get(&flow) else {
            return;
        };
        let ok = if down {
            send_retry(|| self.listen.send_to(data, f.client))
        } else {
            send_retry(|| f.upstream.send(data))
        };
        let d = if down { &mut self.down } else { &mut self.up };
        if ok {
            d.forwarded_packets += 1;
            d.forwarded_bytes += data.len() as u64;
        } else {
            d.send_errors += 1;
        }
        if let Some(arrival) = modelled {
            d.delay_error.add(sent_at.saturating_sub(arrival));
        }
    }
}

fn scheduler_thread(
    path: Option<Model<Pkt>>,
    listen: UdpSocket,
    shared: Arc<Shared>,
    rx: Receiver<Event>,
) -> Option<Model<Pkt>> {
    let mut s = Scheduler {
        path,
        listen,
        flows: HashMap::new(),
        shared,
        down: DirectionSnapshot::default(),
        up: DirectionSnapshot::default(),
        cap: DirectionSnapshot::default(),
        last_publish: Instant::now(),
    };
    run_scheduler(&mut s, &rx);
    s.path.take()
}

/// What the relay's and the TUN link's schedulers share: a link model fed by an I/O
/// thread's events, delivering what is due and publishing counters.
pub(crate) trait LinkScheduler {
    type Event;
    /// When the model next has something to do, on the wall clock.
    fn next_event(&self) -> Option<Instant>;
    /// Whether the link was told to stop.
    fn stopped(&self) -> bool;
    fn handle(&mut self, event: Self::Event);
    fn deliver_due(&mut self);
    fn publish(&mut self, force: bool);
}

impl LinkScheduler for Scheduler {
    type Event = Event;

    fn next_event(&self) -> Option<Instant> {
        self.path
            .as_ref()
            .and_then(|p| p.poll_timeout())
            .map(|t| self.shared.start + t)
    }

    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::NewFlow {
                id,
                client,
                upstream,
            } => {
                self.flows.insert(id, Flow { client, upstream });
            }
            Event::FlowGone { id } => {
                self.flows.remove(&id);
            }
            Event::Packet {
                flow,
                down,
                at,
                data,
            } => {
                let Some(path) = self.path.as_mut() else {
                    self.forward(flow, down, &data, None);
                    return;
                };
                let t = at.saturating_duration_since(self.shared.start);
                let size = data.len() as u32 + IP_UDP_OVERHEAD_BYTES;
                path.enqueue(down, t, size, Pkt { flow, data });
            }
        }
    }

    fn deliver_due(&mut self) {
        let Some(mut path) = self.path.take() else {
            return;
        };
        let now = self.now();
        path.deliver_due(now, |down, p| {
            self.forward(p.payload.flow, down, &p.payload.data, Some(p.arrival));
        });
        self.path = Some(path);
    }

    fn publish(&mut self, force: bool) {
        if !force && self.last_publish.elapsed() < Duration::from_millis(10) {
            return;
        }
        self.last_publish = Instant::now();
        if let Some(path) = self.path.as_mut() {
            path.refresh(
                self.shared.start.elapsed(),
                &mut self.down,
                &mut self.up,
                &mut self.cap,
            );
        }
        let snapshot = RelaySnapshot {
            at: self.now(),
            down: self.down.clone(),
            up: self.up.clone(),
            cap: self.cap.clone(),
            flows: self.flows.len(),
            flows_refused: 0,
            flows_evicted: 0,
        };
        *self
            .shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = snapshot;
    }
}

/// The scheduler loop: waits for the I/O thread's next event or the model's next
/// departure, whichever comes first (sleeping at most 10 ms, and spinning on the channel
/// when a departure is closer than [`SPIN_THRESHOLD`], so as not to oversleep), handles
/// what arrived, delivers what is due and publishes; until told to stop or the I/O
/// thread is gone. Ends with a final publish.
pub(crate) fn run_scheduler<S: LinkScheduler>(s: &mut S, rx: &Receiver<S::Event>) {
    while !s.stopped() {
        let wait = match s.next_event() {
            Some(t) => t.saturating_duration_since(Instant::now()),
            None => Duration::from_millis(10),
        }
        .min(Duration::from_millis(10));
        let first = if wait > SPIN_THRESHOLD {
            match rx.recv_timeout(wait - SPIN_THRESHOLD / 2) {
                Ok(e) => Some(e),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            // Close to a departure: spin on the channel rather than risk oversleeping.
            let deadline = Instant::now() + wait;
            loop {
                if let Ok(e) = rx.try_recv() {
                    break Some(e);
                }
                if Instant::now() >= deadline {
                    break None;
                }
                std::hint::spin_loop();
            }
        };
        if let Some(e) = first {
            s.handle(e);
            // Take what else is waiting, but never for long: deliveries must not wait.
            for _ in 0..256 {
                match rx.try_recv() {
                    Ok(e) => s.handle(e),
                    Err(_) => break,
                }
            }
        }
        s.deliver_due();
        s.publish(false);
    }
    s.publish(true);
}
