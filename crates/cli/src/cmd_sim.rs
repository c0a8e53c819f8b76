//! `satquic sim`: downloads over a simulated link in virtual time, many seeds in parallel,
//! one or more congestion-control variants side by side.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use satquic_cc::CcSpec;
use satquic_lab::exec::{ExecOptions, Finished, execute_plan};
use satquic_lab::plan::Plan;
use satquic_lab::spec::{
    AnalysisSpec, CampaignSpec, LinkEntry, Mode, Size, VariantEntry, WorkloadEntry, WorkloadKind,
};
use satquic_lab::stats::{Quartiles, VariantStats};
use satquic_run::record::sorted_keys;
use satquic_run::units::parse_size;
use satquic_run::{LinkSource, MB, RunRecord, ShaperSpec, first_line};

use crate::Failure;

#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  satquic sim --link geo-viasat --cc cubic --cc cubic+search -n 200M --runs 20 --jobs 2\n  \
satquic sim --link my-link.toml --cc newreno+hystart++ -n 10MiB -J\n  \
satquic sim --link thesis-sat:plr=0.01 --cc bbr3 --cc bbr --cc cubic -n 10MB"
)]
pub struct Args {
    /// Link preset (see `satquic presets`) or a TOML link file.
    #[arg(long, value_name = "PRESET|FILE", default_value = "geo-viasat")]
    link: String,
    /// Congestion control spec (e.g. cubic, cubic+search, newreno+hystart++); repeat to
    /// compare variants side by side [default: cubic+search].
    #[arg(long = "cc", value_name = "SPEC")]
    cc: Vec<String>,
    /// Slow start to combine with every --cc (`classic`, `hystart`, `hystart++`, `hybla`,
    /// `search`), as on run, client and server; with no --cc, cubic.
    #[arg(long, value_name = "SS")]
    ss: Option<String>,
    /// Bytes to transfer: K, M, G = 10^3, 10^6, 10^9; Ki, Mi, Gi = 2^10, 2^20, 2^30.
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
    /// Write the runs as a campaign directory (DIR/campaign.json, DIR/runs.csv,
    /// DIR/runs/<run id>/, as `satquic campaign run` does; `satquic report DIR` reads it)
    /// and the statistics to DIR/sim.json.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Initial congestion window (bytes, size suffixes allowed).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    iw: Option<String>,
    /// Receive windows (connection and stream) of the client, e.g. 16M; default 256Mi
    /// (`--max-window` on the other commands, accepted here too).
    #[arg(
        long,
        value_name = "SIZE",
        allow_hyphen_values = true,
        visible_alias = "max-window"
    )]
    rwnd: Option<String>,
    /// Rate cap at the data sender's interface, as the seeds' tc TBF (seed 000 Sec. 4.7):
    /// RATE in bit/s with K/M/G suffixes and an optional queue latency (200M:1.5s),
    /// `none`, or `auto`: the seeds' 200M:1.5s, except on links whose data direction is
    /// faster than that (there the cap would be the bottleneck), which run uncapped.
    #[arg(long, value_name = "RATE[:LATENCY]|none|auto", default_value = "auto")]
    sender_cap: String,
    /// ACK frequency the data sender asks for (draft-ietf-quic-ack-frequency): N[:DELAY],
    /// an ACK at least every N packets and at most DELAY after the first (32:25ms), or off;
    /// N:DELAY:cwnd/D also at least every cwnd/D bytes, following the window (16:25ms:cwnd/4).
    #[arg(long = "ack-freq", value_name = "N[:DELAY][:cwnd/D]|off")]
    ack_frequency: Option<String>,
    /// Reverse: the client sends (an upload, timed to the last byte the server has), as
    /// picoquic's satellite tests do; the data crosses the link's up direction.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Resume: each run makes a first connection, then GAP later (default 10s) a second
    /// one that resumes from it (TLS 0-RTT, address-validation token, Careful Resume,
    /// RFC 9959); the results describe the second, plus `first_completion_time_s`.
    #[arg(
        long,
        value_name = "GAP",
        num_args = 0..=1,
        default_missing_value = "10s",
        require_equals = true
    )]
    resume: Option<String>,
    /// Flows sharing the link, each its own connection with its own client and server
    /// (seed 004's fairness runs); the table describes flow 0, the JSON every flow and
    /// Jain's index of their goodputs [default: 1; with --mix, one per --cc].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    flows: Option<String>,
    /// With --flows: flow i starts i x DURATION after the first (seed 004's latecomer).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "0",
        allow_hyphen_values = true
    )]
    stagger: String,
    /// Mix the --cc specs on one bottleneck instead of comparing them run by run: one
    /// variant whose flows take them in turn (flow 0 the first --cc, flow 1 the second,
    /// ...; seed 004's BBR against CUBIC). Needs two --cc or more.
    #[arg(long)]
    mix: bool,
    /// UDP payload size in bytes (1200 to 16383).
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "1200",
        allow_hyphen_values = true
    )]
    mtu: String,
    /// With --out: also write each run's qlogs (qlog 0.3 JSON-SEQ for qvis; times are
    /// virtual ms since the run start): DIR/runs/<run id>/qlog.sqlog (the record, the
    /// server's view) and, per connection and end, <odcid>_<client|server>.sqlog
    /// (quinn-proto's packet and recovery events merged with satquic's; the run directory
    /// is a QLOGDIR as the QUIC interop runner has it). One event per packet: large.
    #[arg(long, requires = "out")]
    qlog: bool,
    /// Packet protection: `null` keeps the real TLS handshake but skips the per-packet
    /// cipher (plaintext payload, a checksum tag of AES-GCM's length, no header mask), which
    /// gives the same records faster; `tls` protects packets with the negotiated AES-128-GCM.
    #[arg(long, value_name = "null|tls", default_value = "null")]
    packet_cipher: satquic_lab::exec::PacketCipher,
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

