//! `+rollback` (crates/cc/src/rollback.rs, quiche's rule, not RFC 9438): a reduction
//! whose recovery period lost fewer than `max(2, 20 % of the window)` packets is undone
//! when the period ends; anything else stands, and without the option every reduction
//! stands (RFC 9002 Sec. 7.3.2).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::MSS;
use satquic_cc::{CcEvent, CongestionConfig, Controller, EventLog, RttInfo};

/// Round-trip time of qir-satloss (300 ms each way).
const SAT_RTT: Duration = Duration::from_millis(600);
/// When the loss that ends slow start is detected.
const SLOW_START_LOSS: Duration = Duration::from_secs(3);

/// A controller for `spec` in congestion avoidance at about 100 packets: slow start ended
/// by a loss (never undone), then two round trips of acknowledgements, the second after
/// its recovery period. Returns the controller, its events and the time reached.
fn in_congestion_avoidance(spec: &str) -> (Controller, Arc<EventLog>, Duration) {
    let log = EventLog::new();
    let cc: CongestionConfig = spec.parse().unwrap();
    let mut ctl = cc
        .event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>)
        .initial_window(140 * MSS)
        .build_controller(MSS)
        .unwrap();
    ctl.on_congestion_event(SLOW_START_LOSS, SLOW_START_LOSS - SAT_RTT, false, MSS);
    let mut now = SLOW_START_LOSS;
    for pn in 0..200 {
        now += SAT_RTT / 100;
        ctl.on_ack(now, now - SAT_RTT, MSS, false, RttInfo::fixed(SAT_RTT));
        ctl.on_end_acks(now, ctl.window(), Some(pn));
    }
    assert!(!ctl.in_slow_start());
    (ctl, log, now)
}

/// A recovery period at `now` with `lost` packets lost, ended one round trip later by the
/// acknowledgement of a packet sent after it began. Returns the windows before the cut,
/// during the period and after it ended.
fn recovery_period(ctl: &mut Controller, now: Duration, lost: u64) -> (u64, u64, u64) {
    let before = ctl.congestion_window();
    ctl.on_congestion_event(now, now - SAT_RTT / 2, false, MSS);
    // The rest of the period's losses, reported by later ACK batches.
    for i in 1..lost {
        let at = now + Duration::from_millis(i);
        ctl.on_congestion_event(at, now - SAT_RTT / 3, false, MSS);
    }
    let rtt = RttInfo::fixed(SAT_RTT);
    // Packets sent before the period began: no growth, no decision.
    ctl.on_ack(now + SAT_RTT / 2, now - SAT_RTT / 2, MSS, false, rtt);
    let during = ctl.congestion_window();
    // The first packet sent after it began: the period ends.
    let end = now + SAT_RTT + Duration::from_millis(10);
    ctl.on_ack(end, now + Duration::from_millis(10), MSS, false, rtt);
    (before, during, ctl.congestion_window())
}

fn undone(log: &EventLog) -> Vec<u64> {
    log.events()
        .iter()
        .filter_map(|e| match e {
            CcEvent::CongestionUndone { lost_packets, .. } => Some(*lost_packets),
            _ => None,
        })
        .collect()
}

#[test]
fn a_single_lost_packet_is_undone_when_its_recovery_period_ends() {
    let (mut ctl, log, now) = in_congestion_avoidance("cubic+rollback");
    let (before, during, after) = recovery_period(&mut ctl, now + SAT_RTT, 1);
    assert_eq!(during, before * 7 / 10, "the reduction happens");
    assert!(after >= before, "undone: {before} -> {during} -> {after}");
    assert_eq!(undone(&log), vec![1]);
}

#[test]
fn without_the_option_the_reduction_stands() {
    let (mut ctl, log, now) = in_congestion_avoidance("cubic");
    let (before, during, after) = recovery_period(&mut ctl, now + SAT_RTT, 1);
    assert_eq!(during, before * 7 / 10);
    assert!(after < before, "{before} -> {during} -> {after}");
    assert!(undone(&log).is_empty());
}

