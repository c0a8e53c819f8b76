//! The proportional drain after a slow-start exit that asked for one (SEARCH's `drain`).

use std::time::Duration;

use super::Controller;

/// A proportional drain after a slow-start exit that asked for one ([`SsDecision::Exit`]
/// with `drain`): the window steps down from the bytes in flight at the exit to the
/// target, and for every byte acknowledged meanwhile the sender sends `target / from`
/// bytes, as RFC 6937's Proportional Rate Reduction does in recovery. Dropping the
/// window to the target at once (as draft-chung-ccwg-search-09 Sec. 3.2 reads) silences
/// the sender until the bytes in flight, losses not yet detected included, fall below
/// the target; the link then idles, and quinn paces the restart at `1.25 x cwnd /
/// smoothed RTT` with an RTT still inflated by the queue being drained (on geo-viasat the
/// link ran far below its rate for most of a second; BENCHMARKS.md, "Start-up
/// mechanisms"). Sending through the drain keeps the link
/// busy and the RTT samples fresh; the queue still empties, at `1 - target / from` of
/// the link rate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Drain {
    /// The window the drain ends at, bytes (the slow start's estimate of the BDP).
    target: u64,
    /// Bytes in flight when it began.
    from: u64,
    /// Bytes acknowledged since it began.
    acked: u64,
}

impl Drain {
    /// The window after `acked` bytes were acknowledged since the exit.
    fn window(&self) -> u64 {
        let ratio = self.target as f64 / self.from as f64;
        let window = self.from as f64 - self.acked as f64 * (1.0 - ratio);
        (window.max(self.target as f64)) as u64
    }
}

impl Controller {
    /// A4: a drain in progress steps the window down instead of growing it (see
    /// [`Drain`]); true if it took the acknowledgement.
    pub(super) fn drain_on_ack(&mut self, now: Duration, bytes: u64) -> bool {
        let Some(drain) = self.drain.as_mut() else {
            return false;
        };
        drain.acked = drain.acked.saturating_add(bytes);
        let window = drain.window();
        if window <= drain.target {
            // Packets sent during the drain met the queue it drained: their losses
            // belong to the same recovery period.
            self.drain = None;
            self.recovery_start = Some(now);
        }
        self.set_window(window as f64);
        true
    }

    /// Starts a [`Drain`] from the bytes in flight down to the window just set. The drain
    /// is the answer to the overshoot, so it is also a recovery period: losses of packets
    /// sent before it ends do not cut the window again (one reduction per congestion
    /// event, RFC 9002 Sec. 7.3.2; packets sent during the drain meet the queue it drains).
    pub(super) fn start_drain(&mut self, now: Duration) {
        self.recovery_start = Some(now);
        let target = self.cwnd;
        if self.in_flight > target {
            self.drain = Some(Drain {
                target,
                from: self.in_flight,
                acked: 0,
            });
            self.set_window(self.in_flight as f64);
        }
    }
}
