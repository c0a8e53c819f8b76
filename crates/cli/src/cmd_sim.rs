//! `satquic sim`: downloads over a simulated link in virtual time, many seeds in parallel,
//! one or more congestion-control variants side by side.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use satquic_sim::batch::{Quartiles, Variant, VariantStats, run_batch};
use satquic_sim::probe::validate_cc;
use satquic_sim::record::{Timing, WriteOptions};
use satquic_sim::scenario::{ShaperSpec, first_line, parse_size, resolve_link};
use satquic_sim::{MB, Scenario, TransportSpec};

use crate::Failure;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  satquic sim --link geo-viasat --cc cubic --cc cubic+search -n 200M --runs 20 --jobs 2\n  \
satquic sim --link my-link.toml --cc newreno+hystart++ -n 10MiB -J"
)]
pub struct Args {
    /// Link preset (see `satquic presets`) or a TOML link file.
    #[arg(long, value_name = "PRESET|FILE", default_value = "geo-viasat")]
    link: String,
    /// Congestion control spec (e.g. cubic, cubic+search, newreno+hystart++); repeat to
    /// compare variants side by side.
    #[arg(long = "cc", value_name = "SPEC")]
    cc: Vec<String>,
    /// Bytes to download: K, M, G = 10^3, 10^6, 10^9; Ki, Mi, Gi = 2^10, 2^20, 2^30.
    #[arg(
        short = 'n',
        long = "bytes",
        value_name = "SIZE",
        default_value = "200M",
        allow_hyphen_values = true
    )]
    bytes: String,
    /// Time cap per run: seconds, or a number with a unit (500ms, 2min).
    #[arg(
        short = 't',
        long = "time",
        value_name = "SECONDS",
        default_value = "60",
        allow_hyphen_values = true
    )]
    time: String,
    /// Seed of the first run; run i uses seed + i.
    #[arg(
        long,
        value_name = "N",
        default_value = "1",
        allow_hyphen_values = true
    )]
    seed: String,
    /// Runs per variant.
    #[arg(
        long,
        value_name = "N",
        default_value = "1",
        allow_hyphen_values = true
    )]
    runs: String,
    /// Parallel runs (default: number of cores).
    #[arg(short = 'j', long, value_name = "N", allow_hyphen_values = true)]
    jobs: Option<String>,
    /// Write each run's record to DIR/<variant>/seed-<n>/ and the statistics to DIR/sim.json.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Initial congestion window (bytes, size suffixes allowed).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    iw: Option<String>,
    /// Receive windows (connection and stream) of the client, e.g. 16M; default 256Mi.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    rwnd: Option<String>,
    /// Rate cap at the server's interface, as the seeds' tc TBF (seed 000 Sec. 4.7):
    /// RATE in bit/s with K/M/G suffixes and an optional queue latency (200M:1.5s), or
    /// `none`.
    #[arg(long, value_name = "RATE[:LATENCY]|none", default_value = "200M:1.5s")]
    sender_cap: String,
    /// UDP payload size in bytes (>= 1200).
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "1200",
        allow_hyphen_values = true
    )]
    mtu: String,
    /// With --out: also write each run's qlog, DIR/<variant>/seed-<n>/qlog.sqlog (qlog 0.3
    /// JSON-SEQ for qvis; the server's view; times are virtual ms since the run start).
    #[arg(long, requires = "out")]
    qlog: bool,
    /// JSON on stdout instead of the table.
    #[arg(short = 'J', long = "json")]
    json: bool,
}

fn usage(msg: impl std::fmt::Display) -> Failure {
    Failure::Usage(format!("sim: {}", first_line(&msg.to_string())))
}

fn parse_count(what: &str, text: &str, min: u64, max: u64) -> Result<u64, Failure> {
    let n: u64 = text
        .trim()
        .parse()
        .map_err(|_| usage(format!("invalid {what} '{text}': expected a whole number")))?;
    if n < min || n > max {
        return Err(usage(format!(
            "invalid {what} '{text}': must be between {min} and {max}"
        )));
    }
    Ok(n)
}

fn parse_time(text: &str) -> Result<Duration, Failure> {
    let t = text.trim();
    let d = if t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        t.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite())
            .map(Duration::from_secs_f64)
            .ok_or_else(|| usage(format!("invalid time '{text}': expected seconds")))?
    } else {
        satquic_link::units::parse_duration(t).map_err(|e| usage(format!("invalid time: {e}")))?
    };
    if d.is_zero() || d > Duration::from_secs(24 * 3600) {
        return Err(usage(format!(
            "invalid time '{text}': must be above 0 and at most 24 h"
        )));
    }
    Ok(d)
}

