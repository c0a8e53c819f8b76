//! The slot schedule (`[slots]`, crate::slot): determinism, the distributions it draws
//! from, where boundaries fall, what a boundary may bring and only there, and that the
//! getters analyses use (`Path::base_rtt_at`, `Direction::capacity_bps_at`,
//! `Direction::capacity_bytes_between`) say what packets experience.

use proptest::prelude::*;
use satquic_link::{
    DelaySpec, DirectionSpec, DropReason, HandoverEvent, HandoverSpec, LinkSpec, LossBurstSpec,
    LossSpec, Path, QueueLimit, QueueSpec, RateQuantile, RateSpec, RttQuantile, STARLINK_SLOT,
    SlotPhase, SlotRecord, SlotSpec, presets,
};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Down: 10-100 Mbit/s per slot (median 40); up 2 Mbit/s; 5 ms each way plus a slot RTT
/// of 20-60 ms (median 30); every handover part at a chance below 1.
fn slotted(phase: SlotPhase, handover: HandoverSpec) -> LinkSpec {
    let direction = |rate| DirectionSpec {
        rate,
        delay: DelaySpec::fixed(ms(5)),
        queue: QueueSpec::drop_tail(QueueLimit::Bytes(100_000_000)),
        loss: LossSpec::None,
        bod: None,
        cross_traffic: None,
    };
    LinkSpec {
        name: "slotted".into(),
        description: String::new(),
        source: String::new(),
        down: direction(RateSpec::Slotted {
            quantiles: vec![
                RateQuantile {
                    p: 0.0,
                    rate_bps: 10_000_000,
                },
                RateQuantile {
                    p: 0.5,
                    rate_bps: 40_000_000,
                },
                RateQuantile {
                    p: 1.0,
                    rate_bps: 100_000_000,
                },
            ],
        }),
        up: direction(RateSpec::constant(2_000_000)),
        slots: Some(SlotSpec {
            interval: STARLINK_SLOT,
            phase,
            seed: None,
            rtt: vec![
                RttQuantile {
                    p: 0.0,
                    rtt: ms(20),
                },
                RttQuantile {
                    p: 0.5,
                    rtt: ms(30),
                },
                RttQuantile {
                    p: 1.0,
                    rtt: ms(60),
                },
            ],
            handover,
        }),
    }
}

fn every_part() -> HandoverSpec {
    let event = |probability, min, max| HandoverEvent {
        probability,
        min: ms(min),
        max: ms(max),
    };
    HandoverSpec {
        spike: Some(event(0.5, 30, 50)),
        outage: Some(event(0.3, 100, 200)),
        loss: Some(LossBurstSpec {
            probability: 0.4,
            min: ms(20),
            max: ms(60),
            plr: 1.0,
        }),
    }
}

fn schedule(spec: &LinkSpec, seed: u64, until: Duration) -> Vec<SlotRecord> {
    Path::<()>::new(spec, seed).unwrap().slots(until).collect()
}

/// Fraction of `xs` at most `x`.
fn cdf(xs: &[f64], x: f64) -> f64 {
    xs.iter().filter(|&&v| v <= x).count() as f64 / xs.len() as f64
}

#[test]
fn the_same_seed_gives_the_same_packets_and_another_seed_other_slots() {
    let spec = presets::lookup("starlink-moving").unwrap();
    let run = |seed| {
        let mut path: Path<u64> = Path::new(&spec, seed).unwrap();
        let mut out = Vec::new();
        for i in 0..200_000u64 {
            let t = Duration::from_micros(300 * i);
            let a = path.down.enqueue(t, 1400, i);
            out.push((a.id(), a.drop_reason().map(DropReason::as_str), 0, 0));
            while let Some(d) = path.down.poll_deliver(t) {
                out.push((d.id, None, d.departed.as_nanos(), d.arrival.as_nanos()));
            }
        }
        (out, path.slots(ms(60_000)).collect::<Vec<_>>())
    };
    let (a, slots_a) = run(7);
    let (b, slots_b) = run(7);
    assert_eq!(a, b, "same seed, same packets");
    assert_eq!(slots_a, slots_b);
    let (c, slots_c) = run(8);
    assert_ne!(a, c);
    assert_ne!(slots_a, slots_c, "another seed draws another sky");
    // A schedule with its own seed is the same whatever the model's seed.
    let fixed = presets::lookup("starlink-moving:slot-seed=5").unwrap();
    assert_eq!(
        schedule(&fixed, 1, ms(120_000)),
        schedule(&fixed, 99, ms(120_000))
    );
}

