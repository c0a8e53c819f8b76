//! RFC 9959 (Careful Resume): one test per MUST and MUST NOT, named after its section and
//! rule, each quoting the words it checks (from draft-ietf-tsvwg-careful-resume-24, the
//! version the RFC was published from; docs/conformance.md lists them all). Each runs on
//! plain CUBIC and, where the rule is about the window, also on the `satellite` profile's
//! controller (its loss response, `+loss-filter:cr=validating`, lets Careful
//! Resume hear every loss in Reconnaissance and in the Unvalidated Phase, where RFC 9959's
//! MUSTs are; in the Validating Phase only the losses it answers), so that the profile's
//! start-up modifiers (floor, growth, jump, bursts) are shown not to undo the rule. The phase-by-phase behaviour and the options
//! are tested in careful_resume.rs.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use satquic_cc::profile::SATELLITE_CC;
use satquic_cc::{
    CarefulResumeConfig, CarefulResumePhase as Phase, CarefulResumeTrigger as Trigger, CcEvent,
    CongestionConfig, Controller, EventLog, RemoteEndpoint, ResumeParams, ResumeRejected, RttInfo,
    SavedCcParams, SavedStateStore,
};

const MSS: u64 = 1200;
/// RFC 9002's initial window for a 1200-byte datagram.
const IW: u64 = 12_000;
const RTT: Duration = Duration::from_millis(600);
/// Far above what slow start reaches in these tests.
const SAVED_CWND: u64 = 1_000_000;

/// The profile's controller: its loss filter hides no loss from Careful Resume in
/// Reconnaissance or in the Unvalidated Phase (`cr=validating` at most, never a bare `cr`).
fn profile_keeping_rfc9959() -> String {
    let filter = SATELLITE_CC
        .split('+')
        .find(|part| part.starts_with("loss-filter"))
        .unwrap_or_default();
    assert!(
        !filter.split([':', ',']).any(|opt| opt == "cr"),
        "the profile hides losses from Careful Resume in every phase: {SATELLITE_CC}"
    );
    SATELLITE_CC.to_string()
}

/// A sender as quinn drives the controller (as in careful_resume.rs): numbered packets of
/// one MSS, a flight in send order, acknowledgements and losses of the oldest packets.
struct Sender {
    ctl: Controller,
    log: Arc<EventLog>,
    now: Duration,
    pn: u64,
    flight: VecDeque<(u64, Duration, u64)>,
    in_flight: u64,
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
        }
    }

    /// `spec` resuming from `SAVED_CWND` and `RTT`.
    fn resumed(spec: &str) -> Self {
        let cc: CongestionConfig = spec.parse().expect("spec parses");
        Self::new(cc.resume(ResumeParams::new(SAVED_CWND, RTT)))
    }

    fn send(&mut self, n: usize) {
        for _ in 0..n {
            self.now += Duration::from_micros(1);
            self.pn += 1;
            self.ctl.on_sent(self.now, MSS, self.pn);
            self.flight.push_back((self.pn, self.now, MSS));
            self.in_flight += MSS;
        }
    }

    /// Sends while the window has room for a packet; returns the packets sent.
    fn fill(&mut self) -> usize {
        let mut n = 0;
        while self.in_flight + MSS <= self.ctl.window() && n < 100_000 {
            self.send(1);
            n += 1;
        }
        n
    }

    /// `d` later: an ACK batch of ACK-only packets (quinn calls `on_end_acks`), then
    /// whatever the window allows.
    fn step(&mut self, d: Duration) {
        self.now += d;
        self.ctl.on_end_acks(self.now, self.in_flight, None);
        self.fill();
    }

    /// Acknowledges the `n` oldest packets with RTT samples of `rtt`.
    fn ack_with(&mut self, n: usize, rtt: Duration) {
        let mut largest = None;
        for _ in 0..n {
            let Some((pn, sent, bytes)) = self.flight.pop_front() else {
                break;
            };
            self.in_flight -= bytes;
            self.ctl
                .on_ack(self.now, sent, bytes, false, RttInfo::fixed(rtt));
            largest = Some(pn);
        }
        self.ctl.on_end_acks(self.now, self.in_flight, largest);
    }

    fn ack(&mut self, n: usize) {
        self.ack_with(n, RTT);
    }

    /// The `n` oldest packets are declared lost (`ecn`: an ECN-CE mark, no bytes lost).
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

    /// Losses the controller answers as congestion, or until the phase changes: for plain
    /// CUBIC the first loss; for the profile, whose loss response tolerates isolated
    /// losses, more than 2 % of the flight in six reports (its round rule, BBRv3's
    /// `BBRLossThresh` and `BBRStartupFullLossCnt`).
    fn congest(&mut self) {
        let phase = self.phase();
        let per_report = (self.flight.len() / 40).max(1);
        for _ in 0..6 {
            self.lose(per_report, false);
            if self.phase() != phase {
                return;
            }
        }
    }

    /// The initial window goes out and is acknowledged one `rtt` later.
    fn reconnaissance(&mut self, rtt: Duration) {
        self.send((IW / MSS) as usize);
        self.now += rtt;
        self.ack_with((IW / MSS) as usize, rtt);
    }

    /// Reconnaissance at `RTT`, then window-limited: the jump.
    fn jump(spec: &str) -> Self {
        let mut s = Self::resumed(spec);
        s.reconnaissance(RTT);
        s.fill();
        assert_eq!(s.phase(), Phase::Unvalidated, "{spec}: {:?}", s.triggers());
        s
    }

    fn phase(&self) -> Phase {
        self.ctl.careful_resume().phase()
    }

    fn cwnd(&self) -> u64 {
        self.ctl.congestion_window()
    }

    fn pipesize(&self) -> u64 {
        self.ctl.careful_resume().pipesize()
    }

    /// The phase changes so far: (new phase, trigger).
    fn triggers(&self) -> Vec<(Phase, Option<Trigger>)> {
        self.log
            .events()
            .into_iter()
            .filter_map(|e| match e {
                CcEvent::CarefulResumePhaseUpdated { new, trigger, .. } => Some((new, trigger)),
                _ => None,
            })
            .collect()
    }

    fn last_trigger(&self) -> (Phase, Option<Trigger>) {
        *self.triggers().last().expect("a phase change")
    }
}

