//! Congestion-controller construction and the observation probe around it.
//!
//! [`controller_factory`] turns a flow's [`TransportSpec`] into the quinn
//! `ControllerFactory` of satquic-cc, with an event sink and the run's virtual epoch as
//! time origin. [`ProbeFactory`] wraps any factory so that the simulator sees what quinn
//! hands to the controller (bytes in flight, per-packet RTTs, acknowledged bytes,
//! congestion events) without relying on the controller to report it: the series and the
//! "first loss detected" time are the same for every algorithm, including quinn's BBR.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use quinn_proto::RttEstimator;
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use satquic_cc::{CcEvent, EventSink, Observation, QuinnController, ResumeParams};

use crate::scenario::TransportSpec;

/// A shareable congestion controller factory, as quinn's `TransportConfig` takes it.
pub type SharedFactory = Arc<dyn ControllerFactory + Send + Sync + 'static>;

/// Builds the factory for a flow: the satquic-cc spec in `transport.cc` (parsed where it
/// entered), its initial window, an optional event sink, event times relative to `origin`, the saved
/// parameters the first connection it builds resumes from (Careful Resume, RFC 9959;
/// checked by the caller for path and Lifetime), and the seed of the controllers' random
/// choices (BBRv3's probe timing; the simulator derives it from the run seed and flow).
pub fn controller_factory(
    transport: &TransportSpec,
    sink: Option<Arc<dyn EventSink>>,
    origin: Instant,
    resume: Option<ResumeParams>,
    seed: u64,
) -> SharedFactory {
    let mut config = transport.cc.config().time_origin(origin).seed(seed);
    if let Some(iw) = transport.initial_window {
        config = config.initial_window(iw);
    }
    if let Some(sink) = sink {
        config = config.event_sink(sink);
    }
    if let Some(params) = resume {
        config = config.resume(params);
    }
    Arc::new(config)
}

/// What a connection's controller would save for Careful Resume now (RFC 9959 Sec. 3.1),
/// from a copy of quinn's controller (quinn-proto's `congestion_state().clone_box()`,
/// quinn's `congestion_state()`), probe-wrapped or not. Quinn's BBR keeps no such state.
pub fn careful_resume_observation(controller: Box<dyn Controller>) -> Result<Observation, String> {
    match controller.into_any().downcast::<QuinnController>() {
        Ok(c) => c.inner().observe().map_err(|e| e.to_string()),
        Err(_) => Err("bbr and bbr3 keep no Careful Resume state".into()),
    }
}

/// Events of one flow's sender, in the order the controller produced them.
#[derive(Default)]
pub struct EventCollector {
    events: Mutex<Vec<CcEvent>>,
}

impl EventCollector {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Removes and returns everything collected so far.
    pub fn take(&self) -> Vec<CcEvent> {
        std::mem::take(&mut *lock(&self.events))
    }
}

impl EventSink for EventCollector {
    fn record(&self, event: &CcEvent) {
        lock(&self.events).push(event.clone());
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each run is single-threaded; a poisoned lock can only follow a panic that already
    // fails the run, so keep the data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the probe has seen of one sender's controller. Times are since the run's epoch.
#[derive(Debug, Clone, Default)]
pub struct ProbeState {
    /// Congestion window after the latest call, bytes.
    pub cwnd: u64,
    /// Bytes in flight: quinn's figure at the end of the latest ACK batch plus bytes sent
    /// since (losses declared after that batch show up at the next one).
    pub in_flight: u64,
    /// RTT of the most recently acknowledged packet (ACK arrival - its send time), without
    /// ack-delay correction: the RFC 9002 `latest_rtt` of the largest newly acked packet.
    pub latest_rtt: Option<Duration>,
    /// quinn's smoothed RTT after the latest ACK.
    pub smoothed_rtt: Option<Duration>,
    /// The very first RTT sample of the connection.
    pub first_rtt: Option<Duration>,
    /// Bytes of packets acknowledged so far (ack-eliciting, in-flight packets).
    pub acked_bytes: u64,
    /// Bytes handed to the controller as sent.
    pub sent_bytes: u64,
    /// When quinn first reported a congestion event (the sender learning of a loss).
    pub first_congestion: Option<Duration>,
    /// Congestion events reported.
    pub congestion_events: u64,
    /// Bytes lost in those events.
    pub congestion_lost_bytes: u64,
}

/// Shared handle on a probe's state.
pub type ProbeHandle = Arc<Mutex<ProbeState>>;

/// Reads a probe's state.
pub fn read_probe(probe: &ProbeHandle) -> ProbeState {
    lock(probe).clone()
}

/// Wraps a factory; every controller it builds reports to `state`.
pub struct ProbeFactory {
    inner: SharedFactory,
    state: ProbeHandle,
    origin: Instant,
}

impl ProbeFactory {
    pub fn new(inner: SharedFactory, origin: Instant) -> (Arc<Self>, ProbeHandle) {
        let state = ProbeHandle::default();
        (
            Arc::new(ProbeFactory {
                inner,
                state: state.clone(),
                origin,
            }),
            state,
        )
    }
}

impl ControllerFactory for ProbeFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let inner = self.inner.clone().build(now, current_mtu);
        lock(&self.state).cwnd = inner.window();
        Box::new(ProbeController {
            inner,
            state: self.state.clone(),
            origin: self.origin,
        })
    }
}

struct ProbeController {
    inner: Box<dyn Controller>,
    state: ProbeHandle,
    origin: Instant,
}

impl Controller for ProbeController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        let mut s = lock(&self.state);
        s.in_flight += bytes;
        s.sent_bytes += bytes;
        s.cwnd = self.inner.window();
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        {
            let mut s = lock(&self.state);
            let sample = now.saturating_duration_since(sent);
            s.latest_rtt = Some(sample);
            s.first_rtt.get_or_insert(sample);
            s.smoothed_rtt = Some(rtt.get());
            s.acked_bytes += bytes;
        }
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
        lock(&self.state).cwnd = self.inner.window();
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        let mut s = lock(&self.state);
        s.in_flight = in_flight;
        s.cwnd = self.inner.window();
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        let mut s = lock(&self.state);
        s.first_congestion
            .get_or_insert(now.saturating_duration_since(self.origin));
        s.congestion_events += 1;
        s.congestion_lost_bytes += lost_bytes;
        s.cwnd = self.inner.window();
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
        lock(&self.state).cwnd = self.inner.window();
    }

    fn window(&self) -> u64 {
        self.inner.window()
    }

    fn pacing_burst(&self) -> Option<u64> {
        self.inner.pacing_burst()
    }

    fn pacing_rate(&self) -> Option<u64> {
        self.inner.pacing_rate()
    }

    fn metrics(&self) -> ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(ProbeController {
            inner: self.inner.clone_box(),
            state: self.state.clone(),
            origin: self.origin,
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self.inner.into_any()
    }
}
