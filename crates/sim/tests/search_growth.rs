//! SEARCH with a start-up growth faster than doubling, and SEARCH's drain, on geo-viasat
//! behind the seeds' 200 Mbit/s server shaper (as `satquic sim --sender-cap auto` runs it).
//! Numbers: BENCHMARKS.md, "SEARCH under faster growth".

use std::time::Duration;

use satquic_cc::ExitReason;
use satquic_run::{MB, RunRecord, Scenario, ShaperSpec, TransportSpec};

fn geo_viasat(cc: &str, cap: Duration) -> RunRecord {
    let spec = satquic_link::presets::lookup("geo-viasat").unwrap();
    let transport = TransportSpec {
        sender_shaper: Some(ShaperSpec::seeds_server()),
        ..TransportSpec::with_cc(cc)
    };
    let scenario = Scenario::download(spec, transport, 200 * MB, 1).with_time_cap(cap);
    satquic_sim::run(&scenario).unwrap()
}

/// Looking back by the latest RTT, `+growth:x=4` and `+growth:rtt` (7x at 600 ms) exited by
/// loss on geo-viasat (BENCHMARKS.md); `lookback=auto` exits by SEARCH, at the chokepoint,
/// before the link drops anything.
#[test]
fn search_exits_before_any_drop_under_faster_growth() {
    for cc in ["cubic+search+growth:x=4", "cubic+search+growth:rtt"] {
        let record = geo_viasat(cc, Duration::from_secs(8));
        let f = &record.summary.flows[0];
        let exit = f.slow_start_exit.as_ref().expect("an exit");
        assert_eq!(exit.reason, ExitReason::Search, "{cc}");
        assert_eq!(f.exit_class, "chokepoint", "{cc}");
        if let Some(drop) = f.first_drop_at_s {
            assert!(
                exit.at_s < drop,
                "{cc}: exit {} after a drop at {drop}",
                exit.at_s
            );
        }
    }
}

/// The drain after a SEARCH exit keeps the link busy: at least 95 % utilisation over the
/// three smoothed RTTs (the sender's at the exit) that follow it. Dropping the window to
/// the target at once left the link idle while lost packets still counted in flight and
/// quinn paced the restart at the queue-inflated RTT (0.88); a loss during the drain then
/// cut the target by CUBIC's beta as well.
#[test]
fn the_drain_keeps_the_link_busy() {
    let record = geo_viasat("cubic+search:drain", Duration::from_secs(16));
    let exit = record.summary.flows[0].slow_start_exit.as_ref().unwrap();
    assert_eq!(exit.reason, ExitReason::Search);
    let utilization = record.utilization_after_exit(0, 3.0).unwrap();
    assert!(utilization >= 0.95, "{utilization:.3}");
}