#[test]
fn slots_do_not_depend_on_how_often_the_link_is_asked() {
    let spec = slotted(SlotPhase::At(ms(4_000)), every_part());
    // A packet every millisecond; the link asked every `step_us`.
    let run = |step_us: u64| {
        let mut path: Path<Duration> = Path::new(&spec, 3).unwrap();
        let mut got = Vec::new();
        let mut t = Duration::ZERO;
        while t < ms(40_000) {
            if t.as_micros() % 1000 == 0 {
                path.down.enqueue(t, 1200, t);
            }
            while let Some(d) = path.down.poll_deliver(t) {
                got.push((d.payload, d.arrival));
            }
            t += Duration::from_micros(step_us);
        }
        got.retain(|&(_, a)| a < ms(39_000));
        got
    };
    let (coarse, fine) = (run(1000), run(100));
    assert_eq!(coarse.len(), fine.len());
    assert!(coarse == fine, "polled ten times as often, other arrivals");
}

#[test]
fn boundaries_fall_every_interval_from_the_phase() {
    let fixed = schedule(
        &slotted(SlotPhase::At(ms(4_000)), HandoverSpec::default()),
        1,
        ms(100_000),
    );
    assert_eq!((fixed[0].start, fixed[0].end), (Duration::ZERO, ms(4_000)));
    for (k, s) in fixed.iter().enumerate().skip(1) {
        assert_eq!(s.start, ms(4_000) + STARLINK_SLOT * (k as u32 - 1));
        assert_eq!(s.end - s.start, STARLINK_SLOT);
    }
    // A phase of 0 puts a boundary at the epoch: the first slot starts there.
    let at_epoch = schedule(
        &slotted(SlotPhase::At(Duration::ZERO), HandoverSpec::default()),
        1,
        ms(30_000),
    );
    assert_eq!(at_epoch[0].start, Duration::ZERO);
    assert_eq!(at_epoch[0].end, STARLINK_SLOT);
    // A random phase is in [0, interval), differs by seed and keeps the interval.
    let random = slotted(SlotPhase::Random, HandoverSpec::default());
    let phases: Vec<Duration> = (0..50)
        .map(|s| schedule(&random, s, ms(1))[0].end)
        .collect();
    assert!(phases.iter().all(|&p| p < STARLINK_SLOT), "{phases:?}");
    let distinct: std::collections::BTreeSet<_> = phases.iter().collect();
    assert!(distinct.len() > 40, "{distinct:?}");
    let one = schedule(&random, 3, ms(100_000));
    assert!(
        one.windows(2)
            .skip(1)
            .all(|w| w[1].start - w[0].start == STARLINK_SLOT)
    );
}

