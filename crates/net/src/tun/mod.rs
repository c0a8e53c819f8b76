//! `satquic link --tun`: the link model between two network namespaces, for any tool.
//!
//! The UDP relay ([`crate::relay`]) carries UDP only and needs the application to send to
//! it. This mode works at the IP level: it makes two network namespaces (`satq-client`
//! and `satq-server` by default), puts a TUN device named [`TUN_DEVICE`] in each, with a
//! point-to-point address pair ([`DEFAULT_CLIENT_ADDR`] <-> [`DEFAULT_SERVER_ADDR`]), and
//! forwards every IP packet one namespace's kernel sends to the other's through the *same*
//! [`Path`] model the relay and the simulator use: client -> server through `up`, server ->
//! client through `down`. Anything runs through it, kernel TCP included:
//!
//! ```text
//! satquic link --tun --link geo-viasat
//! ip netns exec satq-client iperf3 -s
//! ip netns exec satq-server iperf3 -c 10.199.0.1 -C cubic -n 100M   # data flows down
//! ```
//!
//! # Packet sizes and timing
//!
//! A packet occupies its IP length on the link (the TUN devices carry bare IPv4 or IPv6
//! packets, `IFF_NO_PI`, no offloads: at most [`TUN_MTU`] bytes each). For UDP that is the
//! same figure the relay uses, the UDP payload plus
//! [`IP_UDP_OVERHEAD_BYTES`](satquic_link::IP_UDP_OVERHEAD_BYTES) (IPv4), so a QUIC flow
//! loads the link identically in both modes. Timing is the relay's: the I/O thread stamps a
//! packet when it reads it from a TUN device, the scheduler thread sleeps until the model's
//! next departure and writes what has arrived; the scheduling error is kept in the same
//! [`DelayErrorHistogram`](crate::relay::DelayErrorHistogram).
//!
//! # The namespaces
//!
//! Made with `ip netns add`, removed with `ip netns del` when the link stops (also when the
//! process is told to stop by SIGINT or SIGTERM: see [`termination_requested`]). Each gets
//! its loopback up, the TUN device (IPv4 only: IPv6 is off on it, so no router
//! solicitations or MLD reports cross the link), and TCP buffer limits of [`TCP_BUFFER_MAX_BYTES`]
//! (`net.ipv4.tcp_rmem`/`tcp_wmem`, per namespace): a new namespace's defaults (6 MB
//! receive) would cap TCP at 80 Mbit/s on a 600 ms path, below geo-viasat's 150 Mbit/s.
//! The client's receive buffer can be set lower ([`TunOptions::client_receive_buffer`], a
//! TCP adapter's `receive_buffer`), to hold a download by the receiver's window.
//! Root only; names that exist are refused (a link killed with SIGKILL leaves its
//! namespaces behind: `ip netns del NAME`).
//!
//! The TUN devices are opened in the root namespace and moved; the open descriptors keep
//! working. When they close, the kernel deletes the devices.
//!
//! # Where things are
//!
//! The options and the link's handle are here; `namespaces.rs` makes and removes the
//! namespaces, `device.rs` opens, reads and writes the TUN devices, `forwarding.rs` runs
//! the model between them (the relay's scheduler loop), `tcp_flows.rs` follows the TCP
//! connections going down, and `flow_key.rs` tells TCP and UDP flows apart for each flow's
//! books (the relay's [`FlowLedger`](crate::relay::FlowLedger)).

mod device;
mod flow_key;
mod forwarding;
mod namespaces;
mod tcp_flows;

use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use satquic_link::{LinkSpec, Path};
use satquic_run::scenario::ShaperSpec;

use crate::NetError;
use crate::model::Model;
use crate::relay::{CHANNEL_CAPACITY, RelaySnapshot};

use forwarding::SchedulerResult;
use namespaces::Namespaces;

pub use namespaces::{
    TCP_BUFFER_DEFAULT_BYTES, TCP_BUFFER_MAX_BYTES, is_root, namespace_exists,
    stop_on_termination_signals, termination_requested,
};
pub use tcp_flows::TcpFlowSeen;

