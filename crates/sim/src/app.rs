//! The applications at both ends of a flow: what the client asks for, what the server
//! sends, and how the receiver reads. They stand apart from the event loop
//! ([`crate::engine`]), which calls them when a connection has news; every workload
//! (download, upload, timed, sequential resumed connections, several flows) is these two
//! applications with a different request.
//!
//! # The applications
//!
//! A flow's data goes one way ([`DataDirection`](satquic_run::DataDirection)). On a
//! download the client opens one bidirectional stream once connected and sends an 8-byte
//! request (the response size, big-endian; `u64::MAX` for a timed flow), then FIN. On an
//! upload the client writes the data on that stream right away and the server reads it;
//! the link is then mirrored, so `down` is always the data direction. What follows says
//! "client" and "server" for a download's receiver and sender. The server
//! answers with that many zero bytes and finishes the stream. The client reads with
//! `ordered = false` and tracks the in-order prefix itself ([`InOrder`]): quinn-proto
//! 0.11's ordered reassembly refuses more than 1024 gaps in a stream buffer and kills the
//! connection ("too many gaps in stream buffer"), which the Viasat AQM (dropping one
//! arrival in four) produces within a second of overshoot. Reading unordered keeps the
//! connection alive; the per-MB times still count only bytes the application would have
//! in order. Flow-control credit then follows bytes received rather than the in-order
//! prefix, so a window is a little more generous while there are holes. The server
//! writes lazily, keeping
//! one to two MB more written than it has sent, so a 200 MB download does not hold
//! 200 MB in quinn's send buffer; the sender is never application-limited by this (it can
//! send at most one window per event). The client reads everything as soon as it arrives.

use std::time::Duration;

use bytes::Bytes;
use quinn_proto::{Connection, Dir, Event, StreamEvent, StreamId, VarInt, WriteError};
use satquic_run::record::{FlowStatus, push_mb_times};
use satquic_run::scenario::{MB, TransportSpec, WindowUpdate};
use satquic_run::{InOrder, ZEROS};

use crate::flow::{FlowRt, end_flow};

/// The server keeps at least this much written but unsent data (bytes) ...
const SEND_AHEAD_MIN: u64 = MB;
/// ... and tops up to this much when it falls below.
const SEND_AHEAD_MAX: u64 = 2 * MB;

/// The receiving application of one flow (the client of a download, the server of an
/// upload).
#[derive(Default)]
pub(crate) struct Reader {
    stream: Option<StreamId>,
    /// Bytes received in order (the prefix an ordered reader would have).
    pub(crate) received: u64,
    in_order: InOrder,
    /// Virtual time at which the client had `k + 1` MB in order.
    pub(crate) mb_times: Vec<Duration>,
    /// ... and had received `k + 1` MB in any order (`read_total`).
    pub(crate) received_mb_times: Vec<Duration>,
    pub(crate) completed_at: Option<Duration>,
    /// Bytes read from the stream in any order (what quinn counts for flow control).
    read_total: u64,
    /// With [`WindowUpdate::Quicly`]: the connection credit announced so far.
    quicly_credit: Option<u64>,
}

/// The sending application of one flow (the server of a download, the client of an
/// upload).
#[derive(Default)]
pub(crate) struct Writer {
    stream: Option<StreamId>,
    /// Download: the request read so far.
    request: Vec<u8>,
    to_send: Option<u64>,
    written: u64,
    finished: bool,
    /// UDP payload bytes the sending connection has sent.
    pub(crate) udp_sent: u64,
}

/// The client opens the data stream and either asks for a download (an 8-byte request)
/// or starts its upload.
pub(crate) fn open_data_stream(
    upload: bool,
    requested: u64,
    writer: &mut Writer,
    reader: &mut Reader,
    conn: &mut Connection,
) {
    let Some(id) = conn.streams().open(Dir::Bi) else {
        return;
    };
    if upload {
        writer.stream = Some(id);
        writer.to_send = Some(requested);
    } else {
        let request = requested.to_be_bytes();
        let mut stream = conn.send_stream(id);
        // 8 bytes always fit in the initial stream credit (quinn's peers grant far
        // more, and 0-RTT remembers them), so one write takes all of it.
        let _ = stream.write(&request);
        let _ = stream.finish();
        reader.stream = Some(id);
    }
}

