//! Kernel TCP through the TUN link: the TCP rows of `satquic matrix` (seed 003's
//! baseline).
//!
//! A TCP variant is data (`[[tcp]]` in `peers/adapters.toml`): the kernel congestion
//! control (`iperf3 -C`), module parameters to set for the run and restore after
//! (`/sys/module/tcp_cubic/parameters/hystart`), and the receiver's and sender's commands.
//! One download ([`run_tcp_cell`]):
//!
//! 1. the parameters are written ([`SysfsGuard`] restores them, also on error);
//! 2. a [`TunLink`] is made with the run's link (namespaces `satq-<pid>-<n>c` and `...s`);
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
//!   sequence number, [`TunOptions::tcp_target_bytes`]); the sender runs with `-t` and is
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
//! 50 ms plus the time `ss` takes; on the 30 ms paths (leo) that is more than an RTT.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde::Deserialize;

use satquic_link::LinkSpec;
use satquic_run::record::{LinkObservation, capacity_point};

use crate::peers::{Running, find_program};
use crate::tun::{TunLink, TunOptions};

/// How often the sender's tcp_info is sampled.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(50);
/// The receiver's port.
pub const PORT: u16 = 5201;

/// Smallest [`TcpAdapter::receive_buffer`]: the namespace's default receive buffer.
const MIN_RECEIVE_BUFFER: u64 = crate::tun::TCP_BUFFER_DEFAULT_BYTES;
/// Largest [`TcpAdapter::receive_buffer`], 1 GiB.
const MAX_RECEIVE_BUFFER: u64 = 1 << 30;

/// The placeholders a TCP variant's commands may use.
const PLACEHOLDERS: [&str; 6] = ["receiver_addr", "port", "cc", "size", "seconds", "dir"];

/// One kernel TCP variant (`[[tcp]]` of the adapter file).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpAdapter {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Programs that must exist.
    #[serde(default)]
    pub requires: Vec<String>,
    /// The kernel's congestion control (`/proc/sys/net/ipv4/tcp_available_congestion_control`).
    pub cc: String,
    /// Files (module parameters) written before the run and restored after.
    #[serde(default)]
    pub sysfs: BTreeMap<String, String>,
    /// How the sender's slow-start exit shows in tcp_info: `ssthresh` (the first finite
    /// ssthresh); absent: the variant has no slow-start exit to classify (BBR).
    #[serde(default)]
    pub exit_signal: Option<String>,
    /// The receiver's largest TCP receive buffer, the top of `net.ipv4.tcp_rmem` in the
    /// client namespace (`"28MB"`, `"32MiB"`): the kernel's auto-tuning grows the
    /// advertised window to a part of it (the rest is its allowance for buffer overhead;
    /// about two thirds on this machine's Linux 6.18). Absent:
    /// [`crate::tun::TCP_BUFFER_MAX_BYTES`], enough never to hold a GEO sender.
    #[serde(default)]
    pub receive_buffer: Option<String>,
    /// Started in the client namespace; must listen on `{port}`.
    pub receiver: Vec<String>,
    /// Started in the server namespace; sends to the receiver for `{seconds}` (the time
    /// cap) or until stopped: the download ends when the link has delivered `{size}`
    /// distinct bytes of it, and the sender is then stopped (SIGTERM).
    pub sender: Vec<String>,
}

