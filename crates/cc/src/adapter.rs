//! The adapter to quinn-proto's congestion API, in one place: the factory quinn calls
//! ([`ControllerFactory`] for [`CongestionConfig`]), the two controllers behind quinn's
//! [`Controller`](QuinnControllerTrait) trait ([`QuinnController`] for the composed
//! controller, [`QuinnBbr3`] for BBRv3), and the units each value is handed to quinn in.
//!
//! | what satquic-cc has | what quinn-proto 0.11.19 reads | unit quinn documents |
//! |---|---|---|
//! | the window, ssthresh | `window()`, `metrics().congestion_window`, `metrics().ssthresh` | bytes |
//! | BBRv3's pacing rate, Careful Resume's required rate | `metrics().pacing_rate` (qlog only; quinn's pacer does not read it) | **bits** per second |
//! | BBRv3's pacing rate (`bbr3:pacing=rate`), `+unpaced`'s 0 | `pacing_rate()`, quinn-proto patch 7, feature `patched-quinn` | **bytes** per second |
//! | BBRv3's send quantum, the `+burst` modifier | `pacing_burst()`, quinn-proto patch 4, feature `patched-quinn` | bytes |
//!
//! Every rate inside satquic-cc is in bytes per second (names ending in
//! `_bytes_per_sec`); [`quinn_metrics_pacing_rate`] and [`quinn_pacer_rate`] are the only
//! two conversions to what quinn reads, each tested against an independent value
//! (`a_bbr3_start_is_reported_in_the_units_quinn_documents` below fails on a rate off by
//! 8x either way).
//!
//! Moving to quinn's next controller API (quinn pull request #2481, BBRv3): its
//! `ControllerMetrics { pacing_rate, send_quantum }` is what the pacer reads, with
//! `pacing_rate` in **bytes** per second. Then [`quinn_metrics_pacing_rate`] becomes
//! [`quinn_pacer_rate`] (bytes per second), the two `pacing_burst()` bodies move to
//! `metrics().send_quantum` and the two `pacing_rate()` bodies to `metrics().pacing_rate`
//! (`+unpaced`'s 0 may then need another way to say "do not pace"),
//! and the feature gates on them go; nothing outside this file changes
//! (vendor/quinn-proto/SATQUIC-PATCH.md, "Moving to quinn's next controller API").

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::RttEstimator;
use quinn_proto::congestion::{
    BbrConfig, Controller as QuinnControllerTrait, ControllerFactory, ControllerMetrics,
};

use crate::bbr3::Bbr3;
#[cfg(feature = "patched-quinn")]
use crate::bbr3::Bbr3Pacing;
use crate::config::CongestionConfig;
use crate::controller::{Controller, RttInfo};

/// quinn-proto 0.11's `ControllerMetrics::pacing_rate` ("Pacing rate (bits/s)", read by
/// qlog only) for a rate of `bytes_per_sec`.
pub fn quinn_metrics_pacing_rate(bytes_per_sec: f64) -> u64 {
    (bytes_per_sec * 8.0) as u64
}

/// The rate quinn-proto's pacer refills at through `Controller::pacing_rate` (patch 7,
/// documented there in bytes per second) for a rate of `bytes_per_sec`.
pub fn quinn_pacer_rate(bytes_per_sec: f64) -> u64 {
    bytes_per_sec as u64
}

impl ControllerFactory for CongestionConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn QuinnControllerTrait> {
        let mss = u64::from(current_mtu);
        let origin = self.time_origin_or(now);
        if let Some(bbr3) = self.build_bbr3(mss) {
            return Box::new(QuinnBbr3::new(origin, bbr3));
        }
        match self.build_controller(mss) {
            Some(inner) => Box::new(QuinnController {
                origin,
                inner,
                initial_window: self.initial_window_for(mss),
            }),
            None => {
                let mut bbr = BbrConfig::default();
                if let Some(iw) = self.initial_window_setting() {
                    bbr.initial_window(iw);
                }
                Arc::new(bbr).build(now, current_mtu)
            }
        }
    }
}

/// What quinn's `on_ack` tells of the RTT, for a packet sent at `sent` acknowledged at
/// `now`: its own sample and quinn's smoothed and minimum RTT.
fn rtt_info(now: Instant, sent: Instant, rtt: &RttEstimator) -> RttInfo {
    RttInfo {
        latest: now.saturating_duration_since(sent),
        smoothed: rtt.get(),
        min: rtt.min(),
    }
}

/// The composed [`Controller`] behind quinn's controller trait.
#[derive(Debug, Clone)]
pub struct QuinnController {
    origin: Instant,
    inner: Controller,
    initial_window: u64,
}

impl QuinnController {
    /// The composed controller.
    pub fn inner(&self) -> &Controller {
        &self.inner
    }

    fn at(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.origin)
    }
}

