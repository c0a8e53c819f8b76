//! Campaign specs: a TOML matrix of links x transport variants x workloads x repetitions.
//!
//! ```toml
//! name = "geo-search"                 # required; names the campaign in the report
//! description = "SEARCH vs classic"   # optional
//! mode = "sim"                        # "sim" (default) or "emulated" (satquic-net's
//!                                     # loopback run: real time, one flow, one run at a time)
//! time_cap = "60s"                    # virtual time cap of each run (default 60 s)
//! timeout = "300s"                    # wall-clock limit per run (default none)
//! repetitions = 10                    # runs per cell (default 1) ...
//! seed = 1                            # ... with seeds seed, seed+1, ... (default 1)
//! # seeds = [3, 5, 8]                 # or an explicit list (then repetitions is its length)
//! interleave = true                   # alternate variants run by run (default), as the
//!                                     # seeds alternated SEARCH and baseline downloads
//! sender_cap = "200M:1.5s"            # rate cap at the server, as the seeds' tc TBF
//!                                     # (RATE[:LATENCY], "none", or "auto", the
//!                                     # default as for `satquic sim`: the seeds' cap
//!                                     # unless the link's data direction is faster;
//!                                     # none in emulated mode); a variant's own
//!                                     # sender_cap overrides it
//!
//! [[link]]
//! preset = "geo-viasat"
//!
//! [[link]]                            # a parameter sweep: the cartesian product
//! preset = "thesis-sat"
//! params = { buffer = [0.25, 0.5, 1, 2], plr = [0, 0.001, 0.01] }
//!
//! [[link]]
//! file = "links/my-link.toml"         # a satquic-link TOML file, relative to the spec
//! label = "my-link"                   # optional; default: the file stem
//!
//! [[variant]]
//! label = "baseline"                  # optional; default: the cc string
//! cc = "cubic"                        # a satquic-cc spec string (required)
//! # initial_window, receive_window, stream_receive_window, send_window (bytes or "256MB"),
//! # initial_rtt ("600ms"), mtu (bytes), mtu_discovery (bool), receive_window_autotune
//! # (bool: the stream window starts at 1.25 MB and grows up to stream_receive_window while
//! # the application keeps up), pto_probe_data (bool: probe timeouts resend the oldest
//! # stream data, quinn-proto patch 11), sender_cap ("200M:1.5s" or
//! # "none"): optional, satquic-sim defaults
//!
//! [[variant]]
//! label = "search"
//! cc = "cubic+search"
//! # cc = "bbr|cubic"                  # a mix: the flows take these in turn (flow 0 bbr,
//! #                                   # flow 1 cubic, ...) on one bottleneck
//!
//! [[workload]]
//! kind = "download"                   # "download" (bytes), "upload" (bytes), "timed"
//!                                     # (duration) or "beam" (duration and a `beam` table:
//!                                     # short objects beside bulk flows, [`crate::beside::beam`])
//! bytes = "200MB"                     # integer bytes or "200MB", "10MiB", "1GB"
//! # flows = 4                         # parallel flows (default 1) ...
//! # stagger = "40s"                   # ... flow i starts at i x stagger (default 0)
//! # label = "dl200"                   # optional; default derived from the size
//!
//! [analysis]                          # all optional
//! baseline = "baseline"               # variant the savings are measured against
//! marks_mb = [50, 100, 150, 200]      # MB marks of the time-to-deliver tables
//! cdf_mb = [150]                      # MB marks of the CDF figures
//! exclude_first_rtt_loss = false      # seed 000 exclusion rules, off by default in
//! # exclude_wireless_loss_before = "9s"  # simulation (no such losses unless modelled)
//! ```
//!
//! Unknown keys, unknown presets, bad cc strings and empty matrices are rejected with one
//! line naming the key ([`SpecError`]). Examples: `crates/lab/campaigns/*.toml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use satquic_link::units::duration_str;

/// Sizes in specs are parsed as everywhere in satquic: `"200MB"` (10^6), `"10MiB"`
/// (2^20), `"1.5GB"`, `"64kB"`, `"1500B"` or a bare integer.
pub use satquic_run::units::parse_size;
use serde::{Deserialize, Serialize};

use crate::beside::beam::BeamSpec;

mod resolve;

pub use resolve::{ResolvedLink, ResolvedVariant, ResolvedWorkload};

/// A spec that cannot be used; one line naming the key (a usage error: exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// Separates the congestion controls of a mix in a variant's `cc`: `"bbr|cubic"` runs
/// flow 0 with bbr, flow 1 with cubic, flow 2 with bbr, ... on one bottleneck.
pub const MIX_SEPARATOR: char = '|';

/// Most parallel flows of one workload.
pub const MAX_FLOWS: u32 = 1_000;

fn err(key: impl std::fmt::Display, msg: impl std::fmt::Display) -> SpecError {
    SpecError(format!("{key}: {msg}"))
}

/// Whether runs are simulated or emulated on loopback with real sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// satquic-sim, virtual time.
    #[default]
    Sim,
    /// satquic-net's emulated run (server, relay and client on loopback, real time).
    Emulated,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Emulated => "emulated",
        }
    }
}

