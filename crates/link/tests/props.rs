//! Property tests: no input sequence panics, the queue never exceeds its limit, packets
//! are conserved and delivered in FIFO order no later than asked.

use proptest::prelude::*;
use satquic_link::*;
use std::time::Duration;

#[derive(Debug, Clone)]
enum Op {
    /// Enqueue at `now` (microseconds; may go backwards) a packet of this size.
    Enqueue {
        now_us: u64,
        size: u32,
    },
    Deliver {
        now_us: u64,
    },
    Timeout {
        now_us: u64,
    },
    /// Follow `poll_timeout` once.
    Follow,
}

fn op() -> impl Strategy<Value = Op> {
    let now = prop_oneof![
        4 => 0u64..2_000_000,
        1 => Just(0u64),
        1 => 0u64..u64::MAX / 2,
        1 => Just(u64::MAX),
    ];
    let size = prop_oneof![
        4 => 0u32..3000,
        1 => Just(0u32),
        1 => any::<u32>(),
        1 => Just(u32::MAX),
    ];
    prop_oneof![
        5 => (now.clone(), size).prop_map(|(now_us, size)| Op::Enqueue { now_us, size }),
        2 => now.clone().prop_map(|now_us| Op::Deliver { now_us }),
        1 => now.prop_map(|now_us| Op::Timeout { now_us }),
        2 => Just(Op::Follow),
    ]
}

/// A spread of specs exercising every feature.
fn specs() -> Vec<LinkSpec> {
    let mut v = presets::all();
    let mut trace = presets::lookup("qir-terrestrial").unwrap();
    trace.down.rate = RateSpec::MahimahiTrace {
        file: None,
        timestamps_ms: vec![1, 1, 3, 7, 7, 7, 10],
        opportunity_bytes: 1500,
    };
    trace.down.loss = LossSpec::GilbertElliott {
        p_good_to_bad: 0.1,
        p_bad_to_good: 0.3,
        loss_in_good: 0.01,
        loss_in_bad: 0.8,
    };
    v.push(trace);
    let mut outage = presets::lookup("thesis-sat").unwrap();
    outage.down.rate = RateSpec::Schedule {
        steps: vec![
            RateStep {
                from: Duration::ZERO,
                rate_bps: 1_000_000,
            },
            RateStep {
                from: Duration::from_millis(3),
                rate_bps: 0,
            },
            RateStep {
                from: Duration::from_millis(9),
                rate_bps: 7,
            },
        ],
        repeat_every: Some(Duration::from_millis(11)),
    };
    outage.down.bod = Some(BodSpec {
        period: Duration::from_millis(1),
        lag: Duration::ZERO,
        window: Duration::from_millis(3),
        initial_rate_bps: 7,
        min_rate_bps: 1,
        headroom: 100.0,
        lag_jitter: Duration::ZERO,
        headroom_spread: 50.0,
        random_phase: true,
    });
    outage.down.queue = QueueSpec {
        limit: QueueLimit::Bytes(5000),
        bdp_rate_of: BdpRateOf::This,
        discipline: Discipline::viasat(),
    };
    v.push(outage);
    let mut tiny = presets::lookup("qir-terrestrial").unwrap();
    tiny.down.queue.limit = QueueLimit::Packets(1);
    tiny.down.rate = RateSpec::constant(1);
    v.push(tiny);
    v
}

fn limit_holds(d: &Direction<u64>) -> bool {
    match d.queue_limit() {
        QueueLimit::Bytes(b) => d.queue_bytes() <= b,
        QueueLimit::Packets(p) => d.queue_packets() as u64 <= p,
        QueueLimit::Bdp(_) => false,
    }
}

