//! Forwarding: the TUN link's side of the scheduler loop the relay shares. Packets from
//! one namespace enter the model; what it delivers is written into the other namespace's
//! device, counted, timed against its modelled arrival, and (going down) followed per TCP
//! connection ([`TcpFlows`]).

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use super::device::write_packet;
use super::flow_key::{FlowIds, flow_key};
use super::tcp_flows::{TcpFlowSeen, TcpFlows};
use super::{Event, Shared};
use crate::model::Model;
use crate::relay::{DirectionSnapshot, FlowLedger, LinkScheduler, RelaySnapshot, run_scheduler};

/// The model, the TCP flows seen and each flow's books, when the scheduler stops.
pub(super) type SchedulerResult = (
    Option<Model<Vec<u8>>>,
    HashMap<(u16, u16), TcpFlowSeen>,
    FlowLedger,
);

/// The scheduler thread's state: the model (none: forward at once), both devices (written
/// to), the counters it publishes and the TCP connections going down.
struct Scheduler {
    path: Option<Model<Vec<u8>>>,
    client: OwnedFd,
    server: OwnedFd,
    shared: Arc<Shared>,
    down: DirectionSnapshot,
    up: DirectionSnapshot,
    cap: DirectionSnapshot,
    last_publish: Instant,
    tcp_down: TcpFlows,
    /// Per TCP or UDP flow: what its packets met at the bottleneck (with a model).
    ledger: FlowLedger,
    ids: FlowIds,
}

impl Scheduler {
    fn now(&self) -> Duration {
        self.shared.start.elapsed()
    }

    /// Hands a packet to the far side's kernel: down packets to the client namespace.
    fn forward(&mut self, down: bool, data: &[u8], modelled: Option<Duration>) {
        let sent_at = self.now();
        let ok = if down {
            write_packet(&self.client, data)
        } else {
            write_packet(&self.server, data)
        };
        if down && let Some(reached) = self.tcp_down.observe(data, sent_at) {
            let _ = self.shared.tcp_target_reached.compare_exchange(
                0,
                reached.as_nanos() as u64 + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            );
        }
        let d = if down { &mut self.down } else { &mut self.up };
        if ok {
            d.forwarded_packets += 1;
            d.forwarded_bytes += data.len() as u64;
        } else {
            d.send_errors += 1;
        }
        if let Some(arrival) = modelled {
            d.delay_error.add(sent_at.saturating_sub(arrival));
        }
    }
}

impl LinkScheduler for Scheduler {
    type Event = Event;

    fn next_event(&self) -> Option<Instant> {
        self.path
            .as_ref()
            .and_then(|p| p.poll_timeout())
            .map(|t| self.shared.start + t)
    }

    fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    fn handle(&mut self, event: Event) {
        let Event::Packet { down, at, data } = event;
        let Some(path) = self.path.as_mut() else {
            self.forward(down, &data, None);
            return;
        };
        let t = at.saturating_duration_since(self.shared.start);
        let size = data.len() as u32;
        let flow = flow_key(&data, down).map(|key| {
            let (id, new) = self.ids.id(key);
            if new {
                self.ledger.on_new_flow(id, key.1, t);
            }
            self.ledger.on_seen(id, t);
            id
        });
        let admission = path.enqueue(down, t, size, data);
        if let Some(id) = flow
            && admission.is_some_and(|a| !a.is_queued())
        {
            self.ledger.on_dropped(id, down, t);
        }
    }

    fn deliver_due(&mut self) {
        let Some(mut path) = self.path.take() else {
            return;
        };
        let now = self.now();
        let ids = std::mem::take(&mut self.ids);
        let mut ledger = std::mem::take(&mut self.ledger);
        let id_of = |data: &Vec<u8>, down: bool| flow_key(data, down).and_then(|k| ids.get(&k));
        let mut dropped = Vec::new();
        path.deliver_due_noting(
            now,
            |data| id_of(data, true),
            &mut dropped,
            |down, p| {
                if let Some(id) = id_of(&p.payload, down) {
                    let bytes = p.payload.len() as u64;
                    ledger.on_delivered(id, down, p.departed, p.waited, bytes);
                }
                self.forward(down, &p.payload, Some(p.arrival))
            },
        );
        for (id, at) in dropped {
            if let Some(id) = id {
                ledger.on_dropped(id, true, at);
            }
        }
        (self.ids, self.ledger) = (ids, ledger);
        self.path = Some(path);
    }

    fn publish(&mut self, force: bool) {
        if !force && self.last_publish.elapsed() < Duration::from_millis(10) {
            return;
        }
        self.last_publish = Instant::now();
        if let Some(path) = self.path.as_mut() {
            path.refresh(
                self.shared.start.elapsed(),
                &mut self.down,
                &mut self.up,
                &mut self.cap,
            );
        }
        let snapshot = RelaySnapshot {
            at: self.now(),
            down: self.down.clone(),
            up: self.up.clone(),
            cap: self.cap.clone(),
            ..RelaySnapshot::default()
        };
        *self
            .shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = snapshot;
    }
}

/// The scheduler thread: runs the loop, then hands back the model (for its ground truth),
/// the TCP flows seen and each flow's books.
pub(super) fn scheduler_thread(
    path: Option<Model<Vec<u8>>>,
    client: OwnedFd,
    server: OwnedFd,
    shared: Arc<Shared>,
    rx: Receiver<Event>,
    tcp_target_bytes: Option<u64>,
    ledger: FlowLedger,
) -> SchedulerResult {
    let mut s = Scheduler {
        path,
        client,
        server,
        shared,
        down: DirectionSnapshot::default(),
        up: DirectionSnapshot::default(),
        cap: DirectionSnapshot::default(),
        last_publish: Instant::now(),
        tcp_down: TcpFlows::new(tcp_target_bytes),
        ledger,
        ids: FlowIds::default(),
    };
    run_scheduler(&mut s, &rx);
    // The descriptors close here: the devices go with them, before the namespaces do.
    let flows = s.tcp_down.take_seen();
    (s.path.take(), flows, std::mem::take(&mut s.ledger))
}
