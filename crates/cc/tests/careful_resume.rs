//! Careful Resume (RFC 9959): one test per safety rule, named after it, driving a
//! `Controller` with the calls quinn makes; the phases end to end; the saved-state record
//! and store; spec strings; and a simulated GEO bottleneck where a resumed connection
//! reaches the saved rate in about two RTTs while a fresh one needs ~log2(BDP / IW).
//! Section numbers are RFC 9959's.

mod common;

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use satquic_cc::{
    CarefulResumeConfig, CarefulResumePhase as Phase, CarefulResumeTrigger as Trigger, CcEvent,
    CongestionConfig, Controller, EventLog, NotObserved, RemoteEndpoint, ResumeParams,
    ResumeRejected, RttInfo, SavedCcParams, SavedStateStore, Search,
};

const MSS: u64 = 1200;
/// RFC 9002's initial window for a 1200-byte MSS.
const IW: u64 = 12_000;
const RTT: Duration = Duration::from_millis(600);
/// 100 MB saved: far above anything slow start reaches in these tests.
const SAVED_CWND: u64 = 1_000_000;

/// A sender as quinn drives the controller: numbered packets of one MSS, a flight in send
/// order, acknowledgements and losses of the oldest packets.
struct Sender {
    ctl: Controller,
    log: Arc<EventLog>,
    now: Duration,
    pn: u64,
    flight: VecDeque<(u64, Duration, u64)>,
    in_flight: u64,
    sent_total: u64,
}

impl Sender {
    fn new(cc: CongestionConfig) -> Self {
        let log = EventLog::new();
        let ctl = cc
            .event_sink(log.clone())
            .build_controller(MSS)
            .expect("composed controller");
        Self {
            ctl,
            log,
            now: Duration::ZERO,
            pn: 0,
            flight: VecDeque::new(),
            in_flight: 0,
            sent_total: 0,
        }
    }

    /// CUBIC + classic slow start resuming from `saved` with `config`.
    fn resumed(config: CarefulResumeConfig, saved: ResumeParams) -> Self {
        Self::new(
            CongestionConfig::cubic()
                .careful_resume(config)
                .resume(saved),
        )
    }

    fn saved(cwnd: u64, rtt: Duration) -> ResumeParams {
        ResumeParams::new(cwnd, rtt)
    }

    /// Sends `n` packets, 1 us apart (quinn stamps every datagram).
    fn send(&mut self, n: usize) {
        for _ in 0..n {
            self.now += Duration::from_micros(1);
            self.pn += 1;
            self.ctl.on_sent(self.now, MSS, self.pn);
            self.flight.push_back((self.pn, self.now, MSS));
            self.in_flight += MSS;
            self.sent_total += MSS;
        }
    }

    /// Sends while the window allows (RFC 9002 Sec. 7: while `in_flight + MSS <= window`);
    /// returns the packets sent.
    fn fill(&mut self) -> usize {
        self.fill_while(|in_flight, window| in_flight + MSS <= window)
    }

    /// Sends while `allowed(in_flight, window)`; returns the packets sent.
    fn fill_while(&mut self, allowed: impl Fn(u64, u64) -> bool) -> usize {
        let mut n = 0;
        while allowed(self.in_flight, self.ctl.window()) && n < 100_000 {
            self.send(1);
            n += 1;
        }
        n
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// An ACK batch that acknowledged only ACK-only packets: quinn calls `on_end_acks`.
    /// quinn-proto 0.11 gives the controller no timer, so a sender whose window is used up
    /// learns of passing time from such events (and from ACKs of its data).
    fn tick(&mut self) {
        self.ctl.on_end_acks(self.now, self.in_flight, None);
    }

    /// `d` later: an event, then whatever the window allows.
    fn pace_step(&mut self, d: Duration) {
        self.advance(d);
        self.tick();
        self.fill();
    }

    /// Acknowledges the `n` oldest packets with RTT samples of `rtt`.
    fn ack_with(&mut self, n: usize, rtt: Duration, app_limited: bool) {
        let mut largest = None;
        for _ in 0..n {
            let Some((pn, sent, bytes)) = self.flight.pop_front() else {
                break;
            };
            self.in_flight -= bytes;
            self.ctl
                .on_ack(self.now, sent, bytes, app_limited, RttInfo::fixed(rtt));
            largest = Some(pn);
        }
        self.ctl.on_end_acks(self.now, self.in_flight, largest);
    }

    fn ack(&mut self, n: usize) {
        self.ack_with(n, RTT, false);
    }

    /// Declares the `n` oldest packets lost (`ecn`: a CE mark, no bytes lost).
    fn lose(&mut self, n: usize, ecn: bool) {
        let mut bytes = 0;
        let mut last_sent = Duration::ZERO;
        for _ in 0..n {
            let Some((_, sent, b)) = self.flight.pop_front() else {
                break;
            };
            self.in_flight -= b;
            bytes += b;
            last_sent = sent;
        }
        let lost = if ecn { 0 } else { bytes };
        self.ctl
            .on_congestion_event(self.now, last_sent, false, lost);
    }

    /// The initial window goes out and is acknowledged one RTT later: the path is
    /// confirmed (Sec. 3.2), the window doubled by slow start.
    fn reconnaissance(&mut self, rtt: Duration) {
        self.send((IW / MSS) as usize);
        self.advance(rtt);
        self.ack_with((IW / MSS) as usize, rtt, false);
    }

    fn phase(&self) -> Phase {
        self.ctl.careful_resume().phase()
    }

    fn cwnd(&self) -> u64 {
        self.ctl.congestion_window()
    }

    /// The phase changes so far: (old, new, trigger).
    fn transitions(&self) -> Vec<(Option<Phase>, Phase, Option<Trigger>)> {
        self.log
            .events()
            .into_iter()
            .filter_map(|e| match e {
                CcEvent::CarefulResumePhaseUpdated {
                    old, new, trigger, ..
                } => Some((old, new, trigger)),
                _ => None,
            })
            .collect()
    }

    fn last_transition(&self) -> (Option<Phase>, Phase, Option<Trigger>) {
        *self.transitions().last().expect("a phase change")
    }
}

/// A sender that jumped: Reconnaissance at `RTT`, then window-limited.
fn jumped(config: CarefulResumeConfig) -> Sender {
    let mut s = Sender::resumed(config, Sender::saved(SAVED_CWND, RTT));
    s.reconnaissance(RTT);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated, "{:?}", s.transitions());
    s
}

/// A connection resumed with controller `spec` half a round trip into its Unvalidated Phase.
fn half_way_unvalidated(spec: &str) -> Sender {
    let cc: CongestionConfig = spec.parse().unwrap();
    let mut s = Sender::new(cc.resume(Sender::saved(SAVED_CWND, RTT)));
    s.reconnaissance(RTT);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated, "{:?}", s.transitions());
    s.advance(RTT / 2);
    s
}

fn endpoint(last: u8) -> RemoteEndpoint {
    RemoteEndpoint::new(
        Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)),
    )
}

fn epoch(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
}

// ---- Reconnaissance: confirming the path (Sec. 3.2, 4.2, 4.2.1) ----------------------