/// The controllers each window rule is checked on: plain CUBIC with the RFC's constants,
/// and the profile keeping RFC 9959.
fn specs() -> Vec<String> {
    vec!["cubic".to_string(), profile_keeping_rfc9959()]
}

/// `spec` with the Careful Resume option `opt` added to its `+cr` part.
fn with_cr_option(spec: &str, opt: &str) -> String {
    if spec.contains("+cr:") {
        spec.replacen("+cr:", &format!("+cr:{opt},"), 1)
    } else {
        format!("{spec}+cr:{opt}")
    }
}

fn endpoint(last: u8) -> RemoteEndpoint {
    RemoteEndpoint::new(
        Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)),
    )
}

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
}

fn saved(endpoint: RemoteEndpoint, cwnd: u64, saved_at: SystemTime) -> SavedCcParams {
    SavedCcParams {
        saved_cwnd: cwnd,
        saved_rtt: RTT,
        saved_remote_endpoint: endpoint,
        saved_at,
        lifetime: Duration::from_secs(3600),
    }
}

// ---- Sec. 3.1 Observing ----------------------------------------------------------------

/// Sec. 3.1: "A sender MUST NOT retain more than one set of CC parameters for a Remote
/// Endpoint, but the set of CC parameters SHOULD be updated (or replaced) after a later
/// observation of a path to the same Remote Endpoint."
#[test]
fn sec_3_1_one_set_of_parameters_per_remote_endpoint_replaced_by_a_later_observation() {
    let mut store = SavedStateStore::new(16, Duration::from_secs(3600));
    store.save(saved(endpoint(1), 400_000, at(0)));
    store.save(saved(endpoint(1), 800_000, at(10)));
    store.save(saved(endpoint(2), 100_000, at(20)));
    assert_eq!(store.len(), 2, "one set per Remote Endpoint");
    assert_eq!(store.get(&endpoint(1)).unwrap().saved_cwnd, 800_000);
    assert_eq!(
        store.take(&endpoint(1), at(30)),
        Ok(ResumeParams::new(800_000, RTT)),
        "the later observation replaced the earlier one"
    );
}

// ---- Sec. 3.2 Reconnaissance -------------------------------------------------------------

