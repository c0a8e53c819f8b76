//! [`CarefulResume`]: the phases' state machine of one connection (RFC 9959 Sec. 3, 4).
//! It reads the controller's window ([`Window`]) and answers with phase changes
//! ([`Transition`]) the controller applies ([`super::protocol`]).

use std::time::Duration;

use crate::controller::RttInfo;
use crate::event::{CcEvent, Emitter};

use super::config::CarefulResumeConfig;
use super::observer::{NotObserved, Observation, Observer};
use super::pacing::{JumpPacer, PacingRequirement};
use super::phase::{CarefulResumePhase, CarefulResumeTrigger};
use super::protocol::{AckEffect, Effect, Transition, Window};
use super::saved::ResumeParams;

/// Careful Resume state of one connection, kept by the [`crate::Controller`] (always
/// present: without saved parameters it stays in Normal and only observes).
#[derive(Debug, Clone)]
pub struct CarefulResume {
    /// Constants and switches.
    config: CarefulResumeConfig,
    /// The saved parameters resumed from (none: observe only).
    restored: Option<ResumeParams>,
    /// The current phase.
    phase: CarefulResumePhase,
    /// Whether the first phase was reported (at the first packet sent).
    announced: bool,
    /// The initial window, bytes.
    iw: u64,
    /// `flight_size`: bytes sent and neither acknowledged nor lost.
    flight: u64,
    /// Packet number of the last packet sent.
    last_sent_pn: Option<u64>,
    /// Bytes acknowledged in the Reconnaissance Phase.
    recon_acked: u64,
    /// Minimum RTT of the Reconnaissance Phase.
    recon_min_rtt: Duration,
    /// The latest RTT sample (the "current RTT" of Sec. 3.3, 4.3.2).
    current_rtt: Duration,
    /// Whether the stack reported the application as the limit at the latest
    /// acknowledgement.
    app_limited: bool,
    /// Sec. 2.4 PipeSize, bytes.
    pipesize: u64,
    /// The window of the jump, bytes.
    jump_cwnd: u64,
    /// When the Unvalidated Phase began.
    unvalidated_start: Duration,
    /// The first packet sent after the jump.
    first_unvalidated_pn: Option<u64>,
    /// The last packet sent in the Unvalidated Phase.
    last_unvalidated_pn: Option<u64>,
    /// Safe Retreat ends when this packet is acknowledged.
    retreat_end_pn: Option<u64>,
    /// Releases the jump at `jump_cwnd / RTT` in the Unvalidated Phase.
    pacer: JumpPacer,
    /// Whether the saved parameters proved wrong.
    invalidated: bool,
    /// Measures what a later connection may resume from.
    observer: Observer,
}

impl CarefulResume {
    /// State for a connection whose initial window is `iw` bytes, resuming from `restored`
    /// if Careful Resume is enabled.
    pub(crate) fn new(
        config: CarefulResumeConfig,
        restored: Option<ResumeParams>,
        iw: u64,
    ) -> Self {
        let restored = restored.filter(|_| config.enabled);
        Self {
            phase: if restored.is_some() {
                CarefulResumePhase::Reconnaissance
            } else {
                CarefulResumePhase::Normal
            },
            config,
            restored,
            announced: false,
            iw,
            flight: 0,
            last_sent_pn: None,
            recon_acked: 0,
            recon_min_rtt: Duration::MAX,
            current_rtt: Duration::ZERO,
            app_limited: false,
            pipesize: 0,
            jump_cwnd: 0,
            unvalidated_start: Duration::ZERO,
            first_unvalidated_pn: None,
            last_unvalidated_pn: None,
            retreat_end_pn: None,
            pacer: JumpPacer::new(),
            invalidated: false,
            observer: Observer::new(),
        }
    }

    /// The current phase (Normal when not resuming).
    pub fn phase(&self) -> CarefulResumePhase {
        self.phase
    }

    /// The configuration.
    pub fn config(&self) -> &CarefulResumeConfig {
        &self.config
    }

    /// The parameters this connection resumes from, if any.
    pub fn restored(&self) -> Option<ResumeParams> {
        self.restored
    }

    /// Sec. 2.4 PipeSize, bytes (0 before the Unvalidated Phase).
    pub fn pipesize(&self) -> u64 {
        self.pipesize
    }

    /// The window of the jump, bytes (0 if there was none).
    pub fn jump_cwnd(&self) -> u64 {
        self.jump_cwnd
    }

