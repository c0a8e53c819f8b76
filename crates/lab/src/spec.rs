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
//! kind = "download"                   # "download" (bytes) or "timed" (duration)
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

use satquic_link::LinkSpec;
use satquic_link::units::duration_str;
use satquic_run::ShaperSpec;
use satquic_run::TransportSpec;

/// Sizes in specs are parsed as everywhere in satquic: `"200MB"` (10^6), `"10MiB"`
/// (2^20), `"1.5GB"`, `"64kB"`, `"1500B"` or a bare integer.
pub use satquic_run::units::parse_size;
use serde::{Deserialize, Serialize};

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

/// A link after expansion: one point of the link matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedLink {
    /// Label used in runs.csv and the report (`thesis-sat:buffer=0.5,plr=0.001`).
    pub label: String,
    /// The preset name without parameters, or the file path.
    pub source: String,
    /// Swept parameters and their values (empty for plain presets and files).
    pub params: BTreeMap<String, String>,
    pub spec: LinkSpec,
}

/// A variant after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedVariant {
    pub label: String,
    /// Its transport; with `auto_sender_cap` the sender cap is set per link by the plan.
    /// For a mix, the first flow's congestion control.
    pub transport: TransportSpec,
    /// A mix (`cc = "bbr|cubic"`): the congestion controls the flows of a run take in
    /// turn, flow i the (i mod n)-th; empty for one congestion control.
    pub mix: Vec<String>,
    /// `sender_cap = "auto"` (the default): [`ShaperSpec::auto_for`] the data direction
    /// of each link in sim mode, no cap in emulated mode (the relay models the link only).
    pub auto_sender_cap: bool,
}

/// A workload after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedWorkload {
    pub label: String,
    pub kind: WorkloadKind,
    /// Bytes per flow for downloads.
    pub bytes: Option<u64>,
    /// Receive time per flow for timed workloads.
    pub duration: Option<Duration>,
    pub flows: u32,
    pub stagger: Duration,
    /// See [`WorkloadEntry::resume_after`].
    pub resume_after: Option<Duration>,
}

impl CampaignSpec {
    /// Parses TOML text; `base_dir` is where relative link files are looked up.
    pub fn from_toml_str(text: &str, base_dir: Option<&Path>) -> Result<Self, SpecError> {
        let mut spec: CampaignSpec = toml::from_str(text).map_err(|e| toml_error(&e, text))?;
        spec.base_dir = base_dir.map(Path::to_path_buf);
        spec.check_shape()?;
        Ok(spec)
    }

