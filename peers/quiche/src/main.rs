//! quiche-peer: a small HTTP/3 file server and download client on the quiche crate for
//! `satquic matrix` (peers/adapters.toml), built by scripts/install-peers.sh.
//!
//! ```text
//! quiche-peer server --listen 127.0.0.1:4433 --cert cert.pem --key key.pem --www DIR [--cc NAME]
//! quiche-peer client --download DIR [--cc NAME] https://127.0.0.1:4433/file
//! ```
//!
//! `--cc` is quiche's name (`reno`, `cubic`, `bbr2_gcongestion`). SSLKEYLOGFILE names a
//! key log file. The client does not verify certificates (the matrix runs on loopback
//! with a fresh self-signed one) and exits 0 once the whole response is saved. Both
//! sides offer 16 MiB stream and 32 MiB connection windows, above the 1.5 MB BDP of the
//! seeds' 20 Mbit/s, 600 ms links, so flow control does not cap the transfer.

use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Duration;

use ring::rand::{SecureRandom, SystemRandom};

const MAX_DATAGRAM: usize = 1350;

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("quiche-peer: {msg}");
    std::process::exit(1)
}

/// `--name value` pairs and the positional arguments.
fn options(args: &[String]) -> (HashMap<String, String>, Vec<String>) {
    let mut opts = HashMap::new();
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(name) = a.strip_prefix("--") {
            let v = it
                .next()
                .unwrap_or_else(|| fail(format!("--{name} needs a value")));
            opts.insert(name.to_string(), v.clone());
        } else {
            rest.push(a.clone());
        }
    }
    (opts, rest)
}

fn config(opts: &HashMap<String, String>) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap_or_else(|e| fail(e));
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .unwrap_or_else(|e| fail(e));
    c.set_max_idle_timeout(30_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(MAX_DATAGRAM);
    c.set_initial_max_data(32 << 20);
    c.set_initial_max_stream_data_bidi_local(16 << 20);
    c.set_initial_max_stream_data_bidi_remote(16 << 20);
    c.set_initial_max_stream_data_uni(1 << 20);
    c.set_initial_max_streams_bidi(100);
    c.set_initial_max_streams_uni(100);
    c.set_disable_active_migration(true);
    if let Some(cc) = opts.get("cc") {
        c.set_cc_algorithm_name(cc)
            .unwrap_or_else(|e| fail(format!("--cc {cc}: {e}")));
    }
    if std::env::var_os("SSLKEYLOGFILE").is_some() {
        c.log_keys();
    }
    c
}

fn keylog(conn: &mut quiche::Connection) {
    if let Some(path) = std::env::var_os("SSLKEYLOGFILE") {
        if let Ok(f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            conn.set_keylog(Box::new(f));
        }
    }
}

fn random_cid() -> quiche::ConnectionId<'static> {
    let mut id = [0u8; quiche::MAX_CONN_ID_LEN];
    SystemRandom::new()
        .fill(&mut id)
        .unwrap_or_else(|_| fail("no randomness"));
    quiche::ConnectionId::from_vec(id.to_vec())
}

/// Sends everything the connection has to send.
fn flush(socket: &UdpSocket, conn: &mut quiche::Connection, out: &mut [u8]) {
    loop {
        match conn.send(out) {
            Ok((n, info)) => {
                if let Err(e) = socket.send_to(&out[..n], info.to) {
                    if e.kind() == std::io::ErrorKind::WouldBlock {
                        break;
                    }
                    fail(format!("send: {e}"));
                }
            }
            Err(quiche::Error::Done) => break,
            Err(e) => {
                let _ = conn.close(false, 0x1, b"send failed");
                eprintln!("quiche-peer: send: {e}");
                break;
            }
        }
    }
}

/// Waits for one datagram until the connection's next timeout (or `idle`).
fn receive(
    socket: &UdpSocket,
    timeout: Option<Duration>,
    buf: &mut [u8],
) -> Option<(usize, SocketAddr)> {
    let t = timeout
        .unwrap_or(Duration::from_millis(100))
        .max(Duration::from_micros(100));
    socket.set_read_timeout(Some(t)).ok()?;
    match socket.recv_from(buf) {
        Ok(v) => Some(v),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            None
        }
        Err(e) => fail(format!("recv: {e}")),
    }
}

/// A response still being written: its body and how much of it went out.
struct Pending {
    body: Vec<u8>,
    written: usize,
}

struct ServerConn {
    conn: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    pending: HashMap<u64, Pending>,
}

