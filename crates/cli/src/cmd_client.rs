//! `satquic client HOST[:PORT]`: iperf3/qperf-style transfers against `satquic server`, or
//! fetches from any hq-interop / HTTP/3 server.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use satquic_net::client::{Alpn, ClientOptions, IntervalRow, run_client};
use satquic_net::tls::{Verify, parse_pin, read_ca_file, system_roots};
use satquic_net::{NetError, NetTransport};
use satquic_run::Workload;
use satquic_run::units::{format_bytes, format_duration, parse_size};

use crate::Failure;
use crate::seconds::{HOUR, LONGEST, SHORTEST};

/// Default UDP port of `satquic server`.
pub const DEFAULT_PORT: u16 = 4433;

/// Transport flags shared by `server`, `client` and `run`.
#[derive(clap::Args, Debug, Clone)]
pub struct TransportArgs {
    /// Congestion control of this side's sending direction, a satquic-cc spec
    /// (`cubic`, `cubic+search`, `newreno+hystart++`, `bbr3`, `bbr`, ...).
    #[arg(long, value_name = "SPEC", default_value = "cubic")]
    pub cc: String,
    /// Slow start to combine with --cc (`classic`, `hystart`, `hystart++`, `hybla`, `search`).
    #[arg(long, value_name = "SS")]
    pub ss: Option<String>,
    /// With SEARCH: exit slow start (`exit`) or only log where it would (`shadow`).
    #[arg(long, value_name = "MODE")]
    pub search_mode: Option<String>,
    /// Initial congestion window, bytes (k/M suffixes allowed).
    #[arg(long, value_name = "BYTES")]
    pub iw: Option<String>,
    /// Flow-control windows (connection and stream receive windows, send window);
    /// `--rwnd` is the same flag.
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "256Mi",
        visible_alias = "rwnd"
    )]
    pub max_window: String,
    /// UDP payload size to start from, bytes (1200 to 16383); path MTU discovery still
    /// probes upwards from it.
    #[arg(long, value_name = "BYTES", default_value_t = 1200)]
    pub mtu: u16,
    /// ACK frequency this side asks of its peer when it sends data
    /// (draft-ietf-quic-ack-frequency): N[:DELAY][:cwnd/D], e.g. 16:25ms:cwnd/4, or off
    /// (the default unless --cc satellite).
    #[arg(long = "ack-freq", value_name = "N[:DELAY][:cwnd/D]|off")]
    pub ack_frequency: Option<String>,
    /// RTT assumed before the first sample (`600ms`, `1s`).
    #[arg(long, value_name = "DURATION")]
    pub initial_rtt: Option<String>,
    /// Do not hand batches of datagrams to the kernel (UDP GSO).
    #[arg(long)]
    pub no_gso: bool,
    /// Close a connection after this long without a packet (seconds, or `500ms`, `2min`).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        allow_negative_numbers = true
    )]
    pub idle_timeout: String,
}

/// Combines `--cc`, `--ss` and `--search-mode` into one satquic-cc spec, parsed: the one
/// parse of a command's congestion control.
pub fn compose_cc(
    cc: &str,
    ss: Option<&str>,
    mode: Option<&str>,
) -> Result<satquic_cc::CcSpec, String> {
    let mut spec = cc.trim().to_string();
    if let Some(ss) = ss {
        if spec.contains('+') {
            return Err(format!(
                "--cc '{cc}' already names a slow start; drop --ss or use --cc AVOIDANCE"
            ));
        }
        spec = format!("{spec}+{ss}");
    }
    if let Some(mode) = mode {
        if !matches!(mode, "exit" | "shadow") {
            return Err(format!(
                "invalid --search-mode '{mode}': use exit or shadow"
            ));
        }
        if !spec.to_ascii_lowercase().contains("search") {
            return Err("--search-mode needs SEARCH: add --ss search".into());
        }
        spec.push(if spec.contains(':') { ',' } else { ':' });
        spec.push_str(mode);
    }
    satquic_cc::CcSpec::parse(&spec).map_err(|e| e.to_string())
}

