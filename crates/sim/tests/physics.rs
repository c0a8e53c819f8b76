//! The simulator's physics on simple links: utilization, RTT, queue limits, and the
//! consistency of the record's per-MB times with its time series.

use std::time::Duration;

use satquic_link::IP_UDP_OVERHEAD_BYTES;
use satquic_link::{DirectionSpec, LinkSpec, QueueLimit};
use satquic_run::{DataDirection, FlowSpec, MB, RunRecord, Scenario, TransportSpec, Workload};
use satquic_sim::run;

const RATE_BPS: u64 = 20_000_000;
const ONE_WAY: Duration = Duration::from_millis(300);
const BASE_RTT: Duration = Duration::from_millis(600);
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

fn timed(link: LinkSpec, cc: &str, seconds: u64, cap: Duration) -> Scenario {
    Scenario {
        link,
        flows: vec![FlowSpec {
            start: Duration::ZERO,
            transport: TransportSpec::with_cc(cc),
            workload: Workload::Timed {
                duration: Duration::from_secs(seconds),
            },
            direction: DataDirection::Download,
        }],
        seed: 1,
        time_cap: cap,
        resume_after: None,
    }
}

/// Bytes the down link delivered by `cap` (the run is deterministic, so runs with
/// different caps share their history up to the shorter cap).
fn link_bytes_by(cc: &str, cap: Duration) -> u64 {
    run(&timed(link(BDP_BYTES), cc, 120, cap))
        .unwrap()
        .summary
        .link
        .delivered_bytes
}

#[test]
fn a_single_unlimited_flow_fills_the_link_in_steady_state() {
    for cc in ["cubic", "newreno"] {
        let early = link_bytes_by(cc, Duration::from_secs(20));
        let late = link_bytes_by(cc, Duration::from_secs(40));
        let rate_bps = (late - early) as f64 * 8.0 / 20.0;
        assert!(
            rate_bps >= 0.95 * RATE_BPS as f64,
            "{cc}: {:.2} Mbit/s on a 20 Mbit/s link between 20 s and 40 s",
            rate_bps / 1e6
        );
    }
}

#[test]
fn first_rtt_sample_is_the_base_rtt_plus_serialization() {
    let record = run(&Scenario::download(
        link(BDP_BYTES),
        TransportSpec::default(),
        100_000,
        1,
    ))
    .unwrap();
    let first = Duration::from_secs_f64(record.summary.flows[0].first_rtt_s.unwrap());
    // The server's first datagram and the client's (padded Initial) ACK each take one
    // full-size serialization at 20 Mbit/s.
    let datagram_bits = u64::from(1200 + IP_UDP_OVERHEAD_BYTES) * 8;
    let serialization = Duration::from_nanos(2 * datagram_bits * 1_000_000_000 / RATE_BPS);
    assert!(first >= BASE_RTT, "first RTT {first:?} below the base RTT");
    assert!(
        first <= BASE_RTT + serialization + Duration::from_millis(1),
        "first RTT {first:?} vs base {BASE_RTT:?} + serialization {serialization:?} + 1 ms"
    );
}

#[test]
fn the_bottleneck_queue_never_exceeds_its_limit() {
    let limit = BDP_BYTES / 4;
    let record = run(&timed(link(limit), "cubic", 20, Duration::from_secs(20))).unwrap();
    let link = &record.summary.link;
    assert!(
        link.max_queue_bytes <= limit,
        "{} > {limit}",
        link.max_queue_bytes
    );
    assert!(
        link.max_queue_bytes > limit / 2,
        "the queue was never stressed"
    );
    assert!(
        link.drops.get("queue_full").copied().unwrap_or(0) > 0,
        "no overflow drops"
    );
    assert!(record.series.iter().all(|r| r.queue_bytes <= limit));
}

/// `chunks.csv` says when the client had k MB; the series samples what it had every
/// 10 ms. Both must tell the same story.
fn assert_chunks_match_series(record: &RunRecord) {
    assert!(!record.chunks.is_empty());
    for chunk in &record.chunks {
        let needed = chunk.mb * MB;
        for row in record.series.iter().filter(|r| r.flow == chunk.flow) {
            if row.time_s < chunk.time_s - 1e-9 {
                assert!(
                    row.delivered_bytes < needed,
                    "series has {} bytes at {} s, before chunk {} at {} s",
                    row.delivered_bytes,
                    row.time_s,
                    chunk.mb,
                    chunk.time_s
                );
            } else if row.time_s >= chunk.time_s + 1e-9 {
                assert!(
                    row.delivered_bytes >= needed,
                    "series has only {} bytes at {} s, after chunk {} at {} s",
                    row.delivered_bytes,
                    row.time_s,
                    chunk.mb,
                    chunk.time_s
                );
            }
        }
    }
}

#[test]
fn per_mb_times_are_consistent_with_the_series() {
    let sat = satquic_link::presets::lookup("qir-satloss").unwrap();
    let record = run(&Scenario::download(
        sat,
        TransportSpec::with_cc("cubic+search"),
        2 * MB,
        4,
    ))
    .unwrap();
    assert_eq!(record.chunks.len(), 2);
    assert_chunks_match_series(&record);
    // And with heavy AQM loss and reordering at the receiver.
    let geo = satquic_link::presets::lookup("geo-viasat").unwrap();
    let record = run(&Scenario::download(
        geo,
        TransportSpec::with_cc("cubic"),
        60 * MB,
        1,
    ))
    .unwrap();
    assert_eq!(record.summary.flows[0].status, "completed");
    assert_chunks_match_series(&record);
}

#[test]
fn completion_time_matches_the_last_chunk_and_goodput() {
    let sat = satquic_link::presets::lookup("qir-sat").unwrap();
    let record = run(&Scenario::download(
        sat,
        TransportSpec::default(),
        5 * MB,
        1,
    ))
    .unwrap();
    let flow = &record.summary.flows[0];
    let done = flow.completion_time_s.unwrap();
    assert_eq!(record.chunks.last().unwrap().time_s, done);
    let goodput = 5.0 * MB as f64 * 8.0 / done;
    assert!((flow.goodput_bps - goodput).abs() < 1e-6 * goodput);
}

#[test]
fn several_flows_share_the_bottleneck() {
    let mut scenario = timed(link(BDP_BYTES), "cubic", 60, Duration::from_secs(60));
    scenario.flows.push(FlowSpec {
        start: Duration::from_secs(10),
        transport: TransportSpec::with_cc("cubic"),
        workload: Workload::Download { bytes: 10 * MB },
        direction: DataDirection::Download,
    });
    let record = run(&scenario).unwrap();
    let flows = &record.summary.flows;
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[1].status, "completed");
    assert_eq!(flows[1].start_s, 10.0);
    // The second flow's chunks count from its own start.
    assert!(record.chunks.iter().any(|c| c.flow == 1));
    assert!(
        record
            .series
            .iter()
            .any(|r| r.flow == 1 && r.time_s >= 10.0)
    );
    assert!(!record.series.iter().any(|r| r.flow == 1 && r.time_s < 10.0));
    // Together they cannot exceed the link.
    let total = flows.iter().map(|f| f.delivered_bytes).sum::<u64>() as f64 * 8.0;
    assert!(total / 60.0 <= RATE_BPS as f64);
}