    /// The sender's `flight_size` estimate, bytes.
    pub fn flight_size(&self) -> u64 {
        self.flight
    }

    /// Whether the restored parameters proved wrong (Safe Retreat, or persistent
    /// congestion after the jump): the sender deletes its saved set (Sec. 3.5 "Removing
    /// saved information") and saves only a new observation.
    pub fn invalidated(&self) -> bool {
        self.invalidated
    }

    /// Whether the jump was made and Careful Resume has not ended yet (Unvalidated,
    /// Validating, Safe Retreat).
    pub fn resuming(&self) -> bool {
        matches!(
            self.phase,
            CarefulResumePhase::Unvalidated
                | CarefulResumePhase::Validating
                | CarefulResumePhase::SafeRetreat
        )
    }

    /// The pacing required now (Unvalidated Phase only).
    pub fn pacing(&self) -> Option<PacingRequirement> {
        (self.phase == CarefulResumePhase::Unvalidated).then(|| {
            let rtt = self.pacing_rtt();
            PacingRequirement {
                rate_bytes_per_sec: self.jump_cwnd as f64 / rtt.as_secs_f64(),
                max_burst: self.max_burst(),
                jump_cwnd: self.jump_cwnd,
                rtt,
            }
        })
    }

    /// The current capacity observation (Sec. 3.1, 4.1); observing only happens in the
    /// Normal phase (Sec. 4.6: "Once a sender is no longer using Careful Resume, the sender
    /// is permitted to start observing"; Appendix A).
    pub fn observe(&self) -> Result<Observation, NotObserved> {
        if self.phase != CarefulResumePhase::Normal {
            return Err(NotObserved::Resuming(self.phase));
        }
        self.observer
            .observation(self.iw, self.config.min_observe_iw, self.config.lifetime)
    }

    fn max_burst(&self) -> u64 {
        self.config.max_burst.unwrap_or(self.iw)
    }

    fn pacing_rtt(&self) -> Duration {
        self.current_rtt.max(Duration::from_micros(1))
    }

    /// Bytes that may be in flight given the congestion window `cwnd`: `cwnd`, except in
    /// the Unvalidated Phase, where the jump is released at the paced rate.
    pub(crate) fn window(&self, cwnd: u64) -> u64 {
        if self.phase != CarefulResumePhase::Unvalidated || !self.config.pace_unvalidated {
            return cwnd;
        }
        let mut window = self.flight.saturating_add(self.pacer.unsent());
        if let Some(gain) = self.config.platform_pacer_gain.filter(|g| *g >= 1.0) {
            window = window.max((cwnd as f64 / gain) as u64);
        }
        window.min(cwnd)
    }

    fn advance(&mut self, now: Duration) {
        if self.phase == CarefulResumePhase::Unvalidated {
            self.pacer.advance(now, self.jump_cwnd, self.pacing_rtt());
        }
    }

    fn to(
        &mut self,
        phase: CarefulResumePhase,
        trigger: Option<CarefulResumeTrigger>,
        effect: Effect,
    ) -> Transition {
        let old = std::mem::replace(&mut self.phase, phase);
        if phase == CarefulResumePhase::Normal {
            self.observer.restart_round();
        }
        Transition {
            old,
            trigger,
            effect,
        }
    }

    /// Reports a phase change the controller applied (state after the change).
    pub(crate) fn report(
        &self,
        events: &Emitter,
        now: Duration,
        t: &Transition,
        cwnd: u64,
        ssthresh: u64,
    ) {
        self.emit(events, now, Some(t.old), t.trigger, cwnd, ssthresh);
    }

    fn emit(
        &self,
        events: &Emitter,
        now: Duration,
        old: Option<CarefulResumePhase>,
        trigger: Option<CarefulResumeTrigger>,
        cwnd: u64,
        ssthresh: u64,
    ) {
        let restored = self
            .restored
            .unwrap_or(ResumeParams::new(0, Duration::ZERO));
        events.emit(|| CcEvent::CarefulResumePhaseUpdated {
            at: now,
            old,
            new: self.phase,
            trigger,
            pipesize: self.pipesize,
            first_unvalidated_packet: self.first_unvalidated_pn,
            last_unvalidated_packet: self.last_unvalidated_pn,
            cwnd,
            ssthresh,
            saved_cwnd: restored.saved_cwnd,
            saved_rtt: restored.saved_rtt,
        });
    }

