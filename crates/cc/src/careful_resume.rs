//! Careful Resume: RFC 9959, "Convergence of Congestion Control from Retained State"
//! (formerly draft-ietf-tsvwg-careful-resume; the RFC was published from draft -24, whose
//! section numbers are cited here as "Sec.").
//!
//! A connection that saved its congestion-control parameters (the capacity it used and its
//! minimum RTT) lets a later connection to the same Remote Endpoint jump to half of that
//! capacity after one RTT instead of slow-starting for ~log2(BDP / IW) RTTs: ten RTTs, six
//! seconds, on a 150 Mbit/s GEO path.
//!
//! # Phases (Sec. 3, Fig. 1; names as in draft-ietf-tsvwg-careful-resume-qlog)
//!
//! ```text
//!  Connect -> Reconnaissance --------------------> Normal
//! (Observing)    |                                   ^
//!                v                                   |
//!               Unvalidated -------------------------+
//!                |      |                            |
//!                |      +--> Validating -------------+
//!                |               |                   |
//!                +---------------+--> Safe Retreat --+
//! ```
//!
//! * **Observing** (Sec. 3.1, 4.1): in [`CarefulResumePhase::Normal`], the controller
//!   measures the bytes acknowledged per round trip, scaled to the minimum RTT
//!   (`saved_cwnd`), and the minimum RTT (`saved_rtt`). [`Controller::observe`] returns them as an [`Observation`], which the
//!   sender turns into a [`SavedCcParams`] record with the Remote Endpoint, the wall-clock
//!   time and the Lifetime ([`Observation::save`]). [`SavedStateStore`] is a small bounded
//!   store keeping one record per Remote Endpoint.
//! * **Reconnaissance** (Sec. 3.2, 4.2): a connection given saved parameters
//!   ([`CongestionConfig::resume`]) starts with the normal initial window and slow start.
//!   It may jump once the initial window was acknowledged without congestion, the minimum
//!   RTT is within `(saved_rtt / 2, 10 x saved_rtt]` (Sec. 3.2, 4.2.1), and the sender is
//!   limited by the window, not by the application (Sec. 4.2; qlog
//!   `congestion_window_limited`).
//! * **Unvalidated** (Sec. 3.3, 4.3): `PipeSize = flight_size`,
//!   `CWND = jump_cwnd = min(max_jump, saved_cwnd / 2)`. The window does not grow; the jump
//!   is paced at `jump_cwnd / current RTT` (Sec. 4.3.2), see *Pacing* below. The phase ends
//!   when the window is used up (`last_unvalidated_packet_sent`), the first unvalidated
//!   packet is acknowledged, or one RTT has passed (`rtt_exceeded`); then, if
//!   `flight_size < IW` or `flight_size <= PipeSize`, `CWND = max(PipeSize, IW)` and
//!   Careful Resume ends (`rate_limited`), else `CWND = flight_size` and the sender
//!   validates.
//! * **Validating** (Sec. 3.4, 4.4): normal CC updates the window (the configured slow
//!   start, or the avoidance); when the last unvalidated packet is acknowledged, Careful
//!   Resume ends.
//! * **Safe Retreat** (Sec. 3.5, 4.5): on congestion (loss or ECN-CE) in Unvalidated or
//!   Validating, or a path change in Unvalidated: the saved parameters are invalid
//!   ([`CarefulResume::invalidated`]), `CWND = max(PipeSize / 2, 2 x MSS)` and does not
//!   grow. When the last packet sent before the retreat is acknowledged,
//!   `ssthresh = min(ssthresh, PipeSize x Beta)` (Beta 0.5) and Careful Resume ends
//!   (`exit_recovery`).
//! * **Normal** (Sec. 3.7, 4.6): the configured slow start and avoidance. The slow start
//!   saw every packet throughout (only its growth is ignored while the window is frozen),
//!   so SEARCH or HyStart++ goes on from the resumed window with warm history; after a
//!   retreat the window grows classically to `ssthresh`, then the avoidance takes over.
//!
//! Persistent congestion in any phase ends Careful Resume (Sec. 3.6); congestion in
//! Reconnaissance too, leaving the window as normal CC set it (Sec. 3.2, B.3).
//!
//! Every phase change is a [`CcEvent::CarefulResumePhaseUpdated`] with the qlog draft's
//! phase and trigger names.
//!
//! # Pacing, and what quinn-proto 0.11 allows
//!
//! Sec. 3.3 requires every unvalidated packet to be paced on the current RTT; Sec. 4.3.2
//! gives the rhythm `ITT = current RTT x MPS / jump_cwnd`, so a full `jump_cwnd` takes at
//! least one RTT, and no burst may exceed the IW. [`Controller::pacing`] exposes that
//! requirement ([`PacingRequirement`]), and the quinn adapter reports its rate as
//! `ControllerMetrics::pacing_rate` (quinn's qlog shows it).
//!
//! quinn-proto 0.11 cannot be told a pacing rate: its `congestion::Controller` trait has no
//! pacing hook, and its pacer (`connection/pacing.rs`) refills at `1.25 x window() /
//! smoothed RTT` in bursts of `max(10, 2 ms worth)` datagrams. Left alone it would send the
//! jump in 0.8 smoothed RTT. The controller's only lever is `window()`, so during the
//! Unvalidated Phase [`Controller::window`] releases the jump as a credit: no more than
//! `max_burst + jump_cwnd x elapsed / current RTT` bytes may be sent after the jump. A
//! window that small would also slow quinn's pacer (its rate follows the window), so the
//! window is never below `jump_cwnd / platform_pacer_gain` (1.25 for quinn): the pacer then
//! runs at `jump_cwnd / smoothed RTT`, the RFC's rate, and the credit binds once the
//! flight passes that floor. [`Controller::congestion_window`] stays `jump_cwnd`. With no
//! pacer below (`platform_pacer_gain: None`) the credit alone paces; with
//! `pace_unvalidated: false` the window is `jump_cwnd` at once and pacing is left to the
//! platform (quinn: 0.8 RTT, not the RFC's one RTT).
//!
//! Other quinn-proto 0.11 limits, and what this module does about them:
//! * no timer reaches the controller: "one RTT in the Unvalidated Phase" is noticed at the
//!   next send or acknowledgement;
//! * `on_ack` carries no packet number: packets sent after the jump (strictly later than
//!   its `now`) count as unvalidated for the PipeSize, so unvalidated packets sent in the
//!   same `poll_transmit` as the jump are not counted (a smaller, safer PipeSize); the first
//!   and last unvalidated packets are packet numbers from `on_sent` compared with the
//!   largest acknowledged one in `on_end_acks` (numbers of the application data space,
//!   where the jump happens);
//! * `app_limited` is quinn's "the last poll sent nothing and was not blocked"; being
//!   window-limited is inferred from the flight (`flight + MSS >= CWND`: quinn-proto sends
//!   only while `in_flight + MTU < window`) and the flight is
//!   re-synchronised from quinn's `in_flight` after every batch of ACKs;
//! * an ECN congestion event has `lost_bytes == 0`: the trigger is `ECN_CE`;
//! * quinn builds a new controller for a migrated path; the saved parameters go to one
//!   controller only ([`CongestionConfig::resume`]), so the new path starts normally.
//!
//! The controller stays deterministic: it reads no clock (times are quinn's `now` as
//! offsets) and no randomness; nothing here allocates per ACK. The Lifetime and the Remote
//! Endpoint are checked outside the controller by the sender, with its wall clock
//! ([`SavedCcParams::check`], [`SavedStateStore::take`]).
//!
//! # Where the RFC leaves a choice
//!
//! Each is a field of [`CarefulResumeConfig`] or documented on the rule:
//! * the RTT lower bound is `<=` half (Sec. 3.2's MUST; Sec. 4.2.1 says "less than a
//!   half"), the upper bound strictly more than 10x (Sec. 4.2.1); the Reconnaissance check
//!   uses the phase's minimum RTT at the jump (Sec. 4.2.1 Note 1), the Unvalidated check
//!   every sample against the lower bound (Note 2: the minimum cannot grow);
//! * PipeSize counts acknowledgements of unvalidated packets only, as the Appendix B.4
//!   arithmetic does (29 + 34), and starts at `flight_size` (Sec. 3.3; Appendix B says CWND
//!   in one sentence and flight_size in its examples);
//! * "all the initial data" (Sec. 3.2) is one initial window of acknowledged bytes, less
//!   one packet: quinn-proto sends only while `in_flight + MTU < window`, so its first
//!   flight is one packet short of the IW;
//! * `saved_cwnd` is a round's acknowledged bytes scaled from the round's duration to the
//!   minimum RTT (the acknowledged rate x `saved_rtt`, Sec. 4.1's "acknowledged rate"), so
//!   a standing queue is not saved as capacity; window-limited rounds replace it,
//!   application-limited ones only raise it (Sec. 4.1);
//! * if the window already reached `jump_cwnd` there is nothing to jump to: Careful Resume
//!   ends with the window unchanged (Appendix A "CWND confirmed"; no qlog trigger);
//! * a delay-based slow-start exit (HyStart, SEARCH) in Reconnaissance ends Careful Resume
//!   (`delay_exit_stops_resume`, Sec. 4.2.1's open question) with `rtt_not_validated`;
//! * Safe Retreat lasts until the last packet sent before it is acknowledged (Sec. 3.5
//!   "Loss Recovery": "sent in the Unvalidated or Validating Phase"), which covers Sec. 3.5's
//!   other wording "(or a later packet) sent during the Unvalidated Phase";
//! * the Safe Retreat window is `PipeSize / 2` floored at QUIC's minimum window (Sec. 3.5's
//!   note), not at the IW of Appendix B.4's `Max(10, PS/2)`, which could exceed the MUST;
//! * on leaving Safe Retreat the avoidance learns `PipeSize` as the window at the
//!   congestion event (CUBIC's `W_max`), the measured upper limit of Sec. 4.5;
//! * the Validating Phase runs normal CC, i.e. the configured slow start (Sec. 3.4), which
//!   kept its history through the Unvalidated Phase: restarting SEARCH at a BDP-sized
//!   window would let slow start double for its whole warm-up (~4 RTTs at GEO) unchecked;
//!   a slow-start exit in the Unvalidated Phase is ignored with its growth (the CWND is
//!   frozen there); a slow start that still sees the condition reports it again (SEARCH
//!   re-evaluates at every bin);
//! * the jump waits until the window is full (`defer_jump`; Sec. 3.2 "MAY be deferred");
//! * the Lifetime defaults to one hour (Sec. 4.3.1 gives "minutes" for dynamic paths and
//!   "hours" for stable ones; a GEO terminal's plan rate is stable, the jump is halved and
//!   the retreat protects others);
//! * a saved time later than the check's `now` (a clock stepped back) counts as expired.
//!
//! # Spec options
//!
//! Careful Resume is the spec suffix `+cr[:OPTION,...]` ([`crate::spec`]); without it the
//! defaults apply. Each option sets a [`CarefulResumeConfig`] field; `F` is a number, `N` a
//! whole number.
//!
//! | option | meaning | default | source |
//! |---|---|---|---|
//! | `off` | [`CarefulResumeConfig::enabled`] off: saved parameters are ignored (observing goes on) | on | |
//! | `min-rtt=F` (0 to 1) | [`CarefulResumeConfig::min_rtt_factor`]: no jump if the minimum RTT is at most `saved_rtt x F` | 0.5 ([`MIN_RTT_FACTOR`]) | Sec. 3.2, 4.2.1 |
//! | `max-rtt=F` (1 to 10^6) | [`CarefulResumeConfig::max_rtt_factor`]: no jump if the minimum RTT is more than `saved_rtt x F` | 10 ([`MAX_RTT_FACTOR`]) | Sec. 4.2.1 |
//! | `jump=F` (0 to 0.5) | [`CarefulResumeConfig::jump_fraction`](field@CarefulResumeConfig::jump_fraction): `jump_cwnd = saved_cwnd x F` | 0.5 ([`JUMP_FRACTION`]) | Sec. 3.3 |
//! | `max-jump=BYTES` | [`CarefulResumeConfig::max_jump`]: a cap on `jump_cwnd` | none | Sec. 4.3.2 |
//! | `burst=BYTES` | [`CarefulResumeConfig::max_burst`]: the largest burst of unvalidated data | the IW | Sec. 4.3.2 |
//! | `unpaced` | [`CarefulResumeConfig::pace_unvalidated`] off: the jump is not released at `jump_cwnd / RTT` | paced | Sec. 3.3 (see *Pacing* above) |
//! | `pacer-gain=F` (1 to 100), `no-pacer` | [`CarefulResumeConfig::platform_pacer_gain`]: the gain of the pacer below the controller; `no-pacer`: none | 1.25 ([`QUINN_PACER_GAIN`]) | quinn-proto 0.11's pacer (RFC 9002 Sec. 7.7's N) |
//! | `retreat=F` (0 to 0.5) | [`CarefulResumeConfig::retreat_fraction`](field@CarefulResumeConfig::retreat_fraction): `CWND = PipeSize x F` on entering Safe Retreat | 0.5 ([`RETREAT_FRACTION`]) | Sec. 3.5 |
//! | `beta=F` (0.5 to 1) | [`CarefulResumeConfig::beta`](field@CarefulResumeConfig::beta): `ssthresh <= PipeSize x F` on leaving Safe Retreat | 0.5 ([`BETA`]) | Sec. 2.4, 3.5 |
//! | `min-observe=N` | [`CarefulResumeConfig::min_observe_iw`]: no observation below N initial windows (0: always) | 4 ([`MIN_OBSERVE_IW`]) | Sec. 3.1 |
//! | `lifetime=S` | [`CarefulResumeConfig::lifetime`]: the Lifetime of an observation, seconds | 3600 s ([`DEFAULT_LIFETIME`]) | Sec. 4.3.1 (no number given) |
//! | `keep-on-delay-exit` | [`CarefulResumeConfig::delay_exit_stops_resume`] off: a delay-based slow-start exit in Reconnaissance does not end Careful Resume | ends it | Sec. 4.2.1 (left open) |
//! | `jump-on-confirm` | [`CarefulResumeConfig::defer_jump`] off: jump as soon as the path is confirmed, not when the window is full | defer | Sec. 3.2 ("MAY be deferred") |
//! | `ss-cap=F` (0.1 to 100) | [`CarefulResumeConfig::slow_start_cap`]: after a validated jump, `ssthresh <= saved_cwnd x F` | none | ours (the RFC's Normal Phase is normal CC) |
//!
//! [`Controller::observe`]: crate::Controller::observe
//! [`Controller::pacing`]: crate::Controller::pacing
//! [`Controller::window`]: crate::Controller::window
//! [`Controller::congestion_window`]: crate::Controller::congestion_window
//! [`CongestionConfig::resume`]: crate::CongestionConfig::resume
//! [`CcEvent::CarefulResumePhaseUpdated`]: crate::CcEvent::CarefulResumePhaseUpdated

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use crate::controller::RttInfo;
use crate::event::{CcEvent, Emitter};

