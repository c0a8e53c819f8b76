//! The transfer: a perf download or upload, or an hq-interop/h3 fetch, and the progress it
//! keeps (in-order bytes, first byte, the time to each MB).
//!
//! These are the client's inner loops: each chunk read (or written) updates the progress
//! with a few atomic and vector operations and nothing else; interval rows are made by a
//! separate task ([`super::intervals`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use quinn::{Connection, VarInt};
use satquic_run::Workload;
use satquic_run::probe::{ProbeHandle, read_probe};
use satquic_run::record::push_mb_times;
use satquic_run::{InOrder, ZEROS};

use super::{Alpn, ClientOptions, interrupted, lock};
use crate::NetError;
use crate::perf::{self, Receipt, Request, ServerReport};

/// Per-packet bytes that are not stream data in an upload's packets: a short header
/// (1 + 8-byte connection ID + up to 4-byte packet number), the AEAD tag (16) and a
/// STREAM frame header (up to 11). Acknowledged packet bytes less this are the stream
/// bytes the server has (an estimate at most ~0.5 % low: quinn does not tell how much of a
/// stream is acknowledged).
pub const STREAM_PACKET_OVERHEAD_BYTES: u64 = 40;
/// An upload writes at most this far ahead of what is acknowledged, beyond twice the
/// congestion window (and 1/64 of what it wrote, for the estimate's error): what a TCP
/// socket buffer does for iperf3. Without a bound quinn buffers up to its send window
/// (256 MiB), so a timed upload would run on for as long as that takes to drain, and the
/// bytes written say nothing about the bytes delivered.
pub const UPLOAD_AHEAD_MIN_BYTES: u64 = 64 * 1024;
/// How often an upload re-reads the acknowledged bytes while it waits.
pub const UPLOAD_POLL: Duration = Duration::from_millis(2);

/// Shared progress of a transfer.
pub(super) struct Progress {
    /// The flow's start, the origin of every time.
    pub(super) start: Instant,
    /// Application bytes moved, in order.
    pub(super) bytes: AtomicU64,
    /// [`ClientOptions::progress`].
    mirror: Option<Arc<AtomicU64>>,
    pub(super) first_byte: Mutex<Option<Duration>>,
    pub(super) mb_times: Mutex<Vec<Duration>>,
    pub(super) received_mb_times: Mutex<Vec<Duration>>,
}

impl Progress {
    pub(super) fn new(start: Instant, mirror: Option<Arc<AtomicU64>>) -> Self {
        Progress {
            start,
            bytes: AtomicU64::new(0),
            mirror,
            first_byte: Mutex::new(None),
            mb_times: Mutex::new(Vec::new()),
            received_mb_times: Mutex::new(Vec::new()),
        }
    }

    /// `total` bytes moved in order.
    pub(super) fn set(&self, total: u64) {
        let now = self.start.elapsed();
        let old = self.bytes.swap(total, Ordering::Relaxed);
        if let Some(m) = &self.mirror {
            m.store(total, Ordering::Relaxed);
        }
        if old == 0 && total > 0 {
            lock(&self.first_byte).get_or_insert(now);
        }
        push_mb_times(&mut lock(&self.mb_times), total, now);
    }

    /// `total` bytes received in any order (perf downloads).
    fn set_received(&self, total: u64) {
        push_mb_times(
            &mut lock(&self.received_mb_times),
            total,
            self.start.elapsed(),
        );
    }
}

/// How the transfer ended: `None` when interrupted, `Some(Err(_))` at the time cap,
/// `Some(Ok(r))` when it finished (well or not).
pub(super) type Outcome = Option<Result<Result<(), NetError>, tokio::time::error::Elapsed>>;

