//! Other QUIC implementations ("peers") driven as processes: the adapters of
//! `satquic matrix`.
//!
//! An adapter says, as data, how to run one implementation: the commands that start its
//! server and its client, the congestion controls it can select and how, the application
//! protocols (ALPN) it speaks, the environment it reads (`SSLKEYLOGFILE`, `QLOGDIR`) and
//! how a download is judged complete. The adapters live in `peers/adapters.toml` (built
//! into the binary as [`BUILTIN_ADAPTERS`]; `satquic matrix --adapters FILE` reads
//! another); `scripts/install-peers.sh` installs what they run.
//!
//! # The adapter file
//!
//! ```toml
//! [[impl]]
//! name = "ngtcp2"                      # [a-z0-9_-]+, unique
//! description = "ngtcp2 0.12 (Debian), GnuTLS examples"
//! requires = ["gtlsserver", "gtlsclient"]   # programs (PATH or a path) that must exist
//! check = ["python3", "-c", "import x"]     # optional: a command that must exit 0
//! alpn = ["h3"]                         # protocols both roles speak
//! cc = { cubic = "cubic", bbr = "bbr2", newreno = "reno" }  # our name = theirs
//!
//! [impl.server]                         # optional: a client-only implementation has none
//! command = ["gtlsserver", "-q", "{cc_args}", "-d", "{www}", "{host}", "{port}", "{key}", "{cert}"]
//! cc_args = ["--cc={cc}"]               # replaces "{cc_args}" when a cc is chosen
//! qlog_args = ["--qlog-dir={qlogdir}"]  # replaces "{qlog_args}" with --qlog
//! env = { SSLKEYLOGFILE = "{keylog}" }
//! files = { "Caddyfile" = "..." }       # written into the role's directory first
//!
//! [impl.client]
//! command = ["gtlsclient", "{cc_args}", "--download={download}", "{host}", "{port}", "{url}"]
//! success = "file"                      # or "stdout-json:/flows/0/delivered_bytes", "progress"
//! progress = "file"                     # or "stdout-json:/chunks", "stdout-lines:byteslog:"
//! ```
//!
//! Placeholders: `{satquic}` (this satquic binary), `{peers}` (where the install script
//! put the peers: `$SATQUIC_PEERS`, else `~/.local/satquic-peers`), `{host}`, `{port}`,
//! `{addr}` (`host:port`; the server's own for a server, the link's for a client),
//! `{www}`, `{file}` (its name), `{url}` (`https://host:port/file`), `{size}` (bytes),
//! `{cert}`, `{key}`, `{download}`, `{alpn}`, `{cc}`, `{qlogdir}`, `{keylog}`, `{dir}`
//! (the role's working directory); `{{` and `}}` are literal braces. A word that is exactly `{cc_args}` or `{qlog_args}`
//! becomes the lists above (or nothing).
//!
//! A download succeeds when the client exits within the time cap and the bytes it got
//! equal the file's size: the file under `{download}` (`success = "file"`) or a number in
//! the JSON the client printed (`stdout-json:POINTER`, an RFC 6901 pointer); or, with
//! `success = "progress"`, when its progress reached at least the size (a client that
//! counts a stream of data rather than saving a file, as qperf does).
//!
//! A client's *progress* gives the time it had each megabyte (1,000,000 bytes), for
//! time-to-N-MB curves beside the simulator's (`chunks.csv` of a matrix run):
//!
//! | `progress` | read from | time origin |
//! |---|---|---|
//! | `file` (default with `success = "file"`) | the download file's size, looked at every [`PROGRESS_POLL`] while the client runs | the client's start |
//! | `stdout-json:POINTER` | an array of `{"mb": N, "time_s": T}` in the JSON the client printed (satquic's `/chunks`) | the client's own (satquic: its connection start) |
//! | `stdout-lines:PREFIX` | stdout lines `PREFIX UNIX_MS, BYTES` (qperf's `byteslog: 1764144000123, 5000123`: the wall clock in ms and the bytes so far) | the client's start |

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use satquic_run::record::push_mb_times;

/// The adapters shipped with satquic (`peers/adapters.toml`).
pub const BUILTIN_ADAPTERS: &str = include_str!("../../../peers/adapters.toml");

/// The congestion-control names a matrix may ask for (each adapter maps them to its own).
pub const CC_NAMES: [&str; 3] = ["cubic", "bbr", "newreno"];

/// The placeholders a command, argument list, environment value or file may use.
const PLACEHOLDERS: [&str; 19] = [
    "satquic",
    "peers",
    "host",
    "port",
    "addr",
    "www",
    "file",
    "url",
    "size",
    "cert",
    "key",
    "download",
    "alpn",
    "cc",
    "qlogdir",
    "keylog",
    "dir",
    "cc_args",
    "qlog_args",
];

/// A parsed adapter file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterFile {
    #[serde(rename = "impl", default)]
    pub impls: Vec<Adapter>,
    /// Kernel TCP variants, run through `satquic link --tun` ([`crate::tcp`]).
    #[serde(default)]
    pub tcp: Vec<crate::tcp::TcpAdapter>,
}

/// How to run one implementation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Programs that must exist (a name looked up in `PATH`, or a path).
    #[serde(default)]
    pub requires: Vec<String>,
    /// A command that must exit 0 for the implementation to count as installed.
    #[serde(default)]
    pub check: Vec<String>,
    /// Application protocols it speaks (client and server alike).
    pub alpn: Vec<String>,
    /// Our congestion-control names (`cubic`, `bbr`, `newreno`) to the implementation's.
    #[serde(default)]
    pub cc: BTreeMap<String, String>,
    #[serde(default)]
    pub server: Option<Role>,
    #[serde(default)]
    pub client: Option<Role>,
}

/// How to start one role (server or client) of an implementation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub command: Vec<String>,
    #[serde(default)]
    pub cc_args: Vec<String>,
    #[serde(default)]
    pub qlog_args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Clients only: how a download is judged (`file`, `stdout-json:POINTER` or
    /// `progress`).
    #[serde(default)]
    pub success: Option<String>,
    /// Clients only: how its progress is read (`file`, `stdout-json:POINTER` or
    /// `stdout-lines:PREFIX`; default `file` when `success = "file"`, else none).
    #[serde(default)]
    pub progress: Option<String>,
}

