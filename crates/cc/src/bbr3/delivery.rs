//! Delivery-rate samples (draft Sec. 4.1): what the sender knew when it sent each
//! datagram batch, and the rate sample of each ACK batch built from it.

use std::time::Duration;

use super::Bbr3;

/// What the sender knew when it sent a datagram batch (Sec. 4.1.2.1.2, per-packet state).
#[derive(Debug, Clone, Copy)]
pub(super) struct SendRecord {
    /// Send time.
    pub(super) sent: Duration,
    /// `C.delivered` at send, bytes.
    pub(super) delivered: u64,
    /// `C.delivered_time` at send.
    pub(super) delivered_time: Duration,
    /// `C.first_send_time` at send.
    pub(super) first_send_time: Duration,
    /// `C.lost` at send, bytes.
    pub(super) lost: u64,
    /// Bytes in flight just after this send (`tx_in_flight`).
    pub(super) tx_in_flight: u64,
    /// The connection was app-limited when it was sent.
    pub(super) app_limited: bool,
}

/// The rate sample of one ACK batch (Sec. 4.1.2.1.3 and 4.1.2.3), built from its newest-sent packet.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RateSample {
    /// Some acknowledged packet had a send record.
    pub(super) has_record: bool,
    /// `rs.prior_delivered`: `C.delivered` when that packet was sent.
    pub(super) prior_delivered: u64,
    /// `rs.prior_time`: `C.delivered_time` when it was sent.
    pub(super) prior_time: Duration,
    /// Its send time minus the first send time of its flight.
    pub(super) send_elapsed: Duration,
    /// Send time of the packet the sample is taken from.
    pub(super) newest_sent: Duration,
    /// `rs.is_app_limited`.
    pub(super) is_app_limited: bool,
    /// `rs.tx_in_flight`, bytes.
    pub(super) tx_in_flight: u64,
    /// `rs.lost`: bytes lost between its send and now.
    pub(super) lost: u64,
    /// RTT of that packet.
    pub(super) rtt: Option<Duration>,
    /// Bytes newly acknowledged by the batch (`rs.newly_acked`).
    pub(super) newly_acked: u64,
    /// `rs.delivered`: bytes delivered over the sample's interval.
    pub(super) delivered: u64,
    /// `rs.delivery_rate`, bytes per second; 0 when the interval is shorter than min_rtt.
    pub(super) delivery_rate: f64,
}

impl Bbr3 {
    /// `MarkConnectionAppLimited` (Sec. 4.1.2.4).
    pub(super) fn mark_app_limited(&mut self) {
        self.app_limited_until = (self.delivered + self.in_flight).max(1);
    }

    /// `GenerateRateSample` (Sec. 4.1.2.3).
    pub(super) fn generate_rate_sample(&mut self) {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !self.rs.has_record {
            return;
        }
        let ack_elapsed = self.delivered_time.saturating_sub(self.rs.prior_time);
        let interval = self.rs.send_elapsed.max(ack_elapsed);
        self.rs.delivered = self.delivered - self.rs.prior_delivered;
        // An interval shorter than the path's RTT cannot be a complete sample.
        let too_short = self.min_rtt.is_some_and(|m| interval < m);
        if !interval.is_zero() && !too_short {
            self.rs.delivery_rate = self.rs.delivered as f64 / interval.as_secs_f64();
        }
    }

    /// Drops send records quinn can no longer acknowledge or declare lost.
    pub(super) fn prune_records(&mut self) {
        let keep = 2 * self.srtt.unwrap_or(Duration::from_secs(1));
        let horizon = self.rs.newest_sent.saturating_sub(keep);
        while self.records.front().is_some_and(|r| r.sent < horizon) {
            self.records.pop_front();
        }
    }
}