    /// `bytes` were sent at `now`, the last packet numbered `pn`.
    pub(crate) fn on_sent(
        &mut self,
        now: Duration,
        bytes: u64,
        pn: u64,
        w: Window,
        events: &Emitter,
    ) -> Option<Transition> {
        if !self.announced {
            self.announced = true;
            if self.phase == CarefulResumePhase::Reconnaissance {
                self.emit(events, now, None, None, w.cwnd, w.ssthresh);
            }
        }
        self.advance(now);
        self.flight = self.flight.saturating_add(bytes);
        self.last_sent_pn = Some(pn);
        match self.phase {
            CarefulResumePhase::Reconnaissance => self.try_jump(now, w),
            CarefulResumePhase::Unvalidated => {
                self.pacer.on_sent(bytes);
                if self.window_full(&w) {
                    // Sec. 3.3 "Completed sending all unvalidated packets".
                    Some(self.leave_unvalidated(CarefulResumeTrigger::LastUnvalidatedPacketSent))
                } else {
                    self.check_unvalidated_time(now)
                }
            }
            _ => None,
        }
    }

    /// No room for another maximum-sized packet in the CWND: quinn-proto sends only while
    /// `in_flight + MTU < window`, so "full" is `flight + MSS >= CWND`.
    fn window_full(&self, w: &Window) -> bool {
        self.flight.saturating_add(w.mss) >= w.cwnd
    }

    /// Sec. 3.2 "Path confirmed" and the conditions of the jump.
    fn try_jump(&mut self, now: Duration, w: Window) -> Option<Transition> {
        let saved = self.restored?;
        // Sec. 3.2: an ACK acknowledged all the initial data (one IW) without congestion.
        // quinn-proto sends only while `in_flight + MTU < window`, so its initial flight is
        // one packet short of the IW: that flight, acknowledged, is all the initial data.
        let confirmed = self.recon_acked.saturating_add(w.mss) >= self.iw;
        // Sec. 4.2, qlog `congestion_window_limited`: more to send than the CWND allows,
        // i.e. the window is full and the application was not the limit.
        let window_limited = (self.window_full(&w) || !self.config.defer_jump) && !self.app_limited;
        if !confirmed || !window_limited {
            return None;
        }
        // Sec. 3.2 "Minimum RTT too small", Sec. 4.2.1 (Note 1: the phase's minimum, checked
        // on entry to the Unvalidated Phase).
        let rtt = self.recon_min_rtt.as_secs_f64();
        let saved_rtt = saved.saved_rtt.as_secs_f64();
        if rtt <= saved_rtt * self.config.min_rtt_factor
            || rtt > saved_rtt * self.config.max_rtt_factor
        {
            return Some(self.to(
                CarefulResumePhase::Normal,
                Some(CarefulResumeTrigger::RttNotValidated),
                Effect::None,
            ));
        }
        // Sec. 3.3 "Setting the jump_cwnd", Sec. 4.3.2: jump_cwnd = min(max_jump,
        // saved_cwnd / 2).
        let mut jump = (saved.saved_cwnd as f64 * self.config.jump_fraction()) as u64;
        if let Some(max) = self.config.max_jump {
            jump = jump.min(max);
        }
        jump = jump.min(w.max_window);
        if jump <= w.cwnd {
            // Nothing to jump to: the window already got there by normal CC.
            return Some(self.to(CarefulResumePhase::Normal, None, Effect::None));
        }
        // Sec. 3.3 "Initialising PipeSize": the flight_size on entry.
        self.pipesize = self.flight;
        self.jump_cwnd = jump;
        self.unvalidated_start = now;
        self.first_unvalidated_pn = Some(self.last_sent_pn.map_or(0, |pn| pn + 1));
        self.pacer.start(now, self.max_burst());
        Some(self.to(
            CarefulResumePhase::Unvalidated,
            Some(CarefulResumeTrigger::CongestionWindowLimited),
            Effect::Jump(jump),
        ))
    }

    /// Sec. 3.3 "Limiting time in the Unvalidated Phase".
    fn check_unvalidated_time(&mut self, now: Duration) -> Option<Transition> {
        (now.saturating_sub(self.unvalidated_start) > self.current_rtt)
            .then(|| self.leave_unvalidated(CarefulResumeTrigger::RttExceeded))
    }

