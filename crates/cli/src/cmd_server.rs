//! `satquic server`: serves perf downloads/uploads, hq-interop and h3 on a UDP port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use satquic_net::{Server, ServerOptions};
use satquic_run::units::parse_size;

use crate::Failure;
use crate::cmd_client::{DEFAULT_PORT, TransportArgs, net_failure, socket_address};

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on (default: all IPv4 addresses, port 4433).
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// Port to listen on (with the default address).
    #[arg(short = 'p', long, conflicts_with = "listen")]
    port: Option<u16>,
    /// Serve files from this directory over hq-interop and h3.
    #[arg(long, value_name = "DIR")]
    www: Option<PathBuf>,
    /// Write each connection's qlog into DIR when it ends, `<odcid>_server.sqlog`: quinn's
    /// packet events merged with satquic's (the QUIC interop runner's QLOGDIR environment
    /// variable sets it too; DIR is created if missing, its parent must exist).
    #[arg(long, value_name = "DIR", env = "QLOGDIR")]
    qlog: Option<PathBuf>,
    /// PEM certificate chain (default: a fresh self-signed certificate).
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// PEM private key for --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// Most connections at once; further handshakes are refused.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,
    /// Most connections at once from one IP address.
    #[arg(long, value_name = "N", default_value_t = satquic_net::server::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS)]
    max_per_address: usize,
    /// Largest download or upload one request may ask for.
    #[arg(long, value_name = "SIZE", default_value = "100G")]
    max_bytes: String,
    /// Skip address validation (no Retry round trip; saves one RTT per connection).
    #[arg(long)]
    no_retry: bool,
    /// Keep the Careful Resume store (what each client address's last connection
    /// observed, at most 4,096 addresses, one hour each) in FILE: read at start, written
    /// when it changes (at most once a second) and on SIGINT/SIGTERM, so a restarted
    /// server still resumes its clients. JSON, mode 0600, at most 1.1 MB.
    #[arg(long, value_name = "FILE")]
    resume_store: Option<PathBuf>,
    /// Keep the key of address-validation tokens in FILE (32 random bytes, mode 0600,
    /// made when missing), so that tokens given before a restart still spare clients
    /// the Retry, and the tokens already used in FILE.used, so that none is accepted
    /// twice across restarts (after a kill, older tokens cost one Retry). Whoever reads
    /// FILE can forge tokens.
    #[arg(long, value_name = "FILE")]
    token_key: Option<PathBuf>,
    /// How long a handshake may take (seconds, or `500ms`, `2min`).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        allow_negative_numbers = true
    )]
    handshake_timeout: String,
    /// Print the server's counters this often (seconds or a duration; `-i` alone: every
    /// second), as iperf3 -s -i does.
    #[arg(
        short = 'i',
        long = "interval",
        visible_alias = "stats",
        value_name = "DURATION",
        num_args = 0..=1,
        default_missing_value = "1s",
        allow_negative_numbers = true
    )]
    interval: Option<String>,
    #[command(flatten)]
    transport: TransportArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let (options, interval) = options(&args)?;
    satquic_net::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_park(crate::alloc::collect_after_release)
        .enable_all()
        .build()
        .map_err(|e| Failure::Other(e.to_string()))?;
    rt.spawn(crate::alloc::wake_workers_to_collect(2));
    rt.block_on(async move {
        let server = Server::bind(options.clone()).map_err(net_failure)?;
        print_banner(&server, &options)?;
        let outcome = serve_until_stopped(&server, interval).await;
        // Connections closed, the Careful Resume store written: also when stdout closed.
        server.shut_down().await.map_err(net_failure)?;
        outcome
    })
}

/// The server's options and the interval of its counters' lines, from the flags.
fn options(args: &Args) -> Result<(ServerOptions, Option<Duration>), Failure> {
    let listen = match &args.listen {
        Some(text) => socket_address("--listen", text)?,
        None => SocketAddr::from(([0, 0, 0, 0], args.port.unwrap_or(DEFAULT_PORT))),
    };
    let interval = args
        .interval
        .as_deref()
        .map(|i| crate::seconds::duration("-i", i, crate::seconds::SHORTEST..=crate::seconds::HOUR))
        .transpose()?;
    let handshake_timeout = crate::seconds::duration(
        "--handshake-timeout",
        &args.handshake_timeout,
        crate::seconds::SHORTEST..=crate::seconds::HOUR,
    )?;
    let options = ServerOptions {
        listen,
        cert: args.cert.clone().zip(args.key.clone()),
        transport: args.transport.to_transport()?,
        www: args.www.clone(),
        max_connections: args.max_connections,
        max_connections_per_address: args.max_per_address,
        max_request_bytes: parse_size(&args.max_bytes)
            .map_err(|e| Failure::Usage(format!("--max-bytes: {e}")))?,
        retry: !args.no_retry,
        handshake_timeout,
        keep_connections: 0,
        qlog_dir: args.qlog.clone(),
        resume_store: args.resume_store.clone(),
        token_key: args.token_key.clone(),
    };
    Ok((options, interval))
}

/// What the server listens on, its certificate, and the files it keeps.
fn print_banner(server: &Server, options: &ServerOptions) -> Result<(), Failure> {
    outln!(
        "satquic server listening on {} (ALPN satquic-perf, hq-interop, h3); cc {}; retry {}",
        server.local_addr(),
        options.transport.spec.cc,
        if options.retry { "on" } else { "off" }
    )?;
    outln!("certificate sha256 {}", server.fingerprint())?;
    if let Some(www) = &options.www {
        outln!("serving {} (and synthetic /<size> objects)", www.display())?;
    }
    if let Some(store) = &options.resume_store {
        outln!(
            "Careful Resume store {} ({} client paths)",
            store.display(),
            server.stats().saved_paths
        )?;
    }
    if let Some(key) = &options.token_key {
        outln!("address-validation token key {}", key.display())?;
    }
    Ok(())
}

/// Serves until SIGINT or SIGTERM; with `interval`, prints the counters that often,
/// until stdout is closed (the error returned).
async fn serve_until_stopped(server: &Server, interval: Option<Duration>) -> Result<(), Failure> {
    let printer = async {
        match interval {
            Some(every) => print_counters(server, every).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = server.serve() => Ok(()),
        closed = printer => Err(closed),
        () = crate::cmd_client::stop_signal() => Ok(()),
    }
}

/// Prints the server's counters `every` so often, as iperf3 -s -i does, until stdout is
/// closed (the error returned).
async fn print_counters(server: &Server, every: Duration) -> Failure {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let s = server.stats();
        if let Err(closed) = outln!(
            "connections {} (accepted {}, resumed {}, refused {}, abandoned {}, retries {}, tokens {}, failed handshakes {}), requests {} (bad {}), sent {} B, received {} B, saved paths {}",
            s.active_connections,
            s.accepted,
            s.resumed,
            s.refused,
            s.abandoned,
            s.retries_sent,
            s.tokens_accepted,
            s.handshake_failures,
            s.requests,
            s.bad_requests,
            s.bytes_sent,
            s.bytes_received,
            s.saved_paths
        ) {
            return closed;
        }
    }
}