/// Default namespace of the client side.
pub const DEFAULT_CLIENT_NS: &str = "satq-client";
/// Default namespace of the server side.
pub const DEFAULT_SERVER_NS: &str = "satq-server";
/// The client namespace's address.
pub const DEFAULT_CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 1);
/// The server namespace's address.
pub const DEFAULT_SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 2);
/// Name of the TUN device inside each namespace.
pub const TUN_DEVICE: &str = "satq0";
/// MTU of the TUN devices (Ethernet's, as on the paths the seeds measured).
pub const TUN_MTU: u32 = 1500;

/// What the TUN link is told.
#[derive(Debug, Clone)]
pub struct TunOptions {
    /// The path model; `None` forwards at once.
    pub link: Option<LinkSpec>,
    /// Seed of the model's random processes.
    pub seed: u64,
    /// A sender cap in front of the down direction (`--sender-cap`, [`crate::model`]);
    /// only with a model.
    pub sender_cap: Option<ShaperSpec>,
    pub client_ns: String,
    pub server_ns: String,
    pub client_addr: Ipv4Addr,
    pub server_addr: Ipv4Addr,
    /// Width of the queue-occupancy bins of the ground truth.
    pub occupancy_resolution: Duration,
    /// Keep each flow's books ([`FlowLedger`](crate::relay::FlowLedger), `--flows-json`):
    /// about 50 bytes per packet.
    pub flow_books: bool,
    /// Note when a TCP connection going down has delivered this many distinct payload
    /// bytes ([`TunLink::tcp_target_reached`]): the end of a kernel TCP download.
    pub tcp_target_bytes: Option<u64>,
    /// The top of `net.ipv4.tcp_rmem` in the client namespace (the receiver of a
    /// download); the server's is [`TCP_BUFFER_MAX_BYTES`].
    pub client_receive_buffer: u64,
}

impl TunOptions {
    pub fn new(link: Option<LinkSpec>) -> Self {
        TunOptions {
            link,
            seed: 1,
            sender_cap: None,
            client_ns: DEFAULT_CLIENT_NS.into(),
            server_ns: DEFAULT_SERVER_NS.into(),
            client_addr: DEFAULT_CLIENT_ADDR,
            server_addr: DEFAULT_SERVER_ADDR,
            occupancy_resolution: Duration::from_secs(1),
            flow_books: false,
            tcp_target_bytes: None,
            client_receive_buffer: TCP_BUFFER_MAX_BYTES,
        }
    }
}

/// What the I/O thread tells the scheduler.
enum Event {
    Packet {
        down: bool,
        at: Instant,
        data: Vec<u8>,
    },
}

/// What the link's threads and its handle share.
struct Shared {
    start: Instant,
    stop: AtomicBool,
    published: Mutex<RelaySnapshot>,
    overload_up: AtomicU64,
    overload_down: AtomicU64,
    /// Nanoseconds (link clock) + 1 when a TCP flow reached the target; 0 before.
    tcp_target_reached: AtomicU64,
}

/// A running TUN link; dropping it (or [`TunLink::stop`]) removes the namespaces.
pub struct TunLink {
    options: TunOptions,
    shared: Arc<Shared>,
    epoch_wall: SystemTime,
    scheduler: Option<JoinHandle<SchedulerResult>>,
    io: Option<JoinHandle<()>>,
    io_stop: Option<tokio::sync::oneshot::Sender<()>>,
    namespaces: Namespaces,
}

/// What a stopped TUN link hands back.
pub struct TunStopped {
    pub snapshot: RelaySnapshot,
    /// The model (for its ground truth), if one was used.
    pub path: Option<Path<Vec<u8>>>,
    /// TCP connections seen going down, by distinct payload delivered (largest first).
    pub tcp_down: Vec<TcpFlowSeen>,
    /// Each TCP or UDP flow's books (client side = the client namespace's address).
    pub ledger: crate::relay::FlowLedger,
}

