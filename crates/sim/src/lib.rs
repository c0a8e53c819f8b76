//! # satquic-sim: real QUIC over a modelled path, in virtual time
//!
//! The simulator runs unmodified quinn-proto endpoints — real rustls TLS 1.3 handshakes,
//! real loss recovery, flow control and pacing — with the congestion controllers of
//! satquic-cc, over the satquic-link path model, in virtual time. A 200 MB download over
//! a GEO link takes well under a second of wall time and is deterministic: the same
//! [`Scenario`](satquic_run::Scenario) (including its seed) gives byte-identical record files.
//!
//! ```no_run
//! use satquic_run::{Scenario, TransportSpec};
//! use satquic_sim::run;
//!
//! let link = satquic_link::presets::lookup("geo-viasat").unwrap();
//! let scenario = Scenario::download(link, TransportSpec::with_cc("cubic+search"), 200_000_000, 1);
//! let record = run(&scenario).unwrap();
//! println!("{:?}", record.summary.flows[0].completion_time_s);
//! record.write_to(std::path::Path::new("out/run-1")).unwrap();
//! ```
//!
//! - [`engine`]: the event loop ([`run`], [`run_with`]); beside it, private, the run's
//!   set-up (`setup`), a flow's state (`flow`), the applications at both ends (`app`)
//!   and what the record keeps (`keep`);
//! - [`resume`]: resumed runs, a first connection and one that resumes from it (TLS
//!   session with 0-RTT, address-validation token, Careful Resume's saved parameters);
//! - [`tls`]: the deterministic endpoint configuration, and why TLS randomness cannot
//!   reach the record;
//! - [`null_cipher`]: [`PacketCipher::Null`], the real handshake with packet keys that
//!   skip the cipher work (same record, faster run);
//! - [`stack_qlog`]: quinn-proto's own qlog of every connection, in virtual time.
//!
//! What to run and what a run produced (the scenario, the transport builder, the record,
//! its qlog) are satquic-run's, shared with the real-socket tools of satquic-net; many
//! runs in parallel are the lab's executor (satquic-lab, `satquic sim`).
//!
//! Modelling choices worth knowing (details in [`engine`] and [`scenario`](satquic_run::scenario)):
//!
//! - each datagram costs its UDP payload plus 28 bytes of IPv4/UDP header on the link;
//! - the client reads its stream out of order and tracks the in-order prefix itself
//!   (quinn-proto 0.11's ordered reassembly gives up after 1024 gaps, which the Viasat AQM
//!   produces);
//! - connections are polled only after their own events, as quinn's driver does (this
//!   matters for quinn's pacer);
//! - `ShaperSpec` reproduces the seeds' 200 Mbit/s server shaper and
//!   `WindowUpdate::Quicly` quicly's MAX_DATA policy (satquic-run's scenario); both are off by default
//!   in the library (`satquic sim` turns the shaper on).
//!
//! Limits: the record's qlog has no per-packet events (it shows what the record keeps;
//! [`RunOptions::stack_qlog`] adds quinn-proto's own, per connection); one
//! bottleneck per direction (the link crate's model); the client's own congestion
//! controller uses the flow's spec but its events are not recorded; quinn's BBR draws
//! from the thread RNG when built, so `bbr` runs are not reproducible (satquic's `bbr3`
//! draws from the run seed and the flow index and is); QUIC retransmits
//! frames, not packets, so the record counts lost packets (quinn's figure) but no
//! "retransmitted packets".

mod app;
pub mod engine;
mod flow;
mod keep;
pub mod null_cipher;
pub mod resume;
mod setup;
pub mod stack_qlog;
pub mod tls;

pub use engine::{RunOptions, RunOutput, run, run_with};
pub use null_cipher::PacketCipher;

/// Why a run could not be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The scenario is invalid (bad link, bad congestion-control spec, ...). One line.
    Invalid(String),
    /// [`RunOptions::cancel`] was set before the run ended; there is no record.
    Cancelled,
    /// Virtual time stopped advancing: the event loop took
    /// [`MAX_STEPS_WITHOUT_PROGRESS`](engine::MAX_STEPS_WITHOUT_PROGRESS) steps in a row
    /// at the same instant (a defect, not a property of the scenario); there is no record.
    Stalled {
        /// The virtual time the loop was stuck at.
        at: std::time::Duration,
    },
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Invalid(msg) => f.write_str(msg),
            SimError::Cancelled => f.write_str("cancelled"),
            SimError::Stalled { at } => write!(
                f,
                "virtual time stopped advancing at {:.6} s ({} event-loop steps at that \
                 instant); the run was ended",
                at.as_secs_f64(),
                engine::MAX_STEPS_WITHOUT_PROGRESS
            ),
        }
    }
}

impl std::error::Error for SimError {}
