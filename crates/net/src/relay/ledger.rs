//! The relay's per-flow accounting: for each client address (a flow), what its datagrams
//! met at the bottleneck of each direction (how long each waited in the queue, when one
//! was dropped: the link model's ground truth, as the simulator keeps it in
//! [`BottleneckLog`]) and the payload bytes each direction delivered, over time. At the
//! end, the period the flows of the data direction shared the link is computed by the
//! record's own [`shared_period`], so a real-time run reports the same shared-period
//! measures as a simulated one (issue 38 item 1: one flow beside another stack).
//!
//! What the relay cannot see: the applications' goodput. A flow's "goodput" here is the
//! UDP payload the link delivered for it (retransmissions and QUIC headers included), so
//! shares and Jain's index are of link throughput; a tool's own report (`satquic client
//! -J`) gives its goodput.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use satquic_run::Workload;
use satquic_run::record::{
    BottleneckLog, DelayQuantiles, FlowDrops, FlowInput, FlowStatus, SeriesRow, SharedPeriod,
    shared_period,
};
use serde::Serialize;

/// A flow's share of a direction's payload bytes below which it is left out of the
/// shared period (a stray or idle client would otherwise end the period at once).
pub const MIN_FLOW_SHARE: f64 = 0.01;

/// Every flow's books. They grow by about 50 bytes per packet, so a relay keeps them only
/// when asked ([`FlowLedger::keeping`]): a long-running emulator would otherwise grow by
/// gigabytes an hour at satellite rates.
#[derive(Debug, Default)]
pub struct FlowLedger {
    books: BTreeMap<u32, FlowBook>,
    keep: bool,
}

/// One flow's books.
#[derive(Debug)]
struct FlowBook {
    client: SocketAddr,
    /// Its first and last datagram either way, relay time.
    first: Duration,
    last: Duration,
    down: DirectionBook,
    up: DirectionBook,
}

/// One direction of a flow at the bottleneck.
#[derive(Debug, Default)]
struct DirectionBook {
    log: BottleneckLog,
    /// (departure, payload bytes delivered so far), in departure order.
    delivered: Vec<(Duration, u64)>,
}

impl DirectionBook {
    fn delivered_bytes(&self) -> u64 {
        self.delivered.last().map_or(0, |d| d.1)
    }
}

impl FlowLedger {
    /// Books that are kept (`keep`) or a ledger that notes nothing.
    pub fn keeping(keep: bool) -> Self {
        FlowLedger {
            books: BTreeMap::new(),
            keep,
        }
    }

    /// A new client address became flow `id` at `at`.
    pub fn on_new_flow(&mut self, id: u32, client: SocketAddr, at: Duration) {
        if !self.keep {
            return;
        }
        self.books.insert(
            id,
            FlowBook {
                client,
                first: at,
                last: at,
                down: DirectionBook::default(),
                up: DirectionBook::default(),
            },
        );
    }

    fn book(&mut self, id: u32, down: bool) -> Option<&mut DirectionBook> {
        self.books
            .get_mut(&id)
            .map(|b| if down { &mut b.down } else { &mut b.up })
    }

    /// A datagram of flow `id` reached the relay at `at`.
    pub fn on_seen(&mut self, id: u32, at: Duration) {
        if let Some(b) = self.books.get_mut(&id) {
            b.last = b.last.max(at);
        }
    }

    /// The link dropped one of its datagrams at `at`.
    pub fn on_dropped(&mut self, id: u32, down: bool, at: Duration) {
        if let Some(d) = self.book(id, down) {
            d.log.on_dropped(at);
        }
    }

    /// One of its datagrams (`bytes` of UDP payload) left the bottleneck at `departed`
    /// after waiting `waited` in the queue.
    pub fn on_delivered(
        &mut self,
        id: u32,
        down: bool,
        departed: Duration,
        waited: Duration,
        bytes: u64,
    ) {
        if let Some(d) = self.book(id, down) {
            d.log.on_departed(departed, waited);
            let total = d.delivered_bytes() + bytes;
            d.delivered.push((departed, total));
        }
    }

    /// The report: every flow's totals, and the shared period of the direction that
    /// carried the most payload (the data direction).
    pub fn report(&self) -> LedgerReport {
        let bytes = |down: bool| -> u64 {
            self.books
                .values()
                .map(|b| {
                    if down {
                        b.down.delivered_bytes()
                    } else {
                        b.up.delivered_bytes()
                    }
                })
                .sum()
        };
        let down = bytes(true) >= bytes(false);
        LedgerReport {
            flows: self
                .books
                .iter()
                .map(|(id, b)| RelayFlow {
                    flow: *id,
                    client: b.client.to_string(),
                    first_s: b.first.as_secs_f64(),
                    last_s: b.last.as_secs_f64(),
                    down: RelayDirection::of(&b.down),
                    up: RelayDirection::of(&b.up),
                })
                .collect(),
            data_direction: if down { "down" } else { "up" }.into(),
            shared: self.shared(down),
        }
    }