#[test]
fn draws_follow_their_distributions() {
    let spec = slotted(SlotPhase::At(Duration::ZERO), every_part());
    let slots = schedule(&spec, 11, STARLINK_SLOT * 20_000);
    let n = slots.len() as f64;
    let rtt: Vec<f64> = slots
        .iter()
        .map(|s| s.base_rtt.as_secs_f64() * 1e3)
        .collect();
    let down: Vec<f64> = slots
        .iter()
        .map(|s| s.down_rate_bps.unwrap() as f64 / 1e6)
        .collect();
    // The quantile points, within 0.015 of their p; linear in between.
    for (xs, points) in [
        (
            &rtt,
            [
                (20.0, 0.0),
                (25.0, 0.25),
                (30.0, 0.5),
                (45.0, 0.75),
                (60.0, 1.0),
            ],
        ),
        (
            &down,
            [
                (10.0, 0.0),
                (25.0, 0.25),
                (40.0, 0.5),
                (70.0, 0.75),
                (100.0, 1.0),
            ],
        ),
    ] {
        for (x, p) in points {
            assert!(
                (cdf(xs, x) - p).abs() < 0.015,
                "P(<= {x}) = {} not {p}",
                cdf(xs, x)
            );
        }
    }
    assert!(
        slots.iter().all(|s| s.up_rate_bps.is_none()),
        "up is not slotted"
    );
    // With a phase of 0 the first slot starts at a boundary (at the epoch): every record
    // is a boundary's. Each handover part at its chance, its length within its range,
    // and a mean length near the middle of it.
    assert_eq!(slots[0].index, 1);
    for (name, lengths, p, (lo, hi)) in [
        (
            "spike",
            slots.iter().filter_map(|s| s.spike).collect::<Vec<_>>(),
            0.5,
            (30, 50),
        ),
        (
            "outage",
            slots.iter().filter_map(|s| s.outage).collect(),
            0.3,
            (100, 200),
        ),
        (
            "loss",
            slots.iter().filter_map(|s| s.loss).collect(),
            0.4,
            (20, 60),
        ),
    ] {
        let share = lengths.len() as f64 / n;
        assert!((share - p).abs() < 0.015, "{name}: {share} not {p}");
        assert!(
            lengths.iter().all(|&d| d >= ms(lo) && d <= ms(hi)),
            "{name}"
        );
        let mean =
            lengths.iter().map(|d| d.as_secs_f64() * 1e3).sum::<f64>() / lengths.len() as f64;
        assert!(
            (mean - (lo + hi) as f64 / 2.0).abs() < 1.0,
            "{name}: mean {mean}"
        );
    }
    // Slot 0, before the first boundary, brings nothing.
    let later = schedule(
        &slotted(SlotPhase::At(ms(9_000)), every_part()),
        11,
        ms(200_000),
    );
    assert_eq!(later[0].index, 0);
    assert!(later[0].spike.is_none() && later[0].outage.is_none() && later[0].loss.is_none());
}

/// Drives `spec` with a packet every `step` each way for `span`: (offer time, reason) of
/// every drop and (departure, arrival) of every delivery, down direction.
type Drops = Vec<(Duration, DropReason)>;
type Trips = Vec<(Duration, Duration, Duration)>;
fn drive(spec: &LinkSpec, seed: u64, step: Duration, span: Duration) -> (Drops, Trips) {
    let mut path: Path<Duration> = Path::new(spec, seed).unwrap();
    let (mut drops, mut trips) = (Vec::new(), Vec::new());
    let mut t = Duration::ZERO;
    while t < span {
        if let Some(reason) = path.down.enqueue(t, 200, t).drop_reason() {
            drops.push((t, reason));
        }
        while let Some(d) = path.down.poll_deliver(t) {
            trips.push((d.payload, d.departed, d.arrival));
        }
        t += step;
    }
    (drops, trips)
}

