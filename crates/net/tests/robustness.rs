//! Robustness: the server keeps serving while it receives random garbage, truncated and
//! replayed packets, and 200 clients that connect and vanish mid-transfer; no panic, and
//! connections and memory return to baseline.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use satquic_net::client::{ClientOptions, run_client};
use satquic_net::relay::{Relay, RelayOptions};
use satquic_net::{Server, ServerOptions};

static PANICKED: AtomicBool = AtomicBool::new(false);

fn watch_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::SeqCst);
        default(info);
    }));
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A UDP tap between one client and the server that keeps a copy of every datagram the
/// client sent; a stalling one stops forwarding the client's datagrams once the server
/// has answered with more than a Retry (a client that stops mid-handshake).
struct Tap {
    addr: SocketAddr,
    captured: Arc<Mutex<Vec<Vec<u8>>>>,
    upstream: Arc<UdpSocket>,
    stop: Arc<AtomicBool>,
}

/// Whether a datagram opens with a long-header packet that is not a Retry (RFC 9000 Sec.
/// 17.2: the form bit, then the type in bits 4-5; 3 is Retry).
fn handshake_answer(datagram: &[u8]) -> bool {
    datagram
        .first()
        .is_some_and(|b| b & 0x80 != 0 && (b >> 4) & 0x03 != 0x03)
}

impl Tap {
    fn start(server: SocketAddr) -> Tap {
        Tap::with_stall(server, false)
    }

    fn stalling(server: SocketAddr) -> Tap {
        Tap::with_stall(server, true)
    }

    fn with_stall(server: SocketAddr, stall: bool) -> Tap {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        front
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let upstream = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
        upstream.connect(server).unwrap();
        upstream
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let addr = front.local_addr().unwrap();
        let front = Arc::new(front);
        let captured = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicBool::new(false));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        {
            let (front, upstream, captured, stop, client, answered) = (
                front.clone(),
                upstream.clone(),
                captured.clone(),
                stop.clone(),
                client.clone(),
                answered.clone(),
            );
            thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok((n, from)) = front.recv_from(&mut buf) {
                        *client.lock().unwrap() = Some(from);
                        captured.lock().unwrap().push(buf[..n].to_vec());
                        if !(stall && answered.load(Ordering::Relaxed)) {
                            let _ = upstream.send(&buf[..n]);
                        }
                    }
                }
            });
        }
        {
            let (front, upstream, stop) = (front.clone(), upstream.clone(), stop.clone());
            thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(n) = upstream.recv(&mut buf)
                        && let Some(c) = *client.lock().unwrap()
                    {
                        if handshake_answer(&buf[..n]) {
                            answered.store(true, Ordering::Relaxed);
                        }
                        let _ = front.send_to(&buf[..n], c);
                    }
                }
            });
        }
        Tap {
            addr,
            captured,
            upstream,
            stop,
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

async fn download_ok(addr: SocketAddr, bytes: u64) {
    let mut options = ClientOptions::download(addr, bytes);
    options.time_cap = Some(Duration::from_secs(20));
    let r = run_client(options, None).await.unwrap();
    assert_eq!(r.status, "completed", "{:?}", r.error);
    assert_eq!(r.bytes, bytes);
}

const CHILD_ENV: &str = "SATQUIC_ROBUSTNESS_CHILD";
/// Rounds of 200 vanishing clients.
const STORMS: usize = 5;

/// Not a test: the server process of [`server_survives_garbage_replays_and_vanishing_clients`],
/// started by it (so the server's memory is measured apart from the clients'). It prints
/// its address and counters and serves until its standard input closes.
#[test]
#[ignore = "helper process, started by server_survives_garbage_replays_and_vanishing_clients"]
fn child_server_process() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    watch_panics();
    satquic_net::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut options = ServerOptions {
            listen: loopback(),
            max_connections: 256,
            // The 200 clients of a storm come from one address.
            max_connections_per_address: 256,
            ..ServerOptions::default()
        };
        options.transport.idle_timeout = Duration::from_secs(2);
        let server = Arc::new(Server::bind(options).unwrap());
        println!("SATQUIC_ADDR {}", server.local_addr());
        {
            let server = server.clone();
            tokio::spawn(async move { server.serve().await });
        }
        // Report the counters on every line read from stdin; stop at EOF.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        thread::spawn(move || {
            let mut line = String::new();
            while std::io::stdin()
                .read_line(&mut line)
                .map(|n| n > 0)
                .unwrap_or(false)
            {
                let _ = tx.send(());
                line.clear();
            }
        });
        while rx.recv().await.is_some() {
            let s = server.stats();
            println!(
                "SATQUIC_STATS {} {} {}",
                s.active_connections,
                s.accepted,
                PANICKED.load(Ordering::SeqCst)
            );
        }
    });
}

