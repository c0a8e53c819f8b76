//! The loopback example as a test: real quinn endpoints, real TLS, real UDP sockets.

#[allow(dead_code)]
#[path = "../examples/quinn_search.rs"]
mod example;

use satquic_cc::{CcEvent, SearchOutcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_transfer_runs_search_and_exits_slow_start() {
    let (events, _) = example::transfer(20_000_000, "cubic+search")
        .await
        .expect("transfer");
    let evaluations: Vec<&CcEvent> = events
        .iter()
        .filter(|e| {
            matches!(e, CcEvent::SearchEval { outcome, .. } if *outcome != SearchOutcome::WarmingUp)
        })
        .collect();
    assert!(!evaluations.is_empty(), "no SEARCH evaluation past warm-up");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CcEvent::SlowStartExit { shadow: false, .. })),
        "no slow-start exit in {} events",
        events.len()
    );
}