/// Sec. 3.2 "Minimum RTT too small" (MUST), Sec. 4.2.1: a minimum RTT of at most half
/// the saved one means another path; no jump, the window is left to normal CC.
#[test]
fn rtt_at_most_half_the_saved_rtt_prevents_the_jump() {
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.reconnaissance(RTT / 2);
    let before = s.cwnd();
    s.fill();
    assert_eq!(s.phase(), Phase::Normal);
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Reconnaissance),
            Phase::Normal,
            Some(Trigger::RttNotValidated)
        )
    );
    assert_eq!(s.cwnd(), before, "no jump: the window is normal CC's");

    // Just above half the saved RTT, the path is confirmed.
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.reconnaissance(RTT / 2 + Duration::from_millis(1));
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated);
}

/// Sec. 4.2.1: a current RTT more than ten times the saved one means another path.
#[test]
fn rtt_more_than_ten_times_the_saved_rtt_prevents_the_jump() {
    let saved_rtt = Duration::from_millis(60);
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, saved_rtt));
    s.reconnaissance(saved_rtt * 10 + Duration::from_millis(1));
    s.fill();
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Reconnaissance),
            Phase::Normal,
            Some(Trigger::RttNotValidated)
        )
    );
    assert_eq!(s.cwnd(), 2 * IW);

    // Exactly ten times is not "more than ten times".
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, saved_rtt));
    s.reconnaissance(saved_rtt * 10);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated);
}

/// Sec. 3.2 "Path confirmed": no jump before all the initial data was acknowledged (an
/// IW less the one packet quinn-proto's send rule withholds).
#[test]
fn no_jump_before_the_initial_window_is_acknowledged() {
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.send(10);
    s.advance(RTT);
    s.ack(8);
    s.fill();
    assert_eq!(s.phase(), Phase::Reconnaissance);
    s.ack(2);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated);
}

/// Sec. 4.2 (rate-limited senders stay in Reconnaissance) and the qlog draft's
/// `congestion_window_limited`: no jump unless there is more to send than the window
/// allows.
#[test]
fn app_limited_sender_does_not_jump() {
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.reconnaissance(RTT);
    // Less than the window to send: not window-limited.
    s.send(5);
    assert_eq!(s.phase(), Phase::Reconnaissance);
    // The stack reports the application as the limit: no jump even with a full window.
    s.advance(RTT);
    s.ack_with(5, RTT, true);
    s.fill();
    assert_eq!(s.phase(), Phase::Reconnaissance);
    assert!(s.cwnd() < SAVED_CWND / 2);
    // Window-limited and not application-limited: the jump.
    s.advance(RTT);
    s.ack_with(1, RTT, false);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated);
    assert_eq!(
        s.last_transition().2,
        Some(Trigger::CongestionWindowLimited)
    );
}

/// Sec. 3.2 "Detected congestion", Appendix B.3: congestion in Reconnaissance ends
/// Careful Resume and the window is what it would have been without it.
#[test]
fn loss_in_reconnaissance_stops_careful_resume_with_the_window_of_normal_cc() {
    let run = |cc: CongestionConfig| {
        let mut s = Sender::new(cc);
        s.send(10);
        s.advance(RTT);
        s.ack(5);
        s.lose(1, false);
        s.ack(4);
        s.fill();
        s
    };
    let resumed = run(CongestionConfig::cubic().resume(Sender::saved(SAVED_CWND, RTT)));
    let fresh = run(CongestionConfig::cubic());
    assert_eq!(
        resumed.transitions()[1],
        (
            Some(Phase::Reconnaissance),
            Phase::Normal,
            Some(Trigger::PacketLoss)
        )
    );
    assert_eq!(resumed.cwnd(), fresh.cwnd());
    assert_eq!(resumed.ctl.ssthresh(), fresh.ctl.ssthresh());
    assert!(!resumed.ctl.careful_resume().invalidated());
}

/// Sec. 3.2 "Using saved_cwnd", Sec. 4.2: one connection per saved set. The first
/// controller built from a configuration (or a clone) resumes; the others start normally.
#[test]
fn saved_state_is_used_by_one_connection_only() {
    let cc = CongestionConfig::cubic().resume(Sender::saved(SAVED_CWND, RTT));
    assert!(cc.pending_resume().is_some());
    let copy = cc.clone();
    let first = cc.build_controller(MSS).unwrap();
    let second = copy.build_controller(MSS).unwrap();
    let third = cc.build_controller(MSS).unwrap();
    assert_eq!(first.careful_resume().phase(), Phase::Reconnaissance);
    assert_eq!(second.careful_resume().phase(), Phase::Normal);
    assert_eq!(third.careful_resume().phase(), Phase::Normal);
    assert!(cc.pending_resume().is_none());
}

/// The configuration switch: saved parameters are ignored when Careful Resume is off.
#[test]
fn disabled_careful_resume_ignores_saved_state() {
    let mut s = Sender::resumed(
        CarefulResumeConfig::disabled(),
        Sender::saved(SAVED_CWND, RTT),
    );
    s.reconnaissance(RTT);
    s.fill();
    assert_eq!(s.phase(), Phase::Normal);
    assert!(s.transitions().is_empty());
    assert_eq!(s.cwnd(), 2 * IW);
}

// ---- Unvalidated: the jump (Sec. 3.3, 4.3) ------------------------------------------

/// Sec. 3.3 "Setting the jump_cwnd" (MUST: no more than half the saved_cwnd), Sec. 4.3.2
/// (`max_jump`); PipeSize starts at the flight size.
#[test]
fn jump_is_capped_at_half_the_saved_cwnd() {
    let s = jumped(Default::default());
    assert_eq!(s.cwnd(), SAVED_CWND / 2);
    assert_eq!(s.ctl.careful_resume().jump_cwnd(), SAVED_CWND / 2);
    // The flight when the window was full (no room for another packet): the doubled IW
    // less one packet.
    assert_eq!(s.ctl.careful_resume().pipesize(), 2 * IW - MSS);

    // A configured fraction above one half is held to one half.
    let s = jumped(CarefulResumeConfig {
        jump_fraction: 0.9,
        ..Default::default()
    });
    assert_eq!(s.cwnd(), SAVED_CWND / 2);

    // max_jump bounds it further.
    let s = jumped(CarefulResumeConfig {
        max_jump: Some(100_000),
        ..Default::default()
    });
    assert_eq!(s.cwnd(), 100_000);

    // A window already at the jump has nothing to jump to.
    let mut s = Sender::resumed(Default::default(), Sender::saved(4 * IW, RTT));
    s.reconnaissance(RTT);
    s.fill();
    assert_eq!(s.phase(), Phase::Normal);
    assert_eq!(s.cwnd(), 2 * IW);
}

/// quinn-proto 0.11 sends only while `in_flight + MTU < window`, one packet short of the
/// RFC 9002 rule: its window is full with less than one packet of room, and the jump must
/// still happen (Sec. 4.2 `congestion_window_limited`).
#[test]
fn jump_happens_when_the_stack_stops_one_packet_short_of_the_window() {
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    let quinn = |in_flight: u64, window: u64| in_flight + MSS < window;
    assert_eq!(s.fill_while(quinn), 9);
    s.advance(RTT);
    s.ack(9);
    assert_eq!(s.phase(), Phase::Reconnaissance);
    s.fill_while(quinn);
    assert_eq!(s.phase(), Phase::Unvalidated);
    assert_eq!(s.cwnd(), SAVED_CWND / 2);
}

