//! `satquic link`: the satquic-link model in real time, as a UDP relay (`--listen`/`--to`)
//! or between two network namespaces at the IP level (`--tun`, root).

use std::path::PathBuf;
use std::time::Duration;

use satquic_link::units::parse_duration;
use satquic_link::{DirectionSpec, DropReason, LinkSpec, LossSpec, QueueLimit};
use satquic_net::relay::{DirectionSnapshot, Relay, RelayOptions};
use satquic_net::unix_ms;
use satquic_run::LinkSource;
use satquic_run::scenario::ShaperSpec;
use satquic_run::units::{parse_rate_bps, parse_size};

use crate::Failure;
use crate::cmd_client::{net_failure, socket_address};

#[derive(clap::Args)]
pub struct Args {
    /// Where clients send to (e.g. 127.0.0.1:4434, localhost:4434).
    #[arg(long, value_name = "HOST:PORT", required_unless_present = "tun")]
    listen: Option<String>,
    /// The server behind the link (e.g. 127.0.0.1:4433, server.example:4433).
    #[arg(long, value_name = "HOST:PORT", required_unless_present = "tun")]
    to: Option<String>,
    /// IP-level emulation instead of the UDP relay (root): two network namespaces joined
    /// by TUN devices through the model, for any tool (TCP included); run commands in
    /// them with `ip netns exec NAME CMD`. Removed again on exit (also Ctrl-C, SIGTERM).
    #[arg(long, conflicts_with_all = ["listen", "to", "max_flows"])]
    tun: bool,
    /// With --tun: the client side's namespace.
    #[arg(long, value_name = "NAME", default_value = satquic_net::tun::DEFAULT_CLIENT_NS, requires = "tun")]
    client_ns: String,
    /// With --tun: the server side's namespace.
    #[arg(long, value_name = "NAME", default_value = satquic_net::tun::DEFAULT_SERVER_NS, requires = "tun")]
    server_ns: String,
    /// With --tun: the client namespace's IPv4 address.
    #[arg(long, value_name = "IPV4", default_value_t = satquic_net::tun::DEFAULT_CLIENT_ADDR, requires = "tun")]
    client_addr: std::net::Ipv4Addr,
    /// With --tun: the server namespace's IPv4 address.
    #[arg(long, value_name = "IPV4", default_value_t = satquic_net::tun::DEFAULT_SERVER_ADDR, requires = "tun")]
    server_addr: std::net::Ipv4Addr,
    /// Link preset (see `satquic presets`) or a TOML link file (`satquic presets --toml
    /// NAME` prints one to start from), as for `satquic sim` and `satquic run`.
    #[arg(long, value_name = "PRESET|FILE", conflicts_with_all = ["preset", "toml"])]
    link: Option<String>,
    /// Old spelling of `--link NAME`.
    #[arg(long, value_name = "NAME", conflicts_with = "toml", hide = true)]
    preset: Option<String>,
    /// Old spelling of `--link FILE`.
    #[arg(long, value_name = "FILE", hide = true)]
    toml: Option<PathBuf>,
    /// Rate of both directions (150M, 20Mbit); overrides the preset's.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    rate: Option<String>,
    /// Rate server -> client.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    down_rate: Option<String>,
    /// Rate client -> server.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true)]
    up_rate: Option<String>,
    /// One-way delay of both directions (300ms).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    delay: Option<String>,
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    down_delay: Option<String>,
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    up_delay: Option<String>,
    /// Queue limit of both directions in bytes (36M), or `2bdp` for a multiple of the BDP.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    queue: Option<String>,
    /// Random loss of both directions, a fraction (0.01 = 1 %).
    #[arg(long, value_name = "PLR", allow_negative_numbers = true)]
    loss: Option<f64>,
    /// Seed of the model's random processes.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = whole_number)]
    seed: u64,
    /// A sender cap in front of the link's down direction, as `satquic sim --sender-cap`
    /// places it at the server's interface: RATE[:LATENCY] (the seeds' 200M:1.5s token
    /// bucket, seed 000 Sec. 4.7), or none (the default). Server -> client packets cross
    /// it first, then the link.
    #[arg(long, value_name = "RATE[:LATENCY]", allow_hyphen_values = true)]
    sender_cap: Option<String>,
    /// Most client addresses (IP:port) relayed at once, with no separate limit per IP.
    /// When full, the oldest flow not yet established (the server answered only with
    /// Version Negotiation, or the client never sent after its answer) makes room; new
    /// clients are refused only when every flow is established.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = flow_count)]
    max_flows: Option<u64>,
    /// Forget a client address after this long without a datagram either way (seconds,
    /// or `500ms`, `2min`).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "120s",
        allow_negative_numbers = true
    )]
    flow_idle_timeout: String,
    /// Do not print per-second statistics.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// At exit, write the totals as JSON to FILE: per direction the packets forwarded,
    /// modelled drops by reason and the first drop (seconds since `started_unix_ms`),
    /// and the sender cap's drops (what `satquic matrix` reads for each run).
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
    /// At exit, write each flow's books as JSON to FILE (a flow: a client address with
    /// the relay, a TCP or UDP connection with --tun): per flow and direction its packets
    /// at the bottleneck, drops, payload delivered and queueing delay, and the period the
    /// flows of the data direction shared the link
    /// (goodput as link payload, share, drops, queueing delay, Jain's index: the measures
    /// of `satquic beside`, scripts/beside-realtime.py).
    #[arg(long, value_name = "FILE")]
    flows_json: Option<PathBuf>,
    /// Stop after this long (seconds, or `500ms`, `2min`; default: run until killed).
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true)]
    duration: Option<String>,
}

