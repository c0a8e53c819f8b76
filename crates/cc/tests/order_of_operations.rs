//! The interactions the controller's order of operations decides (the table in
//! crates/cc/src/controller/mod.rs): each test pins one, as the controller behaves today.

use std::sync::Arc;
use std::time::Duration;

use satquic_cc::loss_filter::{LossContext, LossFilter};
use satquic_cc::{
    CcEvent, CongestionConfig, Controller, EventLog, EventSink, ExitReason, LossFilterConfig,
    RttInfo,
};

const MSS: u64 = 1200;
/// A GEO round trip.
const SAT_RTT: Duration = Duration::from_millis(600);

fn build(spec: &str, log: &Arc<EventLog>) -> Controller {
    spec.parse::<CongestionConfig>()
        .unwrap()
        .event_sink(log.clone() as Arc<dyn EventSink>)
        .build_controller(MSS)
        .unwrap()
}

fn slow_start_exits(log: &EventLog) -> Vec<ExitReason> {
    log.events()
        .into_iter()
        .filter_map(|e| match e {
            CcEvent::SlowStartExit { reason, .. } => Some(reason),
            _ => None,
        })
        .collect()
}

/// `packets` packets sent at `now`, each acknowledged one RTT later, in one batch.
fn deliver(ctl: &mut Controller, now: Duration, pn: &mut u64, packets: u64) {
    let rtt = RttInfo::fixed(SAT_RTT);
    for _ in 0..packets {
        ctl.on_sent(now, MSS, *pn);
        ctl.on_ack(now + SAT_RTT, now, MSS, false, rtt);
        *pn += 1;
    }
    ctl.on_end_acks(now + SAT_RTT, 0, Some(*pn - 1));
}

/// C6 before C8: a loss the filter lets pass reduces nothing and starts no recovery
/// period, so it cannot end the initial slow start either; the slow start goes on growing
/// the window by the bytes acknowledged, and only a loss the filter answers ends it.
#[test]
fn a_tolerated_loss_never_ends_the_initial_slow_start() {
    let log = EventLog::new();
    let mut ctl = build("cubic+loss-filter", &log);
    let (mut now, mut pn) = (Duration::from_secs(1), 0);
    deliver(&mut ctl, now, &mut pn, 63);
    let before = ctl.window();
    ctl.on_congestion_event(now + SAT_RTT, now, false, MSS);
    assert_eq!(ctl.window(), before);
    assert!(!ctl.initial_slow_start_done());
    assert_eq!(ctl.ssthresh(), u64::MAX);
    assert!(slow_start_exits(&log).is_empty());

    now += SAT_RTT;
    deliver(&mut ctl, now, &mut pn, 63);
    assert_eq!(ctl.window(), before + 63 * MSS, "slow start goes on");

    // Three packets lost together: the filter answers, and the initial slow start ends.
    let before = ctl.window();
    ctl.on_congestion_event(now + SAT_RTT, now, false, 3 * MSS);
    assert!(ctl.initial_slow_start_done());
    assert_eq!(slow_start_exits(&log), vec![ExitReason::Loss]);
    assert_eq!(ctl.window(), before * 7 / 10);
}

/// C1 before C2: the rollback counts every lost packet of a recovery period, those the
/// loss filter lets pass included. A reduction for three packets lost together is undone
/// when its period ends (3 < 20 % of a window of ~69 packets); with twelve isolated losses
/// in the same period, each one tolerated by the filter, the period lost 15 packets and
/// the reduction stands.
#[test]
fn tolerated_losses_count_against_the_undo() {
    let run = |isolated_losses: u32| {
        let log = EventLog::new();
        let mut ctl = "cubic+loss-filter+rollback"
            .parse::<CongestionConfig>()
            .unwrap()
            .event_sink(log.clone() as Arc<dyn EventSink>)
            .initial_window(140 * MSS)
            .build_controller(MSS)
            .unwrap();
        // The filter as the controller runs it, to check which losses it lets pass.
        let mut filter = LossFilter::new(LossFilterConfig::default());
        let rtt = RttInfo::fixed(SAT_RTT);
        let ack = |ctl: &mut Controller, filter: &mut LossFilter, now: Duration| {
            ctl.on_ack(now, now - SAT_RTT, MSS, false, rtt);
            filter.on_acked();
        };
        // Three packets lost together end slow start (a reduction never undone).
        let slow_start_loss = Duration::from_secs(3);
        ctl.on_congestion_event(slow_start_loss, slow_start_loss - SAT_RTT, false, 3 * MSS);
        assert!(filter.on_lost(3, LossContext::new(0, false)));
        // Two round trips of congestion avoidance.
        let mut now = slow_start_loss;
        for pn in 0..200 {
            now += SAT_RTT / 100;
            ack(&mut ctl, &mut filter, now);
            ctl.on_end_acks(now, ctl.window(), Some(pn));
        }
        assert!(!ctl.in_slow_start());
        // A recovery period: three packets lost together, congestion to the filter.
        let before = ctl.congestion_window();
        ctl.on_congestion_event(now, now - SAT_RTT / 2, false, 3 * MSS);
        assert!(filter.on_lost(3, LossContext::new(0, false)));
        let reduced = ctl.congestion_window();
        assert!(reduced < before);
        // Isolated losses within the period, each after 32 acknowledgements of packets
        // sent before it began: the filter lets each pass.
        let mut at = now;
        for _ in 0..isolated_losses {
            for _ in 0..32 {
                at += Duration::from_micros(100);
                ack(&mut ctl, &mut filter, at);
            }
            ctl.on_congestion_event(at, now - SAT_RTT / 3, false, MSS);
            assert!(
                !filter.on_lost(1, LossContext::new(0, false)),
                "the filter lets an isolated loss pass"
            );
            assert_eq!(ctl.congestion_window(), reduced);
        }
        // The first packet sent after the period began is acknowledged: the period ends.
        let end = now + SAT_RTT + Duration::from_millis(10);
        ctl.on_ack(end, now + Duration::from_millis(10), MSS, false, rtt);
        let undone = log
            .events()
            .iter()
            .any(|e| matches!(e, CcEvent::CongestionUndone { .. }));
        (before, reduced, ctl.congestion_window(), undone)
    };
    let (before, _, after, undone) = run(0);
    assert!(undone);
    assert!(after >= before - MSS, "{after} restored towards {before}");
    let (_, reduced, after, undone) = run(12);
    assert!(!undone);
    assert!(after <= reduced + MSS, "{after} stays near {reduced}");
}

