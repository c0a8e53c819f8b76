//! [`CarefulResumeConfig`]: the RFC's constants and the choices it leaves open, each a
//! field with its section; the spec options that set them are tabled in the module docs.

use std::time::Duration;

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

    pub(super) fn jump_fraction(&self) -> f64 {
        self.jump_fraction.clamp(0.0, JUMP_FRACTION)
    }

    pub(super) fn retreat_fraction(&self) -> f64 {
        self.retreat_fraction.clamp(0.0, RETREAT_FRACTION)
    }

    pub(super) fn beta(&self) -> f64 {
        self.beta.clamp(0.5, 1.0)
    }
}
