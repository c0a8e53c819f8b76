//! Behaviour of one direction: serialization, queueing, AQM, loss, delay, traces,
//! schedules, ground truth, determinism.

use satquic_link::*;
use std::time::Duration;

const US: fn(u64) -> Duration = Duration::from_micros;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn constant(rate_bps: u64, delay: Duration, limit: QueueLimit) -> DirectionSpec {
    DirectionSpec::simple(rate_bps, delay, limit)
}

/// Collects every delivery up to `end`, following `poll_timeout`.
fn drain<T>(d: &mut Direction<T>, end: Duration) -> Vec<Delivered<T>> {
    let mut out = Vec::new();
    while let Some(t) = d.poll_timeout() {
        if t > end {
            break;
        }
        while let Some(p) = d.poll_deliver(t) {
            out.push(p);
        }
    }
    out
}

#[test]
fn serialization_is_exact_at_constant_rate() {
    // 1500 B at 150 Mbit/s = 80 us each; 10 ms propagation.
    let mut d: Direction<u32> =
        Direction::new(&constant(150_000_000, MS(10), QueueLimit::Packets(100)), 1).unwrap();
    for i in 0..50 {
        assert!(d.enqueue(Duration::ZERO, 1500, i).is_queued());
    }
    let got = drain(&mut d, Duration::from_secs(1));
    assert_eq!(got.len(), 50);
    for (i, p) in got.iter().enumerate() {
        assert_eq!(p.payload, i as u32);
        assert_eq!(p.departed, US(80 * (i as u64 + 1)));
        assert_eq!(p.arrival, p.departed + MS(10));
        // It waited for the i packets ahead of it, not for its own transmission.
        assert_eq!(p.waited, US(80 * i as u64));
    }
}

#[test]
fn serialization_carries_sub_nanosecond_remainders() {
    // 1200 B at 7 Mbit/s = 1371428.571.. ns; the k-th departure is ceil(k x 9600e9 / 7e6).
    let mut d: Direction<()> = Direction::new(
        &constant(7_000_000, Duration::ZERO, QueueLimit::Packets(10_000)),
        1,
    )
    .unwrap();
    for _ in 0..1000 {
        d.enqueue(Duration::ZERO, 1200, ());
    }
    let got = drain(&mut d, Duration::from_secs(10));
    for (i, p) in got.iter().enumerate() {
        let k = i as u128 + 1;
        let exact = (k * 9600 * 1_000_000_000).div_ceil(7_000_000);
        assert_eq!(p.departed.as_nanos(), exact, "packet {k}");
    }
    // Long-run rate exactly 7 Mbit/s.
    let last = got.last().unwrap().departed.as_secs_f64();
    assert!((1000.0 * 9600.0 / last - 7e6).abs() / 7e6 < 1e-9);
}

#[test]
fn idle_link_serves_each_packet_from_its_arrival() {
    let mut d: Direction<()> =
        Direction::new(&constant(12_000_000, MS(5), QueueLimit::Packets(10)), 1).unwrap();
    d.enqueue(MS(0), 1500, ());
    d.enqueue(MS(3), 1500, ());
    let got = drain(&mut d, Duration::from_secs(1));
    assert_eq!(got[0].departed, MS(1));
    assert_eq!(got[1].departed, MS(4));
    assert_eq!(got[1].arrival, MS(9));
    // Neither waited: each found the queue empty.
    assert!(got.iter().all(|p| p.waited.is_zero()));
    // A packet arriving mid-transmission waits for the rest of it.
    d.enqueue(MS(10), 1500, ());
    d.enqueue(MS(10) + US(400), 1500, ());
    let got = drain(&mut d, Duration::from_secs(2));
    assert_eq!(got[1].waited, US(600));
}

