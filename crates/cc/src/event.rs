//! The event vocabulary controllers emit, and the caller-owned sink they emit to.
//!
//! Controllers never log globally. A caller that wants to see what the congestion
//! controller decided attaches an [`EventSink`] to the [`CongestionConfig`]; every
//! controller built from that configuration reports to it. Without a sink no event
//! is built at all, so observability costs nothing when unused.
//!
//! [`CongestionConfig`]: crate::CongestionConfig

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::careful_resume::{CarefulResumePhase, CarefulResumeTrigger};

/// Why slow start ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum ExitReason {
    /// A packet loss (or ECN congestion signal) ended slow start: classic behaviour.
    Loss,
    /// SEARCH saw delivery fall short of what was sent / expected one RTT earlier.
    Search,
    /// HyStart++ finished its Conservative Slow Start rounds (RFC 9406 Sec. 4.2).
    HyStartPlusPlus,
    /// Classic HyStart (Ha & Rhee 2011, Linux `tcp_cubic.c`): an ACK train lasted longer
    /// than the minimum RTT (`HYSTART_ACK_TRAIN`). The two classic HyStart reasons are
    /// serialized as their record names (`hystart-*`), not the derived `hy-start-*`.
    #[cfg_attr(feature = "serde", serde(rename = "hystart-ack-train"))]
    HyStartAckTrain,
    /// Classic HyStart: the round's minimum RTT rose above the connection's minimum by the
    /// delay threshold (`HYSTART_DELAY`).
    #[cfg_attr(feature = "serde", serde(rename = "hystart-delay"))]
    HyStartDelay,
    /// The start-up jump's flight came back slower than it was sent (`+jump:validate`): the
    /// path carries other traffic, and the window falls to what it delivered.
    JumpRefused,
}

impl ExitReason {
    /// Short lowercase name used in records and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loss => "loss",
            Self::Search => "search",
            Self::HyStartPlusPlus => "hystart++",
            Self::HyStartAckTrain => "hystart-ack-train",
            Self::HyStartDelay => "hystart-delay",
            Self::JumpRefused => "jump-refused",
        }
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one SEARCH evaluation at a bin boundary.
///
/// Mirrors the outcome enum of neqo's `cc/search.rs`, so telemetry says *why* SEARCH did
/// not exit, not only that it did not.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum SearchOutcome {
    /// `norm_diff` reached the threshold: slow start exits (or would exit, in shadow mode).
    Exit,
    /// Evaluated; `norm_diff` below the threshold.
    Continue,
    /// Fewer than a window of bins lie before the look-back point.
    WarmingUp,
    /// The RTT grew so much that looking back one RTT leaves the stored bins.
    RttInflated,
    /// Nothing was sent (or delivered) in the reference window.
    NothingSent,
}

impl SearchOutcome {
    /// Short lowercase name used in records and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exit => "exit",
            Self::Continue => "continue",
            Self::WarmingUp => "warming-up",
            Self::RttInflated => "rtt-inflated",
            Self::NothingSent => "nothing-sent",
        }
    }
}

