//! The relay's side of the scheduler: the model of every flow's datagrams, and sending
//! what it delivers to the client (down) or through the flow's upstream socket (up).
//!
//! The scheduler learns of flows from the I/O thread's events (it keeps its own copy of
//! each flow's addresses, so sending needs no lock), counts what it forwards and how late
//! ([`DirectionSnapshot`]), and publishes the counters.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use satquic_link::IP_UDP_OVERHEAD_BYTES;

use super::ledger::FlowLedger;
use super::scheduler::{LinkScheduler, run_scheduler};
use super::snapshot::{DirectionSnapshot, RelaySnapshot};
use super::{Event, Pkt, Shared};
use crate::model::Model;

/// A flow as the scheduler knows it: where its datagrams go.
struct Flow {
    /// Down datagrams go to the client from the listening socket.
    client: SocketAddr,
    /// Up datagrams go to the server through the flow's own socket.
    upstream: UdpSocket,
}

/// Sends, retrying briefly while the socket buffer is full; `false` on an error or when
/// it stays full.
pub(super) fn send_retry(f: impl Fn() -> std::io::Result<usize>) -> bool {
    for _ in 0..1000 {
        match f() {
            Ok(_) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(_) => return false,
        }
    }
    false
}

/// The scheduler thread's state: the model (none: forward at once), the sockets and the
/// counters it publishes.
struct Scheduler {
    path: Option<Model<Pkt>>,
    listen: UdpSocket,
    flows: HashMap<u32, Flow>,
    shared: Arc<Shared>,
    down: DirectionSnapshot,
    up: DirectionSnapshot,
    cap: DirectionSnapshot,
    last_publish: Instant,
    /// Per flow: what its datagrams met at the bottleneck (with a model).
    ledger: FlowLedger,
}

impl Scheduler {
    fn now(&self) -> Duration {
        self.shared.start.elapsed()
    }

    /// Sends a datagram of `flow` on, counting it and (with a model) how late it left.
    fn forward(&mut self, flow: u32, down: bool, data: &[u8], modelled: Option<Duration>) {
        let sent_at = self.now();
        let Some(f) = self.flows.get(&flow) else {
            return;
        };
        let ok = if down {
            send_retry(|| self.listen.send_to(data, f.client))
        } else {
            send_retry(|| f.upstream.send(data))
        };
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

/// The scheduler thread: runs the loop, then hands the model back (for its ground truth)
/// with the per-flow books.
pub(super) fn scheduler_thread(
    path: Option<Model<Pkt>>,
    listen: UdpSocket,
    shared: Arc<Shared>,
    rx: Receiver<Event>,
    ledger: FlowLedger,
) -> (Option<Model<Pkt>>, FlowLedger) {
    let mut s = Scheduler {
        path,
        listen,
        flows: HashMap::new(),
        shared,
        down: DirectionSnapshot::default(),
        up: DirectionSnapshot::default(),
        cap: DirectionSnapshot::default(),
        last_publish: Instant::now(),
        ledger,
    };
    run_scheduler(&mut s, &rx);
    (s.path.take(), std::mem::take(&mut s.ledger))
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
        match event {
            Event::NewFlow {
                id,
                client,
                upstream,
            } => {
                let now = self.now();
                self.ledger.on_new_flow(id, client, now);
                self.flows.insert(id, Flow { client, upstream });
            }
            Event::FlowGone { id } => {
                self.flows.remove(&id);
            }
            Event::Packet {
                flow,
                down,
                at,
                data,
            } => {
                let Some(path) = self.path.as_mut() else {
                    self.forward(flow, down, &data, None);
                    return;
                };
                let t = at.saturating_duration_since(self.shared.start);
                let size = data.len() as u32 + IP_UDP_OVERHEAD_BYTES;
                self.ledger.on_seen(flow, t);
                let admission = path.enqueue(down, t, size, Pkt { flow, data });
                if admission.is_some_and(|a| !a.is_queued()) {
                    self.ledger.on_dropped(flow, down, t);
                }
            }
        }
    }

    fn deliver_due(&mut self) {
        let Some(mut path) = self.path.take() else {
            return;
        };
        let now = self.now();
        let mut dropped = Vec::new();
        path.deliver_due_noting(
            now,
            |p| p.flow,
            &mut dropped,
            |down, p| {
                let bytes = p.payload.data.len() as u64;
                self.ledger
                    .on_delivered(p.payload.flow, down, p.departed, p.waited, bytes);
                self.forward(p.payload.flow, down, &p.payload.data, Some(p.arrival));
            },
        );
        for (flow, at) in dropped {
            self.ledger.on_dropped(flow, true, at);
        }
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
            flows: self.flows.len(),
            flows_refused: 0,
            flows_evicted: 0,
        };
        *self
            .shared
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = snapshot;
    }
}
