//! The adapter file: its TOML schema and the checks a file passes before anything runs.
//!
//! An adapter says, as data, how to run one implementation: the commands that start its
//! server and its client, the congestion controls it can select and how, the application
//! protocols (ALPN) it speaks, the environment it reads (`SSLKEYLOGFILE`, `QLOGDIR`) and
//! how a download is judged complete. The adapters live in `peers/adapters.toml` (built
//! into the binary as [`BUILTIN_ADAPTERS`]; `satquic matrix --adapters FILE` reads
//! another). A file is checked whole when it is read ([`AdapterFile::parse`]), so a typo
//! is one line on stderr before a matrix starts, not a failed cell an hour in.
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
//! | `file` (default with `success = "file"`) | the download file's size, looked at every [`PROGRESS_POLL`](super::PROGRESS_POLL) while the client runs | the client's start |
//! | `stdout-json:POINTER` | an array of `{"mb": N, "time_s": T}` in the JSON the client printed (satquic's `/chunks`) | the client's own (satquic: its connection start) |
//! | `stdout-lines:PREFIX` | stdout lines `PREFIX UNIX_MS, BYTES` (qperf's `byteslog: 1764144000123, 5000123`: the wall clock in ms and the bytes so far) | the client's start |

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::Deserialize;

use super::env::PeerEnv;
use super::placeholders::{check_placeholders, expand};
use super::process::find_program;
use super::progress::Progress;

/// The adapters shipped with satquic (`peers/adapters.toml`).
pub const BUILTIN_ADAPTERS: &str = include_str!("../../../../peers/adapters.toml");

/// An adapter file (`satquic matrix --adapters FILE`): 1 MiB, the only file this crate
/// reads whole from a path the user names; the built-in one is about 10 KB.
pub const ADAPTER_FILE: satquic_link::file::FileLimit = satquic_link::file::FileLimit {
    what: "adapter file",
    max_bytes: 1 << 20,
};

/// The congestion-control names a matrix may ask for (each adapter maps them to its own).
pub const CC_NAMES: [&str; 3] = ["cubic", "bbr", "newreno"];

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

/// How a client role's download is judged: its `success`, `file` when absent.
pub(super) fn role_success(role: &Role) -> Option<Success> {
    Success::parse(role.success.as_deref().unwrap_or("file")).ok()
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
        let text = satquic_link::file::read_to_string(path, ADAPTER_FILE)
            .map_err(|e| format!("cannot read adapters {}: {}", e.path, e.reason))?;
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
        let qperf =
            AdapterFile::parse(include_str!("../../../../peers/quicly-qperf.toml")).unwrap();
        let client = qperf.get("quicly-qperf").unwrap().client.as_ref().unwrap();
        assert_eq!(
            Progress::of(client),
            Some(Progress::StdoutLines("byteslog:".into()))
        );
        assert_eq!(role_success(client), Some(Success::Progress));
        let picoquic =
            AdapterFile::parse(include_str!("../../../../peers/picoquic-anchor.toml")).unwrap();
        let client = picoquic.get("picoquic").unwrap().client.as_ref().unwrap();
        assert_eq!(role_success(client), Some(Success::File));
        let satquic = AdapterFile::builtin();
        let client = satquic.get("satquic").unwrap().client.as_ref().unwrap();
        assert_eq!(
            Progress::of(client),
            Some(Progress::StdoutJson("/chunks".into()))
        );
    }
}