impl TcpAdapter {
    pub(crate) fn validate(&self) -> Result<(), String> {
        let ctx = |what: &str| format!("adapters: tcp variant {:?}: {what}", self.name);
        if !crate::peers::valid_name(&self.name) {
            return Err(ctx("name must be lowercase letters, digits, - or _"));
        }
        if self.cc.is_empty() || !self.cc.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(ctx("cc must be a kernel congestion control name"));
        }
        if self.receiver.is_empty() || self.sender.is_empty() {
            return Err(ctx("receiver and sender are commands"));
        }
        self.receive_buffer_bytes().map_err(|e| ctx(&e))?;
        if let Some(s) = &self.exit_signal
            && s != "ssthresh"
        {
            return Err(ctx(&format!("exit_signal {s:?}: expected \"ssthresh\"")));
        }
        for path in self.sysfs.keys() {
            if !path.starts_with("/sys/module/") || path.contains("..") {
                return Err(ctx(&format!("sysfs {path:?} is not under /sys/module/")));
            }
        }
        for text in self.receiver.iter().chain(&self.sender) {
            let mut rest = text.as_str();
            while let Some(open) = rest.find('{') {
                let after = &rest[open + 1..];
                let Some(close) = after.find('}') else {
                    return Err(ctx(&format!("unclosed {{ in {text:?}")));
                };
                if !PLACEHOLDERS.contains(&&after[..close]) {
                    return Err(ctx(&format!(
                        "unknown placeholder {{{}}} in {text:?} (known: {})",
                        &after[..close],
                        PLACEHOLDERS.join(", ")
                    )));
                }
                rest = &after[close + 1..];
            }
        }
        Ok(())
    }

    /// [`Self::receive_buffer`] in bytes, if given.
    pub fn receive_buffer_bytes(&self) -> Result<Option<u64>, String> {
        let Some(text) = &self.receive_buffer else {
            return Ok(None);
        };
        let bytes = satquic_link::units::parse_size(text)
            .map_err(|e| format!("receive_buffer {text:?}: {e}"))?;
        // tcp_rmem's default (middle) value is 128 KiB: the top must not be below it.
        if !(MIN_RECEIVE_BUFFER..=MAX_RECEIVE_BUFFER).contains(&bytes) {
            return Err(format!(
                "receive_buffer {text:?} must be between {MIN_RECEIVE_BUFFER} and {MAX_RECEIVE_BUFFER} bytes"
            ));
        }
        Ok(Some(bytes))
    }

    /// Why the variant cannot run here, or `None`.
    pub fn missing(&self) -> Option<String> {
        if !crate::tun::is_root() {
            return Some("kernel TCP rows need root (network namespaces, TUN)".into());
        }
        if !Path::new("/dev/net/tun").exists() {
            return Some("/dev/net/tun is missing".into());
        }
        for program in self.requires.iter().map(String::as_str).chain(["ip", "ss"]) {
            if find_program(program).is_none() {
                return Some(format!("{program} not found"));
            }
        }
        let available =
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                .unwrap_or_default();
        if !available.split_whitespace().any(|c| c == self.cc) {
            // A module not loaded yet is loaded when a socket asks for it (as root).
            let module = format!("/lib/modules/{}", kernel_release());
            let loadable = Path::new(&format!("/sys/module/tcp_{}", self.cc)).exists()
                || Path::new(&module).exists();
            if !loadable {
                return Some(format!(
                    "the kernel offers no {} ({})",
                    self.cc,
                    available.trim()
                ));
            }
        }
        for path in self.sysfs.keys() {
            if !Path::new(path).exists() {
                return Some(format!(
                    "{path} does not exist (the module or kernel lacks it)"
                ));
            }
        }
        None
    }
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn expand(text: &str, values: &BTreeMap<&str, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in values {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// Module parameters set for a run; the old values are written back when dropped.
pub struct SysfsGuard {
    old: Vec<(PathBuf, String)>,
}

impl SysfsGuard {
    pub fn set(values: &BTreeMap<String, String>) -> Result<SysfsGuard, String> {
        let mut guard = SysfsGuard { old: Vec::new() };
        for (path, value) in values {
            let path = PathBuf::from(path);
            let old = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            std::fs::write(&path, value)
                .map_err(|e| format!("cannot write {} to {}: {e}", value, path.display()))?;
            guard.old.push((path, old.trim().to_string()));
        }
        Ok(guard)
    }
}

impl Drop for SysfsGuard {
    fn drop(&mut self) {
        for (path, old) in self.old.drain(..).rev() {
            let _ = std::fs::write(&path, &old);
        }
    }
}

/// One sample of the sender's tcp_info (`ss -tin`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TcpInfoSample {
    /// Seconds since the sender started.
    pub t_s: f64,
    /// The sender's local port (tells the data connection from iperf3's control one).
    pub port: u16,
    pub mss_bytes: u64,
    pub cwnd_packets: u64,
    /// `None` while it is infinite (slow start has not ended).
    pub ssthresh_packets: Option<u64>,
    pub rtt_ms: Option<f64>,
    /// Total retransmissions (`retrans:a/TOTAL`) and segments now considered lost.
    pub retrans_total: u64,
    pub lost_packets: u64,
    pub bytes_acked: u64,
}

impl TcpInfoSample {
    fn saw_loss(&self) -> bool {
        self.retrans_total > 0 || self.lost_packets > 0
    }
}

/// Parses the sampler's output: `@ EPOCH_SECONDS` lines, each followed by `ss -tinH`'s
/// two lines per socket. `t0` is the sender's start on the wall clock.
pub fn parse_ss(text: &str, t0: SystemTime) -> Vec<TcpInfoSample> {
    let t0 = t0
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let mut out = Vec::new();
    let mut now: Option<f64> = None;
    let mut port: Option<u16> = None;
    for line in text.lines() {
        if let Some(stamp) = line.strip_prefix("@ ") {
            now = stamp.trim().parse::<f64>().ok().map(|t| t - t0);
            port = None;
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // `ESTAB 0 0 LOCAL:PORT PEER:PORT`
            port = line
                .split_whitespace()
                .nth(3)
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok());
            continue;
        }
        let (Some(t), Some(p)) = (now, port) else {
            continue;
        };
        let mut s = TcpInfoSample {
            t_s: t,
            port: p,
            ..TcpInfoSample::default()
        };
        for word in line.split_whitespace() {
            let Some((key, value)) = word.split_once(':') else {
                continue;
            };
            let num = |v: &str| v.parse::<u64>().ok();
            match key {
                "mss" => s.mss_bytes = num(value).unwrap_or(0),
                "cwnd" => s.cwnd_packets = num(value).unwrap_or(0),
                "ssthresh" => s.ssthresh_packets = num(value),
                "rtt" => s.rtt_ms = value.split('/').next().and_then(|v| v.parse().ok()),
                "retrans" => {
                    s.retrans_total = value.rsplit('/').next().and_then(num).unwrap_or(0);
                }
                "lost" => s.lost_packets = num(value).unwrap_or(0),
                "bytes_acked" => s.bytes_acked = num(value).unwrap_or(0),
                _ => {}
            }
        }
        out.push(s);
        port = None;
    }
    out
}

