//! Congestion avoidance: how the window grows after slow start and how it shrinks on a
//! congestion event. Any avoidance composes with any slow start in [`crate::Controller`];
//! there is one CUBIC, not one per slow start.
//!
//! One module per algorithm, named as in spec strings ([`crate::spec`]); each documents its
//! options and constants with their defaults and sources.
//!
//! | spec name | module | algorithm |
//! |---|---|---|
//! | `newreno` (alias `reno`) | [`newreno`] | NewReno as in RFC 9002 |
//! | `cubic` | [`cubic`] | CUBIC, RFC 9438 |
//! | `hybla` | [`hybla`] | Hybla (Caini & Firrincieli 2004) |
//!
//! `bbr` is quinn-proto's own controller, not an [`Avoidance`] ([`AvoidanceConfig::Bbr`]);
//! `bbr3`, satquic's BBRv3, is a controller of its own too ([`crate::bbr3`]).

use std::fmt;
use std::time::Duration;

use crate::bbr3::Bbr3Config;

pub mod cubic;
pub mod hybla;
pub mod newreno;

pub use cubic::{Cubic, CubicConfig};
pub use hybla::HyblaAvoidance;
pub use newreno::NewRenoAvoidance;

/// Which congestion-avoidance algorithm (or stand-alone controller) to use.
#[derive(Debug, Clone, PartialEq)]
pub enum AvoidanceConfig {
    /// RFC 9002 NewReno, with its `kLossReductionFactor` (0.5 unless the spec's
    /// `loss-reduction` says otherwise).
    NewReno { loss_reduction_factor: f64 },
    /// RFC 9438 CUBIC.
    Cubic(CubicConfig),
    /// Hybla (reference RTT).
    Hybla { rtt0: Duration },
    /// quinn-proto's built-in BBR (it has its own startup; the slow start is ignored).
    Bbr,
    /// satquic's BBRv3 (draft-ietf-ccwg-bbr; [`crate::bbr3`]), a controller of its own.
    Bbr3(Box<Bbr3Config>),
}

impl AvoidanceConfig {
    /// RFC 9002 NewReno with RFC 9002's reduction factor.
    pub fn newreno() -> Self {
        Self::NewReno {
            loss_reduction_factor: newreno::LOSS_REDUCTION_FACTOR,
        }
    }

    /// Short name used in spec strings.
    pub fn name(&self) -> &'static str {
        match self {
            Self::NewReno { .. } => "newreno",
            Self::Cubic(_) => "cubic",
            Self::Hybla { .. } => "hybla",
            Self::Bbr => "bbr",
            Self::Bbr3(_) => "bbr3",
        }
    }

    /// Whether this is a controller of its own (the BBRs), with its own startup, rather
    /// than an avoidance the composed controller runs with a slow start and modifiers.
    pub(crate) fn stands_alone(&self) -> bool {
        matches!(self, Self::Bbr | Self::Bbr3(_))
    }

    /// The avoidance for one connection (`None` for the BBRs).
    pub(crate) fn build(&self) -> Option<Box<dyn Avoidance>> {
        Some(match self {
            Self::NewReno {
                loss_reduction_factor,
            } => Box::new(NewRenoAvoidance {
                loss_reduction_factor: *loss_reduction_factor,
            }),
            Self::Cubic(c) => Box::new(Cubic::new(c.clone())),
            Self::Hybla { rtt0 } => Box::new(HyblaAvoidance::new(*rtt0)),
            Self::Bbr | Self::Bbr3(_) => return None,
        })
    }
}

/// What congestion avoidance sees on one acknowledged packet.
#[derive(Debug, Clone, Copy)]
pub struct CaAck {
    /// Time of the acknowledgement (offset from the controller's origin).
    pub now: Duration,
    /// Bytes newly acknowledged.
    pub bytes: u64,
    /// Current window in bytes, with its fractional part.
    pub cwnd: f64,
    /// Maximum datagram size in bytes.
    pub mss: u64,
    /// Smoothed RTT.
    pub smoothed_rtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
}

/// One congestion-avoidance algorithm with its multiplicative decrease.
pub trait Avoidance: Send + Sync + fmt::Debug {
    /// Short name used in specs and records.
    fn name(&self) -> &'static str;

    /// Growth for one acknowledged packet in congestion avoidance: the new window in bytes
    /// (fractional; the controller keeps the fraction).
    fn on_ack(&mut self, ack: &CaAck) -> f64;

    /// A congestion event at window `cwnd` (bytes): returns the new `ssthresh` in bytes.
    fn on_congestion(&mut self, now: Duration, cwnd: u64, mss: u64) -> u64;

    /// Slow start ended without a loss and congestion avoidance starts at window `cwnd`.
    fn on_slow_start_exit(&mut self, now: Duration, cwnd: u64, mss: u64);

    /// The window was not updated for `paused` because the sender was limited by the
    /// application (RFC 9438 Sec. 4.2: such time is not part of CUBIC's `t`). Nothing by
    /// default: an avoidance whose growth does not follow the clock has nothing to skip.
    fn on_application_limited(&mut self, _paused: Duration) {}

    /// Forget everything (persistent congestion).
    fn reset(&mut self);

    /// An owned copy.
    fn clone_box(&self) -> Box<dyn Avoidance>;
}

impl Clone for Box<dyn Avoidance> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}
