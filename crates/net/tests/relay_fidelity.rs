//! Relay fidelity: delay, rate and drops of `satquic link` against its configuration.
//!
//! A sender thread sends numbered, timestamped datagrams to the relay; a sink socket
//! behind it (the "server") records when each arrives. All on loopback, one clock. Each
//! run holds the real-time lock ([`RealTimeLock`]): the runs of this file follow one
//! another, and none overlaps other real-time work that takes the lock.

use std::net::{SocketAddr, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use satquic_link::IP_UDP_OVERHEAD_BYTES;
use satquic_link::{DirectionSpec, DropReason, LinkSpec, LossSpec, Path, QueueLimit};
use satquic_net::realtime::RealTimeLock;
use satquic_net::relay::{Relay, RelayOptions, RelaySnapshot};

const PAYLOAD: usize = 1000;

fn link(rate_bps: u64, delay: Duration, limit: QueueLimit, loss: LossSpec) -> LinkSpec {
    let mut d = DirectionSpec::simple(rate_bps, delay, limit);
    d.loss = loss;
    LinkSpec {
        name: "test".into(),
        description: String::new(),
        source: String::new(),
        down: d.clone(),
        up: d,
        slots: None,
    }
}

struct Outcome {
    /// (sequence number, one-way delay) of every datagram received, in arrival order.
    received: Vec<(u64, Duration, Instant)>,
    relay: RelaySnapshot,
}

/// Closer than this to the next send, the sender spins rather than sleeps.
const SPIN_BEFORE_SEND: Duration = Duration::from_micros(300);

/// Sends `count` datagrams, one every `gap`, through a relay applying `spec` to a sink;
/// waits `settle` for the last ones. The sender sleeps until [`SPIN_BEFORE_SEND`] before
/// each send and spins the rest, for precision without holding a core: on a two-core
/// machine a sender spinning all along leaves the relay's two threads and the sink one core
/// between them, and any other load then delays the relay's departures by milliseconds.
fn run(spec: LinkSpec, count: u64, gap: Duration, settle: Duration) -> Outcome {
    let _realtime = RealTimeLock::acquire().unwrap();
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let sink_addr = sink.local_addr().unwrap();
    let mut options =
        RelayOptions::new(SocketAddr::from(([127, 0, 0, 1], 0)), sink_addr, Some(spec));
    options.seed = 42;
    let relay = Relay::start(options).unwrap();
    let relay_addr = relay.local_addr();
    let epoch = Instant::now();
    let receiver = thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        let mut quiet_since = Instant::now();
        loop {
            match sink.recv(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    assert_eq!(n, PAYLOAD);
                    let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
                    let sent =
                        Duration::from_nanos(u64::from_be_bytes(buf[8..16].try_into().unwrap()));
                    got.push((seq, now.duration_since(epoch) - sent, now));
                    quiet_since = now;
                }
                Err(_) if quiet_since.elapsed() > settle => return got,
                Err(_) => {}
            }
        }
    });
    let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut next = Instant::now();
    let mut buf = [0u8; PAYLOAD];
    for seq in 0..count {
        wait_until(next);
        buf[..8].copy_from_slice(&seq.to_be_bytes());
        let t = epoch.elapsed().as_nanos() as u64;
        buf[8..16].copy_from_slice(&t.to_be_bytes());
        sender.send_to(&buf, relay_addr).unwrap();
        next += gap;
    }
    let received = receiver.join().unwrap();
    let (relay, _) = relay.stop();
    Outcome { received, relay }
}