/// Sec. 3.3 "Pacing transmission" (MUST), Sec. 4.3.2: unvalidated packets go out at
/// `jump_cwnd / current RTT` (ITT = RTT x MPS / jump_cwnd), bursts at most one IW, so a
/// full jump window takes at least one RTT.
#[test]
fn jump_is_paced_over_at_least_one_rtt() {
    // No pacer below the controller: the window alone paces.
    let mut s = jumped(CarefulResumeConfig {
        platform_pacer_gain: None,
        ..Default::default()
    });
    let jump = s.cwnd();
    let pacing = s.ctl.pacing().expect("pacing required while unvalidated");
    assert_eq!(pacing.jump_cwnd, jump);
    assert_eq!(pacing.max_burst, IW);
    assert!((pacing.rate_bytes_per_sec - jump as f64 / RTT.as_secs_f64()).abs() < 1e-6);
    assert_eq!(pacing.interval(MSS), RTT.mul_f64(MSS as f64 / jump as f64));

    let start = s.now;
    let sent_at_jump = s.sent_total;
    let step = RTT / 100;
    let mut full_at = None;
    while s.phase() == Phase::Unvalidated {
        s.pace_step(step);
        let elapsed = (s.now - start).as_secs_f64();
        let sent = (s.sent_total - sent_at_jump) as f64;
        let allowed = IW as f64 + jump as f64 * elapsed / RTT.as_secs_f64() + MSS as f64;
        assert!(
            sent <= allowed,
            "{sent} B sent after {elapsed} s; allowed {allowed}"
        );
        if full_at.is_none() && s.in_flight + MSS > jump {
            full_at = Some(s.now - start);
        }
    }
    // The window filled no sooner than (jump - PipeSize - IW) / rate after the jump...
    let pipesize = 2 * IW;
    let earliest = RTT.mul_f64((jump - pipesize - IW) as f64 / jump as f64);
    let full_at = full_at.expect("the jump window was used");
    assert!(full_at >= earliest, "full after {full_at:?} < {earliest:?}");
    // ... and a whole jump window of data needs at least one RTT at that rate.
    assert!(RTT.mul_f64((jump - IW) as f64 / pacing.rate_bytes_per_sec / RTT.as_secs_f64()) <= RTT);
    assert!(
        s.ctl.pacing().is_none(),
        "pacing is for unvalidated packets only"
    );

    // With quinn's pacer below (1.25 x window / srtt), the window is never less than
    // jump / 1.25, so that pacer runs at jump / srtt rather than throttling the jump.
    let s = jumped(Default::default());
    assert!(s.ctl.window() >= (s.cwnd() as f64 / 1.25) as u64);
    assert!(s.ctl.window() < s.cwnd());
    // Unpaced: the whole jump at once (pacing left to the platform).
    let mut s = Sender::resumed(
        CarefulResumeConfig {
            pace_unvalidated: false,
            ..Default::default()
        },
        Sender::saved(SAVED_CWND, RTT),
    );
    s.reconnaissance(RTT);
    s.send(20);
    assert_eq!(s.phase(), Phase::Unvalidated);
    assert_eq!(s.ctl.window(), s.cwnd());
}

/// Sec. 3.3 "Detected congestion" (MUST), Sec. 3.5 "Re-initializing CWND" (MUST: no more
/// than PipeSize / 2) and "Removing saved information".
#[test]
fn loss_while_unvalidated_enters_safe_retreat_with_half_the_pipesize() {
    let mut s = jumped(Default::default());
    let pipesize = s.ctl.careful_resume().pipesize();
    s.advance(RTT / 2);
    // A packet sent before the jump is lost (Sec. 3.3's note: it must be one of those).
    s.lose(1, false);
    assert_eq!(s.phase(), Phase::SafeRetreat);
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Unvalidated),
            Phase::SafeRetreat,
            Some(Trigger::PacketLoss)
        )
    );
    assert_eq!(s.cwnd(), pipesize / 2);
    assert!(s.ctl.careful_resume().invalidated());
    assert!(s.ctl.initial_slow_start_done());

    // An ECN-CE mark (quinn: no bytes lost) does the same, with the ECN_CE trigger.
    let mut s = jumped(Default::default());
    s.lose(1, true);
    assert_eq!(s.phase(), Phase::SafeRetreat);
    assert_eq!(s.last_transition().2, Some(Trigger::EcnCe));
    assert_eq!(s.cwnd(), pipesize / 2);
}

/// `+loss-filter:cr` (ours, crates/cc/src/loss_filter.rs): a loss the filter lets pass
/// (one packet after a clean history) does not reach Careful Resume, so the jump stands;
/// three lost together, or an ECN-CE mark, still mean Safe Retreat. Without `cr` the
/// RFC's rule holds: any loss while Unvalidated retreats.
#[test]
fn the_loss_filters_cr_option_retreats_for_bursts_and_marks_not_isolated_losses() {
    let mut s = half_way_unvalidated("cubic+loss-filter:cr");
    let jump = s.cwnd();
    s.lose(1, false);
    assert_eq!(s.phase(), Phase::Unvalidated);
    assert_eq!(s.cwnd(), jump);

    let mut s = half_way_unvalidated("cubic+loss-filter:cr");
    s.lose(3, false);
    assert_eq!(s.phase(), Phase::SafeRetreat);

    let mut s = half_way_unvalidated("cubic+loss-filter:cr");
    s.lose(1, true);
    assert_eq!(s.phase(), Phase::SafeRetreat);
    assert_eq!(s.last_transition().2, Some(Trigger::EcnCe));

    let mut s = half_way_unvalidated("cubic+loss-filter");
    s.lose(1, false);
    assert_eq!(s.phase(), Phase::SafeRetreat);
}

/// Sec. 3.5 (note): the retreat window is floored at QUIC's minimum of two packets.
#[test]
fn safe_retreat_window_is_at_least_the_minimum_window() {
    let mut s = jumped(CarefulResumeConfig {
        retreat_fraction: 0.01,
        ..Default::default()
    });
    s.lose(1, false);
    assert_eq!(s.phase(), Phase::SafeRetreat);
    assert_eq!(s.cwnd(), 2 * MSS);
}

/// Sec. 3.3 "Check flight_size", Appendix B.2: a sender that did not use the jump window
/// within the RTT returns to normal CC with CWND = PipeSize (not below the IW).
#[test]
fn rate_limited_unvalidated_phase_resets_cwnd_to_pipesize() {
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.reconnaissance(RTT);
    s.send(20); // the 20th packet fills the doubled IW: the jump
    assert_eq!(s.phase(), Phase::Unvalidated);
    let pipesize = s.ctl.careful_resume().pipesize();
    s.send(3); // then the application runs dry
    s.advance(RTT + Duration::from_millis(1));
    s.ack(5);
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Unvalidated),
            Phase::Normal,
            Some(Trigger::RateLimited)
        )
    );
    assert_eq!(s.cwnd(), pipesize.max(IW));
    assert!(!s.ctl.careful_resume().invalidated());
}