/// A parsed campaign spec (see the module docs for the TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub mode: Mode,
    /// Virtual (sim) or real (emulated) time cap of each run.
    #[serde(default = "default_time_cap", with = "duration_str")]
    pub time_cap: Duration,
    /// Wall-clock limit per run; a run that exceeds it is recorded as `timeout`.
    #[serde(default, with = "duration_str::option")]
    pub timeout: Option<Duration>,
    #[serde(default = "one_u32")]
    pub repetitions: u32,
    /// Seed of the first repetition; repetition r uses `seed + r`.
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// Explicit seeds, one per repetition (overrides `repetitions` and `seed`).
    #[serde(default)]
    pub seeds: Option<Vec<u64>>,
    #[serde(default = "yes")]
    pub interleave: bool,
    /// Sender cap of every variant that does not set its own (`RATE[:LATENCY]`/`none`).
    #[serde(default)]
    pub sender_cap: Option<String>,
    #[serde(rename = "link", default)]
    pub links: Vec<LinkEntry>,
    #[serde(rename = "variant", default)]
    pub variants: Vec<VariantEntry>,
    #[serde(rename = "workload", default)]
    pub workloads: Vec<WorkloadEntry>,
    #[serde(default)]
    pub analysis: AnalysisSpec,
    /// Where the spec was read from (relative link files resolve against its folder).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

fn default_time_cap() -> Duration {
    Duration::from_secs(60)
}
fn one_u32() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}
fn yes() -> bool {
    true
}

/// One `[[link]]`: a preset (optionally swept over parameters) or a link file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkEntry {
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub file: Option<PathBuf>,
    #[serde(default)]
    pub label: Option<String>,
    /// Preset parameters, each a value or a list of values to sweep.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
}

/// One `[[variant]]`: a congestion-control spec and transport settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantEntry {
    #[serde(default)]
    pub label: Option<String>,
    pub cc: String,
    #[serde(default)]
    pub initial_window: Option<Size>,
    #[serde(default)]
    pub receive_window: Option<Size>,
    #[serde(default)]
    pub stream_receive_window: Option<Size>,
    #[serde(default)]
    pub send_window: Option<Size>,
    #[serde(default, with = "duration_str::option")]
    pub initial_rtt: Option<Duration>,
    #[serde(default)]
    pub mtu: Option<u16>,
    #[serde(default)]
    pub mtu_discovery: Option<bool>,
    /// Auto-tune the stream receive window up to `stream_receive_window`
    /// (`TransportSpec::receive_window_autotune`).
    #[serde(default)]
    pub receive_window_autotune: Option<bool>,
    /// Probe timeouts resend the oldest stream data (`TransportSpec::pto_probe_data`).
    #[serde(default)]
    pub pto_probe_data: Option<bool>,
    /// Rate cap at the server (`RATE[:LATENCY]` or `none`); overrides the campaign's.
    #[serde(default)]
    pub sender_cap: Option<String>,
    /// ACK frequency the sender asks for, `N[:DELAY][:cwnd/D]` (`32:25ms`, `16:25ms:cwnd/4`) or `off`.
    #[serde(default)]
    pub ack_frequency: Option<String>,
}

/// One `[[workload]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadEntry {
    pub kind: WorkloadKind,
    #[serde(default)]
    pub bytes: Option<Size>,
    #[serde(default, with = "duration_str::option")]
    pub duration: Option<Duration>,
    #[serde(default = "one_u32")]
    pub flows: u32,
    #[serde(default, with = "duration_str::option")]
    pub stagger: Option<Duration>,
    #[serde(default)]
    pub label: Option<String>,
    /// Resumed connections: each run makes a first connection, then this long after it a
    /// second one that resumes (0-RTT, Careful Resume); the row describes the second
    /// (`Scenario::resume_after`). Simulation only.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_str::option"
    )]
    pub resume_after: Option<Duration>,
    /// A busy beam's users and bulk flows (`kind = "beam"` only; every key has a default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beam: Option<BeamSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// The server sends `bytes` (the seeds' downloads).
    Download,
    /// The client sends `bytes` right after the handshake (picoquic's satellite tests).
    Upload,
    /// The server sends for `duration`.
    Timed,
    /// A busy beam: bulk flows with the variant's controller beside users fetching
    /// objects, generated from the run's seed over a window of `duration`
    /// ([`crate::beside::beam`]).
    Beam,
}

/// `[analysis]`: how the report reads the campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AnalysisSpec {
    /// Label of the baseline variant (savings are baseline minus variant).
    #[serde(default)]
    pub baseline: Option<String>,
    /// MB marks of the time-to-deliver tables (default: 10 marks up to the size).
    #[serde(default)]
    pub marks_mb: Vec<u64>,
    /// MB marks of the CDF figures (default: the largest mark and the one at 3/4).
    #[serde(default)]
    pub cdf_mb: Vec<u64>,
    /// Drop runs with a loss in the first RTT after the handshake (seed 000 Table 1).
    #[serde(default)]
    pub exclude_first_rtt_loss: bool,
    /// Drop runs with a loss detected before this time unless the slow start had
    /// already ended ("wireless" loss, seed 000 Table 1: 9 s).
    #[serde(default, with = "duration_str::option")]
    pub exclude_wireless_loss_before: Option<Duration>,
    /// How the time to N MB counts bytes: `in-order` (what an application reading the
    /// stream has; the default) or `received` (in any order, as qperf's `byteslog` counts
    /// them: quicly hands each frame to qperf as it arrives, so seeds 000/001's
    /// time-to-N-MB figures count received bytes).
    #[serde(default)]
    pub delivery: Delivery,
}