/// A client time flag (seconds, or with a unit): at least 1 ms, at most [`LONGEST`].
fn seconds(flag: &str, text: &str) -> Result<Duration, Failure> {
    crate::seconds::duration(flag, text, SHORTEST..=LONGEST)
}

impl TransportArgs {
    /// The transport these flags describe.
    pub fn to_transport(&self) -> Result<NetTransport, Failure> {
        let mut t = NetTransport::default();
        t.spec.cc = compose_cc(&self.cc, self.ss.as_deref(), self.search_mode.as_deref())
            .map_err(Failure::Usage)?;
        if let Some(iw) = &self.iw {
            let iw = parse_size(iw).map_err(|e| Failure::Usage(format!("--iw: {e}")))?;
            // Its range is checked with the rest of the transport, as for every command.
            t.spec.initial_window = Some(iw);
        }
        let window = parse_size(&self.max_window)
            .map_err(|e| Failure::Usage(format!("--max-window: {e}")))?;
        if !(1200..=(1u64 << 62)).contains(&window) {
            return Err(Failure::Usage(
                "--max-window must be between 1200 bytes and 4 EiB".into(),
            ));
        }
        t.spec.receive_window = window;
        t.spec.stream_receive_window = window;
        t.spec.send_window = window;
        if let Some(rtt) = &self.initial_rtt {
            t.spec.initial_rtt = Some(
                satquic_link::units::parse_duration(rtt)
                    .map_err(|e| Failure::Usage(format!("--initial-rtt: {e}")))?,
            );
        }
        t.spec.mtu = self.mtu;
        if let Some(a) = &self.ack_frequency {
            t.spec.ack_frequency = satquic_run::scenario::AckFrequencySpec::parse(a)
                .map_err(|e| Failure::Usage(format!("--ack-freq: {e}")))?;
        }
        t.gso = !self.no_gso;
        t.idle_timeout =
            crate::seconds::duration("--idle-timeout", &self.idle_timeout, SHORTEST..=HOUR)?;
        t.validate().map_err(net_failure)?;
        Ok(t)
    }
}

/// Maps a library error to the command's failure (usage errors exit 2).
pub fn net_failure(e: NetError) -> Failure {
    match e {
        NetError::Usage(m) => Failure::Usage(m),
        other => Failure::Other(other.to_string()),
    }
}

/// `ADDR:PORT`, `[IPv6]:PORT` or `HOST:PORT` (a host name, resolved to its first
/// address) for `--listen` and `--to`.
pub fn socket_address(flag: &str, text: &str) -> Result<SocketAddr, Failure> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bad = |why: String| Failure::Usage(format!("{flag} '{text}': {why}"));
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(bad("expected HOST:PORT".into()));
    };
    if host.is_empty() {
        return Err(bad("no host".into()));
    }
    port.parse::<u16>()
        .map_err(|_| bad(format!("port '{port}' is not a number 0-65535")))?;
    text.to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("no address".into()))
}

/// Resolves `HOST[:PORT]` (IPv6 as `[::1]:4433`); returns the address and the host name.
pub fn resolve_host(text: &str, default_port: u16) -> Result<(SocketAddr, String), Failure> {
    let bad = |why: String| Failure::Usage(format!("invalid host '{text}': {why}"));
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok((addr, addr.ip().to_string()));
    }
    if text.starts_with('[') != text.contains(']') {
        return Err(bad(
            "an IPv6 address is written [ADDR] or [ADDR]:PORT".into()
        ));
    }
    let bare = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return Ok((SocketAddr::new(ip, default_port), ip.to_string()));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| bad(format!("port '{p}' is not a number 0-65535")))?,
        ),
        None => (text, default_port),
    };
    if host.is_empty() {
        return Err(bad("no host name".into()));
    }
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("no address".into()))?;
    Ok((addr, host.to_string()))
}

