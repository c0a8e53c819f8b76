//! The cell runner: one client x server download through `satquic link`, as a list of
//! steps (directories, ports, command lines, the three processes, the verdict).
//!
//! Each process is a separate program, so the runner's only handles on them are their
//! ports, their exit and what they write: it starts the server and waits for its port,
//! the link likewise, then the client, which it times from its start and polls for
//! progress until it exits or the time cap passes. Every process is stopped before a
//! cell returns, whatever happened ([`Running`] stops on drop).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::adapter::{Adapter, Role, Success, role_success};
use super::env::PeerEnv;
use super::outcome::{CellOutcome, ClientEnd, LinkTotals, judge};
use super::pair::PairPlan;
use super::placeholders::{expand, role_command};
use super::ports::{free_udp_port, wait_ready};
use super::process::{Running, spawn, trim_log};
use super::progress::{PROGRESS_POLL, ProgressReader};

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
    /// `satquic link --sender-cap` (`RATE[:LATENCY]`): a sender cap in front of the link.
    pub sender_cap: Option<String>,
}

/// The address every process of a cell uses: the server, the link and the client all run
/// on this machine's loopback.
const HOST: &str = "127.0.0.1";

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

/// The steps of [`run_cell`]: prepare the run's directory, ports and command lines, then
/// run the three processes; once they ran, the download goes and the logs are trimmed.
fn run_cell_inner(cell: &Cell) -> Result<CellOutcome, String> {
    let (Some(server_role), Some(client_role)) = (&cell.server.server, &cell.client.client) else {
        return Err("the pair lacks a server or a client".into());
    };
    let paths = CellPaths::new(&cell.dir);
    paths.make(cell.qlog)?;
    let ports = CellPorts::pick()?;
    let values = RoleValues::new(cell, &paths, ports);
    write_role_files(server_role, &paths.server_dir, &values.server)?;
    write_role_files(client_role, &paths.client_dir, &values.client)?;
    let commands = CellCommands::new(cell, server_role, client_role, &values, ports, &paths);
    let _ = std::fs::write(cell.dir.join("commands.txt"), commands.describe());
    let result = supervise(cell, client_role, &paths, ports, &commands);
    let _ = std::fs::remove_dir_all(&paths.download);
    for log in paths.logs() {
        trim_log(log);
    }
    result
}

/// Where a cell keeps what it runs and what its processes leave, under `cell.dir`.
pub(super) struct CellPaths {
    /// Each role's working directory (its `files` are written there).
    pub(super) server_dir: PathBuf,
    pub(super) client_dir: PathBuf,
    /// Where the client saves the download (deleted once measured).
    pub(super) download: PathBuf,
    /// `server/` and `client/` qlog directories below it, with `--qlog`.
    pub(super) qlog: PathBuf,
    pub(super) server_log: PathBuf,
    pub(super) relay_log: PathBuf,
    /// The client's stderr and its stdout.
    pub(super) client_log: PathBuf,
    pub(super) client_out: PathBuf,
    /// `satquic link --summary-json`.
    pub(super) relay_summary: PathBuf,
    /// `satquic link --flows-json`: each flow's books (its queueing delay).
    pub(super) relay_flows: PathBuf,
}

impl CellPaths {
    fn new(dir: &Path) -> Self {
        CellPaths {
            server_dir: dir.join("server"),
            client_dir: dir.join("client"),
            download: dir.join("download"),
            qlog: dir.join("qlog"),
            server_log: dir.join("server.log"),
            relay_log: dir.join("relay.log"),
            client_log: dir.join("client.log"),
            client_out: dir.join("client.out"),
            relay_summary: dir.join("relay.json"),
            relay_flows: dir.join("relay-flows.json"),
        }
    }

    /// Makes the directories the processes need.
    fn make(&self, qlog: bool) -> Result<(), String> {
        let mkdir = |p: &Path| {
            std::fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()))
        };
        for d in [&self.server_dir, &self.client_dir, &self.download] {
            mkdir(d)?;
        }
        if qlog {
            // One directory per side: some implementations name their qlog after the
            // original destination connection ID, which both sides share.
            mkdir(&self.qlog.join("server"))?;
            mkdir(&self.qlog.join("client"))?;
        }
        Ok(())
    }

    fn logs(&self) -> [&PathBuf; 4] {
        [
            &self.server_log,
            &self.relay_log,
            &self.client_log,
            &self.client_out,
        ]
    }
}

/// The server's port and the link's (where the client sends).
#[derive(Debug, Clone, Copy)]
struct CellPorts {
    server: u16,
    link: u16,
}