/// The data connection's samples: the port that got the most bytes acknowledged.
pub fn data_connection(samples: &[TcpInfoSample]) -> Vec<TcpInfoSample> {
    let mut acked: BTreeMap<u16, u64> = BTreeMap::new();
    for s in samples {
        let e = acked.entry(s.port).or_default();
        *e = (*e).max(s.bytes_acked);
    }
    let Some((&port, _)) = acked.iter().max_by_key(|(_, b)| **b) else {
        return Vec::new();
    };
    samples.iter().filter(|s| s.port == port).copied().collect()
}

/// The slow-start exit and first loss a tcp_info trace shows (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TraceExit {
    pub exit_at_s: Option<f64>,
    pub exit_by_loss: bool,
    /// cwnd (bytes) of the sample before the exit and ssthresh (bytes) at the exit.
    pub cwnd_before_bytes: Option<u64>,
    pub ssthresh_bytes: Option<u64>,
    pub rtt_at_exit_ms: Option<f64>,
    pub first_loss_at_s: Option<f64>,
}

pub fn trace_exit(samples: &[TcpInfoSample], exit_signal: bool) -> TraceExit {
    let mut e = TraceExit {
        first_loss_at_s: samples.iter().find(|s| s.saw_loss()).map(|s| s.t_s),
        ..TraceExit::default()
    };
    if !exit_signal {
        return e;
    }
    if let Some(i) = samples.iter().position(|s| s.ssthresh_packets.is_some()) {
        let s = samples[i];
        e.exit_at_s = Some(s.t_s);
        e.exit_by_loss = s.saw_loss();
        e.ssthresh_bytes = s.ssthresh_packets.map(|p| p * s.mss_bytes);
        e.rtt_at_exit_ms = s.rtt_ms;
        let before = if i > 0 { samples[i - 1] } else { s };
        e.cwnd_before_bytes = Some(before.cwnd_packets.max(s.cwnd_packets) * s.mss_bytes);
    }
    e
}

