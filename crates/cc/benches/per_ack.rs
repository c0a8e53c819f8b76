//! Cost per ACK of each slow start inside a CUBIC controller (criterion).
//!
//! `cargo bench -p satquic-cc --bench per_ack`
//!
//! Each iteration is one `on_sent` + one `on_ack` + one `on_end_acks`, as quinn calls
//! them, for a 1200-byte packet on a 600 ms path with ACKs 10 us apart (~1 Gbit/s), so
//! SEARCH crosses a 210 ms bin boundary every 21,000 ACKs. Slow starts run in a mode that
//! never ends slow start (SEARCH in shadow mode evaluates and reports as usual), so the
//! measured path is the slow-start path throughout. Classic HyStart runs both detectors on
//! every ACK and never exits here: the RTT is constant, and its rounds (50,000 ACKs,
//! 500 ms) end before an ACK train reaches delay_min + 1 ms = 601 ms.
//!
//! `bbr3` is a controller of its own: each iteration sends a packet and acknowledges the
//! one sent 600 ms (60,000 iterations) earlier, so its delivery-rate samples, rounds, filters
//! and state machine run as on a 1 Gbit/s path (it reaches ProbeBW within the warm-up).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use satquic_cc::{CongestionConfig, RttInfo};

const SPECS: &[(&str, &str)] = &[
    ("classic", "cubic+classic"),
    ("hystart++", "cubic+hystart++"),
    ("hystart", "cubic+hystart"),
    ("hybla", "cubic+hybla"),
    ("search-v2", "cubic+search:v2,shadow"),
    ("search-v3", "cubic+search:v3,shadow"),
    ("search-draft", "cubic+search:draft,shadow"),
    // The satellite profile's long-RTT options on top: the jump's peak-rate estimator and
    // the loss filter run on every ACK.
    (
        "search-draft-jump-filter",
        "cubic+search:draft,shadow+growth:x=3+jump+loss-filter:cr",
    ),
    ("cubic-avoidance", "cubic"),
];

fn per_ack(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_ack");
    for (name, spec) in SPECS {
        let cc: CongestionConfig = spec.parse().unwrap();
        let mut ctl = cc.build_controller(1200).unwrap();
        if *name == "cubic-avoidance" {
            // Congestion avoidance: one loss first.
            ctl.on_congestion_event(Duration::ZERO, Duration::ZERO, false, 1200);
        }
        let rtt = RttInfo::fixed(Duration::from_millis(600));
        let mut now = Duration::from_millis(600);
        let mut pn = 0u64;
        group.bench_function(*name, |b| {
            b.iter(|| {
                now += Duration::from_micros(10);
                pn += 1;
                ctl.on_sent(now, 1200, pn);
                ctl.on_ack(now, now - rtt.latest, black_box(1200), false, rtt);
                ctl.on_end_acks(now, 1_000_000, Some(pn.saturating_sub(50_000)));
                black_box(ctl.window())
            })
        });
    }
    let mut bbr = CongestionConfig::bbr3().build_bbr3(1200).unwrap();
    let rtt = RttInfo::fixed(Duration::from_millis(600));
    let mut now = Duration::from_millis(600);
    group.bench_function("bbr3", |b| {
        b.iter(|| {
            now += Duration::from_micros(10);
            bbr.on_sent(now, 1200);
            bbr.on_ack(now, now - rtt.latest, black_box(1200), rtt);
            bbr.on_end_acks(now, bbr.in_flight(), false);
            black_box(bbr.window())
        })
    });
    group.finish();
}

criterion_group!(benches, per_ack);
criterion_main!(benches);
