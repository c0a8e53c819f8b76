//! `satquic run`: an emulated run (server, relay and client in one process on loopback,
//! real sockets, real time) writing the same run record as `satquic sim`.

use std::path::PathBuf;
use std::time::Duration;

use satquic_run::units::parse_size;
use satquic_run::{Scenario, TransportSpec, Workload};

use crate::Failure;
use crate::cmd_client::{compose_cc, net_failure};

#[derive(clap::Args)]
pub struct Args {
    /// Link preset (see `satquic presets`) or a TOML link file.
    #[arg(long, value_name = "PRESET|FILE", default_value = "qir-sat")]
    link: String,
    /// Congestion control spec of the server (the data sender).
    #[arg(long, value_name = "SPEC", default_value = "cubic")]
    cc: String,
    /// Slow start to combine with --cc.
    #[arg(long, value_name = "SS")]
    ss: Option<String>,
    /// Bytes to download (k/M/G decimal, Ki/Mi/Gi binary).
    #[arg(
        short = 'n',
        long = "bytes",
        value_name = "SIZE",
        default_value = "10M"
    )]
    bytes: String,
    /// Time cap (seconds, or `500ms`, `2min`).
    #[arg(
        short = 't',
        long = "time",
        value_name = "DURATION",
        default_value = "60s",
        allow_negative_numbers = true
    )]
    time: String,
    /// Seed of the link's random processes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Initial congestion window (bytes, size suffixes allowed).
    #[arg(long, value_name = "SIZE")]
    iw: Option<String>,
    /// Flow-control windows, e.g. 16M; default 256Mi (`--rwnd` is the same flag).
    #[arg(long, value_name = "SIZE", visible_alias = "rwnd")]
    max_window: Option<String>,
    /// UDP payload size in bytes (1200 to 16383).
    #[arg(long, value_name = "BYTES", default_value_t = 1200)]
    mtu: u16,
    /// Write the run record (summary.json, chunks.csv, events.jsonl, series.csv,
    /// timing.json) into DIR.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print summary.json instead of a text summary.
    #[arg(short = 'J', long)]
    json: bool,
}

fn link(name: &str) -> Result<satquic_link::LinkSpec, Failure> {
    satquic_run::resolve_link(name).map_err(Failure::Usage)
}

pub fn scenario(args: &Args) -> Result<Scenario, Failure> {
    let cc = compose_cc(&args.cc, args.ss.as_deref(), None).map_err(Failure::Usage)?;
    let bytes = parse_size(&args.bytes).map_err(|e| Failure::Usage(format!("-n: {e}")))?;
    if bytes == 0 {
        return Err(Failure::Usage("-n must be at least 1 byte".into()));
    }
    let time_cap = crate::seconds::duration(
        "-t",
        &args.time,
        crate::seconds::SHORTEST..=crate::seconds::DAY,
    )?;
    let mut transport = TransportSpec::with_spec(cc);
    if let Some(iw) = &args.iw {
        transport.initial_window =
            Some(parse_size(iw).map_err(|e| Failure::Usage(format!("--iw: {e}")))?);
    }
    if let Some(w) = &args.max_window {
        let w = parse_size(w).map_err(|e| Failure::Usage(format!("--max-window: {e}")))?;
        transport.receive_window = w;
        transport.stream_receive_window = w;
        transport.send_window = w;
    }
    transport.mtu = args.mtu;
    let mut s =
        Scenario::download(link(&args.link)?, transport, bytes, args.seed).with_time_cap(time_cap);
    s.flows[0].workload = Workload::Download { bytes };
    satquic_net::emulated::validate(&s).map_err(net_failure)?;
    Ok(s)
}

pub fn run(args: Args) -> Result<(), Failure> {
    let scenario = scenario(&args)?;
    let outcome = emulate(&args, &scenario)?;
    // An incomplete run (capped, failed) exits 1 after its results are written and printed.
    if outcome != "completed" {
        return Err(Failure::Other(format!(
            "the run ended {outcome}: the results above are incomplete"
        )));
    }
    Ok(())
}

/// Runs, writes and prints; returns the run's outcome.
fn emulate(args: &Args, scenario: &Scenario) -> Result<String, Failure> {
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Usage(format!("--out {}: {e}", dir.display())))?;
    }
    let run = satquic_net::emulated::run_emulated(scenario).map_err(net_failure)?;
    let outcome = run.record.summary.outcome.clone();
    if let Some(dir) = &args.out {
        run.record
            .write_to(dir)
            .and_then(|()| run.timing.write_to(dir))
            .map_err(|e| Failure::Other(format!("cannot write {}: {e}", dir.display())))?;
    }
    if args.json {
        out!("{}", run.record.summary_json())?;
        return Ok(outcome);
    }
    let f = &run.record.summary.flows[0];
    outln!(
        "emulated {} over {} ({}): {}",
        f.cc,
        scenario.link.name,
        satquic_run::units::format_bytes(f.requested_bytes.unwrap_or(0)),
        run.record.summary.outcome
    )?;
    match f.completion_time_s {
        Some(t) => outln!(
            "completion {:.3} s, goodput {:.2} Mbit/s, handshake {:.3} s",
            t,
            f.goodput_bps / 1e6,
            f.handshake_time_s.unwrap_or(0.0)
        )?,
        None => outln!(
            "delivered {} of the requested bytes",
            satquic_run::units::format_bytes(f.delivered_bytes)
        )?,
    }
    if let Some(e) = &f.slow_start_exit {
        outln!(
            "slow-start exit at {:.3} s ({}), class {}",
            e.at_s,
            e.reason,
            f.exit_class
        )?;
    }
    let drops = if f.link_drops.values().all(|n| *n == 0) {
        "none".to_string()
    } else {
        f.link_drops
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(why, n)| format!("{n} {why}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let error = |q: Option<Duration>| {
        q.map(satquic_link::units::format_duration)
            .unwrap_or_else(|| "-".into())
    };
    outln!(
        "packets sent {}, lost {}, link drops {drops}; relay delay error p50 {} p99 {}",
        f.packets_sent,
        f.packets_lost,
        error(run.relay.down.delay_error.quantile(0.5)),
        error(run.relay.down.delay_error.quantile(0.99))
    )?;
    for mb in [1u64, 10, 50, 100, 200] {
        if let Some(t) = run.record.time_to_mb(0, mb) {
            outln!("time to {mb:>3} MB: {t:.3} s")?;
        }
    }
    Ok(outcome)
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

    fn build(argv: &[&str]) -> Result<Scenario, Failure> {
        let cli = Cli::try_parse_from(std::iter::once("run").chain(argv.iter().copied())).unwrap();
        scenario(&cli.args)
    }

    #[test]
    fn scenario_from_flags() {
        let s = build(&[
            "--link", "qir-sat", "--cc", "cubic", "--ss", "search", "-n", "5M",
        ])
        .ok()
        .unwrap();
        assert_eq!(s.flows[0].transport.cc, "cubic+search");
        assert_eq!(s.flows[0].workload, Workload::Download { bytes: 5_000_000 });
        for argv in [
            &["--link", "nowhere"][..],
            &["--cc", "warp"],
            &["-n", "0"],
            &["-n", "lots"],
            &["-t", "0"],
            &["--mtu", "500"],
        ] {
            match build(argv) {
                Err(Failure::Usage(m)) => assert!(!m.contains('\n'), "{m}"),
                _ => panic!("{argv:?} accepted"),
            }
        }
    }
}
