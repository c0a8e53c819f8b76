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
//! requirement ([`PacingRequirement`]), and the quinn adapter ([`crate::adapter`]) reports
//! its rate as `ControllerMetrics::pacing_rate`, in the bits per second quinn-proto 0.11
//! documents there (quinn's qlog shows it).
//!
//! Stock quinn-proto 0.11 cannot be told a pacing rate: its `congestion::Controller` trait
//! has no pacing hook (quinn-proto patch 7 adds one, `Controller::pacing_rate`, which only
//! `bbr3` uses, with the feature `patched-quinn`; Careful Resume does without it so that it
//! works the same on stock quinn), and its pacer (`connection/pacing.rs`) refills at `1.25 x window() /
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
//! # Where each part lives
//!
//! | file | concept |
//! |---|---|
//! | `config.rs` | [`CarefulResumeConfig`] and the RFC's constants, each with its section |
//! | `phase.rs` | [`CarefulResumePhase`] and [`CarefulResumeTrigger`], the qlog draft's names |
//! | `endpoint.rs` | [`RemoteEndpoint`], the identity saved parameters are bound to |
//! | `saved.rs` | [`SavedCcParams`], their checks, and the [`ResumeParams`] a connection resumes from |
//! | `store.rs` | [`SavedStateStore`], one set per Remote Endpoint |
//! | `observer.rs` | observing `saved_cwnd` and `saved_rtt` ([`Observation`]) |
//! | `pacing.rs` | releasing the jump at `jump_cwnd / RTT` ([`PacingRequirement`]) |
//! | `machine.rs` | [`CarefulResume`], the phases' state machine |
//! | `protocol.rs` | what a phase change does to the controller's window, and how the controller applies it |
//! | `spec.rs` | the `+cr[:...]` spec part |
//!
//! [`Controller::observe`]: crate::Controller::observe
//! [`Controller::pacing`]: crate::Controller::pacing
//! [`Controller::window`]: crate::Controller::window
//! [`Controller::congestion_window`]: crate::Controller::congestion_window
//! [`CongestionConfig::resume`]: crate::CongestionConfig::resume
//! [`CcEvent::CarefulResumePhaseUpdated`]: crate::CcEvent::CarefulResumePhaseUpdated

mod config;
mod endpoint;
mod machine;
mod observer;
mod pacing;
mod phase;
mod protocol;
mod saved;
mod spec;
mod store;

pub use config::{
    BETA, CarefulResumeConfig, DEFAULT_LIFETIME, JUMP_FRACTION, MAX_RTT_FACTOR, MIN_OBSERVE_IW,
    MIN_RTT_FACTOR, QUINN_PACER_GAIN, RETREAT_FRACTION,
};
pub use endpoint::RemoteEndpoint;
pub use machine::CarefulResume;
pub use observer::{NotObserved, Observation};
pub use pacing::PacingRequirement;
pub use phase::{CarefulResumePhase, CarefulResumeTrigger};
pub(crate) use protocol::{AckEffect, Effect, ResumedController, Transition, Window};
pub(crate) use saved::ResumeTicket;
pub use saved::{ResumeParams, ResumeRejected, SavedCcParams};
pub use store::SavedStateStore;