/// Sec. 3.2 "Minimum RTT too small", Sec. 4.2.1: a minimum RTT at most `saved_rtt / 2`
/// means the path changed.
pub const MIN_RTT_FACTOR: f64 = 0.5;
/// Sec. 4.2.1: a current RTT more than ten times `saved_rtt` means the path changed.
pub const MAX_RTT_FACTOR: f64 = 10.0;
/// Sec. 3.3 "Setting the jump_cwnd", Sec. 4.3: `jump_cwnd` MUST be no more than half of
/// `saved_cwnd`.
pub const JUMP_FRACTION: f64 = 0.5;
/// Sec. 3.5 "Re-initializing CWND": the CWND MUST be reduced to no more than `PipeSize / 2`.
pub const RETREAT_FRACTION: f64 = 0.5;
/// Sec. 2.4, 3.5: Beta, between 0.5 and 1; the default 0.5.
pub const BETA: f64 = 0.5;
/// Sec. 3.1: a sender can choose not to save a CWND below four times the IW.
pub const MIN_OBSERVE_IW: u32 = 4;
/// Sec. 4.3.1: the Lifetime of saved parameters. The RFC gives no number; see the module
/// docs for this choice.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// quinn-proto 0.11's pacer refills at 1.25 x window / smoothed RTT (RFC 9002 Sec. 7.7's
/// N = 1.25).
pub const QUINN_PACER_GAIN: f64 = 1.25;