/// A count or a seed: the range in the message, for `-1` as for `x` (clap's own parser
/// says "invalid digit"; without `allow_negative_numbers` it took `-1` for a flag).
fn whole_number(text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("expected a whole number from 0 to {}", u64::MAX))
}

/// `--max-flows`: as [`whole_number`], from 1.
fn flow_count(text: &str) -> Result<u64, String> {
    match text.trim().parse() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("expected a whole number from 1 to {}", u64::MAX)),
    }
}

fn usage(flag: &str) -> impl Fn(String) -> Failure + '_ {
    move |e| Failure::Usage(format!("{flag}: {e}"))
}

fn queue_limit(text: &str) -> Result<QueueLimit, Failure> {
    let lower = text.trim().to_ascii_lowercase();
    if let Some(x) = lower.strip_suffix("bdp") {
        let m: f64 = x
            .trim()
            .parse()
            .map_err(|_| Failure::Usage(format!("--queue: invalid BDP multiple '{text}'")))?;
        return Ok(QueueLimit::Bdp(m));
    }
    if let Some(x) = lower.strip_suffix("p") {
        let p: u64 = x
            .trim()
            .parse()
            .map_err(|_| Failure::Usage(format!("--queue: invalid packet count '{text}'")))?;
        return Ok(QueueLimit::Packets(p));
    }
    Ok(QueueLimit::Bytes(
        parse_size(text).map_err(usage("--queue"))?,
    ))
}