/// Sec. 3.2 "Detected congestion": "The sender stops using Careful Resume and MUST continue
/// using normal CC to react to the detected congestion." The resumed controller answers a
/// loss in Reconnaissance exactly as the same controller without saved parameters.
#[test]
fn sec_3_2_congestion_in_reconnaissance_is_answered_by_normal_cc() {
    for spec in specs() {
        let run = |resume: bool| {
            let cc: CongestionConfig = spec.parse().unwrap();
            let cc = if resume {
                cc.resume(ResumeParams::new(SAVED_CWND, RTT))
            } else {
                cc
            };
            let mut s = Sender::new(cc);
            s.send(10);
            s.now += RTT;
            s.ack(4);
            s.lose(3, false);
            s.ack(3);
            s.fill();
            s
        };
        let resumed = run(true);
        let fresh = run(false);
        assert_eq!(
            resumed.triggers()[1],
            (Phase::Normal, Some(Trigger::PacketLoss)),
            "{spec}"
        );
        assert_eq!(resumed.cwnd(), fresh.cwnd(), "{spec}");
        assert_eq!(resumed.ctl.ssthresh(), fresh.ctl.ssthresh(), "{spec}");
        assert!(resumed.cwnd() < SAVED_CWND / 2, "{spec}: no jump");
    }
}

/// Sec. 3.2 "Using saved_cwnd": "If another connection has already started to use the
/// saved_cwnd, the sender MUST exit Careful Resume and return to use normal CC." A saved
/// set is handed out once by the store, and once by a configuration (and its clones).
#[test]
fn sec_3_2_saved_parameters_are_used_by_one_connection_only() {
    let mut store = SavedStateStore::new(16, Duration::from_secs(3600));
    store.save(saved(endpoint(1), SAVED_CWND, at(0)));
    assert!(store.take(&endpoint(1), at(1)).is_ok());
    assert_eq!(
        store.take(&endpoint(1), at(2)),
        Err(ResumeRejected::NotSaved)
    );

    let cc = CongestionConfig::cubic().resume(ResumeParams::new(SAVED_CWND, RTT));
    let first = cc.clone().build_controller(MSS).unwrap();
    let second = cc.build_controller(MSS).unwrap();
    assert_eq!(first.careful_resume().phase(), Phase::Reconnaissance);
    assert_eq!(second.careful_resume().phase(), Phase::Normal);
    assert_eq!(second.careful_resume().restored(), None);
}

/// Sec. 3.2 "Path change": "If the Remote Endpoint is not the same as any
/// saved_remote_endpoint, or the sender receives a signal from the local stack indicating
/// that the path is now different to the observed path, the sender MUST stop using
/// Careful Resume and returns to use normal CC."
#[test]
fn sec_3_2_another_remote_endpoint_or_a_path_change_stops_careful_resume() {
    let set = saved(endpoint(1), SAVED_CWND, at(0));
    assert_eq!(
        set.check(&endpoint(2), at(1)),
        Err(ResumeRejected::PathChanged)
    );
    let other_interface = RemoteEndpoint::new(
        Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))),
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
    );
    assert_eq!(
        set.check(&other_interface, at(1)),
        Err(ResumeRejected::PathChanged)
    );
    assert!(set.check(&endpoint(1), at(1)).is_ok());

    // The local stack signals a path change during Reconnaissance: normal CC goes on, with
    // the window it had.
    for spec in specs() {
        let mut s = Sender::resumed(&spec);
        s.send(10);
        s.now += RTT;
        s.ack(5);
        let cwnd = s.cwnd();
        s.ctl.on_path_change(s.now);
        assert_eq!(
            s.last_trigger(),
            (Phase::Normal, Some(Trigger::PathChanged)),
            "{spec}"
        );
        assert_eq!(s.cwnd(), cwnd, "{spec}");
        s.ack(5);
        s.fill();
        assert!(s.cwnd() < SAVED_CWND / 2, "{spec}: no jump");
    }
}