/// Careful Resume constants and switches. Defaults are the RFC's (and quinn-proto 0.11's
/// pacer gain); each field cites its section.
#[derive(Debug, Clone, PartialEq)]
pub struct CarefulResumeConfig {
    /// Careful Resume runs when this is on *and* saved parameters were given
    /// ([`crate::CongestionConfig::resume`]). Observing works either way. Default on.
    pub enabled: bool,
    /// Sec. 3.2, 4.2.1: no jump if the Reconnaissance minimum RTT is at most
    /// `saved_rtt x min_rtt_factor`; in the Unvalidated Phase, such a sample means a path
    /// change. Default [`MIN_RTT_FACTOR`].
    pub min_rtt_factor: f64,
    /// Sec. 4.2.1: no jump if the Reconnaissance minimum RTT is more than
    /// `saved_rtt x max_rtt_factor`. Default [`MAX_RTT_FACTOR`].
    pub max_rtt_factor: f64,
    /// Sec. 3.3: `jump_cwnd = saved_cwnd x jump_fraction`, at most 0.5 (a MUST; larger
    /// values are treated as 0.5). Default [`JUMP_FRACTION`].
    pub jump_fraction: f64,
    /// Sec. 4.3.2 `max_jump`: a configured maximum `jump_cwnd` in bytes. Default none.
    pub max_jump: Option<u64>,
    /// Sec. 4.3.2: the largest burst of unvalidated data, bytes. Default (`None`): the IW.
    pub max_burst: Option<u64>,
    /// Release the jump through [`crate::Controller::window`] at `jump_cwnd / RTT`
    /// (Sec. 3.3 "Pacing transmission"; see the module docs). Default on.
    pub pace_unvalidated: bool,
    /// Gain of the pacer below the controller, which paces at `gain x window / srtt`:
    /// 1.25 for quinn-proto 0.11 ([`QUINN_PACER_GAIN`]); `None` if there is no such pacer.
    /// The paced window is never below `jump_cwnd / gain`. Default 1.25.
    pub platform_pacer_gain: Option<f64>,
    /// Sec. 3.5: `CWND = PipeSize x retreat_fraction` on entering Safe Retreat, at most 0.5
    /// (a MUST). Default [`RETREAT_FRACTION`].
    pub retreat_fraction: f64,
    /// Sec. 3.5: `ssthresh <= PipeSize x beta` on leaving Safe Retreat, in [0.5, 1].
    /// Default [`BETA`].
    pub beta: f64,
    /// Sec. 3.1: [`crate::Controller::observe`] declines a `saved_cwnd` below
    /// `min_observe_iw x IW` (0: never declines). Default [`MIN_OBSERVE_IW`].
    pub min_observe_iw: u32,
    /// Sec. 4.3.1: the Lifetime written into observations. Default [`DEFAULT_LIFETIME`].
    pub lifetime: Duration,
    /// Sec. 4.2.1 leaves open whether an RTT-based congestion signal should stop Careful
    /// Resume: when on, a slow-start exit without loss in the Reconnaissance Phase (HyStart,
    /// SEARCH) ends it (`rtt_not_validated`). Default on.
    pub delay_exit_stops_resume: bool,
    /// Sec. 3.2 "Path confirmed": the jump MAY wait until more is to be sent than the CWND
    /// allows. On: jump when the window is full (`flight + MSS >= CWND`) and the stack does
    /// not report the application as the limit. Off: jump as soon as the path is confirmed
    /// and the stack does not report the application as the limit. Default on: quinn's
    /// `app_limited` only says the last poll sent something or was blocked, not that more
    /// than a window is queued; waiting costs at most `1 / pacer gain` RTT (0.8 with
    /// quinn) and spares the jumps a rate-limited sender would undo (`rate_limited`).
    pub defer_jump: bool,
    /// Our option, not the RFC's: when Careful Resume ends with every unvalidated packet
    /// acknowledged (`last_unvalidated_packet_acknowledged`), cap `ssthresh` at
    /// `saved_cwnd x F`, so that slow start stops at the capacity the earlier connection
    /// measured and the avoidance probes beyond it. The RFC's Normal Phase is normal CC
    /// (Sec. 3.7): slow start goes on from a window already near the saved capacity and
    /// doubles into the bottleneck's queue unless its exit heuristic catches it within a
    /// round trip. `None` (the default) leaves ssthresh alone.
    pub slow_start_cap: Option<f64>,
}