    /// The shared period of the flows that carried at least [`MIN_FLOW_SHARE`] of the
    /// direction's payload, through the record's [`shared_period`].
    fn shared(&self, down: bool) -> Option<SharedPeriod> {
        fn side(b: &FlowBook, down: bool) -> &DirectionBook {
            if down { &b.down } else { &b.up }
        }
        let dir = |b| side(b, down);
        let total: u64 = self.books.values().map(|b| dir(b).delivered_bytes()).sum();
        let carried: Vec<(u32, &FlowBook)> = self
            .books
            .iter()
            .filter(|(_, b)| dir(b).delivered_bytes() as f64 >= MIN_FLOW_SHARE * total as f64)
            .map(|(id, b)| (*id, b))
            .collect();
        let inputs: Vec<FlowInput> = carried
            .iter()
            .map(|(id, b)| flow_input(*id, b, &dir(b).log))
            .collect();
        let series: Vec<SeriesRow> = carried
            .iter()
            .flat_map(|(id, b)| {
                dir(b).delivered.iter().map(move |(t, bytes)| SeriesRow {
                    time_s: t.as_secs_f64(),
                    flow: *id,
                    cwnd_bytes: 0,
                    in_flight_bytes: 0,
                    latest_rtt_s: None,
                    smoothed_rtt_s: None,
                    delivery_rate_bps: 0,
                    queue_bytes: 0,
                    delivered_bytes: *bytes,
                    link_departed_bytes: None,
                })
            })
            .collect();
        shared_period(&inputs, &series)
    }
}

/// A relayed flow as the record's shared-period computation takes it: it starts at its
/// first datagram and ends at its last.
fn flow_input(id: u32, b: &FlowBook, log: &BottleneckLog) -> FlowInput {
    FlowInput {
        index: id,
        start: b.first,
        workload: Workload::Timed {
            duration: b.last.saturating_sub(b.first),
        },
        cc: b.client.to_string(),
        status: FlowStatus::Completed,
        capped: false,
        delivered_bytes: 0,
        connected_at: None,
        completed_at: None,
        ended_at: b.last,
        stats: None,
        first_rtt: None,
        first_loss_detected: None,
        events: Vec::new(),
        rtt_at_exit: None,
        rtt_at_shadow_exit: None,
        busy_since_at_exit: None,
        busy_since_at_shadow_exit: None,
        drops: FlowDrops::default(),
        bottleneck: log.clone(),
        stream_receive_window_end: None,
    }
}

/// What `satquic link --flows-json` writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LedgerReport {
    pub flows: Vec<RelayFlow>,
    /// The direction that carried the most payload, `down` or `up`.
    pub data_direction: String,
    /// The period the flows of the data direction shared the link (flows carrying at
    /// least [`MIN_FLOW_SHARE`] of it); its `cc` fields hold the client addresses.
    pub shared: Option<SharedPeriod>,
}

/// One flow's totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelayFlow {
    pub flow: u32,
    /// The client's address.
    pub client: String,
    /// Its first and last datagram, seconds of relay time.
    pub first_s: f64,
    pub last_s: f64,
    pub down: RelayDirection,
    pub up: RelayDirection,
}

/// One direction of a flow, over the whole flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelayDirection {
    /// Its datagrams that reached the link (delivered or dropped) and those dropped.
    pub link_packets: u64,
    pub link_drops: u64,
    /// UDP payload bytes the link delivered.
    pub delivered_bytes: u64,
    pub queue_delay: Option<DelayQuantiles>,
}

impl RelayDirection {
    fn of(d: &DirectionBook) -> Self {
        let (link_packets, link_drops) = d.log.arrivals_and_drops(Duration::ZERO, Duration::MAX);
        RelayDirection {
            link_packets,
            link_drops,
            delivered_bytes: d.delivered_bytes(),
            queue_delay: d.log.queue_delay_overall(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Two flows: flow 0 sends 1,000 bytes every 10 ms from 0 to 10 s, flow 1 from 2 s to
    /// 8 s 3,000 bytes every 10 ms with 10 ms of queueing and every 10th dropped. The
    /// shared period is 2-8 s (flow 1's life); flow 1 has 3/4 of it.
    #[test]
    fn the_shared_period_is_the_records_own() {
        let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let mut l = FlowLedger::keeping(true);
        l.on_new_flow(0, addr(1000), ms(0));
        l.on_new_flow(1, addr(1001), ms(2000));
        for k in 0..1000u64 {
            l.on_seen(0, ms(10 * k));
            l.on_delivered(0, true, ms(10 * k), Duration::ZERO, 1000);
        }
        for k in 200..800u64 {
            l.on_seen(1, ms(10 * k));
            if k % 10 == 0 {
                l.on_dropped(1, true, ms(10 * k));
            } else {
                l.on_delivered(1, true, ms(10 * k), ms(10), 3000);
            }
        }
        // A stray client with a few bytes is left out of the shared period.
        l.on_new_flow(2, addr(1002), ms(5000));
        l.on_delivered(2, true, ms(5000), Duration::ZERO, 100);
        let r = l.report();
        assert_eq!(r.data_direction, "down");
        let mut off = FlowLedger::keeping(false);
        off.on_new_flow(0, addr(1000), ms(0));
        off.on_delivered(0, true, ms(1), Duration::ZERO, 1000);
        assert!(
            off.report().flows.is_empty(),
            "a ledger not kept notes nothing"
        );
        assert_eq!(r.flows.len(), 3);
        let s = r.shared.expect("two flows overlapped");
        assert_eq!(s.flows.len(), 2);
        assert!(
            (s.from_s - 2.0).abs() < 1e-9 && (s.to_s - 7.99).abs() < 1e-9,
            "{s:?}"
        );
        assert!((s.flows[1].share - 0.73).abs() < 0.02, "{s:?}");
        assert_eq!(s.flows[1].link_drops, 60);
        assert_eq!(s.flows[1].queue_delay.unwrap().p95_ms, 10.0);
        assert_eq!(r.flows[1].down.link_packets, 600);
        assert_eq!(r.flows[1].down.link_drops, 60);
        assert!(s.jain_index < 1.0);
    }
}