    /// Reads and parses a spec file.
    pub fn from_file(path: &Path) -> Result<Self, SpecError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SpecError(format!("{}: cannot read: {e}", path.display())))?;
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

    /// Expands and validates the link matrix.
    pub fn resolve_links(&self) -> Result<Vec<ResolvedLink>, SpecError> {
        let mut out = Vec::new();
        for (i, entry) in self.links.iter().enumerate() {
            let key = format!("link[{i}]");
            match (&entry.preset, &entry.file) {
                (Some(_), Some(_)) => {
                    return Err(err(&key, "give either preset or file, not both"));
                }
                (None, None) => return Err(err(&key, "needs preset or file")),
                (None, Some(file)) => {
                    if !entry.params.is_empty() {
                        return Err(err(format!("{key}.params"), "only presets take parameters"));
                    }
                    let path = match &self.base_dir {
                        Some(dir) if file.is_relative() => dir.join(file),
                        _ => file.clone(),
                    };
                    let spec = LinkSpec::from_toml_file(&path)
                        .map_err(|e| err(format!("{key}.file"), e))?;
                    let label = entry.label.clone().unwrap_or_else(|| {
                        file.file_stem()
                            .map(|s| s.to_string_lossy().into_owned())
                            .unwrap_or_else(|| file.display().to_string())
                    });
                    out.push(ResolvedLink {
                        label,
                        source: file.display().to_string(),
                        params: BTreeMap::new(),
                        spec,
                    });
                }
                (Some(preset), None) => {
                    if preset.contains(':') && !entry.params.is_empty() {
                        return Err(err(
                            format!("{key}.params"),
                            "the preset already has parameters after ':'",
                        ));
                    }
                    for combo in param_combinations(&key, &entry.params)? {
                        let name = if combo.is_empty() {
                            preset.clone()
                        } else {
                            let p: Vec<String> =
                                combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
                            format!("{preset}:{}", p.join(","))
                        };
                        let spec = satquic_link::presets::lookup(&name)
                            .map_err(|e| err(format!("{key}.preset"), e))?;
                        let (source, params) = match preset.split_once(':') {
                            Some((base, p)) => (
                                base.to_string(),
                                p.split(',')
                                    .filter_map(|kv| kv.split_once('='))
                                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                                    .collect(),
                            ),
                            None => (preset.clone(), combo.clone()),
                        };
                        let label = match (&entry.label, combo.is_empty()) {
                            (Some(l), true) => l.clone(),
                            (Some(l), false) => {
                                let p: Vec<String> =
                                    combo.iter().map(|(k, v)| format!("{k}={v}")).collect();
                                format!("{l}:{}", p.join(","))
                            }
                            (None, _) => name.clone(),
                        };
                        out.push(ResolvedLink {
                            label,
                            source,
                            params,
                            spec,
                        });
                    }
                }
            }
        }
        unique(out.iter().map(|l| l.label.as_str()), "link")?;
        Ok(out)
    }

    /// Validates the variants (cc strings parse, labels unique).
    pub fn resolve_variants(&self) -> Result<Vec<ResolvedVariant>, SpecError> {
        let mut out = Vec::new();
        for (i, v) in self.variants.iter().enumerate() {
            let key = format!("variant[{i}]");
            let parts: Vec<&str> = v.cc.split(MIX_SEPARATOR).map(str::trim).collect();
            for part in &parts {
                if part.is_empty() {
                    return Err(err(
                        format!("{key}.cc"),
                        format!(
                            "{:?}: a mix needs a congestion control on each side of '|'",
                            v.cc
                        ),
                    ));
                }
                satquic_cc::CongestionConfig::from_spec(part)
                    .map_err(|e| err(format!("{key}.cc"), e))?;
            }
            let mix: Vec<String> = if parts.len() > 1 {
                parts.iter().map(|p| p.to_string()).collect()
            } else {
                Vec::new()
            };
            let mut t = TransportSpec::with_cc(parts[0]);
            if let Some(s) = v.initial_window {
                t.initial_window = Some(s.0);
            }
            if let Some(s) = v.receive_window {
                t.receive_window = s.0;
            }
            if let Some(s) = v.stream_receive_window {
                t.stream_receive_window = s.0;
            }
            if let Some(s) = v.send_window {
                t.send_window = s.0;
            }
            if v.initial_rtt.is_some() {
                t.initial_rtt = v.initial_rtt;
            }
            if let Some(m) = v.mtu {
                use satquic_run::transport::{MAX_MTU, MIN_MTU};
                if !(MIN_MTU..=MAX_MTU).contains(&m) {
                    return Err(err(
                        format!("{key}.mtu"),
                        format!("{m} must be between {MIN_MTU} and {MAX_MTU} bytes"),
                    ));
                }
                t.mtu = m;
            }
            if let Some(d) = v.mtu_discovery {
                t.mtu_discovery = d;
            }
            if let Some(a) = v.receive_window_autotune {
                t.receive_window_autotune = a;
            }
            if let Some(p) = v.pto_probe_data {
                t.pto_probe_data = p;
            }
            if let Some(a) = &v.ack_frequency {
                t.ack_frequency = satquic_run::scenario::AckFrequencySpec::parse(a)
                    .map_err(|e| err(format!("{key}.ack_frequency"), e))?;
            }
            let (cap_key, cap) = match (&v.sender_cap, &self.sender_cap) {
                (Some(c), _) => (format!("{key}.sender_cap"), c.as_str()),
                (None, Some(c)) => ("sender_cap".to_string(), c.as_str()),
                (None, None) => ("sender_cap".to_string(), "auto"),
            };
            let auto_sender_cap = cap.trim().eq_ignore_ascii_case("auto");
            if !auto_sender_cap {
                t.sender_shaper = ShaperSpec::parse_cap(cap).map_err(|e| err(cap_key, e))?;
            }
            // The checks every command applies to a transport (windows, initial RTT).
            satquic_run::transport::validate(&t).map_err(|e| err(&key, e))?;
            let label = v.label.clone().unwrap_or_else(|| v.cc.trim().to_string());
            if label.trim().is_empty() {
                return Err(err(format!("{key}.label"), "must not be empty"));
            }
            out.push(ResolvedVariant {
                label,
                transport: t,
                mix,
                auto_sender_cap,
            });
        }
        unique(out.iter().map(|v| v.label.as_str()), "variant")?;
        if let Some(b) = &self.analysis.baseline
            && !out.iter().any(|v| &v.label == b)
        {
            return Err(err(
                "analysis.baseline",
                format!(
                    "{b:?} is not a variant label; labels: {}",
                    out.iter()
                        .map(|v| v.label.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(out)
    }

    /// Validates the workloads.
    pub fn resolve_workloads(&self) -> Result<Vec<ResolvedWorkload>, SpecError> {
        let mut out = Vec::new();
        for (i, w) in self.workloads.iter().enumerate() {
            let key = format!("workload[{i}]");
            if w.flows == 0 || w.flows > MAX_FLOWS {
                return Err(err(
                    format!("{key}.flows"),
                    format!("{} must be between 1 and {MAX_FLOWS}", w.flows),
                ));
            }
            let stagger = w.stagger.unwrap_or(Duration::ZERO);
            let suffix = if w.flows > 1 {
                format!("x{}", w.flows)
            } else {
                String::new()
            };
            let (bytes, duration, default_label) = match w.kind {
                WorkloadKind::Download | WorkloadKind::Upload => {
                    let (kind, prefix, article) = match w.kind {
                        WorkloadKind::Upload => ("upload", "ul", "an"),
                        _ => ("download", "dl", "a"),
                    };
                    if w.duration.is_some() {
                        return Err(err(
                            format!("{key}.duration"),
                            format!("only for kind = \"timed\"; {article} {kind} has bytes"),
                        ));
                    }
                    let b = w
                        .bytes
                        .ok_or_else(|| {
                            err(
                                format!("{key}.bytes"),
                                format!("required for kind = \"{kind}\""),
                            )
                        })?
                        .0;
                    if b == 0 {
                        return Err(err(format!("{key}.bytes"), "must be above 0"));
                    }
                    (Some(b), None, format!("{prefix}{}{suffix}", size_label(b)))
                }
                WorkloadKind::Timed => {
                    if w.bytes.is_some() {
                        return Err(err(
                            format!("{key}.bytes"),
                            "only for kind = \"download\"; a timed flow has a duration",
                        ));
                    }
                    let d = w.duration.ok_or_else(|| {
                        err(format!("{key}.duration"), "required for kind = \"timed\"")
                    })?;
                    if d.is_zero() {
                        return Err(err(format!("{key}.duration"), "must be above 0"));
                    }
                    (
                        None,
                        Some(d),
                        format!("timed{}{suffix}", satquic_link::units::format_duration(d)),
                    )
                }
            };
            let default_label = match w.resume_after {
                Some(_) => format!("{default_label}-resumed"),
                None => default_label,
            };
            if w.resume_after.is_some() && self.mode != Mode::Sim {
                return Err(err(
                    format!("{key}.resume_after"),
                    "resumed connections run in simulation only (mode = \"sim\")",
                ));
            }
            if let Some(gap) = w.resume_after
                && gap > satquic_sim::resume::MAX_RESUME_GAP
            {
                return Err(err(format!("{key}.resume_after"), "must be at most 24 h"));
            }
            out.push(ResolvedWorkload {
                label: w.label.clone().unwrap_or(default_label),
                kind: w.kind,
                bytes,
                duration,
                flows: w.flows,
                stagger,
                resume_after: w.resume_after,
            });
        }
        unique(out.iter().map(|w| w.label.as_str()), "workload")?;
        Ok(out)
    }
}

fn unique<'a>(labels: impl Iterator<Item = &'a str>, key: &str) -> Result<(), SpecError> {
    let mut seen = std::collections::BTreeSet::new();
    for l in labels {
        if !seen.insert(l) {
            return Err(err(
                key,
                format!("label {l:?} appears twice; give each entry its own label"),
            ));
        }
    }
    Ok(())
}

/// Cartesian product of swept parameters, in key order, values in the order given.
fn param_combinations(
    key: &str,
    params: &BTreeMap<String, toml::Value>,
) -> Result<Vec<BTreeMap<String, String>>, SpecError> {
    let mut combos = vec![BTreeMap::new()];
    for (name, value) in params {
        let values: Vec<String> = match value {
            toml::Value::Array(items) => {
                if items.is_empty() {
                    return Err(err(
                        format!("{key}.params.{name}"),
                        "empty list; the sweep is empty",
                    ));
                }
                items
                    .iter()
                    .map(|v| scalar(v).ok_or_else(|| not_scalar(key, name)))
                    .collect::<Result<_, _>>()?
            }
            v => vec![scalar(v).ok_or_else(|| not_scalar(key, name))?],
        };
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(name.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    Ok(combos)
}

fn not_scalar(key: &str, name: &str) -> SpecError {
    err(
        format!("{key}.params.{name}"),
        "must be a number, a string or a list of them",
    )
}

fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(format_float(*f)),
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
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
