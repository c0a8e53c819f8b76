//! [`QuinnBbr3`]: [`Bbr3`] behind quinn-proto's controller trait.

use std::any::Any;
use std::time::{Duration, Instant};

use quinn_proto::RttEstimator;
use quinn_proto::congestion::{Controller as QuinnControllerTrait, ControllerMetrics};

use super::{Bbr3, Bbr3Pacing};

/// A [`Bbr3`] for quinn: times become offsets from `origin`, the pacing rate and send
/// quantum go to quinn's pacer (quinn-proto patches 7 and 4).
#[derive(Debug, Clone)]
pub struct QuinnBbr3 {
    origin: Instant,
    inner: Bbr3,
}

impl QuinnBbr3 {
    /// Wraps `inner`; event times are offsets from `origin`.
    pub fn new(origin: Instant, inner: Bbr3) -> Self {
        Self { origin, inner }
    }

    /// The controller.
    pub fn inner(&self) -> &Bbr3 {
        &self.inner
    }

    fn at(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.origin)
    }
}

impl QuinnControllerTrait for QuinnBbr3 {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        let now = self.at(now);
        self.inner.on_sent(now, bytes);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        _app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let info = crate::config::rtt_info(now, sent, rtt);
        let (now, sent) = (self.at(now), self.at(sent));
        self.inner.on_ack(now, sent, bytes, info);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        _largest_packet_num_acked: Option<u64>,
    ) {
        let now = self.at(now);
        self.inner.on_end_acks(now, in_flight, app_limited);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        let (now, sent) = (self.at(now), self.at(sent));
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(u64::from(new_mtu));
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn pacing_burst(&self) -> Option<u64> {
        Some(self.inner.send_quantum())
    }

    fn pacing_rate(&self) -> Option<u64> {
        match self.inner.config().pacing {
            Bbr3Pacing::Rate => Some(self.inner.pacing_rate() as u64),
            Bbr3Pacing::Window => None,
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = ControllerMetrics::default();
        metrics.congestion_window = self.inner.window();
        metrics.pacing_rate = Some((self.inner.pacing_rate() * 8.0) as u64);
        metrics
    }

    fn clone_box(&self) -> Box<dyn QuinnControllerTrait> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_cwnd
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
