//! The protocol between Careful Resume and the controller, in one place: what Careful
//! Resume reads of the window ([`Window`]), what a phase change does to it ([`Effect`],
//! carried out by [`Effect::apply`] through the few primitives of [`ResumedController`]),
//! and what the controller does with an acknowledgement in each phase ([`AckEffect`]).
//!
//! The controller calls the state machine ([`super::CarefulResume`]) from each of its
//! hooks (see the order of operations in [`crate::controller`]); every [`Transition`] it
//! gets back it applies at once with [`Effect::apply`], then reports with
//! [`super::CarefulResume::report`] (a `CarefulResumePhaseUpdated` event with the window
//! after the change).

use std::time::Duration;

use super::phase::{CarefulResumePhase, CarefulResumeTrigger};

/// The controller's window variables Careful Resume reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// The congestion window, bytes.
    pub cwnd: u64,
    /// The slow-start threshold, bytes (`u64::MAX` while unset).
    pub ssthresh: u64,
    /// The maximum datagram size, bytes.
    pub mss: u64,
    /// The largest window the controller allows, bytes.
    pub max_window: u64,
}

/// What a phase change does to the controller's window; [`Effect::apply`] says exactly
/// how the controller carries it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Effect {
    /// Nothing (Reconnaissance -> Normal: normal CC goes on).
    None,
    /// Reconnaissance -> Unvalidated: `CWND = jump_cwnd`.
    Jump(u64),
    /// Unvalidated -> Validating: `CWND = flight_size`.
    SetCwnd(u64),
    /// Back to Normal without congestion, optionally setting the window.
    Resume(Option<u64>),
    /// Entering Safe Retreat: a congestion event with this window. On a loss or mark the
    /// controller applies it *instead of* its own reduction and reports the congestion
    /// event itself (RFC 9959 Sec. 3.5); on a path change or an RTT sample that betrays
    /// one, it applies it as is.
    Retreat(u64),
    /// Leaving Safe Retreat: `ssthresh <= cap`; the avoidance learns `pipesize`.
    RetreatDone { cap: u64, pipesize: u64 },
    /// Leaving after persistent congestion: `ssthresh <= cap`.
    CapSsthresh(u64),
}

/// What Careful Resume's effects act on: the primitives the controller offers it.
pub(crate) trait ResumedController {
    /// The congestion window, bytes.
    fn cwnd(&self) -> u64;
    /// Sets the congestion window (the controller clamps it to its minimum and maximum).
    fn set_cwnd(&mut self, cwnd: u64);
    /// `ssthresh = max(min(ssthresh, cap), minimum window)`.
    fn cap_ssthresh(&mut self, cap: u64);
    /// A recovery period begins at `now` (RFC 9002 Sec. 7.3.2): acknowledgements of
    /// packets sent before it do not grow the window, their losses do not reduce it.
    fn start_recovery(&mut self, now: Duration);
    /// Ends the initial slow start, if it is still on, as a loss does: a `SlowStartExit`
    /// event with reason `loss`, from window `cwnd_before` to the current one (a controller
    /// may leave it on when the loss was no congestion to it).
    fn end_initial_slow_start_by_loss(&mut self, now: Duration, cwnd_before: u64);
    /// The avoidance learns of a congestion event at window `cwnd` (CUBIC's `W_max`; the
    /// controller may keep a larger one when the retreat's loss was no congestion to it);
    /// the window and threshold it would set are not used.
    fn avoidance_learns_congestion(&mut self, now: Duration, cwnd: u64);
}

impl Effect {
    /// Carries the effect out on the controller `c` at `now`.
    pub(crate) fn apply(self, now: Duration, c: &mut impl ResumedController) {
        match self {
            Self::None => {}
            Self::Jump(cwnd) | Self::SetCwnd(cwnd) => c.set_cwnd(cwnd),
            Self::Resume(cwnd) => {
                if let Some(cwnd) = cwnd {
                    c.set_cwnd(cwnd);
                }
            }
            // Sec. 3.5: the retreat is the congestion response, and it ends slow start.
            Self::Retreat(cwnd) => {
                let before = c.cwnd();
                c.start_recovery(now);
                c.set_cwnd(cwnd);
                c.end_initial_slow_start_by_loss(now, before);
            }
            // Sec. 4.5: the measured capacity is the window at the congestion event.
            Self::RetreatDone { cap, pipesize } => {
                c.avoidance_learns_congestion(now, pipesize);
                c.cap_ssthresh(cap);
            }
            Self::CapSsthresh(cap) => c.cap_ssthresh(cap),
        }
    }
}

/// A phase change for the controller to apply ([`Effect::apply`]), then report with
/// [`super::CarefulResume::report`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transition {
    /// The phase left.
    pub old: CarefulResumePhase,
    /// Why (the qlog trigger), if the qlog draft names one.
    pub trigger: Option<CarefulResumeTrigger>,
    /// What it does to the window.
    pub effect: Effect,
}

/// What the controller does with one acknowledgement, by phase.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AckEffect {
    /// Reconnaissance, Validating, Normal: normal CC (the configured slow start and
    /// avoidance, with the start-up modifiers).
    Normal,
    /// Unvalidated, Safe Retreat: the window does not grow (Sec. 3.3, 3.5): no growth, no
    /// long-RTT floor, and a slow-start exit is ignored; the slow start still learns from
    /// the acknowledgement, and a rollback decision is still taken.
    Hold,
    /// The acknowledgement changed the phase (an RTT sample at most `saved_rtt x
    /// min_rtt_factor` in the Unvalidated Phase: Safe Retreat). The controller applies it
    /// and does nothing else with the acknowledgement: neither the drain, the recovery
    /// gate, the slow start nor the growth see it.
    Transition(Transition),
}
