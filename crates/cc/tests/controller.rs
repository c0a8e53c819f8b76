//! The composed controller (RFC 9002 recovery): a loss in slow start, one reduction per
//! recovery period, persistent congestion.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::MSS;
use satquic_cc::{CcEvent, CongestionConfig, EventLog, ExitReason, Search};

#[test]
fn loss_in_slow_start_is_a_loss_exit_with_beta() {
    let log = EventLog::new();
    let cc = CongestionConfig::cubic()
        .slow_start(Search::draft())
        .event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>);
    let mut ctl = cc.build_controller(MSS).unwrap();
    let before = ctl.window();
    ctl.on_congestion_event(
        Duration::from_secs(1),
        Duration::from_millis(900),
        false,
        1200,
    );
    assert_eq!(ctl.window(), before * 7 / 10);
    match &log.events()[0] {
        CcEvent::SlowStartExit { reason, shadow, .. } => {
            assert_eq!(*reason, ExitReason::Loss);
            assert!(!shadow);
        }
        other => panic!("{other:?}"),
    }
    // A second loss of a packet sent before recovery started does not reduce again.
    ctl.on_congestion_event(
        Duration::from_millis(1100),
        Duration::from_millis(950),
        false,
        1200,
    );
    assert_eq!(ctl.window(), before * 7 / 10);
    // Persistent congestion collapses to 2 x MSS.
    ctl.on_congestion_event(Duration::from_secs(3), Duration::from_secs(2), true, 1200);
    assert_eq!(ctl.window(), 2 * MSS);
}

/// Round-trip time of qir-satloss (300 ms each way).
const SAT_RTT: Duration = Duration::from_millis(600);

/// RFC 9002 Sec. 7.3.2 under random loss as quinn reports it: one
/// `on_congestion_event` per ACK batch that declared losses, carrying the send time of
/// the largest lost packet. Within one round trip after the first cut, every further
/// batch reports packets sent at or before the recovery start and must not cut again;
/// the first loss of a packet sent after it starts a new period and cuts once more.
#[test]
fn random_loss_cuts_the_window_once_per_round_trip() {
    let log = EventLog::new();
    let cc = CongestionConfig::cubic().event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>);
    let mut ctl = cc.build_controller(MSS).unwrap();
    let first_detected = Duration::from_secs(3);
    let before = ctl.congestion_window();
    ctl.on_congestion_event(first_detected, first_detected - SAT_RTT, false, MSS);
    let after_first = ctl.congestion_window();
    assert_eq!(after_first, before * 7 / 10);
    // Isolated losses reported by later ACK batches of the same round trip, the last one
    // for a packet sent exactly when recovery started (`sent <= recovery_start`).
    for (batch, lost_sent) in [(100, 2_500), (350, 2_900), (590, 3_000)] {
        let now = first_detected + Duration::from_millis(batch);
        ctl.on_congestion_event(now, Duration::from_millis(lost_sent), false, MSS);
        assert_eq!(ctl.congestion_window(), after_first, "batch at +{batch} ms");
    }
    // A loss of a packet sent after the recovery start: a new period, one more cut.
    let second_detected = first_detected + SAT_RTT + Duration::from_millis(50);
    ctl.on_congestion_event(
        second_detected,
        first_detected + Duration::from_millis(1),
        false,
        MSS,
    );
    assert_eq!(ctl.congestion_window(), after_first * 7 / 10);
    let cuts = log
        .events()
        .iter()
        .filter(|e| matches!(e, CcEvent::Congestion { .. }))
        .count();
    assert_eq!(cuts, 2, "one congestion event per recovery period");
}