/// Sec. 3.2 "Lifetime of saved CC parameters": "If the Lifetime of the observed CC
/// parameters is exceeded, this set of CC parameters are not used, the saved CC parameters
/// are deleted and MUST stop using Careful Resume and returns to use normal CC."
#[test]
fn sec_3_2_parameters_past_their_lifetime_are_deleted_and_not_used() {
    let set = saved(endpoint(1), SAVED_CWND, at(0));
    assert!(set.check(&endpoint(1), at(3599)).is_ok());
    assert_eq!(
        set.check(&endpoint(1), at(3600)),
        Err(ResumeRejected::Expired)
    );

    let mut store = SavedStateStore::new(16, Duration::from_secs(3600));
    store.save(set.clone());
    assert_eq!(
        store.take(&endpoint(1), at(3600)),
        Err(ResumeRejected::Expired)
    );
    assert!(store.get(&endpoint(1)).is_none(), "deleted");

    // The store's configured maximum Lifetime (Sec. 4.3.1) overrides a longer one.
    let mut store = SavedStateStore::new(16, Duration::from_secs(60));
    store.save(set.clone());
    assert_eq!(store.purge_expired(at(60)), 1);
    assert!(store.is_empty());
}

/// Sec. 3.2 "Minimum RTT too small": "If the minimum RTT recorded in the Reconnaissance
/// Phase is less than or equal to (saved_rtt / 2) [...], the sender MUST stop using
/// Careful Resume [...] and returns to use normal CC." The minimum is the phase's, not the
/// latest sample.
#[test]
fn sec_3_2_a_reconnaissance_minimum_rtt_of_half_the_saved_rtt_stops_careful_resume() {
    for spec in specs() {
        let mut s = Sender::resumed(&spec);
        s.send(10);
        s.now += RTT;
        s.ack_with(1, RTT / 2);
        s.ack_with(9, RTT);
        let cwnd = s.cwnd();
        s.fill();
        assert_eq!(
            s.last_trigger(),
            (Phase::Normal, Some(Trigger::RttNotValidated)),
            "{spec}"
        );
        assert!(s.cwnd() <= cwnd.max(2 * IW) * 3, "{spec}: no jump");
        assert!(s.cwnd() < SAVED_CWND / 2, "{spec}");
    }
}

// ---- Sec. 3.3 Unvalidated ----------------------------------------------------------------

/// Sec. 3.3 "Setting the jump_cwnd": "the jump_cwnd MUST be no more than half of the
/// saved_cwnd." Not by configuration (the spec refuses a larger fraction, the
/// configuration holds one to a half), and not by the window while packets sent before
/// the jump are acknowledged: the profile's start-up modifiers (growth, floor, jump,
/// bursts) do not raise it.
#[test]
fn sec_3_3_the_jump_is_at_most_half_the_saved_cwnd() {
    for spec in specs() {
        let mut s = Sender::jump(&spec);
        assert_eq!(s.ctl.careful_resume().jump_cwnd(), SAVED_CWND / 2, "{spec}");
        assert_eq!(s.cwnd(), SAVED_CWND / 2, "{spec}");
        // Acknowledgements of packets sent before the jump (the profile jumps as soon as
        // the path is confirmed, with one packet out), and time passing.
        let pre_jump = (s.pipesize() / MSS) as usize;
        for _ in 0..pre_jump.saturating_sub(1) {
            s.now += Duration::from_millis(5);
            s.ack(1);
            s.fill();
            assert_eq!(s.phase(), Phase::Unvalidated, "{spec}");
            assert_eq!(s.cwnd(), SAVED_CWND / 2, "{spec}");
        }
        while s.phase() == Phase::Unvalidated {
            s.step(RTT / 50);
            assert!(s.cwnd() <= SAVED_CWND / 2, "{spec}: {}", s.cwnd());
        }
    }
    assert!("cubic+cr:jump=0.6".parse::<CongestionConfig>().is_err());
    let mut s = Sender::new(
        CongestionConfig::cubic()
            .careful_resume(CarefulResumeConfig {
                jump_fraction: 0.9,
                ..Default::default()
            })
            .resume(ResumeParams::new(SAVED_CWND, RTT)),
    );
    s.reconnaissance(RTT);
    s.fill();
    assert_eq!(s.phase(), Phase::Unvalidated);
    assert_eq!(s.cwnd(), SAVED_CWND / 2);
}

