//! [`CongestionConfig`]: what a quinn user configures (quinn's factory trait on it is in
//! [`crate::adapter`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use satquic_cc::{CongestionConfig, Search};
//!
//! let mut transport = quinn_proto::TransportConfig::default();
//! transport.congestion_controller_factory(Arc::new(
//!     CongestionConfig::cubic().slow_start(Search::draft()),
//! ));
//! // or from a spec string, as every satquic command accepts:
//! let cc: CongestionConfig = "cubic+search:v2,lower-cwnd".parse().unwrap();
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::avoidance::{AvoidanceConfig, CubicConfig};
use crate::bbr3::Bbr3;
use crate::burst::SlowStartBurst;
use crate::careful_resume::{CarefulResumeConfig, ResumeParams, ResumeTicket};
use crate::controller::Controller;
use crate::event::{Emitter, EventSink};
use crate::growth::{RttWindowFloor, StartupGrowth};
use crate::jump::BdpJump;
use crate::loss_filter::LossFilterConfig;
use crate::modifiers::Modifiers;
use crate::rollback::RollbackConfig;
use crate::slow_start::{HYBLA_RTT0, SlowStartConfig};
use crate::spec::{ControllerSpec, SpecError, parse_spec, write_spec};
use crate::unpaced::Unpaced;

/// A congestion controller configuration: avoidance + slow start + window settings +
/// an optional event sink. Implements quinn's `ControllerFactory`.
#[derive(Clone)]
pub struct CongestionConfig {
    avoidance: AvoidanceConfig,
    slow_start: SlowStartConfig,
    /// The optional modifiers ([`crate::modifiers`]).
    modifiers: Modifiers,
    initial_window: Option<u64>,
    max_window: Option<u64>,
    sink: Option<Arc<dyn EventSink>>,
    time_origin: Option<Instant>,
    resume: Option<ResumeTicket>,
    seed: u64,
    /// Controllers built so far from this configuration and its clones: each gets its own
    /// random stream of `seed`.
    builds: Arc<AtomicU64>,
}

impl CongestionConfig {
    fn with(avoidance: AvoidanceConfig, slow_start: SlowStartConfig) -> Self {
        Self {
            avoidance,
            slow_start,
            modifiers: Modifiers::default(),
            initial_window: None,
            max_window: None,
            sink: None,
            time_origin: None,
            resume: None,
            seed: 0,
            builds: Arc::new(AtomicU64::new(0)),
        }
    }

    /// CUBIC with classic slow start.
    pub fn cubic() -> Self {
        Self::with(
            AvoidanceConfig::Cubic(CubicConfig::default()),
            SlowStartConfig::Classic,
        )
    }

    /// NewReno with classic slow start (quinn's default behaviour).
    pub fn new_reno() -> Self {
        Self::with(AvoidanceConfig::newreno(), SlowStartConfig::Classic)
    }

    /// Hybla avoidance with Hybla's slow start.
    pub fn hybla() -> Self {
        Self::with(
            AvoidanceConfig::Hybla { rtt0: HYBLA_RTT0 },
            SlowStartConfig::Hybla { rtt0: HYBLA_RTT0 },
        )
    }

    /// quinn-proto's BBR.
    pub fn bbr() -> Self {
        Self::with(AvoidanceConfig::Bbr, SlowStartConfig::Classic)
    }

    /// BBRv3 (draft-ietf-ccwg-bbr) with the draft's constants; see [`crate::bbr3`].
    pub fn bbr3() -> Self {
        Self::with(
            AvoidanceConfig::Bbr3(Box::default()),
            SlowStartConfig::Classic,
        )
    }

    /// The seed of the controllers' random choices (BBRv3's probe timing). The n-th
    /// controller built from this configuration (or a clone) draws from stream n of it, so
    /// a simulation that gives each flow a seed stays reproducible. Default 0.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Parses a spec string such as `cubic+search:v2,lower-cwnd`; see [`crate::spec`].
    pub fn from_spec(spec: &str) -> Result<Self, SpecError> {
        spec.parse()
    }

    /// Replaces the slow start.
    pub fn slow_start(mut self, slow_start: impl Into<SlowStartConfig>) -> Self {
        self.slow_start = slow_start.into();
        self
    }

    /// Replaces the avoidance algorithm.
    pub fn avoidance(mut self, avoidance: AvoidanceConfig) -> Self {
        self.avoidance = avoidance;
        self
    }

