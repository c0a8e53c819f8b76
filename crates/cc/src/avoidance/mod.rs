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
//! `bbr` is quinn-proto's own controller, not an [`Avoidance`] ([`crate::AvoidanceConfig::Bbr`]);
//! `bbr3`, satquic's BBRv3, is a controller of its own too ([`crate::bbr3`]).

use std::fmt;
use std::time::Duration;

pub mod cubic;
pub mod hybla;
pub mod newreno;

pub use cubic::{Cubic, CubicConfig};
pub use hybla::HyblaAvoidance;
pub use newreno::NewRenoAvoidance;

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