#[derive(clap::Args)]
pub struct Args {
    /// Server: HOST, HOST:PORT or [IPv6]:PORT (default port 4433).
    #[arg(value_name = "HOST[:PORT]")]
    host: String,
    /// Server port, if not in HOST.
    #[arg(short = 'p', long)]
    port: Option<u16>,
    /// Bytes to transfer (k/M/G decimal, Ki/Mi/Gi binary): 200M, 10MiB.
    #[arg(
        short = 'n',
        long = "bytes",
        value_name = "SIZE",
        conflicts_with_all = ["time", "path"]
    )]
    bytes: Option<String>,
    /// Transfer for this long instead of a size (seconds, or `500ms`, `2min`; default 10 s
    /// with the perf protocol when -n is not given).
    #[arg(
        short = 't',
        long = "time",
        value_name = "DURATION",
        allow_negative_numbers = true
    )]
    time: Option<String>,
    /// Reverse: upload to the server (the client sends; its --cc applies).
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Interval report this often (seconds, or `500ms`): Mbit/s, bytes, RTT, cwnd when
    /// known.
    #[arg(
        short = 'i',
        long,
        value_name = "DURATION",
        allow_negative_numbers = true
    )]
    interval: Option<String>,
    /// JSON output: the run record's structure (flows, chunks, events) plus intervals.
    #[arg(short = 'J', long)]
    json: bool,
    /// Print connection setup time and time to first byte (qperf -e).
    #[arg(short = 'e', long)]
    establishment: bool,
    /// Application protocol: perf (satquic server), hq-interop or h3 (any server).
    #[arg(long, default_value = "perf")]
    alpn: String,
    /// Path to fetch over hq-interop/h3 (default `/<SIZE>`, satquic's synthetic object).
    #[arg(long, value_name = "PATH")]
    path: Option<String>,
    /// TLS server name (default: the host).
    #[arg(long, value_name = "NAME")]
    sni: Option<String>,
    /// Accept any server certificate: no protection against a machine in the middle (by
    /// default the certificate must chain to a system CA and name the server).
    #[arg(long, conflicts_with_all = ["pin", "ca"])]
    insecure: bool,
    /// Accept only the server certificate with this SHA-256 (printed by satquic server),
    /// self-signed or not; no other check.
    #[arg(long, value_name = "SHA256", conflicts_with = "ca")]
    pin: Option<String>,
    /// Trust these CA certificates (PEM) instead of the system's.
    #[arg(long, value_name = "FILE")]
    ca: Option<std::path::PathBuf>,
    /// Write a qlog (JSON-SEQ) file into DIR, `<odcid>_client.sqlog`: quinn's packet events
    /// merged with satquic's (the QUIC interop runner's QLOGDIR environment variable sets
    /// it too; DIR is created if missing, its parent must exist).
    #[arg(long, value_name = "DIR", env = "QLOGDIR")]
    qlog: Option<std::path::PathBuf>,
    /// Give up after this long (default: no limit with -n, -t + 30 s with -t).
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true)]
    time_cap: Option<String>,
    /// Run the transfer twice, the second GAP after the first (default 1s) resuming it:
    /// the request goes in 0-RTT with the TLS session the first left, the server
    /// answers at once for the address-validation token it gave, and its Careful Resume
    /// starts from the first connection's window. The results describe the second
    /// connection, plus the first's completion time and whether 0-RTT was accepted.
    /// 0-RTT within this process only: rustls keeps tickets in memory (see --state).
    #[arg(
        long,
        value_name = "GAP",
        num_args = 0..=1,
        default_missing_value = "1s",
        require_equals = true
    )]
    resume: Option<String>,
    /// Keep the servers' address-validation tokens and, for uploads, this client's
    /// Careful Resume parameters in FILE: read (and rewritten) before connecting,
    /// written at the end (JSON, mode 0600, at most 858 kB). The next process with the
    /// same FILE is spared the Retry and resumes; not with 0-RTT (rustls cannot write
    /// TLS sessions out).
    #[arg(long, value_name = "FILE")]
    state: Option<std::path::PathBuf>,
    #[command(flatten)]
    transport: TransportArgs,
}

