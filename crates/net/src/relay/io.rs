//! The relay's I/O thread: receives what clients send to the listening socket and hands
//! each datagram to its flow's way up (the scheduler, or straight to the server without a
//! model).
//!
//! The thread stamps each datagram as it reads it (the model's arrival time) and never
//! waits for the scheduler: when the scheduler's channel is full a datagram is dropped and
//! counted as `overload`, so a slow scheduler shows in the counters instead of as queueing
//! the model does not know about.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{Duration, Instant};

use super::flows::{FlowTable, SchedulerGone};
use super::forward::send_retry;
use super::recv::{GroReceiver, RecvBuffers};
use super::{Event, RelayOptions, Shared, count_direct};

/// The I/O thread: a single-threaded tokio runtime running the receive loop (and the
/// flows' upstream tasks) until told to stop or the scheduler is gone.
pub(super) fn io_thread(
    listen: UdpSocket,
    direct: Option<Arc<UdpSocket>>,
    options: RelayOptions,
    shared: Arc<Shared>,
    tx: SyncSender<Event>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        shared.stop.store(true, Ordering::Relaxed);
        return;
    };
    rt.block_on(async move {
        let table = FlowTable::new(&options, direct, shared.clone(), tx.clone());
        let Ok(receiver) = GroReceiver::new(&listen, RecvBuffers::shared()) else {
            shared.stop.store(true, Ordering::Relaxed);
            return;
        };
        let Ok(listen) = tokio::net::UdpSocket::from_std(listen) else {
            shared.stop.store(true, Ordering::Relaxed);
            return;
        };
        let mut arrivals = Arrivals { table, shared, tx };
        arrivals.run(&listen, receiver, stop).await;
    });
}

/// What the receive loop needs for each client datagram.
struct Arrivals {
    table: FlowTable,
    shared: Arc<Shared>,
    tx: SyncSender<Event>,
}

impl Arrivals {
    /// Reads batches of datagrams from the listening socket and passes each one on, until
    /// `stop` or the scheduler is gone.
    async fn run(
        &mut self,
        listen: &tokio::net::UdpSocket,
        mut receiver: GroReceiver,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        let mut batch: Vec<(SocketAddr, Vec<u8>, Instant)> = Vec::new();
        loop {
            batch.clear();
            tokio::select! {
                _ = &mut stop => return,
                r = receiver.recv(listen, |from, data, at| batch.push((from, data.to_vec(), at))) => {
                    // ICMP errors surface as receive errors on Linux; keep relaying.
                    if r.is_err() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                }
            }
            for (from, data, at) in batch.drain(..) {
                if self.on_datagram(from, data, at).is_err() {
                    return;
                }
            }
        }
    }

    /// One datagram from client `from`, received at `at`: to the server at once without a
    /// model, else to the scheduler for the up direction of the model.
    fn on_datagram(
        &mut self,
        from: SocketAddr,
        data: Vec<u8>,
        at: Instant,
    ) -> Result<(), SchedulerGone> {
        let Some(flow) = self.table.flow_of(from)? else {
            return Ok(());
        };
        flow.seen.store(
            self.shared.start.elapsed().as_millis() as u64,
            Ordering::Relaxed,
        );
        super::flows::FlowState::on_client(&flow.state);
        if let Some(up) = &flow.direct_up {
            let ok = send_retry(|| up.send(&data));
            count_direct(&self.shared.direct_up, ok, data.len());
            return Ok(());
        }
        let event = Event::Packet {
            flow: flow.id,
            down: false,
            at,
            data,
        };
        match self.tx.try_send(event) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.shared.overload_up.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(TrySendError::Disconnected(_)) => Err(SchedulerGone),
        }
    }
}