/// The client: connects, opens the stream (in 0-RTT when it resumes a TLS session, else
/// once connected) and either asks for a download or starts its upload; on a download,
/// reads.
pub(crate) fn client_app(f: &mut FlowRt, now: Duration) {
    let Some(c) = f.client.as_mut() else { return };
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Connected => {
                f.connected_at = Some(now);
                if !f.upload && f.transport.window_update == WindowUpdate::Quicly {
                    // Park the window before any stream data is read.
                    quicly_window_update(&mut c.conn, &mut f.reader, f.transport.receive_window);
                }
                f.zero_rtt_accepted = f.early_stream && c.conn.accepted_0rtt();
                if f.early_stream && !f.zero_rtt_accepted {
                    // The server refused 0-RTT: quinn dropped the early stream (RFC 9000
                    // Sec. 4.6.1), so the client's side starts over in 1-RTT.
                    if f.upload {
                        let udp_sent = f.writer.udp_sent;
                        f.writer = Writer {
                            udp_sent,
                            ..Writer::default()
                        };
                    } else {
                        f.reader.stream = None;
                    }
                }
                if !f.zero_rtt_accepted {
                    let requested = f.workload.requested_bytes();
                    open_data_stream(
                        f.upload,
                        requested,
                        &mut f.writer,
                        &mut f.reader,
                        &mut c.conn,
                    );
                }
                if let Ok(exported) = export_key(&c.conn) {
                    f.exporter = Some(exported);
                }
            }
            Event::ConnectionLost { reason } if f.reader.completed_at.is_none() => {
                f.status = FlowStatus::Failed(format!("connection lost: {reason}"));
            }
            _ => {}
        }
    }
    if !f.upload {
        read_data(&mut c.conn, &mut f.reader, &mut f.status, &f.transport, now);
    }
    if f.status != FlowStatus::Running {
        end_flow(f, now);
    }
}

/// The server: accepts the stream; on a download, reads the request (the writer then
/// sends); on an upload, reads the data.
pub(crate) fn server_app(f: &mut FlowRt, now: Duration) {
    let Some(c) = f.server.as_mut() else { return };
    while let Some(event) = c.conn.poll() {
        match event {
            Event::Connected if f.upload && f.transport.window_update == WindowUpdate::Quicly => {
                quicly_window_update(&mut c.conn, &mut f.reader, f.transport.receive_window);
            }
            Event::Stream(StreamEvent::Opened { dir: Dir::Bi })
                if (if f.upload {
                    f.reader.stream
                } else {
                    f.writer.stream
                })
                .is_none() =>
            {
                let id = c.conn.streams().accept(Dir::Bi);
                if f.upload {
                    f.reader.stream = id;
                } else {
                    f.writer.stream = id;
                }
            }
            Event::ConnectionLost { reason } if f.upload && f.reader.completed_at.is_none() => {
                f.status = FlowStatus::Failed(format!("connection lost: {reason}"));
            }
            // On a download the client decides the flow's outcome; a server-side error
            // shows there.
            _ => {}
        }
    }
    if f.upload {
        read_data(&mut c.conn, &mut f.reader, &mut f.status, &f.transport, now);
        if f.status != FlowStatus::Running {
            end_flow(f, now);
        }
        return;
    }
    let app = &mut f.writer;
    if let (Some(id), None) = (app.stream, app.to_send) {
        let mut recv = c.conn.recv_stream(id);
        if let Ok(mut chunks) = recv.read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => app.request.extend_from_slice(&chunk.bytes),
                    Ok(None) => {
                        if let Ok(size) = <[u8; 8]>::try_from(app.request.as_slice()) {
                            app.to_send = Some(u64::from_be_bytes(size));
                        }
                        break;
                    }
                    Err(_) => break,
                }
            }
            let _ = chunks.finalize();
        }
    }
}

