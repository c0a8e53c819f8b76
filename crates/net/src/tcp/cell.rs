//! The TCP cell runner: one kernel TCP download through the TUN link, as the steps the
//! [module docs](super) list, and its outcome.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use satquic_link::LinkSpec;
use satquic_run::record::{LinkObservation, capacity_point};

use super::TraceExit;
use super::adapter::{TcpAdapter, expand};
use super::sysfs::SysfsGuard;
use super::tcp_info::{TcpInfoSample, data_connection, parse_ss, trace_exit, write_csv};
use crate::peers::Running;
use crate::tun::{TunLink, TunOptions};

/// How often the sender's tcp_info is sampled.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(50);
/// The receiver's port.
pub const PORT: u16 = 5201;

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

/// Starts `argv` in namespace `ns`, its output into files.
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

/// Whether something listens on TCP `port` in namespace `ns`.
fn listening(ns: &str, port: u16) -> bool {
    Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-Hltn"])
        .arg(format!("sport = :{port}"))
        .output()
        .is_ok_and(|o| !o.stdout.is_empty())
}

/// The steps of one download (the module docs' list): the variant's parameters, the TUN
/// link, the receiver, the sampler and the sender; then, once the link has delivered the
/// bytes (or the sender gave up, or the cap passed), everything stopped and the outcome
/// read from the samples and the link's ground truth.
fn run_inner(cell: &TcpCell) -> Result<TcpOutcome, String> {
    let a = cell.adapter;
    std::fs::create_dir_all(&cell.dir).map_err(|e| format!("{}: {e}", cell.dir.display()))?;
    let _sysfs = SysfsGuard::set(&a.sysfs)?;
    let options = tun_options(cell)?;
    let tun = TunLink::start(options.clone()).map_err(|e| e.to_string())?;
    let (receiver_argv, sender_argv) = commands(cell, &options);
    write_commands(cell, &options, &receiver_argv, &sender_argv);

    let receiver = start_receiver(cell, &options, &receiver_argv)?;
    let sampler = start_sampler(cell, &options)?;
    let t0_wall = SystemTime::now();
    let t0 = tun.epoch().elapsed();
    let started = Instant::now();
    let mut sender = spawn_in(
        &options.server_ns,
        &sender_argv,
        &cell.dir.join("sender.json"),
        &cell.dir.join("sender.err"),
    )?;
    let (reached, status) = wait_for_download(&tun, &mut sender, cell.time_cap, started);
    drop(sampler);
    drop(sender);
    drop(receiver);
    let mut stopped = tun.stop();

    let text = std::fs::read_to_string(cell.dir.join("tcp_info.txt")).unwrap_or_default();
    let samples = data_connection(&parse_ss(&text, t0_wall));
    write_csv(&cell.dir.join("tcp_info.csv"), &samples);
    let mut outcome = outcome_of_samples(&samples, a.exit_signal.is_some());
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
        add_link_truth(&mut outcome, path, t0);
    }
    let delivered = data.map_or(0, |d| d.delivered_bytes);
    set_status(&mut outcome, cell, reached, status, delivered, t0);
    Ok(outcome)
}

/// The TUN link of a cell: its link, seed and sender cap, namespaces of its own
/// (`satq-<pid>-<n>c` and `...s`), the download's size as the target and the variant's
/// receive buffer.
fn tun_options(cell: &TcpCell) -> Result<TunOptions, String> {
    let n = CELL_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tag = format!("satq-{}-{n}", std::process::id());
    let mut options = TunOptions::new(Some(cell.link.clone()));
    options.seed = cell.seed;
    options.sender_cap = cell.sender_cap.clone();
    options.client_ns = format!("{tag}c");
    options.server_ns = format!("{tag}s");
    options.occupancy_resolution = Duration::from_millis(10);
    options.tcp_target_bytes = Some(cell.size_bytes);
    if let Some(bytes) = cell.adapter.receive_buffer_bytes()? {
        options.client_receive_buffer = bytes;
    }
    Ok(options)
}

/// The receiver's and the sender's command lines, placeholders filled in.
fn commands(cell: &TcpCell, options: &TunOptions) -> (Vec<String>, Vec<String>) {
    let a = cell.adapter;
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
    (argv(&a.receiver), argv(&a.sender))
}