#[test]
fn handovers_happen_only_at_boundaries() {
    let spec = slotted(SlotPhase::At(ms(2_500)), every_part());
    let seed = 5;
    let slots = schedule(&spec, seed, ms(200_000));
    let path: Path<()> = Path::new(&spec, seed).unwrap();
    let slot_of = |t: Duration| slots.iter().find(|s| s.start <= t && t < s.end).unwrap();
    let (drops, trips) = drive(&spec, seed, ms(1), ms(200_000));
    // Every loss is a burst loss inside its slot's burst, at its start.
    assert!(!drops.is_empty());
    for &(t, reason) in &drops {
        assert_eq!(reason, DropReason::BurstLoss, "at {t:?}");
        let s = slot_of(t);
        assert!(
            t < s.start + s.loss.expect("a slot with a burst"),
            "at {t:?}"
        );
    }
    // And every burst drops what it covers.
    for s in slots.iter().filter(|s| s.loss.is_some()) {
        let covered = drops
            .iter()
            .filter(|&&(t, _)| t >= s.start && t < s.start + s.loss.unwrap())
            .count();
        assert!(
            covered as f64 >= s.loss.unwrap().as_secs_f64() * 1e3 - 1.0,
            "{s:?}"
        );
    }
    // The capacity is 0 only in outages, at the start of their slots.
    for s in &slots {
        let outage = s.outage.unwrap_or_default();
        let mid = s.start + (s.end - s.start) / 2;
        assert!(path.down.capacity_bps_at(mid).unwrap() > 0);
        if !outage.is_zero() {
            assert_eq!(path.down.capacity_bps_at(s.start + outage / 2), Some(0));
            assert_eq!(
                path.up.capacity_bps_at(s.start + outage / 2),
                Some(0),
                "both ways"
            );
            assert!(path.down.capacity_bps_at(s.start + outage).unwrap() > 0);
        }
    }
    // A packet's delay exceeds its base delay only where a spike holds it, or just after
    // a boundary to a shorter path (the wire is FIFO: it cannot overtake the packets still
    // on the longer one); it waits in the queue only in an outage.
    for &(offered, departed, arrival) in &trips {
        let s = slot_of(departed);
        let held = s.spike.is_some_and(|d| departed < s.start + d);
        let waited = departed - offered > 2 * MS;
        let base = path.down.base_delay_at(departed);
        let extra = arrival - departed - base;
        let behind_longer_path = s.start.checked_sub(MS).map_or(Duration::ZERO, |before| {
            path.down.base_delay_at(before).saturating_sub(base)
        });
        if !held && departed >= s.start + behind_longer_path {
            assert!(
                extra < MS,
                "extra {extra:?} outside a spike at {departed:?}"
            );
        }
        // (or while the backlog of one drains: at most a packet a millisecond piled up).
        if waited {
            let o = slot_of(offered);
            let drain = o.outage.unwrap_or_default();
            assert!(
                o.outage.is_some_and(|d| offered < o.start + d + drain) || held,
                "{offered:?} waited outside an outage"
            );
        }
    }
}

#[test]
fn the_getters_say_what_packets_experience() {
    // Without handovers and jitter, a lone small packet arrives after its serialisation
    // and the base delay at its departure, and a ping's RTT is base_rtt_at.
    let spec = slotted(SlotPhase::At(ms(7_000)), HandoverSpec::default());
    let mut path: Path<()> = Path::new(&spec, 9).unwrap();
    let probe = Path::<()>::new(&spec, 9).unwrap();
    // The next packet a direction delivers (poll_timeout is a lower bound: ask again).
    fn next(d: &mut satquic_link::Direction<()>) -> satquic_link::Delivered<()> {
        loop {
            let t = d.poll_timeout().expect("a packet in flight");
            if let Some(p) = d.poll_deliver(t) {
                return p;
            }
        }
    }
    for k in 0..40u64 {
        let t = ms(k * 3_700 + 11);
        let size = 100u32;
        path.up.enqueue(t, size, ());
        let req = next(&mut path.up);
        let serial_up = Duration::from_nanos((size as u64 * 8 * 1_000_000_000).div_ceil(2_000_000));
        assert_eq!(req.departed, t + serial_up);
        assert_eq!(
            req.arrival - req.departed,
            probe.up.base_delay_at(req.departed)
        );
        path.down.enqueue(req.arrival, size, ());
        let reply = next(&mut path.down);
        assert_eq!(
            reply.arrival - reply.departed,
            probe.down.base_delay_at(reply.departed)
        );
        let serial_down = reply.departed - req.arrival;
        let rtt = reply.arrival - t - serial_up - serial_down;
        // The two legs fall in the same slot unless a boundary lies between them.
        if probe
            .slots(ms(200_000))
            .all(|s| s.start <= t || s.start > reply.departed)
        {
            assert_eq!(rtt, probe.base_rtt_at(t), "at {t:?}");
        }
    }
    // Back-to-back packets leave at the slot's capacity, whatever it is.
    let mut busy: Path<()> = Path::new(&spec, 9).unwrap();
    let slot = &probe.slots(ms(40_000)).collect::<Vec<_>>()[2];
    let rate = probe.down.capacity_bps_at(slot.start).unwrap();
    assert_eq!(Some(rate), slot.down_rate_bps);
    for _ in 0..2000 {
        busy.down.enqueue(slot.start, 1500, ());
    }
    let departures: Vec<Duration> = (0..2000).map(|_| next(&mut busy.down).departed).collect();
    let span = (departures[1999] - departures[0]).as_secs_f64();
    let measured = 1999.0 * 1500.0 * 8.0 / span;
    assert!(
        (measured / rate as f64 - 1.0).abs() < 1e-6,
        "{measured} vs {rate}"
    );
    // The bytes a busy link carries between two times are the integral of its capacity.
    let slots: Vec<SlotRecord> = probe.slots(ms(100_000)).collect();
    let (from, to) = (ms(1_234), ms(98_765));
    let integral: f64 = slots
        .iter()
        .map(|s| {
            let overlap = (s.end.min(to).saturating_sub(s.start.max(from))).as_secs_f64();
            overlap * s.down_rate_bps.unwrap() as f64 / 8.0
        })
        .sum();
    let bytes = probe.down.capacity_bytes_between(from, to).unwrap() as f64;
    assert!(
        (bytes / integral - 1.0).abs() < 1e-6,
        "{bytes} vs {integral}"
    );
}

