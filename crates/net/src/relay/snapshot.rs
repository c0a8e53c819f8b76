//! What the relay reports: per direction, the model's counters, what was forwarded and
//! how late ([`DelayErrorHistogram`]); for the relay, its flows.
//!
//! The scheduler thread publishes a [`RelaySnapshot`] at least every 10 ms; counters the
//! receiving side keeps (overload drops, flows refused or evicted, direct forwarding) are
//! added when a caller asks ([`Relay::snapshot`](super::Relay::snapshot)). The TUN link
//! reports in the same types, so `satquic link` prints and writes both alike.

use std::time::Duration;

use satquic_link::{DirectionStats, DropReason};

/// Scheduling error of sent packets: actual send time minus modelled arrival, in 10 us
/// bins up to 100 ms (larger errors land in the last bin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayErrorHistogram {
    bins: Vec<u64>,
}

/// Width of a [`DelayErrorHistogram`] bin.
pub const DELAY_ERROR_BIN: Duration = Duration::from_micros(10);
const DELAY_ERROR_BINS: usize = 10_000;

impl Default for DelayErrorHistogram {
    fn default() -> Self {
        DelayErrorHistogram {
            bins: vec![0; DELAY_ERROR_BINS],
        }
    }
}

impl DelayErrorHistogram {
    pub(crate) fn add(&mut self, error: Duration) {
        let i = (error.as_nanos() / DELAY_ERROR_BIN.as_nanos()) as usize;
        self.bins[i.min(DELAY_ERROR_BINS - 1)] += 1;
    }

    /// Packets measured.
    pub fn count(&self) -> u64 {
        self.bins.iter().sum()
    }

    /// The `q` quantile (0..=1), as the upper edge of its bin.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let target = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.bins.iter().enumerate() {
            seen += c;
            if seen >= target {
                return Some(DELAY_ERROR_BIN * (i as u32 + 1));
            }
        }
        None
    }

    /// Largest error seen (bin upper edge).
    pub fn max(&self) -> Option<Duration> {
        self.bins
            .iter()
            .rposition(|c| *c > 0)
            .map(|i| DELAY_ERROR_BIN * (i as u32 + 1))
    }
}

/// One direction's counters as published by the scheduler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirectionSnapshot {
    /// The model's counters (offered, queued, dropped by reason, delivered).
    pub stats: DirectionStats,
    /// Queue occupancy now, bytes (link bytes: payload + headers).
    pub queue_bytes: u64,
    /// Datagrams forwarded (sent on a socket).
    pub forwarded_packets: u64,
    /// UDP payload bytes forwarded.
    pub forwarded_bytes: u64,
    /// Datagrams the relay could not send (socket error).
    pub send_errors: u64,
    /// Datagrams dropped because the scheduler fell behind.
    pub overload_drops: u64,
    pub delay_error: DelayErrorHistogram,
}

impl DirectionSnapshot {
    /// Drops by a modelled rule.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.stats.dropped(reason).packets
    }
}

/// Everything the relay reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelaySnapshot {
    /// Time since the relay started.
    pub at: Duration,
    pub down: DirectionSnapshot,
    pub up: DirectionSnapshot,
    /// The sender cap in front of `down` (all zero without one).
    pub cap: DirectionSnapshot,
    pub flows: usize,
    /// New client addresses turned away: every flow was established and the table full.
    pub flows_refused: u64,
    /// Flows not established (only Version Negotiation, or one datagram each way)
    /// forgotten to make room for a new client address.
    pub flows_evicted: u64,
}
