//! HTTP/0.9 over QUIC (`hq-interop`, as the QUIC interop runner uses it) and HTTP/3
//! (`h3`, with the hyperium `h3` and `h3-quinn` crates): server handlers and client
//! downloads.
//!
//! Both serve the same content: a file under `--www` if the path names one, otherwise a
//! synthetic object `/<size>` of zeros (`/10M`, `/1048576`; sizes as in
//! [`satquic_run::units::parse_size`]), at most `max_request_bytes`. Paths with `..`, `%` or a
//! backslash are refused; files are resolved inside the canonical `--www` directory.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Buf, Bytes};
use quinn::{Connection, RecvStream, SendStream, VarInt};
use tokio::io::AsyncReadExt;

use crate::NetError;
use crate::server::{REQUEST_TIMEOUT, ServerState};
use satquic_run::{InOrder, ZEROS};

/// hq-interop stream error: the object does not exist.
pub const HQ_ERR_NOT_FOUND: u32 = 0x104;
/// hq-interop stream error: the request is malformed.
pub const HQ_ERR_BAD_REQUEST: u32 = 0x101;
/// Longest hq-interop request line accepted.
pub const MAX_REQUEST_LINE: usize = 4096;
/// How far a connection's responses may be written ahead of what it has sent, bytes.
/// quinn keeps what is written until it is acknowledged, up to the send window
/// (`--max-window`, 256 MiB), and these responses are fresh memory (h3-quinn copies every
/// chunk; a file is read into new buffers): written as fast as they were read, each
/// connection held its send window, 10 h3 downloads of `/1G` 2.7 GB and 4 hq downloads of
/// a 1 GB file 1.0 GB. 4 MiB stays ahead of 16 Gbit/s at [`WRITE_AHEAD_POLL`].
pub const WRITE_AHEAD_BYTES: u64 = 4 << 20;
/// How often a writer held by [`WRITE_AHEAD_BYTES`] looks again.
pub const WRITE_AHEAD_POLL: Duration = Duration::from_millis(2);

/// What a path resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Zeros(u64),
    File(PathBuf, u64),
}

/// Why a path does not resolve (with its HTTP status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    BadRequest,
    NotFound,
    TooLarge,
}

impl Refusal {
    pub fn status(self) -> u16 {
        match self {
            Refusal::BadRequest => 400,
            Refusal::NotFound => 404,
            Refusal::TooLarge => 413,
        }
    }
}

/// What a request for a directory (`/`, `/docs/`) serves, as web servers do.
pub const INDEX_FILE: &str = "index.html";

/// Resolves a request path against `www` (a directory serves its [`INDEX_FILE`]) and the
/// synthetic objects.
pub fn resolve(www: Option<&Path>, path: &str, max_bytes: u64) -> Result<Body, Refusal> {
    let path = path.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/') || path.contains('%') || path.contains('\\') || path.contains('\0') {
        return Err(Refusal::BadRequest);
    }
    let rel = Path::new(&path[1..]);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(Refusal::BadRequest);
    }
    if let Some(root) = www {
        let mut full = root.join(rel);
        if full.is_dir() {
            full.push(INDEX_FILE);
        }
        if let Ok(canon) = full.canonicalize()
            && canon.starts_with(root)
            && let Ok(meta) = canon.metadata()
            && meta.is_file()
        {
            if meta.len() > max_bytes {
                return Err(Refusal::TooLarge);
            }
            return Ok(Body::File(canon, meta.len()));
        }
    }
    match satquic_run::units::parse_size(&path[1..]) {
        Ok(size) if size <= max_bytes => Ok(Body::Zeros(size)),
        Ok(_) => Err(Refusal::TooLarge),
        Err(_) => Err(Refusal::NotFound),
    }
}

/// Parses an HTTP/0.9 request line: `GET /path` with an optional `\r\n`.
pub fn parse_hq_request(line: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(line).ok()?;
    let text = text.trim_end_matches(['\r', '\n']);
    let path = text.strip_prefix("GET ")?;
    let path = path.split(' ').next()?;
    (!path.is_empty() && path.len() <= MAX_REQUEST_LINE).then(|| path.to_string())
}