    /// Initial window in bytes (default: RFC 9002's `min(10 * mss, max(14720, 2 * mss))`).
    pub fn initial_window(mut self, bytes: u64) -> Self {
        self.initial_window = Some(bytes);
        self
    }

    /// Caps the congestion window in bytes.
    pub fn max_window(mut self, bytes: u64) -> Self {
        self.max_window = Some(bytes);
        self
    }

    /// Sends every controller's events to `sink`.
    pub fn event_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Event times become offsets from `origin` instead of the controller's creation.
    pub fn time_origin(mut self, origin: Instant) -> Self {
        self.time_origin = Some(origin);
        self
    }

    /// Replaces every modifier ([`crate::modifiers`]).
    pub fn modifiers(mut self, modifiers: Modifiers) -> Self {
        self.modifiers = modifiers;
        self
    }

    /// The modifiers.
    pub fn modifiers_config(&self) -> &Modifiers {
        &self.modifiers
    }

    /// How fast the initial slow start grows (spec part `+growth:...`; see
    /// [`crate::growth`]). Default: doubling per round trip.
    pub fn growth(mut self, growth: StartupGrowth) -> Self {
        self.modifiers.growth = growth;
        self
    }

    /// The start-up growth.
    pub fn growth_config(&self) -> StartupGrowth {
        self.modifiers.growth
    }

    /// A jump of the window towards the delivery-rate BDP during the initial slow start
    /// (spec part `+jump[:...]`; see [`crate::jump`]). Default: none.
    pub fn jump(mut self, jump: Option<BdpJump>) -> Self {
        self.modifiers.jump = jump;
        self
    }

    /// The start-up jump, if enabled.
    pub fn jump_config(&self) -> Option<BdpJump> {
        self.modifiers.jump
    }

    /// Pacing bursts of a quarter window during the initial slow start on long-RTT paths
    /// (spec part `+burst[:...]`; see [`crate::burst`]). Default: none, quinn-proto's
    /// own bursts.
    pub fn burst(mut self, burst: Option<SlowStartBurst>) -> Self {
        self.modifiers.burst = burst;
        self
    }

    /// The slow-start bursts, if enabled.
    pub fn burst_config(&self) -> Option<SlowStartBurst> {
        self.modifiers.burst
    }

    /// No pacing (spec part `+unpaced`; see [`crate::unpaced`]): quinn-proto's pacer is
    /// asked for a rate of 0, as quicly, the seeds' stack, does not pace. Default: paced.
    pub fn unpaced(mut self, unpaced: bool) -> Self {
        self.modifiers.unpaced = unpaced.then_some(Unpaced);
        self
    }

    /// Whether the controller turns quinn-proto's pacing off.
    pub fn is_unpaced(&self) -> bool {
        self.modifiers.unpaced.is_some()
    }

    /// picoquic's long-RTT window floor during the initial slow start (spec part
    /// `+floor[:...]`; see [`RttWindowFloor`]). Default: none.
    pub fn floor(mut self, floor: Option<RttWindowFloor>) -> Self {
        self.modifiers.floor = floor;
        self
    }

    /// The long-RTT window floor, if enabled.
    pub fn floor_config(&self) -> Option<RttWindowFloor> {
        self.modifiers.floor
    }

    /// Reduce the window only for repeated losses (spec part `+loss-filter[:...]`; see
    /// [`crate::loss_filter`]). Default: none, every loss is a congestion event (RFC 9002).
    pub fn loss_filter(mut self, filter: Option<LossFilterConfig>) -> Self {
        self.modifiers.loss_filter = filter;
        self
    }

    /// The loss filter, if enabled.
    pub fn loss_filter_config(&self) -> Option<LossFilterConfig> {
        self.modifiers.loss_filter
    }

    /// Undo a reduction whose recovery period lost few packets (spec part
    /// `+rollback[:...]`; see [`crate::rollback`]). Default: none, every reduction stands
    /// (RFC 9002, RFC 9438).
    pub fn rollback(mut self, rollback: Option<RollbackConfig>) -> Self {
        self.modifiers.rollback = rollback;
        self
    }

    /// The rollback rule, if enabled.
    pub fn rollback_config(&self) -> Option<RollbackConfig> {
        self.modifiers.rollback
    }

    /// Careful Resume constants and switch (RFC 9959; spec suffix `+cr:...`).
    pub fn careful_resume(mut self, config: CarefulResumeConfig) -> Self {
        self.modifiers.careful_resume = config;
        self
    }

