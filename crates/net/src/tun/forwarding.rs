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
use super::tcp_flows::{TcpFlowSeen, TcpFlows};
use super::{Event, Shared};
use crate::model::Model;
use crate::relay::{DirectionSnapshot, LinkScheduler, RelaySnapshot, run_scheduler};

/// The model and the TCP flows seen, when the scheduler stops.
pub(super) type SchedulerResult = (Option<Model<Vec<u8>>>, HashMap<(u16, u16), TcpFlowSeen>);

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
        let _ = path.enqueue(down, t, size, data);
    }

    fn deliver_due(&mut self) {
        let Some(mut path) = self.path.take() else {
            return;
        };
        let now = self.now();
        path.deliver_due(now, |down, p| {
            self.forward(down, &p.payload, Some(p.arrival))
        });
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

/// The scheduler thread: runs the loop, then hands back the model (for its ground truth)
/// and the TCP flows seen.
pub(super) fn scheduler_thread(
    path: Option<Model<Vec<u8>>>,
    client: OwnedFd,
    server: OwnedFd,
    shared: Arc<Shared>,
    rx: Receiver<Event>,
    tcp_target_bytes: Option<u64>,
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
    };
    run_scheduler(&mut s, &rx);
    // The descriptors close here: the devices go with them, before the namespaces do.
    let flows = s.tcp_down.take_seen();
    (s.path.take(), flows)
}