/// One TCP download through the TUN link.
pub struct TcpCell<'a> {
    pub adapter: &'a TcpAdapter,
    pub link: LinkSpec,
    pub seed: u64,
    pub size_bytes: u64,
    /// The run's directory (logs, tcp_info).
    pub dir: PathBuf,
    pub time_cap: Duration,
    /// A sender cap in front of the link ([`crate::model`]).
    pub sender_cap: Option<satquic_run::scenario::ShaperSpec>,
}

/// What a TCP download measured; times in seconds from the sender's start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpOutcome {
    /// `completed`, `failed` or `timeout` (as the QUIC cells).
    pub status: String,
    pub reason: String,
    pub completion_s: Option<f64>,
    /// Distinct payload bytes the link delivered on the data connection.
    pub delivered_bytes: Option<u64>,
    /// `mb_times_s[k]`: when the link had delivered k+1 MB of it (the highest sequence
    /// offset reached), seconds from the sender's start.
    pub mb_times_s: Vec<f64>,
    pub exit: TraceExit,
    pub capacity_at_s: Option<f64>,
    pub capacity_source: Option<String>,
    pub min_rtt_s: Option<f64>,
    /// (t_s, RTT - min RTT) of the data connection, for the latency-offset heuristic.
    pub rtt_offsets: Vec<(f64, f64)>,
    pub max_queue_bytes: Option<u64>,
    pub drops_congestion: Option<u64>,
    pub drops_random: Option<u64>,
    pub retransmits: Option<u64>,
    pub samples: usize,
    /// The variant has a slow-start exit to classify (its `exit_signal`).
    pub exit_signal: bool,
}

impl TcpOutcome {
    fn failed(reason: impl Into<String>) -> Self {
        TcpOutcome {
            status: "failed".into(),
            reason: reason.into(),
            ..TcpOutcome::default()
        }
    }
}

static CELL_COUNTER: AtomicU32 = AtomicU32::new(0);

/// Removes the namespaces of TCP cells whose process is gone (a matrix killed mid-run
/// leaves them: `satq-<pid>-<n>c` and `...s`).
fn remove_stale_namespaces() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("satq-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let ours = name.ends_with('c') || name.ends_with('s');
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", &name]).output();
        }
    }
}

/// Runs one TCP download; never panics, every failure is the outcome's reason.
pub fn run_tcp_cell(cell: &TcpCell) -> TcpOutcome {
    if let Some(why) = cell.adapter.missing() {
        return TcpOutcome::failed(why);
    }
    remove_stale_namespaces();
    match run_inner(cell) {
        Ok(o) => o,
        Err(e) => TcpOutcome::failed(e),
    }
}

fn spawn_in(ns: &str, argv: &[String], out: &Path, err: &Path) -> Result<Running, String> {
    let file = |p: &Path| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    let child = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .stdin(Stdio::null())
        .stdout(file(out)?)
        .stderr(file(err)?)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", argv.join(" ")))?;
    Ok(Running {
        child,
        what: "tcp process",
    })
}

fn listening(ns: &str, port: u16) -> bool {
    Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-Hltn"])
        .arg(format!("sport = :{port}"))
        .output()
        .is_ok_and(|o| !o.stdout.is_empty())
}