/// How a client's download is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Success {
    /// The file under the download directory has the expected size.
    File,
    /// The number at this JSON pointer of the client's stdout equals the size.
    StdoutJson(String),
    /// The client's progress reached at least the size.
    Progress,
}

impl Success {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "file" => Ok(Success::File),
            "progress" => Ok(Success::Progress),
            t if t.starts_with("stdout-json:/") => {
                Ok(Success::StdoutJson(t["stdout-json:".len()..].to_string()))
            }
            t => Err(format!(
                "success = {t:?}: expected \"file\", \"stdout-json:/POINTER\" or \"progress\""
            )),
        }
    }
}

/// How often a `file` progress looks at the download's size (and the runner at the
/// client).
pub const PROGRESS_POLL: Duration = Duration::from_millis(5);

/// How a client's progress is read (the module's table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    File,
    StdoutJson(String),
    StdoutLines(String),
}

impl Progress {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "file" => Ok(Progress::File),
            t if t.starts_with("stdout-json:/") => {
                Ok(Progress::StdoutJson(t["stdout-json:".len()..].to_string()))
            }
            t if t.starts_with("stdout-lines:") && t.len() > "stdout-lines:".len() => Ok(
                Progress::StdoutLines(t["stdout-lines:".len()..].to_string()),
            ),
            t => Err(format!(
                "progress = {t:?}: expected \"file\", \"stdout-json:/POINTER\" or \"stdout-lines:PREFIX\""
            )),
        }
    }

    /// A client role's progress: its own, else `file` when its success is a file.
    fn of(role: &Role) -> Option<Progress> {
        match (&role.progress, role.success.as_deref()) {
            (Some(p), _) => Progress::parse(p).ok(),
            (None, Some("file") | None) => Some(Progress::File),
            (None, Some(_)) => None,
        }
    }
}

/// What a client's progress said: when it had each megabyte, and the most bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressLog {
    /// `mb_times_s[k]`: seconds from the origin until the client had k+1 MB.
    pub mb_times_s: Vec<f64>,
    pub max_bytes: u64,
    /// When `max_bytes` was first reached (each sample that raised it).
    raised_at: Vec<(f64, u64)>,
}

impl ProgressLog {
    /// The client had `bytes` at `time_s` (samples in time order).
    pub fn add(&mut self, time_s: f64, bytes: u64) {
        if bytes > self.max_bytes {
            self.raised_at.push((time_s.max(0.0), bytes));
        }
        self.max_bytes = self.max_bytes.max(bytes);
        push_mb_times(&mut self.mb_times_s, bytes, time_s.max(0.0));
    }

    /// When the client first had at least `bytes`.
    pub fn time_to(&self, bytes: u64) -> Option<f64> {
        self.raised_at
            .iter()
            .find(|(_, b)| *b >= bytes)
            .map(|p| p.0)
    }

    /// From stdout lines `PREFIX UNIX_MS, BYTES`, times since `origin_unix_ms`; lines
    /// that do not parse are ignored (a client's other output).
    pub fn from_lines(text: &str, prefix: &str, origin_unix_ms: u64) -> Self {
        let mut log = ProgressLog::default();
        for line in text.lines() {
            log.add_line(line, prefix, origin_unix_ms);
        }
        log
    }

    /// One line of a client's output, as [`ProgressLog::from_lines`] reads it.
    fn add_line(&mut self, line: &str, prefix: &str, origin_unix_ms: u64) {
        let Some(rest) = line.trim_start().strip_prefix(prefix) else {
            return;
        };
        let mut fields = rest.split(',').map(str::trim);
        if let (Some(Ok(ms)), Some(Ok(bytes))) = (
            fields.next().map(str::parse::<u64>),
            fields.next().map(str::parse::<u64>),
        ) {
            self.add(ms.saturating_sub(origin_unix_ms) as f64 / 1000.0, bytes);
        }
    }

    /// From an array of `{"mb": N, "time_s": T}` at `pointer` of a JSON document.
    pub fn from_json(text: &str, pointer: &str) -> Self {
        let mut log = ProgressLog::default();
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return log;
        };
        let Some(rows) = value.pointer(pointer).and_then(|v| v.as_array()) else {
            return log;
        };
        let mut points: Vec<(u64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r.get("mb")?.as_u64()?, r.get("time_s")?.as_f64()?)))
            .collect();
        points.sort_by_key(|p| p.0);
        for (mb, t) in points {
            log.add(t, mb * satquic_run::MB);
        }
        log
    }
}

impl AdapterFile {
    /// Parses and checks an adapter file; errors are one line naming the implementation.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: AdapterFile =
            toml::from_str(text).map_err(|e| crate_first_line(&format!("adapters: {e}")))?;
        if file.impls.is_empty() && file.tcp.is_empty() {
            return Err("adapters: no [[impl]] or [[tcp]] entry".into());
        }
        let mut seen = Vec::new();
        for a in &file.impls {
            a.validate()?;
            if seen.contains(&a.name.as_str()) {
                return Err(format!("adapters: implementation {:?} twice", a.name));
            }
            seen.push(a.name.as_str());
        }
        for t in &file.tcp {
            t.validate()?;
            if seen.contains(&t.name.as_str()) {
                return Err(format!("adapters: implementation {:?} twice", t.name));
            }
            seen.push(t.name.as_str());
        }
        Ok(file)
    }

    /// Reads an adapter file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read adapters {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The built-in adapters.
    pub fn builtin() -> Self {
        Self::parse(BUILTIN_ADAPTERS).expect("peers/adapters.toml parses")
    }

    pub fn get(&self, name: &str) -> Option<&Adapter> {
        self.impls.iter().find(|a| a.name == name)
    }

    /// A kernel TCP variant by name.
    pub fn get_tcp(&self, name: &str) -> Option<&crate::tcp::TcpAdapter> {
        self.tcp.iter().find(|a| a.name == name)
    }

    /// The QUIC implementations, then the TCP variants.
    pub fn names(&self) -> Vec<&str> {
        self.impls
            .iter()
            .map(|a| a.name.as_str())
            .chain(self.tcp.iter().map(|t| t.name.as_str()))
            .collect()
    }
}