/// Ten 1,250-byte packets sent at once on a 600 ms path, their acknowledgements two by two
/// every 100 ms: a delivery rate of 25,000 B/s, so `+jump:cap` puts the ceiling at twice
/// rate x minimum RTT, 30,000 bytes. Returns the window after the acknowledgements.
fn window_on_a_slow_long_path(spec: &str) -> u64 {
    const PACKET: u64 = 1250;
    let mut ctl = spec
        .parse::<CongestionConfig>()
        .unwrap()
        .build_controller(PACKET)
        .unwrap();
    let t0 = SAT_RTT;
    for pn in 0..20 {
        ctl.on_sent(t0, PACKET, pn);
    }
    let rtt = RttInfo::fixed(SAT_RTT);
    for batch in 0..10u64 {
        let now = t0 + SAT_RTT + Duration::from_millis(100 * batch);
        ctl.on_ack(now, t0, PACKET, false, rtt);
        ctl.on_ack(now, t0, PACKET, false, rtt);
        ctl.on_end_acks(now, PACKET * (18 - 2 * batch), Some(2 * batch + 1));
    }
    ctl.window()
}

/// A7 is bounded by neither the jump's ceiling nor `ssthresh`; E2 (the jump) by both. With
/// `+floor` the first acknowledgement raises the window to six initial windows (12,500 x
/// 600 ms / 100 ms = 75,000 bytes), before any rate is measured; once the ceiling is known
/// (30,000 bytes) the window is above it, and it stays there: the slow start may not grow
/// it past the ceiling, and nothing brings it down. Without the floor the window grows to
/// the ceiling and holds.
#[test]
fn the_floor_can_exceed_the_jump_ceiling() {
    assert_eq!(window_on_a_slow_long_path("cubic+jump:cap"), 30_000);
    // 75,000 from the floor and 4 x 1,250 bytes acknowledged before the ceiling was known.
    assert_eq!(window_on_a_slow_long_path("cubic+floor+jump:cap"), 80_000);
}

/// A7 asks nothing of the application, A11 does: on a 600 ms path the first
/// acknowledgement raises the window to the floor even when the sender was
/// application-limited, while the slow start's increase waits for an acknowledgement
/// that was not.
#[test]
fn the_floor_applies_to_application_limited_acknowledgements() {
    let first_ack = |spec: &str, app_limited: bool| {
        let mut ctl = spec
            .parse::<CongestionConfig>()
            .unwrap()
            .build_controller(1250)
            .unwrap();
        ctl.on_sent(Duration::ZERO, 1250, 0);
        let rtt = RttInfo::fixed(SAT_RTT);
        ctl.on_ack(SAT_RTT, Duration::ZERO, 1250, app_limited, rtt);
        ctl.window()
    };
    assert_eq!(first_ack("cubic", true), 12_500);
    assert_eq!(first_ack("cubic", false), 12_500 + 1250);
    assert_eq!(first_ack("cubic+floor", true), 75_000);
    assert_eq!(first_ack("cubic+floor", false), 75_000 + 1250);
}

/// C9, then A12: persistent congestion resets the slow start, but the initial slow start
/// is over and does not come back; the window grows classically from the minimum, by the
/// bytes acknowledged (the start-up growth of `+growth:x=4` no longer applies), to
/// `ssthresh`, and the slow start reports no second exit.
#[test]
fn after_persistent_congestion_the_window_grows_classically() {
    let log = EventLog::new();
    let mut ctl = build("cubic+search+growth:x=4", &log);
    let rtt = RttInfo::fixed(SAT_RTT);
    // In the initial slow start an acknowledgement of 1,200 bytes grows the window 3 x.
    ctl.on_sent(Duration::ZERO, MSS, 0);
    ctl.on_ack(SAT_RTT, Duration::ZERO, MSS, false, rtt);
    assert_eq!(ctl.window(), 10 * MSS + 3 * MSS);
    ctl.on_congestion_event(
        Duration::from_secs(1),
        Duration::from_millis(900),
        false,
        MSS,
    );
    ctl.on_congestion_event(Duration::from_secs(3), Duration::from_secs(2), true, MSS);
    assert!(ctl.initial_slow_start_done());
    assert_eq!(ctl.window(), 2 * MSS);
    let ssthresh = ctl.ssthresh();
    assert!(ssthresh > 4 * MSS, "{ssthresh}");
    let mut now = Duration::from_secs(4);
    ctl.on_ack(now, now - SAT_RTT, MSS, false, rtt);
    assert_eq!(
        ctl.window(),
        3 * MSS,
        "classic: one MSS per MSS acknowledged"
    );
    while ctl.window() < ssthresh {
        now += Duration::from_millis(1);
        ctl.on_ack(now, now - SAT_RTT, MSS, false, rtt);
    }
    assert_eq!(ctl.window(), ssthresh, "slow start stops at ssthresh");
    assert_eq!(slow_start_exits(&log), vec![ExitReason::Loss]);
}