/// The seeds' sender cap ([`ShaperSpec::seeds_server`] as text), which `--sender-cap auto`
/// applies where it is not the bottleneck.
const SEEDS_SENDER_CAP: &str = "200M:1.5s";

/// `--sender-cap` as given, or for `auto` the seeds' cap unless the data direction of the
/// link (nominal rate `link_bps`) is faster than it.
fn resolve_cap(text: &str, link_bps: u64) -> String {
    if !text.trim().eq_ignore_ascii_case("auto") {
        return text.to_string();
    }
    match ShaperSpec::auto_for(link_bps) {
        Some(_) => SEEDS_SENDER_CAP.into(),
        None => "none".into(),
    }
}

fn parse_time(text: &str) -> Result<Duration, Failure> {
    crate::seconds::duration("-t", text, crate::seconds::SHORTEST..=crate::seconds::DAY).map_err(
        |e| match e {
            Failure::Usage(m) => usage(m),
            other => other,
        },
    )
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

/// One run's figures, as the hook saw them (records are not kept: their series would
/// not fit in memory for thousands of runs).
struct Done {
    variant: usize,
    rep: u32,
    seed: u64,
    /// The record without its series and events, or why there is none.
    record: Result<RunRecord, String>,
    /// Jain's index of the flows' goodputs (runs.csv's `jain_index`).
    jain_index: Option<f64>,
    wall: Duration,
}

/// The flags, checked and resolved, in the order the checks run (the first bad flag is
/// the one reported).
struct Input {
    link: satquic_link::LinkSpec,
    link_source: LinkSource,
    bytes: u64,
    time_cap: Duration,
    seed: u64,
    runs: u32,
    jobs: usize,
    flows: u32,
    stagger: Duration,
    mtu: u16,
    /// One congestion-control spec per variant (a mix is one, its specs joined).
    ccs: Vec<String>,
    iw: Option<u64>,
    rwnd: Option<Size>,
    /// `--sender-cap` with `auto` resolved for the link.
    sender_cap: String,
    resume_after: Option<Duration>,
}

impl Input {
    /// Checks every flag once, up front, so bad input is one line and no run starts.
    fn parse(args: &Args) -> Result<Self, Failure> {
        let link_source = LinkSource::parse(&args.link);
        let link = link_source.resolve().map_err(usage)?;
        let bytes = parse_size(&args.bytes).map_err(usage)?;
        let time_cap = parse_time(&args.time)?;
        let seed = parse_count("seed", &args.seed, 0, u64::MAX)?;
        let runs = parse_count(
            "runs",
            &args.runs,
            1,
            satquic_lab::plan::MAX_REPETITIONS as u64,
        )? as u32;
        let jobs = parse_jobs(args.jobs.as_deref())?;
        let (flows, stagger) = parse_flows(args)?;
        let mtu = parse_count(
            "mtu",
            &args.mtu,
            satquic_run::transport::MIN_MTU.into(),
            satquic_run::transport::MAX_MTU.into(),
        )? as u16;
        let ccs = compose_ccs(args)?;
        let iw = args
            .iw
            .as_deref()
            .map(parse_size)
            .transpose()
            .map_err(usage)?;
        let rwnd = parse_rwnd(args.rwnd.as_deref())?;
        check_transport(&ccs[0], iw, mtu)?;
        let data_direction = if args.reverse { &link.up } else { &link.down };
        let sender_cap = resolve_cap(&args.sender_cap, data_direction.rate.nominal_rate_bps());
        ShaperSpec::parse_cap(&sender_cap).map_err(usage)?;
        if let Some(a) = &args.ack_frequency {
            satquic_run::scenario::AckFrequencySpec::parse(a).map_err(usage)?;
        }
        let resume_after = parse_resume(args.resume.as_deref())?;
        satquic_link::Path::<()>::new(&link, seed).map_err(usage)?;
        let ccs: Vec<String> = ccs.iter().map(CcSpec::to_string).collect();
        // A mix is one variant whose flows take the specs in turn (the lab's `cc = "a|b"`).
        let ccs = if args.mix {
            vec![ccs.join(&satquic_lab::spec::MIX_SEPARATOR.to_string())]
        } else {
            ccs
        };
        Ok(Input {
            link,
            link_source,
            bytes,
            time_cap,
            seed,
            runs,
            jobs,
            flows,
            stagger,
            mtu,
            ccs,
            iw,
            rwnd,
            sender_cap,
            resume_after,
        })
    }
}

/// `--jobs`, or the number of cores.
fn parse_jobs(jobs: Option<&str>) -> Result<usize, Failure> {
    match jobs {
        Some(j) => Ok(parse_count("jobs", j, 1, 1024)? as usize),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// `--flows` (one per --cc with --mix) and `--stagger`, which needs two flows or more.
fn parse_flows(args: &Args) -> Result<(u32, Duration), Failure> {
    if args.mix && args.cc.len() < 2 {
        return Err(usage("--mix needs two --cc or more"));
    }
    let flows = match &args.flows {
        Some(text) => parse_count("flows", text, 1, satquic_lab::spec::MAX_FLOWS.into())? as u32,
        None if args.mix => args.cc.len() as u32,
        None => 1,
    };
    let stagger = crate::seconds::duration(
        "sim: --stagger",
        &args.stagger,
        Duration::ZERO..=crate::seconds::DAY,
    )?;
    if flows == 1 && !stagger.is_zero() {
        return Err(usage("--stagger needs --flows of 2 or more"));
    }
    Ok((flows, stagger))
}

/// The variants' congestion-control specs, parsed: the --cc given (cubic+search without
/// one), each combined with --ss.
fn compose_ccs(args: &Args) -> Result<Vec<CcSpec>, Failure> {
    let parse = |cc: &str| CcSpec::parse(cc).map_err(usage);
    Ok(match (&args.ss, args.cc.is_empty()) {
        (None, true) => vec![parse("cubic+search")?],
        (None, false) => args
            .cc
            .iter()
            .map(|cc| parse(cc))
            .collect::<Result<_, _>>()?,
        (Some(ss), true) => {
            vec![crate::cmd_client::compose_cc("cubic", Some(ss), None).map_err(usage)?]
        }
        (Some(ss), false) => args
            .cc
            .iter()
            .map(|cc| crate::cmd_client::compose_cc(cc, Some(ss), None))
            .collect::<Result<_, _>>()
            .map_err(usage)?,
    })
}

/// `--rwnd`: a size below 2^62 (QUIC's largest flow-control limit).
fn parse_rwnd(text: Option<&str>) -> Result<Option<Size>, Failure> {
    let Some(text) = text else { return Ok(None) };
    let w = parse_size(text).map_err(usage)?;
    if w >= 1 << 62 {
        return Err(usage(format!("invalid rwnd '{text}': too large")));
    }
    Ok(Some(Size(w)))
}

/// The transport checks every command applies, here with the flags' names.
fn check_transport(cc: &CcSpec, iw: Option<u64>, mtu: u16) -> Result<(), Failure> {
    let mut transport = satquic_run::TransportSpec::with_spec(cc.clone());
    transport.initial_window = iw;
    transport.mtu = mtu;
    satquic_run::transport::validate(&transport).map_err(usage)
}

/// `--resume[=GAP]`; a gap of zero is a resumption right after the first connection ended.
fn parse_resume(text: Option<&str>) -> Result<Option<Duration>, Failure> {
    text.map(|text| {
        crate::seconds::duration("sim: --resume", text, Duration::ZERO..=crate::seconds::DAY)
    })
    .transpose()
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = Input::parse(&args)?;
    // `satquic sim` is a campaign of one link and one workload: the lab's executor runs it.
    let spec = campaign_spec(&args, &input);
    let plan = Plan::new(&spec).map_err(usage)?;
    let labels: Vec<String> = plan.variants.iter().map(|v| v.label.clone()).collect();
    let results = execute(&args, &input, &spec, &plan, &labels)?;
    let stats = variant_stats(&labels, &results, input.bytes);
    let report = json_report(&args, &input, &labels, &stats, &results);
    if let Some(out) = &args.out {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        satquic_run::record::write_atomic(out, "sim.json", text.as_bytes())
            .map_err(|e| Failure::Other(format!("cannot write {}: {e}", out.display())))?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_table(
            &input.link.name,
            input.bytes,
            input.runs as usize,
            input.seed,
            &stats,
            args.out.as_deref(),
        )?;
        if input.flows > 1 {
            print_jain(input.flows, &labels, &results)?;
        }
    }
    incomplete(&stats, results.len(), input.time_cap)
}

/// The campaign spec of one `satquic sim` invocation: its link, one variant per --cc
/// and one workload.
fn campaign_spec(args: &Args, input: &Input) -> CampaignSpec {
    let (preset, file) = match &input.link_source {
        LinkSource::Preset(name) => (Some(name.clone()), None),
        LinkSource::File(path) => (None, Some(path.clone())),
    };
    CampaignSpec {
        name: "sim".into(),
        description: format!("satquic sim --link {}", args.link),
        mode: Mode::Sim,
        time_cap: input.time_cap,
        timeout: None,
        repetitions: input.runs,
        seed: input.seed,
        seeds: None,
        interleave: true,
        sender_cap: Some(input.sender_cap.clone()),
        links: vec![LinkEntry {
            preset,
            file,
            label: None,
            params: Default::default(),
        }],
        variants: input
            .ccs
            .iter()
            .map(|cc| VariantEntry {
                label: None,
                cc: cc.clone(),
                initial_window: input.iw.map(Size),
                receive_window: input.rwnd,
                stream_receive_window: input.rwnd,
                send_window: None,
                initial_rtt: None,
                mtu: Some(input.mtu),
                mtu_discovery: None,
                receive_window_autotune: None,
                pto_probe_data: None,
                sender_cap: None,
                ack_frequency: args.ack_frequency.clone(),
            })
            .collect(),
        workloads: vec![WorkloadEntry {
            kind: if args.reverse {
                WorkloadKind::Upload
            } else {
                WorkloadKind::Download
            },
            bytes: Some(Size(input.bytes)),
            duration: None,
            flows: input.flows,
            stagger: (!input.stagger.is_zero()).then_some(input.stagger),
            label: None,
            resume_after: input.resume_after,
            beam: None,
        }],
        analysis: AnalysisSpec::default(),
        base_dir: None,
    }
}

/// Runs the plan (a progress bar on a terminal unless -J) and returns each run's
/// figures in (repetition, variant) order; a run without a record is an error.
fn execute(
    args: &Args,
    input: &Input,
    spec: &CampaignSpec,
    plan: &Plan,
    labels: &[String],
) -> Result<Vec<Done>, Failure> {
    let options = ExecOptions {
        jobs: input.jobs,
        qlog: args.qlog,
        packet_cipher: args.packet_cipher,
        ..ExecOptions::default()
    };
    let done: Mutex<Vec<Done>> = Mutex::new(Vec::with_capacity(plan.runs.len()));
    let keep = |f: &Finished| {
        let run = Done::of(f, labels);
        done.lock().unwrap_or_else(|e| e.into_inner()).push(run);
    };
    let bar = if args.json {
        None
    } else {
        Some(crate::cmd_campaign::Bar::new("sim"))
    };
    let outcome = execute_plan(
        spec,
        plan,
        args.out.as_deref(),
        &options,
        &|p| {
            if let Some(bar) = &bar {
                bar.update(p)
            }
        },
        Some(&keep),
    );
    if let Some(bar) = &bar {
        bar.finish();
    }
    outcome.map_err(crate::cmd_campaign::lab_failure)?;
    let mut results = done.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|d| (d.rep, d.variant));
    if let Some(err) = results.iter().find_map(|r| r.record.as_ref().err()) {
        return Err(Failure::Other(err.clone()));
    }
    Ok(results)
}

impl Done {
    /// What is kept of a finished run: its record without the series and events.
    fn of(f: &Finished, labels: &[String]) -> Done {
        let record = match f.record {
            Some(r) => Ok(RunRecord {
                summary: r.summary.clone(),
                chunks: r.chunks.clone(),
                received_chunks: r.received_chunks.clone(),
                events: Vec::new(),
                series: Vec::new(),
                sim_time: r.sim_time,
            }),
            None if f.row.reason.is_empty() => {
                Err(format!("run {} left no readable record", f.run.run_id))
            }
            None => Err(f.row.reason.clone()),
        };
        let variant = labels.iter().position(|l| *l == f.run.variant).unwrap_or(0);
        Done {
            variant,
            rep: f.run.rep,
            seed: f.run.seed,
            record,
            jain_index: f.row.jain_index,
            wall: f.wall,
        }
    }
}

/// Each variant's statistics over its runs, at the MB marks of the download size.
fn variant_stats(labels: &[String], results: &[Done], bytes: u64) -> Vec<VariantStats> {
    let marks = marks_for(bytes);
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            VariantStats::from_records(
                label,
                results
                    .iter()
                    .filter(|r| r.variant == i)
                    .filter_map(|r| r.record.as_ref().ok()),
                &marks,
            )
        })
        .collect()
}