#[test]
fn rate_change_mid_packet_applies_to_remaining_bits() {
    // 8 Mbit/s (1 B/us) until 1 ms, then 16 Mbit/s (2 B/us). A 1500 B packet arriving at
    // 0.5 ms sends 500 B by 1 ms and the other 1000 B in 0.5 ms: departs at 1.5 ms.
    let spec = DirectionSpec {
        rate: RateSpec::Schedule {
            steps: vec![
                RateStep {
                    from: Duration::ZERO,
                    rate_bps: 8_000_000,
                },
                RateStep {
                    from: MS(1),
                    rate_bps: 16_000_000,
                },
            ],
            repeat_every: None,
        },
        ..constant(1, Duration::ZERO, QueueLimit::Packets(10))
    };
    let mut d: Direction<()> = Direction::new(&spec, 1).unwrap();
    d.enqueue(US(500), 1500, ());
    let got = drain(&mut d, MS(10));
    assert_eq!(got[0].departed, US(1500));
}

#[test]
fn schedule_steps_and_outage() {
    // 12 Mbit/s (1500 B per ms), an outage from 2 to 5 ms, then 12 Mbit/s again.
    let step = |ms, rate_bps| RateStep {
        from: MS(ms),
        rate_bps,
    };
    let spec = DirectionSpec {
        rate: RateSpec::Schedule {
            steps: vec![step(0, 12_000_000), step(2, 0), step(5, 12_000_000)],
            repeat_every: None,
        },
        ..constant(1, Duration::ZERO, QueueLimit::Packets(10))
    };
    let mut d: Direction<()> = Direction::new(&spec, 1).unwrap();
    for _ in 0..4 {
        d.enqueue(Duration::ZERO, 1500, ());
    }
    let got: Vec<_> = drain(&mut d, MS(100)).iter().map(|p| p.departed).collect();
    assert_eq!(got, vec![MS(1), MS(2), MS(6), MS(7)]);
}

#[test]
fn repeating_schedule_average_rate() {
    let step = |ms, rate_bps| RateStep {
        from: MS(ms),
        rate_bps,
    };
    let spec = DirectionSpec {
        rate: RateSpec::Schedule {
            steps: vec![step(0, 10_000_000), step(100, 30_000_000)],
            repeat_every: Some(MS(200)),
        },
        ..constant(1, Duration::ZERO, QueueLimit::Packets(1_000_000))
    };
    let mut d: Direction<()> = Direction::new(&spec, 1).unwrap();
    for _ in 0..100_000 {
        d.enqueue(Duration::ZERO, 1000, ());
    }
    d.handle_timeout(Duration::from_secs(10));
    // Mean 20 Mbit/s over whole periods: 10 s -> 25 MB = 25_000 packets.
    assert_eq!(d.stats().departed.packets, 25_000);
}

#[test]
fn mahimahi_trace_delivers_at_opportunities() {
    // Opportunities at 1, 1, 3 ms; period 3 ms.
    let spec = DirectionSpec {
        rate: RateSpec::MahimahiTrace {
            file: None,
            timestamps_ms: vec![1, 1, 3],
            opportunity_bytes: 1500,
        },
        ..constant(1, Duration::ZERO, QueueLimit::Packets(100))
    };
    let mut d: Direction<u32> = Direction::new(&spec, 1).unwrap();
    // Three 500 B packets share the first opportunity; a 3000 B packet takes two.
    for i in 0..3 {
        d.enqueue(Duration::ZERO, 500, i);
    }
    d.enqueue(Duration::ZERO, 3000, 3);
    d.enqueue(Duration::ZERO, 1500, 4);
    let got: Vec<_> = drain(&mut d, MS(100))
        .iter()
        .map(|p| (p.payload, p.departed))
        .collect();
    assert_eq!(
        got,
        vec![(0, MS(1)), (1, MS(1)), (2, MS(1)), (3, MS(3)), (4, MS(4))]
    );
    // Idle opportunities are not banked: a packet arriving at 10 ms waits for 10 ms's slot
    // (cycle 3 has opportunities at 10, 10, 12 ms).
    d.enqueue(MS(10), 1500, 5);
    let got = drain(&mut d, MS(100));
    assert_eq!(got[0].departed, MS(10));
}