impl Default for CarefulResumeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            min_rtt_factor: MIN_RTT_FACTOR,
            max_rtt_factor: MAX_RTT_FACTOR,
            jump_fraction: JUMP_FRACTION,
            max_jump: None,
            max_burst: None,
            pace_unvalidated: true,
            platform_pacer_gain: Some(QUINN_PACER_GAIN),
            retreat_fraction: RETREAT_FRACTION,
            beta: BETA,
            min_observe_iw: MIN_OBSERVE_IW,
            lifetime: DEFAULT_LIFETIME,
            delay_exit_stops_resume: true,
            defer_jump: true,
            slow_start_cap: None,
        }
    }
}

impl CarefulResumeConfig {
    /// Careful Resume switched off: saved parameters are ignored (observing still works).
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    fn jump_fraction(&self) -> f64 {
        self.jump_fraction.clamp(0.0, JUMP_FRACTION)
    }

    fn retreat_fraction(&self) -> f64 {
        self.retreat_fraction.clamp(0.0, RETREAT_FRACTION)
    }

    fn beta(&self) -> f64 {
        self.beta.clamp(0.5, 1.0)
    }
}

/// A Careful Resume phase: `CarefulResumePhase` of draft-ietf-tsvwg-careful-resume-qlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CarefulResumePhase {
    /// Sec. 3.2: normal CC from the IW while the path is confirmed.
    Reconnaissance,
    /// Sec. 3.3: the window jumped; unvalidated packets are paced out.
    Unvalidated,
    /// Sec. 3.4: waiting for the unvalidated packets to be acknowledged.
    Validating,
    /// Sec. 3.7: normal CC (also: Careful Resume not in use). Observing happens here.
    Normal,
    /// Sec. 3.5: congestion after the jump; the path drains.
    SafeRetreat,
}

impl CarefulResumePhase {
    /// The qlog name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reconnaissance => "reconnaissance",
            Self::Unvalidated => "unvalidated",
            Self::Validating => "validating",
            Self::Normal => "normal",
            Self::SafeRetreat => "safe_retreat",
        }
    }
}

impl fmt::Display for CarefulResumePhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the phase changed: the `trigger` of the qlog draft's `CarefulResumePhaseUpdated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum CarefulResumeTrigger {
    /// Reconnaissance -> Unvalidated: path confirmed and more to send than the CWND allows.
    CongestionWindowLimited,
    /// Unvalidated -> Validating: more than one RTT in the Unvalidated Phase.
    RttExceeded,
    /// Unvalidated -> Validating: the first unvalidated packet was acknowledged.
    FirstUnvalidatedPacketAcknowledged,
    /// Unvalidated -> Validating: the jump window was used up.
    LastUnvalidatedPacketSent,
    /// Validating -> Normal: every unvalidated packet was acknowledged.
    LastUnvalidatedPacketAcknowledged,
    /// Reconnaissance -> Normal: the RTT does not confirm the path.
    RttNotValidated,
    /// Unvalidated -> Normal: `flight_size <= PipeSize` (or `< IW`).
    RateLimited,
    /// Unvalidated -> Safe Retreat (Reconnaissance -> Normal): the path changed.
    PathChanged,
    /// Unvalidated/Validating -> Safe Retreat, Reconnaissance -> Normal: packet loss.
    PacketLoss,
    /// As `PacketLoss`, for an ECN-CE mark.
    #[cfg_attr(feature = "serde", serde(rename = "ECN_CE"))]
    EcnCe,
    /// Safe Retreat -> Normal: the last packet sent before the retreat was acknowledged.
    ExitRecovery,
}

