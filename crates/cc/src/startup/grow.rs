//! How the initial slow start's window goes up outside the jump: the long-RTT floors (A7)
//! and the slow start's increase times the start-up growth (A11).

use std::time::Duration;

use crate::growth::{RttWindowFloor, StartupGrowth};

use super::protocol::{Effect, View};

/// The start-up's growth and floors.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grow {
    /// How fast the initial slow start grows (`+growth`; doubling without it).
    pub(super) growth: StartupGrowth,
    /// picoquic's long-RTT window floor (`+floor`), if enabled.
    pub(super) floor: Option<RttWindowFloor>,
    /// The window the controller started with, bytes (what the floors scale).
    pub(super) initial_window: u64,
}

impl Grow {
    /// A7: the long-RTT floors (`+growth:rtt` on the smoothed RTT, `+floor` on the minimum
    /// RTT) raise the window; neither the jump's ceiling nor `ssthresh` bounds them.
    pub(super) fn raise_to_floor(&self, view: &mut View) -> Effect {
        let floor = self
            .growth
            .window_floor(self.initial_window, view.rtt.smoothed)
            .max(
                self.floor
                    .and_then(|f| f.window_floor(self.initial_window, view.rtt.min)),
            );
        match floor {
            Some(floor) if floor > view.cwnd => {
                view.set_window(floor as f64);
                Effect::Window(floor as f64)
            }
            _ => Effect::None,
        }
    }

    /// How many times the window grows per round trip at smoothed RTT `smoothed` (the slow
    /// start's heuristics scale their thresholds by it).
    pub(super) fn per_rtt(&self, smoothed: Duration) -> f64 {
        self.growth.per_rtt(smoothed)
    }

    /// A11: the slow start's `increase`, times the start-up growth, up to the jump's
    /// `ceiling` (a window already past it stays where it is). A window that reaches
    /// `ssthresh` (RFC 9002 Sec. 7.3.1: slow start only while cwnd < ssthresh; only
    /// Careful Resume's `ss-cap` sets one before an exit) stops there, and the initial slow
    /// start ends as a reached threshold, not as a heuristic's exit.
    pub(super) fn grow(&self, increase: u64, ceiling: Option<u64>, view: &mut View) -> Effect {
        let increase = increase as f64 * self.growth.multiplier(view.rtt.smoothed);
        let before = view.cwnd;
        let mut window = view.cwnd as f64 + increase;
        if let Some(ceiling) = ceiling {
            window = window.min(ceiling.max(before) as f64);
        }
        view.set_window(window);
        if view.cwnd >= view.ssthresh {
            let window = before.max(view.ssthresh);
            view.set_window(window as f64);
            return Effect::ThresholdReached(window);
        }
        Effect::Window(window)
    }
}