fn options(args: &Args) -> Result<ClientOptions, Failure> {
    let (server, host) = resolve_host(&args.host, args.port.unwrap_or(DEFAULT_PORT))?;
    if let Some(p) = args.port
        && server.port() != p
    {
        return Err(Failure::Usage(format!(
            "-p {p} contradicts the port in '{}'; give the port once",
            args.host
        )));
    }
    let alpn = Alpn::parse(&args.alpn).map_err(Failure::Usage)?;
    let workload = match (&args.bytes, args.time.as_deref()) {
        (Some(n), None) => {
            let bytes = parse_size(n).map_err(|e| Failure::Usage(format!("-n: {e}")))?;
            if bytes == 0 {
                return Err(Failure::Usage("-n must be at least 1 byte".into()));
            }
            Workload::Download { bytes }
        }
        (None, Some(t)) => Workload::Timed {
            duration: seconds("-t", t)?,
        },
        (None, None) if alpn == Alpn::Perf => Workload::Timed {
            duration: Duration::from_secs(10),
        },
        // The object at --path, whatever its size (the request names no size).
        (None, None) if args.path.is_some() => Workload::Download { bytes: u64::MAX },
        (None, None) => {
            return Err(Failure::Usage(format!(
                "--alpn {} needs -n SIZE (satquic's synthetic /SIZE object) or --path",
                args.alpn
            )));
        }
        (Some(_), Some(_)) => return Err(Failure::Usage("give -n or -t, not both".into())),
    };
    let verify = match (&args.pin, &args.ca) {
        _ if args.insecure => Verify::Any,
        (Some(p), _) => Verify::Pin(parse_pin(p).map_err(Failure::Usage)?),
        (None, Some(file)) => Verify::Roots(read_ca_file(file).map_err(net_failure)?),
        (None, None) => Verify::Roots(system_roots().map_err(net_failure)?),
    };
    let time_cap = match (args.time_cap.as_deref(), &workload) {
        (Some(c), _) => Some(seconds("--time-cap", c)?),
        (None, Workload::Timed { duration }) => Some(*duration + Duration::from_secs(30)),
        (None, Workload::Download { .. }) => None,
    };
    let interval = args
        .interval
        .as_deref()
        .map(|i| seconds("-i", i))
        .transpose()?;
    Ok(ClientOptions {
        server,
        server_name: args.sni.clone().unwrap_or(host),
        alpn,
        workload,
        upload: args.reverse,
        path: args.path.clone(),
        transport: args.transport.to_transport()?,
        verify,
        interval,
        time_cap,
        want_server_report: true,
        qlog_dir: args.qlog.clone(),
        progress: None,
        interrupt: None,
        resumption: resumption(args)?,
    })
}

/// What the client keeps to resume: the state file's, an empty one for `--resume`, or
/// none.
fn resumption(
    args: &Args,
) -> Result<Option<std::sync::Arc<satquic_net::client::Resumption>>, Failure> {
    use satquic_net::client::Resumption;
    Ok(match (&args.state, args.resume.is_some()) {
        (Some(path), _) => Some(std::sync::Arc::new(
            Resumption::load(path).map_err(net_failure)?,
        )),
        (None, true) => Some(std::sync::Arc::new(Resumption::new())),
        (None, false) => None,
    })
}

/// `start-end s  bytes  rate  rtt  cwnd`.
pub fn format_interval(row: &IntervalRow) -> String {
    let rtt = row
        .rtt_s
        .map(|r| format!("{:.1} ms", r * 1e3))
        .unwrap_or_else(|| "-".into());
    let cwnd = row
        .cwnd_bytes
        .map(format_bytes)
        .unwrap_or_else(|| "-".into());
    format!(
        "[  0] {:6.2}-{:<6.2} s  {:>10}  {:>9.2} Mbit/s  rtt {:>9}  cwnd {:>9}  lost {}",
        row.start_s,
        row.end_s,
        format_bytes(row.bytes),
        row.rate_bps / 1e6,
        rtt,
        cwnd,
        row.lost_packets
    )
}