fn parse_sender_cap(text: &str) -> Result<Option<ShaperSpec>, Failure> {
    ShaperSpec::parse_cap(text).map_err(usage)
}

/// Directory name for a variant: its spec with path-unfriendly characters replaced.
fn variant_dir(label: &str, taken: &mut BTreeSet<String>) -> String {
    let base: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "+-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut name = base.clone();
    let mut k = 2;
    while !taken.insert(name.clone()) {
        name = format!("{base}-{k}");
        k += 1;
    }
    name
}

/// MB marks reported: 50/100/150/200 up to the download size, or the size itself when
/// it is below 50 MB.
fn marks_for(bytes: u64) -> Vec<u64> {
    let marks: Vec<u64> = [50, 100, 150, 200]
        .into_iter()
        .filter(|m| m * MB <= bytes)
        .collect();
    if marks.is_empty() && bytes >= MB {
        vec![bytes / MB]
    } else {
        marks
    }
}

pub fn run(args: Args) -> Result<(), Failure> {
    let link = resolve_link(&args.link).map_err(usage)?;
    let bytes = parse_size(&args.bytes).map_err(usage)?;
    let time_cap = parse_time(&args.time)?;
    let seed = parse_count("seed", &args.seed, 0, u64::MAX)?;
    let runs = parse_count("runs", &args.runs, 1, 1_000_000)? as usize;
    let default_jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = match &args.jobs {
        Some(j) => parse_count("jobs", j, 1, 1024)? as usize,
        None => default_jobs,
    };
    let mtu = parse_count("mtu", &args.mtu, 1200, 65_527)? as u16;
    let ccs = if args.cc.is_empty() {
        vec!["cubic+search".to_string()]
    } else {
        args.cc.clone()
    };
    let mut transport = TransportSpec {
        mtu,
        ..TransportSpec::default()
    };
    if let Some(iw) = &args.iw {
        transport.initial_window = Some(parse_size(iw).map_err(usage)?);
    }
    if let Some(rwnd) = &args.rwnd {
        let w = parse_size(rwnd).map_err(usage)?;
        if w >= 1 << 62 {
            return Err(usage(format!("invalid rwnd '{rwnd}': too large")));
        }
        transport.receive_window = w;
        transport.stream_receive_window = w;
    }
    transport.sender_shaper = parse_sender_cap(&args.sender_cap)?;
    // Validate everything once, up front, so bad input is one line and no run starts.
    satquic_link::Path::<()>::new(&link, seed).map_err(usage)?;
    let mut variants = Vec::new();
    for cc in &ccs {
        validate_cc(cc).map_err(usage)?;
        let scenario = Scenario::download(
            link.clone(),
            TransportSpec {
                cc: cc.clone(),
                ..transport.clone()
            },
            bytes,
            seed,
        )
        .with_time_cap(time_cap);
        variants.push(Variant {
            label: cc.clone(),
            scenario,
        });
    }
    let mut taken = BTreeSet::new();
    let dirs: Vec<String> = variants
        .iter()
        .map(|v| variant_dir(&v.label, &mut taken))
        .collect();
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)
            .map_err(|e| usage(format!("cannot create {}: {e}", out.display())))?;
    }

    let total = (runs * variants.len()) as u64;
    let progress = if !args.json && std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed} (eta {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let write_error: Mutex<Option<String>> = Mutex::new(None);
    let results = run_batch(&variants, runs, seed, jobs, |result| {
        if let (Some(out), Ok(record)) = (&args.out, &result.record) {
            let dir = out
                .join(&dirs[result.variant])
                .join(format!("seed-{}", result.seed));
            let written = record
                .write_to_with(&dir, &WriteOptions { qlog: args.qlog })
                .and_then(|()| Timing::new(result.wall, record.sim_time).write_to(&dir));
            if let Err(e) = written {
                let mut slot = write_error.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(format!("cannot write {}: {e}", dir.display()));
            }
        }
        progress.inc(1);
    })
    .map_err(|e| Failure::Other(e.to_string()))?;
    progress.finish_and_clear();
    if let Some(e) = write_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(Failure::Other(e));
    }
    if let Some(err) = results.iter().find_map(|r| r.record.as_ref().err()) {
        return Err(Failure::Other(err.to_string()));
    }

    let marks = marks_for(bytes);
    let stats: Vec<VariantStats> = variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            VariantStats::from_records(
                &v.label,
                results
                    .iter()
                    .filter(|r| r.variant == i)
                    .filter_map(|r| r.record.as_ref().ok()),
                &marks,
            )
        })
        .collect();
    let per_run: Vec<serde_json::Value> = results
        .iter()
        .filter_map(|r| {
            let record = r.record.as_ref().ok()?;
            let f = record.summary.flows.first()?;
            Some(serde_json::json!({
                "variant": variants[r.variant].label,
                "seed": r.seed,
                "status": f.status,
                "completion_time_s": f.completion_time_s,
                "exit_class": f.exit_class,
                "exit_at_s": f.slow_start_exit.as_ref().map(|e| e.at_s),
                "exit_reason": f.slow_start_exit.as_ref().map(|e| e.reason),
                "capacity_at_s": f.capacity_at_s,
                "first_loss_detected_at_s": f.first_loss_detected_at_s,
                "packets_lost": f.packets_lost,
                "goodput_bps": f.goodput_bps,
                "wall_s": r.wall.as_secs_f64(),
            }))
        })
        .collect();
    let report = serde_json::json!({
        "link": link.name,
        "bytes": bytes,
        "time_cap_s": time_cap.as_secs_f64(),
        "runs": runs,
        "first_seed": seed,
        "variants": stats,
        "per_run": per_run,
    });
    if let Some(out) = &args.out {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        satquic_sim::record::write_atomic(out, "sim.json", text.as_bytes())
            .map_err(|e| Failure::Other(format!("cannot write {}: {e}", out.display())))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&link.name, bytes, runs, seed, &stats, args.out.as_deref());
    }
    Ok(())
}