/// Runs the transfer until it ends, the time `cap` (from the flow's start) or an
/// interrupt; a request sent in 0-RTT that the server refused is asked again in 1-RTT.
/// Also says whether the server accepted 0-RTT (`None`: not attempted).
pub(super) async fn transfer_until_done(
    options: &ClientOptions,
    conn: &Connection,
    progress: &Arc<Progress>,
    probe: &ProbeHandle,
    cap: Duration,
    zero_rtt_accepted: Option<quinn::ZeroRttAccepted>,
) -> (Outcome, Option<bool>) {
    let start = progress.start;
    let attempt = || async {
        let transfer = transfer(options, conn, progress, probe);
        tokio::select! {
            o = tokio::time::timeout(cap.saturating_sub(start.elapsed()), transfer) => Some(o),
            () = interrupted(options) => None,
        }
    };
    let mut outcome = attempt().await;
    // The handshake is over once the transfer is (or the connection is gone).
    let zero_rtt = match zero_rtt_accepted {
        Some(accepted) => Some(accepted.await),
        None => None,
    };
    if zero_rtt == Some(false) && matches!(outcome, Some(Ok(Err(_)))) {
        // The server refused 0-RTT and dropped the request sent in it (RFC 9001 Sec.
        // 4.6.2): ask again in 1-RTT.
        progress.set(0);
        outcome = attempt().await;
    }
    (outcome, zero_rtt)
}

/// The result's status, error and completion time for an `outcome` that ended at
/// `ended`.
pub(super) fn ending(
    outcome: Outcome,
    ended: Duration,
) -> (&'static str, Option<String>, Option<Duration>) {
    match outcome {
        Some(Ok(Ok(()))) => ("completed", None, Some(ended)),
        Some(Ok(Err(e))) => ("failed", Some(e.to_string()), None),
        Some(Err(_)) => ("capped", None, None),
        None => ("interrupted", None, None),
    }
}

/// After a completed perf download, the server's report (when asked for), waiting at most
/// four RTTs or 2 s for it.
pub(super) async fn server_report(
    options: &ClientOptions,
    conn: &Connection,
    status: &str,
) -> Option<ServerReport> {
    if status == "completed"
        && options.alpn == Alpn::Perf
        && !options.upload
        && options.want_server_report
        && matches!(options.workload, Workload::Download { .. })
    {
        let wait = (conn.rtt() * 4).max(Duration::from_secs(2));
        return tokio::time::timeout(wait, read_report(conn))
            .await
            .ok()
            .flatten();
    }
    None
}

async fn read_report(conn: &Connection) -> Option<ServerReport> {
    let mut uni = conn.accept_uni().await.ok()?;
    let bytes = uni.read_to_end(perf::MAX_REPORT_BYTES).await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

async fn transfer(
    options: &ClientOptions,
    conn: &Connection,
    progress: &Arc<Progress>,
    probe: &ProbeHandle,
) -> Result<(), NetError> {
    let requested = options.workload.requested_bytes();
    let deadline = match options.workload {
        Workload::Timed { duration } => Some(progress.start + duration),
        Workload::Download { .. } => None,
    };
    match options.alpn {
        Alpn::Perf if options.upload => upload(conn, requested, deadline, progress, probe).await,
        Alpn::Perf => download(conn, requested, deadline, progress).await,
        Alpn::Hq | Alpn::H3 => {
            let path = options
                .path
                .clone()
                .unwrap_or_else(|| format!("/{requested}"));
            let mut total = 0u64;
            let count = |n: usize| {
                total += n as u64;
                progress.set(total);
            };
            let got = if options.alpn == Alpn::Hq {
                crate::http::hq_download(conn, &path, count).await?
            } else {
                let authority = format!("{}:{}", options.server_name, options.server.port());
                crate::http::h3_download(conn, &authority, &path, count).await?
            };
            if options.path.is_none() && got != requested {
                return Err(NetError::Transfer(format!(
                    "received {got} of {requested} bytes"
                )));
            }
            Ok(())
        }
    }
}

async fn download(
    conn: &Connection,
    requested: u64,
    deadline: Option<Instant>,
    progress: &Arc<Progress>,
) -> Result<(), NetError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| NetError::Transfer(format!("{what}: {e}"));
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| fail("open stream", &e))?;
    let request = Request {
        size: requested,
        upload: false,
    };
    send.write_all(&request.encode())
        .await
        .map_err(|e| fail("send request", &e))?;
    let _ = send.finish();
    let mut in_order = InOrder::default();
    // quinn's unordered reads return each byte once.
    let mut received = 0u64;
    loop {
        let read = recv.read_chunk(usize::MAX, false);
        let chunk = match deadline {
            Some(d) => match tokio::time::timeout_at(d.into(), read).await {
                Ok(r) => r,
                Err(_) => {
                    let _ = recv.stop(VarInt::from_u32(0));
                    return Ok(());
                }
            },
            None => read.await,
        };
        match chunk {
            Ok(Some(chunk)) => {
                let prefix = in_order.insert(chunk.offset, chunk.bytes.len() as u64);
                received += chunk.bytes.len() as u64;
                progress.set_received(received);
                progress.set(prefix);
            }
            Ok(None) => break,
            Err(quinn::ReadError::Reset(code)) => {
                let why = match code.into_inner() as u32 {
                    perf::ERR_TOO_LARGE => "the server refused the size (above its --max-bytes)",
                    perf::ERR_BAD_REQUEST => "the server did not understand the request",
                    _ => "the server reset the stream",
                };
                return Err(NetError::Transfer(why.into()));
            }
            Err(e) => return Err(fail("download", &e)),
        }
    }
    let got = in_order.prefix();
    if requested != u64::MAX && got != requested {
        return Err(NetError::Transfer(format!(
            "received {got} of {requested} bytes"
        )));
    }
    Ok(())
}