impl CellPorts {
    fn pick() -> Result<Self, String> {
        let server = free_udp_port().map_err(|e| format!("no free UDP port: {e}"))?;
        let link = loop {
            let p = free_udp_port().map_err(|e| format!("no free UDP port: {e}"))?;
            if p != server {
                break p;
            }
        };
        Ok(CellPorts { server, link })
    }
}

/// Each role's placeholder values.
struct RoleValues {
    server: BTreeMap<&'static str, String>,
    client: BTreeMap<&'static str, String>,
}

impl RoleValues {
    fn new(cell: &Cell, paths: &CellPaths, ports: CellPorts) -> Self {
        let shared = cell_values(cell, paths);
        let (server_dir, client_dir) = (&paths.server_dir, &paths.client_dir);
        RoleValues {
            server: role_values(cell, paths, &shared, "server", ports.server, server_dir),
            client: role_values(cell, paths, &shared, "client", ports.link, client_dir),
        }
    }
}

/// The placeholder values both roles share.
fn cell_values(cell: &Cell, paths: &CellPaths) -> BTreeMap<&'static str, String> {
    let mut values = PeerEnv::base_values(cell.env);
    values.extend([
        ("host", HOST.to_string()),
        ("www", cell.www.display().to_string()),
        ("file", cell.file.clone()),
        ("size", cell.size_bytes.to_string()),
        ("cert", cell.cert.display().to_string()),
        ("key", cell.key.display().to_string()),
        ("download", paths.download.display().to_string()),
        ("alpn", cell.plan.alpn.clone()),
    ]);
    values
}

/// One role's values: the shared ones, and its side's port (the link's for the client),
/// directory, key log and qlog directory.
fn role_values(
    cell: &Cell,
    paths: &CellPaths,
    shared: &BTreeMap<&'static str, String>,
    side: &str,
    port: u16,
    dir: &Path,
) -> BTreeMap<&'static str, String> {
    let mut v = shared.clone();
    v.insert("qlogdir", paths.qlog.join(side).display().to_string());
    v.insert("port", port.to_string());
    v.insert("addr", format!("{HOST}:{port}"));
    v.insert("url", format!("https://{HOST}:{port}/{}", cell.file));
    v.insert("dir", dir.display().to_string());
    let keylog = format!("{side}-keys.log");
    v.insert("keylog", cell.dir.join(keylog).display().to_string());
    v
}

