//! A quinn server and client on loopback: the server sends 50 MB with CUBIC + SEARCH
//! (current draft) and prints the slow-start exit and how many SEARCH evaluations ran.
//!
//! `cargo run --release --example quinn_search -p satquic-cc [-- BYTES [SPEC]]`

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use quinn::crypto::rustls::QuicServerConfig;
use quinn::{Endpoint, ServerConfig, TransportConfig, VarInt};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use satquic_cc::{CcEvent, CongestionConfig, EventLog, EventSink};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Flow-control windows large enough never to limit a loopback transfer.
fn transport(cc: Option<CongestionConfig>) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.stream_receive_window(VarInt::from_u32(256 << 20));
    t.receive_window(VarInt::from_u32(512 << 20));
    t.send_window(512 << 20);
    if let Some(cc) = cc {
        t.congestion_controller_factory(Arc::new(cc));
    }
    t
}

/// Downloads `bytes` from a loopback server whose sending side runs `spec`; returns the
/// server's congestion-control events and the transfer time in seconds.
pub async fn transfer(bytes: u64, spec: &str) -> Result<(Vec<CcEvent>, f64), BoxError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let log = EventLog::new();
    let cc = CongestionConfig::from_spec(spec)?.event_sink(log.clone() as Arc<dyn EventSink>);

    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
    let cert_der: CertificateDer<'static> = cert.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let server_crypto = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert_der.clone()], key)?;
    let mut server_config =
        ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(server_crypto)?));
    server_config.transport_config(Arc::new(transport(Some(cc))));
    let server = Endpoint::server(server_config, SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let addr = server.local_addr()?;

    let serve = tokio::spawn(async move {
        let conn = server.accept().await.ok_or("no connection")?.await?;
        let (mut send, mut recv) = conn.accept_bi().await?;
        let request = recv.read_to_end(64).await?;
        let size = u64::from_be_bytes(request.as_slice().try_into()?);
        let chunk = vec![0x5a; 64 * 1024];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            send.write_all(&chunk[..n]).await?;
            left -= n as u64;
        }
        send.finish()?;
        conn.closed().await;
        Ok::<_, BoxError>(())
    });

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert_der)?;
    let mut client_config = quinn::ClientConfig::with_root_certificates(Arc::new(roots))?;
    client_config.transport_config(Arc::new(transport(None)));
    let mut client = Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    client.set_default_client_config(client_config);

    let start = Instant::now();
    let conn = client.connect(addr, "localhost")?.await?;
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(&bytes.to_be_bytes()).await?;
    send.finish()?;
    let mut received = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(n) = recv.read(&mut buf).await? {
        received += n as u64;
    }
    let seconds = start.elapsed().as_secs_f64();
    if received != bytes {
        return Err(format!("received {received} of {bytes} bytes").into());
    }
    conn.close(0u32.into(), b"done");
    client.wait_idle().await;
    serve.await??;
    Ok((log.take(), seconds))
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let bytes: u64 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(50_000_000);
    let spec = args.next().unwrap_or_else(|| "cubic+search".into());
    let (events, seconds) = transfer(bytes, &spec).await?;
    let evaluations = events
        .iter()
        .filter(|e| matches!(e, CcEvent::SearchEval { .. }))
        .count();
    println!(
        "{spec}: {bytes} bytes in {seconds:.3} s ({:.1} Mbit/s), {evaluations} SEARCH evaluations",
        bytes as f64 * 8.0 / seconds / 1e6
    );
    match events
        .iter()
        .find(|e| matches!(e, CcEvent::SlowStartExit { .. }))
    {
        Some(exit) => println!("slow-start exit: {exit:?}"),
        None => println!("slow start did not end"),
    }
    Ok(())
}
