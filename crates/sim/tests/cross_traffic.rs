//! Cross traffic on the bottleneck (satquic-link's `cross`): a QUIC flow shares the link
//! with a background source, and the run stays deterministic.

use std::time::Duration;

use satquic_link::presets;
use satquic_run::{FlowSpec, RunRecord, Scenario, TransportSpec, Workload};
use satquic_sim::run;

fn timed(link: &str, cc: &str, seconds: u64) -> RunRecord {
    let mut s = Scenario::download(
        presets::lookup(link).unwrap(),
        TransportSpec::with_cc(cc),
        1,
        1,
    );
    s.flows = vec![FlowSpec {
        workload: Workload::Timed {
            duration: Duration::from_secs(seconds),
        },
        ..s.flows[0].clone()
    }];
    s.time_cap = Duration::from_secs(seconds + 5);
    run(&s).unwrap()
}

/// thesis-sat is 20 Mbit/s; with 10 Mbit/s of constant background a CUBIC download gets
/// about the other half, and the same seed gives the same record.
#[test]
fn a_flow_gets_what_the_background_leaves() {
    let goodput = |r: &RunRecord| r.summary.flows[0].goodput_bps / 1e6;
    let alone = timed("thesis-sat", "cubic", 40);
    let shared = timed("thesis-sat:cross=10M", "cubic", 40);
    assert!(goodput(&alone) > 14.0, "{}", goodput(&alone));
    assert!(
        goodput(&shared) > 5.0 && goodput(&shared) < 10.0,
        "alone {} Mbit/s, with 10 Mbit/s of background {}",
        goodput(&alone),
        goodput(&shared)
    );
    let again = timed("thesis-sat:cross=10M", "cubic", 40);
    assert_eq!(
        serde_json::to_string(&shared.summary).unwrap(),
        serde_json::to_string(&again.summary).unwrap()
    );
    // An on/off background (exponential periods) leaves more on average.
    let onoff = timed("thesis-sat:cross=10M:2s:2s:exp", "cubic", 40);
    assert!(goodput(&onoff) > goodput(&shared), "{}", goodput(&onoff));
}