/// A connection's response writers, held to [`WRITE_AHEAD_BYTES`] ahead of what the
/// connection has sent (lost bytes not counted as sent), shared by its streams.
#[derive(Clone)]
struct WriteAhead {
    conn: Connection,
    written: Arc<AtomicU64>,
}

impl WriteAhead {
    fn new(conn: Connection) -> Self {
        WriteAhead {
            conn,
            written: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Waits until `n` more bytes fit ahead of what was sent (or the connection closed),
    /// then counts them as written.
    async fn reserve(&self, n: u64) {
        loop {
            let stats = self.conn.stats();
            let sent = stats.udp_tx.bytes.saturating_sub(stats.path.lost_bytes);
            let written = self.written.load(Ordering::Relaxed);
            if written + n <= sent + WRITE_AHEAD_BYTES || self.conn.close_reason().is_some() {
                break;
            }
            tokio::time::sleep(WRITE_AHEAD_POLL).await;
        }
        self.written.fetch_add(n, Ordering::Relaxed);
    }
}

/// Reads a [`Body`] chunk by chunk.
struct BodyReader {
    left: u64,
    file: Option<tokio::fs::File>,
}

impl BodyReader {
    async fn open(body: &Body) -> Option<Self> {
        Some(match body {
            Body::Zeros(n) => BodyReader {
                left: *n,
                file: None,
            },
            Body::File(path, n) => BodyReader {
                left: *n,
                file: Some(tokio::fs::File::open(path).await.ok()?),
            },
        })
    }

    /// The next chunk; `Ok(None)` at the end.
    async fn next(&mut self) -> Result<Option<Bytes>, ()> {
        if self.left == 0 {
            return Ok(None);
        }
        match &mut self.file {
            None => {
                let n = self.left.min(ZEROS.len() as u64) as usize;
                self.left -= n as u64;
                Ok(Some(Bytes::from_static(&ZEROS[..n])))
            }
            Some(file) => {
                let mut buf = vec![0u8; 64 * 1024];
                let n = file.read(&mut buf).await.map_err(|_| ())?;
                if n == 0 {
                    // The file shrank: end here rather than promise bytes that are gone.
                    return Err(());
                }
                buf.truncate(n);
                self.left = self.left.saturating_sub(n as u64);
                Ok(Some(Bytes::from(buf)))
            }
        }
    }
}

pub(crate) async fn serve_hq(state: &Arc<ServerState>, conn: &Connection) {
    let ahead = WriteAhead::new(conn.clone());
    loop {
        let (send, recv) = match conn.accept_bi().await {
            Ok(s) => s,
            Err(_) => return,
        };
        let state = state.clone();
        let ahead = ahead.clone();
        tokio::spawn(async move { hq_stream(&state, &ahead, send, recv).await });
    }
}

async fn hq_stream(
    state: &Arc<ServerState>,
    ahead: &WriteAhead,
    mut send: SendStream,
    mut recv: RecvStream,
) {
    let line = tokio::time::timeout(REQUEST_TIMEOUT, recv.read_to_end(MAX_REQUEST_LINE)).await;
    let refuse = |send: &mut SendStream, code: u32| {
        state.count_bad_request();
        let _ = send.reset(VarInt::from_u32(code));
    };
    let Some(path) = line
        .ok()
        .and_then(|r| r.ok())
        .and_then(|l| parse_hq_request(&l))
    else {
        let _ = recv.stop(VarInt::from_u32(HQ_ERR_BAD_REQUEST));
        refuse(&mut send, HQ_ERR_BAD_REQUEST);
        return;
    };
    let body = match resolve(state.www_root(), &path, state.options.max_request_bytes) {
        Ok(b) => b,
        Err(Refusal::NotFound) => return refuse(&mut send, HQ_ERR_NOT_FOUND),
        Err(_) => return refuse(&mut send, HQ_ERR_BAD_REQUEST),
    };
    state.count_request();
    let Some(mut reader) = BodyReader::open(&body).await else {
        return refuse(&mut send, HQ_ERR_NOT_FOUND);
    };
    loop {
        match reader.next().await {
            Ok(Some(chunk)) => {
                let n = chunk.len() as u64;
                ahead.reserve(n).await;
                if send.write_chunk(chunk).await.is_err() {
                    return;
                }
                state.count_sent(n);
            }
            Ok(None) => break,
            Err(()) => {
                let _ = send.reset(VarInt::from_u32(HQ_ERR_NOT_FOUND));
                return;
            }
        }
    }
    let _ = send.finish();
    let _ = send.stopped().await;
}

pub(crate) async fn serve_h3(state: &Arc<ServerState>, conn: Connection) {
    let ahead = WriteAhead::new(conn.clone());
    let mut server: h3::server::Connection<h3_quinn::Connection, Bytes> =
        match h3::server::builder()
            .build(h3_quinn::Connection::new(conn))
            .await
        {
            Ok(s) => s,
            Err(_) => return,
        };
    while let Ok(Some(resolver)) = server.accept().await {
        {
            {
                let state = state.clone();
                let ahead = ahead.clone();
                tokio::spawn(async move {
                    let Ok(Ok((request, mut stream))) =
                        tokio::time::timeout(REQUEST_TIMEOUT, resolver.resolve_request()).await
                    else {
                        state.count_bad_request();
                        return;
                    };
                    let result = if request.method() != http::Method::GET {
                        Err(Refusal::BadRequest)
                    } else {
                        resolve(
                            state.www_root(),
                            request.uri().path(),
                            state.options.max_request_bytes,
                        )
                    };
                    let (status, body) = match result {
                        Ok(body) => (200, Some(body)),
                        Err(r) => (r.status(), None),
                    };
                    let mut builder = http::Response::builder().status(status);
                    if let Some(Body::Zeros(n) | Body::File(_, n)) = &body {
                        builder = builder.header("content-length", n.to_string());
                    }
                    let Ok(response) = builder.body(()) else {
                        return;
                    };
                    if stream.send_response(response).await.is_err() {
                        return;
                    }
                    match body {
                        Some(body) => {
                            state.count_request();
                            let Some(mut reader) = BodyReader::open(&body).await else {
                                return;
                            };
                            loop {
                                match reader.next().await {
                                    Ok(Some(chunk)) => {
                                        let n = chunk.len() as u64;
                                        ahead.reserve(n).await;
                                        if stream.send_data(chunk).await.is_err() {
                                            return;
                                        }
                                        state.count_sent(n);
                                    }
                                    Ok(None) => break,
                                    Err(()) => return,
                                }
                            }
                        }
                        None => state.count_bad_request(),
                    }
                    let _ = stream.finish().await;
                    // A GET has no body to read: whatever of the request is still to come
                    // is not wanted (RFC 9114 Sec. 4.1.2: stop it with H3_NO_ERROR, rather
                    // than the 0 that dropping the stream sends).
                    stream.stop_sending(h3::error::Code::H3_NO_ERROR);
                });
            }
        }
    }
}

/// Downloads `path` over hq-interop on `conn`, calling `progress` with the bytes each
/// chunk adds to the in-order prefix of the response. The stream is read unordered (as
/// perf downloads are, see [`InOrder`]): quinn 0.11's ordered reassembly gives up after
/// 1024 gaps, which a lossy GEO link produces within a second.
pub async fn hq_download(
    conn: &Connection,
    path: &str,
    mut progress: impl FnMut(usize),
) -> Result<u64, NetError> {
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| NetError::Transfer(format!("cannot open a stream: {e}")))?;
    send.write_all(format!("GET {path}\r\n").as_bytes())
        .await
        .map_err(|e| NetError::Transfer(format!("cannot send the request: {e}")))?;
    let _ = send.finish();
    let mut in_order = InOrder::default();
    loop {
        match recv.read_chunk(256 * 1024, false).await {
            Ok(Some(chunk)) => {
                let before = in_order.prefix();
                let after = in_order.insert(chunk.offset, chunk.bytes.len() as u64);
                if after > before {
                    progress((after - before) as usize);
                }
            }
            Ok(None) => return Ok(in_order.prefix()),
            Err(e) => {
                return Err(NetError::Transfer(format!(
                    "download of {path} failed: {e}"
                )));
            }
        }
    }
}

/// Downloads `path` over HTTP/3 on `conn`, calling `progress` with each chunk size.
pub async fn h3_download(
    conn: &Connection,
    authority: &str,
    path: &str,
    mut progress: impl FnMut(usize),
) -> Result<u64, NetError> {
    let fail =
        |what: &str, e: &dyn std::fmt::Display| NetError::Transfer(format!("h3 {what}: {e}"));
    let (mut driver, mut sender) = h3::client::new(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|e| fail("connection", &e))?;
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let uri = format!("https://{authority}{path}");
    let request = http::Request::get(uri)
        .body(())
        .map_err(|e| NetError::Usage(format!("invalid path '{path}': {e}")))?;
    let result = async {
        let mut stream = sender
            .send_request(request)
            .await
            .map_err(|e| fail("request", &e))?;
        // A server may answer in full and stop reading the request before its end arrives
        // (RFC 9114 Sec. 4.1.2: the client MUST NOT discard the response then); a request
        // that cannot be finished for any other reason fails at the response.
        let _ = stream.finish().await;
        let response = stream
            .recv_response()
            .await
            .map_err(|e| fail("response", &e))?;
        if !response.status().is_success() {
            return Err(NetError::Transfer(format!(
                "h3 GET {path}: status {}",
                response.status()
            )));
        }
        let mut total = 0u64;
        while let Some(mut chunk) = stream.recv_data().await.map_err(|e| fail("body", &e))? {
            let n = chunk.remaining();
            chunk.advance(n);
            total += n as u64;
            progress(n);
        }
        Ok(total)
    }
    .await;
    drop(sender);
    drive.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_objects() {
        assert_eq!(resolve(None, "/10M", u64::MAX), Ok(Body::Zeros(10_000_000)));
        assert_eq!(resolve(None, "/1024?x=1", u64::MAX), Ok(Body::Zeros(1024)));
        assert_eq!(resolve(None, "/10M", 1000), Err(Refusal::TooLarge));
        assert_eq!(resolve(None, "/index.html", 1000), Err(Refusal::NotFound));
        assert_eq!(
            resolve(None, "/../etc/passwd", 1000),
            Err(Refusal::BadRequest)
        );
        assert_eq!(resolve(None, "relative", 1000), Err(Refusal::BadRequest));
        assert_eq!(resolve(None, "/%2e%2e/x", 1000), Err(Refusal::BadRequest));
    }

    #[test]
    fn files_stay_inside_www() {
        let dir = std::env::temp_dir().join(format!("satquic-www-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.txt"), b"hello").unwrap();
        let root = dir.canonicalize().unwrap();
        assert_eq!(
            resolve(Some(&root), "/sub/a.txt", 100),
            Ok(Body::File(root.join("sub/a.txt"), 5))
        );
        assert_eq!(
            resolve(Some(&root), "/sub/../../x", 100),
            Err(Refusal::BadRequest)
        );
        assert_eq!(resolve(Some(&root), "/sub", 100), Err(Refusal::NotFound));
        // A directory serves its index.html.
        std::fs::write(dir.join("index.html"), b"<p>").unwrap();
        std::fs::write(dir.join("sub/index.html"), b"<p>sub").unwrap();
        assert_eq!(
            resolve(Some(&root), "/", 100),
            Ok(Body::File(root.join("index.html"), 3))
        );
        assert_eq!(
            resolve(Some(&root), "/sub/", 100),
            Ok(Body::File(root.join("sub/index.html"), 6))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hq_request_lines() {
        assert_eq!(parse_hq_request(b"GET /10M\r\n").as_deref(), Some("/10M"));
        assert_eq!(parse_hq_request(b"GET /a").as_deref(), Some("/a"));
        assert_eq!(parse_hq_request(b"POST /a\r\n"), None);
        assert_eq!(parse_hq_request(b"GET \r\n"), None);
        assert_eq!(parse_hq_request(&[0xff, 0xfe]), None);
    }
}
