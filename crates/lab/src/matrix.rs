//! `satquic matrix`: seed 002's cross-implementation matrix through our link model.
//!
//! Every client x server pair of a set of QUIC implementations downloads one file through
//! `satquic link --link PRESET` (the UDP relay, real time, loopback), for each preset,
//! congestion control and repetition, one run at a time. The implementations are run
//! from adapters (satquic-net's [`satquic_net::peers`], `peers/adapters.toml`).
//!
//! The output is a campaign directory like any other ([`crate::exec`]): `campaign.json`
//! (mode `emulated`; the pairs as its variants), `matrix.json` (this spec), `runs.csv`,
//! `runs/<run_id>/` per run (`row.json`, `timing.json`, `commands.txt`, the logs of the
//! server, the relay and the client, `*-keys.log`, `qlog/server/` and `qlog/client/` with
//! `--qlog`), plus `www/` (the file served) and `certs/`. It resumes (finished runs are not
//! run again) and shards (`--index I --of N`) the same way; `satquic report DIR` draws it.
//!
//! # Rows
//!
//! runs.csv gets `mode = matrix`, `client_impl`, `server_impl`, `variant` =
//! `CLIENT/SERVER`, `cc` = the congestion control asked of both sides (`default`: each
//! implementation's own), `link` = the preset. `completion_time_s` is the client's wall
//! clock from its start to its exit (process start, handshake and download, as a user
//! times a fetch; a client judged by its progress, such as qperf, which lingers after its
//! last byte, until its progress reached the size), `goodput_bps` = size x 8 / that time
//! and `efficiency` = goodput / the preset's down rate (seed 002 Eq. 1). Where the
//! client's adapter reads its progress ([`satquic_net::peers`]: the download file's
//! growth, satquic's JSON, qperf's `byteslog` lines), `runs/<id>/chunks.csv` has the time
//! it had each MB, as a simulated run's, for time-to-N-MB comparisons; `--sender-cap` puts
//! the seeds' token bucket in front of every link. `status`:
//!
//! | status | meaning | run again |
//! |---|---|---|
//! | `completed` | the client got every byte within the time cap | never |
//! | `failed` | it exited without them (handshake failure, error): `reason` has its last words | `--retry-failed` |
//! | `timeout` | it had not exited at the time cap | `--retry-failed` |
//! | `incompatible` | the pair cannot talk: no common ALPN, the server cannot select the cc | every invocation (nothing runs) |
//! | `skipped` | an implementation is not installed (`scripts/install-peers.sh`) | every invocation |
//!
//! # Kernel TCP rows
//!
//! The adapters' `[[tcp]]` variants (`tcp-cubic-hystart`, `tcp-cubic`, `tcp-bbr`) are
//! not paired: each downloads `tcp_bytes` (default: the QUIC file's size) once per preset
//! and repetition with iperf3 through `satquic link --tun` ([`satquic_net::tcp`], root),
//! ignoring `ccs` (the variant fixes the kernel's cc, which fills `cc`). Their rows have
//! `transport = tcp`, `client_impl = server_impl = variant`, the same time and goodput
//! columns (sender start to the last payload byte delivered) and seed 003's slow-start
//! columns from the sender's tcp_info: `exit_at_s` (first finite ssthresh),
//! `exit_reason` (`hystart` or `loss`), `exit_cwnd_before`, `exit_ssthresh`,
//! `first_loss_detected_at_s`, `capacity_at_s` from the TUN link's ground truth,
//! `exit_class` ([`crate::analysis::classify`], as the simulator's rows), and
//! `owd_capacity_at_s` / `owd_exit_class` from the RTT trace (003 Sec. V-B). The trace is
//! `runs/<id>/tcp_info.csv` (`tcp_info.txt`: the raw `ss -tin` samples); `chunks.csv` has
//! when the TUN link had delivered each MB of the data connection (its highest sequence
//! offset), beside the QUIC rows' client progress.
//!
//! # Where things are
//!
//! This module holds the spec ([`MatrixSpec`], `matrix.json`); the plan (checks and run
//! ids) is in `plan`, running the cells into the directory in `execute`, a run's row in
//! `rows` and the text printed at the end in `summary`.

mod execute;
mod plan;
mod rows;
mod summary;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use satquic_run::scenario::ShaperSpec;

pub use execute::{MatrixOptions, missing, run_matrix};
pub use plan::{MatrixRun, plan};
pub use rows::row;
pub use summary::text_summary;

/// Seed 002's three emulated scenarios.
pub const DEFAULT_PRESETS: [&str; 3] = ["qir-sat", "qir-satloss", "qir-terrestrial"];

/// What `matrix.json` holds: the matrix as asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixSpec {
    /// Campaign name (the directory belongs to it, as for `campaign run`).
    pub name: String,
    /// Implementations, by adapter name; every one is tried as client and as server.
    pub impls: Vec<String>,
    /// Link presets (or link files), as `satquic link --link` takes them.
    pub presets: Vec<String>,
    /// Congestion controls asked of both sides: `default` or one of
    /// [`satquic_net::peers::CC_NAMES`].
    pub ccs: Vec<String>,
    pub repetitions: u32,
    /// Seed of the link's random processes in repetition 0 (`seed + rep` after).
    pub seed: u64,
    /// Size of the file downloaded.
    pub bytes: u64,
    /// Longest one download may take (client start to exit).
    #[serde(with = "secs")]
    pub time_cap: Duration,
    /// Application protocols in order of preference; a pair uses the first both speak.
    pub alpn: Vec<String>,
    /// Ask both sides for qlogs.
    pub qlog: bool,
    /// Bytes each kernel TCP row sends (default: `bytes`).
    #[serde(default)]
    pub tcp_bytes: Option<u64>,
    /// A sender cap in front of every link (`satquic link --sender-cap`, RATE[:LATENCY],
    /// e.g. the seeds' `200M:1.5s`); none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cap: Option<String>,
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

impl MatrixSpec {
    /// The file's name under `www/`.
    pub fn file_name(&self) -> String {
        format!("data-{}", self.bytes)
    }

    /// Bytes of a kernel TCP row.
    pub fn tcp_size(&self) -> u64 {
        self.tcp_bytes.unwrap_or(self.bytes)
    }

    /// The sender cap, parsed (checked when the matrix is planned).
    pub fn sender_cap_spec(&self) -> Result<Option<ShaperSpec>, String> {
        self.sender_cap
            .as_deref()
            .map_or(Ok(None), ShaperSpec::parse_cap)
    }
}

/// Reads `matrix.json` of a matrix directory, if it is one.
pub fn read_spec(dir: &Path) -> Option<MatrixSpec> {
    let text =
        satquic_link::file::read_to_string(&dir.join("matrix.json"), crate::files::MATRIX_META)
            .ok()?;
    serde_json::from_str(&text).ok()
}