impl CarefulResumeTrigger {
    /// The qlog name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CongestionWindowLimited => "congestion_window_limited",
            Self::RttExceeded => "rtt_exceeded",
            Self::FirstUnvalidatedPacketAcknowledged => "first_unvalidated_packet_acknowledged",
            Self::LastUnvalidatedPacketSent => "last_unvalidated_packet_sent",
            Self::LastUnvalidatedPacketAcknowledged => "last_unvalidated_packet_acknowledged",
            Self::RttNotValidated => "rtt_not_validated",
            Self::RateLimited => "rate_limited",
            Self::PathChanged => "path_changed",
            Self::PacketLoss => "packet_loss",
            Self::EcnCe => "ECN_CE",
            Self::ExitRecovery => "exit_recovery",
        }
    }
}

impl fmt::Display for CarefulResumeTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Remote Endpoint of Sec. 2.2: the sender's view of the path, matched against the
/// `saved_remote_endpoint` of saved parameters. The local interface may be unknown (quinn
/// reports it only on some platforms); `None` matches only `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RemoteEndpoint {
    /// The sending interface (a local address).
    pub local: Option<IpAddr>,
    /// The destination address (unicast or anycast; no port, as in Sec. 2.2).
    pub remote: IpAddr,
    /// The DSCP, if the sender sets one per connection (Sec. 2.2).
    pub dscp: Option<u8>,
}

impl RemoteEndpoint {
    /// The endpoint `remote` reached from `local`.
    pub fn new(local: Option<IpAddr>, remote: IpAddr) -> Self {
        Self {
            local,
            remote,
            dscp: None,
        }
    }

    /// The same endpoint with a DSCP.
    pub fn with_dscp(mut self, dscp: u8) -> Self {
        self.dscp = Some(dscp);
        self
    }
}

/// What a connection measured (Sec. 3.1, 4.1): the capacity it used and its minimum RTT.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Observation {
    /// Bytes acknowledged in the last round trip limited by the window, scaled to
    /// `saved_rtt` (acknowledged rate x minimum RTT); a round limited by the application
    /// only raises it (Sec. 4.1).
    pub saved_cwnd: u64,
    /// Minimum RTT of the connection (Sec. 3.1 "saved_rtt").
    pub saved_rtt: Duration,
    /// When `saved_cwnd` was measured (controller time).
    pub at: Duration,
    /// The configured Lifetime (Sec. 4.3.1).
    pub lifetime: Duration,
}

impl Observation {
    /// The record to keep for `endpoint`, saved at wall-clock time `now`.
    pub fn save(&self, endpoint: RemoteEndpoint, now: SystemTime) -> SavedCcParams {
        SavedCcParams {
            saved_cwnd: self.saved_cwnd,
            saved_rtt: self.saved_rtt,
            saved_remote_endpoint: endpoint,
            saved_at: now,
            lifetime: self.lifetime,
        }
    }
}

/// Why [`crate::Controller::observe`] has nothing to save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotObserved {
    /// Careful Resume is in this phase; observing waits for Normal (Sec. 4.6, App. A).
    Resuming(CarefulResumePhase),
    /// No round trip completed in the Normal phase yet.
    NoRound,
    /// `saved_cwnd` is below `min_observe_iw x IW` (Sec. 3.1).
    TooSmall { saved_cwnd: u64, minimum: u64 },
}

impl fmt::Display for NotObserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Resuming(phase) => write!(f, "careful resume is in its {phase} phase"),
            Self::NoRound => f.write_str("no round trip observed yet"),
            Self::TooSmall {
                saved_cwnd,
                minimum,
            } => write!(f, "saved_cwnd {saved_cwnd} B is below {minimum} B"),
        }
    }
}

/// Saved congestion-control parameters (Sec. 3.1): the record a sender keeps per Remote
/// Endpoint, serializable with the `serde` feature.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SavedCcParams {
    /// Sec. 2.4 `saved_cwnd`, bytes.
    pub saved_cwnd: u64,
    /// Sec. 2.4 `saved_rtt`.
    pub saved_rtt: Duration,
    /// Sec. 2.4 `saved_remote_endpoint`.
    pub saved_remote_endpoint: RemoteEndpoint,
    /// Wall-clock time of saving.
    pub saved_at: SystemTime,
    /// Sec. 4.3.1 Lifetime: unusable from `saved_at + lifetime` on.
    pub lifetime: Duration,
}

/// Why saved parameters cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeRejected {
    /// Sec. 3.2 "Path change": the Remote Endpoint is not the saved one.
    PathChanged,
    /// Sec. 3.2 "Lifetime of saved CC parameters": the Lifetime is exceeded (or the saved
    /// time is in the future: a clock that stepped back cannot vouch for the age).
    Expired,
    /// Nothing is saved for this endpoint (a [`SavedStateStore`] look-up).
    NotSaved,
}

impl fmt::Display for ResumeRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PathChanged => "the remote endpoint is not the saved one",
            Self::Expired => "the saved parameters outlived their lifetime",
            Self::NotSaved => "nothing is saved for this endpoint",
        })
    }
}

impl std::error::Error for ResumeRejected {}