/// Sleeps until [`SPIN_BEFORE_SEND`] before `at`, then spins until `at`.
fn wait_until(at: Instant) {
    let sleep = at.saturating_duration_since(Instant::now());
    if sleep > SPIN_BEFORE_SEND {
        thread::sleep(sleep - SPIN_BEFORE_SEND);
    }
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn one_way_delay_matches_the_configuration() {
    let rate = 20_000_000;
    let delay = Duration::from_millis(20);
    let out = run(
        link(rate, delay, QueueLimit::Bytes(1_000_000), LossSpec::None),
        200,
        Duration::from_millis(3),
        Duration::from_millis(300),
    );
    assert_eq!(out.received.len(), 200);
    // An idle link: serialization of one datagram plus the propagation delay.
    let serialization = Duration::from_nanos(
        (PAYLOAD as u64 + u64::from(IP_UDP_OVERHEAD_BYTES)) * 8 * 1_000_000_000 / rate,
    );
    let expected = delay + serialization;
    let measured = median(out.received.iter().map(|r| r.1).collect());
    let error = measured.abs_diff(expected);
    assert!(
        error <= Duration::from_millis(1),
        "median one-way delay {measured:?}, configured {expected:?}"
    );
    assert_eq!(out.relay.up.overload_drops, 0);
}

#[test]
fn rate_matches_the_configuration() {
    let rate = 20_000_000;
    // 2000 datagrams at twice the link rate into a queue that holds them all.
    let wire_bits = (PAYLOAD as u64 + u64::from(IP_UDP_OVERHEAD_BYTES)) * 8;
    let gap = Duration::from_nanos(wire_bits * 1_000_000_000 / (2 * rate));
    let out = run(
        link(
            rate,
            Duration::from_millis(5),
            QueueLimit::Bytes(4_000_000),
            LossSpec::None,
        ),
        2000,
        gap,
        Duration::from_millis(300),
    );
    assert_eq!(out.received.len(), 2000, "no drop with a queue this deep");
    let first = out.received.first().unwrap().2;
    let last = out.received.last().unwrap().2;
    let measured_bps = (out.received.len() - 1) as f64 * wire_bits as f64
        / last.duration_since(first).as_secs_f64();
    assert!(
        (measured_bps - rate as f64).abs() <= 0.02 * rate as f64,
        "measured {measured_bps:.0} bit/s on the wire, configured {rate}"
    );
    // FIFO: no reordering.
    assert!(out.received.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn drops_only_by_the_queue_limit() {
    let rate = 20_000_000;
    let wire_bits = (PAYLOAD as u64 + u64::from(IP_UDP_OVERHEAD_BYTES)) * 8;
    let gap = Duration::from_nanos(wire_bits * 1_000_000_000 / (2 * rate));
    let sent = 600;
    let out = run(
        link(
            rate,
            Duration::from_millis(5),
            QueueLimit::Packets(20),
            LossSpec::None,
        ),
        sent,
        gap,
        Duration::from_millis(300),
    );
    let up = &out.relay.up;
    assert_eq!(up.stats.offered.packets, sent);
    let full = up.dropped(DropReason::QueueFull);
    assert!(
        full > 100,
        "twice the rate into 20 packets must overflow: {full}"
    );
    assert_eq!(
        up.stats.dropped_total().packets,
        full,
        "only queue-full drops"
    );
    assert_eq!(out.received.len() as u64 + full, sent);
    assert_eq!(up.forwarded_packets, out.received.len() as u64);
    assert_eq!((up.overload_drops, up.send_errors), (0, 0));
}

#[test]
fn random_loss_drops_exactly_what_the_model_drops() {
    let plr = 0.1;
    let spec = link(
        50_000_000,
        Duration::from_millis(2),
        QueueLimit::Bytes(10_000_000),
        LossSpec::Bernoulli { plr },
    );
    let sent = 1000;
    let out = run(
        spec.clone(),
        sent,
        Duration::from_micros(400),
        Duration::from_millis(300),
    );
    // Bernoulli draws do not depend on time: a fresh model with the same seed drops the
    // same packet numbers.
    let mut model: Path<()> = Path::new(&spec, 42).unwrap();
    let expected_lost: Vec<u64> = (0..sent)
        .filter(|i| {
            !model
                .up
                .enqueue(
                    Duration::from_micros(400 * i),
                    PAYLOAD as u32 + IP_UDP_OVERHEAD_BYTES,
                    (),
                )
                .is_queued()
        })
        .collect();
    let mut got: Vec<u64> = out.received.iter().map(|r| r.0).collect();
    got.sort();
    let lost: Vec<u64> = (0..sent)
        .filter(|i| got.binary_search(i).is_err())
        .collect();
    assert_eq!(lost, expected_lost);
    let up = &out.relay.up;
    assert_eq!(up.dropped(DropReason::RandomLoss), lost.len() as u64);
    assert_eq!(up.stats.dropped_total().packets, lost.len() as u64);
    assert_eq!(up.overload_drops, 0);
}