/// Writes a role's `files` into its directory, placeholders filled in.
fn write_role_files(
    role: &Role,
    dir: &Path,
    values: &BTreeMap<&'static str, String>,
) -> Result<(), String> {
    for (name, template) in &role.files {
        std::fs::write(dir.join(name), expand(template, values))
            .map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    Ok(())
}

/// `satquic link` from the client's port to the server's, with the cell's link, seed and
/// sender cap, writing its summary and each flow's books for [`LinkTotals`] (the books
/// grow by about 50 bytes a packet: a few MB for a cell's download).
fn relay_command(cell: &Cell, ports: CellPorts, paths: &CellPaths) -> Vec<String> {
    let mut relay_cmd: Vec<String> = [
        cell.env.satquic.display().to_string(),
        "link".into(),
        "--listen".into(),
        format!("{HOST}:{}", ports.link),
        "--to".into(),
        format!("{HOST}:{}", ports.server),
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
    relay_cmd.extend([
        "--summary-json".into(),
        paths.relay_summary.display().to_string(),
        "--flows-json".into(),
        paths.relay_flows.display().to_string(),
    ]);
    relay_cmd
}

/// A process to start: its words and environment.
struct Launch {
    words: Vec<String>,
    env: Vec<(String, String)>,
}

impl Launch {
    /// A role's command with its values, its side's cc (if any) and `--qlog`.
    fn of(
        role: &Role,
        values: &BTreeMap<&'static str, String>,
        cc: Option<&str>,
        qlog: bool,
    ) -> Self {
        let (words, env) = role_command(role, values, cc, qlog);
        Launch { words, env }
    }

    /// As a shell would show it: `VAR=value ... command`.
    fn show(&self) -> String {
        self.env
            .iter()
            .map(|(k, v)| format!("{k}={v} "))
            .chain(std::iter::once(self.words.join(" ")))
            .collect::<String>()
    }

    /// Starts it in `cwd`, its output into `stdout` and `stderr`.
    fn start(
        &self,
        what: &'static str,
        cwd: &Path,
        stdout: &Path,
        stderr: &Path,
    ) -> Result<Running, String> {
        spawn(what, &self.words, &self.env, cwd, stdout, stderr)
    }

    /// Starts it with its output into `log`, and waits until it listens on UDP `port`.
    fn start_listening(
        &self,
        what: &'static str,
        cwd: &Path,
        log: &Path,
        port: u16,
    ) -> Result<Running, String> {
        let mut process = self.start(what, cwd, log, log)?;
        wait_ready(&mut process, port, log)?;
        Ok(process)
    }
}

/// The three processes of a cell.
struct CellCommands {
    server: Launch,
    relay: Launch,
    client: Launch,
}

impl CellCommands {
    /// Each role's command with its values and its side's cc, and the link between them.
    fn new(
        cell: &Cell,
        server_role: &Role,
        client_role: &Role,
        values: &RoleValues,
        ports: CellPorts,
        paths: &CellPaths,
    ) -> Self {
        let plan = &cell.plan;
        CellCommands {
            server: Launch::of(
                server_role,
                &values.server,
                plan.server_cc.as_deref(),
                cell.qlog,
            ),
            relay: Launch {
                words: relay_command(cell, ports, paths),
                env: Vec::new(),
            },
            client: Launch::of(
                client_role,
                &values.client,
                plan.client_cc.as_deref(),
                cell.qlog,
            ),
        }
    }

    /// `commands.txt`: what ran, to rerun a cell by hand.
    fn describe(&self) -> String {
        format!(
            "server: {}\nrelay: {}\nclient: {}\n",
            self.server.show(),
            self.relay.show(),
            self.client.show()
        )
    }
}

/// Starts the server and the link in front of it, each once the one before listens, then
/// the client; watches the client to its end, stops all three and judges the download.
fn supervise(
    cell: &Cell,
    client_role: &Role,
    paths: &CellPaths,
    ports: CellPorts,
    commands: &CellCommands,
) -> Result<CellOutcome, String> {
    let (server_dir, server_log) = (&paths.server_dir, &paths.server_log);
    let mut server =
        commands
            .server
            .start_listening("server", server_dir, server_log, ports.server)?;
    let relay =
        commands
            .relay
            .start_listening("satquic link", &cell.dir, &paths.relay_log, ports.link)?;
    let started = Instant::now();
    let started_unix_ms = crate::unix_ms(std::time::SystemTime::now());
    let (client_dir, client_out) = (&paths.client_dir, &paths.client_out);
    let mut client = commands
        .client
        .start("client", client_dir, client_out, &paths.client_log)?;
    let download_file = paths.download.join(&cell.file);
    let mut reader = ProgressReader::new(
        client_role,
        download_file,
        client_out.clone(),
        started,
        started_unix_ms,
    );
    let judged_by_progress = role_success(client_role) == Some(Success::Progress);
    let status = watch_client(&mut client, &mut reader, cell, started, judged_by_progress);
    let elapsed = started.elapsed();
    drop(client);
    reader.read(Some(elapsed.as_secs_f64()));
    let server_alive = server.exited().is_none();
    drop(relay);
    drop(server);
    let link = std::fs::read_to_string(&paths.relay_summary)
        .ok()
        .and_then(|t| LinkTotals::from_summary(&t, started_unix_ms))
        .map(|l| LinkTotals {
            queue_delay: std::fs::read_to_string(&paths.relay_flows)
                .ok()
                .and_then(|t| LinkTotals::queue_delay_from_flows(&t)),
            ..l
        });
    let end = ClientEnd {
        status,
        elapsed,
        progress: reader.into_log(),
        server_alive,
        link,
    };
    Ok(judge(cell, client_role, paths, end))
}

/// Polls the client every [`PROGRESS_POLL`], reading its progress, until it exits, the
/// time cap passes (`None`) or, for a client judged by its progress, that progress shows
/// every byte.
fn watch_client(
    client: &mut Running,
    reader: &mut ProgressReader,
    cell: &Cell,
    started: Instant,
    judged_by_progress: bool,
) -> Option<String> {
    loop {
        if let Some(status) = client.exited() {
            return Some(status.to_string());
        }
        if started.elapsed() >= cell.time_cap {
            return None;
        }
        reader.read(None);
        // A client that counts a stream stops once it has every byte; the link's
        // totals then end there too (qperf's server streams on until the client
        // closes, and its client lingers for seconds).
        if judged_by_progress && reader.log().max_bytes >= cell.size_bytes {
            return Some("stopped once its progress showed every byte".into());
        }
        std::thread::sleep(PROGRESS_POLL);
    }
}