impl SavedCcParams {
    /// When the parameters stop being usable (`None`: beyond what `SystemTime` holds).
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.saved_at.checked_add(self.lifetime)
    }

    /// Whether the parameters may seed a connection to `endpoint` at wall-clock `now`
    /// (Sec. 3.2 "Path change" and "Lifetime"). A rejected set is to be deleted.
    pub fn check(
        &self,
        endpoint: &RemoteEndpoint,
        now: SystemTime,
    ) -> Result<ResumeParams, ResumeRejected> {
        self.check_lifetime(now, self.lifetime)?;
        if *endpoint != self.saved_remote_endpoint {
            return Err(ResumeRejected::PathChanged);
        }
        Ok(ResumeParams::new(self.saved_cwnd, self.saved_rtt))
    }

    fn check_lifetime(&self, now: SystemTime, lifetime: Duration) -> Result<(), ResumeRejected> {
        match now.duration_since(self.saved_at) {
            Ok(age) if age < lifetime => Ok(()),
            _ => Err(ResumeRejected::Expired),
        }
    }
}

/// The parameters a connection resumes from (the qlog draft's `restored_data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ResumeParams {
    /// Bytes.
    pub saved_cwnd: u64,
    /// Minimum RTT of the observed connection.
    pub saved_rtt: Duration,
}

impl ResumeParams {
    /// Parameters the caller vouches for (path and Lifetime already checked). Prefer
    /// [`SavedCcParams::check`] or [`SavedStateStore::take`], which check them.
    pub fn new(saved_cwnd: u64, saved_rtt: Duration) -> Self {
        Self {
            saved_cwnd,
            saved_rtt,
        }
    }
}

/// A bounded store of saved parameters, one set per Remote Endpoint (Sec. 3.1 "MUST NOT
/// retain more than one set"). [`take`](Self::take) hands a set to one connection and
/// removes it (Sec. 3.2 "Only one connection can use a specific set"), deleting expired
/// sets; the connection saves a new observation when it ends (Sec. 3.1 "Updating"). Not
/// used by the controller: a sender keeps one per process (or shares it, Sec. 4.2).
#[derive(Debug, Clone)]
pub struct SavedStateStore {
    capacity: usize,
    max_lifetime: Duration,
    entries: BTreeMap<RemoteEndpoint, SavedCcParams>,
}

impl SavedStateStore {
    /// At most `capacity` sets; none is used beyond `max_lifetime` whatever its own
    /// Lifetime (Sec. 4.3.1: "the maximum Lifetime is a configurable parameter").
    pub fn new(capacity: usize, max_lifetime: Duration) -> Self {
        Self {
            capacity,
            max_lifetime,
            entries: BTreeMap::new(),
        }
    }

    /// Keeps `params`, replacing the set of the same endpoint; when full, the set saved
    /// longest ago makes room.
    pub fn save(&mut self, params: SavedCcParams) {
        if self.capacity == 0 {
            return;
        }
        let key = params.saved_remote_endpoint;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(k, v)| (v.saved_at, **k))
                .map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, params);
    }

    /// Takes the set for `endpoint` to resume from, at wall-clock `now`. An expired set is
    /// deleted and rejected.
    pub fn take(
        &mut self,
        endpoint: &RemoteEndpoint,
        now: SystemTime,
    ) -> Result<ResumeParams, ResumeRejected> {
        let saved = self
            .entries
            .remove(endpoint)
            .ok_or(ResumeRejected::NotSaved)?;
        saved.check_lifetime(now, saved.lifetime.min(self.max_lifetime))?;
        saved.check(endpoint, now)
    }

    /// The set for `endpoint`, if any (expired or not).
    pub fn get(&self, endpoint: &RemoteEndpoint) -> Option<&SavedCcParams> {
        self.entries.get(endpoint)
    }

    /// Deletes the set for `endpoint` (Sec. 3.5 "Removing saved information").
    pub fn remove(&mut self, endpoint: &RemoteEndpoint) -> Option<SavedCcParams> {
        self.entries.remove(endpoint)
    }

    /// Deletes the sets expired at `now`; returns how many.
    pub fn purge_expired(&mut self, now: SystemTime) -> usize {
        let before = self.entries.len();
        let max = self.max_lifetime;
        self.entries
            .retain(|_, v| v.check_lifetime(now, v.lifetime.min(max)).is_ok());
        before - self.entries.len()
    }

    /// Deletes everything (Sec. 4.3.1: after a configuration change).
    pub fn flush(&mut self) {
        self.entries.clear();
    }

    /// Number of sets kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The pacing Careful Resume requires while unvalidated packets are sent (Sec. 3.3,
/// 4.3.2): `ITT = current RTT x MPS / jump_cwnd`, bursts of at most `max_burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacingRequirement {
    /// Bytes per second: `jump_cwnd / rtt`.
    pub rate: f64,
    /// Largest burst in bytes (the IW unless configured).
    pub max_burst: u64,
    /// The jump window the rate derives from.
    pub jump_cwnd: u64,
    /// The current RTT the rate derives from.
    pub rtt: Duration,
}

impl PacingRequirement {
    /// The inter-packet transmission time for a packet of `bytes` (Sec. 4.3.2 ITT).
    pub fn interval(&self, bytes: u64) -> Duration {
        if self.jump_cwnd == 0 {
            return Duration::ZERO;
        }
        self.rtt.mul_f64(bytes as f64 / self.jump_cwnd as f64)
    }
}

/// One saved-parameter set, handed to the first controller built from a configuration
/// (Sec. 3.2 "Using saved_cwnd"): clones of the configuration share the claim.
#[derive(Debug, Clone)]
pub(crate) struct ResumeTicket {
    params: ResumeParams,
    claimed: Arc<AtomicBool>,
}

impl ResumeTicket {
    pub(crate) fn new(params: ResumeParams) -> Self {
        Self {
            params,
            claimed: Arc::new(AtomicBool::new(false)),
        }
    }

    pub(crate) fn claim(&self) -> Option<ResumeParams> {
        (!self.claimed.swap(true, Ordering::AcqRel)).then_some(self.params)
    }

    pub(crate) fn pending(&self) -> Option<ResumeParams> {
        (!self.claimed.load(Ordering::Acquire)).then_some(self.params)
    }
}