fn conserved(d: &Direction<u64>) -> bool {
    let s = d.stats();
    s.offered.packets == s.enqueued.packets + s.dropped_total().packets
        && s.enqueued.packets == s.departed.packets + d.queue_packets() as u64
        && s.departed.packets == s.delivered.packets + d.in_flight_packets() as u64
        && s.offered.bytes == s.enqueued.bytes + s.dropped_total().bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn no_input_sequence_panics_and_invariants_hold(
        spec_index in 0usize..64,
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let specs = specs();
        let spec = &specs[spec_index % specs.len()];
        let mut path: Path<u64> = Path::new(spec, seed).unwrap();
        let d = &mut path.down;
        let mut next_payload = 0u64;
        let mut last_arrival = Duration::ZERO;
        let mut last_payload: Option<u64> = None;
        let mut check_delivery = |p: Delivered<u64>, now: Duration| {
            assert!(p.arrival <= now);
            assert!(p.arrival >= last_arrival, "FIFO arrival times");
            assert!(p.departed >= p.enqueued && p.arrival >= p.departed);
            if let Some(prev) = last_payload {
                assert!(p.payload > prev, "FIFO order");
            }
            last_arrival = p.arrival;
            last_payload = Some(p.payload);
        };
        for op in ops {
            match op {
                Op::Enqueue { now_us, size } => {
                    d.enqueue(Duration::from_micros(now_us), size, next_payload);
                    next_payload += 1;
                }
                Op::Deliver { now_us } => {
                    let now = Duration::from_micros(now_us);
                    while let Some(p) = d.poll_deliver(now) {
                        prop_assert!(p.arrival <= d.now());
                        check_delivery(p, d.now());
                    }
                }
                Op::Timeout { now_us } => d.handle_timeout(Duration::from_micros(now_us)),
                Op::Follow => {
                    if let Some(t) = d.poll_timeout() {
                        while let Some(p) = d.poll_deliver(t) {
                            prop_assert!(p.arrival <= d.now());
                            check_delivery(p, d.now());
                        }
                    }
                }
            }
            prop_assert!(limit_holds(d), "queue {} B / {} pkt over {:?}", d.queue_bytes(), d.queue_packets(), d.queue_limit());
            prop_assert!(conserved(d), "{:?}", d.stats());
            prop_assert!(d.stats().max_queue_bytes >= d.queue_bytes());
            if let Some(t) = d.poll_timeout() {
                // Internal events are never left behind.
                prop_assert!(t >= d.now() || d.in_flight_packets() > 0);
            }
        }
    }

    #[test]
    fn queue_never_exceeds_its_limit_under_random_arrivals(
        limit_bytes in 1500u64..200_000,
        rate_bps in 100_000u64..100_000_000,
        aqm in any::<bool>(),
        seed in any::<u64>(),
        arrivals in prop::collection::vec((0u64..2_000, 40u32..1500), 1..2000),
    ) {
        let spec = DirectionSpec {
            queue: QueueSpec {
                limit: QueueLimit::Bytes(limit_bytes),
                bdp_rate_of: BdpRateOf::This,
                discipline: if aqm { Discipline::viasat() } else { Discipline::DropTail },
            },
            ..DirectionSpec::simple(rate_bps, Duration::from_millis(5), QueueLimit::Bytes(limit_bytes))
        };
        let mut d: Direction<()> = Direction::new(&spec, seed).unwrap();
        let mut now = Duration::ZERO;
        let mut max_seen = 0;
        for (gap_us, size) in arrivals {
            now += Duration::from_micros(gap_us);
            d.enqueue(now, size, ());
            prop_assert!(d.queue_bytes() <= limit_bytes);
            max_seen = max_seen.max(d.queue_bytes());
        }
        prop_assert_eq!(d.stats().max_queue_bytes, max_seen);
        let occ = d.ground_truth().occupancy();
        prop_assert!(occ.bins().iter().all(|b| b.max_bytes <= limit_bytes));
    }

    #[test]
    fn toml_round_trip_of_arbitrary_simple_specs(
        rate in 1u64..1_000_000_000_000,
        delay_ns in 0u64..60_000_000_000,
        limit in 1u64..1_000_000_000,
        plr in 0.0f64..=1.0,
    ) {
        let mut d = DirectionSpec::simple(rate, Duration::from_nanos(delay_ns), QueueLimit::Bytes(limit));
        d.loss = LossSpec::Bernoulli { plr };
        let spec = LinkSpec { name: "p".into(), description: String::new(), source: String::new(), down: d.clone(), up: d, slots: None };
        let back = LinkSpec::from_toml_str(&spec.to_toml_string().unwrap()).unwrap();
        prop_assert_eq!(back, spec);
    }
}