    /// Resume from saved parameters with Careful Resume (RFC 9959), if it is enabled. Only
    /// the first controller built from this configuration (or a clone) gets them: RFC 9959
    /// Sec. 3.2 lets one connection use a set, and a path quinn migrates to is a new path.
    /// Check the parameters first ([`crate::SavedCcParams::check`],
    /// [`crate::SavedStateStore::take`]).
    pub fn resume(mut self, params: ResumeParams) -> Self {
        self.resume = Some(ResumeTicket::new(params));
        self
    }

    /// The Careful Resume configuration.
    pub fn careful_resume_config(&self) -> &CarefulResumeConfig {
        &self.modifiers.careful_resume
    }

    /// Saved parameters not yet handed to a controller.
    pub fn pending_resume(&self) -> Option<ResumeParams> {
        self.resume.as_ref().and_then(ResumeTicket::pending)
    }

    /// The configured slow start.
    pub fn slow_start_config(&self) -> &SlowStartConfig {
        &self.slow_start
    }

    /// The configured avoidance.
    pub fn avoidance_config(&self) -> &AvoidanceConfig {
        &self.avoidance
    }

    /// The origin of event times: the one configured, else `now` (a connection's start).
    pub(crate) fn time_origin_or(&self, now: Instant) -> Instant {
        self.time_origin.unwrap_or(now)
    }

    /// The initial window configured, if any.
    pub(crate) fn initial_window_setting(&self) -> Option<u64> {
        self.initial_window
    }

    /// RFC 9002 Sec. 7.2 initial window for `mss`, unless one was configured.
    pub fn initial_window_for(&self, mss: u64) -> u64 {
        self.initial_window
            .unwrap_or_else(|| (10 * mss).min(14720u64.max(2 * mss)))
    }

    /// Builds BBRv3 for a connection, if that is the configured controller: the next
    /// random stream of the seed.
    pub fn build_bbr3(&self, mss: u64) -> Option<Bbr3> {
        let AvoidanceConfig::Bbr3(config) = &self.avoidance else {
            return None;
        };
        let n = self.builds.fetch_add(1, Ordering::Relaxed);
        let seed = split_mix(self.seed ^ split_mix(n));
        Some(Bbr3::new(
            (**config).clone(),
            mss,
            self.initial_window_for(mss),
            seed,
        ))
    }

    /// Builds the composed controller for a connection (BBR: `None`, it is quinn's own).
    /// Time offsets in its events are relative to whatever origin the caller uses.
    pub fn build_controller(&self, mss: u64) -> Option<Controller> {
        let avoidance = self.avoidance.build()?;
        let mut controller = Controller::new(
            self.initial_window_for(mss),
            mss,
            self.slow_start.build(),
            avoidance,
            Emitter::new(self.sink.clone()),
        );
        if let Some(max) = self.max_window {
            controller.set_max_window(max);
        }
        let resume = self.resume.as_ref().and_then(ResumeTicket::claim);
        controller.set_modifiers(&self.modifiers, resume);
        Some(controller)
    }
}

/// SplitMix64's finalizer: a bijective mix, so that neighbouring seeds give unrelated
/// streams.
fn split_mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Default for CongestionConfig {
    /// CUBIC with SEARCH (current draft): the project default.
    fn default() -> Self {
        Self::cubic().slow_start(crate::Search::draft())
    }
}

impl fmt::Debug for CongestionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CongestionConfig")
            .field("spec", &self.to_string())
            .field("initial_window", &self.initial_window)
            .field("max_window", &self.max_window)
            .field("sink", &self.sink.is_some())
            .field("resume", &self.pending_resume())
            .finish()
    }
}

impl fmt::Display for CongestionConfig {
    /// The canonical spec string (parses back to an equal configuration).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(f, &self.avoidance, &self.slow_start, &self.modifiers)
    }
}

impl FromStr for CongestionConfig {
    type Err = SpecError;

    /// Parses a spec string ([`crate::spec`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_spec(s).map(Self::from)
    }
}

impl From<ControllerSpec> for CongestionConfig {
    /// The configuration of a parsed spec, with the defaults for the rest.
    fn from(spec: ControllerSpec) -> Self {
        let ControllerSpec {
            avoidance,
            slow_start,
            modifiers,
        } = spec;
        Self::with(avoidance, slow_start).modifiers(modifiers)
    }
}