/// Sec. 3.3 "Pacing transmission": "All packets sent in the Unvalidated Phase MUST use
/// pacing based on the current RTT." The required rate is `jump_cwnd / current RTT` and
/// follows the latest RTT sample; the window releases no more than one burst (the IW)
/// plus that rate over the time since the jump.
#[test]
fn sec_3_3_unvalidated_packets_are_paced_on_the_current_rtt() {
    for spec in specs() {
        let mut s = Sender::jump(&with_cr_option(&spec, "no-pacer"));
        let jump = s.cwnd();
        let pacing = s.ctl.pacing().expect("pacing while unvalidated");
        assert_eq!(pacing.rtt, RTT, "{spec}");
        assert!((pacing.rate_bytes_per_sec - jump as f64 / RTT.as_secs_f64()).abs() < 1e-6);
        assert_eq!(pacing.max_burst, IW, "{spec}");

        // The current RTT grows to 900 ms (a pre-jump packet's sample): the rate follows.
        s.now += Duration::from_millis(10);
        s.ack_with(1, RTT * 3 / 2);
        assert_eq!(s.phase(), Phase::Unvalidated, "{spec}");
        let pacing = s.ctl.pacing().unwrap();
        assert_eq!(pacing.rtt, RTT * 3 / 2, "{spec}");
        assert!(
            (pacing.rate_bytes_per_sec - jump as f64 / (RTT * 3 / 2).as_secs_f64()).abs() < 1e-6
        );

        // What the window lets out follows the paced credit, never the whole jump at once.
        let start = s.now;
        let flight_at_start = s.in_flight;
        s.fill();
        let mut sent = s.in_flight - flight_at_start;
        assert!(sent < jump / 4, "{spec}: {sent} B at once");
        while s.phase() == Phase::Unvalidated {
            s.step(RTT / 50);
            sent = s.in_flight - flight_at_start;
            let elapsed = (s.now - start).as_secs_f64() + 0.010;
            let allowed = IW as f64 + jump as f64 * elapsed / (RTT * 3 / 2).as_secs_f64();
            assert!(
                sent as f64 <= allowed + MSS as f64,
                "{spec}: {sent} > {allowed}"
            );
        }
    }
}

/// Sec. 3.3 "Confirming the path during transmission": "If the sender determines that it
/// is not valid to use the previous CC parameters due to a detected path change (e.g., a
/// change in the RTT or an explicit signal indicating a path change), the Safe Retreat
/// Phase MUST be entered".
#[test]
fn sec_3_3_a_path_change_while_unvalidated_enters_safe_retreat() {
    for spec in specs() {
        // An explicit signal.
        let mut s = Sender::jump(&spec);
        s.ctl.on_path_change(s.now);
        assert_eq!(
            s.last_trigger(),
            (Phase::SafeRetreat, Some(Trigger::PathChanged)),
            "{spec}"
        );
        assert!(s.cwnd() <= s.pipesize() / 2 + 2 * MSS, "{spec}");
        assert!(s.ctl.careful_resume().invalidated());

        // An RTT sample at most half the saved RTT.
        let mut s = Sender::jump(&spec);
        s.now += Duration::from_millis(10);
        s.ack_with(1, RTT / 2);
        assert_eq!(
            s.last_trigger(),
            (Phase::SafeRetreat, Some(Trigger::PathChanged)),
            "{spec}"
        );
    }
}

/// Sec. 3.3 "Detected congestion": "If the sender detects congestion (e.g., packet loss or
/// ECN-CE marking), the Safe Retreat Phase MUST be entered". One lost packet is enough, on
/// the profile too (its loss filter would let one random loss pass; it does not hide it
/// from Careful Resume without `loss-filter:cr`).
#[test]
fn sec_3_3_congestion_while_unvalidated_enters_safe_retreat() {
    for spec in specs() {
        for (ecn, trigger) in [(false, Trigger::PacketLoss), (true, Trigger::EcnCe)] {
            let mut s = Sender::jump(&spec);
            s.now += RTT / 4;
            s.lose(1, ecn);
            assert_eq!(
                s.last_trigger(),
                (Phase::SafeRetreat, Some(trigger)),
                "{spec}"
            );
            assert!(s.ctl.careful_resume().invalidated(), "{spec}");
        }
    }
}