fn crate_first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(300)
        .collect()
}

/// An adapter's name (a QUIC implementation's or a TCP variant's): lowercase letters,
/// digits, `-` and `_`, as it appears in run ids and `--impl`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

impl Adapter {
    fn validate(&self) -> Result<(), String> {
        let ctx = |what: &str| format!("adapters: implementation {:?}: {what}", self.name);
        if !valid_name(&self.name) {
            return Err(ctx("name must be lowercase letters, digits, - or _"));
        }
        if self.alpn.is_empty() {
            return Err(ctx("alpn is empty"));
        }
        if self.server.is_none() && self.client.is_none() {
            return Err(ctx("neither [impl.server] nor [impl.client]"));
        }
        for key in self.cc.keys() {
            if !CC_NAMES.contains(&key.as_str()) {
                return Err(ctx(&format!(
                    "cc name {key:?} is not one of {}",
                    CC_NAMES.join(", ")
                )));
            }
        }
        for (role_name, role) in [("server", &self.server), ("client", &self.client)] {
            let Some(role) = role else { continue };
            let rctx = |what: &str| ctx(&format!("{role_name}: {what}"));
            if role.command.is_empty() {
                return Err(rctx("command is empty"));
            }
            let texts = role
                .command
                .iter()
                .chain(&role.cc_args)
                .chain(&role.qlog_args)
                .chain(role.env.values())
                .chain(role.files.values())
                .chain(&self.requires)
                .chain(&self.check);
            for t in texts {
                check_placeholders(t).map_err(|e| rctx(&e))?;
            }
            if !self.cc.is_empty() && role.cc_args.is_empty() {
                return Err(rctx("cc is given but cc_args is empty"));
            }
            if !role.cc_args.is_empty() && !role.command.iter().any(|w| w == "{cc_args}") {
                return Err(rctx(
                    "cc_args is given but command has no \"{cc_args}\" word",
                ));
            }
            if !role.qlog_args.is_empty() && !role.command.iter().any(|w| w == "{qlog_args}") {
                return Err(rctx(
                    "qlog_args is given but command has no \"{qlog_args}\" word",
                ));
            }
            for name in role.files.keys() {
                if name.is_empty() || name.contains('/') || name.starts_with('.') {
                    return Err(rctx(&format!("file name {name:?} must be a plain name")));
                }
            }
            match (role_name, &role.success) {
                ("client", Some(s)) => {
                    Success::parse(s).map_err(|e| rctx(&e))?;
                }
                ("client", None) => return Err(rctx("success is missing")),
                (_, Some(_)) => return Err(rctx("success belongs to the client")),
                _ => {}
            }
            match (role_name, &role.progress) {
                ("client", Some(p)) => {
                    Progress::parse(p).map_err(|e| rctx(&e))?;
                }
                ("client", None) if role.success.as_deref() == Some("progress") => {
                    return Err(rctx("success = \"progress\" needs a progress"));
                }
                (_, Some(_)) => return Err(rctx("progress belongs to the client")),
                _ => {}
            }
        }
        Ok(())
    }

    /// The implementation's name for one of our congestion controls.
    pub fn cc_name(&self, cc: &str) -> Option<&str> {
        self.cc.get(cc).map(String::as_str)
    }

    /// Why the implementation cannot run here (a missing program, a failing check), or
    /// `None` when it is installed.
    pub fn missing(&self, env: &PeerEnv) -> Option<String> {
        let values = env.base_values();
        for req in &self.requires {
            let req = expand(req, &values);
            if find_program(&req).is_none() {
                return Some(format!("{} not found", req));
            }
        }
        if let Some((program, args)) = self.check.split_first() {
            let program = expand(program, &values);
            let args: Vec<String> = args.iter().map(|a| expand(a, &values)).collect();
            let ok = Command::new(&program)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Some(format!("`{program} {}` failed", args.join(" ")));
            }
        }
        None
    }
}

/// Checks that every `{name}` in `text` is a known placeholder (`{{` and `}}` are
/// literal braces).
fn check_placeholders(text: &str) -> Result<(), String> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        if let Some(literal) = after.strip_prefix('{') {
            rest = literal;
            continue;
        }
        let Some(close) = after.find('}') else {
            return Err(format!("unclosed {{ in {text:?} (write {{{{ for a brace)"));
        };
        let name = &after[..close];
        if !PLACEHOLDERS.contains(&name) {
            return Err(format!("unknown placeholder {{{name}}} in {text:?}"));
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// Replaces `{name}` by its value (unknown names stay as they are); `{{` and `}}` become
/// `{` and `}`.
fn expand(text: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if rest[i..].starts_with("}") {
            out.push('}');
            rest = after.strip_prefix('}').unwrap_or(after);
            continue;
        }
        if let Some(literal) = after.strip_prefix('{') {
            out.push('{');
            rest = literal;
            continue;
        }
        match after.find('}') {
            Some(close) if values.contains_key(&after[..close]) => {
                out.push_str(&values[&after[..close]]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A program by name (looked up in `PATH`) or path, if it exists.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// What every run shares: this satquic binary and where the peers are installed.
#[derive(Debug, Clone)]
pub struct PeerEnv {
    pub satquic: PathBuf,
    pub peers: PathBuf,
}

impl PeerEnv {
    /// `satquic` and the peers' directory: `$SATQUIC_PEERS`, else `~/.local/satquic-peers`
    /// (where `scripts/install-peers.sh` puts them).
    pub fn new(satquic: PathBuf) -> Self {
        let peers = std::env::var_os("SATQUIC_PEERS")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home =
                    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
                home.join(".local/satquic-peers")
            });
        PeerEnv { satquic, peers }
    }

    fn base_values(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("satquic", self.satquic.display().to_string()),
            ("peers", self.peers.display().to_string()),
        ])
    }
}

/// What a pair will use to talk, or why it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairPlan {
    pub alpn: String,
    /// Each side's name for the chosen cc (none: the implementation's default).
    pub client_cc: Option<String>,
    pub server_cc: Option<String>,
}

