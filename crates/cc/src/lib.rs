//! # satquic-cc: congestion control for quinn with pluggable slow start
//!
//! A quinn file server and download client with the `satellite` [`profile`] (one call,
//! [`profile::apply_satellite`]) and an [`EventLog`]: examples/quinn-app, the program of the
//! README's "Using satquic-cc from a quinn application", built on the registry's quinn and
//! quinn-proto; CI runs it through `satquic link --link qir-sat`.
//!
//! ```no_run
#![doc = include_str!("../../../examples/quinn-app/src/main.rs")]
//! ```
//!
//! ## Stock and patched quinn-proto
//!
//! The crate builds on the registry's quinn-proto 0.11.19. The feature `patched-quinn`
//! (off by default; satquic's own crates turn it on) uses what satquic's patched quinn-proto
//! adds (vendor/quinn-proto/SATQUIC-PATCH.md), and needs that quinn-proto in the build
//! (`[patch.crates-io]`). Every spec string parses and runs either way; without the
//! feature:
//!
//! | part | with `patched-quinn` | without (stock quinn-proto) |
//! |---|---|---|
//! | `+burst` ([`burst`]) | slow-start bursts of a quarter window go to quinn's pacer (patch 4) | computed, not used: quinn's pacer bursts its own (10 to 256 datagrams, 2 ms of the window's rate) |
//! | `+unpaced` ([`unpaced`]) | quinn's pacer is asked for a rate of 0 and does not pace (patch 7) | paced as quinn paces, `1.25 x window / smoothed RTT` |
//! | `bbr3` ([`bbr3`]) | the pacer runs at BBR's pacing rate (`pacing=rate`, patch 7) in bursts of its send quantum (patch 4) | quinn paces at `1.25 x window / smoothed RTT` in its own bursts, as with `pacing=window` |
//! | [`profile::apply_satellite`]: ACK frequency | an ACK every cwnd / 8 bytes and at most every 16 packets, re-requested as the window changes (patch 2, with patch 1's delayed-ACK timer fix) | a fixed ACK every 8th packet, below the initial window's 10 (a fixed request above the first flight stalls it until a probe timeout on stock 0.11.19, patch 1's bug): picoquic's basic upload over sat-250-3 in 5.78 s against 5.19 s patched and 8.18 s with quinn's ACK every 2nd packet |
//! | [`profile::apply_satellite`]: receive windows | per stream quinn's 1.25 MB, auto-tuned up to 256 MiB while the application reads fast (patch 5) | fixed 256 MiB per stream and per connection |
//! | [`profile::apply_satellite`]: probe timeouts | a probe resends the oldest stream data in flight (patch 11) | a PING: a lost last packet costs one more round trip |
//! | [`profile::ack_frequency_config`] | `window_divisor` honoured (patch 2) | `window_divisor` ignored: the fixed request |
//!
//! Careful Resume, the jump, the floor, the loss filter and the rest of the composition
//! drive quinn through `window()` only and are the same. Measured side by side in the
//! repository's BENCHMARKS.md, "Stock and patched quinn-proto". Everything that touches
//! quinn's controller API, and the units it takes, is in [`adapter`].
//!
//! A congestion controller here is a composition, as in quicly's modular slow start
//! (seed 000 Sec. 4.3) and neqo's `classic_cc`:
//!
//! * a [`SlowStart`] for the initial slow start: [`Classic`] (RFC 5681), [`HyStartPlusPlus`]
//!   (RFC 9406), classic HyStart as in Linux CUBIC ([`LinuxHyStart`]), [`HyblaSlowStart`],
//!   or [`Search`] in its versions 2.0, 3.0 and the current draft ([`SearchVersion`]);
//! * an [`Avoidance`]: NewReno (RFC 9002), [`Cubic`] (RFC 9438) or Hybla;
//! * RFC 9002 recovery and persistent congestion, in [`Controller`];
//! * Careful Resume (RFC 9959, [`careful_resume`]): a connection given the parameters a
//!   previous one saved jumps to half its capacity after one RTT;
//! * options for long-RTT paths, not from an RFC: start-up growth faster than doubling
//!   ([`growth`]), picoquic's jump to half the delivery-rate BDP ([`jump`]) and its filter
//!   that answers repeated losses, not isolated ones ([`loss_filter`]), and quiche's undo
//!   of a reduction whose recovery period lost few packets ([`rollback`]); the `satellite`
//!   [`profile`] combines some of them.
//!
//! Two BBRs stand beside the composition, each with its own startup: satquic's BBRv3
//! ([`bbr3`], draft-ietf-ccwg-bbr, spec `bbr3`), and quinn-proto's BBRv1-like
//! controller (spec `bbr`), both through the same [`CongestionConfig`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use satquic_cc::{CongestionConfig, EventLog, Search};
//!
//! let log = EventLog::new();
//! let cc = CongestionConfig::cubic()
//!     .slow_start(Search::draft())
//!     .event_sink(log.clone());
//! let mut transport = quinn_proto::TransportConfig::default();
//! transport.congestion_controller_factory(Arc::new(cc));
//! // ... run the connection, then inspect log.events()
//! ```
//!
//! Spec strings (`cubic+search:v2,lower-cwnd`) are described in [`spec`]; each algorithm's
//! options, with their defaults and sources, in its module under [`avoidance`],
//! [`slow_start`], [`growth`], [`jump`], [`burst`], [`unpaced`], [`loss_filter`], [`rollback`] and
//! [`careful_resume`]; the optional modifiers are registered in [`modifiers`], and the order
//! in which the controller runs them is tabled in [`controller`]. The initial slow start's
//! state and decisions (the slow start, growth, floor, jump, bursts, drain) are one module's,
//! [`startup`], whose effects the controller applies.
//!
//! The crate does no I/O and reads no clock: every time is handed in. Events
//! ([`CcEvent`]) go to a sink the caller owns; without one none is built.

