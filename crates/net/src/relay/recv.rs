//! Receiving datagrams with quinn-udp: batches (recvmmsg) and GRO, so a sender using GSO
//! (quinn does by default) is split back into its datagrams at `stride` boundaries.
//!
//! Every socket of the relay's I/O thread reads into one set of buffers ([`RecvBuffers`]):
//! a read fills them and hands each datagram on before the next read, so a flow costs no
//! buffer of its own and a thousand flows do not cost a thousand times 512 KiB.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Socket buffer size asked for (the kernel caps it at `net.core.rmem_max`/`wmem_max`).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Receives with quinn-udp: batches (recvmmsg) and GRO, so a sender using GSO (quinn
/// does by default) is split back into its datagrams at `stride` boundaries.
pub(super) struct GroReceiver {
    state: quinn::udp::UdpSocketState,
    buffers: Arc<Mutex<RecvBuffers>>,
}

/// Receive buffers (512 KiB), shared by every socket of the relay's I/O thread: a read
/// fills them and hands each datagram on before the next read, and all reads run on one
/// thread, so a flow costs no buffer of its own.
pub(super) struct RecvBuffers {
    bufs: Vec<Vec<u8>>,
    metas: Vec<quinn::udp::RecvMeta>,
}

impl RecvBuffers {
    pub(super) fn shared() -> Arc<Mutex<RecvBuffers>> {
        let batch = RECV_BATCH.clamp(1, quinn::udp::BATCH_SIZE.max(1));
        Arc::new(Mutex::new(RecvBuffers {
            bufs: vec![vec![0u8; RECV_BUFFER]; batch],
            metas: vec![quinn::udp::RecvMeta::default(); batch],
        }))
    }
}

/// Datagrams read per system call.
const RECV_BATCH: usize = 8;
/// One receive buffer: the largest UDP datagram, or a GRO batch of them.
const RECV_BUFFER: usize = 64 * 1024;

impl GroReceiver {
    pub(super) fn new(sock: &UdpSocket, buffers: Arc<Mutex<RecvBuffers>>) -> std::io::Result<Self> {
        let state = quinn::udp::UdpSocketState::new(sock.into())?;
        let _ = state.set_recv_buffer_size(sock.into(), SOCKET_BUFFER_BYTES);
        let _ = state.set_send_buffer_size(sock.into(), SOCKET_BUFFER_BYTES);
        Ok(GroReceiver { state, buffers })
    }

    /// Waits for datagrams and hands each one to `each` (source, bytes, receive time).
    pub(super) async fn recv(
        &mut self,
        sock: &tokio::net::UdpSocket,
        mut each: impl FnMut(SocketAddr, &[u8], Instant),
    ) -> std::io::Result<()> {
        loop {
            sock.readable().await?;
            let mut guard = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
            let RecvBuffers { bufs, metas } = &mut *guard;
            let mut slices: Vec<std::io::IoSliceMut<'_>> = bufs
                .iter_mut()
                .map(|b| std::io::IoSliceMut::new(b))
                .collect();
            let state = &self.state;
            match sock.try_io(tokio::io::Interest::READABLE, || {
                state.recv(sock.into(), &mut slices, metas)
            }) {
                Ok(n) => {
                    let at = Instant::now();
                    drop(slices);
                    for (meta, buf) in metas.iter().zip(bufs.iter()).take(n) {
                        let stride = meta.stride.max(1);
                        for chunk in buf[..meta.len].chunks(stride) {
                            each(meta.addr, chunk, at);
                        }
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