/// Resolves at the first SIGINT (Ctrl-C) or SIGTERM (never if neither can be caught).
pub async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// Notifies `interrupt` on the first SIGINT (Ctrl-C) or SIGTERM: the transfer then ends
/// as iperf3's does, closing the connection and printing what it measured.
fn on_signal(interrupt: std::sync::Arc<tokio::sync::Notify>) {
    tokio::spawn(async move {
        stop_signal().await;
        interrupt.notify_one();
    });
}

pub fn run(args: Args) -> Result<(), Failure> {
    let mut options = options(&args)?;
    let gap = args
        .resume
        .as_deref()
        .map(|g| {
            crate::seconds::duration("client: --resume", g, Duration::ZERO..=crate::seconds::DAY)
        })
        .transpose()?;
    let interrupt = std::sync::Arc::new(tokio::sync::Notify::new());
    options.interrupt = Some(interrupt.clone());
    satquic_net::client::validate(&options).map_err(net_failure)?;
    satquic_net::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Other(e.to_string()))?;
    let quiet = args.json;
    if !quiet {
        outln!(
            "Connecting to {} ({}, {}, cc {} for the client's sending direction)",
            options.server,
            args.alpn,
            if options.upload { "upload" } else { "download" },
            options.transport.spec.cc
        )?;
    }
    let on_interval: Option<satquic_net::client::IntervalCallback> = if quiet {
        None
    } else {
        // Once stdout is closed the transfer still runs to its end (its qlog is written),
        // without printing; the summary then finds stdout closed too and ends quietly.
        let closed = std::sync::atomic::AtomicBool::new(false);
        Some(Box::new(move |row: &IntervalRow| {
            use std::sync::atomic::Ordering::Relaxed;
            if !closed.load(Relaxed) && outln!("{}", format_interval(row)).is_err() {
                closed.store(true, Relaxed);
            }
        }))
    };
    let outcome = rt.block_on(async {
        on_signal(interrupt);
        let Some(gap) = gap else {
            return run_client(options.clone(), on_interval)
                .await
                .map(|r| (None, r));
        };
        // The first connection leaves its session and token; the second resumes.
        let first = run_client(options.clone(), None).await?;
        if first.status != "completed" {
            return Ok((None, first));
        }
        tokio::time::sleep(gap).await;
        let second = run_client(options.clone(), on_interval).await?;
        Ok((Some(first), second))
    });
    // The tokens and parameters the runs left, whatever became of them.
    let saved = options.resumption.as_ref().map_or(Ok(()), |r| r.save());
    let (first, result) = outcome.map_err(net_failure)?;
    if gap.is_some() && first.is_none() {
        return Err(Failure::Other(format!(
            "the first connection did not complete ({}), so there is nothing to resume",
            result.error.as_deref().unwrap_or(&result.status)
        )));
    }
    // A closed stdout does not hide a failed transfer.
    let printed = print_results(&args, &options, first.as_ref(), &result, gap);
    // Incomplete results exit 1 (after they are printed), as failed ones do; then a
    // state file that could not be written.
    verdict(result, printed)?;
    saved.map_err(net_failure)
}

/// The results as JSON (`-J`) or text, the first connection's line when resuming.
fn print_results(
    args: &Args,
    options: &ClientOptions,
    first: Option<&satquic_net::ClientResult>,
    result: &satquic_net::ClientResult,
    gap: Option<Duration>,
) -> Result<(), Failure> {
    if args.json {
        let mut value = satquic_net::record::client_json(options, result);
        if let Some(first) = first {
            value["client"]["first_completion_time_s"] =
                serde_json::json!(first.completed_at.map(|t| t.as_secs_f64()));
            value["client"]["zero_rtt"] = serde_json::json!(result.zero_rtt);
        }
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| Failure::Other(e.to_string()))?;
        return outln!("{text}");
    }
    if let Some(first) = first {
        outln!(
            "first connection: {:.3} s; resumed {} later, 0-RTT {}:",
            first.completed_at.unwrap_or(first.ended_at).as_secs_f64(),
            format_duration(gap.unwrap_or_default()),
            match result.zero_rtt {
                Some(true) => "accepted",
                Some(false) => "refused",
                None => "not offered (no session ticket)",
            }
        )?;
    }
    print_text(args, result)
}