struct Child {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Child {
    fn start() -> (Child, SocketAddr) {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_server_process",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("child output").unwrap();
            // libtest prints "test child_server_process ... " on the same line.
            if let Some(i) = line.find("SATQUIC_ADDR ") {
                break line[i + 13..].trim().parse().unwrap();
            }
        };
        (
            Child {
                child,
                stdin,
                lines,
            },
            addr,
        )
    }

    /// (active connections, accepted, panicked)
    fn stats(&mut self) -> (usize, u64, bool) {
        use std::io::Write;
        writeln!(self.stdin).unwrap();
        loop {
            let line = self.lines.next().expect("child output").unwrap();
            if let Some(i) = line.find("SATQUIC_STATS ") {
                let f: Vec<&str> = line[i + 14..].split_whitespace().collect();
                return (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2] == "true");
            }
        }
    }

    fn rss_bytes(&self) -> u64 {
        let statm =
            std::fs::read_to_string(format!("/proc/{}/statm", self.child.id())).unwrap_or_default();
        statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u64>().ok())
            .unwrap_or(0)
            * 4096
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn server_survives_garbage_replays_and_vanishing_clients() {
    satquic_net::install_crypto_provider();
    let (mut child, addr) = Child::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Warm up, then take the memory baseline.
        for _ in 0..3 {
            download_ok(addr, 2_000_000).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let baseline = child.rss_bytes();

        // 1. Random garbage, including long-header-looking first bytes.
        let garbage = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for i in 0..3000 {
            let len = rng.random_range(1..1500usize);
            let mut d: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            if i % 2 == 0 {
                d[0] |= 0xc0; // long header, fixed bit
                if len > 5 {
                    d[1..5].copy_from_slice(&1u32.to_be_bytes()); // QUIC v1
                }
            }
            let _ = garbage.send_to(&d, addr);
        }
        download_ok(addr, 1_000_000).await;

        // 2. A real client through a tap; then its packets truncated and replayed, from
        // its own address and from others.
        let tap = Tap::start(addr);
        download_ok(tap.addr, 1_000_000).await;
        let captured = tap.captured.lock().unwrap().clone();
        assert!(captured.len() > 10);
        let other = UdpSocket::bind("127.0.0.1:0").unwrap();
        for (i, d) in captured.iter().enumerate() {
            for _ in 0..3 {
                let _ = tap.upstream.send(d);
                let _ = other.send_to(d, addr);
            }
            let cut = 1 + (i * 37) % d.len().max(1);
            let _ = tap.upstream.send(&d[..cut.min(d.len())]);
            let _ = other.send_to(&d[..cut.min(d.len())], addr);
        }
        drop(tap);
        download_ok(addr, 1_000_000).await;

        // 3. 200 clients that start a large download and vanish: they go through a relay
        // that is then stopped, so the server never hears from them again. Five times: a
        // leak would grow with each storm.
        let mut after = Vec::new();
        for _storm in 0..STORMS {
            let (_, accepted_before, _) = child.stats();
            let relay = Relay::start(RelayOptions::new(loopback(), addr, None)).unwrap();
            let relay_addr = relay.local_addr();
            let mut tasks = Vec::new();
            for _ in 0..200 {
                tasks.push(tokio::spawn(async move {
                    let mut options = ClientOptions::download(relay_addr, 1_000_000_000);
                    options.time_cap = Some(Duration::from_secs(12));
                    options.want_server_report = false;
                    options.transport.idle_timeout = Duration::from_secs(60);
                    let _ = run_client(options, None).await;
                }));
            }
            // Wait until most have their connection (debug builds handshake slowly).
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut accepted = 0;
            while Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                accepted = child.stats().1 - accepted_before;
                if accepted >= 190 {
                    break;
                }
            }
            assert!(accepted >= 100, "{accepted} of 200 connections accepted");
            // Let them get well into their downloads, then cut them off.
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(relay);
            for t in tasks {
                let _ = t.await;
            }
            // The server keeps serving while they are still on its books.
            download_ok(addr, 1_000_000).await;

            // Idle timeout (2 s) and draining: everything goes away.
            let deadline = Instant::now() + Duration::from_secs(20);
            while child.stats().0 > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let (active, _, panicked) = child.stats();
            assert_eq!(active, 0, "connections left");
            assert!(!panicked, "a server thread panicked");
            tokio::time::sleep(Duration::from_millis(500)).await;
            download_ok(addr, 1_000_000).await;
            // Until the server has seen that connection end (and released memory).
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.stats().0 > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            after.push(child.rss_bytes());
        }
        eprintln!("server memory: baseline {baseline} bytes, after each storm {after:?}");
        // The server gives freed heap pages back when connections end
        // (server::release_memory): measured 10.4 MB fresh, 13.7-17.1 MB after the storms
        // (25-57 MB before it did). After the load, within twice the fresh footprint.
        for a in &after {
            assert!(
                *a < 2 * baseline,
                "server memory grew from {baseline} to {a} bytes: {after:?}"
            );
        }
        let earlier = after[..STORMS - 1].iter().copied().max().unwrap_or(0);
        assert!(
            after[STORMS - 1] < earlier + 8_000_000,
            "server memory keeps growing: {after:?}"
        );
    });
    assert!(
        child.child.try_wait().unwrap().is_none(),
        "the server process died"
    );
}