/// Picks the protocol (the first of `alpn_preference` both speak) and each side's cc
/// name; `Err` says why the pair cannot run (`cc` is one of [`CC_NAMES`] or `default`).
pub fn plan_pair(
    client: &Adapter,
    server: &Adapter,
    alpn_preference: &[String],
    cc: &str,
) -> Result<PairPlan, String> {
    if client.client.is_none() {
        return Err(format!("{} has no client", client.name));
    }
    if server.server.is_none() {
        return Err(format!("{} has no server", server.name));
    }
    let alpn = alpn_preference
        .iter()
        .find(|a| client.alpn.contains(a) && server.alpn.contains(a))
        .ok_or_else(|| {
            format!(
                "no common ALPN: client {} speaks {}, server {} speaks {}",
                client.name,
                client.alpn.join(","),
                server.name,
                server.alpn.join(",")
            )
        })?;
    let (client_cc, server_cc) = if cc == "default" {
        (None, None)
    } else {
        // The server sends the download, so its cc is the one that matters; the client
        // uses the same where it can select one.
        let server_cc = server
            .cc_name(cc)
            .ok_or_else(|| format!("server {} cannot select cc {cc}", server.name))?;
        (
            client.cc_name(cc).map(str::to_string),
            Some(server_cc.to_string()),
        )
    };
    Ok(PairPlan {
        alpn: alpn.clone(),
        client_cc,
        server_cc,
    })
}

/// One client x server download through `satquic link`.
#[derive(Debug, Clone)]
pub struct Cell<'a> {
    pub env: &'a PeerEnv,
    pub client: &'a Adapter,
    pub server: &'a Adapter,
    pub plan: PairPlan,
    /// `--link` of `satquic link` (a preset or a file).
    pub link: String,
    /// Seed of the link's random processes.
    pub seed: u64,
    /// Directory served (holds `file`).
    pub www: PathBuf,
    pub file: String,
    pub size_bytes: u64,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The run's directory (logs, qlogs, keys, the download while it is checked).
    pub dir: PathBuf,
    /// Longest a download may take, client start to exit.
    pub time_cap: Duration,
    /// Ask both sides for qlogs (in `dir/qlog/server/` and `dir/qlog/client/`).
    pub qlog: bool,
    /// `satquic link --sender-cap` (RATE[:LATENCY]): a sender cap in front of the link.
    pub sender_cap: Option<String>,
}

/// What a cell measured.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutcome {
    /// `completed`, `failed` or `timeout` (the client did not exit within the cap).
    pub status: String,
    /// Why it failed; empty when completed.
    pub reason: String,
    /// The client's wall clock from its start to its exit.
    pub client_time: Option<Duration>,
    /// Bytes the client got (file size, its JSON or its progress).
    pub delivered_bytes: Option<u64>,
    /// When the client had each megabyte (empty when its adapter reads no progress).
    pub progress: ProgressLog,
    /// What the link did to the run's packets (`satquic link --summary-json`).
    pub link: Option<LinkTotals>,
}

/// The link's drops in one run, from `satquic link --summary-json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkTotals {
    /// Down packets dropped by the queue (full or AQM) and by random loss processes.
    pub drops_congestion: u64,
    pub drops_random: u64,
    /// Packets the sender cap's queue dropped.
    pub cap_drops: u64,
    /// The first down drop, seconds since the client started.
    pub first_drop_at_s: Option<f64>,
}

impl LinkTotals {
    /// From the relay's summary, with times moved to a client started at
    /// `client_unix_ms`.
    pub fn from_summary(text: &str, client_unix_ms: u64) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let down = v.get("down")?;
        let dropped = |names: &[&str]| {
            names
                .iter()
                .filter_map(|n| down.pointer(&format!("/dropped/{n}"))?.as_u64())
                .sum()
        };
        let started = v.get("started_unix_ms")?.as_u64()? as f64 / 1000.0;
        Some(LinkTotals {
            drops_congestion: dropped(&["queue_full", "aqm"]),
            drops_random: dropped(&["random_loss", "burst_loss"]),
            cap_drops: v
                .pointer("/sender_cap/dropped_packets")
                .and_then(|d| d.as_u64())
                .unwrap_or(0),
            first_drop_at_s: down
                .get("first_drop_s")
                .and_then(|t| t.as_f64())
                .map(|t| started + t - client_unix_ms as f64 / 1000.0),
        })
    }
}

impl CellOutcome {
    fn failed(reason: impl Into<String>) -> Self {
        CellOutcome {
            status: "failed".into(),
            reason: reason.into(),
            client_time: None,
            delivered_bytes: None,
            progress: ProgressLog::default(),
            link: None,
        }
    }
}

/// How long a server or the relay may take to bind its port.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// The most of each log kept in a run directory.
const LOG_KEEP_BYTES: u64 = 64 * 1024;

/// A process that is killed when dropped.
pub(crate) struct Running {
    pub(crate) child: Child,
    pub(crate) what: &'static str,
}