/// The controller's window variables Careful Resume reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    pub max_window: u64,
}

/// What a phase change does to the controller's window.
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
    /// Entering Safe Retreat: a congestion event with this window.
    Retreat(u64),
    /// Leaving Safe Retreat: `ssthresh <= cap`; the avoidance learns `pipesize`.
    RetreatDone { cap: u64, pipesize: u64 },
    /// Leaving after persistent congestion: `ssthresh <= cap`.
    CapSsthresh(u64),
}

/// A phase change for the controller to apply, then report with
/// [`CarefulResume::report`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transition {
    pub old: CarefulResumePhase,
    pub trigger: Option<CarefulResumeTrigger>,
    pub effect: Effect,
}

/// What the controller does with one acknowledgement.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AckEffect {
    /// Normal CC (Reconnaissance, Validating, Normal).
    Normal,
    /// Unvalidated, Safe Retreat: the window does not grow (the slow start still learns
    /// from the acknowledgement).
    Hold,
    /// The acknowledgement changed the phase.
    Transition(Transition),
}

/// The acknowledged rate per round trip, for `saved_cwnd` (Sec. 3.1, 4.1).
#[derive(Debug, Clone, Copy)]
struct Observer {
    round_bytes: u64,
    round_app_limited: bool,
    /// The round began before observing did (or the connection's first round): skip it.
    round_partial: bool,
    round_start: Duration,
    saved_cwnd: Option<u64>,
    at: Duration,
    min_rtt: Duration,
}

impl Observer {
    fn new() -> Self {
        Self {
            round_bytes: 0,
            round_app_limited: false,
            round_partial: true,
            round_start: Duration::ZERO,
            saved_cwnd: None,
            at: Duration::ZERO,
            min_rtt: Duration::MAX,
        }
    }

    fn restart_round(&mut self) {
        self.round_bytes = 0;
        self.round_app_limited = false;
        self.round_partial = true;
    }
}