#[test]
fn mahimahi_trace_rate_matches_the_trace() {
    // A bursty 1-second trace: 1000 opportunities at pseudo-random ms.
    let mut ts: Vec<u64> = (0..1000u64).map(|i| 1 + (i * 7919) % 1000).collect();
    ts.sort();
    let trace = MahimahiTrace::from_timestamps_ms(ts.clone(), "test").unwrap();
    let mean_bps = trace.mean_rate_bps(1500);
    let spec = DirectionSpec {
        rate: RateSpec::MahimahiTrace {
            file: None,
            timestamps_ms: ts,
            opportunity_bytes: 1500,
        },
        ..constant(1, Duration::ZERO, QueueLimit::Packets(1_000_000))
    };
    let mut d: Direction<()> = Direction::new(&spec, 1).unwrap();
    for _ in 0..20_000 {
        d.enqueue(Duration::ZERO, 1500, ());
    }
    d.handle_timeout(Duration::from_secs(10));
    let measured_bps = d.stats().departed.bytes as f64 * 8.0 / 10.0;
    assert_eq!(
        measured_bps, mean_bps,
        "saturated link uses every opportunity"
    );
    assert_eq!(mean_bps, 12_000_000.0);
}

#[test]
fn drop_tail_drops_only_when_full() {
    let limit = 20_000;
    let mut d: Direction<()> =
        Direction::new(&constant(1_000_000, MS(1), QueueLimit::Bytes(limit)), 1).unwrap();
    let mut drops = 0;
    for i in 0..5000u64 {
        let now = US(i * 100);
        d.handle_timeout(now);
        let before = d.queue_bytes();
        let size = 200 + (i * 37 % 1300) as u32;
        match d.enqueue(now, size, ()).drop_reason() {
            Some(DropReason::QueueFull) => {
                assert!(before + size as u64 > limit);
                drops += 1;
            }
            None => assert!(before + size as u64 <= limit),
            Some(other) => panic!("unexpected {other:?}"),
        }
        assert!(d.queue_bytes() <= limit);
    }
    assert!(drops > 1000, "overloaded 8x, got {drops} drops");
}

#[test]
fn packet_limit_counts_packets() {
    let mut d: Direction<()> =
        Direction::new(&constant(1_000, MS(1), QueueLimit::Packets(3)), 1).unwrap();
    let r: Vec<_> = (0..5)
        .map(|_| d.enqueue(Duration::ZERO, 100, ()).is_queued())
        .collect();
    assert_eq!(r, vec![true, true, true, false, false]);
}

#[test]
fn oversized_packet_is_too_large_not_congestion() {
    let mut d: Direction<()> =
        Direction::new(&constant(1_000_000, MS(1), QueueLimit::Bytes(1000)), 1).unwrap();
    assert_eq!(
        d.enqueue(Duration::ZERO, 1001, ()).drop_reason(),
        Some(DropReason::TooLarge)
    );
    assert_eq!(d.ground_truth().capacity_time(), None);
    assert_eq!(d.ground_truth().first_congestion_drop(), None);
}