/// Sec. 3.3 "Confirming the path during transmission" (MUST): a path change after the
/// jump, by signal or by an RTT sample at most half the saved one, is a Safe Retreat.
#[test]
fn path_change_while_unvalidated_enters_safe_retreat() {
    let mut s = jumped(Default::default());
    s.ctl.on_path_change(s.now);
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Unvalidated),
            Phase::SafeRetreat,
            Some(Trigger::PathChanged)
        )
    );
    assert!(s.ctl.careful_resume().invalidated());

    let mut s = jumped(Default::default());
    s.advance(RTT / 2);
    s.ack_with(1, RTT / 2, false);
    assert_eq!(s.phase(), Phase::SafeRetreat);
    assert_eq!(s.last_transition().2, Some(Trigger::PathChanged));

    // Before the jump, a path change just ends Careful Resume (Sec. 3.2 "Path change").
    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.reconnaissance(RTT);
    let cwnd = s.cwnd();
    s.ctl.on_path_change(s.now);
    assert_eq!(s.phase(), Phase::Normal);
    assert_eq!(s.cwnd(), cwnd);
}

/// Our `ss-cap` option (not the RFC's): once every unvalidated packet is acknowledged,
/// ssthresh = saved_cwnd x F, so slow start ends at the saved capacity (RFC 9002 Sec.
/// 7.3.1) instead of doubling past it; without it ssthresh stays unset (the RFC's normal CC).
#[test]
fn slow_start_cap_ends_slow_start_at_the_saved_capacity() {
    let mut s = jumped(CarefulResumeConfig {
        slow_start_cap: Some(1.0),
        ..Default::default()
    });
    while s.phase() == Phase::Unvalidated {
        s.pace_step(RTT / 50);
    }
    s.advance(RTT);
    s.ack(s.flight.len());
    assert_eq!(s.phase(), Phase::Normal);
    assert_eq!(s.ctl.ssthresh(), SAVED_CWND);
    // Slow start goes on up to the threshold and no further.
    for _ in 0..4 {
        s.fill();
        s.advance(RTT);
        s.ack(s.flight.len());
    }
    assert!(s.ctl.initial_slow_start_done());
    assert!(
        s.cwnd() >= SAVED_CWND && s.cwnd() < SAVED_CWND + 4 * IW,
        "{}",
        s.cwnd()
    );
    // No slow-start exit is reported: reaching ssthresh is not a heuristic's exit.
    assert!(
        !s.log
            .events()
            .iter()
            .any(|e| matches!(e, CcEvent::SlowStartExit { .. }))
    );
}

// ---- Validating, Safe Retreat, back to Normal (Sec. 3.4-3.7) ------------------------

/// Sec. 3.3-3.4, 3.7, Appendix B.1: without congestion, Unvalidated -> Validating
/// (CWND = flight_size) -> Normal once the last unvalidated packet is acknowledged; the
/// window grows as in slow start meanwhile, and never drops below the flight.
#[test]
fn no_loss_goes_through_validating_to_normal() {
    let mut s = jumped(Default::default());
    let jump = s.cwnd();
    // The jump window is used up: last_unvalidated_packet_sent.
    while s.phase() == Phase::Unvalidated {
        s.pace_step(RTT / 50);
    }
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Unvalidated),
            Phase::Validating,
            Some(Trigger::LastUnvalidatedPacketSent)
        )
    );
    assert!(s.cwnd() >= s.in_flight && s.cwnd() <= jump);
    // The flight is acknowledged over the next RTT; the window grows per ACK.
    s.advance(RTT);
    let before = s.cwnd();
    let validated = s.flight.len() / 2;
    s.ack(validated);
    assert_eq!(s.phase(), Phase::Validating);
    assert_eq!(s.cwnd(), before + validated as u64 * MSS);
    assert!(s.ctl.careful_resume().pipesize() > 2 * IW);
    s.ack(s.flight.len());
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Validating),
            Phase::Normal,
            Some(Trigger::LastUnvalidatedPacketAcknowledged)
        )
    );
    assert!(s.cwnd() > jump);
    assert_eq!(s.ctl.ssthresh(), u64::MAX, "still in slow start");
    assert!(!s.ctl.initial_slow_start_done());
    assert!(!s.ctl.careful_resume().invalidated());
    let names: Vec<Phase> = s.transitions().iter().map(|t| t.1).collect();
    assert_eq!(
        names,
        [
            Phase::Reconnaissance,
            Phase::Unvalidated,
            Phase::Validating,
            Phase::Normal
        ]
    );
}

/// Sec. 3.3 "Receiving acknowledgement for an unvalidated packet" and "Limiting time":
/// the first unvalidated ACK, or one RTT, ends the Unvalidated Phase.
#[test]
fn first_unvalidated_ack_or_one_rtt_ends_the_unvalidated_phase() {
    let mut s = jumped(CarefulResumeConfig {
        platform_pacer_gain: None,
        ..Default::default()
    });
    for _ in 0..40 {
        s.pace_step(RTT / 50);
    }
    // Pre-jump packets and the first unvalidated ones are acknowledged after an RTT.
    s.advance(RTT / 5);
    s.ack(22);
    assert_eq!(s.phase(), Phase::Validating);
    assert_eq!(
        s.last_transition().2,
        Some(Trigger::FirstUnvalidatedPacketAcknowledged)
    );

    let mut s = jumped(CarefulResumeConfig {
        platform_pacer_gain: None,
        ..Default::default()
    });
    for _ in 0..40 {
        s.pace_step(RTT / 50);
    }
    s.advance(RTT / 5 + Duration::from_millis(1));
    s.tick();
    assert_eq!(s.phase(), Phase::Validating);
    assert_eq!(s.last_transition().2, Some(Trigger::RttExceeded));
}

/// Sec. 3.4 "Detected congestion": congestion while validating is a Safe Retreat too.
#[test]
fn loss_while_validating_enters_safe_retreat() {
    let mut s = jumped(Default::default());
    while s.phase() == Phase::Unvalidated {
        s.pace_step(RTT / 50);
    }
    s.advance(RTT);
    s.ack(40);
    let pipesize = s.ctl.careful_resume().pipesize();
    s.lose(1, false);
    assert_eq!(
        s.last_transition(),
        (
            Some(Phase::Validating),
            Phase::SafeRetreat,
            Some(Trigger::PacketLoss)
        )
    );
    assert_eq!(s.cwnd(), pipesize / 2);
}

/// Sec. 3.5 "Maintaining CWND" (MUST NOT increase) and "Tracking PipeSize", then the
/// exit: once the last packet sent before the retreat is acknowledged,
/// ssthresh = PipeSize x Beta (MUST be no larger; Beta 0.5) and normal CC resumes,
/// growing by slow start towards ssthresh.
#[test]
fn safe_retreat_holds_the_window_then_sets_ssthresh_to_pipesize_times_beta() {
    let mut s = jumped(Default::default());
    while s.phase() == Phase::Unvalidated {
        s.pace_step(RTT / 50);
    }
    s.advance(RTT);
    s.ack(40);
    s.lose(1, false);
    let retreat = s.cwnd();
    while s.flight.len() > 1 {
        s.ack((s.flight.len() - 1).min(10));
        assert!(s.cwnd() <= retreat, "the window grew in Safe Retreat");
        if s.phase() == Phase::SafeRetreat {
            assert_eq!(s.cwnd(), retreat);
        }
    }
    s.ack(1);
    let (old, new, trigger) = s.last_transition();
    assert_eq!(
        (old, new, trigger),
        (
            Some(Phase::SafeRetreat),
            Phase::Normal,
            Some(Trigger::ExitRecovery)
        )
    );
    let pipesize = s.ctl.careful_resume().pipesize();
    assert_eq!(s.ctl.ssthresh(), pipesize / 2);
    assert_eq!(s.cwnd(), retreat);
    assert!(s.ctl.in_slow_start());
    // Normal CC again: packets sent now grow the window (slow start to ssthresh).
    s.fill();
    s.advance(RTT);
    s.ack(s.flight.len());
    assert!(s.cwnd() > retreat);

    // Beta is configurable between 0.5 and 1 (CUBIC's 0.7).
    let mut s = jumped(CarefulResumeConfig {
        beta: 0.7,
        ..Default::default()
    });
    s.lose(1, false);
    s.ack(s.flight.len());
    assert_eq!(s.phase(), Phase::Normal);
    let pipesize = s.ctl.careful_resume().pipesize();
    assert_eq!(s.ctl.ssthresh(), (pipesize as f64 * 0.7) as u64);
}

