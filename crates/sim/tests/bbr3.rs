//! satquic's BBRv3 (`bbr3`, draft-ietf-ccwg-bbr) through the real QUIC stack on the
//! thesis' SAT link (seed 004 Table 6.1: 20/20 Mbit/s, 300 ms each way): reproducible
//! records, the link rate, utilisation under 1 % random loss, two flows sharing fairly,
//! and a bounded queue in a deep buffer.

use std::time::Duration;

use satquic_run::{DataDirection, FlowSpec, RunRecord, Scenario, TransportSpec, Workload};
use satquic_sim::run;

/// thesis-sat's bottleneck, bytes per second (20 Mbit/s).
const LINK_BYTES_PER_S: f64 = 2_500_000.0;
/// thesis-sat's BDP, bytes (20 Mbit/s x 600 ms).
const BDP_BYTES: f64 = 1_500_000.0;
/// Steady state on a 600 ms path: Startup and Drain end by about 10 s, the first ProbeRTT
/// follows 5 s later, and from 30 s on every 30 s window holds about five whole ProbeBW
/// cycles with their ProbeRTTs (a cycle is 2-3 s of DOWN and CRUISE, a round of REFILL,
/// UP, and ProbeRTT, which at this RTT often interrupts UP). Goodput before 30 s
/// still carries Startup's queued bytes (seconds 10-25 measured 20.2 Mbit/s of a
/// 20 Mbit/s link without loss).
const STEADY_FROM: Duration = Duration::from_secs(30);
const STEADY_TO: Duration = Duration::from_secs(60);

fn preset(name: &str) -> satquic_link::LinkSpec {
    satquic_link::presets::lookup(name).unwrap()
}

fn timed_flows(link: &str, flows: u64, seconds: u64, seed: u64) -> Scenario {
    staggered_flows(link, flows, 0, seconds, seed)
}

/// `flows` bulk flows `stagger_s` seconds apart, all ending at `seconds`.
fn staggered_flows(link: &str, flows: u64, stagger_s: u64, seconds: u64, seed: u64) -> Scenario {
    Scenario {
        link: preset(link),
        flows: (0..flows)
            .map(|i| FlowSpec {
                start: Duration::from_secs(stagger_s * i),
                transport: TransportSpec::with_cc("bbr3"),
                workload: Workload::Timed {
                    duration: Duration::from_secs(seconds - stagger_s * i),
                },
                direction: DataDirection::Download,
            })
            .collect(),
        seed,
        time_cap: Duration::from_secs(seconds + 5),
        resume_after: None,
    }
}

/// Bytes flow `flow` received between `from` and `to`, from the record's series.
fn delivered_between(record: &RunRecord, flow: u32, from: Duration, to: Duration) -> f64 {
    let at = |t: Duration| {
        record
            .series
            .iter()
            .filter(|r| r.flow == flow && r.time_s <= t.as_secs_f64())
            .map(|r| r.delivered_bytes)
            .max()
            .unwrap_or(0)
    };
    (at(to) - at(from)) as f64
}

fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    satquic_run::record::RECORD_FILES
        .iter()
        .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
        .collect()
}

#[test]
fn two_runs_with_the_same_seed_give_byte_identical_records() {
    let scenario = |seed| {
        Scenario::download(
            preset("thesis-sat:plr=0.01"),
            TransportSpec::with_cc("bbr3"),
            3_000_000,
            seed,
        )
    };
    let tmp = std::env::temp_dir().join(format!("satquic-bbr3-det-{}", std::process::id()));
    let a = run(&scenario(7)).unwrap();
    let b = run(&scenario(7)).unwrap();
    a.write_to(&tmp.join("a")).unwrap();
    b.write_to(&tmp.join("b")).unwrap();
    for ((name, x), (_, y)) in files(&tmp.join("a")).iter().zip(&files(&tmp.join("b"))) {
        // bbr3 reports no satquic-cc events, so events.jsonl may be empty.
        assert!(!x.is_empty() || name == "events.jsonl", "{name} is empty");
        assert!(
            x == y,
            "{name} differs between two bbr3 runs with the same seed"
        );
    }
    std::fs::remove_dir_all(&tmp).ok();
    assert_eq!(a.summary.flows[0].status, "completed");
    assert!(a.summary.flows[0].packets_lost > 0);
    assert_eq!(a.summary.flows[0].cc, "bbr3");
    let c = run(&scenario(8)).unwrap();
    assert_ne!(a.series_csv(), c.series_csv());
}