#[test]
fn viasat_aqm_drops_a_quarter_above_half_the_limit() {
    let limit = 36_000_000;
    let spec = DirectionSpec {
        queue: QueueSpec {
            limit: QueueLimit::Bytes(limit),
            bdp_rate_of: BdpRateOf::This,
            discipline: Discipline::viasat(),
        },
        ..constant(150_000_000, MS(300), QueueLimit::Bytes(limit))
    };
    let mut d: Direction<()> = Direction::new(&spec, 7).unwrap();
    // Offer 300 Mbit/s for 20 s: 1500 B every 40 us.
    let (mut above, mut aqm, mut below_drops) = (0u64, 0u64, 0u64);
    for i in 0..500_000u64 {
        let now = US(i * 40);
        d.handle_timeout(now);
        let over = d.queue_bytes() > limit / 2;
        let r = d.enqueue(now, 1500, ()).drop_reason();
        if over {
            above += 1;
            if r == Some(DropReason::Aqm) {
                aqm += 1;
            }
        } else if r.is_some() {
            below_drops += 1;
        }
        assert!(d.queue_bytes() <= limit);
    }
    let fraction = aqm as f64 / above as f64;
    assert!(above > 100_000, "long run above the threshold: {above}");
    assert!((fraction - 0.25).abs() < 0.03, "AQM dropped {fraction:.4}");
    assert_eq!(below_drops, 0, "no drops below the threshold");
    // At 2x overload a 25% AQM cannot hold the queue: it still reaches the limit.
    assert!(d.stats().dropped(DropReason::QueueFull).packets > 0);
    let (t, reason) = d.ground_truth().first_congestion_drop().unwrap();
    assert_eq!(reason, DropReason::Aqm);
    // 18 MB at a net 150 Mbit/s fill rate: ~0.96 s.
    assert!((t.as_secs_f64() - 0.96).abs() < 0.01, "{t:?}");
    assert_eq!(d.ground_truth().capacity_time(), Some(Duration::ZERO));
}

#[test]
fn jitter_preserves_fifo() {
    let spec = DirectionSpec {
        delay: DelaySpec {
            jitter: Some(JitterSpec { max: MS(30) }),
            ..DelaySpec::fixed(MS(10))
        },
        ..constant(100_000_000, MS(10), QueueLimit::Packets(100_000))
    };
    let mut d: Direction<u64> = Direction::new(&spec, 3).unwrap();
    for i in 0..20_000u64 {
        d.enqueue(US(i * 50), 1200, i);
    }
    let got = drain(&mut d, Duration::from_secs(10));
    assert_eq!(got.len(), 20_000);
    let mut spread = std::collections::BTreeSet::new();
    for w in got.windows(2) {
        assert_eq!(w[1].payload, w[0].payload + 1, "FIFO");
        assert!(w[1].arrival >= w[0].arrival);
    }
    for p in &got {
        let extra = p.arrival - p.departed;
        assert!(extra >= MS(10) && extra <= MS(40));
        spread.insert(extra.as_millis());
    }
    assert!(spread.len() > 10, "jitter actually varies the delay");
}

#[test]
fn bernoulli_loss_rate_within_tolerance() {
    let spec = DirectionSpec {
        loss: LossSpec::Bernoulli { plr: 0.01 },
        ..constant(1_000_000_000, MS(1), QueueLimit::Packets(1_000_000))
    };
    let mut d: Direction<()> = Direction::new(&spec, 11).unwrap();
    let n = 200_000u64;
    for i in 0..n {
        d.enqueue(US(i * 20), 100, ());
    }
    let lost = d.stats().dropped(DropReason::RandomLoss).packets as f64 / n as f64;
    // 4 standard deviations: sqrt(0.01 x 0.99 / 2e5) = 0.00022.
    assert!((lost - 0.01).abs() < 0.0009, "loss rate {lost}");
    assert_eq!(
        d.ground_truth().capacity_time(),
        None,
        "random loss is not congestion"
    );
    assert!(
        d.ground_truth()
            .first_drop(DropReason::RandomLoss)
            .is_some()
    );
}

#[test]
fn gilbert_elliott_mean_burst_length() {
    // Bad state loses everything, good state nothing: bursts average 1 / p_bad_to_good = 4.
    let spec = DirectionSpec {
        loss: LossSpec::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.25,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
        },
        ..constant(1_000_000_000, MS(1), QueueLimit::Packets(10_000_000))
    };
    let mut d: Direction<()> = Direction::new(&spec, 5).unwrap();
    let (mut bursts, mut lost, mut in_burst) = (0u64, 0u64, false);
    let n = 400_000u64;
    for i in 0..n {
        let is_lost = d.enqueue(US(i), 10, ()).drop_reason() == Some(DropReason::BurstLoss);
        if is_lost {
            lost += 1;
            if !in_burst {
                bursts += 1;
            }
        }
        in_burst = is_lost;
    }
    let mean_burst = lost as f64 / bursts as f64;
    assert!((mean_burst - 4.0).abs() < 0.2, "mean burst {mean_burst}");
    let rate = lost as f64 / n as f64;
    assert!(
        (rate - spec.loss.mean_loss_rate()).abs() < 0.004,
        "loss rate {rate}"
    );
}

