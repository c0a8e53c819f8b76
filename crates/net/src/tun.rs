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

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use satquic_link::{LinkSpec, Path};
use satquic_run::record::push_mb_times;
use satquic_run::scenario::ShaperSpec;

use crate::NetError;
use crate::model::Model;
use crate::relay::{
    CHANNEL_CAPACITY, DirectionSnapshot, LinkScheduler, RelaySnapshot, run_scheduler,
};

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
/// Largest TCP send and receive buffer in the namespaces (above geo-viasat's 11 MB BDP
/// plus its 36 MB queue would need more; 64 MiB covers the window TCP reaches there).
pub const TCP_BUFFER_MAX_BYTES: u64 = 64 << 20;
/// The default (middle) value of the namespaces' `tcp_rmem` and `tcp_wmem`, Linux's own.
pub const TCP_BUFFER_DEFAULT_BYTES: u64 = 131_072;
/// Largest packet read from a TUN device.
const READ_BUFFER: usize = 65536;

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
            tcp_target_bytes: None,
            client_receive_buffer: TCP_BUFFER_MAX_BYTES,
        }
    }
}

/// What one TCP connection sent down the link (server namespace -> client namespace), as
/// the link delivered it: for telling when a kernel TCP transfer arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpFlowSeen {
    /// Source and destination port (the sender's, the receiver's).
    pub ports: (u16, u16),
    /// TCP payload bytes delivered, retransmissions included.
    pub payload_bytes: u64,
    /// Distinct payload bytes delivered: the highest sequence offset reached from the
    /// first payload packet's.
    pub delivered_bytes: u64,
    /// When `delivered_bytes` reached [`TunOptions::tcp_target_bytes`], link clock.
    pub target_reached_at: Option<Duration>,
    /// When the link delivered the first and the last packet carrying payload, on the
    /// link's clock.
    pub first_payload_at: Duration,
    pub last_payload_at: Duration,
    /// `mb_times[k]`: when `delivered_bytes` passed k+1 MB (10^6 bytes), link clock.
    pub mb_times: Vec<Duration>,
}

/// Set by SIGINT or SIGTERM once [`stop_on_termination_signals`] ran.
static TERMINATION: AtomicBool = AtomicBool::new(false);

extern "C" fn on_termination(_signal: libc::c_int) {
    TERMINATION.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag ([`termination_requested`]) instead of killing the
/// process, so a command can remove its namespaces before it leaves.
pub fn stop_on_termination_signals() {
    let handler = on_termination as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// Whether SIGINT or SIGTERM arrived since [`stop_on_termination_signals`].
pub fn termination_requested() -> bool {
    TERMINATION.load(Ordering::SeqCst)
}

/// Whether this process may make namespaces and TUN devices.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a network namespace of this name exists (`ip netns` keeps them here).
pub fn namespace_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

/// Checks a namespace name: what `ip netns add` takes, and nothing a shell would mangle.
fn check_namespace_name(flag: &str, name: &str) -> Result<(), NetError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(NetError::Usage(format!(
            "{flag} {name:?}: a namespace name is 1 to 64 letters, digits, '-', '_' or '.'"
        )))
    }
}

/// Runs `ip ARGS`; an error is its first line of stderr.
fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| NetError::Setup(format!("cannot run ip (iproute2): {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(NetError::Setup(format!(
        "ip {}: {}",
        args.join(" "),
        err.lines().next().unwrap_or("failed").trim()
    )))
}

/// Namespaces made so far; removed when dropped.
struct Namespaces(Vec<String>);