#[test]
fn outages_take_capacity_and_spikes_do_not() {
    let spec = slotted(SlotPhase::At(Duration::ZERO), every_part());
    let path: Path<()> = Path::new(&spec, 2).unwrap();
    for s in path.slots(ms(300_000)) {
        let whole = path.down.capacity_bytes_between(s.start, s.end).unwrap() as f64;
        let expected = (s.end - s.start - s.outage.unwrap_or_default()).as_secs_f64()
            * s.down_rate_bps.unwrap() as f64
            / 8.0;
        assert!(
            (whole - expected).abs() <= 1.0,
            "{s:?}: {whole} vs {expected}"
        );
    }
}

#[test]
fn a_partial_burst_loses_its_share() {
    let mut spec = slotted(SlotPhase::At(Duration::ZERO), HandoverSpec::default());
    let slots = spec.slots.as_mut().unwrap();
    slots.handover.loss = Some(LossBurstSpec {
        probability: 1.0,
        min: ms(1000),
        max: ms(1000),
        plr: 0.25,
    });
    let (drops, _) = drive(&spec, 4, Duration::from_micros(100), ms(60_000));
    // 4 boundaries x 1 s x 10 packets/ms x 0.25.
    let expected = 4.0 * 10_000.0 * 0.25;
    assert!(
        (drops.len() as f64 / expected - 1.0).abs() < 0.05,
        "{}",
        drops.len()
    );
}