/// 12 Mbit/s: a 1500 B packet takes exactly 1 ms; 5-packet queue; 10 ms delay.
fn capacity_link() -> Direction<()> {
    Direction::new(&constant(12_000_000, MS(10), QueueLimit::Packets(5)), 1).unwrap()
}

#[test]
fn capacity_point_on_a_hand_made_pattern() {
    let mut d = capacity_link();
    // A lone packet (busy 0-1 ms), a burst of 3 at 10 ms (busy 10-13 ms): no overflow.
    d.enqueue(MS(0), 1500, ());
    for _ in 0..3 {
        d.enqueue(MS(10), 1500, ());
    }
    // From 20 ms one packet every 0.5 ms (2x the link rate): the queue grows by one packet
    // per ms without emptying and first overflows when a 6th would be queued.
    let mut first_drop = None;
    for i in 0..40u64 {
        let now = MS(20) + US(500 * i);
        if d.enqueue(now, 1500, ()).drop_reason().is_some() && first_drop.is_none() {
            first_drop = Some(now);
            assert_eq!(d.ground_truth().capacity_time(), Some(MS(20)));
        } else if first_drop.is_none() {
            assert_eq!(
                d.ground_truth().capacity_time(),
                None,
                "unknown before a drop"
            );
        }
    }
    // Arrivals every 0.5 ms from 20 ms, departures every 1 ms from 21 ms: after the
    // arrival at 24 ms (and the departure at 24 ms) five packets are queued, so the
    // arrival at 24.5 ms is the first that does not fit.
    assert_eq!(first_drop, Some(US(24_500)));
    assert_eq!(
        d.ground_truth().first_congestion_drop(),
        Some((US(24_500), DropReason::QueueFull))
    );
    assert_eq!(d.ground_truth().busy_periods(), 3);
}

#[test]
fn capacity_point_at_end_without_drop() {
    let mut d = capacity_link();
    d.enqueue(MS(0), 1500, ());
    d.enqueue(MS(10), 1500, ());
    d.enqueue(MS(10), 1500, ());
    // Still busy at 11.5 ms: the busy period that started at 10 ms.
    assert_eq!(d.finish(US(11_500)).capacity_time_at_end(), Some(MS(10)));
    assert_eq!(d.ground_truth().capacity_time(), None);
    // Empty at 20 ms: no capacity point.
    assert_eq!(d.finish(MS(20)).capacity_time_at_end(), None);
}

#[test]
fn packet_log_records_every_fate() {
    let spec = constant(12_000_000, MS(10), QueueLimit::Packets(1));
    let config = GroundTruthConfig {
        packet_log: true,
        ..Default::default()
    };
    let mut d: Direction<()> = Direction::with_ground_truth(&spec, 1, config).unwrap();
    d.enqueue(MS(0), 1500, ());
    d.enqueue(MS(0), 1500, ());
    d.finish(MS(50));
    let log = d.ground_truth().packets();
    assert_eq!(
        log[0].fate,
        PacketFate::Departed {
            departed: MS(1),
            arrival: MS(11)
        }
    );
    assert_eq!(log[1].fate, PacketFate::Dropped(DropReason::QueueFull));
    assert_eq!(log[1].offered, MS(0));
    // Off by default.
    let mut plain: Direction<()> = Direction::new(&spec, 1).unwrap();
    plain.enqueue(MS(0), 1500, ());
    assert!(plain.ground_truth().packets().is_empty());
}