/// The link these flags describe; `None`: no limits (forward at once).
fn link_spec(args: &Args) -> Result<Option<LinkSpec>, Failure> {
    let explicit = args.rate.is_some()
        || args.down_rate.is_some()
        || args.up_rate.is_some()
        || args.delay.is_some()
        || args.down_delay.is_some()
        || args.up_delay.is_some()
        || args.queue.is_some()
        || args.loss.is_some();
    let source = match (&args.link, &args.preset, &args.toml) {
        (Some(arg), _, _) => Some(LinkSource::parse(arg)),
        (None, Some(name), _) => Some(LinkSource::Preset(name.clone())),
        (None, None, Some(file)) => Some(LinkSource::File(file.clone())),
        (None, None, None) => None,
    };
    let mut spec = match source {
        Some(source) => source.resolve().map_err(Failure::Usage)?,
        None if !explicit => return Ok(None),
        None => {
            // A plain link: 1 Gbit/s, no delay, 1 BDP queue unless flags say otherwise.
            let d =
                DirectionSpec::simple(1_000_000_000, Duration::ZERO, QueueLimit::Bytes(4_000_000));
            LinkSpec {
                name: "custom".into(),
                description: "satquic link flags".into(),
                source: String::new(),
                down: d.clone(),
                up: d,
                slots: None,
            }
        }
    };
    let rate = |s: &Option<String>, flag: &str| -> Result<Option<u64>, Failure> {
        s.as_deref()
            .map(|r| parse_rate_bps(r).map_err(|e| Failure::Usage(format!("{flag}: {e}"))))
            .transpose()
    };
    let delay = |s: &Option<String>, flag: &str| -> Result<Option<Duration>, Failure> {
        s.as_deref()
            .map(|d| parse_duration(d).map_err(|e| Failure::Usage(format!("{flag}: {e}"))))
            .transpose()
    };
    let both_rate = rate(&args.rate, "--rate")?;
    let both_delay = delay(&args.delay, "--delay")?;
    for (dir, r, d) in [
        (
            &mut spec.down,
            rate(&args.down_rate, "--down-rate")?,
            delay(&args.down_delay, "--down-delay")?,
        ),
        (
            &mut spec.up,
            rate(&args.up_rate, "--up-rate")?,
            delay(&args.up_delay, "--up-delay")?,
        ),
    ] {
        if let Some(r) = r.or(both_rate) {
            dir.rate = satquic_link::RateSpec::constant(r);
            dir.bod = None;
        }
        if let Some(d) = d.or(both_delay) {
            dir.delay.base = d;
        }
        if let Some(q) = &args.queue {
            dir.queue.limit = queue_limit(q)?;
        }
        if let Some(plr) = args.loss {
            if !(0.0..=1.0).contains(&plr) {
                return Err(Failure::Usage(
                    "--loss must be a fraction between 0 and 1".into(),
                ));
            }
            dir.loss = if plr == 0.0 {
                LossSpec::None
            } else {
                LossSpec::Bernoulli { plr }
            };
        }
    }
    spec.validate().map_err(|e| Failure::Usage(e.to_string()))?;
    Ok(Some(spec))
}