fn run_inner(cell: &TcpCell) -> Result<TcpOutcome, String> {
    let a = cell.adapter;
    std::fs::create_dir_all(&cell.dir).map_err(|e| format!("{}: {e}", cell.dir.display()))?;
    let _sysfs = SysfsGuard::set(&a.sysfs)?;
    let n = CELL_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tag = format!("satq-{}-{n}", std::process::id());
    let mut options = TunOptions::new(Some(cell.link.clone()));
    options.seed = cell.seed;
    options.sender_cap = cell.sender_cap.clone();
    options.client_ns = format!("{tag}c");
    options.server_ns = format!("{tag}s");
    options.occupancy_resolution = Duration::from_millis(10);
    options.tcp_target_bytes = Some(cell.size_bytes);
    if let Some(bytes) = a.receive_buffer_bytes()? {
        options.client_receive_buffer = bytes;
    }
    let tun = TunLink::start(options.clone()).map_err(|e| e.to_string())?;
    let values: BTreeMap<&str, String> = [
        ("receiver_addr", options.client_addr.to_string()),
        ("port", PORT.to_string()),
        ("cc", a.cc.clone()),
        ("size", cell.size_bytes.to_string()),
        ("seconds", cell.time_cap.as_secs().max(1).to_string()),
        ("dir", cell.dir.display().to_string()),
    ]
    .into_iter()
    .collect();
    let argv = |words: &[String]| words.iter().map(|w| expand(w, &values)).collect::<Vec<_>>();
    let (receiver_argv, sender_argv) = (argv(&a.receiver), argv(&a.sender));
    let mut commands = String::new();
    let _ = writeln!(
        commands,
        "# satquic link --tun --link {} --seed {} --client-ns {} --server-ns {}",
        cell.link.name, cell.seed, options.client_ns, options.server_ns
    );
    for (k, v) in &a.sysfs {
        let _ = writeln!(commands, "echo {v} > {k}");
    }
    let _ = writeln!(
        commands,
        "ip netns exec {} {}",
        options.client_ns,
        receiver_argv.join(" ")
    );
    let _ = writeln!(
        commands,
        "ip netns exec {} {}",
        options.server_ns,
        sender_argv.join(" ")
    );
    let _ = std::fs::write(cell.dir.join("commands.txt"), commands);

    let mut receiver = spawn_in(
        &options.client_ns,
        &receiver_argv,
        &cell.dir.join("receiver.log"),
        &cell.dir.join("receiver.err"),
    )?;
    let ready_by = Instant::now() + Duration::from_secs(10);
    while !listening(&options.client_ns, PORT) {
        if receiver.exited().is_some() || Instant::now() > ready_by {
            return Err(format!(
                "the receiver ({}) did not listen on port {PORT}: {}",
                receiver_argv.join(" "),
                first_line(&cell.dir.join("receiver.err"))
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let sampler_script = format!(
        "while :; do echo \"@ $(date +%s.%N)\"; ss -tinH dst {}; sleep {}; done",
        options.client_addr,
        SAMPLE_INTERVAL.as_secs_f64()
    );
    let sampler = spawn_in(
        &options.server_ns,
        &["sh".into(), "-c".into(), sampler_script],
        &cell.dir.join("tcp_info.txt"),
        &cell.dir.join("sampler.err"),
    )?;
    let t0_wall = SystemTime::now();
    let t0 = tun.epoch().elapsed();
    let started = Instant::now();
    let mut sender = spawn_in(
        &options.server_ns,
        &sender_argv,
        &cell.dir.join("sender.json"),
        &cell.dir.join("sender.err"),
    )?;
    // Until the link has delivered the bytes, the sender gives up, or the cap.
    let (reached, status) = loop {
        if let Some(t) = tun.tcp_target_reached() {
            break (Some(t), None);
        }
        if let Some(s) = sender.exited() {
            // The last packets may still be on their way through the model.
            std::thread::sleep(Duration::from_millis(20));
            break (tun.tcp_target_reached(), Some(s));
        }
        if started.elapsed() > cell.time_cap {
            break (None, None);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    drop(sampler);
    drop(sender);
    drop(receiver);
    let mut stopped = tun.stop();

    let text = std::fs::read_to_string(cell.dir.join("tcp_info.txt")).unwrap_or_default();
    let all = parse_ss(&text, t0_wall);
    let samples = data_connection(&all);
    write_csv(&cell.dir.join("tcp_info.csv"), &samples);
    let exit = trace_exit(&samples, a.exit_signal.is_some());
    let min_rtt_ms = samples
        .iter()
        .filter_map(|s| s.rtt_ms)
        .fold(f64::INFINITY, f64::min);
    let min_rtt_s = min_rtt_ms.is_finite().then_some(min_rtt_ms / 1e3);
    let rtt_offsets = match min_rtt_s {
        Some(min) => samples
            .iter()
            .filter_map(|s| s.rtt_ms.map(|r| (s.t_s, r / 1e3 - min)))
            .collect(),
        None => Vec::new(),
    };

    let mut outcome = TcpOutcome {
        exit,
        min_rtt_s,
        rtt_offsets,
        samples: samples.len(),
        exit_signal: a.exit_signal.is_some(),
        retransmits: samples.last().map(|s| s.retrans_total),
        ..TcpOutcome::default()
    };
    let data = stopped.tcp_down.first().cloned();
    if let Some(d) = &data {
        outcome.delivered_bytes = Some(d.delivered_bytes);
        outcome.mb_times_s = d
            .mb_times
            .iter()
            .map(|t| t.saturating_sub(t0).as_secs_f64())
            .collect();
    }
    if let Some(path) = stopped.path.as_mut() {
        let end = path.down.now().max(path.up.now());
        let truth = path.down.finish(end).clone();
        let busy_at_exit = exit.exit_at_s.and_then(|x| {
            let exit_link = t0 + Duration::from_secs_f64(x.max(0.0));
            busy_since(&truth, exit_link).map(|b| b.saturating_sub(t0))
        });
        let obs = LinkObservation {
            truth: &truth,
            down: path.down.stats(),
            up: path.up.stats(),
            epoch: t0,
        };
        let (capacity, source) = capacity_point(&obs, busy_at_exit);
        outcome.capacity_at_s = capacity.map(|c| c.as_secs_f64());
        outcome.capacity_source = source.map(str::to_string);
        outcome.max_queue_bytes = truth.occupancy().bins().iter().map(|b| b.max_bytes).max();
        let stats = path.down.stats();
        let (mut congestion, mut random) = (0, 0);
        for r in satquic_link::DropReason::ALL {
            let n = stats.dropped(r).packets;
            if r.is_congestion() {
                congestion += n;
            } else {
                random += n;
            }
        }
        outcome.drops_congestion = Some(congestion);
        outcome.drops_random = Some(random);
    }
    match (reached, status) {
        (Some(t), _) => {
            outcome.status = "completed".into();
            outcome.completion_s = Some(t.saturating_sub(t0).as_secs_f64());
        }
        (None, None) => {
            outcome.status = "timeout".into();
            outcome.reason = format!(
                "{} of {} bytes after {} s",
                data.map_or(0, |d| d.delivered_bytes),
                cell.size_bytes,
                cell.time_cap.as_secs_f64()
            );
        }
        (None, Some(s)) => {
            outcome.status = "failed".into();
            outcome.reason = format!(
                "the sender exited ({}) with {} of {} bytes delivered: {}",
                s.code()
                    .map_or("by signal".into(), |c| format!("status {c}")),
                data.map_or(0, |d| d.delivered_bytes),
                cell.size_bytes,
                first_line(&cell.dir.join("sender.err"))
            );
        }
    }
    Ok(outcome)
}

/// Start of the busy period in progress at `at` on the link's clock, from the occupancy
/// bins (their resolution); `None` if the queue was empty then.
fn busy_since(truth: &satquic_link::GroundTruth, at: Duration) -> Option<Duration> {
    let bins = truth.occupancy().bins();
    let i = bins.partition_point(|b| b.start <= at);
    if i == 0 || bins[i - 1].end_bytes == 0 {
        return None;
    }
    let empty_before = bins[..i - 1].iter().rposition(|b| b.end_bytes == 0);
    Some(match empty_before {
        Some(j) => bins[j + 1].start,
        None => bins[0].start,
    })
}

fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

fn write_csv(path: &Path, samples: &[TcpInfoSample]) {
    let mut text = String::from(
        "t_s,port,mss_bytes,cwnd_packets,ssthresh_packets,rtt_ms,retrans_total,lost_packets,bytes_acked\n",
    );
    for s in samples {
        let _ = writeln!(
            text,
            "{:.3},{},{},{},{},{},{},{},{}",
            s.t_s,
            s.port,
            s.mss_bytes,
            s.cwnd_packets,
            s.ssthresh_packets.map_or(String::new(), |v| v.to_string()),
            s.rtt_ms.map_or(String::new(), |v| v.to_string()),
            s.retrans_total,
            s.lost_packets,
            s.bytes_acked
        );
    }
    let _ = std::fs::write(path, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SS: &str = "@ 100.000
ESTAB 0 0 10.199.0.2:5201 10.199.0.1:40000
\t cubic wscale:7,7 rto:804 rtt:601.5/0.75 mss:1448 cwnd:10 bytes_acked:1 retrans:0/0
ESTAB 0 0 10.199.0.2:40002 10.199.0.1:5201
\t cubic wscale:7,7 rto:804 rtt:600.2/0.1 mss:1448 cwnd:40 bytes_acked:50000
@ 100.050
ESTAB 0 0 10.199.0.2:40002 10.199.0.1:5201
\t cubic wscale:7,7 rto:804 rtt:650.1/2 mss:1448 cwnd:80 ssthresh:80 bytes_acked:90000
@ 100.100
ESTAB 0 0 10.199.0.2:40002 10.199.0.1:5201
\t cubic rtt:700/2 mss:1448 cwnd:60 ssthresh:56 bytes_acked:99000 retrans:1/3 lost:2
";

    #[test]
    fn ss_samples_parse_and_the_data_connection_is_found() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let all = parse_ss(SS, t0);
        assert_eq!(all.len(), 4);
        let data = data_connection(&all);
        assert_eq!(data.len(), 3);
        assert_eq!(data[0].port, 40002);
        assert_eq!(data[1].ssthresh_packets, Some(80));
        assert!((data[1].t_s - 0.05).abs() < 1e-9);
        assert_eq!((data[2].retrans_total, data[2].lost_packets), (3, 2));
        assert_eq!(data[0].rtt_ms, Some(600.2));
    }

    #[test]
    fn exit_is_the_first_finite_ssthresh_and_loss_makes_it_late() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let data = data_connection(&parse_ss(SS, t0));
        let e = trace_exit(&data, true);
        assert_eq!(e.exit_at_s.map(|t| (t * 1e3).round()), Some(50.0));
        assert!(!e.exit_by_loss);
        assert_eq!(e.ssthresh_bytes, Some(80 * 1448));
        assert_eq!(e.cwnd_before_bytes, Some(80 * 1448));
        assert_eq!(e.first_loss_at_s.map(|t| (t * 1e3).round()), Some(100.0));
        // Without an exit signal (BBR): no exit, the loss still counts.
        let e = trace_exit(&data, false);
        assert_eq!(e.exit_at_s, None);
        assert!(e.first_loss_at_s.is_some());
    }

    #[test]
    fn adapters_are_checked() {
        let ok = TcpAdapter {
            name: "tcp-cubic".into(),
            description: String::new(),
            requires: vec!["iperf3".into()],
            cc: "cubic".into(),
            sysfs: BTreeMap::new(),
            exit_signal: Some("ssthresh".into()),
            receive_buffer: None,
            receiver: vec!["iperf3".into(), "-s".into()],
            sender: vec!["iperf3".into(), "-c".into(), "{receiver_addr}".into()],
        };
        assert!(ok.validate().is_ok());
        let mut bad = ok.clone();
        bad.sender.push("{nope}".into());
        assert!(bad.validate().unwrap_err().contains("{nope}"));
        let mut bad = ok.clone();
        bad.sysfs.insert("/etc/passwd".into(), "1".into());
        assert!(bad.validate().is_err());
        let mut bad = ok.clone();
        bad.exit_signal = Some("cwnd".into());
        assert!(bad.validate().is_err());
        let mut window = ok;
        window.receive_buffer = Some("32MiB".into());
        assert!(window.validate().is_ok());
        assert_eq!(window.receive_buffer_bytes(), Ok(Some(32 << 20)));
        for bad in ["lots", "1kB", "2GiB"] {
            window.receive_buffer = Some(bad.into());
            let e = window.validate().unwrap_err();
            assert!(
                e.contains("receive_buffer") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }
}
