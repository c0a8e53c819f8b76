//! The proportional drain after a slow-start exit that asked for one (SEARCH's `drain`).

/// A proportional drain after a slow-start exit that asked for one
/// ([`SsDecision::Exit`](crate::slow_start::SsDecision::Exit) with `drain`): the window
/// steps down from the bytes in flight at the exit to the target, and for every byte
/// acknowledged meanwhile the sender sends `target / from` bytes, as RFC 6937's
/// Proportional Rate Reduction does in recovery. Dropping the window to the target at once
/// (as draft-chung-ccwg-search-09 Sec. 3.2 reads) silences the sender until the bytes in
/// flight, losses not yet detected included, fall below the target; the link then idles,
/// and quinn paces the restart at `1.25 x cwnd / smoothed RTT` with an RTT still inflated
/// by the queue being drained (on geo-viasat the link ran far below its rate for most of a
/// second; BENCHMARKS.md, "Start-up mechanisms"). Sending through the drain keeps the link
/// busy and the RTT samples fresh; the queue still empties, at `1 - target / from` of the
/// link rate.
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
    /// A drain from `in_flight` bytes down to the window `target`, if there is anything to
    /// drain.
    pub(super) fn new(target: u64, in_flight: u64) -> Option<Self> {
        (in_flight > target).then_some(Self {
            target,
            from: in_flight,
            acked: 0,
        })
    }

    /// The window it starts at, bytes: the bytes in flight.
    pub(super) fn start(&self) -> u64 {
        self.from
    }

    /// `bytes` more were acknowledged: the window now, and whether the drain is over.
    pub(super) fn on_ack(&mut self, bytes: u64) -> (u64, bool) {
        self.acked = self.acked.saturating_add(bytes);
        let window = self.window();
        (window, window <= self.target)
    }

    /// The window after `acked` bytes were acknowledged since the exit.
    fn window(&self) -> u64 {
        let ratio = self.target as f64 / self.from as f64;
        let window = self.from as f64 - self.acked as f64 * (1.0 - ratio);
        (window.max(self.target as f64)) as u64
    }
}