/// A Safe Retreat entered on a loss the loss filter lets pass (RFC 9959 Sec. 3.3's MUST
/// retreats on any loss in the Unvalidated Phase) keeps every MUST of Sec. 3.5: the window
/// falls to at most PipeSize / 2 and `ssthresh` is PipeSize x Beta. But the avoidance, to
/// which the loss was no congestion, does not take PipeSize as CUBIC's `W_max`: it grows
/// towards the saved window, where a controller without the filter (the loss was congestion
/// to it) plateaus at PipeSize; and its initial slow start goes on to `ssthresh`.
#[test]
fn a_retreat_on_a_tolerated_loss_keeps_the_musts_and_not_the_plateau() {
    let after_retreat = |spec: &str| {
        let mut s = half_way_unvalidated(spec);
        s.lose(1, false);
        assert_eq!(s.phase(), Phase::SafeRetreat, "{spec}");
        let retreat = s.cwnd();
        assert!(retreat <= SAVED_CWND / 2, "{spec}: {retreat}");
        s.ack(s.flight.len());
        assert_eq!(s.phase(), Phase::Normal, "{spec}");
        let pipesize = s.ctl.careful_resume().pipesize();
        assert_eq!(s.ctl.ssthresh(), (pipesize / 2).max(2 * MSS), "{spec}");
        // Only to the controller that answered the loss did it end the initial slow start.
        assert_eq!(s.ctl.initial_slow_start_done(), spec == "cubic", "{spec}");
        // Slow start to `ssthresh`, then CUBIC's concave growth towards its `W_max`.
        for _ in 0..16 {
            s.fill();
            s.advance(RTT);
            s.ack(s.flight.len());
        }
        (pipesize, s.cwnd())
    };
    // A loss the filter answers after such a retreat ends the initial slow start.
    let mut s = half_way_unvalidated("cubic+loss-filter");
    s.lose(1, false);
    s.ack(s.flight.len());
    assert_eq!(s.phase(), Phase::Normal);
    assert!(!s.ctl.initial_slow_start_done());
    s.fill();
    s.advance(RTT);
    s.lose(3, false);
    assert!(s.ctl.initial_slow_start_done());
    let (pipesize, answered) = after_retreat("cubic");
    let (same, tolerated) = after_retreat("cubic+loss-filter");
    assert_eq!(pipesize, same);
    assert!(pipesize < SAVED_CWND / 2, "{pipesize}");
    // The plateau at PipeSize, and the growth towards the saved window, never past it.
    assert!(
        answered <= pipesize + pipesize / 20,
        "{answered} against {pipesize}"
    );
    assert!(
        tolerated > 2 * pipesize && tolerated <= SAVED_CWND,
        "{tolerated} against {pipesize}"
    );
}

/// Sec. 3.6: persistent congestion ends Careful Resume; normal CC collapses the window.
#[test]
fn persistent_congestion_stops_careful_resume() {
    let mut s = jumped(Default::default());
    let pipesize = s.ctl.careful_resume().pipesize();
    let sent = s.flight.back().unwrap().1;
    s.ctl.on_congestion_event(s.now, sent, true, 10 * MSS);
    assert_eq!(s.phase(), Phase::Normal);
    assert_eq!(s.cwnd(), 2 * MSS);
    assert!(s.ctl.ssthresh() <= (pipesize / 2).max(2 * MSS));
    assert!(s.ctl.careful_resume().invalidated());
}

// ---- Observing and the saved state (Sec. 3.1, 4.1, 4.3.1, 4.6) ----------------------

/// A connection that ran `rounds` window-limited round trips in normal CC.
fn observed(cc: CongestionConfig, rounds: usize) -> Sender {
    let mut s = Sender::new(cc);
    for _ in 0..rounds {
        s.fill();
        s.advance(RTT);
        s.ack(s.flight.len());
    }
    s
}

/// Sec. 4.6 ("Once a sender is no longer using Careful Resume, the sender is permitted to
/// start observing"), Appendix A (observing in Normal): no observation while resuming.
#[test]
fn saved_state_is_observed_only_in_the_normal_phase() {
    let mut s = jumped(Default::default());
    assert_eq!(
        s.ctl.observe(),
        Err(NotObserved::Resuming(Phase::Unvalidated))
    );
    while s.phase() == Phase::Unvalidated {
        s.pace_step(RTT / 50);
    }
    assert_eq!(
        s.ctl.observe(),
        Err(NotObserved::Resuming(Phase::Validating))
    );
    s.advance(RTT);
    s.ack(s.flight.len());
    assert_eq!(s.phase(), Phase::Normal);
    // Back in Normal, rounds are observed afresh.
    assert_eq!(s.ctl.observe(), Err(NotObserved::NoRound));
    for _ in 0..2 {
        s.fill();
        s.advance(RTT);
        s.ack(s.flight.len());
    }
    let o = s.ctl.observe().expect("observed in Normal");
    assert_eq!(o.saved_rtt, RTT);

    let mut s = Sender::resumed(Default::default(), Sender::saved(SAVED_CWND, RTT));
    s.send(1);
    assert_eq!(
        s.ctl.observe(),
        Err(NotObserved::Resuming(Phase::Reconnaissance))
    );
    // In Safe Retreat neither.
    let mut s = jumped(Default::default());
    s.lose(1, false);
    assert_eq!(
        s.ctl.observe(),
        Err(NotObserved::Resuming(Phase::SafeRetreat))
    );
}

/// `got` is `want` up to the microseconds the driver spends sending.
fn about(got: u64, want: u64) -> bool {
    got <= want && got as f64 >= want as f64 * 0.999
}

/// Sec. 3.1 "saved_cwnd" (bytes acknowledged in one RTT), "saved_rtt" (the minimum RTT),
/// and the option not to save a window below four IWs.
#[test]
fn observation_is_the_bytes_acknowledged_per_round_and_the_minimum_rtt() {
    let s = observed(CongestionConfig::cubic(), 2);
    // Rounds of 10 (the first, not observed) and 20 packets: 24 kB is below 4 x IW.
    match s.ctl.observe() {
        Err(NotObserved::TooSmall {
            saved_cwnd,
            minimum,
        }) => assert!(about(saved_cwnd, 20 * MSS) && minimum == 4 * IW),
        other => panic!("{other:?}"),
    }
    let s = observed(CongestionConfig::cubic(), 4);
    let o = s.ctl.observe().unwrap();
    assert!(about(o.saved_cwnd, 80 * MSS), "{}", o.saved_cwnd);
    assert_eq!(o.saved_rtt, RTT);
    assert_eq!(o.lifetime, satquic_cc::careful_resume::DEFAULT_LIFETIME);
    // min_observe_iw = 0 saves any window.
    let s = observed(
        CongestionConfig::cubic().careful_resume(CarefulResumeConfig {
            min_observe_iw: 0,
            ..Default::default()
        }),
        2,
    );
    assert!(about(s.ctl.observe().unwrap().saved_cwnd, 20 * MSS));
}