/// Packets that are 20 % of the window after a cut from `cwnd` bytes.
fn a_fifth_after_the_cut(cwnd: u64) -> u64 {
    let reduced = (cwnd as f64 * 0.7) as u64 / MSS;
    (reduced as f64 * 0.2) as u64
}

#[test]
fn a_fifth_of_the_window_lost_is_congestion_and_stands() {
    let (mut ctl, log, now) = in_congestion_avoidance("cubic+rollback");
    // About 70 packets after the cut: 20 % is 13 or 14; one fewer is undone.
    let fifth = a_fifth_after_the_cut(ctl.congestion_window());
    assert!(fifth >= 10, "{fifth}");
    let (before, _, after) = recovery_period(&mut ctl, now + SAT_RTT, fifth - 1);
    assert!(after >= before, "{} lost: {before} -> {after}", fifth - 1);
    let now = now + 4 * SAT_RTT;
    let fifth = a_fifth_after_the_cut(ctl.congestion_window());
    let (before, during, after) = recovery_period(&mut ctl, now, fifth);
    assert!(
        after < before,
        "{fifth} lost: {before} -> {during} -> {after}"
    );
    assert_eq!(undone(&log).len(), 1);
}

#[test]
fn the_slow_start_exit_ecn_marks_and_persistent_congestion_stand() {
    // The loss that ends slow start.
    let log = EventLog::new();
    let cc: CongestionConfig = "cubic+rollback".parse().unwrap();
    let mut ctl = cc
        .event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>)
        .build_controller(MSS)
        .unwrap();
    let (before, _, after) = recovery_period(&mut ctl, SLOW_START_LOSS, 1);
    assert!(after < before, "slow start: {before} -> {after}");

    // An ECN-CE mark: quinn reports it with no bytes lost.
    let (mut ctl, log_ca, now) = in_congestion_avoidance("cubic+rollback");
    let now = now + SAT_RTT;
    let before = ctl.congestion_window();
    ctl.on_congestion_event(now, now - SAT_RTT / 2, false, 0);
    let rtt = RttInfo::fixed(SAT_RTT);
    ctl.on_ack(
        now + SAT_RTT,
        now + Duration::from_millis(1),
        MSS,
        false,
        rtt,
    );
    assert!(ctl.congestion_window() < before, "ECN-CE");

    // A recovery period for one lost packet that also saw a mark.
    let now = now + 3 * SAT_RTT;
    let before = ctl.congestion_window();
    ctl.on_congestion_event(now, now - SAT_RTT / 2, false, MSS);
    ctl.on_congestion_event(now + SAT_RTT / 4, now - SAT_RTT / 3, false, 0);
    ctl.on_ack(
        now + SAT_RTT,
        now + Duration::from_millis(1),
        MSS,
        false,
        rtt,
    );
    assert!(ctl.congestion_window() < before, "a loss and a mark");

    // Persistent congestion.
    let now = now + 3 * SAT_RTT;
    ctl.on_congestion_event(now, now - SAT_RTT / 2, true, 4 * MSS);
    ctl.on_ack(
        now + SAT_RTT,
        now + Duration::from_millis(1),
        MSS,
        false,
        rtt,
    );
    assert!(ctl.congestion_window() <= 3 * MSS, "persistent congestion");

    assert!(undone(&log).is_empty());
    assert!(undone(&log_ca).is_empty());
}

#[test]
fn the_spec_part_parses_and_prints_back() {
    for (spec, part) in [
        ("cubic+rollback", "+rollback"),
        (
            "cubic+search+rollback:share=0.1,min=3",
            "+rollback:share=0.1,min=3",
        ),
    ] {
        let cc: CongestionConfig = spec.parse().unwrap();
        let printed = cc.to_string();
        assert!(printed.ends_with(part), "{printed}");
        let again: CongestionConfig = printed.parse().unwrap();
        assert_eq!(again.to_string(), printed);
        assert_eq!(again.rollback_config(), cc.rollback_config());
        assert!(cc.rollback_config().is_some());
    }
    assert!(
        "cubic"
            .parse::<CongestionConfig>()
            .unwrap()
            .rollback_config()
            .is_none()
    );
    assert!("bbr3+rollback".parse::<CongestionConfig>().is_err());
}
