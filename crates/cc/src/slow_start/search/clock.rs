//! How SEARCH reads time: exact durations, or quicly's whole milliseconds.
//!
//! quicly, the stack seed 000 measured SEARCH 2.0 in, keeps its clock and RTTs in whole
//! milliseconds (`int64_t now`, `uint32_t rtt.latest`), and its SEARCH (seed 000 Appendix
//! A, `ss_search10_delv` in the fork qperf pins) does integer arithmetic on them:
//!
//! | quantity | quicly | [`SearchClock::Exact`] |
//! |---|---|---|
//! | `now`, the RTT | truncated to ms | as measured |
//! | bin | `MAX((latest * 3.5) / 10, 1)` stored in a `uint32_t` of ms: 214 ms at 612 ms | `window / W`, at least 1 ns: 214.2 ms |
//! | look-back | `latest / bin`, plus one when `latest % bin > bin / 2` (a tie rounds down), at least one | `round(RTT / bin)`, at least one |
//!
//! One quicly detail is not reproduced: its bin counter is a `uint8_t`, so after 256 bins
//! (54 s of slow start at a 612 ms RTT) the ring index jumps and evaluations pause for
//! `W + look-back` bins. No slow start on the seeds' paths lasts that long.

use std::time::Duration;

/// How SEARCH reads time. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchClock {
    /// Exact durations: bins of exactly window / `W` (at least 1 ns).
    Exact,
    /// quicly's whole milliseconds (seed 000 Appendix A): `now` and the RTT truncated to
    /// milliseconds, bins of `max(floor(RTT x WINDOW_FACTOR / W), 1)` ms, and with
    /// [`PrevPoint::Round`](super::PrevPoint::Round) a look-back of `RTT / bin` bins rounded half down, at least one.
    Millis,
}

impl SearchClock {
    /// Short name used in spec strings (`ms`, `exact`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Millis => "ms",
        }
    }

    /// `t` as this clock reads it.
    pub(crate) fn read(self, t: Duration) -> Duration {
        match self {
            Self::Exact => t,
            Self::Millis => Duration::from_millis(t.as_millis().min(u128::from(u64::MAX)) as u64),
        }
    }

    /// The bin duration in nanoseconds for a window of `window_s` seconds and `w` bins.
    pub(crate) fn bin_nanos(self, window_s: f64, w: u64) -> f64 {
        match self {
            Self::Exact => (window_s * 1e9 / w as f64).max(1.0),
            // quicly: `MAX((latest * 3.5) / 10, 1)` stored in whole milliseconds.
            Self::Millis => (window_s * 1e3 / w as f64).floor().max(1.0) * 1e6,
        }
    }
}

/// quicly's look-back in bins: `latest / bin`, one more when the remainder is over half a
/// bin (integer halves), and at least one.
pub(crate) fn quicly_shift(rtt: Duration, bin: Duration) -> u64 {
    let latest = rtt.as_millis().min(u128::from(u64::MAX)) as u64;
    let bin = (bin.as_millis().min(u128::from(u64::MAX)) as u64).max(1);
    match latest / bin {
        0 => 1,
        s if latest % bin > bin / 2 => s + 1,
        s => s,
    }
}