#[test]
fn occupancy_series_follows_the_queue() {
    let mut d =
        Direction::<()>::new(&constant(12_000_000, MS(10), QueueLimit::Packets(100)), 1).unwrap();
    for _ in 0..10 {
        d.enqueue(MS(0), 1500, ());
    }
    d.finish(MS(100));
    let occ = d.ground_truth().occupancy();
    assert_eq!(occ.resolution(), MS(1));
    assert_eq!(occ.at(US(500)), 15_000);
    assert_eq!(occ.at(US(1500)), 13_500);
    assert_eq!(occ.at(US(5500)), 7_500);
    assert_eq!(occ.at(MS(50)), 0);
    let sampled = occ.sampled(MS(10), MS(20));
    assert_eq!(sampled, vec![(MS(0), 15_000), (MS(10), 0), (MS(20), 0)]);
    assert_eq!(d.stats().max_queue_bytes, 15_000);
}

#[test]
fn time_never_goes_backwards() {
    let mut d = capacity_link();
    d.enqueue(MS(10), 1500, ());
    // An earlier `now` is treated as 10 ms.
    d.enqueue(MS(5), 1500, ());
    let got = drain(&mut d, MS(100));
    assert_eq!(got[0].enqueued, MS(10));
    assert_eq!(got[1].enqueued, MS(10));
    assert_eq!(got[1].departed, MS(12));
}

fn delivery_sequence(spec: &LinkSpec, seed: u64) -> Vec<(u64, Duration, bool)> {
    let mut path: Path<u64> = Path::new(spec, seed).unwrap();
    let mut out = Vec::new();
    for i in 0..20_000u64 {
        let now = US(i * 40);
        let a = path.down.enqueue(now, 1200, i);
        out.push((a.id(), now, a.is_queued()));
        while let Some(p) = path.down.poll_deliver(now) {
            out.push((p.payload, p.arrival, true));
        }
    }
    while let Some(t) = path.down.poll_timeout() {
        while let Some(p) = path.down.poll_deliver(t) {
            out.push((p.payload, p.arrival, true));
        }
    }
    out
}