/// Reads everything that arrived on the data stream, tracks the in-order prefix and the
/// per-MB times, and completes the flow at the FIN.
fn read_data(
    conn: &mut Connection,
    app: &mut Reader,
    status: &mut FlowStatus,
    transport: &TransportSpec,
    now: Duration,
) {
    let Some(id) = app.stream else { return };
    let mut recv = conn.recv_stream(id);
    if let Ok(mut chunks) = recv.read(false) {
        let mut finished = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    app.read_total += chunk.bytes.len() as u64;
                    app.received = app.in_order.insert(chunk.offset, chunk.bytes.len() as u64);
                }
                Ok(None) => {
                    finished = true;
                    break;
                }
                Err(quinn_proto::ReadError::Blocked) => break,
                Err(e) => {
                    *status = FlowStatus::Failed(format!("read: {e}"));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        push_mb_times(&mut app.mb_times, app.received, now);
        push_mb_times(&mut app.received_mb_times, app.read_total, now);
        if finished && app.completed_at.is_none() {
            app.completed_at = Some(now);
            *status = FlowStatus::Completed;
        }
    }
    if transport.window_update == WindowUpdate::Quicly {
        quicly_window_update(conn, app, transport.receive_window);
    }
}

/// Quinn's knob for the announced credit is the receive window: raising it by `d` raises
/// the credit by `d` (and queues MAX_DATA); lowering it by `d` makes the next `d` bytes
/// read add no credit ("shrink debt"). Keeping the window at a token 8 bytes with a debt
/// equal to the unused credit freezes the credit between updates; an update raises the
/// window by the increment and lowers it again, which adds the increment to the debt.
/// (A window of 8 rather than 0 keeps quinn from queueing a MAX_DATA after every read:
/// it sends one when the unannounced credit reaches window / 8.)
const QUICLY_PARKED_WINDOW: u64 = 8;

fn quicly_window_update(conn: &mut Connection, app: &mut Reader, window: u64) {
    let credit = match app.quicly_credit {
        Some(c) => c,
        None => {
            // First call: park the window; the initial credit is the configured window.
            conn.set_receive_window(varint(QUICLY_PARKED_WINDOW));
            app.quicly_credit = Some(window);
            window
        }
    };
    // quicly: announce more once more than half of the credit is used.
    if credit.saturating_sub(app.read_total) < window / 2 {
        let raise = app.read_total + window - credit;
        conn.set_receive_window(varint(QUICLY_PARKED_WINDOW + raise));
        conn.set_receive_window(varint(QUICLY_PARKED_WINDOW));
        app.quicly_credit = Some(credit + raise);
    }
}

fn varint(n: u64) -> VarInt {
    VarInt::from_u64(n).unwrap_or(VarInt::MAX)
}

fn export_key(conn: &Connection) -> Result<[u8; 32], ()> {
    let mut out = [0u8; 32];
    conn.crypto_session()
        .export_keying_material(&mut out, b"satquic-sim determinism check", b"")
        .map_err(|_| ())?;
    Ok(out)
}

/// Keeps between [`SEND_AHEAD_MIN`] and [`SEND_AHEAD_MAX`] bytes written but unsent.
pub(crate) fn top_up(app: &mut Writer, conn: &mut Connection) {
    let (Some(id), Some(total)) = (app.stream, app.to_send) else {
        return;
    };
    if app.finished || app.written >= app.udp_sent.saturating_add(SEND_AHEAD_MIN) {
        return;
    }
    let target = total.min(app.udp_sent.saturating_add(SEND_AHEAD_MAX));
    let mut stream = conn.send_stream(id);
    while app.written < target {
        let n = (target - app.written).min(ZEROS.len() as u64) as usize;
        // A static chunk: quinn keeps a reference to it instead of copying the bytes.
        let mut chunk = [Bytes::from_static(&ZEROS[..n])];
        match stream.write_chunks(&mut chunk) {
            Ok(w) if w.bytes == 0 => break,
            Err(WriteError::Blocked) => break,
            Ok(w) => app.written += w.bytes as u64,
            Err(_) => {
                app.finished = true;
                return;
            }
        }
    }
    if app.written == total {
        let _ = stream.finish();
        app.finished = true;
    }
}