    /// Sec. 3.3 "Check flight_size" on leaving the Unvalidated Phase.
    fn leave_unvalidated(&mut self, trigger: CarefulResumeTrigger) -> Transition {
        self.last_unvalidated_pn = self.last_sent_pn;
        if self.flight < self.iw || self.flight <= self.pipesize {
            // CWND = PipeSize, not below the IW absent congestion; normal CC.
            let cwnd = self.pipesize.max(self.iw);
            self.to(
                CarefulResumePhase::Normal,
                Some(CarefulResumeTrigger::RateLimited),
                Effect::Resume(Some(cwnd)),
            )
        } else {
            self.to(
                CarefulResumePhase::Validating,
                Some(trigger),
                Effect::SetCwnd(self.flight),
            )
        }
    }

    /// A packet of `bytes` sent at `sent` was acknowledged at `now`.
    pub(crate) fn on_ack(
        &mut self,
        now: Duration,
        sent: Duration,
        bytes: u64,
        app_limited: bool,
        rtt: &RttInfo,
    ) -> AckEffect {
        self.advance(now);
        self.current_rtt = rtt.latest;
        self.app_limited = app_limited;
        self.flight = self.flight.saturating_sub(bytes);
        self.observer.on_rtt(rtt.latest);
        // Sec. 3.3, 3.4, 3.5 "Tracking PipeSize": acknowledged unvalidated data.
        let unvalidated = sent > self.unvalidated_start;
        match self.phase {
            CarefulResumePhase::Normal => {
                self.observer.on_ack(bytes, app_limited);
                AckEffect::Normal
            }
            CarefulResumePhase::Reconnaissance => {
                self.recon_acked = self.recon_acked.saturating_add(bytes);
                self.recon_min_rtt = self.recon_min_rtt.min(rtt.latest);
                AckEffect::Normal
            }
            CarefulResumePhase::Unvalidated => {
                if unvalidated {
                    self.pipesize = self.pipesize.saturating_add(bytes);
                }
                // Sec. 3.3 "Confirming the path during transmission", Sec. 4.2.1 Note 2.
                let saved_rtt = self.restored.map_or(Duration::ZERO, |r| r.saved_rtt);
                if rtt.latest.as_secs_f64() <= saved_rtt.as_secs_f64() * self.config.min_rtt_factor
                {
                    return AckEffect::Transition(
                        self.retreat(CarefulResumeTrigger::PathChanged, None),
                    );
                }
                AckEffect::Hold
            }
            CarefulResumePhase::Validating => {
                if unvalidated {
                    self.pipesize = self.pipesize.saturating_add(bytes);
                }
                // Sec. 3.4 "Updating CWND": the normal rules of the congestion controller.
                AckEffect::Normal
            }
            CarefulResumePhase::SafeRetreat => {
                if unvalidated {
                    self.pipesize = self.pipesize.saturating_add(bytes);
                }
                AckEffect::Hold
            }
        }
    }

    /// A batch of acknowledgements ended; `in_flight` is the sender's exact flight.
    pub(crate) fn on_end_acks(
        &mut self,
        now: Duration,
        in_flight: u64,
        largest_acked: Option<u64>,
    ) -> Option<Transition> {
        self.advance(now);
        self.flight = in_flight;
        let acked = |pn: Option<u64>| matches!((largest_acked, pn), (Some(l), Some(p)) if l >= p);
        match self.phase {
            CarefulResumePhase::Unvalidated => {
                if acked(self.first_unvalidated_pn) {
                    Some(self.leave_unvalidated(
                        CarefulResumeTrigger::FirstUnvalidatedPacketAcknowledged,
                    ))
                } else {
                    self.check_unvalidated_time(now)
                }
            }
            // Sec. 3.4 "Receiving acknowledgement of the unvalidated packets".
            CarefulResumePhase::Validating if acked(self.last_unvalidated_pn) => {
                let effect = match (self.config.slow_start_cap, self.restored) {
                    (Some(f), Some(saved)) => {
                        Effect::CapSsthresh((saved.saved_cwnd as f64 * f) as u64)
                    }
                    _ => Effect::Resume(None),
                };
                Some(self.to(
                    CarefulResumePhase::Normal,
                    Some(CarefulResumeTrigger::LastUnvalidatedPacketAcknowledged),
                    effect,
                ))
            }
            // Sec. 3.5 "Acknowledgement of unvalidated packets": ssthresh <= PipeSize x Beta.
            CarefulResumePhase::SafeRetreat if acked(self.retreat_end_pn) => Some(self.to(
                CarefulResumePhase::Normal,
                Some(CarefulResumeTrigger::ExitRecovery),
                Effect::RetreatDone {
                    cap: self.ssthresh_cap(),
                    pipesize: self.pipesize,
                },
            )),
            _ => None,
        }
    }