/// `commands.txt`: the link, the parameters and both commands, to rerun a cell by hand.
fn write_commands(cell: &TcpCell, options: &TunOptions, receiver: &[String], sender: &[String]) {
    let mut commands = String::new();
    let _ = writeln!(
        commands,
        "# satquic link --tun --link {} --seed {} --client-ns {} --server-ns {}",
        cell.link.name, cell.seed, options.client_ns, options.server_ns
    );
    for (k, v) in &cell.adapter.sysfs {
        let _ = writeln!(commands, "echo {v} > {k}");
    }
    let _ = writeln!(
        commands,
        "ip netns exec {} {}",
        options.client_ns,
        receiver.join(" ")
    );
    let _ = writeln!(
        commands,
        "ip netns exec {} {}",
        options.server_ns,
        sender.join(" ")
    );
    let _ = std::fs::write(cell.dir.join("commands.txt"), commands);
}

/// Starts the receiver in the client namespace and waits (10 s at most) until its port
/// listens.
fn start_receiver(
    cell: &TcpCell,
    options: &TunOptions,
    argv: &[String],
) -> Result<Running, String> {
    let mut receiver = spawn_in(
        &options.client_ns,
        argv,
        &cell.dir.join("receiver.log"),
        &cell.dir.join("receiver.err"),
    )?;
    let ready_by = Instant::now() + Duration::from_secs(10);
    while !listening(&options.client_ns, PORT) {
        if receiver.exited().is_some() || Instant::now() > ready_by {
            return Err(format!(
                "the receiver ({}) did not listen on port {PORT}: {}",
                argv.join(" "),
                first_line(&cell.dir.join("receiver.err"))
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(receiver)
}

/// Starts the sampler in the server namespace: `ss -tinH` every [`SAMPLE_INTERVAL`],
/// each stamped with the wall clock, into `tcp_info.txt`.
fn start_sampler(cell: &TcpCell, options: &TunOptions) -> Result<Running, String> {
    let sampler_script = format!(
        "while :; do echo \"@ $(date +%s.%N)\"; ss -tinH dst {}; sleep {}; done",
        options.client_addr,
        SAMPLE_INTERVAL.as_secs_f64()
    );
    spawn_in(
        &options.server_ns,
        &["sh".into(), "-c".into(), sampler_script],
        &cell.dir.join("tcp_info.txt"),
        &cell.dir.join("sampler.err"),
    )
}

/// Waits until the link has delivered the bytes (when, on the link's clock), the sender
/// exits (its status) or the time cap passes (neither).
fn wait_for_download(
    tun: &TunLink,
    sender: &mut Running,
    time_cap: Duration,
    started: Instant,
) -> (Option<Duration>, Option<ExitStatus>) {
    loop {
        if let Some(t) = tun.tcp_target_reached() {
            return (Some(t), None);
        }
        if let Some(s) = sender.exited() {
            // The last packets may still be on their way through the model.
            std::thread::sleep(Duration::from_millis(20));
            return (tun.tcp_target_reached(), Some(s));
        }
        if started.elapsed() > time_cap {
            return (None, None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What the data connection's tcp_info samples say: the exit, the RTTs, the
/// retransmissions.
fn outcome_of_samples(samples: &[TcpInfoSample], exit_signal: bool) -> TcpOutcome {
    let exit = trace_exit(samples, exit_signal);
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
    TcpOutcome {
        exit,
        min_rtt_s,
        rtt_offsets,
        samples: samples.len(),
        exit_signal,
        retransmits: samples.last().map(|s| s.retrans_total),
        ..TcpOutcome::default()
    }
}

/// What the link's ground truth says: the capacity point (as for the simulator's runs),
/// the largest queue and the down drops by cause. `t0` is the sender's start on the
/// link's clock.
fn add_link_truth(outcome: &mut TcpOutcome, path: &mut satquic_link::Path<Vec<u8>>, t0: Duration) {
    let end = path.down.now().max(path.up.now());
    let truth = path.down.finish(end).clone();
    let busy_at_exit = outcome.exit.exit_at_s.and_then(|x| {
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

/// Completed when the link delivered the bytes (timed from the sender's start), else a
/// timeout or the sender's failure, with `delivered` bytes.
fn set_status(
    outcome: &mut TcpOutcome,
    cell: &TcpCell,
    reached: Option<Duration>,
    sender_exit: Option<ExitStatus>,
    delivered: u64,
    t0: Duration,
) {
    match (reached, sender_exit) {
        (Some(t), _) => {
            outcome.status = "completed".into();
            outcome.completion_s = Some(t.saturating_sub(t0).as_secs_f64());
        }
        (None, None) => {
            outcome.status = "timeout".into();
            outcome.reason = format!(
                "{} of {} bytes after {} s",
                delivered,
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
                delivered,
                cell.size_bytes,
                first_line(&cell.dir.join("sender.err"))
            );
        }
    }
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

/// The first non-empty line of a file, for reasons.
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