/// Careful Resume state of one connection, kept by the [`crate::Controller`] (always
/// present: without saved parameters it stays in Normal and only observes).
#[derive(Debug, Clone)]
pub struct CarefulResume {
    config: CarefulResumeConfig,
    restored: Option<ResumeParams>,
    phase: CarefulResumePhase,
    announced: bool,
    iw: u64,
    /// `flight_size`: bytes sent and neither acknowledged nor lost.
    flight: u64,
    last_sent_pn: Option<u64>,
    recon_acked: u64,
    recon_min_rtt: Duration,
    current_rtt: Duration,
    app_limited: bool,
    pipesize: u64,
    jump_cwnd: u64,
    unvalidated_start: Duration,
    first_unvalidated_pn: Option<u64>,
    last_unvalidated_pn: Option<u64>,
    retreat_end_pn: Option<u64>,
    /// Bytes the pacing allows since the jump (burst + rate x time).
    pace_credit: f64,
    pace_sent: u64,
    pace_at: Duration,
    invalidated: bool,
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
            pace_credit: 0.0,
            pace_sent: 0,
            pace_at: Duration::ZERO,
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
                rate: self.jump_cwnd as f64 / rtt.as_secs_f64(),
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
        let o = &self.observer;
        let saved_cwnd = match o.saved_cwnd {
            Some(c) if o.min_rtt != Duration::MAX => c,
            _ => return Err(NotObserved::NoRound),
        };
        let minimum = self
            .iw
            .saturating_mul(u64::from(self.config.min_observe_iw));
        if saved_cwnd < minimum {
            return Err(NotObserved::TooSmall {
                saved_cwnd,
                minimum,
            });
        }
        Ok(Observation {
            saved_cwnd,
            saved_rtt: o.min_rtt,
            at: o.at,
            lifetime: self.config.lifetime,
        })
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
        let unsent = (self.pace_credit - self.pace_sent as f64).max(0.0) as u64;
        let mut window = self.flight.saturating_add(unsent);
        if let Some(gain) = self.config.platform_pacer_gain.filter(|g| *g >= 1.0) {
            window = window.max((cwnd as f64 / gain) as u64);
        }
        window.min(cwnd)
    }

    fn advance(&mut self, now: Duration) {
        if self.phase == CarefulResumePhase::Unvalidated && now > self.pace_at {
            let dt = (now - self.pace_at).as_secs_f64();
            self.pace_credit += self.jump_cwnd as f64 * dt / self.pacing_rtt().as_secs_f64();
            self.pace_at = now;
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
                self.pace_sent = self.pace_sent.saturating_add(bytes);
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
        self.pace_credit = self.max_burst() as f64;
        self.pace_sent = 0;
        self.pace_at = now;
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
        let o = &mut self.observer;
        o.min_rtt = o.min_rtt.min(rtt.latest);
        // Sec. 3.3, 3.4, 3.5 "Tracking PipeSize": acknowledged unvalidated data.
        let unvalidated = sent > self.unvalidated_start;
        match self.phase {
            CarefulResumePhase::Normal => {
                o.round_bytes = o.round_bytes.saturating_add(bytes);
                o.round_app_limited |= app_limited;
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

    /// A round trip ended (the controller's round boundary).
    ///
    /// Sec. 3.1 measures `saved_cwnd` as the bytes sent (acknowledged) during an RTT. A
    /// round lasts the minimum RTT plus any queueing, so its bytes are scaled to the
    /// minimum RTT: `saved_cwnd = acknowledged rate x saved_rtt`. Otherwise a standing
    /// queue would be saved as capacity, the overshoot Sec. 4.1 warns of, and the resumed
    /// rate (`jump_cwnd / RTT`, Sec. 4.2.1) could exceed the rate observed.
    pub(crate) fn on_round_end(&mut self, now: Duration) {
        let normal = self.phase == CarefulResumePhase::Normal;
        let o = &mut self.observer;
        let duration = now.saturating_sub(o.round_start);
        o.round_start = now;
        if normal && !o.round_partial && o.round_bytes > 0 && o.min_rtt != Duration::MAX {
            let scale = o.min_rtt.as_secs_f64() / duration.as_secs_f64().max(1e-9);
            let measured = (o.round_bytes as f64 * scale.min(1.0)) as u64;
            // Sec. 4.1: a round limited by the application is discounted when an earlier
            // observation recorded more.
            let measured = match o.saved_cwnd {
                Some(c) if o.round_app_limited => c.max(measured),
                _ => measured,
            };
            o.saved_cwnd = Some(measured);
            o.at = now;
        }
        o.restart_round();
        o.round_partial = !normal;
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

// ---- spec strings -------------------------------------------------------------------

/// Options of the `+cr` spec suffix.
pub(crate) const SPEC_OPTIONS: &str = "off, min-rtt=F, max-rtt=F, jump=F, max-jump=BYTES, \
     burst=BYTES, unpaced, pacer-gain=F, no-pacer, retreat=F, beta=F, min-observe=N, \
     lifetime=S, keep-on-delay-exit, jump-on-confirm, ss-cap=F";

/// Splits a lower-case spec into the part before `+cr[:OPTIONS]` and the options.
pub(crate) fn split_spec(spec: &str) -> (&str, Option<&str>) {
    if let Some(head) = spec.strip_suffix("+cr") {
        return (head, Some(""));
    }
    match spec.rfind("+cr:") {
        Some(i) => (&spec[..i], Some(&spec[i + 4..])),
        None => (spec, None),
    }
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("cr option {key}={value} is not a number"))
}

fn ranged(key: &str, value: &str, min: f64, max: f64) -> Result<f64, String> {
    let v: f64 = number(key, value)?;
    if !(v.is_finite() && (min..=max).contains(&v)) {
        return Err(format!(
            "cr option {key}={value} must be between {min} and {max}"
        ));
    }
    Ok(v)
}

/// Parses the options of a `+cr` suffix (see [`crate::spec`]).
pub(crate) fn parse_spec_options(opts: &str) -> Result<CarefulResumeConfig, String> {
    let mut c = CarefulResumeConfig::default();
    for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match opt {
            "off" => c.enabled = false,
            "unpaced" => c.pace_unvalidated = false,
            "no-pacer" => c.platform_pacer_gain = None,
            "keep-on-delay-exit" => c.delay_exit_stops_resume = false,
            "jump-on-confirm" => c.defer_jump = false,
            _ => {
                let Some((key, value)) = opt.split_once('=') else {
                    return Err(format!("unknown cr option '{opt}'; valid: {SPEC_OPTIONS}"));
                };
                match key {
                    "min-rtt" => c.min_rtt_factor = ranged(key, value, 0.0, 1.0)?,
                    "max-rtt" => c.max_rtt_factor = ranged(key, value, 1.0, 1e6)?,
                    "jump" => c.jump_fraction = ranged(key, value, 0.0, JUMP_FRACTION)?,
                    "max-jump" => c.max_jump = Some(number(key, value)?),
                    "burst" => c.max_burst = Some(number(key, value)?),
                    "pacer-gain" => c.platform_pacer_gain = Some(ranged(key, value, 1.0, 100.0)?),
                    "retreat" => c.retreat_fraction = ranged(key, value, 0.0, RETREAT_FRACTION)?,
                    "beta" => c.beta = ranged(key, value, 0.5, 1.0)?,
                    "min-observe" => c.min_observe_iw = number(key, value)?,
                    "ss-cap" => c.slow_start_cap = Some(ranged(key, value, 0.1, 100.0)?),
                    "lifetime" => {
                        let s = ranged(key, value, 0.0, 1e9)?;
                        c.lifetime = Duration::from_secs_f64(s);
                    }
                    _ => {
                        return Err(format!("unknown cr option '{opt}'; valid: {SPEC_OPTIONS}"));
                    }
                }
            }
        }
    }
    Ok(c)
}

/// Writes the `+cr:...` suffix of a configuration; nothing for the default one.
pub(crate) fn write_spec(f: &mut fmt::Formatter<'_>, c: &CarefulResumeConfig) -> fmt::Result {
    let d = CarefulResumeConfig::default();
    let mut opts: Vec<String> = Vec::new();
    if !c.enabled {
        opts.push("off".into());
    }
    if c.min_rtt_factor != d.min_rtt_factor {
        opts.push(format!("min-rtt={}", c.min_rtt_factor));
    }
    if c.max_rtt_factor != d.max_rtt_factor {
        opts.push(format!("max-rtt={}", c.max_rtt_factor));
    }
    if c.jump_fraction != d.jump_fraction {
        opts.push(format!("jump={}", c.jump_fraction));
    }
    if let Some(m) = c.max_jump {
        opts.push(format!("max-jump={m}"));
    }
    if let Some(b) = c.max_burst {
        opts.push(format!("burst={b}"));
    }
    if !c.pace_unvalidated {
        opts.push("unpaced".into());
    }
    match c.platform_pacer_gain {
        None => opts.push("no-pacer".into()),
        Some(g) if Some(g) != d.platform_pacer_gain => opts.push(format!("pacer-gain={g}")),
        Some(_) => {}
    }
    if c.retreat_fraction != d.retreat_fraction {
        opts.push(format!("retreat={}", c.retreat_fraction));
    }
    if c.beta != d.beta {
        opts.push(format!("beta={}", c.beta));
    }
    if c.min_observe_iw != d.min_observe_iw {
        opts.push(format!("min-observe={}", c.min_observe_iw));
    }
    if c.lifetime != d.lifetime {
        opts.push(format!("lifetime={}", c.lifetime.as_secs_f64()));
    }
    if !c.delay_exit_stops_resume {
        opts.push("keep-on-delay-exit".into());
    }
    if !c.defer_jump {
        opts.push("jump-on-confirm".into());
    }
    if let Some(f) = c.slow_start_cap {
        opts.push(format!("ss-cap={f}"));
    }
    if opts.is_empty() {
        return Ok(());
    }
    write!(f, "+cr:{}", opts.join(","))
}