    fn ssthresh_cap(&self) -> u64 {
        (self.pipesize as f64 * self.config.beta()) as u64
    }

    /// A round trip ended (the controller's round boundary): the observer closes its round
    /// ([`Observer::on_round_end`]).
    pub(crate) fn on_round_end(&mut self, now: Duration) {
        let normal = self.phase == CarefulResumePhase::Normal;
        self.observer.on_round_end(now, normal);
    }

    /// Congestion was detected (`lost_bytes == 0`: an ECN-CE mark, as quinn reports it).
    pub(crate) fn on_congestion(
        &mut self,
        persistent: bool,
        lost_bytes: u64,
        w: Window,
    ) -> Option<Transition> {
        self.flight = self.flight.saturating_sub(lost_bytes);
        let trigger = if lost_bytes == 0 {
            CarefulResumeTrigger::EcnCe
        } else {
            CarefulResumeTrigger::PacketLoss
        };
        match self.phase {
            // Sec. 3.2 "Detected congestion": normal CC reacts; Careful Resume stops.
            CarefulResumePhase::Reconnaissance => {
                Some(self.to(CarefulResumePhase::Normal, Some(trigger), Effect::None))
            }
            // Sec. 3.6: persistent congestion ends Careful Resume.
            CarefulResumePhase::Unvalidated
            | CarefulResumePhase::Validating
            | CarefulResumePhase::SafeRetreat
                if persistent =>
            {
                self.invalidated = true;
                let cap = self.ssthresh_cap();
                Some(self.to(
                    CarefulResumePhase::Normal,
                    Some(trigger),
                    Effect::CapSsthresh(cap),
                ))
            }
            // Sec. 3.3, 3.4 "Detected congestion".
            CarefulResumePhase::Unvalidated | CarefulResumePhase::Validating => {
                Some(self.retreat(trigger, Some(w)))
            }
            _ => None,
        }
    }

    /// The sender learnt that the path changed (Sec. 3.2 "Path change", Sec. 3.3
    /// "Confirming the path during transmission").
    pub(crate) fn on_path_change(&mut self, w: Window) -> Option<Transition> {
        match self.phase {
            CarefulResumePhase::Reconnaissance => Some(self.to(
                CarefulResumePhase::Normal,
                Some(CarefulResumeTrigger::PathChanged),
                Effect::None,
            )),
            CarefulResumePhase::Unvalidated => {
                Some(self.retreat(CarefulResumeTrigger::PathChanged, Some(w)))
            }
            _ => None,
        }
    }

    /// The configured slow start exited without loss during Reconnaissance.
    pub(crate) fn on_slow_start_exit(&mut self) -> Option<Transition> {
        (self.phase == CarefulResumePhase::Reconnaissance && self.config.delay_exit_stops_resume)
            .then(|| {
                self.to(
                    CarefulResumePhase::Normal,
                    Some(CarefulResumeTrigger::RttNotValidated),
                    Effect::None,
                )
            })
    }

    /// Sec. 3.5: enter Safe Retreat.
    fn retreat(&mut self, trigger: CarefulResumeTrigger, w: Option<Window>) -> Transition {
        self.invalidated = true;
        if self.last_unvalidated_pn.is_none() {
            self.last_unvalidated_pn = self.last_sent_pn;
        }
        // Sec. 3.5 "Loss Recovery": until the last packet sent in the Unvalidated or
        // Validating Phase is acknowledged.
        self.retreat_end_pn = self.last_sent_pn;
        // Sec. 3.5 "Re-initializing CWND": no more than PipeSize / 2; the controller floors
        // it at QUIC's minimum window of two packets.
        let mut cwnd = (self.pipesize as f64 * self.config.retreat_fraction()) as u64;
        if let Some(w) = w {
            cwnd = cwnd.min(w.cwnd);
        }
        self.to(
            CarefulResumePhase::SafeRetreat,
            Some(trigger),
            Effect::Retreat(cwnd),
        )
    }
}
