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
//! Each datagram occupies its UDP payload plus
//! [`IP_UDP_OVERHEAD_BYTES`](satquic_link::IP_UDP_OVERHEAD_BYTES) on the link, as in the
//! simulator.
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
//! At most `max_flows` client addresses (IP and port) at once; there is no separate limit
//! per IP address, so one host may hold every slot, but only with flows that are
//! *established*. A flow costs one upstream socket and a small task (the receive buffers
//! are shared by all flows) and is established once the server answered it with
//! something other than Version Negotiation and the client sent again after that: a
//! flow that saw only Version Negotiation, or one datagram each way (a Retry or an
//! Initial nobody follows up), is not. A flow not established is forgotten after
//! [`UNANSWERED_FLOW_TIMEOUT`] without traffic, and when the table is full the oldest
//! one makes room for a new client (counted as `flows_evicted`), so datagrams from many
//! source ports (spoofed, clients long gone, or unknown QUIC versions) cannot lock real
//! clients out. Only when every flow is established is a new client refused
//! (`flows_refused`). A flow with no
//! traffic for `flow_idle_timeout` (`--flow-idle-timeout`) is forgotten. If the
//! scheduler falls behind by more than [`CHANNEL_CAPACITY`] datagrams, new arrivals are
//! dropped and counted as `overload` (never silently): a fidelity check asserts that
//! count is 0.//!
//! # Where things are
//!
//! The relay's [`start`](Relay::start) and handle are here; `io.rs` receives from
//! clients, `flows.rs` keeps the flow table and receives from the server, `recv.rs` reads
//! sockets in batches, `scheduler.rs` is the real-time loop (shared with the TUN link),
//! `forward.rs` sends what the model delivers, `ledger.rs` keeps each flow's books (its
//! datagrams' queueing delay and drops at the bottleneck, for the shared-period measures
//! of a run beside other traffic), and `snapshot.rs` holds the counters.

mod flows;
mod forward;
mod io;
mod ledger;
mod recv;
mod scheduler;
mod snapshot;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use satquic_link::{LinkSpec, Path};
use satquic_run::scenario::ShaperSpec;

use crate::NetError;
use crate::model::Model;

pub use flows::UNANSWERED_FLOW_TIMEOUT;
pub use ledger::{FlowLedger, LedgerReport, MIN_FLOW_SHARE, RelayDirection, RelayFlow};
pub use recv::SOCKET_BUFFER_BYTES;
pub(crate) use scheduler::{LinkScheduler, run_scheduler};
pub use snapshot::{DELAY_ERROR_BIN, DelayErrorHistogram, DirectionSnapshot, RelaySnapshot};

/// Datagrams that may wait between the receiving threads and the scheduler.
pub const CHANNEL_CAPACITY: usize = 1 << 16;
/// Default of [`RelayOptions::max_flows`].
pub const DEFAULT_MAX_FLOWS: usize = 1024;
/// Default of [`RelayOptions::flow_idle_timeout`].
pub const DEFAULT_FLOW_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

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
    /// Keep each flow's books ([`FlowLedger`], `--flows-json`): about 50 bytes per packet.
    pub flow_books: bool,
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
            flow_books: false,
        }
    }
}

/// What the I/O thread tells the scheduler.
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

/// What the relay's threads and its handle share.
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
    scheduler: Option<JoinHandle<(Option<Model<Pkt>>, FlowLedger)>>,
    io: Option<JoinHandle<()>>,
    io_stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A datagram inside the relay's model (opaque to callers).
pub struct Pkt {
    flow: u32,
    data: Vec<u8>,
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
            .spawn(move || io::io_thread(listen, direct, io_options, io_shared, tx, io_stop_rx))
            .map_err(|e| NetError::Setup(e.to_string()))?;
        let sched_shared = shared.clone();
        let ledger = FlowLedger::keeping(options.flow_books);
        let scheduler = std::thread::Builder::new()
            .name("satquic-relay-scheduler".into())
            .spawn(move || forward::scheduler_thread(path, listen_send, sched_shared, rx, ledger))
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
        let (snapshot, path, _) = self.shutdown();
        (snapshot, path)
    }

    /// [`Self::stop`], with each flow's books ([`FlowLedger`]: what its datagrams met at
    /// the bottleneck; empty without a model).
    pub fn stop_with_ledger(mut self) -> (RelaySnapshot, Option<Path<Pkt>>, FlowLedger) {
        self.shutdown()
    }

    fn shutdown(&mut self) -> (RelaySnapshot, Option<Path<Pkt>>, FlowLedger) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.io_stop.take() {
            let _ = s.send(());
        }
        if let Some(io) = self.io.take() {
            let _ = io.join();
        }
        let (model, ledger) = self
            .scheduler
            .take()
            .and_then(|s| s.join().ok())
            .unwrap_or_default();
        let snapshot = self.snapshot();
        (snapshot, model.map(|m| m.path), ledger)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if self.scheduler.is_some() {
            let _ = self.shutdown();
        }
    }
}

/// Locks a mutex, also one a panicking thread left poisoned (the data is counters and
/// tables, still consistent).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
