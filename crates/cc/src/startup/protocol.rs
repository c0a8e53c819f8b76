//! The protocol between the start-up and the controller: what the start-up reads of the
//! controller at a hook (`View`), and what it asks of the window (`Effect`, in order:
//! `Effects`), which the controller applies (`Controller::apply_startup`).

use std::time::Duration;

use crate::careful_resume::{CarefulResume, CarefulResumePhase, Window};
use crate::controller::{RttInfo, bounded_window};
use crate::delivery::RecentDelivery;
use crate::event::ExitReason;
use crate::path_rtt::PathRtt;

/// What the start-up reads of the controller: the window, its bounds, the RTT estimates,
/// Careful Resume's phase and jump, and what the path delivered lately. The start-up
/// keeps `cwnd` up to date with the effects it returns within one hook
/// (`View::set_window`), so a step reads the window its earlier steps left.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    /// The congestion window, bytes.
    pub cwnd: u64,
    /// The slow-start threshold, bytes (`u64::MAX` while unset; only Careful Resume's
    /// `ss-cap` sets one during the initial slow start).
    pub ssthresh: u64,
    /// The maximum datagram size, bytes.
    pub mss: u64,
    /// The largest window the controller allows, bytes.
    pub max_window: u64,
    /// The RTT estimates of the latest acknowledgement.
    pub rtt: RttInfo,
    /// Careful Resume's phase: the jump and the bursts act only in Normal.
    pub cr_phase: CarefulResumePhase,
    /// The saved window of a Careful Resume jump that has not proved wrong, bytes (0
    /// without one): the ceiling never holds the window below it.
    pub resumed_window: u64,
    /// What the path delivered lately (the ceiling's floor).
    pub recent_delivery: &'a RecentDelivery,
    /// The envelope of the latest RTT samples: whether the path shows a queue (the
    /// ceiling's release).
    pub path_rtt: &'a PathRtt,
}

impl<'a> View<'a> {
    /// The view of a controller with window `w`, RTT estimates `rtt`, Careful Resume `cr`,
    /// recent delivery `recent_delivery` and the path's RTT `path_rtt`.
    pub fn new(
        w: Window,
        rtt: RttInfo,
        cr: &CarefulResume,
        recent_delivery: &'a RecentDelivery,
        path_rtt: &'a PathRtt,
    ) -> Self {
        Self {
            cwnd: w.cwnd,
            ssthresh: w.ssthresh,
            mss: w.mss,
            max_window: w.max_window,
            rtt,
            cr_phase: cr.phase(),
            resumed_window: resumed_window(cr),
            recent_delivery,
            path_rtt,
        }
    }

    /// RFC 9002 `kMinimumWindow`: 2 x max datagram size.
    pub fn minimum_window(&self) -> u64 {
        2 * self.mss
    }

    /// The window the controller holds after `Effect::Window``(window)`.
    pub fn set_window(&mut self, window: f64) {
        self.cwnd = bounded_window(window, self.minimum_window(), self.max_window).floor() as u64;
    }

    /// The path's RTT before the connection loaded it, at least the minimum
    /// ([`PathRtt::unloaded`]).
    pub fn unloaded_rtt(&self) -> Duration {
        self.path_rtt.unloaded(self.rtt.min)
    }

    /// Bytes per second the path delivered over the latest RTT at `now`.
    pub fn round_trip_rate(&self, now: Duration) -> f64 {
        self.recent_delivery.round_trip_rate(now, self.rtt.latest)
    }
}

/// The saved window of a Careful Resume jump that has not proved wrong (0 without one).
/// Careful Resume paces its jump, so the rates measured meanwhile are its pacing's, not the
/// bottleneck's; the saved window was measured on this path and the jump tested it.
fn resumed_window(cr: &CarefulResume) -> u64 {
    match cr.restored() {
        Some(saved) if cr.jump_cwnd() > 0 && !cr.invalidated() => saved.saved_cwnd,
        _ => 0,
    }
}

/// What the start-up asks of the controller's window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Effect {
    /// Nothing.
    None,
    /// The window to this many bytes (with its fraction): the floor, the jump, the
    /// validated jump's ceiling, growth.
    Window(f64),
    /// Growth reached `ssthresh`: the window to this; the initial slow start has ended as
    /// a reached threshold, not as a heuristic's exit (no event), and the avoidance
    /// starts.
    ThresholdReached(u64),
    /// The initial slow start has ended (the slow start's heuristic, or a refused jump):
    /// the window to `cwnd`, `ssthresh` to `ssthresh` (at least the minimum window, at
    /// most the window), the avoidance starts, a `SlowStartExit` event, Careful Resume
    /// hears of it; with `drain`, a recovery period begins and a drain from the bytes in
    /// flight ([`super::Startup::start_drain`]).
    Exit {
        cwnd: u64,
        ssthresh: u64,
        reason: ExitReason,
        drain: bool,
    },
    /// A drain's step: the window to `window`; with `ended`, the drain is over and a
    /// recovery period begins (packets sent during it met the queue it drained).
    Drain { window: u64, ended: bool },
}

/// The effects of one hook, to be applied in order: `first`, then `then`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Effects {
    /// The first step's (the floor of A7, the jump's raise of E2).
    pub first: Effect,
    /// What follows it (growth or an exit in A7-A11, the jump's verdict in E2).
    pub then: Effect,
}

impl Effects {
    /// No effect.
    pub const NONE: Self = Self::new(Effect::None, Effect::None);

    /// `first`, then `then`.
    pub const fn new(first: Effect, then: Effect) -> Self {
        Self { first, then }
    }
}

impl IntoIterator for Effects {
    type Item = Effect;
    type IntoIter = std::array::IntoIter<Effect, 2>;

    fn into_iter(self) -> Self::IntoIter {
        [self.first, self.then].into_iter()
    }
}