/// Sec. 3.3 "Check flight_size": "Otherwise, the CWND MUST be set to the flight_size and
/// the sender progresses to the Validating Phase." (Otherwise: flight_size is neither
/// below the IW nor at most the PipeSize.)
#[test]
fn sec_3_3_the_window_is_the_flight_size_on_entering_validating() {
    for spec in specs() {
        let mut s = Sender::jump(&spec);
        let mut steps = 0;
        while s.phase() == Phase::Unvalidated && steps < 1000 {
            s.step(RTT / 50);
            steps += 1;
        }
        assert_eq!(s.phase(), Phase::Validating, "{spec}: {:?}", s.triggers());
        assert!(s.in_flight > s.pipesize() && s.in_flight >= IW, "{spec}");
        let event_cwnd = s
            .log
            .events()
            .into_iter()
            .rev()
            .find_map(|e| match e {
                CcEvent::CarefulResumePhaseUpdated {
                    new: Phase::Validating,
                    cwnd,
                    ..
                } => Some(cwnd),
                _ => None,
            })
            .unwrap();
        assert_eq!(event_cwnd, s.in_flight, "{spec}");
        assert_eq!(s.cwnd(), s.in_flight, "{spec}");
    }
}

// ---- Sec. 3.4 Validating -----------------------------------------------------------------

/// Sec. 3.4 "Detected congestion": "If the sender determines that congestion was detected
/// (e.g., packet loss or ECN-CE marking), Careful Resume enters the Safe Retreat Phase".
/// Not a key word, but the rule the Safe Retreat MUSTs of Sec. 3.5 rest on. The profile's
/// loss response decides what congestion is here, as everywhere after the jump: one
/// isolated loss is not (`loss-filter:cr=validating`), losses it answers are.
#[test]
fn sec_3_4_congestion_while_validating_enters_safe_retreat() {
    for spec in specs() {
        let mut s = Sender::jump(&spec);
        while s.phase() == Phase::Unvalidated {
            s.step(RTT / 50);
        }
        assert_eq!(s.phase(), Phase::Validating, "{spec}");
        if spec != "cubic" {
            s.lose(1, false);
            assert_eq!(s.phase(), Phase::Validating, "{spec}: an isolated loss");
        }
        s.congest();
        assert_eq!(
            s.last_trigger(),
            (Phase::SafeRetreat, Some(Trigger::PacketLoss)),
            "{spec}"
        );
    }
}

// ---- Sec. 3.5 Safe Retreat ---------------------------------------------------------------

/// Drives `spec` to Safe Retreat by a loss while unvalidated; returns the sender, the
/// PipeSize at the retreat and the last packet sent before it.
fn retreated(spec: &str) -> (Sender, u64, u64) {
    let mut s = Sender::jump(spec);
    for _ in 0..10 {
        s.step(RTT / 50);
    }
    s.now += RTT / 10;
    let pipesize = s.pipesize();
    s.lose(1, false);
    assert_eq!(s.phase(), Phase::SafeRetreat, "{spec}: {:?}", s.triggers());
    let last = s.pn;
    (s, pipesize, last)
}

/// Sec. 3.5 "Re-initializing CWND": "The CWND MUST be reduced to no more than (PipeSize/2)."
/// QUIC's minimum window (two packets, RFC 9002 Sec. 7.2, which Sec. 3.5's note cites) is
/// the floor: a sender that jumped with one packet out and has no unvalidated packet
/// acknowledged yet retreats to it.
#[test]
fn sec_3_5_safe_retreat_reduces_the_window_to_at_most_half_the_pipesize() {
    for spec in specs() {
        // From the Unvalidated Phase.
        let (s, pipesize, _) = retreated(&spec);
        assert_eq!(s.cwnd(), (pipesize / 2).max(2 * MSS), "{spec}");

        // From the Validating Phase, with half the unvalidated packets acknowledged.
        let mut s = Sender::jump(&spec);
        while s.phase() == Phase::Unvalidated {
            s.step(RTT / 50);
        }
        assert_eq!(s.phase(), Phase::Validating, "{spec}");
        s.now += RTT / 2;
        let half = s.flight.len() / 2;
        for _ in 0..half {
            s.ack(1);
        }
        let pipesize = s.pipesize();
        assert!(pipesize > 100 * MSS, "{spec}: {pipesize}");
        s.congest();
        assert_eq!(s.phase(), Phase::SafeRetreat, "{spec}");
        assert_eq!(s.cwnd(), pipesize / 2, "{spec}");
    }
    // A configured fraction is at most one half.
    assert!("cubic+cr:retreat=0.9".parse::<CongestionConfig>().is_err());
    let (s, pipesize, _) = retreated("cubic+cr:retreat=0.5");
    assert_eq!(s.cwnd(), (pipesize / 2).max(2 * MSS));
}