/// Sec. 4.1 (do not save an overshoot as capacity): a round stretched by a standing queue
/// is scaled to the minimum RTT, i.e. the acknowledged rate x saved_rtt.
#[test]
fn observation_excludes_queueing_delay() {
    let mut s = observed(CongestionConfig::cubic(), 4);
    // The next round of 100 packets takes two RTTs (a queue as deep as the path).
    s.send(100);
    s.advance(2 * RTT);
    s.ack_with(100, 2 * RTT, false);
    let o = s.ctl.observe().unwrap();
    assert_eq!(o.saved_rtt, RTT);
    assert!(about(o.saved_cwnd, 50 * MSS), "{}", o.saved_cwnd);
}

/// Sec. 4.1: rounds limited by the application are discounted when an earlier
/// observation recorded more.
#[test]
fn app_limited_rounds_do_not_lower_the_observation() {
    let mut s = observed(CongestionConfig::cubic(), 4);
    let full = s.ctl.observe().unwrap().saved_cwnd;
    s.send(3);
    s.advance(RTT);
    s.ack_with(3, RTT, true);
    assert_eq!(s.ctl.observe().unwrap().saved_cwnd, full);
    // A window-limited round replaces it, smaller or not.
    s.send(70);
    s.advance(RTT);
    s.ack_with(70, RTT, false);
    assert!(about(s.ctl.observe().unwrap().saved_cwnd, 70 * MSS));
}

/// Sec. 2.2, 3.2 "Path change" (MUST): saved parameters only seed a connection to the same
/// Remote Endpoint; otherwise they are not used (and dropped).
#[test]
fn changed_path_drops_the_saved_state() {
    let saved = SavedCcParams {
        saved_cwnd: SAVED_CWND,
        saved_rtt: RTT,
        saved_remote_endpoint: endpoint(1),
        saved_at: epoch(0),
        lifetime: Duration::from_secs(600),
    };
    assert_eq!(
        saved.check(&endpoint(1), epoch(10)),
        Ok(ResumeParams::new(SAVED_CWND, RTT))
    );
    assert_eq!(
        saved.check(&endpoint(2), epoch(10)),
        Err(ResumeRejected::PathChanged)
    );
    // Another local interface or DSCP is another path as well.
    let other_local = RemoteEndpoint::new(None, endpoint(1).remote);
    assert_eq!(
        saved.check(&other_local, epoch(10)),
        Err(ResumeRejected::PathChanged)
    );
    assert_eq!(
        saved.check(&endpoint(1).with_dscp(46), epoch(10)),
        Err(ResumeRejected::PathChanged)
    );
    let mut store = SavedStateStore::new(8, Duration::from_secs(3600));
    store.save(saved);
    assert_eq!(
        store.take(&endpoint(2), epoch(10)),
        Err(ResumeRejected::NotSaved)
    );
}

/// Sec. 3.2 "Lifetime of saved CC parameters" (MUST stop; deleted), Sec. 4.3.1 (configured
/// maximum Lifetime, flush after a configuration change).
#[test]
fn expired_saved_state_is_dropped() {
    let saved = SavedCcParams {
        saved_cwnd: SAVED_CWND,
        saved_rtt: RTT,
        saved_remote_endpoint: endpoint(1),
        saved_at: epoch(0),
        lifetime: Duration::from_secs(600),
    };
    assert_eq!(saved.expires_at(), Some(epoch(600)));
    assert!(saved.check(&endpoint(1), epoch(599)).is_ok());
    assert_eq!(
        saved.check(&endpoint(1), epoch(600)),
        Err(ResumeRejected::Expired)
    );
    // A clock that stepped back cannot vouch for the age.
    assert_eq!(
        saved.check(&endpoint(1), epoch(0) - Duration::from_secs(1)),
        Err(ResumeRejected::Expired)
    );

    let mut store = SavedStateStore::new(8, Duration::from_secs(3600));
    store.save(saved.clone());
    assert_eq!(
        store.take(&endpoint(1), epoch(601)),
        Err(ResumeRejected::Expired)
    );
    assert!(store.is_empty(), "an expired set is deleted");

    // The store's maximum Lifetime caps the record's own.
    let mut store = SavedStateStore::new(8, Duration::from_secs(60));
    store.save(saved.clone());
    assert_eq!(
        store.take(&endpoint(1), epoch(61)),
        Err(ResumeRejected::Expired)
    );
    store.save(saved.clone());
    store.save(SavedCcParams {
        saved_remote_endpoint: endpoint(2),
        saved_at: epoch(100),
        ..saved.clone()
    });
    assert_eq!(store.purge_expired(epoch(120)), 1);
    assert_eq!(store.len(), 1);
    store.flush();
    assert!(store.is_empty());
}

/// `check` applies `take`'s checks and leaves the set where it is (a sender that lends a
/// set until a handshake completes removes it itself).
#[test]
fn checking_a_saved_set_leaves_it_in_the_store() {
    let saved = SavedCcParams {
        saved_cwnd: SAVED_CWND,
        saved_rtt: RTT,
        saved_remote_endpoint: endpoint(1),
        saved_at: epoch(0),
        lifetime: Duration::from_secs(600),
    };
    let mut store = SavedStateStore::new(8, Duration::from_secs(60));
    store.save(saved);
    assert_eq!(
        store.check(&endpoint(1), epoch(10)),
        Ok(ResumeParams::new(SAVED_CWND, RTT))
    );
    assert_eq!(store.len(), 1, "still there");
    assert_eq!(
        store.check(&endpoint(2), epoch(10)),
        Err(ResumeRejected::NotSaved)
    );
    assert_eq!(
        store.check(&endpoint(1), epoch(61)),
        Err(ResumeRejected::Expired),
        "the store's maximum Lifetime"
    );
    assert_eq!(store.len(), 1, "an expired set is the caller's to remove");
}

/// Sec. 3.1 "Updating saved CC parameters" (MUST NOT retain more than one set per Remote
/// Endpoint; SHOULD replace it), Sec. 3.2 (one connection per set): the store replaces,
/// hands a set out once, and is bounded.
#[test]
fn store_keeps_one_set_per_endpoint_hands_it_out_once_and_is_bounded() {
    let obs = observed(CongestionConfig::cubic(), 4)
        .ctl
        .observe()
        .unwrap();
    let mut store = SavedStateStore::new(2, Duration::from_secs(3600));
    store.save(obs.save(endpoint(1), epoch(0)));
    let newer = satquic_cc::Observation {
        saved_cwnd: 2 * obs.saved_cwnd,
        ..obs
    };
    store.save(newer.save(endpoint(1), epoch(5)));
    assert_eq!(store.len(), 1);
    assert_eq!(
        store.get(&endpoint(1)).unwrap().saved_cwnd,
        2 * obs.saved_cwnd
    );
    store.save(obs.save(endpoint(2), epoch(6)));
    store.save(obs.save(endpoint(3), epoch(7)));
    assert_eq!(store.len(), 2);
    assert!(
        store.get(&endpoint(1)).is_none(),
        "the oldest set made room"
    );

    let params = store.take(&endpoint(2), epoch(10)).unwrap();
    assert_eq!(params, ResumeParams::new(obs.saved_cwnd, RTT));
    assert_eq!(
        store.take(&endpoint(2), epoch(10)),
        Err(ResumeRejected::NotSaved)
    );
    assert!(store.remove(&endpoint(3)).is_some());
    assert!(store.is_empty());
}