#[test]
fn same_seed_same_result_different_seed_differs() {
    // LEO: jitter, oscillation and path changes; plus 1% loss and a small AQM queue.
    let mut spec = presets::lookup("leo").unwrap();
    spec.down.loss = LossSpec::Bernoulli { plr: 0.01 };
    spec.down.queue.discipline = Discipline::viasat();
    spec.down.queue.limit = QueueLimit::Bytes(200_000);
    let a = delivery_sequence(&spec, 42);
    let b = delivery_sequence(&spec, 42);
    let c = delivery_sequence(&spec, 43);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// The model is lazy: a direction processes its departures, rate and BoD changes and
/// cross-traffic arrivals when asked about a later time, at their own times. How often it
/// is asked must not matter (the simulator asks at every send and delivery; the
/// real-time relay at its timer).
#[test]
fn results_do_not_depend_on_polling_frequency() {
    let mut busy = presets::lookup("geo-viasat-bod").unwrap();
    busy.down.cross_traffic = Some(CrossTrafficSpec::constant(20_000_000));
    for (name, spec) in [
        ("lte", presets::lookup("lte").unwrap()),
        ("bod+cross", busy),
    ] {
        let run = |poll_every: u64, extra_polls: bool| {
            let mut path: Path<u64> = Path::new(&spec, 9).unwrap();
            let mut out = Vec::new();
            for i in 0..20_000u64 {
                // Bursts of 50 packets, 50 ms apart: the queue fills and empties.
                let now = US(i * 100 + i / 50 * 50_000);
                path.down.enqueue(now, 1400, i);
                if extra_polls {
                    // Repeated and in-between questions, as the simulator asks them.
                    path.down.handle_timeout(now);
                    path.down.handle_timeout(now + US(37));
                }
                if i % poll_every == 0 {
                    while let Some(p) = path.down.poll_deliver(now) {
                        out.push((p.payload, p.departed, p.arrival));
                    }
                }
            }
            path.down.handle_timeout(Duration::from_secs(3600));
            while let Some(p) = path.down.poll_deliver(Duration::from_secs(3600)) {
                out.push((p.payload, p.departed, p.arrival));
            }
            (out, path.down.stats().clone())
        };
        let reference = run(97, false);
        assert_eq!(run(1, false), reference, "{name}");
        assert_eq!(run(1, true), reference, "{name}");
    }
}

/// A caller that wakes only at `poll_timeout` collects every packet at its arrival time,
/// never later: the simulator relies on this, as it steps from one `poll_timeout` to the
/// next. Delay variation (LEO), rate cycles (LTE), BoD and cross traffic included.
#[test]
fn following_poll_timeout_collects_each_packet_at_its_arrival() {
    let mut bod = presets::lookup("geo-viasat-bod").unwrap();
    bod.down.cross_traffic = Some(CrossTrafficSpec::constant(20_000_000));
    let specs = [
        ("leo", presets::lookup("leo").unwrap()),
        ("lte", presets::lookup("lte").unwrap()),
        ("bod+cross", bod),
    ];
    for (name, spec) in specs {
        let mut path: Path<u64> = Path::new(&spec, 5).unwrap();
        // Every 2 s a burst of 20 packets 20 us apart, and 1 s later a lone packet: only
        // poll_timeout tells when it arrives (nothing else wakes the caller in between).
        let sends: Vec<Duration> = (0..2_100u64)
            .map(|i| {
                let (block, j) = (i / 21, i % 21);
                let offset = if j < 20 { US(j * 20) } else { MS(1000) };
                MS(2000 * block) + offset
            })
            .collect();
        let (mut next_send, mut collected, mut wakes) = (0, 0, 0);
        loop {
            let due = path.down.poll_timeout();
            let now = match (sends.get(next_send), due) {
                (Some(&s), Some(d)) => s.min(d),
                (Some(&s), None) => s,
                (None, Some(d)) => d,
                (None, None) => break,
            };
            wakes += 1;
            while let Some(p) = path.down.poll_deliver(now) {
                assert_eq!(
                    p.arrival, now,
                    "{name}: packet {} collected late",
                    p.payload
                );
                collected += 1;
            }
            if sends.get(next_send) == Some(&now) {
                path.down.enqueue(now, 1400, next_send as u64);
                next_send += 1;
            }
        }
        let stats = path.down.stats();
        assert_eq!(collected, stats.delivered.packets, "{name}");
        assert!(collected > 1_500, "{name}: {collected}");
        // One wake per send and per arrival, and a few where a lower bound was early.
        assert!(wakes < 3 * sends.len(), "{name}: {wakes} wakes");
    }
}

#[test]
fn path_directions_use_distinct_streams() {
    let mut spec = presets::lookup("qir-satloss").unwrap();
    spec.up = spec.down.clone();
    let mut path: Path<()> = Path::new(&spec, 1).unwrap();
    let mut down = Vec::new();
    let mut up = Vec::new();
    for i in 0..2000u64 {
        down.push(path.down.enqueue(US(i * 1000), 100, ()).is_queued());
        up.push(path.up.enqueue(US(i * 1000), 100, ()).is_queued());
    }
    assert_ne!(down, up);
}

#[test]
fn bdp_limit_needs_a_path() {
    let e = Direction::<()>::new(&constant(1_000_000, MS(1), QueueLimit::Bdp(1.0)), 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("base RTT"), "{e}");
}

#[test]
fn bod_allocation_is_recorded() {
    let spec = presets::lookup("geo-viasat-bod").unwrap();
    let mut path: Path<()> = Path::new(&spec, 1).unwrap();
    // Offer 20 Mbit/s for 5 s: 1500 B every 600 us.
    for i in 0..8333u64 {
        path.down.enqueue(US(i * 600), 1500, ());
    }
    let truth = path.down.finish(Duration::from_secs(5));
    let alloc = truth.allocation();
    assert_eq!(alloc[0], (Duration::ZERO, 2_000_000));
    // The decision at 2 s counted the 834 packets offered in [1.5 s, 2 s) (20.016 Mbit/s)
    // and granted 3x that from 2.6 s.
    assert_eq!(alloc[1], (MS(2600), 834 * 1500 * 8 * 2 * 3));
    assert_eq!(truth.full_allocation_at(), None);
    assert_eq!(path.up.ground_truth().allocation(), &[]);
}

/// 5 Mbit/s of cross traffic on a 10 Mbit/s bottleneck: a caller offering 10 Mbit/s for
/// one second builds a queue it shares with the background, so its last packet leaves
/// half a second later than alone; nothing of the background reaches the far end.
#[test]
fn cross_traffic_shares_the_queue_and_leaves_at_the_bottleneck() {
    let last_arrival = |cross: Option<CrossTrafficSpec>| {
        let spec = DirectionSpec {
            cross_traffic: cross,
            ..constant(10_000_000, MS(10), QueueLimit::Bytes(10_000_000))
        };
        let mut d: Direction<u32> = Direction::new(&spec, 3).unwrap();
        // 1,250 packets of 1,000 bytes, one every 0.8 ms: 10 Mbit/s for one second.
        for i in 0..1250u32 {
            assert!(d.enqueue(US(800 * u64::from(i)), 1000, i).is_queued());
        }
        let got = drain(&mut d, Duration::from_secs(5));
        assert_eq!(got.len(), 1250, "every caller packet, and only those");
        assert!(got.iter().enumerate().all(|(i, p)| p.payload == i as u32));
        (got.last().unwrap().arrival, d.stats().clone())
    };
    let (alone, stats) = last_arrival(None);
    assert_eq!(stats.cross_offered.packets, 0);
    assert!((alone.as_secs_f64() - 1.0096).abs() < 0.001, "{alone:?}");
    let (shared, stats) = last_arrival(Some(CrossTrafficSpec::constant(5_000_000)));
    // 1.25 MB of ours and 0.625 MB of background by 1 s, drained at 10 Mbit/s while the
    // background keeps coming: the queue ahead of our last packet empties at 5 Mbit/s,
    // by 1.5 s, and it arrives 10 ms later.
    assert!((shared.as_secs_f64() - 1.51).abs() < 0.002, "{shared:?}");
    assert_eq!(stats.offered.packets, 1250);
    assert_eq!(stats.departed.packets, 1250);
    assert!(stats.cross_departed.packets > 400, "{stats:?}");
    assert_eq!(stats.cross_dropped.packets, 0);
    assert!(stats.max_queue_bytes > 600_000, "{stats:?}");
}

/// Cross traffic is dropped by a full queue like any packet, and counted apart.
#[test]
fn cross_traffic_overflowing_the_queue_is_dropped_and_counted_apart() {
    let spec = DirectionSpec {
        cross_traffic: Some(CrossTrafficSpec::constant(20_000_000)),
        ..constant(10_000_000, MS(10), QueueLimit::Bytes(100_000))
    };
    let mut d: Direction<()> = Direction::new(&spec, 3).unwrap();
    d.handle_timeout(Duration::from_secs(1));
    let s = d.stats();
    assert_eq!(s.offered.packets, 0);
    assert_eq!(s.dropped_total().packets, 0);
    // 20 Mbit/s of 1,500-byte packets for a second: 1,667 offered, 833 served, 66 in
    // the 100 kB queue, the rest dropped.
    assert_eq!(s.cross_offered.packets, 1667, "{s:?}");
    assert_eq!(s.cross_departed.packets, 833, "{s:?}");
    assert_eq!(
        s.cross_dropped.packets + s.cross_departed.packets + d.queue_packets() as u64,
        s.cross_offered.packets
    );
    assert!((760..=780).contains(&s.cross_dropped.packets), "{s:?}");
    assert!(d.ground_truth().first_congestion_drop().is_some());
}