#[test]
fn the_starlink_presets_build_probe_and_take_their_parameters() {
    for case in presets::STARLINK_CASES {
        let spec = presets::lookup(case.name).unwrap();
        assert_eq!(spec.slots.as_ref().unwrap().interval, STARLINK_SLOT);
        assert_eq!(spec.slots.as_ref().unwrap().phase, SlotPhase::Random);
        let report = satquic_link::probe::probe(
            &spec,
            &satquic_link::probe::ProbeConfig {
                duration: ms(60_000),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(report.down_bps.len(), 60);
        assert!(report.pings.iter().filter(|p| p.rtt.is_some()).count() > 4000);
        let path = satquic_link::Path::<()>::new(&spec, 1).unwrap();
        assert!(path.slots(ms(60_000)).count() >= 4);
        assert!(spec.base_rtt() >= 2 * presets::STARLINK_FLOOR_ONE_WAY);
    }
    let p =
        presets::lookup("starlink-quiet:phase=4s,slot-seed=7,queue=3MB,up-queue=200kB").unwrap();
    let slots = p.slots.as_ref().unwrap();
    assert_eq!(
        (slots.phase, slots.seed),
        (SlotPhase::At(ms(4000)), Some(7))
    );
    assert_eq!(p.down.queue.limit, QueueLimit::Bytes(3_000_000));
    assert_eq!(p.up.queue.limit, QueueLimit::Bytes(200_000));
    assert_eq!(
        p.name,
        "starlink-quiet:phase=4s,slot-seed=7,queue=3MB,up-queue=200kB"
    );
    let calm = presets::lookup("starlink-moving:handover=none").unwrap();
    assert!(calm.slots.unwrap().handover.is_none());
    // A busier cell and a server 20 ms beyond the PoP: every rate and RTT moves, the
    // floor included, and the slots drawn keep their order.
    let plain = presets::lookup("starlink-busy:slot-seed=4").unwrap();
    let moved = presets::lookup("starlink-busy:slot-seed=4,rate-scale=0.5,rtt-add=20ms").unwrap();
    assert_eq!(moved.base_rtt(), plain.base_rtt() + ms(20));
    assert_eq!(
        moved.down.rate.nominal_rate_bps(),
        plain.down.rate.nominal_rate_bps() / 2
    );
    let (a, b) = (
        schedule(&plain, 1, ms(60_000)),
        schedule(&moved, 1, ms(60_000)),
    );
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(b.base_rtt, a.base_rtt + ms(20));
        let half = a.down_rate_bps.unwrap() as f64 / 2.0;
        assert!((b.down_rate_bps.unwrap() as f64 - half).abs() <= 1.0);
    }
    for (bad, says) in [
        ("starlink-quiet:phase=15s", "below the interval"),
        ("starlink-quiet:phase=soon", "phase"),
        ("starlink-busy:slot-seed=-1", "slot-seed"),
        ("starlink-busy:handover=maybe", "none or on"),
        ("starlink-moving:queue=big", "queue"),
        ("starlink-moving:rate=10M", "unknown parameter"),
        ("starlink-moving:rate-scale=0", "rate-scale"),
        ("starlink-moving:rate-scale=many", "rate-scale"),
        ("starlink-moving:rtt-add=2s", "at most 500ms"),
    ] {
        let e = presets::lookup(bad).unwrap_err().to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
    }
}

#[test]
fn a_mirror_is_an_involution_and_files_round_trip() {
    for case in presets::STARLINK_CASES {
        let spec = presets::lookup(&format!("{}:slot-seed=3,phase=1.5s", case.name)).unwrap();
        assert_eq!(spec.mirrored().mirrored(), spec.resolved(), "{}", case.name);
        let text = spec.to_toml_string().unwrap();
        assert_eq!(LinkSpec::from_toml_str(&text).unwrap(), spec, "{text}");
        // The mirror crosses the same schedule the other way: the same slots, each
        // physical direction with the same rates and delays (whatever the model's seed).
        let a = Path::<()>::new(&spec, 1).unwrap();
        let b = Path::<()>::new(&spec.mirrored(), 1).unwrap();
        let (sa, sb): (Vec<_>, Vec<_>) =
            (a.slots(ms(60_000)).collect(), b.slots(ms(60_000)).collect());
        assert_eq!(
            sa.iter()
                .map(|s| (
                    s.start,
                    s.base_rtt,
                    s.outage,
                    s.down_rate_bps,
                    s.up_rate_bps
                ))
                .collect::<Vec<_>>(),
            sb.iter()
                .map(|s| (
                    s.start,
                    s.base_rtt,
                    s.outage,
                    s.up_rate_bps,
                    s.down_rate_bps
                ))
                .collect::<Vec<_>>()
        );
        for t in (0..60).map(|s| ms(s * 1000 + 7)) {
            assert_eq!(a.down.base_delay_at(t), b.up.base_delay_at(t));
            assert_eq!(a.down.capacity_bps_at(t), b.up.capacity_bps_at(t));
        }
    }
}

#[test]
fn slot_errors_are_one_clear_line() {
    let base = slotted(SlotPhase::At(ms(1000)), every_part());
    let text = base.to_toml_string().unwrap();
    LinkSpec::from_toml_str(&text).unwrap();
    let error = |edit: &dyn Fn(&mut LinkSpec)| {
        let mut spec = base.clone();
        edit(&mut spec);
        let e = spec.validate().unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        e
    };
    type Edit = Box<dyn Fn(&mut LinkSpec)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|s| s.slots = None),
            "down.rate has kind \"slotted\", which needs the link's [slots]",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().phase = SlotPhase::At(ms(15_000))),
            "slots.phase",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().interval = Duration::ZERO),
            "slots.interval",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().interval = ms(7_200_000)),
            "slots.interval",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().rtt[0].p = 0.1),
            "p = 0 to p = 1",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().rtt[1].p = 1.0),
            "slots.rtt[2].p must be above",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().rtt[1].rtt = ms(10)),
            "slots.rtt[1].rtt must not be below",
        ),
        (
            Box::new(|s| s.slots.as_mut().unwrap().rtt[0].rtt = ms(9)),
            "below the directions' base delays",
        ),
        (
            Box::new(|s| {
                s.slots
                    .as_mut()
                    .unwrap()
                    .handover
                    .outage
                    .as_mut()
                    .unwrap()
                    .max = ms(15_000)
            }),
            "slots.handover.outage.max",
        ),
        (
            Box::new(|s| {
                s.slots
                    .as_mut()
                    .unwrap()
                    .handover
                    .spike
                    .as_mut()
                    .unwrap()
                    .min = ms(60)
            }),
            "slots.handover.spike.min",
        ),
        (
            Box::new(|s| {
                s.slots
                    .as_mut()
                    .unwrap()
                    .handover
                    .loss
                    .as_mut()
                    .unwrap()
                    .plr = 2.0
            }),
            "slots.handover.loss.plr",
        ),
        (
            Box::new(|s| {
                s.slots
                    .as_mut()
                    .unwrap()
                    .handover
                    .loss
                    .as_mut()
                    .unwrap()
                    .probability = -1.0
            }),
            "slots.handover.loss.probability",
        ),
        (
            Box::new(|s| {
                if let RateSpec::Slotted { quantiles } = &mut s.down.rate {
                    quantiles[2].rate_bps = 1;
                }
            }),
            "down.rate.quantiles[2].rate_bps",
        ),
        (
            Box::new(|s| s.down.rate = RateSpec::Slotted { quantiles: vec![] }),
            "down.rate.quantiles must have",
        ),
        (
            Box::new(|s| {
                s.up.rate = RateSpec::MahimahiTrace {
                    file: None,
                    timestamps_ms: vec![1, 2],
                    opportunity_bytes: 1500,
                }
            }),
            "slots.handover.outage stops a rate; up.rate is a mahimahi trace",
        ),
    ];
    for (edit, says) in cases {
        let e = error(&*edit);
        assert!(e.contains(says), "{e} (wanted {says:?})");
    }
    // TOML mistakes are one line too.
    for (from, to, says) in [
        ("phase = \"1s\"", "phase = \"later\"", "random"),
        ("phase = \"1s\"", "phase = 3", "invalid type"),
        (
            "interval = \"15s\"",
            "interval = \"15s\"\nwhen = 1",
            "unknown field",
        ),
    ] {
        let bad = text.replacen(from, to, 1);
        assert_ne!(bad, text, "{from}");
        let e = LinkSpec::from_toml_str(&bad).unwrap_err().to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{e}");
    }
    // A direction alone cannot hold a slotted rate: it needs the link's schedule.
    let e = satquic_link::Direction::<()>::new(&base.resolved().down, 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("[slots]"), "{e}");
}