/// How the command ends for `result`: a failed, interrupted or capped transfer exits 1;
/// otherwise how printing went.
fn verdict(result: satquic_net::ClientResult, printed: Result<(), Failure>) -> Result<(), Failure> {
    match result.status.as_str() {
        "failed" => Err(Failure::Other(
            result.error.unwrap_or_else(|| "transfer failed".into()),
        )),
        "interrupted" => Err(Failure::Other(format!(
            "interrupted after {:.1} s: the results above are partial",
            result.ended_at.as_secs_f64()
        ))),
        "capped" => Err(Failure::Other(format!(
            "stopped at --time-cap ({:.1} s) before the transfer ended: the results above \
             are partial",
            result.ended_at.as_secs_f64()
        ))),
        _ => printed,
    }
}

/// At most this many "time to N MB" lines (plus the last MB) in the text output; -J has
/// every MB.
pub const MB_LINES_MAX: usize = 20;

/// The MBs whose time the text output prints: every one of a short transfer, otherwise 1,
/// 2, 5, 10, 20, 50, ... and the last.
fn mb_marks(count: usize) -> Vec<usize> {
    if count <= MB_LINES_MAX {
        return (1..=count).collect();
    }
    let mut marks: Vec<usize> = [1usize, 2, 5]
        .into_iter()
        .flat_map(|m| (0..20).map(move |e| m.saturating_mul(10usize.saturating_pow(e))))
        .filter(|mb| *mb <= count)
        .collect();
    marks.sort_unstable();
    marks.dedup();
    if marks.last() != Some(&count) {
        marks.push(count);
    }
    marks
}