impl QuinnControllerTrait for QuinnController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        let now = self.at(now);
        self.inner.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        let info = rtt_info(now, sent, rtt);
        let (now, sent) = (self.at(now), self.at(sent));
        self.inner.on_ack(now, sent, bytes, app_limited, info);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        _app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        let now = self.at(now);
        self.inner
            .on_end_acks(now, in_flight, largest_packet_num_acked);
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
        self.inner.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    /// `+burst`'s slow-start bursts (quinn-proto patch 4).
    #[cfg(feature = "patched-quinn")]
    fn pacing_burst(&self) -> Option<u64> {
        self.inner.pacing_burst()
    }

    /// `+unpaced`: quinn-proto's pacer does not pace at a rate of 0 (patch 7).
    #[cfg(feature = "patched-quinn")]
    fn pacing_rate(&self) -> Option<u64> {
        self.inner
            .pacing_rate_bytes_per_sec()
            .map(|r| quinn_pacer_rate(r as f64))
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = ControllerMetrics::default();
        metrics.congestion_window = self.inner.congestion_window();
        // Careful Resume's required rate (quinn's pacer does not read it; see
        // `careful_resume`).
        metrics.pacing_rate = self
            .inner
            .pacing()
            .map(|p| quinn_metrics_pacing_rate(p.rate_bytes_per_sec));
        metrics.ssthresh = (self.inner.ssthresh() != u64::MAX).then_some(self.inner.ssthresh());
        metrics
    }

    fn clone_box(&self) -> Box<dyn QuinnControllerTrait> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A [`Bbr3`] for quinn: times become offsets from `origin`; with the feature
/// `patched-quinn` the pacing rate and send quantum go to quinn's pacer (quinn-proto
/// patches 7 and 4), without it quinn paces from the window.
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
        let info = rtt_info(now, sent, rtt);
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

    /// BBR's send quantum (quinn-proto patch 4).
    #[cfg(feature = "patched-quinn")]
    fn pacing_burst(&self) -> Option<u64> {
        Some(self.inner.send_quantum())
    }

    /// BBR's pacing rate (quinn-proto patch 7), with `bbr3:pacing=rate`.
    #[cfg(feature = "patched-quinn")]
    fn pacing_rate(&self) -> Option<u64> {
        match self.inner.config().pacing {
            Bbr3Pacing::Rate => Some(quinn_pacer_rate(self.inner.pacing_rate_bytes_per_sec())),
            Bbr3Pacing::Window => None,
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = ControllerMetrics::default();
        metrics.congestion_window = self.inner.window();
        metrics.pacing_rate = Some(quinn_metrics_pacing_rate(
            self.inner.pacing_rate_bytes_per_sec(),
        ));
        metrics
    }

    fn clone_box(&self) -> Box<dyn QuinnControllerTrait> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// quinn's initial MTU (`TransportConfig::initial_mtu`'s default).
    const MTU: u16 = 1200;

    fn build(spec: &str) -> Box<dyn QuinnControllerTrait> {
        let cc: CongestionConfig = spec.parse().unwrap();
        Arc::new(cc).build(Instant::now(), MTU)
    }

    /// BBRv3 starts pacing at `startup_pacing_gain x initial window / 1 ms` (draft Sec.
    /// 5.6.2, `BBRInitPacingRate` with a nominal RTT of 1 ms), worked out here from the
    /// draft's numbers, not from the controller.
    #[test]
    fn a_bbr3_start_is_reported_in_the_units_quinn_documents() {
        let initial_window_bytes = 10.0 * f64::from(MTU);
        let startup_pacing_gain = 2.77;
        let bytes_per_sec = startup_pacing_gain * initial_window_bytes / 1e-3;
        let controller = build("bbr3:pacing=rate");
        let qlog_bits_per_sec = controller.metrics().pacing_rate.unwrap() as f64;
        assert!(
            (qlog_bits_per_sec / (8.0 * bytes_per_sec) - 1.0).abs() < 0.01,
            "metrics().pacing_rate {qlog_bits_per_sec} is not {} bits/s",
            8.0 * bytes_per_sec
        );
        #[cfg(feature = "patched-quinn")]
        {
            let pacer_bytes_per_sec = controller.pacing_rate().unwrap() as f64;
            assert!(
                (pacer_bytes_per_sec / bytes_per_sec - 1.0).abs() < 0.01,
                "pacing_rate() {pacer_bytes_per_sec} is not {bytes_per_sec} bytes/s"
            );
        }
    }

    #[cfg(feature = "patched-quinn")]
    #[test]
    fn unpaced_asks_quinn_not_to_pace() {
        // quinn-proto's pacer does not pace at a rate of 0 (patch 7); `None` keeps its own
        // rate of 1.25 x cwnd / smoothed RTT.
        let unpaced = build("newreno:loss-reduction=0.7+search:v2+unpaced");
        assert_eq!(unpaced.pacing_rate(), Some(0));
        assert_eq!(build("newreno+search:v2").pacing_rate(), None);
        assert!(CongestionConfig::new_reno().unpaced(true).is_unpaced());
        assert_eq!(
            CongestionConfig::new_reno().unpaced(true).to_string(),
            "newreno+classic+unpaced"
        );
    }

    #[test]
    fn bbr3_paced_from_the_window_hands_quinn_no_rate() {
        let controller = build("bbr3:pacing=window");
        assert!(
            controller.metrics().pacing_rate.is_some(),
            "qlog still gets it"
        );
        #[cfg(feature = "patched-quinn")]
        assert_eq!(controller.pacing_rate(), None);
    }
}