#[test]
fn connection_limit_refuses_extra_clients() {
    satquic_net::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let server = Arc::new(
            Server::bind(ServerOptions {
                listen: loopback(),
                max_connections: 2,
                ..ServerOptions::default()
            })
            .unwrap(),
        );
        let addr = server.local_addr();
        {
            let server = server.clone();
            tokio::spawn(async move { server.serve().await });
        }
        let mut long = Vec::new();
        for _ in 0..2 {
            long.push(tokio::spawn(async move {
                // 50 GB (the server's default limit is 100 GB): far more than loopback
                // moves in the 2 s cap (1 GB did, on a fast idle machine).
                let mut o = ClientOptions::download(addr, 50_000_000_000);
                o.time_cap = Some(Duration::from_secs(2));
                run_client(o, None).await
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut o = ClientOptions::download(addr, 1000);
        o.time_cap = Some(Duration::from_secs(3));
        let refused = run_client(o, None).await;
        assert!(refused.is_err(), "a third connection is refused");
        assert!(server.stats().refused >= 1);
        for t in long {
            let r = t.await.unwrap().unwrap();
            assert_eq!(r.status, "capped");
        }
    });
}

fn runtime() -> tokio::runtime::Runtime {
    satquic_net::install_crypto_provider();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A server on loopback, serving in the background.
fn serve(options: ServerOptions) -> (Arc<Server>, SocketAddr) {
    let server = Arc::new(Server::bind(options).unwrap());
    let addr = server.local_addr();
    let s = server.clone();
    tokio::spawn(async move { s.serve().await });
    (server, addr)
}

/// A client whose address a Retry validated, and that then stops mid-handshake (nothing
/// of it reaches the server after the server's first answer), is given up after the
/// handshake timeout and counted as a failed handshake. Before, every validated client was
/// served in 0.5-RTT with no handshake timeout, and such a client held its slot until the
/// silent-peer check abandoned it (3 s at the least).
#[test]
fn a_validated_client_that_stalls_is_held_to_the_handshake_timeout() {
    runtime().block_on(async {
        let (server, addr) = serve(ServerOptions {
            listen: loopback(),
            handshake_timeout: Duration::from_millis(500),
            ..ServerOptions::default()
        });
        let tap = Tap::stalling(addr);
        let mut options = ClientOptions::download(tap.addr, 1000);
        options.time_cap = Some(Duration::from_secs(4));
        let client = tokio::spawn(run_client(options, None));
        let deadline = Instant::now() + Duration::from_millis(2500);
        loop {
            let s = server.stats();
            if s.handshake_failures == 1 && s.active_connections == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "not given up in time: {s:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let s = server.stats();
        // One Retry, or more: on a loaded machine the client's first Initial can be sent
        // again before its Retry is read, and that copy gets a Retry of its own.
        assert!(s.retries_sent >= 1, "{s:?}");
        assert_eq!((s.accepted, s.abandoned), (1, 0), "{s:?}");
        // The client finished its side of the handshake, but none of it reached the server.
        let result = client.await.unwrap();
        assert!(result.is_err() || result.unwrap().status != "completed");
    });
}

/// Clients killed mid-download (they vanish: no CONNECTION_CLOSE, no further packet) fill
/// every connection slot; the server abandons them when they stop answering, so the next
/// client gets in within seconds, not after the 30 s idle timeout.
#[test]
fn dead_clients_free_their_slots_within_seconds() {
    /// Slots, all taken by clients that then vanish.
    const SLOTS: usize = 50;
    /// The next client must get in this soon after they vanish (idle timeout: 30 s).
    const WITHIN: Duration = Duration::from_secs(15);
    let rt = runtime();
    rt.block_on(async {
        let (server, addr) = serve(ServerOptions {
            listen: loopback(),
            max_connections: SLOTS,
            max_connections_per_address: SLOTS,
            ..ServerOptions::default()
        });
        assert_eq!(
            ServerOptions::default().transport.idle_timeout,
            Duration::from_secs(30)
        );
        let relay = Relay::start(RelayOptions::new(loopback(), addr, None)).unwrap();
        let relay_addr = relay.local_addr();
        let mut tasks = Vec::new();
        for _ in 0..SLOTS {
            tasks.push(tokio::spawn(async move {
                let mut options = ClientOptions::download(relay_addr, 1_000_000_000);
                // Longer than the test: none of them ends (and closes) by itself.
                options.time_cap = Some(Duration::from_secs(120));
                options.want_server_report = false;
                let _ = run_client(options, None).await;
            }));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.stats().active_connections < SLOTS {
            assert!(
                Instant::now() < deadline,
                "only {} of {SLOTS} connected",
                server.stats().active_connections
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Full: a further client is refused at once.
        let mut o = ClientOptions::download(addr, 1000);
        o.time_cap = Some(Duration::from_secs(5));
        let err = run_client(o, None).await.unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        // They vanish.
        drop(relay);
        let vanished = Instant::now();
        loop {
            let mut o = ClientOptions::download(addr, 1_000_000);
            o.time_cap = Some(Duration::from_secs(5));
            if let Ok(r) = run_client(o, None).await
                && r.status == "completed"
            {
                break;
            }
            assert!(
                vanished.elapsed() < WITHIN,
                "still locked out {:?} after the clients vanished: {:?}",
                vanished.elapsed(),
                server.stats()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!(
            "the next client got in {:?} after {SLOTS} clients vanished",
            vanished.elapsed()
        );
        // And every one of them is abandoned, well before the idle timeout.
        while server.stats().active_connections > 0 {
            assert!(
                vanished.elapsed() < Duration::from_secs(25),
                "{:?}",
                server.stats()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Abandoned as silent (those still in their handshake fail it instead).
        let s = server.stats();
        assert!(
            s.abandoned > 0 && s.abandoned + s.handshake_failures >= SLOTS as u64,
            "{s:?}"
        );
        for t in tasks {
            t.abort();
        }
    });
}

/// One address may hold at most `max_connections_per_address` connections.
#[test]
fn one_address_cannot_take_every_connection() {
    let rt = runtime();
    rt.block_on(async {
        let (server, addr) = serve(ServerOptions {
            listen: loopback(),
            max_connections: 8,
            max_connections_per_address: 2,
            ..ServerOptions::default()
        });
        let mut long = Vec::new();
        for _ in 0..2 {
            long.push(tokio::spawn(async move {
                // Still running when the third client comes (see above).
                let mut o = ClientOptions::download(addr, 50_000_000_000);
                o.time_cap = Some(Duration::from_secs(3));
                run_client(o, None).await
            }));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while server.stats().active_connections < 2 {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut o = ClientOptions::download(addr, 1000);
        o.time_cap = Some(Duration::from_secs(3));
        let err = run_client(o, None).await.unwrap_err();
        assert!(err.to_string().contains("refused"), "{err}");
        assert_eq!(server.stats().refused, 1);
        for t in long {
            let _ = t.await;
        }
    });
}

/// The soft limit on open files of this process (`/proc/self/limits`).
fn open_files_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// One datagram from each of 1,100 source ports (more than the relay's 1,024 flows, none
/// ever answered by the server) does not lock a real client out of the relay: unanswered
/// flows make room for it, and the stats count them.
#[test]
fn relay_serves_a_real_client_after_1100_spoofed_source_ports() {
    // A flow holds two descriptors here; a low limit scales the table down to fit.
    let max_flows = open_files_limit()
        .map_or(satquic_net::relay::DEFAULT_MAX_FLOWS, |n| n / 4)
        .min(satquic_net::relay::DEFAULT_MAX_FLOWS);
    let ports = max_flows + max_flows / 10;
    let rt = runtime();
    rt.block_on(async {
        let (_server, addr) = serve(ServerOptions {
            listen: loopback(),
            ..ServerOptions::default()
        });
        let mut options = RelayOptions::new(loopback(), addr, None);
        options.max_flows = max_flows;
        let relay = Relay::start(options).unwrap();
        let relay_addr = relay.local_addr();
        // Distinct source ports, one socket open at a time.
        let mut sent = 0;
        let mut port = 20_000u16;
        while sent < ports {
            port += 1;
            let Ok(s) = UdpSocket::bind(("127.0.0.1", port)) else {
                continue;
            };
            s.send_to(&[0x40; 100], relay_addr).unwrap();
            sent += 1;
            // Paced, so that the relay's socket buffer takes them all.
            if sent % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut snapshot = relay.snapshot();
        while snapshot.up.forwarded_packets < ports as u64 {
            assert!(
                Instant::now() < deadline,
                "{} of {ports} forwarded, {} flows",
                snapshot.up.forwarded_packets,
                snapshot.flows
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
            snapshot = relay.snapshot();
        }
        // The table is full of unanswered flows, the oldest evicted for the newest.
        assert_eq!(snapshot.flows, max_flows);
        assert_eq!(snapshot.flows_evicted, (ports - max_flows) as u64);
        assert_eq!(snapshot.flows_refused, 0);
        download_ok(relay_addr, 1_000_000).await;
        let snapshot = relay.snapshot();
        // (at least one: the client's refused-port check comes from a port of its own)
        assert!(snapshot.flows_evicted > (ports - max_flows) as u64);
        assert_eq!(snapshot.flows_refused, 0);
    });
}

/// A QUIC long-header datagram of a version nobody speaks, padded to 1,200 bytes: every
/// server answers it with Version Negotiation (RFC 9000 Sec. 6).
fn unknown_version_datagram(port: u16) -> Vec<u8> {
    let mut d = vec![0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 8];
    d.extend(u64::from(port).to_be_bytes());
    d.push(8);
    d.extend(u64::from(port).to_le_bytes());
    d.resize(1200, 0);
    d
}

/// One long-header datagram of an unknown version from each of as many source ports as
/// the relay has flows: the server answers each with Version Negotiation, which does not
/// make a flow established, so the next real client still gets in (issue 32 item 4;
/// before, those flows counted as answered, filled the table and the client hung).
#[test]
fn relay_serves_a_real_client_after_ports_answered_only_by_version_negotiation() {
    const FLOWS: usize = 64;
    let rt = runtime();
    rt.block_on(async {
        let (_server, addr) = serve(ServerOptions {
            listen: loopback(),
            ..ServerOptions::default()
        });
        let mut options = RelayOptions::new(loopback(), addr, None);
        options.max_flows = FLOWS;
        let relay = Relay::start(options).unwrap();
        let relay_addr = relay.local_addr();
        let mut sockets = Vec::new();
        while sockets.len() < FLOWS {
            let s = UdpSocket::bind(loopback()).unwrap();
            let port = s.local_addr().unwrap().port();
            s.send_to(&unknown_version_datagram(port), relay_addr)
                .unwrap();
            sockets.push(s);
        }
        // Every port gets its Version Negotiation back through the relay.
        let mut answered = 0;
        let mut buf = [0u8; 2048];
        for s in &sockets {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            if let Ok((n, _)) = s.recv_from(&mut buf) {
                assert_eq!(&buf[1..5], &[0, 0, 0, 0], "not Version Negotiation");
                assert!(n > 5);
                answered += 1;
            }
        }
        assert_eq!(answered, FLOWS);
        assert_eq!(relay.snapshot().flows, FLOWS);
        download_ok(relay_addr, 1_000_000).await;
        let snapshot = relay.snapshot();
        assert!(snapshot.flows_evicted >= 1, "{snapshot:?}");
        assert_eq!(snapshot.flows_refused, 0);
    });
}

/// A real client's first Initial (1,200 bytes): the client dials a socket that keeps what it
/// receives and never answers.
fn first_initial() -> Vec<u8> {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let addr = sink.local_addr().unwrap();
    let rt = runtime();
    let _client = rt.spawn(async move {
        let mut options = ClientOptions::download(addr, 1000);
        options.time_cap = Some(Duration::from_secs(3));
        let _ = run_client(options, None).await;
    });
    let mut buf = [0u8; 65536];
    // The client's first datagram may be a small check that something listens.
    let n = loop {
        let (n, _) = sink
            .recv_from(&mut buf)
            .expect("the client sends its Initial");
        if n >= 1200 {
            break n;
        }
    };
    rt.shutdown_background();
    buf[..n].to_vec()
}

/// PEM files of a self-signed certificate naming localhost and `names` more (a chain of
/// some 9 KB for 300), in `dir`.
fn certificate_files(
    dir: &std::path::Path,
    names: usize,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let subjects: Vec<String> = std::iter::once("localhost".to_string())
        .chain((0..names).map(|i| format!("name-{i}.example.net")))
        .collect();
    let cert = rcgen::generate_simple_self_signed(subjects).unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&c, cert.cert.pem()).unwrap();
    std::fs::write(&k, cert.signing_key.serialize_pem()).unwrap();
    (c, k)
}

/// RFC 9000 Sec. 8.1: before it validates a client's address, the server sends at most
/// three times the bytes it received. One real 1,200-byte Initial replayed from a port
/// that never answers (a spoofed source), through the probe timeouts that follow (1 s and
/// 3 s after), with the default certificate and one of some 9 KB, with and without
/// Retry. quinn-proto 0.11.19 started a full datagram whenever one byte of the budget was
/// left: 1,200 + 138 bytes at once, then two 1,200-byte probes at 1 s, 3,738 bytes
/// (vendor/quinn-proto/SATQUIC-PATCH.md, patch 12).
#[test]
fn an_unanswered_initial_gets_at_most_three_times_its_bytes() {
    let initial = first_initial();
    assert_eq!(initial.len(), 1200);
    let dir = std::env::temp_dir().join(format!("satquic-amplification-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = certificate_files(&dir, 300);
    let mut results = Vec::new();
    for (cert, label) in [(None, "self-signed"), (Some(big.clone()), "9 KB chain")] {
        for retry in [false, true] {
            let rt = runtime();
            let sent = rt.block_on(async {
                let (server, addr) = serve(ServerOptions {
                    listen: loopback(),
                    cert: cert.clone(),
                    retry,
                    handshake_timeout: Duration::from_secs(10),
                    ..ServerOptions::default()
                });
                let spoofed = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
                spoofed.send_to(&initial, addr).await.unwrap();
                let mut sent = Vec::new();
                let mut buf = [0u8; 65536];
                let until = tokio::time::Instant::now() + Duration::from_millis(3600);
                while let Ok(Ok(n)) = tokio::time::timeout_at(until, spoofed.recv(&mut buf)).await {
                    sent.push(n);
                }
                drop(server);
                sent
            });
            rt.shutdown_background();
            let total: usize = sent.iter().sum();
            assert!(!sent.is_empty(), "{label}, retry {retry}: no answer");
            results.push((
                total,
                format!("{label}, retry {retry}: {total} bytes in datagrams of {sent:?}"),
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<&str> = results.iter().map(|(_, l)| l.as_str()).collect();
    println!("{}", lines.join("\n"));
    assert!(
        results.iter().all(|(total, _)| *total <= 3 * 1200),
        "over three times the 1,200 bytes received:\n{}",
        lines.join("\n")
    );
}

/// A connection whose client has nothing to do (no request, no keep-alive of its own)
/// closes after the server's idle timeout, as the server's docs say. The server's own
/// keep-alives (a third of the idle timeout) kept it open for good before, holding its slot:
/// 200 such connections of a client that never pinged were all still open 70 s after they
/// opened against the default 30 s.
#[test]
fn an_idle_client_is_closed_after_the_idle_timeout() {
    runtime().block_on(async {
        let transport = satquic_net::NetTransport {
            idle_timeout: Duration::from_millis(600),
            ..satquic_net::NetTransport::default()
        };
        let (server, addr) = serve(ServerOptions {
            listen: loopback(),
            transport,
            ..ServerOptions::default()
        });
        let verifier =
            satquic_net::tls::ServerVerifier::new(satquic_net::tls::Verify::Any).unwrap();
        let crypto = satquic_net::tls::client_crypto(verifier, satquic_net::tls::ALPN_HQ).unwrap();
        let mut config = quinn::ClientConfig::new(Arc::new(
            quinn::crypto::rustls::QuicClientConfig::try_from(crypto).unwrap(),
        ));
        let mut client_transport = quinn::TransportConfig::default();
        client_transport
            .max_idle_timeout(Some(Duration::from_secs(60).try_into().unwrap()))
            .keep_alive_interval(None);
        config.transport_config(Arc::new(client_transport));
        let mut endpoint = quinn::Endpoint::client(loopback()).unwrap();
        endpoint.set_default_client_config(config);
        let conn = endpoint.connect(addr, "localhost").unwrap().await.unwrap();
        let opened = Instant::now();
        let closed = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
        assert!(
            matches!(closed, Ok(quinn::ConnectionError::TimedOut)),
            "still open {:?} after it opened (server idle timeout 600 ms): {closed:?}",
            opened.elapsed()
        );
        let deadline = Instant::now() + Duration::from_secs(2);
        while server.stats().active_connections > 0 {
            assert!(Instant::now() < deadline, "{:?}", server.stats());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}
