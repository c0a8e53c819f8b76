//! `satquic server`'s memory after clients killed mid-download (issue 32 item 8): the
//! binary as users run it, with its mimalloc allocator, on loopback. Wall-clock: it holds
//! the real-time lock (`satquic_net::realtime`), so it overlaps no other real-time work
//! that takes the lock.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");
/// Clients per round, killed mid-download.
const CLIENTS: usize = 60;
const ROUNDS: usize = 2;
/// How long RSS may take to settle once the connections are gone.
const SETTLE_SECS: u64 = 20;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn rss_bytes(pid: u32) -> u64 {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).unwrap_or_default();
    statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096
}

/// The active connections of the next `connections N (...` line of `server -i`.
fn next_count(lines: &Receiver<String>) -> usize {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("server -i prints its counters");
        if let Some(rest) = line.strip_prefix("connections ") {
            return rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    }
}

/// `satquic server ARGS` running until the returned guard drops: its pid and its stdout's
/// lines (the `-i` counters).
fn server(args: &[&str]) -> (Killed, u32, Receiver<String>) {
    let mut server = Command::new(BIN)
        .arg("server")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = server.stdout.take().unwrap();
    let pid = server.id();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (Killed(server), pid, lines)
}

fn client(addr: &str, bytes: &str) -> Command {
    let mut c = Command::new(BIN);
    c.args(["client", addr, "-n", bytes, "--insecure", "-i", "10"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Clients killed mid-download leave the server, once it has abandoned their
/// connections and within [`SETTLE_SECS`], within twice its fresh footprint. The release
/// build measured 1.29-1.42x over four rounds of 120 clients; this debug build under a
/// loaded test run reached 1.66x, and 2.68x by its second round without the fix (48.8 and
/// 69.8 MB against 26.0 MB fresh), so twice is the bound that still tells them apart. Before, mimalloc kept the pages
/// of the dead connections' send buffers on the server's idle worker threads: 23 MB
/// fresh, 108-171 MB after each of four rounds of 120 clients (release build).
#[test]
fn server_memory_returns_after_clients_are_killed_mid_download() {
    let _realtime = satquic_net::realtime::RealTimeLock::acquire().unwrap();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap().to_string();
    drop(socket);
    let (_server, pid, lines) = server(&[
        "--listen",
        &addr,
        "--max-connections",
        "256",
        "--max-per-address",
        "256",
        "-i",
        "0.5",
    ]);
    next_count(&lines);
    let warm = client(&addr, "5M").status().unwrap();
    assert!(warm.success());
    while next_count(&lines) > 0 {}
    std::thread::sleep(Duration::from_secs(1));
    let fresh = rss_bytes(pid);
    let mut after = Vec::new();
    for _ in 0..ROUNDS {
        let clients: Vec<Killed> = (0..CLIENTS)
            .map(|_| Killed(client(&addr, "10G").spawn().unwrap()))
            .collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        while next_count(&lines) < CLIENTS * 9 / 10 && Instant::now() < deadline {}
        std::thread::sleep(Duration::from_secs(1));
        drop(clients);
        let deadline = Instant::now() + Duration::from_secs(30);
        while next_count(&lines) > 0 {
            assert!(Instant::now() < deadline, "connections left");
        }
        // mimalloc purges freed pages after a delay (1 s, 10 s for its arenas): RSS
        // settles within seconds.
        let deadline = Instant::now() + Duration::from_secs(SETTLE_SECS);
        let mut rss = rss_bytes(pid);
        while rss >= fresh * 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            rss = rss_bytes(pid);
        }
        after.push(rss);
    }
    eprintln!("server RSS: fresh {fresh} bytes, after each round {after:?}");
    for a in &after {
        assert!(
            *a < fresh * 2,
            "server RSS {a} bytes after killed clients, fresh {fresh}: {after:?}"
        );
    }
}

/// HTTP responses are held to what their connection has sent: quinn keeps every written
/// byte until it is acknowledged, up to the send window (256 MiB by default), and h3-quinn
/// copies each chunk and a file is read into new buffers, so a response written as fast
/// as it was read made each connection hold its whole send window. Before (release build,
/// loopback): 10 h3 downloads of `/1G` took the server to 2.7 GB, 4 hq downloads of a 1 GB
/// file to 1.0 GB. Now [`satquic_net::http::WRITE_AHEAD_BYTES`] and what is in flight.
#[test]
fn http_responses_are_held_to_what_the_connection_sent() {
    let _realtime = satquic_net::realtime::RealTimeLock::acquire().unwrap();
    let www = std::env::temp_dir().join(format!("satquic-http-memory-{}", std::process::id()));
    std::fs::create_dir_all(&www).unwrap();
    std::fs::File::create(www.join("big"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap().to_string();
    drop(socket);
    let www_dir = www.to_str().unwrap();
    let (_server, pid, lines) = server(&["--listen", &addr, "-i", "0.5", "--www", www_dir]);
    next_count(&lines);
    let fresh = rss_bytes(pid);
    let http = |alpn: &str, path: &str| {
        let mut c = Command::new(BIN);
        c.args([
            "client",
            &addr,
            "--insecure",
            "--alpn",
            alpn,
            "--path",
            path,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        Killed(c.spawn().unwrap())
    };
    let clients: Vec<Killed> = (0..3)
        .flat_map(|_| [http("h3", "/1G"), http("hq-interop", "/big")])
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while next_count(&lines) < clients.len() {
        assert!(Instant::now() < deadline, "the clients did not connect");
    }
    let mut peak = 0;
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        peak = peak.max(rss_bytes(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(clients);
    let _ = std::fs::remove_dir_all(&www);
    eprintln!("server RSS: fresh {fresh} bytes, peak {peak} with 6 HTTP downloads");
    assert!(
        peak < fresh + (300 << 20),
        "server RSS {peak} bytes with 6 HTTP downloads, fresh {fresh}"
    );
}