/// sim.json and `-J`'s output: the invocation, each variant's statistics and a row per
/// run (with every flow when there are several).
fn json_report(
    args: &Args,
    input: &Input,
    labels: &[String],
    stats: &[VariantStats],
    results: &[Done],
) -> serde_json::Value {
    let per_run: Vec<serde_json::Value> = results
        .iter()
        .filter_map(|r| per_run_json(r, labels, input.flows))
        .collect();
    // Sorted keys whatever serde_json's `preserve_order` (the record module says why).
    sorted_keys(serde_json::json!({
        "link": input.link.name,
        "direction": if args.reverse { "upload" } else { "download" },
        "sender_cap": input.sender_cap,
        "bytes": input.bytes,
        "time_cap_s": input.time_cap.as_secs_f64(),
        "runs": input.runs,
        "first_seed": input.seed,
        "variants": stats,
        "per_run": per_run,
    }))
}

/// One run's row of the report: flow 0's figures, and with several flows Jain's index
/// and each flow's.
fn per_run_json(r: &Done, labels: &[String], flows: u32) -> Option<serde_json::Value> {
    let record = r.record.as_ref().ok()?;
    let f = record.summary.flows.first()?;
    let mut row = serde_json::json!({
        "variant": labels[r.variant],
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
        "queue_p50_ms": f.queue_delay.map(|q| q.p50_ms),
        "queue_p95_ms": f.queue_delay.map(|q| q.p95_ms),
        "first_completion_time_s": f.first_connection.as_ref().map(|c| c.completion_time_s),
        "resumption": f.resumption,
        "wall_s": r.wall.as_secs_f64(),
    });
    if flows > 1 {
        row["jain_index"] = serde_json::json!(r.jain_index);
        row["flows"] = record
            .summary
            .flows
            .iter()
            .zip(&record.summary.scenario.flows)
            .map(|(f, spec)| {
                serde_json::json!({
                    "start_s": spec.start.as_secs_f64(),
                    "status": f.status,
                    "completion_time_s": f.completion_time_s,
                    "delivered_bytes": f.delivered_bytes,
                    "goodput_bps": f.goodput_bps,
                    "packets_lost": f.packets_lost,
                })
            })
            .collect();
    }
    Some(row)
}

