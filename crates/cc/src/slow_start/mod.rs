//! Pluggable slow start.
//!
//! A [`SlowStart`] decides two things while a connection is in its initial slow start:
//! how much the congestion window grows per acknowledged packet, and when slow start
//! ends without a loss. The controller ([`crate::Controller`]) owns the window, recovery
//! and congestion avoidance; the slow start only advises. This is the modular design of
//! seed 000 Sec. 4.3 (quicly's pluggable slow start) and of neqo's `classic_cc.rs`.
//!
//! One module per algorithm, named as in spec strings ([`crate::spec`]); each documents its
//! options with their defaults and sources.
//!
//! | spec name | module | algorithm |
//! |---|---|---|
//! | `classic` (alias `ss`) | [`classic`] | RFC 5681 slow start, exit on loss only |
//! | `hystart++` (aliases `hspp`, `hystartpp`) | [`hystart_plus_plus`] | HyStart++, RFC 9406 |
//! | `hystart` | [`hystart`] | classic HyStart as in Linux `tcp_cubic.c` |
//! | `hybla` | [`hybla`] | Hybla's slow start (Caini & Firrincieli 2004) |
//! | `search` | [`search`] | SEARCH 2.0, 3.0 and the current draft-chung-ccwg-search |

use std::fmt;
use std::time::Duration;

use crate::event::{Emitter, ExitReason};

pub mod classic;
pub mod hybla;
pub mod hystart;
pub mod hystart_plus_plus;
pub mod search;

pub use classic::Classic;
pub use hybla::{HYBLA_RTT0, HyblaSlowStart};
pub use hystart::{HyStartDetect, LinuxHyStart, LinuxHyStartConfig};
pub use hystart_plus_plus::{HyStartConfig, HyStartPlusPlus};
pub use search::{
    ExitAction, LookbackRtt, PrevPoint, Search, SearchClock, SearchConfig, SearchMode,
    SearchVersion,
};

/// What a slow start learns from one acknowledged packet.
#[derive(Debug, Clone, Copy)]
pub struct AckSample {
    /// Time of the acknowledgement (offset from the controller's origin).
    pub now: Duration,
    /// Bytes newly acknowledged by this packet.
    pub bytes: u64,
    /// RTT sample of this packet: `now` minus its send time (the latest RTT).
    pub rtt: Duration,
    /// Minimum RTT seen on the path so far.
    pub min_rtt: Duration,
    /// The smoothed RTT estimate.
    pub smoothed_rtt: Duration,
    /// The path's RTT before the connection loaded it, at least `min_rtt`
    /// ([`crate::path_rtt`]: the mean of its first samples, which per-packet jitter spreads
    /// above the minimum).
    pub unloaded_rtt: Duration,
    /// Whether the sender was limited by the application rather than the window.
    pub app_limited: bool,
    /// Congestion window in bytes before this acknowledgement.
    pub cwnd: u64,
    /// Current maximum datagram size in bytes (the "SMSS" of the RFCs).
    pub mss: u64,
    /// How many times the window grows per round trip while this slow start says
    /// [`SsDecision::Grow`]: 2 for doubling, more with a start-up growth
    /// ([`crate::growth`], the multiplier at the current smoothed RTT plus one).
    pub growth_per_rtt: f64,
}

/// A slow start's answer to one acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsDecision {
    /// Stay in slow start and grow the window by `increase` bytes.
    Grow { increase: u64 },
    /// Leave slow start now. The controller sets the window to `cwnd` and `ssthresh` to
    /// `ssthresh` (both floored at the minimum window) and enters congestion avoidance.
    /// With `drain` the new window is itself the answer to the overshoot (SEARCH's drain,
    /// draft-chung-ccwg-search-09 Sec. 3.2): the controller starts a recovery period at
    /// the exit, so losses of packets sent before it do not cut the window again (one
    /// reduction per round trip, RFC 9002 Sec. 7.3.2).
    Exit {
        cwnd: u64,
        ssthresh: u64,
        reason: ExitReason,
        drain: bool,
    },
}

/// One slow-start algorithm. See the module docs.
///
/// All times are offsets from the controller's origin; algorithms never read clocks.
/// Implementations must tolerate any sequence of calls: zero or huge RTTs, timestamps that
/// repeat or go backwards, zero-byte acknowledgements.
pub trait SlowStart: Send + Sync + fmt::Debug {
    /// Short name used in specs and records (`classic`, `search`, ...).
    fn name(&self) -> &'static str;

    /// `bytes` were sent at `now`.
    fn on_sent(&mut self, now: Duration, bytes: u64) {
        let _ = (now, bytes);
    }

    /// A packet was acknowledged during slow start.
    fn on_ack(&mut self, ack: &AckSample, events: &Emitter) -> SsDecision;

    /// A round trip ended: an acknowledgement covered the last packet sent when the
    /// previous round began (the `windowEnd` rule of RFC 9406 Sec. 4.2).
    fn on_round_end(&mut self, now: Duration) {
        let _ = now;
    }

    /// Forget all history: after persistent congestion, after an idle period, or when the
    /// controller restarts slow start.
    fn reset(&mut self);

    /// An owned copy (quinn clones controllers).
    fn clone_box(&self) -> Box<dyn SlowStart>;

    /// Heap + inline size of the per-connection state in bytes (for the state-size report).
    fn state_size(&self) -> usize;
}

impl Clone for Box<dyn SlowStart> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A slow start as configured: cheap to clone, instantiated once per connection.
#[derive(Debug, Clone, PartialEq)]
pub enum SlowStartConfig {
    /// RFC 5681 slow start, exit on loss only.
    Classic,
    /// RFC 9406 HyStart++.
    HyStartPlusPlus(HyStartConfig),
    /// Classic HyStart (Ha & Rhee 2011) as in Linux `tcp_cubic.c`: ACK train and delay.
    LinuxHyStart(LinuxHyStartConfig),
    /// Hybla's slow start (Caini & Firrincieli).
    Hybla { rtt0: Duration },
    /// SEARCH in one of its published versions.
    Search(SearchConfig),
}

impl SlowStartConfig {
    /// Builds the per-connection state.
    pub fn build(&self) -> Box<dyn SlowStart> {
        match self {
            Self::Classic => Box::new(Classic),
            Self::HyStartPlusPlus(c) => Box::new(HyStartPlusPlus::new(c.clone())),
            Self::LinuxHyStart(c) => Box::new(LinuxHyStart::new(c.clone())),
            Self::Hybla { rtt0 } => Box::new(HyblaSlowStart::new(*rtt0)),
            Self::Search(c) => Box::new(Search::new(c.clone())),
        }
    }

    /// Short name as used in spec strings.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::HyStartPlusPlus(_) => "hystart++",
            Self::LinuxHyStart(_) => "hystart",
            Self::Hybla { .. } => "hybla",
            Self::Search(_) => "search",
        }
    }
}

impl From<SearchConfig> for SlowStartConfig {
    fn from(c: SearchConfig) -> Self {
        Self::Search(c)
    }
}

impl From<HyStartConfig> for SlowStartConfig {
    fn from(c: HyStartConfig) -> Self {
        Self::HyStartPlusPlus(c)
    }
}

impl From<LinuxHyStartConfig> for SlowStartConfig {
    fn from(c: LinuxHyStartConfig) -> Self {
        Self::LinuxHyStart(c)
    }
}

impl From<Classic> for SlowStartConfig {
    fn from(_: Classic) -> Self {
        Self::Classic
    }
}
