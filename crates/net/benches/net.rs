//! Real-socket benchmarks on loopback; prints a table (not criterion: each measurement is
//! one long transfer, not a micro-benchmark).
//!
//! `cargo bench -p satquic-net --bench net` (release build). Sections:
//!
//! 1. goodput of one `satquic server` -> `satquic client` connection without link
//!    emulation, with and without GSO, and the CPU time both spent per Gbit delivered;
//! 2. the relay with no limits: the highest offered UDP rate it forwards without loss;
//! 3. the relay's delay error (send time - modelled arrival) at 150 Mbit/s and 1 Gbit/s
//!    links offered 95 % of their rate.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use satquic_link::{DirectionSpec, LinkSpec, QueueLimit};
use satquic_net::client::{ClientOptions, run_client};
use satquic_net::relay::{Relay, RelayOptions};
use satquic_net::{Server, ServerOptions};

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 (utime, stime) are at 11 and 12 after the ")".
    (ticks(11) + ticks(12)) / 100.0
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn goodput(gso: bool, bytes: u64) -> (f64, f64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut options = ServerOptions {
            listen: loopback(),
            retry: false,
            ..ServerOptions::default()
        };
        options.transport.gso = gso;
        let server = Server::bind(options).unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });
        let mut c = ClientOptions::download(addr, bytes);
        c.transport.gso = gso;
        c.want_server_report = false;
        let cpu0 = cpu_seconds();
        let r = run_client(c, None).await.unwrap();
        let cpu = cpu_seconds() - cpu0;
        serve.abort();
        assert_eq!(r.status, "completed");
        let t = r.completed_at.unwrap().as_secs_f64();
        let gbit = bytes as f64 * 8.0 / 1e9;
        (gbit / t, cpu / gbit)
    })
}

/// Offers `rate_bps` of 1200-byte datagrams for `duration` through `relay_addr` to a sink;
/// returns (sent, received).
fn blast(
    relay_addr: SocketAddr,
    sink: &UdpSocket,
    rate_bps: f64,
    duration: Duration,
) -> (u64, u64) {
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let buf = [0u8; 1200];
    let gap = Duration::from_secs_f64(1200.0 * 8.0 / rate_bps);
    let sink = sink.try_clone().unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    // The sink reads like the relay does (quinn-udp: recvmmsg, GRO, 4 MB buffer), so it is
    // not the bottleneck being measured.
    let counter = std::thread::spawn(move || {
        let state = quinn::udp::UdpSocketState::new((&sink).into()).unwrap();
        let _ = state.set_recv_buffer_size((&sink).into(), 4 << 20);
        let mut bufs = vec![vec![0u8; 65536]; 8];
        let mut metas = vec![quinn::udp::RecvMeta::default(); 8];
        let mut n = 0u64;
        loop {
            let mut slices: Vec<std::io::IoSliceMut<'_>> = bufs
                .iter_mut()
                .map(|b| std::io::IoSliceMut::new(b))
                .collect();
            match state.recv((&sink).into(), &mut slices, &mut metas) {
                Ok(k) => {
                    for m in &metas[..k] {
                        n += m.len.div_ceil(m.stride.max(1)) as u64;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return n;
                }
                Err(_) => continue,
            }
        }
    });
    // Paced in 0.5 ms bursts with sleeps (not a spinning loop), as a sender using GSO
    // would: the machine has 2 cores, and a spinning sender would steal the relay's.
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < duration {
        let due = (start.elapsed().as_secs_f64() / gap.as_secs_f64()) as u64;
        while sent < due {
            sender.send_to(&buf, relay_addr).unwrap();
            sent += 1;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    (sent, counter.join().unwrap())
}

fn relay_max_rate() -> Vec<(f64, u64, u64, u64)> {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rows = Vec::new();
    for rate in [0.5e9, 1.0e9, 1.5e9, 2.0e9] {
        let options = RelayOptions::new(loopback(), sink.local_addr().unwrap(), None);
        let relay = Relay::start(options).unwrap();
        let (sent, got) = blast(relay.local_addr(), &sink, rate, Duration::from_secs(2));
        let (snap, _) = relay.stop();
        let _ = got; // the sink's own count is limited by the sink; the relay's is the measure
        rows.push((
            rate,
            sent,
            snap.up.forwarded_packets,
            snap.up.overload_drops + snap.up.send_errors,
        ));
    }
    rows
}

fn delay_error(rate_bps: u64) -> (u64, [Duration; 4], u64) {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let d = DirectionSpec::simple(
        rate_bps,
        Duration::from_millis(10),
        QueueLimit::Bytes(50_000_000),
    );
    let link = LinkSpec {
        name: "bench".into(),
        description: String::new(),
        source: String::new(),
        down: d.clone(),
        up: d,
        slots: None,
    };
    let relay = Relay::start(RelayOptions::new(
        loopback(),
        sink.local_addr().unwrap(),
        Some(link),
    ))
    .unwrap();
    let payload_share = 1200.0 / 1228.0;
    let _ = blast(
        relay.local_addr(),
        &sink,
        rate_bps as f64 * 0.95 * payload_share,
        Duration::from_secs(3),
    );
    let (snap, _) = relay.stop();
    let h = &snap.up.delay_error;
    let q = |p| h.quantile(p).unwrap_or_default();
    (
        h.count(),
        [q(0.5), q(0.9), q(0.99), q(0.999)],
        snap.up.stats.dropped_total().packets,
    )
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    satquic_net::install_crypto_provider();
    println!("## Loopback goodput, one connection, no link emulation (2 GB download)");
    println!("| GSO | goodput (Gbit/s) | CPU s per Gbit (server + client) |");
    println!("|---|---|---|");
    for gso in [true, false] {
        let (g, cpu) = goodput(gso, 2_000_000_000);
        println!("| {} | {g:.2} | {cpu:.2} |", if gso { "on" } else { "off" });
    }
    println!();
    println!("## Relay, no limits: offered vs forwarded (1200-byte datagrams, 2 s each)");
    println!(
        "| offered (Gbit/s) | sent | forwarded by the relay | overload + send errors | not forwarded |"
    );
    println!("|---|---|---|---|---|");
    for (rate, sent, forwarded, errors) in relay_max_rate() {
        println!(
            "| {:.1} | {sent} | {forwarded} | {errors} | {:.3} % |",
            rate / 1e9,
            100.0 * (sent.saturating_sub(forwarded)) as f64 / sent.max(1) as f64
        );
    }
    println!();
    println!("## Relay delay error (send time - modelled arrival), 95 % load, 3 s");
    println!("| link | packets | p50 | p90 | p99 | p99.9 | modelled drops |");
    println!("|---|---|---|---|---|---|---|");
    for rate in [150_000_000u64, 1_000_000_000] {
        let (n, q, drops) = delay_error(rate);
        println!(
            "| {} Mbit/s | {n} | {:?} | {:?} | {:?} | {:?} | {drops} |",
            rate / 1_000_000,
            q[0],
            q[1],
            q[2],
            q[3]
        );
    }
}