/// Something a controller decided or observed. Times are offsets from the configuration's
/// time origin (by default the moment the controller was built, i.e. the connection start).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
pub enum CcEvent {
    /// Slow start ended. `cwnd_before`/`cwnd_after` are in bytes; after a SEARCH exit with
    /// a lowering action `cwnd_after` is the lowered window. In shadow mode SEARCH reports
    /// the exit it *would* take (`shadow: true`) and the window is unchanged.
    SlowStartExit {
        at: Duration,
        reason: ExitReason,
        cwnd_before: u64,
        cwnd_after: u64,
        ssthresh: u64,
        shadow: bool,
    },
    /// One SEARCH evaluation. `curr_delivered` is the bytes delivered over the current
    /// window; `reference` what it is compared with (2 x delivered one RTT earlier for 2.0
    /// and 3.0, bytes sent one RTT earlier for the current draft). `bin` is the index of
    /// the current bin since SEARCH (re)started.
    SearchEval {
        at: Duration,
        bin: u64,
        curr_delivered: u64,
        reference: u64,
        norm_diff: f64,
        outcome: SearchOutcome,
    },
    /// HyStart++ moved between slow start and Conservative Slow Start.
    HyStartPhase {
        at: Duration,
        /// `true` when entering CSS, `false` when CSS went back to slow start.
        css: bool,
        /// Minimum RTT of the last round and the current round when the decision was made.
        last_round_min_rtt: Duration,
        current_round_min_rtt: Duration,
    },
    /// A congestion event (loss or ECN) reduced the window.
    Congestion {
        at: Duration,
        lost_bytes: u64,
        cwnd_after: u64,
        persistent: bool,
    },
    /// A recovery period ended having lost few packets, and the reduction that began it was
    /// undone ([`crate::rollback`]): `lost_packets` were lost in it; `cwnd_after` is the
    /// restored window in bytes.
    CongestionUndone {
        at: Duration,
        lost_packets: u64,
        cwnd_after: u64,
    },
    /// A periodic sample of the controller state (one per RTT sample at most; the caller
    /// decides the resolution it keeps).
    Sample {
        at: Duration,
        cwnd: u64,
        in_flight: u64,
        rtt: Duration,
    },
    /// Careful Resume (RFC 9959) changed phase: the `CarefulResumePhaseUpdated` event of
    /// draft-ietf-tsvwg-careful-resume-qlog, with its `state_data` (state after the change;
    /// bytes) and `restored_data`. `old` is `None` for the first (Reconnaissance); `trigger`
    /// is `None` where the draft names none (the window already reached the jump).
    CarefulResumePhaseUpdated {
        at: Duration,
        old: Option<CarefulResumePhase>,
        new: CarefulResumePhase,
        trigger: Option<CarefulResumeTrigger>,
        pipesize: u64,
        first_unvalidated_packet: Option<u64>,
        last_unvalidated_packet: Option<u64>,
        cwnd: u64,
        ssthresh: u64,
        saved_cwnd: u64,
        saved_rtt: Duration,
    },
}

impl CcEvent {
    /// When the event happened.
    pub fn at(&self) -> Duration {
        match self {
            Self::SlowStartExit { at, .. }
            | Self::SearchEval { at, .. }
            | Self::HyStartPhase { at, .. }
            | Self::Congestion { at, .. }
            | Self::CongestionUndone { at, .. }
            | Self::Sample { at, .. }
            | Self::CarefulResumePhaseUpdated { at, .. } => *at,
        }
    }

    /// When the event happened, to move it to another time base.
    pub fn at_mut(&mut self) -> &mut Duration {
        match self {
            Self::SlowStartExit { at, .. }
            | Self::SearchEval { at, .. }
            | Self::HyStartPhase { at, .. }
            | Self::Congestion { at, .. }
            | Self::CongestionUndone { at, .. }
            | Self::Sample { at, .. }
            | Self::CarefulResumePhaseUpdated { at, .. } => at,
        }
    }
}

/// Receives the events of the controllers built from one configuration.
///
/// Implementations must be cheap: `record` is called on the ACK path.
pub trait EventSink: Send + Sync {
    /// Called once per event, in the order the controller produced them.
    fn record(&self, event: &CcEvent);
}

/// A sink that keeps every event in memory, for tests and small tools.
#[derive(Debug, Default)]
pub struct EventLog {
    events: std::sync::Mutex<Vec<CcEvent>>,
}

impl EventLog {
    /// A new, empty log, ready to be attached with [`CongestionConfig::event_sink`].
    ///
    /// [`CongestionConfig::event_sink`]: crate::CongestionConfig::event_sink
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A copy of the events recorded so far.
    pub fn events(&self) -> Vec<CcEvent> {
        self.lock().clone()
    }

    /// Removes and returns the events recorded so far.
    pub fn take(&self) -> Vec<CcEvent> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CcEvent>> {
        // A panic while holding the lock leaves a valid Vec behind; keep using it.
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl EventSink for EventLog {
    fn record(&self, event: &CcEvent) {
        self.lock().push(event.clone());
    }
}

/// The emitting end handed to algorithms: an optional sink, checked before building events.
#[derive(Clone, Default)]
pub struct Emitter {
    sink: Option<Arc<dyn EventSink>>,
}

impl Emitter {
    /// An emitter that reports to `sink`, or drops everything when `None`.
    pub fn new(sink: Option<Arc<dyn EventSink>>) -> Self {
        Self { sink }
    }

    /// Whether anybody listens; algorithms test this before computing event-only values.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Emits the event built by `make`, which runs only when a sink is attached.
    #[inline]
    pub fn emit(&self, make: impl FnOnce() -> CcEvent) {
        if let Some(sink) = &self.sink {
            sink.record(&make());
        }
    }
}

impl fmt::Debug for Emitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Emitter")
            .field("attached", &self.enabled())
            .finish()
    }
}
