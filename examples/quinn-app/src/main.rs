//! A quinn file server and download client with satquic-cc's `satellite` profile.
//!
//!     quinn-app server LISTEN FILE CERT_OUT EVENTS_OUT   # serves FILE to one client
//!     quinn-app client SERVER CERT OUT                   # downloads it to OUT

use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use quinn::rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use quinn::{ClientConfig, Endpoint, ServerConfig, TransportConfig};
use satquic_cc::EventLog;
use satquic_cc::profile::{apply_satellite, satellite_cc};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The `satellite` profile, its controller reporting to `events`.
fn transport(events: &Arc<EventLog>) -> Arc<TransportConfig> {
    let mut transport = TransportConfig::default();
    apply_satellite(&mut transport)
        .congestion_controller_factory(Arc::new(satellite_cc().event_sink(events.clone())));
    Arc::new(transport)
}

/// Sends `file` to the first client, then writes the controller's events to `events_out`.
async fn server(listen: SocketAddr, file: &str, cert_out: &str, events_out: &str) -> Result<()> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
    std::fs::write(cert_out, cert.cert.der())?;
    let key = PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der());
    let mut config = ServerConfig::with_single_cert(vec![cert.cert.der().clone()], key.into())?;
    let events = EventLog::new();
    config.transport_config(transport(&events));
    let endpoint = Endpoint::server(config, listen)?;
    let connection = endpoint.accept().await.ok_or("endpoint closed")?.await?;
    let mut stream = connection.open_uni().await?;
    stream.write_all(&std::fs::read(file)?).await?;
    stream.finish()?;
    connection.closed().await;
    let lines: Vec<String> = events.events().iter().map(|e| format!("{e:?}\n")).collect();
    std::fs::write(events_out, lines.concat())?;
    Ok(())
}

/// Downloads the server's file to `out`.
async fn client(server: SocketAddr, cert: &str, out: &str) -> Result<()> {
    let mut roots = quinn::rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(std::fs::read(cert)?))?;
    let mut config = ClientConfig::with_root_certificates(Arc::new(roots))?;
    config.transport_config(transport(&EventLog::new()));
    let mut endpoint = Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    endpoint.set_default_client_config(config);
    let start = Instant::now();
    let connection = endpoint.connect(server, "localhost")?.await?;
    let data = connection
        .accept_uni()
        .await?
        .read_to_end(usize::MAX)
        .await?;
    std::fs::write(out, &data)?;
    println!(
        "{} bytes in {:.2} s",
        data.len(),
        start.elapsed().as_secs_f64()
    );
    connection.close(0u32.into(), b"done");
    endpoint.wait_idle().await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["server", listen, file, cert_out, events_out] => {
            server(listen.parse()?, file, cert_out, events_out).await
        }
        ["client", server_addr, cert, out] => client(server_addr.parse()?, cert, out).await,
        _ => {
            eprintln!(
                "usage: quinn-app server LISTEN FILE CERT_OUT EVENTS_OUT | client SERVER CERT OUT"
            );
            std::process::exit(2);
        }
    }
}