fn drops_text(now: &DirectionSnapshot, before: &DirectionSnapshot) -> String {
    let mut parts = Vec::new();
    for r in DropReason::ALL {
        let n = now.dropped(r) - before.dropped(r).min(now.dropped(r));
        if n > 0 {
            parts.push(format!("{} {n}", r.as_str()));
        }
    }
    let overload = now.overload_drops - before.overload_drops.min(now.overload_drops);
    if overload > 0 {
        parts.push(format!("overload {overload}"));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn direction_line(
    name: &str,
    now: &DirectionSnapshot,
    before: &DirectionSnapshot,
    secs: f64,
) -> String {
    let bytes = now.forwarded_bytes - before.forwarded_bytes.min(now.forwarded_bytes);
    format!(
        "{name:>4} {:>9.2} Mbit/s  queue {:>10} B  drops {}",
        bytes as f64 * 8.0 / secs / 1e6,
        now.queue_bytes,
        drops_text(now, before)
    )
}

pub fn run(args: Args) -> Result<(), Failure> {
    let link = link_spec(&args)?;
    output_file("--summary-json", args.summary_json.as_deref())?;
    output_file("--flows-json", args.flows_json.as_deref())?;
    let duration = args
        .duration
        .as_deref()
        .map(|d| {
            crate::seconds::duration(
                "--duration",
                d,
                crate::seconds::SHORTEST..=crate::seconds::LONGEST,
            )
        })
        .transpose()?;
    if args.tun {
        return run_tun(&args, link, duration);
    }
    let listen = socket_address("--listen", args.listen.as_deref().unwrap_or_default())?;
    let to = socket_address("--to", args.to.as_deref().unwrap_or_default())?;
    let mut options = RelayOptions::new(listen, to, link.clone());
    options.seed = args.seed;
    options.sender_cap = sender_cap(&args)?;
    options.max_flows = args
        .max_flows
        .map_or(satquic_net::relay::DEFAULT_MAX_FLOWS, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    options.flow_books = args.flows_json.is_some();
    options.flow_idle_timeout = crate::seconds::duration(
        "--flow-idle-timeout",
        &args.flow_idle_timeout,
        crate::seconds::SHORTEST..=crate::seconds::LONGEST,
    )?;
    let relay = Relay::start(options).map_err(net_failure)?;
    match &link {
        Some(l) => outln!(
            "satquic link {} -> {}: {}",
            relay.local_addr(),
            to,
            link_text(l)
        )?,
        None => outln!(
            "satquic link {} -> {}: no limits (forwarding at once)",
            relay.local_addr(),
            to
        )?,
    }
    // Ctrl-C and SIGTERM end the relay like --duration does: with its closing report.
    satquic_net::tun::stop_on_termination_signals();
    let start = std::time::Instant::now();
    let mut before = relay.snapshot();
    let mut last = start;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let stopping = satquic_net::tun::termination_requested()
            || duration.is_some_and(|d| start.elapsed() >= d);
        if stopping {
            break;
        }
        if last.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = relay.snapshot();
        let secs = last.elapsed().as_secs_f64();
        last = std::time::Instant::now();
        if !args.quiet {
            outln!(
                "[{:7.1} s] {} | {} | flows {} (refused {}, evicted {})",
                now.at.as_secs_f64(),
                direction_line("down", &now.down, &before.down, secs),
                direction_line("up", &now.up, &before.up, secs),
                now.flows,
                now.flows_refused,
                now.flows_evicted
            )?;
        }
        before = now;
    }
    let started =
        unix_ms(std::time::SystemTime::now()) - relay.epoch().elapsed().as_millis() as u64;
    let (last, path, ledger) = relay.stop_with_ledger();
    // A summary that cannot be written fails the command, after the totals are out.
    let written = write_summary(&args, started, &last, path.as_ref())
        .and(write_flows(&args, &ledger.report()));
    totals(&last)?;
    outln!(
        "flows: {} refused (table full), {} evicted (never answered)",
        last.flows_refused,
        last.flows_evicted
    )?;
    written
}

/// A file written at exit (`--summary-json`, `--flows-json`), checked before the run so
/// that its results are not lost at the end: in an existing directory, and not a
/// directory (the closing write would fail) or a FIFO (it would block until a reader
/// came). A character device such as a terminal or `/dev/null` is written as a file is.
fn output_file(flag: &str, file: Option<&std::path::Path>) -> Result<(), Failure> {
    use std::os::unix::fs::FileTypeExt;
    let Some(file) = file else {
        return Ok(());
    };
    let refused = |why: &str| Err(Failure::Usage(format!("{flag} {}: {why}", file.display())));
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    if dir.is_some_and(|d| !d.is_dir()) {
        return refused("its directory does not exist");
    }
    match std::fs::metadata(file).map(|m| m.file_type()) {
        Ok(kind) if kind.is_dir() => refused("a directory, not a file"),
        Ok(kind) if kind.is_fifo() => refused("a FIFO, whose closing write could block"),
        _ => Ok(()),
    }
}

/// `--sender-cap`, parsed (the relay and the TUN link refuse it without a link model).
fn sender_cap(args: &Args) -> Result<Option<ShaperSpec>, Failure> {
    args.sender_cap.as_deref().map_or(Ok(None), |t| {
        ShaperSpec::parse_cap(t).map_err(usage("--sender-cap"))
    })
}

/// `--flows-json`: each flow's books and the shared period.
fn write_flows(args: &Args, report: &satquic_net::relay::LedgerReport) -> Result<(), Failure> {
    let Some(file) = &args.flows_json else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(report).expect("a ledger report serializes");
    std::fs::write(file, text + "\n")
        .map_err(|e| Failure::Other(format!("cannot write {}: {e}", file.display())))
}

/// `--summary-json`: the closing totals, machine-readable.
fn write_summary<T>(
    args: &Args,
    started_unix_ms: u64,
    last: &satquic_net::RelaySnapshot,
    path: Option<&satquic_link::Path<T>>,
) -> Result<(), Failure> {
    let Some(file) = &args.summary_json else {
        return Ok(());
    };
    let direction = |d: &DirectionSnapshot, model: Option<&satquic_link::Direction<T>>| {
        let dropped: serde_json::Map<String, serde_json::Value> = DropReason::ALL
            .iter()
            .map(|r| (r.as_str().to_string(), d.dropped(*r).into()))
            .collect();
        let first_drop = model.and_then(|m| {
            DropReason::ALL
                .iter()
                .filter_map(|r| m.ground_truth().first_drop(*r))
                .min()
        });
        serde_json::json!({
            "forwarded_packets": d.forwarded_packets,
            "forwarded_bytes": d.forwarded_bytes,
            "dropped": dropped,
            "overload_drops": d.overload_drops,
            "first_drop_s": first_drop.map(|t| t.as_secs_f64()),
        })
    };
    let value = serde_json::json!({
        "started_unix_ms": started_unix_ms,
        "down": direction(&last.down, path.map(|p| &p.down)),
        "up": direction(&last.up, path.map(|p| &p.up)),
        "sender_cap": sender_cap(args)?.is_some().then(|| serde_json::json!({
            "offered_packets": last.cap.stats.offered.packets,
            "dropped_packets": last.cap.stats.dropped_total().packets,
        })),
    });
    let text = serde_json::to_string_pretty(&value).expect("a summary serializes");
    std::fs::write(file, text + "\n")
        .map_err(|e| Failure::Other(format!("cannot write {}: {e}", file.display())))
}

fn link_text(l: &LinkSpec) -> String {
    let rate = |r: &satquic_link::RateSpec| match r {
        // A slotted rate changes every slot: its range, not its largest value.
        satquic_link::RateSpec::Slotted { quantiles } => format!(
            "{}-{} per slot",
            satquic_link::units::format_rate_bps(quantiles.first().map_or(0, |q| q.rate_bps)),
            satquic_link::units::format_rate_bps(r.nominal_rate_bps())
        ),
        other => satquic_link::units::format_rate_bps(other.nominal_rate_bps()),
    };
    let rtt = if l.slots.as_ref().is_some_and(|s| !s.rtt.is_empty()) {
        "base RTT from"
    } else {
        "base RTT"
    };
    format!(
        "{} (down {}, up {}; {rtt} {})",
        l.name,
        rate(&l.down.rate),
        rate(&l.up.rate),
        satquic_link::units::format_duration(l.base_rtt()),
    )
}

/// The closing lines of both modes: per direction, packets forwarded, drops, scheduling
/// error.
fn totals(last: &satquic_net::RelaySnapshot) -> Result<(), Failure> {
    let error = |q: Option<Duration>| {
        q.map(satquic_link::units::format_duration)
            .unwrap_or_else(|| "-".into())
    };
    if last.cap.stats.offered.packets > 0 {
        outln!(
            "sender cap: {} packets in, {} dropped at its queue",
            last.cap.stats.offered.packets,
            last.cap.stats.dropped_total().packets
        )?;
    }
    for (name, d) in [("down", &last.down), ("up", &last.up)] {
        outln!(
            "{name}: forwarded {} packets, modelled drops {}, delay error p50 {} p99 {}",
            d.forwarded_packets,
            d.stats.dropped_total().packets,
            error(d.delay_error.quantile(0.5)),
            error(d.delay_error.quantile(0.99))
        )?;
    }
    Ok(())
}

/// `--tun`: namespaces, devices and the model until the duration ends or a signal comes;
/// the namespaces are removed on every way out.
fn run_tun(args: &Args, link: Option<LinkSpec>, duration: Option<Duration>) -> Result<(), Failure> {
    use satquic_net::tun::{self, TunLink, TunOptions};
    let mut options = TunOptions::new(link.clone());
    options.seed = args.seed;
    options.sender_cap = sender_cap(args)?;
    options.client_ns = args.client_ns.clone();
    options.server_ns = args.server_ns.clone();
    options.client_addr = args.client_addr;
    options.server_addr = args.server_addr;
    options.flow_books = args.flows_json.is_some();
    // Before the namespaces exist: a signal from now on removes them.
    tun::stop_on_termination_signals();
    let tun = TunLink::start(options).map_err(net_failure)?;
    let (c, s) = (&args.client_ns, &args.server_ns);
    let (ca, sa) = (args.client_addr, args.server_addr);
    let model = link
        .as_ref()
        .map_or_else(|| "no limits (forwarding at once)".to_string(), link_text);
    outln!(
        "satquic link --tun {c} ({ca}) <-> {s} ({sa}): {model}; client -> server is up, server -> client down"
    )?;
    outln!("run a command in each namespace, e.g.:")?;
    outln!("  ip netns exec {s} satquic server --listen {sa}:4433")?;
    outln!("  ip netns exec {c} satquic client {sa}:4433 --insecure -n 10M")?;
    outln!("  ip netns exec {c} iperf3 -s -1; ip netns exec {s} iperf3 -c {ca} -n 10M")?;
    let start = std::time::Instant::now();
    let mut before = tun.snapshot();
    let mut last = start;
    let mut printed = Ok(());
    while !tun::termination_requested() && duration.is_none_or(|d| start.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(50));
        if last.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let now = tun.snapshot();
        let secs = last.elapsed().as_secs_f64();
        last = std::time::Instant::now();
        if !args.quiet {
            // A closed stdout must not leave the namespaces behind: stop, then report.
            printed = outln!(
                "[{:7.1} s] {} | {}",
                now.at.as_secs_f64(),
                direction_line("down", &now.down, &before.down, secs),
                direction_line("up", &now.up, &before.up, secs),
            );
            if printed.is_err() {
                break;
            }
        }
        before = now;
    }
    let started = unix_ms(tun.epoch_wall());
    let stopped = tun.stop();
    let written = write_summary(args, started, &stopped.snapshot, stopped.path.as_ref())
        .and(write_flows(args, &stopped.ledger.report()));
    printed?;
    totals(&stopped.snapshot)?;
    outln!("namespaces {c} and {s} removed")?;
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn spec(argv: &[&str]) -> Result<Option<LinkSpec>, Failure> {
        let base = ["link", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2"];
        let cli = Cli::try_parse_from(base.iter().chain(argv.iter()).copied()).unwrap();
        link_spec(&cli.args)
    }

    #[test]
    fn flags_build_the_link() {
        assert!(spec(&[]).ok().unwrap().is_none());
        let l = spec(&["--link", "qir-sat", "--down-rate", "10M"])
            .ok()
            .unwrap()
            .unwrap();
        assert_eq!(l.down.rate.nominal_rate_bps(), 10_000_000);
        assert_eq!(l.up.rate.nominal_rate_bps(), 2_000_000);
        // The old spellings still work.
        let old = spec(&["--preset", "qir-sat", "--down-rate", "10M"]);
        assert_eq!(old.ok().unwrap().unwrap(), l);
        let l = spec(&["--rate", "20M", "--delay", "50ms", "--queue", "1bdp"])
            .ok()
            .unwrap()
            .unwrap();
        assert_eq!(l.base_rtt(), Duration::from_millis(100));
        assert_eq!(l.down.queue.limit, QueueLimit::Bdp(1.0));
    }

    #[test]
    fn bad_link_flags_are_usage_errors() {
        for argv in [
            &["--link", "mars"][..],
            &["--preset", "mars"],
            &["--link", "/nonexistent.toml"],
            &["--rate", "fast"],
            &["--delay", "5"],
            &["--queue", "xbdp"],
            &["--loss", "2"],
            &["--toml", "/nonexistent.toml"],
        ] {
            match spec(argv) {
                Err(Failure::Usage(m)) => assert!(!m.contains('\n'), "{m}"),
                _ => panic!("{argv:?} accepted"),
            }
        }
    }
}
