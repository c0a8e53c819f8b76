//! # satquic-sim: real QUIC over a modelled path, in virtual time
//!
//! The simulator runs unmodified quinn-proto endpoints — real rustls TLS 1.3 handshakes,
//! real loss recovery, flow control and pacing — with the congestion controllers of
//! satquic-cc, over the satquic-link path model, in virtual time. A 200 MB download over
//! a GEO link takes well under a second of wall time and is deterministic: the same
//! [`Scenario`] (including its seed) gives byte-identical record files.
//!
//! ```no_run
//! use satquic_sim::{Scenario, TransportSpec, run};
//!
//! let link = satquic_link::presets::lookup("geo-viasat").unwrap();
//! let scenario = Scenario::download(link, TransportSpec::with_cc("cubic+search"), 200_000_000, 1);
//! let record = run(&scenario).unwrap();
//! println!("{:?}", record.summary.flows[0].completion_time_s);
//! record.write_to(std::path::Path::new("out/run-1")).unwrap();
//! ```
//!
//! - [`scenario`]: what to run (link, flows with their transport settings and workloads);
//! - [`engine`]: the event loop ([`run`], [`run_with`]);
//! - [`record`]: the run record and its files;
//! - [`qlog`]: the record as qlog (JSON-SEQ, the sender's view, virtual time), optional;
//! - [`batch`]: many runs in parallel, and the statistics `satquic sim` prints;
//! - [`tls`]: the deterministic endpoint configuration, and why TLS randomness cannot
//!   reach the record;
//! - [`probe`]: congestion-controller construction and observation.
//!
//! Modelling choices worth knowing (details in [`engine`] and [`scenario`]):
//!
//! - each datagram costs its UDP payload plus 28 bytes of IPv4/UDP header on the link;
//! - the client reads its stream out of order and tracks the in-order prefix itself
//!   (quinn-proto 0.11's ordered reassembly gives up after 1024 gaps, which the Viasat AQM
//!   produces);
//! - connections are polled only after their own events, as quinn's driver does (this
//!   matters for quinn's pacer);
//! - [`scenario::ShaperSpec`] reproduces the seeds' 200 Mbit/s server shaper and
//!   [`scenario::WindowUpdate::Quicly`] quicly's MAX_DATA policy; both are off by default
//!   in the library (`satquic sim` turns the shaper on).
//!
//! Limits: the qlog has no per-packet events (it shows what the record keeps); one
//! bottleneck per direction (the link crate's model); the client's own congestion
//! controller uses the flow's spec but its events are not recorded; quinn's BBR draws
//! from the thread RNG when built, so `bbr` runs are not reproducible; QUIC retransmits
//! frames, not packets, so the record counts lost packets (quinn's figure) but no
//! "retransmitted packets".

pub mod batch;
pub mod engine;
pub mod probe;
pub mod qlog;
pub mod record;
pub mod scenario;
pub mod tls;

pub use batch::{RunResult, Variant, VariantStats, run_batch};
pub use engine::{RunOptions, RunOutput, run, run_with};
pub use record::{RunRecord, Summary, Timing, WriteOptions};
pub use scenario::{FlowSpec, MB, MIB, Scenario, TransportSpec, Workload};

/// Why a run could not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The scenario is invalid (bad link, bad congestion-control spec, ...). One line.
    Invalid(String),
    /// [`RunOptions::cancel`] was set before the run ended; there is no record.
    Cancelled,
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Invalid(msg) => f.write_str(msg),
            SimError::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for SimError {}
