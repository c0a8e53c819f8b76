//! The bounded event log each connection's controller writes to: what a report sends,
//! and (for in-process callers and qlogs) the per-ACK samples, thinned.
//!
//! A controller emits an event per ACK; kept whole, a long download's log would grow
//! without bound. So samples are kept at most one per [`SAMPLE_STEP`], and the log stops
//! at [`MAX_EVENTS_PER_CONNECTION`] (or at what a report carries, for a server with no
//! in-process caller).

use std::sync::Mutex;
use std::time::Duration;

use satquic_cc::{CcEvent, EventSink};

use super::lock;
use crate::perf;

/// Cap on the events kept per connection (Sample events are thinned to one per 10 ms).
pub const MAX_EVENTS_PER_CONNECTION: usize = 200_000;
/// Resolution of kept Sample events.
pub const SAMPLE_STEP: Duration = Duration::from_millis(10);

/// A bounded event sink: Sample events thinned to one per [`SAMPLE_STEP`], at most
/// [`MAX_EVENTS_PER_CONNECTION`] events; or, made with [`EventStore::for_report`], only
/// what a [`ServerReport`](crate::perf::ServerReport) carries.
pub struct EventStore {
    inner: Mutex<(Vec<CcEvent>, Option<Duration>)>,
    /// Most events kept.
    capacity: usize,
    /// Keep Sample and SearchEval events (in-process callers draw series from them).
    per_ack: bool,
}

impl Default for EventStore {
    fn default() -> Self {
        EventStore {
            inner: Mutex::default(),
            capacity: MAX_EVENTS_PER_CONNECTION,
            per_ack: true,
        }
    }
}

impl EventStore {
    /// Keeps only the events a report sends (no per-ACK samples or SEARCH evaluations),
    /// at most [`perf::MAX_REPORT_EVENTS`]: a few hundred kB per connection at most.
    pub fn for_report() -> Self {
        EventStore {
            inner: Mutex::default(),
            capacity: perf::MAX_REPORT_EVENTS,
            per_ack: false,
        }
    }

    pub fn events(&self) -> Vec<CcEvent> {
        lock(&self.inner).0.clone()
    }
}

impl EventSink for EventStore {
    fn record(&self, event: &CcEvent) {
        let per_ack = matches!(event, CcEvent::Sample { .. } | CcEvent::SearchEval { .. });
        if per_ack && !self.per_ack {
            return;
        }
        let mut g = lock(&self.inner);
        let (events, next_sample) = &mut *g;
        if events.len() >= self.capacity {
            return;
        }
        if let CcEvent::Sample { at, .. } = event {
            if next_sample.is_some_and(|n| *at < n) {
                return;
            }
            *next_sample = Some(*at + SAMPLE_STEP);
        }
        events.push(event.clone());
    }
}