/// The whole cycle: observe a connection, save, check, resume a new one.
#[test]
fn observation_saved_and_checked_seeds_a_resumed_connection() {
    let first = observed(CongestionConfig::cubic(), 8);
    let obs = first.ctl.observe().unwrap();
    let saved = obs.save(endpoint(1), epoch(0));
    let params = saved.check(&endpoint(1), epoch(30)).unwrap();
    let mut s = Sender::new(CongestionConfig::cubic().resume(params));
    s.reconnaissance(RTT);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated);
    assert_eq!(s.cwnd(), obs.saved_cwnd / 2);
    let events = s.log.events();
    let Some(CcEvent::CarefulResumePhaseUpdated {
        saved_cwnd,
        saved_rtt,
        first_unvalidated_packet,
        ..
    }) = events
        .iter()
        .find(|e| matches!(e, CcEvent::CarefulResumePhaseUpdated { old: Some(_), .. }))
    else {
        panic!("no phase change")
    };
    assert_eq!((*saved_cwnd, *saved_rtt), (obs.saved_cwnd, RTT));
    // 10 packets of IW, 19 of the doubled window (full with one packet of room left): the
    // next one is the first unvalidated.
    assert_eq!(*first_unvalidated_packet, Some(30));
}

// ---- spec strings and serialization ------------------------------------------------

#[test]
fn spec_suffix_tunes_or_disables_careful_resume() {
    let cc: CongestionConfig = "cubic+search:v2,lower-cwnd+cr:max-jump=5000000,beta=0.7"
        .parse()
        .unwrap();
    let c = cc.careful_resume_config();
    assert_eq!(c.max_jump, Some(5_000_000));
    assert_eq!(c.beta, 0.7);
    assert!(c.enabled);
    assert_eq!(cc.slow_start_config().name(), "search");
    assert_eq!(
        cc.to_string(),
        "cubic+search:v2,lower-cwnd+cr:max-jump=5000000,beta=0.7"
    );
    for spec in [
        "cubic+hystart+++cr:off",
        "newreno+cr:unpaced,no-pacer,min-rtt=0.4,max-rtt=8,jump=0.25",
        "hybla+cr:retreat=0.25,min-observe=0,lifetime=600,burst=24000,pacer-gain=2",
        "cubic+search:draft+cr:keep-on-delay-exit",
        "cubic+search:draft+growth:x=3+cr:jump-on-confirm,ss-cap=1",
        "cubic+search:draft+growth:x=3+jump:rtt=smoothed+cr:jump-on-confirm,ss-cap=1",
        "cubic+search:draft+jump+loss-filter:threshold=0.3+cr:jump-on-confirm",
    ] {
        let cc: CongestionConfig = spec.parse().unwrap();
        let again: CongestionConfig = cc.to_string().parse().unwrap();
        assert_eq!(again.to_string(), cc.to_string(), "{spec}");
        assert_eq!(again.careful_resume_config(), cc.careful_resume_config());
    }
    let off: CongestionConfig = "cubic+hystart+++cr:off".parse().unwrap();
    assert!(!off.careful_resume_config().enabled);
    assert_eq!(off.slow_start_config().name(), "hystart++");
    // The default is implied: existing spec strings are unchanged.
    assert_eq!(
        "cubic+cr".parse::<CongestionConfig>().unwrap().to_string(),
        "cubic+classic"
    );
    assert_eq!(
        "cubic+search"
            .parse::<CongestionConfig>()
            .unwrap()
            .to_string(),
        "cubic+search:draft"
    );
    for bad in [
        "cubic+cr:jump=0.8",
        "cubic+cr:beta=0.3",
        "cubic+cr:fast",
        "cubic+cr:max-jump=x",
        "cubic+cr:ss-cap=0",
        "bbr+cr",
    ] {
        let e = bad.parse::<CongestionConfig>().unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains(bad), "{bad}: {e}");
    }
}

