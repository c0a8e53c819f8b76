//! CUBIC under random loss on QIR-SE SATLOSS (20/2 Mbit/s, 300 ms each way, 1 % loss
//! each way). Under RFC 9438 and RFC 9002 the window follows CUBIC's response function
//! (RFC 9438 Sec. 5.1: about 23 segments at p = 1 %, RTT = 0.6 s), so the transfer is
//! slow; these tests pin that the recovery periods and the loss response stay as
//! specified, not that the link is used well.

use std::time::Duration;

use satquic_cc::CcEvent;
use satquic_run::{RunRecord, Scenario, TransportSpec};
use satquic_sim::run;

/// 1 MiB: small enough for a debug-build test, large enough for several loss events.
const TRANSFER_BYTES: u64 = 1 << 20;
/// Round-trip propagation delay of qir-satloss.
const MIN_RTT: Duration = Duration::from_millis(600);
/// Completion bound for seeds 1-3, seconds: measured 23.8, 18.0 and 27.3 s (BENCHMARKS.md,
/// "CUBIC under random loss"), plus 10 %.
const COMPLETION_BOUND_S: f64 = 30.0;

fn cubic_on_satloss(seed: u64) -> RunRecord {
    on_satloss("cubic", seed)
}

fn on_satloss(cc: &str, seed: u64) -> RunRecord {
    let link = satquic_link::presets::lookup("qir-satloss").unwrap();
    run(&Scenario::download(
        link,
        TransportSpec::with_cc(cc),
        TRANSFER_BYTES,
        seed,
    ))
    .unwrap()
}

/// `+loss-filter` (picoquic's rule, not RFC 9002): 1 % random loss leaves the smoothed
/// loss rate near 0.06, under the 0.15 threshold, so no loss cuts the window and the
/// transfer runs at the link's pace (the same MiB takes 18-27 s with the RFC's response).
#[test]
fn the_loss_filter_lets_random_loss_pass_without_a_reduction() {
    for seed in 1..=3 {
        let record = on_satloss("cubic+search+loss-filter", seed);
        let flow = &record.summary.flows[0];
        assert_eq!(flow.status, "completed", "seed {seed}");
        assert!(flow.packets_lost > 0, "seed {seed}: the link lost nothing");
        let cuts = record
            .events
            .iter()
            .filter(|e| matches!(e.event, CcEvent::Congestion { .. }))
            .count();
        assert_eq!(cuts, 0, "seed {seed}");
        let done = flow.completion_time_s.unwrap();
        assert!(done < 6.0, "seed {seed}: {done} s");
    }
}

/// `+rollback` (quiche's rule, not RFC 9438): at 1 % random loss every recovery period
/// after slow start loses one or two packets, fewer than a fifth of the window, so every
/// reduction but slow start's is undone when its period ends. Measured 13.22, 10.68 and
/// 14.26 s on seeds 1-3 (default CUBIC: 24.1, 18.2, 27.4 s; BENCHMARKS.md, "CUBIC under
/// random loss").
#[test]
fn rollback_undoes_the_reductions_for_isolated_random_losses() {
    /// Completion bound for seeds 1-3, seconds: the slowest measured plus 10 %.
    const ROLLBACK_BOUND_S: f64 = 15.7;
    for seed in 1..=3 {
        let record = on_satloss("cubic+rollback", seed);
        let flow = &record.summary.flows[0];
        assert_eq!(flow.status, "completed", "seed {seed}");
        let count = |f: fn(&CcEvent) -> bool| record.events.iter().filter(|e| f(&e.event)).count();
        let cuts = count(|e| matches!(e, CcEvent::Congestion { .. }));
        let undone = count(|e| matches!(e, CcEvent::CongestionUndone { .. }));
        assert!(undone >= 3, "seed {seed}: {undone} undone");
        // The loss that ended slow start is the one reduction that stands.
        assert_eq!(
            undone,
            cuts - 1,
            "seed {seed}: {cuts} cuts, {undone} undone"
        );
        let done = flow.completion_time_s.unwrap();
        assert!(done <= ROLLBACK_BOUND_S, "seed {seed}: {done} s");
    }
}

#[test]
fn cubic_on_qir_satloss_reduces_once_per_round_trip_and_finishes_in_bound() {
    for seed in 1..=3 {
        let record = cubic_on_satloss(seed);
        let flow = &record.summary.flows[0];
        assert_eq!(flow.status, "completed", "seed {seed}");
        let done = flow.completion_time_s.unwrap();
        assert!(done <= COMPLETION_BOUND_S, "seed {seed}: {done} s");
        let cuts: Vec<(Duration, bool)> = record
            .events
            .iter()
            .filter_map(|e| match e.event {
                CcEvent::Congestion { at, persistent, .. } => Some((at, persistent)),
                _ => None,
            })
            .collect();
        assert!(cuts.len() >= 2, "seed {seed}: {cuts:?}");
        // Random loss with ACKs lost on the return path is not persistent congestion.
        assert!(cuts.iter().all(|(_, p)| !p), "seed {seed}: {cuts:?}");
        // A new recovery period needs a packet sent after the last one started, which is
        // detected lost at least one round trip later.
        for pair in cuts.windows(2) {
            let gap = pair[1].0 - pair[0].0;
            assert!(gap >= MIN_RTT, "seed {seed}: cuts {gap:?} apart: {cuts:?}");
        }
    }
}

/// The `satellite` profile on geo-viasat with 1 % random loss, seed 8 (issue 44): at 2.46 s,
/// with a window of 14.7 MB, four packets were lost within 11 (two pairs, in two ACK
/// batches). picoquic's rule alone (`loss-filter:cr=validating`, `confirm=1`) takes them for
/// a burst, ends the slow start and cuts the window by half; in its initial slow start the
/// profile answers a burst only once a further lost packet finds the smoothed rate still
/// above its threshold (`startup-confirm=2`), which this random cluster never brings, so the
/// 30 MB finish sooner.
#[test]
fn the_profile_tolerates_a_random_cluster_that_picoquics_rule_takes_for_a_burst() {
    let link = satquic_link::presets::lookup("geo-viasat:plr=0.01").unwrap();
    let go = |cc: &str| {
        run(&Scenario::download(
            link.clone(),
            TransportSpec::with_cc(cc),
            30 * satquic_run::MB,
            8,
        )
        .with_time_cap(Duration::from_secs(60)))
        .unwrap()
    };
    let cuts = |record: &RunRecord| -> Vec<Duration> {
        record
            .events
            .iter()
            .filter_map(|e| match e.event {
                CcEvent::Congestion { at, .. } => Some(at),
                _ => None,
            })
            .collect()
    };
    let picoquic = go("satellite+loss-filter:cr=validating");
    let cut = cuts(&picoquic);
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert!(
        (2.4..2.5).contains(&cut[0].as_secs_f64()),
        "picoquic's rule cut at {cut:?}"
    );
    let profile = go("satellite");
    assert_eq!(cuts(&profile), Vec::<Duration>::new());
    let time = |r: &RunRecord| r.summary.flows[0].completion_time_s.unwrap();
    assert!(
        time(&profile) < time(&picoquic),
        "{} s against {} s",
        time(&profile),
        time(&picoquic)
    );
}
