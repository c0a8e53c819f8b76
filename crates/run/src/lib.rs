//! # satquic-run: what to run and what a run produced
//!
//! The vocabulary that the simulator (satquic-sim, virtual time) and the real-socket tools
//! (satquic-net, real time) share, so that neither imports the other and a simulated and
//! an emulated run of the same [`Scenario`] are configured, recorded and analysed by the
//! same code:
//!
//! - [`scenario`]: the scenario (link, flows with their transport settings and workloads,
//!   seed, time cap) and the sender shaper;
//! - [`transport`]: the one quinn `TransportConfig` builder and the validation of a
//!   [`TransportSpec`];
//! - [`probe`]: congestion-controller construction (satquic-cc specs) and the probe that
//!   observes what quinn hands the controller;
//! - [`record`]: the run record (summary, chunks, events, series, timing), its files and
//!   schema, how it is assembled from what a run observed, and the exit classification;
//! - [`qlog`]: the record as qlog (JSON-SEQ, the sender's view);
//! - [`in_order`]: reading a stream out of order ([`InOrder`]);
//! - [`units`]: sizes, rates and durations (satquic-link's module: one parser and one
//!   formatter each), and [`resolve_link`], what `--link NAME|FILE` means.
//!
//! This crate neither simulates nor opens sockets.

pub mod in_order;
pub mod probe;
pub mod qlog;
pub mod record;
mod resolve;
pub mod scenario;
pub mod token_log;
pub mod transport;

pub use satquic_link::units;

pub use in_order::{InOrder, ZEROS};
pub use record::{RunRecord, Summary, Timing, WriteOptions};
pub use resolve::{LinkSource, first_line, resolve_link};
pub use scenario::{
    DataDirection, FlowSpec, MB, MIB, Scenario, ShaperSpec, TransportSpec, Workload,
};
pub use transport::{EndpointSettings, transport_config};
