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