impl Namespaces {
    fn add(&mut self, name: &str) -> Result<(), NetError> {
        ip(&["netns", "add", name])?;
        self.0.push(name.to_string());
        Ok(())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in self.0.drain(..) {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// `struct ifreq` as TUNSETIFF reads it: the name and the flags (the rest is a union
/// the call does not use).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// Opens a TUN device named `name` (non-blocking, bare IP packets).
fn open_tun(name: &str) -> Result<OwnedFd, NetError> {
    let path = c"/dev/net/tun";
    // SAFETY: a NUL-terminated path; the returned descriptor is checked.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(NetError::Setup(format!(
            "cannot open /dev/net/tun: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI,
        _pad: [0; 22],
    };
    let bytes = name.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ {
        return Err(NetError::Setup(format!("device name {name} is too long")));
    }
    req.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: TUNSETIFF reads (and writes back) an ifreq, which `req` is laid out as.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) };
    if r < 0 {
        return Err(NetError::Setup(format!(
            "cannot create TUN device {name}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(fd)
}

/// Configures one side: moves the device into the namespace, names it [`TUN_DEVICE`],
/// gives it the point-to-point pair, brings it and loopback up, raises the TCP buffers.
fn configure_side(
    ns: &str,
    device: &str,
    local: Ipv4Addr,
    peer: Ipv4Addr,
    receive_buffer: u64,
) -> Result<(), NetError> {
    ip(&["link", "set", "dev", device, "netns", ns])?;
    ip(&["-n", ns, "link", "set", "dev", device, "name", TUN_DEVICE])?;
    let mtu = TUN_MTU.to_string();
    let pair = format!("{local}/32");
    let peer = format!("{peer}/32");
    ip(&[
        "-n", ns, "addr", "add", &pair, "peer", &peer, "dev", TUN_DEVICE,
    ])?;
    let rmem = format!("4096 {TCP_BUFFER_DEFAULT_BYTES} {receive_buffer}");
    let wmem = format!("4096 {TCP_BUFFER_DEFAULT_BYTES} {TCP_BUFFER_MAX_BYTES}");
    // IPv6 off on the device: its router solicitations and MLD reports would otherwise
    // cross the link too (the pair is IPv4).
    let script = format!(
        "echo '{rmem}' > /proc/sys/net/ipv4/tcp_rmem && echo '{wmem}' > /proc/sys/net/ipv4/tcp_wmem && \
         {{ echo 1 > /proc/sys/net/ipv6/conf/{TUN_DEVICE}/disable_ipv6 2>/dev/null || true; }}"
    );
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", &script])
        .output()
        .map_err(|e| NetError::Setup(format!("cannot run ip netns exec: {e}")))?;
    if !out.status.success() {
        return Err(NetError::Setup(format!(
            "cannot set the TCP buffers in {ns}: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )));
    }
    ip(&[
        "-n",
        ns,
        "link",
        "set",
        "dev",
        TUN_DEVICE,
        "mtu",
        &mtu,
        "txqueuelen",
        "10000",
        "up",
    ])?;
    ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
    Ok(())
}

enum Event {
    Packet {
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
}

static DEVICE_COUNTER: AtomicU32 = AtomicU32::new(0);

impl TunLink {
    /// Checks the options, makes the namespaces and devices, starts the two threads.
    pub fn start(options: TunOptions) -> Result<TunLink, NetError> {
        check_namespace_name("--client-ns", &options.client_ns)?;
        check_namespace_name("--server-ns", &options.server_ns)?;
        if options.client_ns == options.server_ns {
            return Err(NetError::Usage(format!(
                "--client-ns and --server-ns are both {:?}: the two sides need two namespaces",
                options.client_ns
            )));
        }
        if options.client_addr == options.server_addr {
            return Err(NetError::Usage(
                "--client-addr and --server-addr must differ".into(),
            ));
        }
        if !is_root() {
            return Err(NetError::Usage(
                "--tun needs root (it makes network namespaces and TUN devices); without root use the UDP relay (--listen/--to)".into(),
            ));
        }
        for name in [&options.client_ns, &options.server_ns] {
            if namespace_exists(name) {
                return Err(NetError::Usage(format!(
                    "network namespace {name} exists (another satquic link --tun, or one that was killed: `ip netns del {name}`); choose others with --client-ns/--server-ns"
                )));
            }
        }
        let path = Model::of(
            options.link.as_ref(),
            options.seed,
            options.sender_cap.as_ref(),
            options.occupancy_resolution,
        )?;
        let n = DEVICE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{}", std::process::id() % 1_000_000, n % 100);
        let client_dev = format!("sq{tag}c");
        let server_dev = format!("sq{tag}s");
        let client_fd = open_tun(&client_dev)?;
        let server_fd = open_tun(&server_dev)?;
        let mut namespaces = Namespaces(Vec::new());
        namespaces.add(&options.client_ns)?;
        namespaces.add(&options.server_ns)?;
        configure_side(
            &options.client_ns,
            &client_dev,
            options.client_addr,
            options.server_addr,
            options.client_receive_buffer,
        )?;
        configure_side(
            &options.server_ns,
            &server_dev,
            options.server_addr,
            options.client_addr,
            TCP_BUFFER_MAX_BYTES,
        )?;
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
            .spawn(move || io_thread(client_fd, server_fd, io_shared, tx, io_stop_rx))
            .map_err(|e| NetError::Setup(e.to_string()))?;
        let sched_shared = shared.clone();
        let target = options.tcp_target_bytes;
        let scheduler = std::thread::Builder::new()
            .name("satquic-tun-scheduler".into())
            .spawn(move || scheduler_thread(path, client_w, server_w, sched_shared, rx, target))
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
        let (path, mut tcp_down) = match scheduler {
            Some((model, flows)) => (
                model.map(|m| m.path),
                flows.into_values().collect::<Vec<_>>(),
            ),
            None => (None, Vec::new()),
        };
        tcp_down.sort_by_key(|f| std::cmp::Reverse(f.delivered_bytes));
        TunStopped {
            snapshot,
            path,
            tcp_down,
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

/// Reads both devices until told to stop; each packet goes to the scheduler stamped.
fn io_thread(
    client: OwnedFd,
    server: OwnedFd,
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
        let readable = |fd: OwnedFd| {
            // SAFETY: an OwnedFd stays open, and is the same descriptor, while it lives.
            unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            }
        };
        let (Ok(client), Ok(server)) = (readable(client), readable(server)) else {
            shared.stop.store(true, Ordering::Relaxed);
            return;
        };
        let mut buf = vec![0u8; READ_BUFFER];
        let mut stop = stop;
        loop {
            let (ready, down) = tokio::select! {
                _ = &mut stop => return,
                r = client.readable() => (r, false),
                r = server.readable() => (r, true),
            };
            let Ok(mut guard) = ready else {
                shared.stop.store(true, Ordering::Relaxed);
                return;
            };
            // Drain what is there; a packet per read.
            loop {
                let fd = guard.get_inner().as_raw_fd();
                // SAFETY: reading into a buffer we own, of its length.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    // Would block: wait for readiness again. Another error (the device
                    // going away as the link stops): the same, after a pause, so it
                    // cannot spin.
                    let e = std::io::Error::last_os_error();
                    guard.clear_ready();
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    break;
                }
                let at = Instant::now();
                let event = Event::Packet {
                    down,
                    at,
                    data: buf[..n as usize].to_vec(),
                };
                match tx.try_send(event) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        let c = if down {
                            &shared.overload_down
                        } else {
                            &shared.overload_up
                        };
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
        }
    });
}

/// Writes one packet into a device (the kernel takes it at once; a full device queue is
/// retried briefly, then counted as a send error).
fn write_packet(fd: &OwnedFd, data: &[u8]) -> bool {
    for _ in 0..1000 {
        // SAFETY: writing a buffer we own, of its length.
        let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        if n >= 0 {
            return true;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::WouldBlock {
            return false;
        }
        std::thread::yield_now();
    }
    false
}

/// The TCP source and destination ports, sequence number and payload length of an IPv4
/// TCP packet.
fn tcp_payload(packet: &[u8]) -> Option<((u16, u16), u32, usize)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 || packet[9] != 6 {
        return None;
    }
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]])).min(packet.len());
    let tcp = packet.get(ihl..total)?;
    if tcp.len() < 20 {
        return None;
    }
    let data_offset = usize::from(tcp[12] >> 4) * 4;
    let ports = (
        u16::from_be_bytes([tcp[0], tcp[1]]),
        u16::from_be_bytes([tcp[2], tcp[3]]),
    );
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    Some((ports, seq, tcp.len().saturating_sub(data_offset)))
}

/// The model and the TCP flows seen, when the scheduler stops.
type SchedulerResult = (Option<Model<Vec<u8>>>, HashMap<(u16, u16), TcpFlowSeen>);

struct Scheduler {
    path: Option<Model<Vec<u8>>>,
    client: OwnedFd,
    server: OwnedFd,
    shared: Arc<Shared>,
    down: DirectionSnapshot,
    up: DirectionSnapshot,
    cap: DirectionSnapshot,
    last_publish: Instant,
    tcp_down: HashMap<(u16, u16), (u32, TcpFlowSeen)>,
    tcp_target_bytes: Option<u64>,
}

impl Scheduler {
    fn now(&self) -> Duration {
        self.shared.start.elapsed()
    }

    /// Hands a packet to the far side's kernel: down packets to the client namespace.
    fn forward(&mut self, down: bool, data: &[u8], modelled: Option<Duration>) {
        let sent_at = self.now();
        let ok = if down {
            write_packet(&self.client, data)
        } else {
            write_packet(&self.server, data)
        };
        if down && let Some((ports, seq, payload)) = tcp_payload(data).filter(|p| p.2 > 0) {
            let (base, f) = self.tcp_down.entry(ports).or_insert((
                seq,
                TcpFlowSeen {
                    ports,
                    payload_bytes: 0,
                    delivered_bytes: 0,
                    target_reached_at: None,
                    first_payload_at: sent_at,
                    last_payload_at: sent_at,
                    mb_times: Vec::new(),
                },
            ));
            f.payload_bytes += payload as u64;
            f.last_payload_at = sent_at;
            // Offsets within 2 GiB after the base: a retransmission of an earlier
            // segment wraps to a large number and is ignored.
            let offset = u64::from(seq.wrapping_sub(*base));
            if offset < 1 << 31 {
                f.delivered_bytes = f.delivered_bytes.max(offset + payload as u64);
                push_mb_times(&mut f.mb_times, f.delivered_bytes, sent_at);
            }
            if let Some(target) = self.tcp_target_bytes
                && f.target_reached_at.is_none()
                && f.delivered_bytes >= target
            {
                f.target_reached_at = Some(sent_at);
                let _ = self.shared.tcp_target_reached.compare_exchange(
                    0,
                    sent_at.as_nanos() as u64 + 1,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
            }
        }
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
        let Event::Packet { down, at, data } = event;
        let Some(path) = self.path.as_mut() else {
            self.forward(down, &data, None);
            return;
        };
        let t = at.saturating_duration_since(self.shared.start);
        let size = data.len() as u32;
        path.enqueue(down, t, size, data);
    }

    fn deliver_due(&mut self) {
        let Some(mut path) = self.path.take() else {
            return;
        };
        let now = self.now();
        path.deliver_due(now, |down, p| {
            self.forward(down, &p.payload, Some(p.arrival))
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
            ..RelaySnapshot::default()
        };
        *self
            .shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = snapshot;
    }
}

fn scheduler_thread(
    path: Option<Model<Vec<u8>>>,
    client: OwnedFd,
    server: OwnedFd,
    shared: Arc<Shared>,
    rx: Receiver<Event>,
    tcp_target_bytes: Option<u64>,
) -> SchedulerResult {
    let mut s = Scheduler {
        path,
        client,
        server,
        shared,
        down: DirectionSnapshot::default(),
        up: DirectionSnapshot::default(),
        cap: DirectionSnapshot::default(),
        last_publish: Instant::now(),
        tcp_down: HashMap::new(),
        tcp_target_bytes,
    };
    run_scheduler(&mut s, &rx);
    // The descriptors close here: the devices go with them, before the namespaces do.
    let flows = s.tcp_down.drain().map(|(k, (_, f))| (k, f)).collect();
    (s.path.take(), flows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_are_checked() {
        for bad in ["", "a b", "../x", "a;b", ".", &"x".repeat(65)] {
            assert!(
                matches!(check_namespace_name("--client-ns", bad), Err(NetError::Usage(m)) if !m.contains('\n')),
                "{bad:?}"
            );
        }
        assert!(check_namespace_name("--client-ns", "satq-client.2_x").is_ok());
    }

    #[test]
    fn tcp_payload_of_an_ipv4_segment() {
        // IPv4 (IHL 5), protocol 6, total 60: a 20-byte TCP header and 20 bytes of data.
        let mut p = vec![0u8; 60];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&60u16.to_be_bytes());
        p[9] = 6;
        p[20..22].copy_from_slice(&5201u16.to_be_bytes());
        p[22..24].copy_from_slice(&40000u16.to_be_bytes());
        p[32] = 5 << 4;
        p[24..28].copy_from_slice(&7u32.to_be_bytes());
        assert_eq!(tcp_payload(&p), Some(((5201, 40000), 7, 20)));
        p[9] = 17;
        assert_eq!(tcp_payload(&p), None);
        assert_eq!(tcp_payload(&p[..10]), None);
    }
}