async fn upload(
    conn: &Connection,
    requested: u64,
    deadline: Option<Instant>,
    progress: &Arc<Progress>,
    probe: &ProbeHandle,
) -> Result<(), NetError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| NetError::Transfer(format!("{what}: {e}"));
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| fail("open stream", &e))?;
    let request = Request {
        size: requested,
        upload: true,
    };
    send.write_all(&request.encode())
        .await
        .map_err(|e| fail("send request", &e))?;
    let header = request.encode().len() as u64;
    // Stream bytes the server has, estimated from the acknowledged packet bytes (see
    // STREAM_PACKET_OVERHEAD_BYTES), never more than written.
    let delivered = |written: u64| {
        let p = read_probe(probe);
        let mtu = u64::from(conn.stats().path.current_mtu).max(STREAM_PACKET_OVERHEAD_BYTES + 1);
        let payload = p.acked_bytes - p.acked_bytes * STREAM_PACKET_OVERHEAD_BYTES / mtu;
        (payload.saturating_sub(header).min(written), p.cwnd)
    };
    let mut written = 0u64;
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) || written >= requested {
            break;
        }
        let (got, cwnd) = delivered(written);
        progress.set(got);
        let ahead = cwnd.saturating_mul(2) + UPLOAD_AHEAD_MIN_BYTES + written / 64;
        if written - got > ahead {
            tokio::time::sleep(UPLOAD_POLL).await;
            continue;
        }
        let n = (requested - written).min(ZEROS.len() as u64) as usize;
        send.write_chunk(Bytes::from_static(&ZEROS[..n]))
            .await
            .map_err(|e| fail("upload", &e))?;
        written += n as u64;
    }
    let _ = send.finish();
    // The rows and the MB times keep following the acknowledgements until the receipt.
    let receipt = {
        let read = recv.read_to_end(64);
        tokio::pin!(read);
        loop {
            tokio::select! {
                r = &mut read => break r,
                () = tokio::time::sleep(UPLOAD_POLL) => progress.set(delivered(written).0),
            }
        }
    }
    .map_err(|e| fail("upload receipt", &e))?;
    let receipt =
        Receipt::decode(&receipt).ok_or_else(|| NetError::Transfer("bad upload receipt".into()))?;
    progress.set(receipt.bytes);
    if receipt.bytes != written {
        return Err(NetError::Transfer(format!(
            "server received {} of {written} bytes",
            receipt.bytes
        )));
    }
    Ok(())
}