/// Jain's index of each run's flows, per variant, after the table.
fn print_jain(flows: u32, labels: &[String], results: &[Done]) -> Result<(), Failure> {
    outln!("Jain's index of the {flows} flows' goodputs (the table is flow 0):")?;
    for (i, label) in labels.iter().enumerate() {
        let values: Vec<String> = results
            .iter()
            .filter(|r| r.variant == i)
            .map(|r| r.jain_index.map_or("-".into(), |j| format!("{j:.3}")))
            .collect();
        outln!("  {label}: {}", values.join(" "))?;
    }
    Ok(())
}

/// Every result is printed (and kept with --out); an incomplete set still says so in
/// the exit code, as iperf3 and the campaign runner do.
fn incomplete(stats: &[VariantStats], runs: usize, time_cap: Duration) -> Result<(), Failure> {
    let capped: usize = stats.iter().map(|s| s.capped).sum();
    let failed: usize = stats.iter().map(|s| s.failed).sum();
    if capped + failed > 0 {
        return Err(Failure::Other(format!(
            "{} of {} runs did not complete ({capped} stopped at the {} s time cap, {failed} failed)",
            capped + failed,
            runs,
            time_cap.as_secs_f64()
        )));
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
) -> Result<(), Failure> {
    let last_seed = seed.wrapping_add(runs as u64 - 1);
    outln!(
        "satquic sim: {link}, {} per run, {runs} run{} per variant (seeds {seed}..={last_seed})",
        satquic_link::units::format_bytes(bytes),
        if runs == 1 { "" } else { "s" },
    )?;
    let row = |name: &str, q: Option<&Quartiles>, scale: f64| match q {
        Some(q) => outln!(
            "  {name:<22} {:>9.2} {:>9.2} {:>9.2} {:>5}",
            q.median * scale,
            q.q1 * scale,
            q.q3 * scale,
            q.n
        ),
        None => outln!("  {name:<22} {:>9} {:>9} {:>9} {:>5}", "-", "-", "-", 0),
    };
    for s in stats {
        outln!()?;
        outln!(
            "{}: {} runs, {} completed, {} capped, {} failed",
            s.label,
            s.runs,
            s.completed,
            s.capped,
            s.failed
        )?;
        outln!(
            "  {:<22} {:>9} {:>9} {:>9} {:>5}",
            "",
            "median",
            "q1",
            "q3",
            "n"
        )?;
        row("completion (s)", s.completion_s.as_ref(), 1.0)?;
        for (mb, q) in &s.time_to_mb_s {
            row(&format!("time to {mb} MB (s)"), q.as_ref(), 1.0)?;
        }
        row("slow-start exit (s)", s.exit_s.as_ref(), 1.0)?;
        row("first loss seen (s)", s.first_loss_s.as_ref(), 1.0)?;
        row("packets lost", s.packets_lost.as_ref(), 1.0)?;
        row("goodput (Mbit/s)", s.goodput_bps.as_ref(), 1e-6)?;
        let classes: Vec<String> = satquic_run::record::EXIT_CLASSES
            .iter()
            .map(|class| {
                format!(
                    "{class} {}",
                    s.exit_classes.get(*class).copied().unwrap_or(0)
                )
            })
            .collect();
        outln!("  exit classes: {}", classes.join(", "))?;
        outln!(
            "  runs with a detected loss: {} of {}",
            s.runs_with_loss,
            s.runs
        )?;
    }
    if let Some(out) = out {
        outln!()?;
        outln!("records in {}", out.display())?;
    }
    Ok(())
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
            Err(Failure::Closed) => panic!("{argv:?}: stdout closed"),
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
            vec!["--flows", "0"],
            vec!["--flows", "1001"],
            vec!["--stagger", "-1s"],
            vec!["--stagger", "2s"],
            vec!["--flows", "2", "--stagger", "soon"],
            vec!["--mix"],
            vec!["--cc", "cubic", "--mix"],
            vec!["--cc", "cubic", "--cc", "bogus", "--mix"],
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
        // The campaign layout of `satquic campaign run`.
        let meta = satquic_lab::exec::CampaignMeta::read(&out).unwrap();
        assert_eq!(meta.run_ids.len(), 4);
        let rows = satquic_lab::dataset::read_csv(&out.join("runs.csv")).unwrap();
        assert_eq!(rows.len(), 4);
        let seeds: Vec<(String, u64)> = rows.iter().map(|r| (r.variant.clone(), r.seed)).collect();
        assert_eq!(
            seeds,
            [
                ("cubic", 5),
                ("cubic+search", 5),
                ("cubic", 6),
                ("cubic+search", 6)
            ]
            .map(|(v, s)| (v.to_string(), s))
        );
        for id in &meta.run_ids {
            {
                let dir = out.join("runs").join(id);
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
        // Run again into the same directory: the finished runs are read back, not run
        // again, and the statistics are the same.
        let first_summary =
            std::fs::read(out.join("runs").join(&meta.run_ids[0]).join("summary.json")).unwrap();
        let first_stats = report["variants"].clone();
        assert!(run(args(&argv)).is_ok());
        let again: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("sim.json")).unwrap()).unwrap();
        assert_eq!(again["variants"], first_stats);
        assert_eq!(
            first_summary,
            std::fs::read(out.join("runs").join(&meta.run_ids[0]).join("summary.json")).unwrap()
        );
        // Without --out the same seeds give the same statistics.
        let elsewhere =
            std::env::temp_dir().join(format!("satquic-sim-cli2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&elsewhere);
        let mut fresh = argv;
        fresh[argv.len() - 1] = elsewhere.to_str().unwrap();
        assert!(run(args(&fresh)).is_ok());
        let fresh_report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(elsewhere.join("sim.json")).unwrap())
                .unwrap();
        assert_eq!(fresh_report["variants"], first_stats);
        std::fs::remove_dir_all(&elsewhere).ok();
        std::fs::remove_dir_all(&out).ok();
    }

    /// A parameterised link and a long spec made a run id of 289 bytes, and every run
    /// stopped before it started: "File name too long (os error 36)" on its
    /// `.partial-ID-PID@HOST` directory. The run now completes and writes its records.
    #[test]
    fn a_run_whose_link_and_spec_pass_a_file_name_writes_its_records() {
        let out = std::env::temp_dir().join(format!("satquic-sim-long-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let link = "starlink-busy:phase=4.814s,slot-seed=1530690897,rate-scale=1.202,\
                    rtt-add=0.8ms,queue=405675,up-queue=44624";
        let cc = "cubic+search+growth:x=3+floor:iw=15360,max-rtt=1000+jump:cap=1.5,bound,\
                  validate+loss-filter:startup-confirm=2,cr=validating+retreat+cr:ss-cap=1,\
                  jump-on-confirm";
        let argv = [
            "--link",
            link,
            "--cc",
            cc,
            "-n",
            "1M",
            "-t",
            "30",
            "--out",
            out.to_str().unwrap(),
        ];
        assert!(run(args(&argv)).is_ok());
        let meta = satquic_lab::exec::CampaignMeta::read(&out).unwrap();
        let id = &meta.run_ids[0];
        assert!(id.len() <= 255, "{}", id.len());
        let rows = satquic_lab::dataset::read_csv(&out.join("runs.csv")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, "completed", "{}", rows[0].reason);
        assert_eq!((rows[0].link.as_str(), rows[0].cc.as_str()), (link, cc));
        for file in ["summary.json", "chunks.csv", "events.jsonl", "series.csv"] {
            assert!(out.join("runs").join(id).join(file).is_file(), "{file}");
        }
        std::fs::remove_dir_all(&out).ok();
    }

    /// Two flows on one bottleneck, the second 2 s later (seed 004's latecomer): sim.json
    /// lists both, with their start times, and Jain's index of their goodputs, the same
    /// as runs.csv's.
    #[test]
    fn flows_share_the_link_and_report_each_flow_and_jains_index() {
        let out = std::env::temp_dir().join(format!("satquic-sim-flows-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let argv = [
            "--link",
            "thesis-sat",
            "--cc",
            "cubic",
            "-n",
            "3M",
            "--flows",
            "2",
            "--stagger",
            "2s",
            "--out",
            out.to_str().unwrap(),
        ];
        assert!(run(args(&argv)).is_ok());
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("sim.json")).unwrap()).unwrap();
        let run0 = &report["per_run"][0];
        let flows = run0["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0]["start_s"], 0.0);
        assert_eq!(flows[1]["start_s"], 2.0);
        for f in flows {
            assert_eq!(f["status"], "completed", "{f}");
            assert_eq!(f["delivered_bytes"], 3_000_000);
        }
        let rows = satquic_lab::dataset::read_csv(&out.join("runs.csv")).unwrap();
        assert_eq!(rows[0].flows, 2);
        let jain = run0["jain_index"].as_f64().unwrap();
        assert!(jain > 0.5 && jain <= 1.0, "{jain}");
        assert_eq!(Some(jain), rows[0].jain_index);
        // Flow 0's queueing delay, the same in -J and runs.csv.
        let p95 = run0["queue_p95_ms"].as_f64().unwrap();
        assert!(p95 >= run0["queue_p50_ms"].as_f64().unwrap(), "{run0}");
        assert_eq!(Some(p95), rows[0].queue_p95_ms);
        let _ = std::fs::remove_dir_all(&out);
    }

    /// `--mix`: one variant, one flow per --cc on one bottleneck, each with its own
    /// congestion control (seed 004's BBR against CUBIC).
    #[test]
    fn mix_puts_one_flow_of_each_cc_on_one_link() {
        let out = std::env::temp_dir().join(format!("satquic-sim-mix-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let argv = [
            "--link",
            "thesis-sat",
            "--cc",
            "newreno",
            "--cc",
            "cubic",
            "--mix",
            "-n",
            "2M",
            "--out",
            out.to_str().unwrap(),
        ];
        assert!(run(args(&argv)).is_ok());
        let rows = satquic_lab::dataset::read_csv(&out.join("runs.csv")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].cc.as_str(), rows[0].flows), ("newreno|cubic", 2));
        let meta = satquic_lab::exec::CampaignMeta::read(&out).unwrap();
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("runs").join(&meta.run_ids[0]).join("summary.json"))
                .unwrap(),
        )
        .unwrap();
        let ccs: Vec<&str> = summary["scenario"]["flows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["transport"]["cc"].as_str().unwrap())
            .collect();
        assert_eq!(ccs, ["newreno", "cubic"]);
        let _ = std::fs::remove_dir_all(&out);
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
        let meta = satquic_lab::exec::CampaignMeta::read(&out).unwrap();
        let qlog =
            std::fs::read(out.join("runs").join(&meta.run_ids[0]).join("qlog.sqlog")).unwrap();
        assert_eq!(qlog.first(), Some(&0x1e));
        let header = qlog[1..].split(|b| *b == b'\n').next().unwrap();
        let header: serde_json::Value = serde_json::from_slice(header).unwrap();
        assert_eq!(header["qlog_version"], "0.3");
        // quinn-proto's own qlog, one file per connection and end, QLOGDIR names.
        let run_dir = out.join("runs").join(&meta.run_ids[0]);
        let names: Vec<String> = std::fs::read_dir(&run_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with("_server.sqlog") || n.ends_with("_client.sqlog"))
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        for name in names {
            let text = std::fs::read_to_string(run_dir.join(&name)).unwrap();
            assert!(text.contains("\"transport:packet_sent\""), "{name}");
            assert!(text.contains("\"recovery:metrics_updated\""), "{name}");
        }
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
