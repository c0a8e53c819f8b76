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

#[test]
fn newreno_halves_the_window_unless_told_quiclys_factor() {
    // RFC 9002's kLossReductionFactor is 0.5; quicly's Reno (the seeds') cuts to 0.7.
    for (spec, num) in [("newreno", 5), ("reno:loss-reduction=0.7", 7)] {
        let mut ctl = CongestionConfig::from_spec(spec)
            .unwrap()
            .build_controller(MSS)
            .unwrap();
        let before = ctl.window();
        ctl.on_congestion_event(
            Duration::from_secs(1),
            Duration::from_millis(900),
            false,
            1200,
        );
        assert_eq!(ctl.window(), before * num / 10, "{spec}");
    }
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

/// Drives the initial window through a 10 Mbit/s bottleneck at SAT_RTT: the 10 packets
/// leave together at `t0` and their acknowledgements return one per 2 packets, spaced
/// by the bottleneck (1 ms per 1,250-byte packet), as a packet train reveals it.
fn ack_the_initial_window_as_a_train(ctl: &mut satquic_cc::Controller, t0: Duration) {
    const PACKET: u64 = 1250;
    let per_packet = Duration::from_millis(1);
    for pn in 0..10 {
        ctl.on_sent(t0, PACKET, pn);
    }
    let rtt = satquic_cc::RttInfo::fixed(SAT_RTT);
    for ack in 0..5u32 {
        let now = t0 + SAT_RTT + per_packet * (2 * ack + 2);
        ctl.on_ack(now, t0, PACKET, false, rtt);
        ctl.on_ack(now, t0, PACKET, false, rtt);
        ctl.on_end_acks(
            now,
            PACKET * u64::from(8 - 2 * ack),
            Some(u64::from(2 * ack + 1)),
        );
    }
}

/// picoquic's start-up jump (`+jump`, crates/cc/src/jump.rs): the spacing of the initial
/// window's acknowledgements gives the bottleneck rate, and the window jumps to half of
/// rate x minimum RTT (10 Mbit/s x 600 ms / 2 = 375 kB) at the second acknowledgement,
/// the first 2 ms after the reference, instead of growing to 25 kB. Slow start then grows
/// it by the 3 x 2,500 bytes acknowledged after the jump.
#[test]
fn the_jump_raises_the_window_to_half_the_delivery_rate_bdp() {
    let jumping: CongestionConfig = "cubic+search+jump".parse().unwrap();
    let mut ctl = jumping.build_controller(1250).unwrap();
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert_eq!(ctl.window(), 375_000 + 3 * 2_500);
    assert!(ctl.in_slow_start());

    // Without the option the same acknowledgements double the window, no more.
    let plain: CongestionConfig = "cubic+search".parse().unwrap();
    let mut ctl = plain.build_controller(1250).unwrap();
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert_eq!(ctl.window(), 25_000);

    // A quarter of the BDP with fraction=0.25.
    let quarter: CongestionConfig = "cubic+search+jump:fraction=0.25".parse().unwrap();
    let mut ctl = quarter.build_controller(1250).unwrap();
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert_eq!(ctl.window(), 187_500 + 3 * 2_500);
}

/// `+jump:cap` (ours, BBR's Startup cwnd gain of 2): the initial slow start grows the
/// window to twice the measured BDP (2 x 10 Mbit/s x 600 ms = 1.5 MB) and holds it there
/// while the acknowledgements keep arriving at the bottleneck's rate. The hold limits the
/// sending as an application would, so SEARCH makes no evaluation while it lasts (a hold
/// must not be read as the path's plateau) and slow start goes on; without the cap the
/// same acknowledgements grow the window past it, evaluated all along.
#[test]
fn the_jump_cap_holds_slow_start_at_twice_the_measured_bdp() {
    const PACKET: u64 = 1250;
    const CEILING: u64 = 1_500_000;
    let step = Duration::from_millis(2);
    let rtt = satquic_cc::RttInfo::fixed(SAT_RTT);
    for (spec, capped) in [
        ("cubic+search+jump:cap", true),
        ("cubic+search+jump", false),
    ] {
        let log = EventLog::new();
        let mut ctl = spec
            .parse::<CongestionConfig>()
            .unwrap()
            .event_sink(log.clone() as Arc<dyn satquic_cc::EventSink>)
            .build_controller(PACKET)
            .unwrap();
        let t0 = Duration::from_millis(600);
        ack_the_initial_window_as_a_train(&mut ctl, t0);
        // Then two packets every 2 ms (the bottleneck's 10 Mbit/s) for 3 s, each pair
        // acknowledged one RTT after it was sent.
        let start = t0 + SAT_RTT + Duration::from_millis(12);
        let pairs = 1500u64;
        let (mut in_flight, mut acked) = (0u64, 0u64);
        let mut held_from = None;
        for i in 0..pairs + 300 {
            let now = start + step * i as u32;
            if now >= start + SAT_RTT {
                let sent = now - SAT_RTT;
                ctl.on_ack(now, sent, PACKET, false, rtt);
                ctl.on_ack(now, sent, PACKET, false, rtt);
                in_flight -= 2 * PACKET;
                ctl.on_end_acks(now, in_flight, Some(10 + 2 * acked + 1));
                acked += 1;
                if held_from.is_none() && ctl.window() >= CEILING - 1000 {
                    held_from = Some(now);
                }
            }
            if i < pairs {
                ctl.on_sent(now, PACKET, 10 + 2 * i);
                ctl.on_sent(now, PACKET, 11 + 2 * i);
                in_flight += 2 * PACKET;
            }
        }
        assert!(ctl.in_slow_start(), "{spec}");
        let held_from = held_from.expect("the window reaches 1.5 MB");
        let evaluations_after = log
            .events()
            .iter()
            .filter(|e| matches!(e, CcEvent::SearchEval { at, .. } if *at > held_from))
            .count();
        if capped {
            let window = ctl.window();
            assert!(
                (CEILING - 1000..=CEILING).contains(&window),
                "{spec}: window {window}"
            );
            assert_eq!(evaluations_after, 0, "{spec}: SEARCH evaluated the hold");
        } else {
            assert!(ctl.window() > 2 * CEILING, "{spec}: {}", ctl.window());
            assert!(evaluations_after >= 5, "{spec}: {evaluations_after}");
        }
    }
}

/// Real sockets bunch acknowledgements: here the initial window's five ACKs (2 x 1,250
/// bytes each) are handled at 0, 7.9, 7.9, 7.9 and 9 ms after the first, so one 1 ms
/// sample reads 7,500 bytes over 1.1 ms (6.8 MB/s) and picoquic's jump (half that peak x
/// 600 ms) lands at 2.05 MB, where the path (10 Mbit/s x 600 ms) holds 750 kB. With
/// `bound` the jump reads the queueing-delay bound instead: the last packet waited behind
/// 10,000 bytes beyond those the first ACK's did, and came back 9 ms later, so the jump goes
/// to 10,000 bytes / (9 ms + the 1 ms margin) x 600 ms, and the ceiling holds twice that.
#[test]
fn bunched_acknowledgements_move_picoquics_jump_not_the_bound() {
    const PACKET: u64 = 1250;
    let rtt = satquic_cc::RttInfo::fixed(SAT_RTT);
    let window = |spec: &str| {
        let mut ctl = spec
            .parse::<CongestionConfig>()
            .unwrap()
            .build_controller(PACKET)
            .unwrap();
        let t0 = Duration::from_millis(600);
        // The handshake's last ACK: the flight after it is the data's first.
        ctl.on_end_acks(t0, 0, None);
        for pn in 0..10 {
            ctl.on_sent(t0, PACKET, pn);
        }
        for (ack, at) in [0.0, 7.9, 7.9, 7.9, 9.0].into_iter().enumerate() {
            let now = t0 + SAT_RTT + Duration::from_secs_f64(at / 1000.0);
            ctl.on_ack(now, t0, PACKET, false, rtt);
            ctl.on_ack(now, t0, PACKET, false, rtt);
            ctl.on_end_acks(now, PACKET * (8 - 2 * ack as u64), Some(2 * ack as u64 + 1));
        }
        ctl.window()
    };
    let picoquic = window("cubic+search+jump");
    assert!((2_040_000..2_060_000).contains(&picoquic), "{picoquic}");
    let bounded = window("cubic+search+jump:bound,cap");
    let target = 10_000.0 / 0.010 * 0.6;
    assert!(
        (bounded as f64 - target).abs() < 10.0,
        "{bounded} against {target}"
    );
}

/// The jump belongs to the initial slow start: after a loss ended it, the same
/// acknowledgement train leaves the window alone.
#[test]
fn no_jump_after_the_initial_slow_start_ended() {
    let jumping: CongestionConfig = "cubic+search+jump".parse().unwrap();
    let mut ctl = jumping.build_controller(1250).unwrap();
    ctl.on_congestion_event(
        Duration::from_millis(100),
        Duration::from_millis(50),
        false,
        1250,
    );
    let after_loss = ctl.window();
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert!(ctl.window() < 100_000, "{} from {after_loss}", ctl.window());
}

/// On a resumed connection Careful Resume (RFC 9959) owns the start-up: in its
/// Reconnaissance Phase the window stays at the initial window whatever the ACK train
/// says, so the jump cannot pre-empt the RFC's own jump and its safety checks.
#[test]
fn no_jump_while_careful_resume_decides() {
    let resumed = "cubic+search+jump"
        .parse::<CongestionConfig>()
        .unwrap()
        .resume(satquic_cc::ResumeParams::new(10_000_000, SAT_RTT));
    let mut ctl = resumed.build_controller(1250).unwrap();
    assert_eq!(
        ctl.careful_resume().phase(),
        satquic_cc::CarefulResumePhase::Reconnaissance
    );
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert!(
        ctl.congestion_window() < 100_000,
        "{}",
        ctl.congestion_window()
    );
}

/// `+burst` (picoquic's slow-start pacing quanta, crates/cc/src/burst.rs): during the
/// initial slow start on a long path the controller asks quinn-proto's pacer for bursts
/// of a quarter window, at least 32 KiB; nothing before an RTT is known, on a short path
/// or after the initial slow start, and nothing without the option.
#[test]
fn slow_start_bursts_are_a_quarter_window_on_long_paths_only() {
    let plain: CongestionConfig = "cubic+search+jump".parse().unwrap();
    let mut ctl = plain.build_controller(1250).unwrap();
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert_eq!(ctl.pacing_burst(), None);

    let bursting: CongestionConfig = "cubic+search+jump+burst".parse().unwrap();
    let mut ctl = bursting.build_controller(1250).unwrap();
    assert_eq!(ctl.pacing_burst(), None, "no RTT yet");
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert_eq!(ctl.window(), 382_500);
    assert_eq!(ctl.pacing_burst(), Some(382_500 / 4));
    ctl.on_congestion_event(
        Duration::from_millis(1300),
        Duration::from_millis(1250),
        false,
        1250,
    );
    assert!(!ctl.in_slow_start());
    assert_eq!(ctl.pacing_burst(), None, "after the initial slow start");

    let mut short = bursting.build_controller(1250).unwrap();
    let rtt = satquic_cc::RttInfo::fixed(Duration::from_millis(20));
    short.on_sent(Duration::ZERO, 1250, 0);
    short.on_ack(Duration::from_millis(20), Duration::ZERO, 1250, false, rtt);
    short.on_end_acks(Duration::from_millis(20), 0, Some(0));
    assert_eq!(short.pacing_burst(), None, "20 ms is not a long path");

    let small: CongestionConfig = "cubic+search+burst".parse().unwrap();
    let mut ctl = small.build_controller(1250).unwrap();
    ack_the_initial_window_as_a_train(&mut ctl, Duration::from_millis(600));
    assert_eq!(ctl.window(), 25_000);
    assert_eq!(ctl.pacing_burst(), Some(32_768), "at least 32 KiB");
}

/// `+floor` (picoquic's `picoquic_cc_update_cwin_for_long_rtt`): once the first RTT is
/// measured, a 600 ms path starts from six initial windows (IW x 600 ms / 100 ms); a
/// 50 ms path keeps the initial window.
#[test]
fn the_long_rtt_floor_starts_a_600_ms_path_from_six_initial_windows() {
    let floor: CongestionConfig = "cubic+search+floor".parse().unwrap();
    let first_ack = |rtt_ms: u64| {
        let mut ctl = floor.build_controller(1250).unwrap();
        let iw = ctl.window();
        let rtt = Duration::from_millis(rtt_ms);
        ctl.on_sent(Duration::ZERO, 1250, 0);
        ctl.on_ack(
            rtt,
            Duration::ZERO,
            1250,
            false,
            satquic_cc::RttInfo::fixed(rtt),
        );
        (iw, ctl.window())
    };
    let (iw, geo) = first_ack(600);
    assert_eq!(geo, 6 * iw + 1250);
    let (iw, short) = first_ack(50);
    assert_eq!(short, iw + 1250);
}

/// `+loss-filter` (picoquic's rule, crates/cc/src/loss_filter.rs): one packet lost in 64
/// keeps the window; three lost together (a queue overflowing) are congestion and cut it
/// by CUBIC's beta; persistent congestion always collapses it.
#[test]
fn the_loss_filter_cuts_for_bursts_not_for_isolated_losses() {
    let filtered: CongestionConfig = "cubic+loss-filter".parse().unwrap();
    let mut ctl = filtered.build_controller(MSS).unwrap();
    let rtt = satquic_cc::RttInfo::fixed(SAT_RTT);
    let mut now = Duration::from_secs(1);
    let mut pn = 0;
    for _ in 0..5 {
        for _ in 0..63 {
            ctl.on_sent(now, MSS, pn);
            ctl.on_ack(now + SAT_RTT, now, MSS, false, rtt);
            pn += 1;
        }
        now += SAT_RTT;
        ctl.on_end_acks(now, 0, Some(pn));
        let before = ctl.window();
        ctl.on_congestion_event(now, now - Duration::from_millis(1), false, MSS);
        assert_eq!(ctl.window(), before, "an isolated loss cut the window");
    }
    assert!(ctl.in_slow_start());
    let before = ctl.window();
    ctl.on_congestion_event(now, now - Duration::from_millis(1), false, 3 * MSS);
    assert_eq!(ctl.window(), before * 7 / 10);
    ctl.on_congestion_event(now + SAT_RTT * 4, now + SAT_RTT * 3, true, MSS);
    assert_eq!(ctl.window(), 2 * MSS);
}