/// Sec. 3.5 "Maintaining CWND": "The CWND MUST NOT be increased in the Safe Retreat
/// Phase." Not by acknowledgements (of unvalidated packets or of new ones), not by the
/// profile's floor, growth or jump, not by `+rollback`'s undo.
#[test]
fn sec_3_5_the_window_does_not_grow_in_safe_retreat() {
    for spec in specs()
        .into_iter()
        .chain(["cubic+rollback".to_string(), "cubic+search".to_string()])
    {
        let (mut s, _, _) = retreated(&spec);
        let cwnd = s.cwnd();
        let mut acks = 0;
        while s.phase() == Phase::SafeRetreat && !s.flight.is_empty() {
            s.now += Duration::from_millis(2);
            s.ack(2);
            acks += 2;
            assert!(
                s.cwnd() <= cwnd,
                "{spec}: {} > {cwnd} after {acks}",
                s.cwnd()
            );
            s.fill();
        }
        assert!(
            acks > 100,
            "{spec}: the retreat lasted {acks} acknowledgements"
        );
        assert_eq!(
            s.last_trigger(),
            (Phase::Normal, Some(Trigger::ExitRecovery)),
            "{spec}"
        );
    }
}

/// Sec. 3.5 "Acknowledgement of unvalidated packets": "When the last packet (or a later
/// packet) sent during the Unvalidated Phase has been acknowledged, the sender stops using
/// Careful Resume and returns to use normal CC. On leaving the Safe Retreat Phase, the
/// ssthresh MUST be set to no larger than the most recently measured PipeSize * Beta,
/// where Beta is a scaling factor between 0.5 and 1." Beta's default is 0.5; a configured
/// Beta is held to [0.5, 1].
#[test]
fn sec_3_5_leaving_safe_retreat_sets_ssthresh_to_at_most_pipesize_times_beta() {
    for (spec, beta) in [
        ("cubic".to_string(), 0.5),
        (profile_keeping_rfc9959(), 0.5),
        ("cubic+cr:beta=0.7".to_string(), 0.7),
    ] {
        let (mut s, _, last) = retreated(&spec);
        while s.phase() == Phase::SafeRetreat && !s.flight.is_empty() {
            s.now += Duration::from_millis(2);
            let acked = s.flight.iter().take(2).next_back().unwrap().0;
            s.ack(2);
            assert_eq!(
                s.phase() == Phase::SafeRetreat,
                acked < last,
                "{spec}: packet {acked} acknowledged, the last before the retreat {last}"
            );
            s.fill();
        }
        assert_eq!(s.phase(), Phase::Normal, "{spec}");
        let pipesize = s.pipesize();
        let cap = (pipesize as f64 * beta) as u64;
        assert!(
            s.ctl.ssthresh() <= cap.max(2 * MSS),
            "{spec}: ssthresh {} > PipeSize {pipesize} x {beta}",
            s.ctl.ssthresh()
        );
    }
    assert!("cubic+cr:beta=0.3".parse::<CongestionConfig>().is_err());
}

// ---- Default configuration ---------------------------------------------------------------

/// The RFC's constants are the defaults: jump 1/2, retreat 1/2, Beta 0.5, the RTT bounds
/// 1/2 and 10, pacing on.
#[test]
fn the_defaults_are_the_rfcs_constants() {
    let c = CarefulResumeConfig::default();
    assert!(c.enabled);
    assert_eq!(c.jump_fraction, 0.5);
    assert_eq!(c.retreat_fraction, 0.5);
    assert_eq!(c.beta, 0.5);
    assert_eq!(c.min_rtt_factor, 0.5);
    assert_eq!(c.max_rtt_factor, 10.0);
    assert!(c.pace_unvalidated);
    let profile: CongestionConfig = profile_keeping_rfc9959().parse().unwrap();
    let text = profile.to_string();
    for departing in ["unpaced", "jump=", "retreat=", "beta=", "min-rtt="] {
        assert!(!text.contains(departing), "{text} has {departing}");
    }
    // and no bare `loss-filter:cr` (`profile_keeping_rfc9959` asserts it).
}
