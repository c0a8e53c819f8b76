//! What a run reports of flows beside each other: each data packet's queueing delay at the
//! bottleneck, from the link's ground truth, and the period all flows shared the link.

use std::time::Duration;

use satquic_link::{DirectionSpec, LinkSpec, QueueLimit};
use satquic_run::{DataDirection, FlowSpec, Scenario, TransportSpec, Workload};
use satquic_sim::run;

const RATE_BPS: u64 = 20_000_000;
const ONE_WAY: Duration = Duration::from_millis(300);
/// 20 Mbit/s x 600 ms.
const BDP_BYTES: u64 = 1_500_000;

fn link(queue_bytes: u64) -> LinkSpec {
    let dir = DirectionSpec::simple(RATE_BPS, ONE_WAY, QueueLimit::Bytes(queue_bytes));
    LinkSpec {
        name: "test-20M-600ms".into(),
        description: String::new(),
        source: String::new(),
        down: dir.clone(),
        up: dir,
        slots: None,
    }
}

fn flow(cc: &str, start_s: u64, workload: Workload) -> FlowSpec {
    FlowSpec {
        start: Duration::from_secs(start_s),
        transport: TransportSpec::with_cc(cc),
        workload,
        direction: DataDirection::Download,
    }
}

fn timed(seconds: u64) -> Workload {
    Workload::Timed {
        duration: Duration::from_secs(seconds),
    }
}

fn scenario(queue_bytes: u64, flows: Vec<FlowSpec>) -> Scenario {
    Scenario {
        link: link(queue_bytes),
        flows,
        seed: 1,
        time_cap: Duration::from_secs(120),
        resume_after: None,
    }
}

#[test]
fn a_flow_that_fills_a_deep_queue_reports_its_delay_and_a_light_one_none() {
    // CUBIC fills a 2-BDP drop-tail queue (1.2 s at 20 Mbit/s) before its first loss and
    // keeps it partly full: its packets wait for hundreds of milliseconds.
    let bulk = run(&scenario(2 * BDP_BYTES, vec![flow("cubic", 0, timed(40))])).unwrap();
    let delay = bulk.summary.flows[0].queue_delay.unwrap();
    assert!(delay.p95_ms > 400.0 && delay.p95_ms <= 1200.0, "{delay:?}");
    assert!(delay.p50_ms <= delay.p95_ms && delay.p95_ms <= delay.max_ms);
    // 100 kB in the initial window's flights: a few packets ever queue behind others.
    let light = run(&scenario(
        2 * BDP_BYTES,
        vec![flow("cubic", 0, Workload::Download { bytes: 100_000 })],
    ))
    .unwrap();
    let delay = light.summary.flows[0].queue_delay.unwrap();
    assert!(delay.p50_ms < 5.0, "{delay:?}");
    assert!(bulk.summary.shared.is_none());
}

#[test]
fn the_shared_period_runs_from_the_latecomer_to_the_first_end() {
    let record = run(&scenario(
        BDP_BYTES,
        vec![flow("cubic", 0, timed(40)), flow("cubic", 10, timed(40))],
    ))
    .unwrap();
    let shared = record.summary.shared.unwrap();
    assert_eq!((shared.from_s, shared.to_s), (10.0, 40.0));
    let [a, b] = [&shared.flows[0], &shared.flows[1]];
    assert!((a.share + b.share - 1.0).abs() < 1e-9);
    // Together they fill the link (goodput is a little under the IP rate).
    let total = a.goodput_bps + b.goodput_bps;
    assert!(
        total > 0.85 * RATE_BPS as f64 && total < RATE_BPS as f64,
        "{total}"
    );
    assert!(shared.jain_index > 0.5 && shared.jain_index <= 1.0);
    // The period's drops are a part of the flow's, and both flows met the same queue.
    for (s, f) in [(a, &record.summary.flows[0]), (b, &record.summary.flows[1])] {
        let all: u64 = f.link_drops.values().sum();
        assert!(s.link_drops <= all && s.link_packets > 0);
        let delay = s.queue_delay.unwrap();
        assert!(delay.p95_ms > 100.0, "{delay:?}");
    }
}