fn server(args: &[String]) {
    let (opts, _) = options(args);
    let listen = opts.get("listen").map_or("127.0.0.1:4433", String::as_str);
    let www = std::path::PathBuf::from(opts.get("www").map_or(".", String::as_str));
    let mut cfg = config(&opts);
    cfg.load_cert_chain_from_pem_file(opts.get("cert").unwrap_or_else(|| fail("--cert")))
        .unwrap_or_else(|e| fail(format!("--cert: {e}")));
    cfg.load_priv_key_from_pem_file(opts.get("key").unwrap_or_else(|| fail("--key")))
        .unwrap_or_else(|e| fail(format!("--key: {e}")));
    let h3_config = quiche::h3::Config::new().unwrap_or_else(|e| fail(e));
    let socket = UdpSocket::bind(listen).unwrap_or_else(|e| fail(format!("{listen}: {e}")));
    let local = socket.local_addr().unwrap_or_else(|e| fail(e));
    let mut conns: HashMap<quiche::ConnectionId<'static>, ServerConn> = HashMap::new();
    let cid_key = ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &SystemRandom::new())
        .unwrap_or_else(|_| fail("no randomness"));
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; MAX_DATAGRAM];
    loop {
        let timeout = conns.values().filter_map(|c| c.conn.timeout()).min();
        match receive(&socket, timeout, &mut buf) {
            None => conns.values_mut().for_each(|c| c.conn.on_timeout()),
            Some((len, from)) => {
                let Ok(hdr) = quiche::Header::from_slice(&mut buf[..len], quiche::MAX_CONN_ID_LEN)
                else {
                    continue;
                };
                // The server's connection ID is derived from the client's first one, so
                // that the client's repeated Initials find the same connection.
                let derived = {
                    let tag = ring::hmac::sign(&cid_key, &hdr.dcid);
                    quiche::ConnectionId::from_vec(tag.as_ref()[..quiche::MAX_CONN_ID_LEN].to_vec())
                };
                let key = if conns.contains_key(&hdr.dcid) {
                    hdr.dcid.clone().into_owned()
                } else if conns.contains_key(&derived) {
                    derived
                } else {
                    if hdr.ty != quiche::Type::Initial {
                        continue;
                    }
                    if !quiche::version_is_supported(hdr.version) {
                        if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut out) {
                            let _ = socket.send_to(&out[..n], from);
                        }
                        continue;
                    }
                    let mut conn = quiche::accept(&derived, None, local, from, &mut cfg)
                        .unwrap_or_else(|e| fail(format!("accept: {e}")));
                    keylog(&mut conn);
                    conns.insert(
                        derived.clone(),
                        ServerConn {
                            conn,
                            h3: None,
                            pending: HashMap::new(),
                        },
                    );
                    derived
                };
                let c = conns.get_mut(&key).expect("just inserted");
                let _ = c
                    .conn
                    .recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
            }
        }
        for c in conns.values_mut() {
            if (c.conn.is_in_early_data() || c.conn.is_established()) && c.h3.is_none() {
                c.h3 = quiche::h3::Connection::with_transport(&mut c.conn, &h3_config).ok();
            }
            if let Some(h3) = c.h3.as_mut() {
                serve_requests(h3, &mut c.conn, &mut c.pending, &www);
                for stream in c.conn.writable() {
                    write_pending(h3, &mut c.conn, &mut c.pending, stream);
                }
            }
            flush(&socket, &mut c.conn, &mut out);
        }
        conns.retain(|_, c| !c.conn.is_closed());
    }
}

fn serve_requests(
    h3: &mut quiche::h3::Connection,
    conn: &mut quiche::Connection,
    pending: &mut HashMap<u64, Pending>,
    www: &std::path::Path,
) {
    loop {
        match h3.poll(conn) {
            Ok((stream, quiche::h3::Event::Headers { list, .. })) => {
                use quiche::h3::NameValue;
                let path = list
                    .iter()
                    .find(|h| h.name() == b":path")
                    .map(|h| String::from_utf8_lossy(h.value()).into_owned())
                    .unwrap_or_default();
                let name = path.split('?').next().unwrap_or("").trim_start_matches('/');
                let file = www.join(name);
                let (status, body) = match std::fs::read(&file) {
                    Ok(b) if !name.contains("..") && !name.is_empty() => ("200", b),
                    _ => ("404", Vec::new()),
                };
                let len = body.len().to_string();
                let headers = [
                    quiche::h3::Header::new(b":status", status.as_bytes()),
                    quiche::h3::Header::new(b"content-length", len.as_bytes()),
                ];
                if h3.send_response(conn, stream, &headers, false).is_err() {
                    continue;
                }
                pending.insert(stream, Pending { body, written: 0 });
                write_pending(h3, conn, pending, stream);
            }
            Ok(_) => {}
            Err(quiche::h3::Error::Done) => break,
            Err(_) => break,
        }
    }
}