impl TunLink {
    /// Checks the options, makes the namespaces and devices, starts the two threads.
    pub fn start(options: TunOptions) -> Result<TunLink, NetError> {
        namespaces::check_options(&options)?;
        let path = Model::of(
            options.link.as_ref(),
            options.seed,
            options.sender_cap.as_ref(),
            options.occupancy_resolution,
        )?;
        let (client_fd, server_fd, namespaces) = namespaces::make_sides(&options)?;
        let dup = |fd: &OwnedFd| {
            fd.try_clone()
                .map_err(|e| NetError::Setup(format!("cannot duplicate a TUN descriptor: {e}")))
        };
        let (client_w, server_w) = (dup(&client_fd)?, dup(&server_fd)?);
        let shared = Arc::new(Shared {
            start: Instant::now(),
            stop: AtomicBool::new(false),
            published: Mutex::new(RelaySnapshot::default()),
            overload_up: AtomicU64::new(0),
            overload_down: AtomicU64::new(0),
            tcp_target_reached: AtomicU64::new(0),
        });
        let epoch_wall = SystemTime::now();
        let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL_CAPACITY);
        let (io_stop, io_stop_rx) = tokio::sync::oneshot::channel();
        let io_shared = shared.clone();
        let io = std::thread::Builder::new()
            .name("satquic-tun-io".into())
            .spawn(move || device::io_thread(client_fd, server_fd, io_shared, tx, io_stop_rx))
            .map_err(|e| NetError::Setup(e.to_string()))?;
        let sched_shared = shared.clone();
        let target = options.tcp_target_bytes;
        let ledger = crate::relay::FlowLedger::keeping(options.flow_books);
        let scheduler = std::thread::Builder::new()
            .name("satquic-tun-scheduler".into())
            .spawn(move || {
                forwarding::scheduler_thread(
                    path,
                    client_w,
                    server_w,
                    sched_shared,
                    rx,
                    target,
                    ledger,
                )
            })
            .map_err(|e| NetError::Setup(e.to_string()))?;
        Ok(TunLink {
            options,
            shared,
            epoch_wall,
            scheduler: Some(scheduler),
            io: Some(io),
            io_stop: Some(io_stop),
            namespaces,
        })
    }

    pub fn options(&self) -> &TunOptions {
        &self.options
    }

    /// When the link started (the model's epoch).
    pub fn epoch(&self) -> Instant {
        self.shared.start
    }

    /// The epoch on the wall clock (for tools that stamp with `date`).
    pub fn epoch_wall(&self) -> SystemTime {
        self.epoch_wall
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
        s
    }

    /// When (link clock) a TCP connection going down first delivered
    /// [`TunOptions::tcp_target_bytes`] distinct payload bytes.
    pub fn tcp_target_reached(&self) -> Option<Duration> {
        match self.shared.tcp_target_reached.load(Ordering::SeqCst) {
            0 => None,
            n => Some(Duration::from_nanos(n - 1)),
        }
    }

    /// Stops both threads, closes the devices and removes the namespaces.
    pub fn stop(mut self) -> TunStopped {
        self.shutdown()
    }

    fn shutdown(&mut self) -> TunStopped {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.io_stop.take() {
            let _ = s.send(());
        }
        if let Some(io) = self.io.take() {
            let _ = io.join();
        }
        let scheduler = self.scheduler.take().and_then(|s| s.join().ok());
        let snapshot = self.snapshot();
        // The descriptors are closed (the threads owned them): the devices are gone and
        // the namespaces can go.
        drop(std::mem::replace(
            &mut self.namespaces,
            Namespaces(Vec::new()),
        ));
        let (path, mut tcp_down, ledger) = match scheduler {
            Some((model, flows, ledger)) => (
                model.map(|m| m.path),
                flows.into_values().collect::<Vec<_>>(),
                ledger,
            ),
            None => (None, Vec::new(), Default::default()),
        };
        tcp_down.sort_by_key(|f| std::cmp::Reverse(f.delivered_bytes));
        TunStopped {
            snapshot,
            path,
            tcp_down,
            ledger,
        }
    }
}

impl Drop for TunLink {
    fn drop(&mut self) {
        if self.io.is_some() || self.scheduler.is_some() {
            let _ = self.shutdown();
        }
    }
}