pub mod adapter;
pub mod avoidance;
pub mod bbr3;
pub mod burst;
pub mod careful_resume;
mod config;
pub mod controller;
pub mod delivery;
pub mod event;
pub mod growth;
pub mod jump;
pub mod loss_filter;
pub mod modifiers;
pub mod path_rtt;
pub mod profile;
pub mod retreat;
pub mod rollback;
pub mod slow_start;
pub mod spec;
pub mod startup;
pub mod unpaced;

pub use adapter::QuinnController;
pub use avoidance::{
    Avoidance, AvoidanceConfig, Cubic, CubicConfig, HyblaAvoidance, NewRenoAvoidance,
};
pub use bbr3::{Bbr3, Bbr3Config, Bbr3Pacing, Bbr3State, QuinnBbr3};
pub use burst::SlowStartBurst;
pub use careful_resume::{
    CarefulResume, CarefulResumeConfig, CarefulResumePhase, CarefulResumeTrigger, NotObserved,
    Observation, PacingRequirement, RemoteEndpoint, ResumeParams, ResumeRejected, SavedCcParams,
    SavedStateStore,
};
pub use config::CongestionConfig;
pub use controller::{Controller, RttInfo};
pub use event::{CcEvent, EventLog, EventSink, ExitReason, SearchOutcome};
pub use growth::{RttWindowFloor, StartupGrowth};
pub use jump::BdpJump;
pub use loss_filter::LossFilterConfig;
pub use modifiers::Modifiers;
pub use retreat::Retreat;
pub use rollback::RollbackConfig;
pub use slow_start::{
    AckSample, Classic, ExitAction, HyStartConfig, HyStartDetect, HyStartPlusPlus, HyblaSlowStart,
    LinuxHyStart, LinuxHyStartConfig, LookbackRtt, Search, SearchClock, SearchConfig, SearchMode,
    SearchVersion, SlowStart, SlowStartConfig, SsDecision,
};
pub use spec::{CcSpec, ControllerSpec, SpecError};
pub use unpaced::Unpaced;