/// See [`AnalysisSpec::delivery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Delivery {
    #[default]
    InOrder,
    Received,
}

/// A byte count written as an integer or `"200MB"`, `"10MiB"`, `"1.5GB"`, `"64kB"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "u64")]
pub struct Size(pub u64);

impl From<Size> for u64 {
    fn from(s: Size) -> u64 {
        s.0
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

/// A byte count (`1500000`) or a size string (`"1.5MB"`); anything else is told what to
/// write, not which serde variant failed.
struct SizeVisitor;

impl serde::de::Visitor<'_> for SizeVisitor {
    type Value = Size;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a byte count (1500000) or a size string (\"1.5MB\")")
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Size, E> {
        Ok(Size(n))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Size, E> {
        u64::try_from(n)
            .map(Size)
            .map_err(|_| E::custom(format!("size {n} is negative")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Size, E> {
        Err(E::custom(format!(
            "size {v} is not a whole number of bytes; write bytes (1500000) or a string with \
             a unit (\"1.5MB\")"
        )))
    }

    fn visit_str<E: serde::de::Error>(self, t: &str) -> Result<Size, E> {
        parse_size(t).map(Size).map_err(E::custom)
    }
}

/// Formats a byte count for labels: `200MB`, `10MiB`, `1500B`.
pub fn size_label(bytes: u64) -> String {
    if bytes >= satquic_run::MIB && bytes % satquic_run::MIB == 0 && bytes % 1_000_000 != 0 {
        format!("{}MiB", bytes / satquic_run::MIB)
    } else if bytes >= 1_000_000 && bytes % 1_000_000 == 0 {
        format!("{}MB", bytes / 1_000_000)
    } else if bytes >= 1_000 && bytes % 1_000 == 0 {
        format!("{}kB", bytes / 1_000)
    } else {
        format!("{bytes}B")
    }
}

impl CampaignSpec {
    /// Parses TOML text; `base_dir` is where relative link files are looked up.
    pub fn from_toml_str(text: &str, base_dir: Option<&Path>) -> Result<Self, SpecError> {
        let mut spec: CampaignSpec = toml::from_str(text).map_err(|e| toml_error(&e, text))?;
        spec.base_dir = base_dir.map(Path::to_path_buf);
        spec.check_shape()?;
        Ok(spec)
    }

    /// Reads and parses a spec file (a regular file of at most
    /// [`CAMPAIGN_SPEC`](crate::files::CAMPAIGN_SPEC)).
    pub fn from_file(path: &Path) -> Result<Self, SpecError> {
        let text = satquic_link::file::read_to_string(path, crate::files::CAMPAIGN_SPEC)
            .map_err(|e| SpecError(format!("{}: cannot read: {}", e.path, e.reason)))?;
        Self::from_toml_str(&text, path.parent())
            .map_err(|e| SpecError(format!("{}: {}", path.display(), e.0)))
    }

    /// Checks that do not need presets or files: non-empty matrices, unique labels.
    fn check_shape(&self) -> Result<(), SpecError> {
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty"));
        }
        if self.links.is_empty() {
            return Err(err("link", "no [[link]] given; the link matrix is empty"));
        }
        if self.variants.is_empty() {
            return Err(err(
                "variant",
                "no [[variant]] given; the variant matrix is empty",
            ));
        }
        if self.workloads.is_empty() {
            return Err(err(
                "workload",
                "no [[workload]] given; the workload matrix is empty",
            ));
        }
        match &self.seeds {
            Some(s) if s.is_empty() => return Err(err("seeds", "empty list")),
            None if self.repetitions == 0 => return Err(err("repetitions", "must be at least 1")),
            _ => {}
        }
        if self.time_cap.is_zero() {
            return Err(err("time_cap", "must be above 0"));
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            return Err(err("timeout", "must be above 0"));
        }
        Ok(())
    }

    /// Seeds of the repetitions, in order.
    pub fn repetition_seeds(&self) -> Vec<u64> {
        match &self.seeds {
            Some(s) => s.clone(),
            None => (0..self.repetitions)
                .map(|r| self.seed.wrapping_add(u64::from(r)))
                .collect(),
        }
    }
}

/// Shortest decimal that reads back as `f` (`0.001`, `2`, `0.25`).
pub fn format_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

/// One line from a TOML error: `line N: message`.
fn toml_error(e: &toml::de::Error, text: &str) -> SpecError {
    let msg = e.message().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            SpecError(format!("line {line}: {msg}"))
        }
        None => SpecError(msg),
    }
}

#[cfg(test)]
mod tests;