#[cfg(feature = "serde")]
#[test]
fn saved_state_and_phase_events_serialize_with_qlog_names() {
    let saved = SavedCcParams {
        saved_cwnd: SAVED_CWND,
        saved_rtt: RTT,
        saved_remote_endpoint: endpoint(1).with_dscp(10),
        saved_at: epoch(0),
        lifetime: Duration::from_secs(600),
    };
    let json = serde_json::to_string(&saved).unwrap();
    let back: SavedCcParams = serde_json::from_str(&json).unwrap();
    assert_eq!(back, saved);

    let mut s = jumped(Default::default());
    s.lose(1, true);
    let events: Vec<String> = s
        .log
        .events()
        .iter()
        .filter(|e| matches!(e, CcEvent::CarefulResumePhaseUpdated { .. }))
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    assert!(events[0].contains(r#""type":"careful_resume_phase_updated""#));
    assert!(events[0].contains(r#""new":"reconnaissance""#));
    assert!(events[1].contains(r#""trigger":"congestion_window_limited""#));
    assert!(
        events[2].contains(r#""new":"safe_retreat""#),
        "{}",
        events[2]
    );
    assert!(events[2].contains(r#""trigger":"ECN_CE""#), "{}", events[2]);
}

// ---- robustness ---------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Send(u64),
    Ack {
        bytes: u64,
        rtt_ms: u64,
        app_limited: bool,
    },
    EndAcks(Option<u64>),
    Loss {
        persistent: bool,
        bytes: u64,
    },
    PathChange,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..20_000).prop_map(Op::Send),
        4 => (0u64..20_000, 0u64..7_000, any::<bool>())
            .prop_map(|(bytes, rtt_ms, app_limited)| Op::Ack { bytes, rtt_ms, app_limited }),
        2 => proptest::option::of(0u64..500).prop_map(Op::EndAcks),
        1 => (any::<bool>(), 0u64..20_000).prop_map(|(persistent, bytes)| Op::Loss { persistent, bytes }),
        1 => Just(Op::PathChange),
        2 => (0u64..2_000).prop_map(Op::Wait),
    ]
}

proptest! {
    /// Any call sequence: no panic, the window stays within [2 x MSS, CWND], the phase
    /// machine never reaches a state the RFC has no arrow to.
    #[test]
    fn resumed_controller_survives_any_sequence(
        ops in proptest::collection::vec(op(), 1..300),
        saved_cwnd in 0u64..100_000_000,
        saved_rtt_ms in 0u64..5_000,
        spec in prop_oneof![Just("cubic"), Just("newreno+hystart++"), Just("cubic+search"), Just("hybla+cr:no-pacer")],
    ) {
        let log = EventLog::new();
        let cc: CongestionConfig = spec.parse().unwrap();
        let cc = cc
            .resume(ResumeParams::new(saved_cwnd, Duration::from_millis(saved_rtt_ms)))
            .event_sink(log.clone());
        let mut ctl = cc.build_controller(MSS).unwrap();
        let (mut now, mut pn, mut sent_at) = (Duration::ZERO, 0u64, Vec::new());
        for op in ops {
            match op {
                Op::Send(bytes) => {
                    pn += 1;
                    ctl.on_sent(now, bytes, pn);
                    sent_at.push(now);
                }
                Op::Ack { bytes, rtt_ms, app_limited } => {
                    let sent = sent_at.first().copied().unwrap_or(now);
                    let rtt = Duration::from_millis(rtt_ms);
                    let info = RttInfo { latest: rtt, smoothed: rtt, min: rtt / 2 };
                    ctl.on_ack(now, sent, bytes, app_limited, info);
                    if !sent_at.is_empty() {
                        sent_at.remove(0);
                    }
                }
                Op::EndAcks(largest) => ctl.on_end_acks(now, 10_000, largest),
                Op::Loss { persistent, bytes } => {
                    ctl.on_congestion_event(now, now, persistent, bytes)
                }
                Op::PathChange => ctl.on_path_change(now),
                Op::Wait(ms) => now += Duration::from_millis(ms),
            }
            prop_assert!(ctl.window() >= ctl.minimum_window());
            prop_assert!(ctl.window() <= ctl.congestion_window());
            prop_assert!(ctl.congestion_window() >= ctl.minimum_window());
        }
        for e in log.events() {
            if let CcEvent::CarefulResumePhaseUpdated { old, new, .. } = e {
                let allowed = match old {
                    None => new == Phase::Reconnaissance,
                    Some(Phase::Reconnaissance) => matches!(new, Phase::Unvalidated | Phase::Normal),
                    Some(Phase::Unvalidated) => {
                        matches!(new, Phase::Validating | Phase::SafeRetreat | Phase::Normal)
                    }
                    Some(Phase::Validating) => matches!(new, Phase::SafeRetreat | Phase::Normal),
                    Some(Phase::SafeRetreat) => new == Phase::Normal,
                    Some(Phase::Normal) => false,
                };
                prop_assert!(allowed, "{old:?} -> {new:?}");
            }
        }
    }
}

// ---- a simulated GEO bottleneck -------------------------------------------------------

/// When the flight (the sending rate x RTT) first reached `bytes`, in RTTs.
fn flight_reached(trace: &common::Trace, bytes: u64) -> Option<f64> {
    trace.events.iter().find_map(|e| match e {
        CcEvent::Sample { at, in_flight, .. } if *in_flight >= bytes => Some(common::rtts(*at)),
        _ => None,
    })
}

/// Sec. 1.4's use case on the satquic GEO path (150 Mbit/s, 600 ms; SEARCH over CUBIC,
/// a pacer like quinn's at 1.25 x window / srtt, an unbounded bottleneck queue). A first
/// connection saves what it used: the acknowledged rate x minimum RTT, the BDP, although
/// its slow start has built a queue of several BDPs by then (Sec. 4.1). The next, resumed from it, has half the saved window in flight about
/// two RTTs after it started (one RTT of Reconnaissance, one of paced jump), and the whole
/// saved window about a RTT later, where a fresh connection needs ~log2(window / IW) RTTs
/// of slow start for either.
#[test]
fn resumed_connection_reaches_the_saved_rate_in_about_two_rtts() {
    let mut path = common::PathModel::bottleneck(150e6, common::RttSeen::Measured);
    path.pacing_gain = satquic_cc::careful_resume::QUINN_PACER_GAIN;
    let cc = || CongestionConfig::cubic().slow_start(Search::draft());
    let rtt = common::BASE_RTT;

    let first = common::run(cc(), &path, rtt * 16, rtt * 4);
    let obs = first
        .controller
        .observe()
        .expect("first connection observed");
    let bdp = path.bdp() as u64;
    assert!(
        obs.saved_cwnd > bdp * 9 / 10 && obs.saved_cwnd <= bdp * 11 / 10,
        "saved {} B vs BDP {bdp} B",
        obs.saved_cwnd
    );
    let params = obs
        .save(endpoint(1), epoch(0))
        .check(&endpoint(1), epoch(60))
        .unwrap();
    let (half, full) = (params.saved_cwnd / 2, params.saved_cwnd * 9 / 10);

    let until = rtt * 20;
    let fresh = common::run(cc(), &path, until, until);
    let resumed = common::run(cc().resume(params), &path, until, until);
    let eager = common::run(
        cc().careful_resume(CarefulResumeConfig {
            defer_jump: false,
            ..Default::default()
        })
        .resume(params),
        &path,
        until,
        until,
    );
    let at = |t: &common::Trace, bytes| flight_reached(t, bytes).unwrap_or(f64::INFINITY);
    let fresh_exit = fresh.exit.expect("fresh slow start ended");
    println!(
        "saved_cwnd {} B (BDP {bdp} B); RTTs to a flight of half / 90% of it: fresh {:.2} / \
         {:.2} (log2 {:.1} / {:.1}), resumed {:.2} / {:.2}, resumed jumping on confirmation \
         {:.2} / {:.2}",
        obs.saved_cwnd,
        at(&fresh, half),
        at(&fresh, full),
        (half as f64 / IW as f64).log2(),
        (full as f64 / IW as f64).log2(),
        at(&resumed, half),
        at(&resumed, full),
        at(&eager, half),
        at(&eager, full),
    );
    assert!(at(&fresh, half) >= (half as f64 / IW as f64).log2() - 1.0);
    assert!(at(&resumed, half) <= 3.0, "{}", at(&resumed, half));
    assert!(at(&eager, half) <= 2.3, "{}", at(&eager, half));
    assert!(at(&resumed, full) <= 4.0, "{}", at(&resumed, full));
    assert!(at(&fresh, half) - at(&resumed, half) >= 5.0);

    for trace in [&resumed, &eager] {
        let phases: Vec<(f64, Phase, Option<Trigger>)> = trace
            .events
            .iter()
            .filter_map(|e| match e {
                CcEvent::CarefulResumePhaseUpdated {
                    at, new, trigger, ..
                } => Some((common::rtts(*at), *new, *trigger)),
                _ => None,
            })
            .collect();
        println!("phases (RTT, phase, trigger): {phases:?}");
        let names: Vec<Phase> = phases.iter().map(|p| p.1).collect();
        assert_eq!(
            names,
            [
                Phase::Reconnaissance,
                Phase::Unvalidated,
                Phase::Validating,
                Phase::Normal
            ]
        );
        // Paced: half the saved window in flight no sooner than ~one RTT after the jump.
        let jump_at = phases[1].0;
        assert!(
            at(trace, half) - jump_at >= 0.8,
            "jump sent in {:.2} RTT",
            at(trace, half) - jump_at
        );
        assert!(!trace.controller.careful_resume().invalidated());
        // The slow start kept its history across the jump: SEARCH ends slow start earlier
        // than on a fresh connection, and without a larger overshoot.
        let exit = trace.exit.expect("slow start ended");
        println!(
            "SEARCH exit at {:.2} RTT with cwnd {} B (fresh: {:.2} RTT, {} B)",
            common::rtts(exit.0),
            exit.2,
            common::rtts(fresh_exit.0),
            fresh_exit.2
        );
        assert!(exit.0 < fresh_exit.0);
        assert!(
            exit.2 <= fresh_exit.2 + fresh_exit.2 / 10,
            "exit at {} B",
            exit.2
        );
    }
}