fn print_text(args: &Args, r: &satquic_net::ClientResult) -> Result<(), Failure> {
    if args.establishment {
        if let Some(t) = r.connected_at {
            outln!(
                "connection establishment time: {:.1} ms",
                t.as_secs_f64() * 1e3
            )?;
        }
        if let Some(t) = r.first_byte_at {
            outln!("time to first byte: {:.1} ms", t.as_secs_f64() * 1e3)?;
        }
    }
    for mb in mb_marks(r.mb_times.len()) {
        outln!(
            "time to {:>4} MB: {:8.3} s",
            mb,
            r.mb_times[mb - 1].as_secs_f64()
        )?;
    }
    let elapsed = r.completed_at.unwrap_or(r.ended_at).as_secs_f64();
    let rate = if elapsed > 0.0 {
        r.bytes as f64 * 8.0 / elapsed / 1e6
    } else {
        0.0
    };
    outln!("- - - - - - - - - - - - - - - - - - - - - - - - -")?;
    outln!(
        "{} {} in {:.3} s: {:.2} Mbit/s ({}{})",
        if r.upload { "sent" } else { "received" },
        format_bytes(r.bytes),
        elapsed,
        rate,
        r.status,
        r.connected_at
            .map(|t| format!(", setup {:.1} ms", t.as_secs_f64() * 1e3))
            .unwrap_or_default()
    )?;
    let sender = match (&r.server_report, &r.sender_report) {
        (Some(report), _) => Some(("server", report)),
        (None, Some(report)) => Some(("client (sender)", report)),
        (None, None) => None,
    };
    if let Some((who, report)) = sender {
        let exit = report
            .events
            .iter()
            .find(|e| e.get("type").and_then(|t| t.as_str()) == Some("slow_start_exit"));
        outln!(
            "{who}: cc {}, {} packets sent, {} lost, {} congestion events{}",
            report.cc,
            report.packets_sent,
            report.packets_lost,
            report.congestion_events,
            exit.map(|e| format!(
                ", slow start exit at {:.3} s ({})",
                e.get("at").and_then(|v| v.as_f64()).unwrap_or(0.0),
                e.get("reason").and_then(|v| v.as_str()).unwrap_or("?")
            ))
            .unwrap_or_default()
        )?;
    }
    if let Some(q) = &r.qlog_file {
        outln!("qlog: {}", q.display())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cc_composition() {
        assert_eq!(
            compose_cc("cubic", Some("search"), None).unwrap(),
            "cubic+search"
        );
        assert_eq!(
            compose_cc("cubic", Some("search"), Some("shadow")).unwrap(),
            "cubic+search:shadow"
        );
        assert_eq!(
            compose_cc("cubic+search:v2", None, Some("exit")).unwrap(),
            "cubic+search:v2,exit"
        );
        assert!(compose_cc("cubic+search", Some("hystart++"), None).is_err());
        assert!(compose_cc("cubic", None, Some("shadow")).is_err());
        assert!(compose_cc("warp", None, None).is_err());
    }

    #[test]
    fn mb_lines_stay_readable() {
        assert_eq!(mb_marks(3), vec![1, 2, 3]);
        assert_eq!(mb_marks(MB_LINES_MAX).len(), MB_LINES_MAX);
        assert_eq!(
            mb_marks(1000),
            vec![1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
        );
        assert_eq!(mb_marks(123).last(), Some(&123));
        assert!(mb_marks(1_000_000).len() <= MB_LINES_MAX);
    }

    #[test]
    fn listen_and_to_take_host_names() {
        assert_eq!(
            socket_address("--to", "127.0.0.1:9").ok(),
            Some(SocketAddr::from(([127, 0, 0, 1], 9)))
        );
        assert_eq!(
            socket_address("--to", "localhost:9").ok().map(|a| a.port()),
            Some(9)
        );
        for bad in ["localhost", ":9", "localhost:x", "127.0.0.1:99999"] {
            assert!(socket_address("--to", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hosts() {
        assert_eq!(resolve_host("127.0.0.1", 4433).ok().unwrap().0.port(), 4433);
        assert_eq!(resolve_host("127.0.0.1:9", 4433).ok().unwrap().0.port(), 9);
        assert_eq!(resolve_host("[::1]:9", 4433).ok().unwrap().0.port(), 9);
        assert_eq!(resolve_host("::1", 4433).ok().unwrap().0.port(), 4433);
        assert!(resolve_host("127.0.0.1:x", 4433).is_err());
        assert!(resolve_host(":9", 4433).is_err());
        assert!(resolve_host("[::1", 4433).is_err());
        assert!(resolve_host("::1]", 4433).is_err());
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn usage_error(argv: &[&str]) -> String {
        use clap::Parser;
        let cli = Cli::try_parse_from(std::iter::once("client").chain(argv.iter().copied()))
            .expect("clap accepts the shape");
        match options(&cli.args) {
            Err(Failure::Usage(m)) => m,
            Err(Failure::Other(m)) => panic!("not a usage error: {m}"),
            Err(Failure::Closed) => panic!("stdout closed"),
            Ok(_) => panic!("accepted {argv:?}"),
        }
    }

    #[test]
    fn bad_flags_are_one_line_usage_errors() {
        for argv in [
            &["127.0.0.1", "-n", "10X"][..],
            &["127.0.0.1", "-n", "0"],
            &["127.0.0.1", "-t", "0"],
            &["127.0.0.1", "-i", "0"],
            &["127.0.0.1", "--cc", "warp"],
            &["127.0.0.1", "--iw", "10"],
            &["127.0.0.1", "--max-window", "1k"],
            &["127.0.0.1", "--initial-rtt", "5"],
            &["127.0.0.1", "--pin", "abc"],
            &["127.0.0.1", "--alpn", "spdy"],
            &["127.0.0.1:99999"],
            &["127.0.0.1", "--idle-timeout", "0"],
            &["[::1"],
            &["127.0.0.1:9", "-p", "10"],
            &["127.0.0.1", "--alpn", "h3"],
            &["127.0.0.1", "--iw", "1"],
        ] {
            let m = usage_error(argv);
            assert!(!m.contains('\n') && !m.is_empty(), "{argv:?}: {m}");
        }
    }
}