impl Running {
    pub(crate) fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        // SIGTERM first, so that qlogs and key logs are flushed; SIGKILL after 2 s.
        terminate(&self.child);
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        tracing::debug!("{} killed", self.what);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn terminate(child: &Child) {
    // SAFETY: kill(2) on our own child's pid, which is not yet reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn terminate(_child: &Child) {}

/// A free UDP port on 127.0.0.1 (bound and released: another process could take it in
/// between, which a failed run then says).
fn free_udp_port() -> std::io::Result<u16> {
    Ok(UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Whether some socket is bound to UDP `port` (Linux `/proc/net/udp{,6}`; elsewhere we
/// only wait a second).
fn udp_port_bound(port: u16) -> Option<bool> {
    let needle = format!(":{port:04X} ");
    let mut any_file = false;
    for f in ["/proc/net/udp", "/proc/net/udp6"] {
        if let Ok(text) = std::fs::read_to_string(f) {
            any_file = true;
            if text.lines().skip(1).any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| format!("{a} ").ends_with(&needle))
            }) {
                return Some(true);
            }
        }
    }
    any_file.then_some(false)
}

/// Waits until `port` is bound or the process exits.
fn wait_ready(process: &mut Running, port: u16, log: &Path) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(format!(
                "{} exited ({status}) before listening: {}",
                process.what,
                last_line(log)
            ));
        }
        match udp_port_bound(port) {
            Some(true) => return Ok(()),
            None if started.elapsed() > Duration::from_secs(1) => return Ok(()),
            _ => {}
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(format!(
                "{} did not listen on UDP port {port} within {} s: {}",
                process.what,
                READY_TIMEOUT.as_secs(),
                last_line(log)
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last non-empty line of a log, for reasons.
fn last_line(log: &Path) -> String {
    let text = tail(log, 4096);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map_or_else(|| "(no output)".into(), |l| l.chars().take(200).collect())
}

fn tail(path: &Path, bytes: u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    use std::io::Seek;
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(bytes)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Keeps only the end of a log that grew past [`LOG_KEEP_BYTES`].
fn trim_log(path: &Path) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > LOG_KEEP_BYTES) {
        let kept = tail(path, LOG_KEEP_BYTES);
        let _ = std::fs::write(
            path,
            format!("[... cut to the last {LOG_KEEP_BYTES} bytes]\n{kept}"),
        );
    }
}

/// The command of a role with the placeholders filled in.
fn role_command(
    role: &Role,
    values: &BTreeMap<&str, String>,
    cc: Option<&str>,
    qlog: bool,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut values = values.clone();
    values.insert("cc", cc.unwrap_or("").to_string());
    let mut words = Vec::new();
    for w in &role.command {
        match w.as_str() {
            "{cc_args}" => {
                if cc.is_some() {
                    words.extend(role.cc_args.iter().map(|a| expand(a, &values)));
                }
            }
            "{qlog_args}" => {
                if qlog {
                    words.extend(role.qlog_args.iter().map(|a| expand(a, &values)));
                }
            }
            _ => words.push(expand(w, &values)),
        }
    }
    let env = role
        .env
        .iter()
        .filter(|(k, _)| qlog || k.as_str() != "QLOGDIR")
        .map(|(k, v)| (k.clone(), expand(v, &values)))
        .collect();
    (words, env)
}

fn spawn(
    what: &'static str,
    words: &[String],
    env: &[(String, String)],
    cwd: &Path,
    stdout: &Path,
    stderr: &Path,
) -> Result<Running, String> {
    let open = |p: &Path| {
        std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    };
    let (program, args) = words.split_first().ok_or("empty command")?;
    let out = open(stdout)?;
    let err = if stdout == stderr {
        out.try_clone().map_err(|e| e.to_string())?
    } else {
        open(stderr)?
    };
    let child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {what} {program}: {e}"))?;
    Ok(Running { child, what })
}

/// Runs one download: the server, `satquic link` in front of it, then the client, timed
/// on the client's wall clock; all three are stopped before it returns. Logs
/// (`server.log`, `relay.log`, `client.log`, `client.out`), the command lines
/// (`commands.txt`), `keys.log` files and qlogs stay in `cell.dir`; the download is
/// deleted once measured.
pub fn run_cell(cell: &Cell) -> CellOutcome {
    match run_cell_inner(cell) {
        Ok(o) => o,
        Err(reason) => CellOutcome::failed(reason),
    }
}

fn run_cell_inner(cell: &Cell) -> Result<CellOutcome, String> {
    let (Some(server_role), Some(client_role)) = (&cell.server.server, &cell.client.client) else {
        return Err("the pair lacks a server or a client".into());
    };
    let mkdir = |p: &Path| {
        std::fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
    };
    let server_dir = cell.dir.join("server");
    let client_dir = cell.dir.join("client");
    let download = cell.dir.join("download");
    let qlog_dir = cell.dir.join("qlog");
    for d in [&server_dir, &client_dir, &download] {
        mkdir(d)?;
    }
    if cell.qlog {
        // One directory per side: some implementations name their qlog after the
        // original destination connection ID, which both sides share.
        mkdir(&qlog_dir.join("server"))?;
        mkdir(&qlog_dir.join("client"))?;
    }
    let server_port = free_udp_port().map_err(|e| format!("no free UDP port: {e}"))?;
    let link_port = loop {
        let p = free_udp_port().map_err(|e| format!("no free UDP port: {e}"))?;
        if p != server_port {
            break p;
        }
    };
    let host = "127.0.0.1";
    let mut values = PeerEnv::base_values(cell.env);
    values.extend([
        ("host", host.to_string()),
        ("www", cell.www.display().to_string()),
        ("file", cell.file.clone()),
        ("size", cell.size_bytes.to_string()),
        ("cert", cell.cert.display().to_string()),
        ("key", cell.key.display().to_string()),
        ("download", download.display().to_string()),
        ("alpn", cell.plan.alpn.clone()),
    ]);
    let for_role = |port: u16, dir: &Path, keylog: &str| {
        let mut v = values.clone();
        let side = if keylog.starts_with("server") {
            "server"
        } else {
            "client"
        };
        v.insert("qlogdir", qlog_dir.join(side).display().to_string());
        v.insert("port", port.to_string());
        v.insert("addr", format!("{host}:{port}"));
        v.insert("url", format!("https://{host}:{port}/{}", cell.file));
        v.insert("dir", dir.display().to_string());
        v.insert("keylog", cell.dir.join(keylog).display().to_string());
        v
    };
    let server_values = for_role(server_port, &server_dir, "server-keys.log");
    let client_values = for_role(link_port, &client_dir, "client-keys.log");
    for (name, template) in &server_role.files {
        std::fs::write(server_dir.join(name), expand(template, &server_values))
            .map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    for (name, template) in &client_role.files {
        std::fs::write(client_dir.join(name), expand(template, &client_values))
            .map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let (server_cmd, server_env) = role_command(
        server_role,
        &server_values,
        cell.plan.server_cc.as_deref(),
        cell.qlog,
    );
    let (client_cmd, client_env) = role_command(
        client_role,
        &client_values,
        cell.plan.client_cc.as_deref(),
        cell.qlog,
    );
    let mut relay_cmd: Vec<String> = [
        cell.env.satquic.display().to_string(),
        "link".into(),
        "--listen".into(),
        format!("{host}:{link_port}"),
        "--to".into(),
        format!("{host}:{server_port}"),
        "--link".into(),
        cell.link.clone(),
        "--seed".into(),
        cell.seed.to_string(),
        "-q".into(),
    ]
    .into();
    if let Some(cap) = &cell.sender_cap {
        relay_cmd.extend(["--sender-cap".into(), cap.clone()]);
    }
    let relay_summary = cell.dir.join("relay.json");
    relay_cmd.extend(["--summary-json".into(), relay_summary.display().to_string()]);
    let progress_kind = Progress::of(client_role);
    let download_file = download.join(&cell.file);
    let show = |env: &[(String, String)], cmd: &[String]| {
        env.iter()
            .map(|(k, v)| format!("{k}={v} "))
            .chain(std::iter::once(cmd.join(" ")))
            .collect::<String>()
    };
    let _ = std::fs::write(
        cell.dir.join("commands.txt"),
        format!(
            "server: {}\nrelay: {}\nclient: {}\n",
            show(&server_env, &server_cmd),
            show(&[], &relay_cmd),
            show(&client_env, &client_cmd)
        ),
    );

    let server_log = cell.dir.join("server.log");
    let relay_log = cell.dir.join("relay.log");
    let client_log = cell.dir.join("client.log");
    let client_out = cell.dir.join("client.out");
    let logs = [&server_log, &relay_log, &client_log, &client_out];
    let result = (|| {
        let mut server = spawn(
            "server",
            &server_cmd,
            &server_env,
            &server_dir,
            &server_log,
            &server_log,
        )?;
        wait_ready(&mut server, server_port, &server_log)?;
        let mut relay = spawn(
            "satquic link",
            &relay_cmd,
            &[],
            &cell.dir,
            &relay_log,
            &relay_log,
        )?;
        wait_ready(&mut relay, link_port, &relay_log)?;
        let started = Instant::now();
        let started_unix_ms = crate::unix_ms(std::time::SystemTime::now());
        let mut progress = ProgressLog::default();
        let mut client = spawn(
            "client",
            &client_cmd,
            &client_env,
            &client_dir,
            &client_out,
            &client_log,
        )?;
        let judged_by_progress = role_success(client_role) == Some(Success::Progress);
        // The client's output read so far (lines progress: only what it appended since).
        let mut stdout_tail = TailLines::default();
        // What the client has shown so far; `Some(t)` at the end, after its exit.
        let mut read_progress =
            |progress: &mut ProgressLog, at_exit: Option<f64>| match &progress_kind {
                Some(Progress::File) => {
                    if let Ok(m) = std::fs::metadata(&download_file) {
                        let t = at_exit.unwrap_or_else(|| started.elapsed().as_secs_f64());
                        progress.add(t, m.len());
                    }
                }
                Some(Progress::StdoutLines(prefix)) => {
                    for line in stdout_tail.read_new(&client_out, at_exit.is_some()) {
                        progress.add_line(&line, prefix, started_unix_ms);
                    }
                }
                Some(Progress::StdoutJson(pointer)) if at_exit.is_some() => {
                    let text = std::fs::read_to_string(&client_out).unwrap_or_default();
                    *progress = ProgressLog::from_json(&text, pointer);
                }
                _ => {}
            };
        // How the client ended: `None` at the time cap.
        let status = loop {
            if let Some(status) = client.exited() {
                break Some(status.to_string());
            }
            if started.elapsed() >= cell.time_cap {
                break None;
            }
            read_progress(&mut progress, None);
            // A client that counts a stream stops once it has every byte; the link's
            // totals then end there too (qperf's server streams on until the client
            // closes, and its client lingers for seconds).
            if judged_by_progress && progress.max_bytes >= cell.size_bytes {
                break Some("stopped once its progress showed every byte".into());
            }
            std::thread::sleep(PROGRESS_POLL);
        };
        let elapsed = started.elapsed();
        drop(client);
        read_progress(&mut progress, Some(elapsed.as_secs_f64()));
        let server_alive = server.exited().is_none();
        drop(relay);
        drop(server);
        let link = std::fs::read_to_string(&relay_summary)
            .ok()
            .and_then(|t| LinkTotals::from_summary(&t, started_unix_ms));
        let Some(status) = status else {
            let got = delivered(client_role, cell, &download, &client_out, &progress);
            return Ok(CellOutcome {
                status: "timeout".into(),
                reason: format!(
                    "the client had not finished after {} s ({} of {} bytes)",
                    cell.time_cap.as_secs_f64(),
                    got.map_or("?".into(), |b| b.to_string()),
                    cell.size_bytes
                ),
                client_time: None,
                delivered_bytes: got,
                progress,
                link,
            });
        };
        let got = delivered(client_role, cell, &download, &client_out, &progress);
        let enough = if judged_by_progress {
            got.is_some_and(|b| b >= cell.size_bytes)
        } else {
            got == Some(cell.size_bytes)
        };
        if enough {
            // A client judged by its progress is timed by it too (to the sample that
            // showed the last byte).
            let client_time = if judged_by_progress {
                progress
                    .time_to(cell.size_bytes)
                    .map_or(elapsed, Duration::from_secs_f64)
            } else {
                elapsed
            };
            return Ok(CellOutcome {
                status: "completed".into(),
                reason: String::new(),
                client_time: Some(client_time),
                delivered_bytes: got,
                progress,
                link,
            });
        }
        let mut reason = format!(
            "client ended ({status}) with {} of {} bytes: {}",
            got.map_or("no".into(), |b| b.to_string()),
            cell.size_bytes,
            last_line(&client_log)
        );
        if !server_alive {
            reason.push_str(&format!(
                "; the server had exited: {}",
                last_line(&server_log)
            ));
        }
        Ok(CellOutcome {
            status: "failed".into(),
            reason,
            client_time: None,
            delivered_bytes: got,
            progress,
            link,
        })
    })();
    let _ = std::fs::remove_dir_all(&download);
    for log in logs {
        trim_log(log);
    }
    result
}

fn role_success(role: &Role) -> Option<Success> {
    Success::parse(role.success.as_deref().unwrap_or("file")).ok()
}

/// Bytes the client got, as its adapter says to judge them.
fn delivered(
    role: &Role,
    cell: &Cell,
    download: &Path,
    stdout: &Path,
    progress: &ProgressLog,
) -> Option<u64> {
    match role_success(role)? {
        Success::Progress => Some(progress.max_bytes),
        Success::File => std::fs::metadata(download.join(&cell.file))
            .ok()
            .map(|m| m.len()),
        Success::StdoutJson(pointer) => {
            let text = std::fs::read_to_string(stdout).ok()?;
            let value: serde_json::Value = serde_json::from_str(&text).ok()?;
            value.pointer(&pointer)?.as_u64()
        }
    }
}

/// The lines a growing file gained since the last look, so that a client's output is
/// read once however often it is polled.
#[derive(Default)]
struct TailLines {
    offset: u64,
    /// The start of a line whose end has not been written yet.
    partial: Vec<u8>,
}

impl TailLines {
    /// The complete lines appended to `path` since the last call; with `last`, also a
    /// final line without its newline.
    fn read_new(&mut self, path: &Path, last: bool) -> Vec<String> {
        use std::io::Seek;
        if let Ok(mut f) = std::fs::File::open(path)
            && f.seek(std::io::SeekFrom::Start(self.offset)).is_ok()
            && let Ok(n) = f.read_to_end(&mut self.partial)
        {
            self.offset += n as u64;
        }
        let complete = if last {
            self.partial.len()
        } else {
            self.partial
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1)
        };
        let text: Vec<u8> = self.partial.drain(..complete).collect();
        String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Writes a self-signed certificate for `localhost` and 127.0.0.1 (ECDSA P-256, which
/// every implementation reads) as `cert.pem` and `key.pem` (PKCS#8) into `dir`, unless
/// both are there; returns their paths.
pub fn prepare_identity(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    if cert.is_file() && key.is_file() {
        return Ok((cert, key));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let generated = rcgen::generate_simple_self_signed(names)
        .map_err(|e| format!("cannot generate a certificate: {e}"))?;
    std::fs::write(&key, generated.signing_key.serialize_pem())
        .and_then(|_| std::fs::write(&cert, generated.cert.pem()))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok((cert, key))
}

/// Writes `size_bytes` of pseudo-random bytes (from `seed`, incompressible) to `path`
/// unless a file of that size is there.
pub fn prepare_file(path: &Path, size_bytes: u64, seed: u64) -> Result<(), String> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == size_bytes) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    use std::io::Write;
    let tmp = path.with_extension("partial");
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?,
    );
    // xorshift64*: fast and enough to defeat compression; not for cryptography.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut left = size_bytes;
    while left > 0 {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let word = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        let n = left.min(8) as usize;
        out.write_all(&word[..n])
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        left -= n as u64;
    }
    out.flush().map_err(|e| format!("{}: {e}", tmp.display()))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_adapters_parse() {
        let file = AdapterFile::builtin();
        assert!(file.get("satquic").is_some());
        assert!(file.get("ngtcp2").is_some());
        assert!(file.get("aioquic").is_some());
    }

    fn one(extra: &str) -> String {
        format!(
            "[[impl]]\nname = \"x\"\nalpn = [\"h3\"]\n{extra}\n[impl.client]\ncommand = [\"c\", \"{{url}}\"]\nsuccess = \"file\"\n"
        )
    }

    #[test]
    fn bad_adapter_files_are_one_line_errors() {
        for (text, want) in [
            ("", "no [[impl]]"),
            ("[[impl]]\nname = \"x\"\n", "alpn"),
            (&one("cc = { vegas = \"v\" }"), "cc name \"vegas\""),
            (
                &one("").replace("{url}", "{ulr}"),
                "unknown placeholder {ulr}",
            ),
            (
                &one("").replace("success = \"file\"\n", ""),
                "success is missing",
            ),
            (
                &one("").replace("\"file\"", "\"exit-code\""),
                "expected \"file\"",
            ),
            (&one("cc = { cubic = \"c\" }"), "cc_args is empty"),
            (&format!("{}{}", one(""), one("")), "twice"),
            (
                &one("").replace("name = \"x\"", "name = \"X Y\""),
                "lowercase",
            ),
            (&one("colour = 1"), "unknown field"),
        ] {
            let err = AdapterFile::parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn placeholders_expand_and_lists_splice() {
        let file = AdapterFile::parse(
            "[[impl]]\nname = \"x\"\nalpn = [\"h3\"]\ncc = { cubic = \"CUBIC\" }\n\
             [impl.client]\ncommand = [\"c\", \"{cc_args}\", \"{qlog_args}\", \"{url}\"]\n\
             cc_args = [\"--cc\", \"{cc}\"]\nqlog_args = [\"--qlog={qlogdir}\"]\n\
             env = { QLOGDIR = \"{qlogdir}\", SSLKEYLOGFILE = \"{keylog}\" }\nsuccess = \"file\"\n",
        )
        .unwrap();
        let role = file.impls[0].client.as_ref().unwrap();
        let values = BTreeMap::from([
            ("url", "https://h:1/f".to_string()),
            ("qlogdir", "/q".to_string()),
            ("keylog", "/k".to_string()),
        ]);
        let (words, env) = role_command(role, &values, Some("CUBIC"), false);
        assert_eq!(words, ["c", "--cc", "CUBIC", "https://h:1/f"]);
        assert_eq!(env, [("SSLKEYLOGFILE".to_string(), "/k".to_string())]);
        let (words, env) = role_command(role, &values, None, true);
        assert_eq!(words, ["c", "--qlog=/q", "https://h:1/f"]);
        assert_eq!(env.len(), 2);
        assert_eq!(expand("{{\n a {url} }}", &values), "{\n a https://h:1/f }");
        assert!(check_placeholders("{{ admin off }}").is_ok());
    }

    #[test]
    fn pairs_need_a_common_alpn_and_the_servers_cc() {
        let file = AdapterFile::builtin();
        let satquic = file.get("satquic").unwrap();
        let ngtcp2 = file.get("ngtcp2").unwrap();
        let pref = vec!["h3".to_string(), "hq-interop".to_string()];
        let p = plan_pair(satquic, ngtcp2, &pref, "bbr").unwrap();
        assert_eq!(p.alpn, "h3");
        assert!(p.server_cc.is_some());
        let hq_only = vec!["hq-interop".to_string()];
        let err = plan_pair(satquic, ngtcp2, &hq_only, "default").unwrap_err();
        assert!(err.contains("no common ALPN"), "{err}");
    }

    #[test]
    fn progress_is_read_from_stdout_lines_and_json() {
        // qperf's byteslog: wall-clock ms and bytes, at each megabyte passed; other
        // lines ignored; times from the client's start.
        let text = "setting data count to 3000000\nbyteslog: 1000500, 1000100\n\
                    second 0: 8 mbit/s (1000 bytes received)\nbyteslog: 1000750, 2500000\n\
                    byteslog: 1001000, 3000001\nexiting after 3000001 bytes received\n";
        let log = ProgressLog::from_lines(text, "byteslog:", 1_000_000);
        assert_eq!(log.mb_times_s, [0.5, 0.75, 1.0]);
        assert_eq!(log.max_bytes, 3_000_001);
        assert_eq!(log.time_to(2_000_000), Some(0.75));
        assert_eq!(log.time_to(3_000_001), Some(1.0));
        assert_eq!(log.time_to(3_000_002), None);
        assert_eq!(
            ProgressLog::from_lines("byteslog: x, 1", "byteslog:", 0),
            ProgressLog::default()
        );
        // satquic's chunks (any order), and a document without them.
        let json = r#"{"chunks": [{"flow": 0, "mb": 2, "time_s": 1.5}, {"flow": 0, "mb": 1, "time_s": 1.0}]}"#;
        let log = ProgressLog::from_json(json, "/chunks");
        assert_eq!(log.mb_times_s, [1.0, 1.5]);
        assert_eq!(log.max_bytes, 2_000_000);
        assert!(
            ProgressLog::from_json("{}", "/chunks")
                .mb_times_s
                .is_empty()
        );
        // A file polled: a sample that passes two megabytes gives both its time.
        let mut log = ProgressLog::default();
        for (t, b) in [
            (0.1, 10),
            (0.2, 999_999),
            (0.3, 2_000_000),
            (0.4, 2_100_000),
        ] {
            log.add(t, b);
        }
        assert_eq!(log.mb_times_s, [0.3, 0.3]);
    }

    #[test]
    fn a_growing_output_is_read_once_line_by_line() {
        let path = std::env::temp_dir().join(format!("satquic-tail-{}", std::process::id()));
        let append = |text: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(text.as_bytes()).unwrap();
        };
        let mut tail = TailLines::default();
        assert!(tail.read_new(&path, false).is_empty(), "no file yet");
        append("byteslog: 1, 2\nbyteslog: 3,");
        assert_eq!(tail.read_new(&path, false), ["byteslog: 1, 2"]);
        assert!(
            tail.read_new(&path, false).is_empty(),
            "the half line waits"
        );
        append(" 4\nnext");
        assert_eq!(tail.read_new(&path, false), ["byteslog: 3, 4"]);
        assert_eq!(
            tail.read_new(&path, true),
            ["next"],
            "at the end, the last line"
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn link_totals_come_from_the_relay_summary_in_client_time() {
        let text = r#"{"started_unix_ms": 1000000, "down": {"dropped": {"queue_full": 5,
            "aqm": 2, "random_loss": 1, "burst_loss": 0, "too_large": 0}, "first_drop_s": 8.5},
            "up": {}, "sender_cap": {"offered_packets": 9, "dropped_packets": 3}}"#;
        let t = LinkTotals::from_summary(text, 1_000_500).unwrap();
        assert_eq!((t.drops_congestion, t.drops_random, t.cap_drops), (7, 1, 3));
        assert!((t.first_drop_at_s.unwrap() - 8.0).abs() < 1e-9);
        assert_eq!(LinkTotals::from_summary("{}", 0), None);
    }

    #[test]
    fn progress_settings_are_checked_and_defaulted() {
        let file = AdapterFile::parse(&one("")).unwrap();
        let role = file.impls[0].client.as_ref().unwrap();
        assert_eq!(Progress::of(role), Some(Progress::File));
        for (from, to, want) in [
            (
                "success = \"file\"",
                "success = \"progress\"",
                "needs a progress",
            ),
            (
                "success = \"file\"",
                "success = \"file\"\nprogress = \"stdout-lines:\"",
                "stdout-lines:PREFIX",
            ),
            (
                "success = \"file\"",
                "success = \"file\"\nprogress = \"pidfile\"",
                "expected \"file\"",
            ),
        ] {
            let err = AdapterFile::parse(&one("").replace(from, to)).unwrap_err();
            assert!(err.contains(want), "{to}: {err}");
        }
        let qperf = AdapterFile::parse(include_str!("../../../peers/quicly-qperf.toml")).unwrap();
        let client = qperf.get("quicly-qperf").unwrap().client.as_ref().unwrap();
        assert_eq!(
            Progress::of(client),
            Some(Progress::StdoutLines("byteslog:".into()))
        );
        assert_eq!(role_success(client), Some(Success::Progress));
        let satquic = AdapterFile::builtin();
        let client = satquic.get("satquic").unwrap().client.as_ref().unwrap();
        assert_eq!(
            Progress::of(client),
            Some(Progress::StdoutJson("/chunks".into()))
        );
    }

    #[test]
    fn udp_ports_are_seen_bound() {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = s.local_addr().unwrap().port();
        if let Some(bound) = udp_port_bound(port) {
            assert!(bound);
        }
    }
}
