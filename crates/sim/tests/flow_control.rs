//! Flow control on `geo-viasat` (seed 000 Sec. 4.6): with quicly's "update when half
//! used" MAX_DATA policy a 16 MB window stalls the sender once per round trip - the queue
//! drains and delivery stops until the next MAX_DATA arrives; with 256 MB it does not.

use satquic_run::scenario::{MIB, WindowUpdate};
use satquic_run::{MB, RunRecord, Scenario, TransportSpec};
use satquic_sim::run;

const LINK_RATE_BPS: f64 = 150e6;

fn download(window: u64, update: WindowUpdate) -> RunRecord {
    let link = satquic_link::presets::lookup("geo-viasat").unwrap();
    let transport = TransportSpec {
        receive_window: window,
        stream_receive_window: window,
        window_update: update,
        ..TransportSpec::with_cc("cubic")
    };
    run(&Scenario::download(link, transport, 200 * MB, 1)).unwrap()
}

/// Periods of at least 30 ms in which the bottleneck queue is empty and delivery has
/// fallen below half the link rate, after the link first saturated (queue above 1 MB)
/// and while most of the download is still to come (the end of a transfer drains the
/// queue too). Returns (start, in-flight bytes at the start) of each.
fn stalls(record: &RunRecord) -> Vec<(f64, u64)> {
    let requested = record.summary.flows[0].requested_bytes.unwrap();
    let Some(saturated) = record.series.iter().position(|r| r.queue_bytes > MB) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut run_start: Option<usize> = None;
    for (i, row) in record.series.iter().enumerate().skip(saturated) {
        let stalled = row.queue_bytes == 0
            && (row.delivery_rate_bps as f64) < 0.5 * LINK_RATE_BPS
            && row.delivered_bytes < requested * 9 / 10;
        match (stalled, run_start) {
            (true, None) => run_start = Some(i),
            (false, Some(s)) => {
                if i - s >= 3 {
                    out.push((record.series[s].time_s, record.series[s].in_flight_bytes));
                }
                run_start = None;
            }
            _ => {}
        }
    }
    out
}

#[test]
fn a_16_mb_window_with_quicly_updates_stalls_the_sender_periodically() {
    let window = 16 * MB;
    let record = download(window, WindowUpdate::Quicly);
    let found = stalls(&record);
    assert!(found.len() >= 5, "only {} stalls: {found:?}", found.len());
    // The sender was window-limited, not congestion-limited: nothing was lost and in
    // flight never exceeded the window.
    assert_eq!(record.summary.flows[0].packets_lost, 0);
    assert!(found.iter().all(|&(_, in_flight)| in_flight <= window));
    assert!(
        record
            .series
            .iter()
            .all(|r| r.in_flight_bytes <= window + 2 * 1200)
    );
    // Roughly one stall per round trip (0.6 s plus the standing queue).
    let gaps: Vec<f64> = found.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let mean_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!(
        (0.5..1.2).contains(&mean_gap),
        "mean period {mean_gap:.2} s"
    );
}

#[test]
fn a_256_mib_window_never_stalls() {
    let record = download(256 * MIB, WindowUpdate::Quicly);
    assert_eq!(stalls(&record), Vec::new());
    let record = download(256 * MIB, WindowUpdate::Quinn);
    assert_eq!(stalls(&record), Vec::new());
}

/// A finding rather than a requirement: quinn announces credit every 1/8 of the window,
/// so a 16 MB window (above the 11.25 MB BDP) caps the sender without draining the
/// queue - the seeds' stalls came from quicly's policy, not from the window size alone.
#[test]
fn quinn_own_policy_does_not_stall_at_16_mb() {
    let record = download(16 * MB, WindowUpdate::Quinn);
    assert_eq!(stalls(&record), Vec::new());
    assert_eq!(record.summary.flows[0].packets_lost, 0);
}

/// Receive-window auto-tuning (quinn-proto patch 5, `receive_window_autotune`): the
/// stream window starts at quinn's 1.25 MB and doubles while the application reads a
/// window faster than the path delivers one. On geo-viasat (150 Mbit/s, ~600 ms) it grows
/// past the bandwidth-delay product and the download runs at the link rate instead of
/// the 16.7 Mbit/s a fixed 1.25 MB window allows; on qir-terrestrial (20 Mbit/s, 30 ms,
/// a 75 kB product) a window is never read fast enough and it stays at 1.25 MB.
#[test]
fn an_auto_tuned_window_grows_on_a_geo_path_and_stays_small_on_a_short_one() {
    let download = |preset: &str, autotune: bool, window: u64, bytes: u64| {
        let link = satquic_link::presets::lookup(preset).unwrap();
        let transport = TransportSpec {
            stream_receive_window: window,
            receive_window_autotune: autotune,
            ..TransportSpec::with_cc("cubic+search")
        };
        let r = run(&Scenario::download(link, transport, bytes, 1)).unwrap();
        let f = r.summary.flows[0].clone();
        assert_eq!(f.status, "completed", "{preset}: {:?}", f.error);
        f
    };
    let fixed = download("geo-viasat", false, 1_250_000, 30 * MB);
    let tuned = download("geo-viasat", true, 256 * MIB, 30 * MB);
    let (slow, fast) = (
        fixed.completion_time_s.unwrap(),
        tuned.completion_time_s.unwrap(),
    );
    assert!(
        slow > 14.0 && fast < slow / 2.0,
        "fixed {slow} s, auto-tuned {fast} s"
    );
    assert_eq!(
        fixed.stream_receive_window_end, None,
        "not recorded without tuning"
    );
    let grown = tuned.stream_receive_window_end.unwrap();
    assert!((8 * MB..=256 * MIB).contains(&grown), "{grown}");

    let short = download("qir-terrestrial", true, 256 * MIB, 10 * MB);
    assert_eq!(short.stream_receive_window_end, Some(1_250_000));
}
