//! Other QUIC implementations ("peers") driven as processes: the adapters of
//! `satquic matrix`.
//!
//! An adapter says, as data, how to run one implementation (its commands, the congestion
//! controls it can select, the protocols it speaks, how its download is judged); the
//! adapters live in `peers/adapters.toml` (built into the binary as [`BUILTIN_ADAPTERS`];
//! `satquic matrix --adapters FILE` reads another); `scripts/install-peers.sh` installs
//! what they run. A matrix runs one client x server download ([`Cell`]) through
//! `satquic link` at a time.
//!
//! One file per concept:
//!
//! - `adapter.rs`: the adapter file, its TOML schema (documented there, for those who write
//!   one) and its validation;
//! - `placeholders.rs`: how `{name}` in an adapter becomes this run's value;
//! - `env.rs`: this satquic binary and where the peers are installed;
//! - `pair.rs`: which pairs can run, and with which protocol and cc names;
//! - `cell.rs`: the runner of one download, step by step;
//! - `process.rs` and `ports.rs`: starting, watching and stopping the processes, and
//!   waiting for their ports;
//! - `progress.rs`: when the client had each megabyte, from its output;
//! - `outcome.rs`: what a cell measured and how its download is judged;
//! - `prepare.rs`: the certificate and the file every cell serves.

mod adapter;
mod cell;
mod env;
mod outcome;
mod pair;
mod placeholders;
mod ports;
mod prepare;
mod process;
mod progress;

pub use adapter::{Adapter, AdapterFile, BUILTIN_ADAPTERS, CC_NAMES, Role, Success};
pub use cell::{Cell, run_cell};
pub use env::PeerEnv;
pub use outcome::{CellOutcome, LinkTotals};
pub use pair::{PairPlan, plan_pair};
pub use prepare::{prepare_file, prepare_identity};
pub use process::find_program;
pub use progress::{PROGRESS_POLL, Progress, ProgressLog};

pub(crate) use adapter::valid_name;
pub(crate) use process::Running;