#[test]
fn a_handwritten_slot_file_reads_as_documented() {
    let text = r#"
name = "starlink-like"

[down]
rate = { kind = "slotted", quantiles = [{ p = 0.0, rate_bps = 40000000 }, { p = 0.5, rate_bps = 290000000 }, { p = 1.0, rate_bps = 500000000 }] }
delay = { base = "5ms", jitter = { max = "3ms" } }
queue = { limit = { bytes = 1500000 } }

[up]
rate = { kind = "constant", rate_bps = 20000000 }
delay = { base = "5ms" }
queue = { limit = { bytes = 100000 } }

[slots]
phase = "random"
rtt = [{ p = 0.0, rtt = "11ms" }, { p = 0.5, rtt = "19ms" }, { p = 1.0, rtt = "30ms" }]
handover = { spike = { min = "30ms", max = "50ms" }, loss = { probability = 0.16, min = "10ms", max = "60ms" } }
"#;
    let spec = LinkSpec::from_toml_str(text).unwrap();
    let slots = spec.slots.as_ref().unwrap();
    assert_eq!(slots.interval, STARLINK_SLOT, "15 s unless said");
    assert_eq!(slots.handover.spike.unwrap().probability, 1.0);
    assert_eq!(slots.handover.loss.unwrap().plr, 1.0);
    assert_eq!(spec.down.rate.nominal_rate_bps(), 500_000_000);
    assert_eq!(spec.base_rtt(), ms(11));
    assert_eq!(
        LinkSpec::from_toml_str(&spec.to_toml_string().unwrap()).unwrap(),
        spec
    );
}

