//! The perf protocol's server side ([`crate::perf`]): each bidirectional stream is one
//! request, a download (zeros from a static buffer, so a connection holds no copy of
//! what it sends) or an upload (counted and dropped), answered with the sender's report
//! or the upload's receipt.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use quinn::{Connection, RecvStream, SendStream, VarInt};

use super::connection::ConnectionInfo;
use super::report::server_report;
use super::{REQUEST_TIMEOUT, ServerState};
use crate::perf::{self, Receipt, Request};

/// Serves the connection's perf streams until it closes, each in its own task.
pub(super) async fn serve_perf(
    state: &Arc<ServerState>,
    conn: &Connection,
    info: &Arc<ConnectionInfo>,
) {
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(_) => return,
        };
        let state = state.clone();
        let conn = conn.clone();
        let info = info.clone();
        tokio::spawn(async move {
            perf_stream(&state, &conn, &info, send, recv).await;
        });
    }
}

async fn read_request(recv: &mut RecvStream) -> Result<Request, u32> {
    let mut size = [0u8; 8];
    recv.read_exact(&mut size)
        .await
        .map_err(|_| perf::ERR_BAD_REQUEST)?;
    let size = u64::from_be_bytes(size);
    let mut len = [0u8; 2];
    match recv.read_exact(&mut len).await {
        Err(quinn::ReadExactError::FinishedEarly(0)) => {
            return Ok(Request {
                size,
                upload: false,
            });
        }
        Err(_) => return Err(perf::ERR_BAD_REQUEST),
        Ok(()) => {}
    }
    let len = u16::from_be_bytes(len) as usize;
    if len > perf::MAX_OPTIONS_LEN {
        return Err(perf::ERR_BAD_REQUEST);
    }
    let mut opts = vec![0u8; len];
    recv.read_exact(&mut opts)
        .await
        .map_err(|_| perf::ERR_BAD_REQUEST)?;
    Request::parse_options(size, &opts).map_err(|_| perf::ERR_BAD_REQUEST)
}

/// One request: read and checked, then served as an upload or a download.
async fn perf_stream(
    state: &Arc<ServerState>,
    conn: &Connection,
    info: &Arc<ConnectionInfo>,
    mut send: SendStream,
    mut recv: RecvStream,
) {
    let Some(request) = accepted_request(state, &mut send, &mut recv).await else {
        return;
    };
    state.count_request();
    if request.upload {
        receive_upload(state, send, recv).await;
    } else {
        send_download(state, conn, info, send, recv, request.size).await;
    }
}

/// The stream's request if it arrives within [`REQUEST_TIMEOUT`], parses and asks for at
/// most `max_request_bytes`; otherwise the stream is reset with the reason's code and
/// counted as a bad request.
async fn accepted_request(
    state: &ServerState,
    send: &mut SendStream,
    recv: &mut RecvStream,
) -> Option<Request> {
    let limit = state.options.max_request_bytes;
    let code = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(recv)).await {
        Ok(Ok(r)) if r.size == u64::MAX || r.size <= limit => return Some(r),
        Ok(Ok(_)) => perf::ERR_TOO_LARGE,
        Ok(Err(code)) => code,
        Err(_) => perf::ERR_BAD_REQUEST,
    };
    state.count_bad_request();
    let _ = send.reset(VarInt::from_u32(code));
    let _ = recv.stop(VarInt::from_u32(code));
    None
}

/// Receives an upload to its end (at most `max_request_bytes`, else the stream is
/// stopped) and answers with a receipt: the bytes and the time between the first and the
/// last chunk.
async fn receive_upload(state: &ServerState, mut send: SendStream, mut recv: RecvStream) {
    let limit = state.options.max_request_bytes;
    let mut received = 0u64;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    loop {
        match recv.read_chunk(64 * 1024, false).await {
            Ok(Some(chunk)) => {
                let now = Instant::now();
                first.get_or_insert(now);
                last = now;
                received += chunk.bytes.len() as u64;
                state
                    .counters
                    .bytes_received
                    .fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
                if received > limit {
                    let _ = recv.stop(VarInt::from_u32(perf::ERR_TOO_LARGE));
                    let _ = send.reset(VarInt::from_u32(perf::ERR_TOO_LARGE));
                    return;
                }
            }
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let micros = first.map_or(0, |f| last.duration_since(f).as_micros() as u64);
    let receipt = Receipt {
        bytes: received,
        micros,
    };
    let _ = send.write_all(&receipt.encode()).await;
    let _ = send.finish();
    let _ = send.stopped().await;
}

/// Sends `size` bytes (at most `max_request_bytes`: a download "until stopped", iperf's
/// `-t`, ends there too), then, once every byte is acknowledged, the sender's report on a
/// stream of its own.
async fn send_download(
    state: &ServerState,
    conn: &Connection,
    info: &ConnectionInfo,
    mut send: SendStream,
    mut recv: RecvStream,
    size: u64,
) {
    // The request is complete; nothing more is read.
    let _ = recv.stop(VarInt::from_u32(0));
    let mut left = size.min(state.options.max_request_bytes);
    while left > 0 {
        let n = left.min(satquic_run::ZEROS.len() as u64) as usize;
        if send
            .write_chunk(Bytes::from_static(&satquic_run::ZEROS[..n]))
            .await
            .is_err()
        {
            return; // the client stopped reading or went away
        }
        state.count_sent(n as u64);
        left -= n as u64;
    }
    if send.finish().is_err() {
        return;
    }
    // Every byte acknowledged: tell the client what the sender saw.
    if let Ok(None) = send.stopped().await {
        let report = server_report(info, conn);
        if let Ok(mut uni) = conn.open_uni().await
            && let Ok(json) = serde_json::to_vec(&report)
        {
            let _ = uni.write_all(&json).await;
            let _ = uni.finish();
        }
    }
}