fn print_table(
    link: &str,
    bytes: u64,
    runs: usize,
    seed: u64,
    stats: &[VariantStats],
    out: Option<&Path>,
) {
    let last_seed = seed.wrapping_add(runs as u64 - 1);
    println!(
        "satquic sim: {link}, {} per run, {runs} run{} per variant (seeds {seed}..={last_seed})",
        satquic_link::units::format_bytes(bytes),
        if runs == 1 { "" } else { "s" },
    );
    let row = |name: &str, q: Option<&Quartiles>, scale: f64| match q {
        Some(q) => println!(
            "  {name:<22} {:>9.2} {:>9.2} {:>9.2} {:>5}",
            q.median * scale,
            q.q1 * scale,
            q.q3 * scale,
            q.n
        ),
        None => println!("  {name:<22} {:>9} {:>9} {:>9} {:>5}", "-", "-", "-", 0),
    };
    for s in stats {
        println!();
        println!(
            "{}: {} runs, {} completed, {} capped, {} failed",
            s.label, s.runs, s.completed, s.capped, s.failed
        );
        println!(
            "  {:<22} {:>9} {:>9} {:>9} {:>5}",
            "", "median", "q1", "q3", "n"
        );
        row("completion (s)", s.completion_s.as_ref(), 1.0);
        for (mb, q) in &s.time_to_mb_s {
            row(&format!("time to {mb} MB (s)"), q.as_ref(), 1.0);
        }
        row("slow-start exit (s)", s.exit_s.as_ref(), 1.0);
        row("first loss seen (s)", s.first_loss_s.as_ref(), 1.0);
        row("packets lost", s.packets_lost.as_ref(), 1.0);
        row("goodput (Mbit/s)", s.goodput_bps.as_ref(), 1e-6);
        let classes: Vec<String> = satquic_sim::record::EXIT_CLASSES
            .iter()
            .map(|class| {
                format!(
                    "{class} {}",
                    s.exit_classes.get(*class).copied().unwrap_or(0)
                )
            })
            .collect();
        println!("  exit classes: {}", classes.join(", "));
        println!(
            "  runs with a detected loss: {} of {}",
            s.runs_with_loss, s.runs
        );
    }
    if let Some(out) = out {
        println!();
        println!("records in {}", out.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: Args,
    }

    fn args(argv: &[&str]) -> Args {
        let mut full = vec!["sim"];
        full.extend_from_slice(argv);
        TestCli::try_parse_from(full)
            .expect("clap accepts the flags")
            .args
    }

    fn usage_error(argv: &[&str]) -> String {
        match run(args(argv)) {
            Err(Failure::Usage(msg)) => msg,
            Err(Failure::Other(msg)) => panic!("{argv:?}: not a usage error: {msg}"),
            Ok(()) => panic!("{argv:?}: accepted"),
        }
    }

    #[test]
    fn bad_input_is_a_one_line_usage_error() {
        std::fs::write(
            std::env::temp_dir().join("satquic-bad-link.toml"),
            "down = 3\n",
        )
        .unwrap();
        let bad_toml = std::env::temp_dir().join("satquic-bad-link.toml");
        let cases: Vec<Vec<&str>> = vec![
            vec!["--link", "no-such-preset"],
            vec!["--link", bad_toml.to_str().unwrap()],
            vec!["--link", "/nonexistent/link.toml"],
            vec!["-n", "12Q"],
            vec!["-n", "0"],
            vec!["-n", "5T"],
            vec!["--runs", "0"],
            vec!["--runs", "-1"],
            vec!["--time", "-3"],
            vec!["--time", "0"],
            vec!["--seed", "x"],
            vec!["--jobs", "0"],
            vec!["--cc", "bogus"],
            vec!["--cc", "cubic", "--cc", "cubic+search:v9"],
            vec!["--mtu", "100"],
            vec!["--sender-cap", "fast"],
            vec!["--rwnd", "0"],
        ];
        for case in cases {
            let msg = usage_error(&case);
            assert!(!msg.contains('\n'), "{case:?}: {msg}");
            assert!(msg.starts_with("sim: "), "{case:?}: {msg}");
        }
    }

    #[test]
    fn a_small_run_prints_its_table_and_writes_its_records() {
        let out = std::env::temp_dir().join(format!("satquic-sim-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let argv = [
            "--link",
            "qir-sat",
            "--cc",
            "cubic",
            "--cc",
            "cubic+search",
            "-n",
            "2M",
            "--runs",
            "2",
            "--jobs",
            "2",
            "--seed",
            "5",
            "--out",
            out.to_str().unwrap(),
        ];
        assert!(run(args(&argv)).is_ok());
        for variant in ["cubic", "cubic+search"] {
            for seed in [5, 6] {
                let dir = out.join(variant).join(format!("seed-{seed}"));
                for file in [
                    "summary.json",
                    "chunks.csv",
                    "events.jsonl",
                    "series.csv",
                    "timing.json",
                ] {
                    assert!(
                        dir.join(file).is_file(),
                        "{} missing",
                        dir.join(file).display()
                    );
                }
            }
        }
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("sim.json")).unwrap()).unwrap();
        assert_eq!(report["variants"].as_array().unwrap().len(), 2);
        assert_eq!(report["per_run"].as_array().unwrap().len(), 4);
        assert_eq!(report["variants"][0]["completed"], 2);
        // The same seed again gives the same summary.json.
        let first = std::fs::read(out.join("cubic/seed-5/summary.json")).unwrap();
        assert!(run(args(&argv)).is_ok());
        assert_eq!(
            first,
            std::fs::read(out.join("cubic/seed-5/summary.json")).unwrap()
        );
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn qlog_writes_a_qlog_next_to_each_record_and_needs_out() {
        let out = std::env::temp_dir().join(format!("satquic-sim-qlog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let argv = [
            "--link",
            "qir-terrestrial",
            "--cc",
            "cubic",
            "-n",
            "1M",
            "--out",
            out.to_str().unwrap(),
            "--qlog",
        ];
        assert!(run(args(&argv)).is_ok());
        let qlog = std::fs::read(out.join("cubic/seed-1/qlog.sqlog")).unwrap();
        assert_eq!(qlog.first(), Some(&0x1e));
        let header = qlog[1..].split(|b| *b == b'\n').next().unwrap();
        let header: serde_json::Value = serde_json::from_slice(header).unwrap();
        assert_eq!(header["qlog_version"], "0.3");
        std::fs::remove_dir_all(&out).ok();
        assert!(
            TestCli::try_parse_from(["sim", "--qlog"]).is_err(),
            "--qlog without --out has nowhere to go"
        );
    }

    #[test]
    fn marks_stop_at_the_download_size() {
        assert_eq!(marks_for(200 * MB), vec![50, 100, 150, 200]);
        assert_eq!(marks_for(120 * MB), vec![50, 100]);
        assert_eq!(marks_for(10 * MB), vec![10]);
        assert_eq!(marks_for(1000), Vec::<u64>::new());
    }
}
