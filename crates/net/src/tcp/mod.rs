//! Kernel TCP through the TUN link: the TCP rows of `satquic matrix` (seed 003's
//! baseline).
//!
//! A TCP variant is data (`[[tcp]]` in `peers/adapters.toml`): the kernel congestion
//! control (`iperf3 -C`), module parameters to set for the run and restore after
//! (`/sys/module/tcp_cubic/parameters/hystart`), and the receiver's and sender's commands.
//! One download ([`run_tcp_cell`]):
//!
//! 1. the parameters are written ([`SysfsGuard`] restores them, also on error);
//! 2. a [`TunLink`](crate::tun::TunLink) is made with the run's link (namespaces `satq-<pid>-<n>c` and `...s`);
//! 3. the receiver starts in the client namespace (`iperf3 -s -1`), and once its port
//!    listens, the sender in the server namespace (`iperf3 -c ... -t CAP -J -i 0.1`): the
//!    data flows down, server -> client, as in the QUIC matrix;
//! 4. while it runs, `ss -tin` samples the sender's `tcp_info` every
//!    [`SAMPLE_INTERVAL`] in the server namespace (cwnd, ssthresh, RTT, retransmissions)
//!    into `tcp_info.txt`, parsed into `tcp_info.csv`;
//! 5. the link is stopped and its ground truth read.
//!
//! # What is measured
//!
//! - completion: from the sender's start to the moment the link has delivered `size`
//!   distinct payload bytes of the data connection into the client namespace (by TCP
//!   sequence number, [`TunOptions::tcp_target_bytes`](crate::tun::TunOptions::tcp_target_bytes)); the sender runs with `-t` and is
//!   stopped then. iperf3's own `-n` is no use here: its sender declares the test over once
//!   it has *written* the bytes, and its receiver then stops reading, so on a long path the
//!   last socket buffer's worth never arrives;
//! - slow-start exit: the first sample with a finite ssthresh (Linux sets it when slow
//!   start ends: HyStart's exit or the first loss recovery); caused by loss if the sample
//!   shows a retransmission or loss by then. Variants whose start-up leaves ssthresh alone
//!   (BBR) say so (`exit_signal` absent) and get no exit;
//! - first loss: the first sample with a retransmission or a lost segment (the sender
//!   learned of a loss), as the simulator's `first_loss_detected`;
//! - capacity point: the link's ground truth, by the same rule as the simulator's runs
//!   ([`satquic_run::record::capacity_point`]).
//!
//! Times are seconds from the sender's start. Sampling every 50 ms puts the exit within
//! 50 ms plus the time `ss` takes; on the 30 ms paths (leo) that is more than an RTT.//!
//! The runner is in `cell.rs`; `adapter.rs` is the variant's schema, `sysfs.rs` its
//! module parameters, `tcp_info.rs` the samples and what they show.

mod adapter;
mod cell;
mod sysfs;
mod tcp_info;

pub use adapter::TcpAdapter;
pub use cell::{PORT, SAMPLE_INTERVAL, TcpCell, TcpOutcome, run_tcp_cell};
pub use sysfs::SysfsGuard;
pub use tcp_info::{TcpInfoSample, TraceExit, data_connection, parse_ss, trace_exit};
