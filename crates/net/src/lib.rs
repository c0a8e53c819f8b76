//! # satquic-net: real sockets
//!
//! - [`server`]: `satquic server`, a QUIC server (tokio + quinn) serving the perf protocol,
//!   `hq-interop` and `h3`, with the congestion controllers of satquic-cc;
//! - [`client`]: `satquic client`, iperf3/qperf-style downloads and uploads, and fetches from
//!   any hq-interop or HTTP/3 server;
//! - [`relay`]: `satquic link`, a UDP relay that applies the satquic-link model in real
//!   time (a userspace satellite-link emulator: no root, no netem);
//! - [`tun`]: `satquic link --tun`, the same model between two network namespaces at the
//!   IP level (root), for any tool, kernel TCP included;
//! - [`tcp`]: kernel TCP (iperf3) through the TUN link, with tcp_info sampled: the TCP rows
//!   of `satquic matrix`;
//! - [`emulated`]: `satquic run`, server + relay + client in one process on loopback,
//!   writing the simulator's run record;
//! - [`peers`]: other QUIC implementations run as processes from adapters (data), one
//!   client x server download through `satquic link` at a time (`satquic matrix`);
//! - [`persist`]: state that outlives a process (the server's Careful Resume store, token
//!   key and record of used tokens, the client's tokens and saved path state), bounded,
//!   private, written atomically;
//! - [`realtime`]: the lock that keeps one wall-clock measurement from running beside
//!   another;
//! - [`perf`], [`http`], [`tls`], [`transport`], [`qlog`]: the pieces.
//!
//! Scenarios, the quinn transport builder, the run record, units and link resolution are
//! satquic-run's, shared with the simulator.
//!
//! The link model and the congestion controllers are the other crates' code, driven here
//! by wall-clock time; nothing here re-implements queues, delays or slow start.

pub mod client;
pub mod emulated;
pub mod http;
pub mod model;
pub mod peers;
pub mod perf;
pub mod persist;
pub mod qlog;
pub mod realtime;
pub mod record;
pub mod relay;
pub mod server;
pub mod tcp;
pub mod tls;
pub mod transport;
pub mod tun;

#[cfg(test)]
mod test_files;

pub use client::{Alpn, ClientOptions, ClientResult, IntervalRow, run_client};
pub use relay::{Relay, RelayOptions, RelaySnapshot};
pub use server::{Server, ServerOptions, ServerStats};
pub use transport::NetTransport;

/// Why a command could not do its job. `Usage` errors come from what the user typed
/// (exit code 2 on the command line); the others from the network or the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetError {
    /// Bad input: a flag, a size, a spec, a file. One line.
    Usage(String),
    /// The machine refused something (a socket, a thread, TLS setup).
    Setup(String),
    /// The transfer failed (handshake, stream, peer).
    Transfer(String),
}

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetError::Usage(m) | NetError::Setup(m) | NetError::Transfer(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for NetError {}

/// Installs ring as rustls' process-wide provider (quinn's defaults want one); harmless
/// if already done.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Milliseconds from the Unix epoch to `t` (0 before it): the wall-clock stamps that
/// line up a relay's, a client's and a peer's own output.
pub fn unix_ms(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