#[test]
fn one_flow_converges_to_the_link_rate_on_thesis_sat() {
    let record = run(&timed_flows("thesis-sat", 1, STEADY_TO.as_secs(), 1)).unwrap();
    let rate = delivered_between(&record, 0, STEADY_FROM, STEADY_TO)
        / (STEADY_TO - STEADY_FROM).as_secs_f64();
    // Goodput: QUIC, UDP and IP headers take about 4 % of the link, and every ProbeRTT
    // (half the BDP for 200 ms and a round, every 5-6 s) some more. Measured 2.225 MB/s
    // (89.0 %).
    assert!(
        rate >= 0.85 * LINK_BYTES_PER_S,
        "{rate} B/s of {LINK_BYTES_PER_S} after convergence"
    );
}

#[test]
fn one_percent_random_loss_keeps_eighty_percent_of_thesis_sat() {
    // The check: thesis-sat, 1 % random loss, at least 80 % of the 20 Mbit/s
    // link, here as goodput (QUIC payload acknowledged), which QUIC, UDP and IP headers
    // put about 4 % below what the link carries. Seed 1: 16.91 Mbit/s (84.6 %); seeds
    // 1-8 range from 15.84 to 16.91 (BENCHMARKS.md, "BBRv3").
    let record = run(&timed_flows(
        "thesis-sat:plr=0.01",
        1,
        STEADY_TO.as_secs(),
        1,
    ))
    .unwrap();
    assert!(record.summary.flows[0].packets_lost > 100);
    let rate = delivered_between(&record, 0, STEADY_FROM, STEADY_TO)
        / (STEADY_TO - STEADY_FROM).as_secs_f64();
    assert!(
        rate >= 0.8 * LINK_BYTES_PER_S,
        "{rate} B/s of {LINK_BYTES_PER_S} with 1 % loss over seconds 30-60"
    );
}

#[test]
fn two_flows_share_one_bottleneck_with_jain_index_above_0_95() {
    // Both start together; a flow starting 10 s after the other does not converge in 40 s
    // (BENCHMARKS.md, "BBRv3": the incumbent's probes fill the 1-BDP buffer, and the
    // losses cap the newcomer's inflight_hi at its own small inflight).
    // Measured over the steady state (`STEADY_FROM`): over seconds 20-40 of a 40 s run
    // the two took 81 % of the link together (the first ProbeRTTs fall there).
    let record = run(&timed_flows("thesis-sat", 2, STEADY_TO.as_secs(), 3)).unwrap();
    let (from, to) = (STEADY_FROM, STEADY_TO);
    let x: Vec<f64> = (0..2)
        .map(|f| delivered_between(&record, f, from, to))
        .collect();
    let jain = (x[0] + x[1]).powi(2) / (2.0 * (x[0] * x[0] + x[1] * x[1]));
    assert!(jain >= 0.95, "Jain's index {jain}: {x:?}");
    let total = (x[0] + x[1]) / (to - from).as_secs_f64();
    assert!(total >= 0.85 * LINK_BYTES_PER_S, "{total} B/s together");
}

#[test]
fn the_queue_stays_bounded_in_a_deep_buffer() {
    // Four BDPs of buffer (6 MB): a loss-based sender fills it before it sees a loss.
    // Startup's queue (1 BDP, held for the three rounds that prove the plateau, which the
    // queue stretches to 1.2 s each) is drained by 11.5 s.
    let record = run(&timed_flows("thesis-sat:buffer=4", 1, 25, 1)).unwrap();
    let after: Vec<f64> = record
        .series
        .iter()
        .filter(|r| r.time_s >= 12.0)
        .map(|r| r.queue_bytes as f64)
        .collect();
    let max = after.iter().copied().fold(0.0, f64::max);
    let mean = after.iter().sum::<f64>() / after.len() as f64;
    // ProbeBW_UP's cwnd gain (2.25) bounds a probe's queue at 1.25 BDP; UP lasts until
    // the delivery rate stops growing for three rounds, so the queue peaks near a BDP and
    // DOWN drains it.
    eprintln!("deep buffer: max queue {max} bytes, mean {mean} bytes");
    assert!(max <= 1.25 * BDP_BYTES, "queue reached {max} bytes");
    assert!(mean <= 0.5 * BDP_BYTES, "mean queue {mean} bytes");
    assert!(record.summary.flows[0].packets_lost == 0);
}