fn write_pending(
    h3: &mut quiche::h3::Connection,
    conn: &mut quiche::Connection,
    pending: &mut HashMap<u64, Pending>,
    stream: u64,
) {
    let Some(p) = pending.get_mut(&stream) else {
        return;
    };
    match h3.send_body(conn, stream, &p.body[p.written..], true) {
        Ok(n) => p.written += n,
        Err(quiche::h3::Error::Done) => {}
        Err(_) => {
            pending.remove(&stream);
            return;
        }
    }
    if p.written == p.body.len() {
        pending.remove(&stream);
    }
}

fn client(args: &[String]) {
    let (opts, rest) = options(args);
    let [url] = rest.as_slice() else {
        fail("client: give one URL")
    };
    let without_scheme = url
        .strip_prefix("https://")
        .unwrap_or_else(|| fail("https:// URL"));
    let (authority, path) = match without_scheme.find('/') {
        Some(i) => (&without_scheme[..i], &without_scheme[i..]),
        None => (without_scheme, "/"),
    };
    let peer = authority
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| fail(format!("cannot resolve {authority}")));
    let name = path
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("index.html");
    let dir = std::path::PathBuf::from(opts.get("download").map_or(".", String::as_str));
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(dir.join(name)).unwrap_or_else(|e| fail(e)));
    let mut cfg = config(&opts);
    cfg.verify_peer(false);
    let socket = UdpSocket::bind(if peer.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })
    .unwrap_or_else(|e| fail(e));
    let local = socket.local_addr().unwrap_or_else(|e| fail(e));
    let mut conn = quiche::connect(Some("localhost"), &random_cid(), local, peer, &mut cfg)
        .unwrap_or_else(|e| fail(format!("connect: {e}")));
    keylog(&mut conn);
    let h3_config = quiche::h3::Config::new().unwrap_or_else(|e| fail(e));
    let mut h3: Option<quiche::h3::Connection> = None;
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; MAX_DATAGRAM];
    let mut sent = false;
    let mut done = false;
    flush(&socket, &mut conn, &mut out);
    loop {
        match receive(&socket, conn.timeout(), &mut buf) {
            None => conn.on_timeout(),
            Some((len, from)) => {
                let _ = conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local });
            }
        }
        if conn.is_closed() {
            break;
        }
        if conn.is_established() && h3.is_none() {
            h3 = Some(
                quiche::h3::Connection::with_transport(&mut conn, &h3_config)
                    .unwrap_or_else(|e| fail(format!("HTTP/3: {e}"))),
            );
        }
        if let Some(h3) = h3.as_mut() {
            if !sent {
                let req = [
                    quiche::h3::Header::new(b":method", b"GET"),
                    quiche::h3::Header::new(b":scheme", b"https"),
                    quiche::h3::Header::new(b":authority", authority.as_bytes()),
                    quiche::h3::Header::new(b":path", path.as_bytes()),
                ];
                h3.send_request(&mut conn, &req, true)
                    .unwrap_or_else(|e| fail(format!("request: {e}")));
                sent = true;
            }
            loop {
                match h3.poll(&mut conn) {
                    Ok((_, quiche::h3::Event::Headers { list, .. })) => {
                        use quiche::h3::NameValue;
                        if let Some(s) = list.iter().find(|h| h.name() == b":status") {
                            if s.value() != b"200" {
                                fail(format!("status {}", String::from_utf8_lossy(s.value())));
                            }
                        }
                    }
                    Ok((stream, quiche::h3::Event::Data)) => {
                        while let Ok(n) = h3.recv_body(&mut conn, stream, &mut buf) {
                            file.write_all(&buf[..n]).unwrap_or_else(|e| fail(e));
                        }
                    }
                    Ok((_, quiche::h3::Event::Finished)) => {
                        done = true;
                        let _ = conn.close(true, 0x100, b"done");
                    }
                    Ok((_, quiche::h3::Event::Reset(e))) => {
                        fail(format!("reset by the server ({e})"))
                    }
                    Ok(_) => {}
                    Err(quiche::h3::Error::Done) => break,
                    Err(e) => fail(format!("HTTP/3: {e}")),
                }
            }
        }
        flush(&socket, &mut conn, &mut out);
        // Done once the CONNECTION_CLOSE is out: waiting through the closing period
        // (3 PTO, ~2 s on a GEO path) would count against the download time.
        if conn.is_closed() || done {
            break;
        }
    }
    file.flush().unwrap_or_else(|e| fail(e));
    if !done {
        fail(format!(
            "connection closed before the response ended: {:?}",
            conn.peer_error()
        ));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("server") => server(&args[2..]),
        Some("client") => client(&args[2..]),
        _ => fail("usage: quiche-peer server|client ..."),
    }
}