fn event() -> impl Strategy<Value = Option<HandoverEvent>> {
    prop::option::of(
        (0.0f64..=1.0, 0u64..5_000, 0u64..5_000).prop_map(|(p, a, b)| HandoverEvent {
            probability: p,
            min: ms(a.min(b)),
            max: ms(a.max(b)),
        }),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_slot_specs_round_trip_and_stay_in_their_ranges(
        interval_ms in 1_000u64..60_000,
        phase_ms in 0u64..60_000,
        random_phase in any::<bool>(),
        seed in prop::option::of(any::<u64>()),
        mut rtts in prop::collection::vec(8u64..500, 2..6),
        mut rates in prop::collection::vec(1u64..1_000_000_000, 2..6),
        spike in event(),
        outage in event(),
        loss in event(),
        model_seed in any::<u64>(),
    ) {
        rtts.sort_unstable();
        rates.sort_unstable();
        let ps = |n: usize| (0..n).map(move |i| i as f64 / (n - 1) as f64);
        let mut spec = slotted(SlotPhase::Random, HandoverSpec::default());
        spec.down.rate = RateSpec::Slotted {
            quantiles: ps(rates.len()).zip(&rates).map(|(p, &r)| RateQuantile { p, rate_bps: r }).collect(),
        };
        let interval = ms(interval_ms);
        let short = |e: Option<HandoverEvent>| e.filter(|e| e.max < interval);
        spec.slots = Some(SlotSpec {
            interval,
            phase: if random_phase { SlotPhase::Random } else { SlotPhase::At(ms(phase_ms % interval_ms)) },
            seed,
            rtt: ps(rtts.len()).zip(&rtts).map(|(p, &r)| RttQuantile { p, rtt: ms(r.max(10)) }).collect(),
            handover: HandoverSpec {
                spike: short(spike),
                outage: short(outage),
                loss: short(loss).map(|e| LossBurstSpec { probability: e.probability, min: e.min, max: e.max, plr: 0.5 }),
            },
        });
        spec.validate().unwrap();
        let back = LinkSpec::from_toml_str(&spec.to_toml_string().unwrap()).unwrap();
        prop_assert_eq!(&back, &spec);
        let path: Path<()> = Path::new(&spec, model_seed).unwrap();
        for s in path.slots(interval * 20) {
            prop_assert!(s.base_rtt >= ms(rtts[0].max(10)) && s.base_rtt <= ms(*rtts.last().unwrap()));
            let r = s.down_rate_bps.unwrap();
            prop_assert!(r >= rates[0] && r <= *rates.last().unwrap());
            prop_assert!(s.outage.is_none_or(|d| d < interval));
            let mid = s.start + (s.end - s.start) / 2;
            prop_assert_eq!(path.base_rtt_at(mid), s.base_rtt);
        }
    }
}
