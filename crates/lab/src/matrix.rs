//! `satquic matrix`: seed 002's cross-implementation matrix through our link model.
//!
//! Every client x server pair of a set of QUIC implementations downloads one file through
//! `satquic link --link PRESET` (the UDP relay, real time, loopback), for each preset,
//! congestion control and repetition, one run at a time. The implementations are run
//! from adapters (satquic-net's [`satquic_net::peers`], `peers/adapters.toml`).
//!
//! The output is a campaign directory like any other ([`crate::exec`]): `campaign.json`
//! (mode `emulated`; the pairs as its variants), `matrix.json` (this spec), `runs.csv`,
//! `runs/<run_id>/` per run (`row.json`, `timing.json`, `commands.txt`, the logs of the
//! server, the relay and the client, `*-keys.log`, `qlog/server/` and `qlog/client/` with
//! `--qlog`), plus `www/` (the file served) and `certs/`. It resumes (finished runs are not
//! run again) and shards (`--index I --of N`) the same way; `satquic report DIR` draws it.
//!
//! # Rows
//!
//! runs.csv gets `mode = matrix`, `client_impl`, `server_impl`, `variant` =
//! `CLIENT/SERVER`, `cc` = the congestion control asked of both sides (`default`: each
//! implementation's own), `link` = the preset. `completion_time_s` is the client's wall
//! clock from its start to its exit (process start, handshake and download, as a user
//! times a fetch; a client judged by its progress, such as qperf, which lingers after its
//! last byte, until its progress reached the size), `goodput_bps` = size x 8 / that time
//! and `efficiency` = goodput / the preset's down rate (seed 002 Eq. 1). Where the
//! client's adapter reads its progress ([`peers`]: the download file's growth, satquic's
//! JSON, qperf's `byteslog` lines), `runs/<id>/chunks.csv` has the time it had each MB,
//! as a simulated run's, for time-to-N-MB comparisons; `--sender-cap` puts the seeds'
//! token bucket in front of every link. `status`:
//!
//! | status | meaning | run again |
//! |---|---|---|
//! | `completed` | the client got every byte within the time cap | never |
//! | `failed` | it exited without them (handshake failure, error): `reason` has its last words | `--retry-failed` |
//! | `timeout` | it had not exited at the time cap | `--retry-failed` |
//! | `incompatible` | the pair cannot talk: no common ALPN, the server cannot select the cc | every invocation (nothing runs) |
//! | `skipped` | an implementation is not installed (`scripts/install-peers.sh`) | every invocation |
//!
//! # Kernel TCP rows
//!
//! The adapters' `[[tcp]]` variants (`tcp-cubic-hystart`, `tcp-cubic`, `tcp-bbr`) are
//! not paired: each downloads `tcp_bytes` (default: the QUIC file's size) once per preset
//! and repetition with iperf3 through `satquic link --tun` ([`satquic_net::tcp`], root),
//! ignoring `ccs` (the variant fixes the kernel's cc, which fills `cc`). Their rows have
//! `transport = tcp`, `client_impl = server_impl = variant`, the same time and goodput
//! columns (sender start to the last payload byte delivered) and seed 003's slow-start
//! columns from the sender's tcp_info: `exit_at_s` (first finite ssthresh),
//! `exit_reason` (`hystart` or `loss`), `exit_cwnd_before`, `exit_ssthresh`,
//! `first_loss_detected_at_s`, `capacity_at_s` from the TUN link's ground truth,
//! `exit_class` ([`crate::analysis::classify`], as the simulator's rows), and
//! `owd_capacity_at_s` / `owd_exit_class` from the RTT trace (003 Sec. V-B). The trace is
//! `runs/<id>/tcp_info.csv` (`tcp_info.txt`: the raw `ss -tin` samples); `chunks.csv` has
//! when the TUN link had delivered each MB of the data connection (its highest sequence
//! offset), beside the QUIC rows' client progress.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use satquic_link::LinkSpec;
use satquic_net::peers::{self, AdapterFile, CellOutcome, PeerEnv};
use satquic_run::record::{ChunkRow, Timing, chunks_csv};
use satquic_run::scenario::ShaperSpec;

use crate::LabError;
use crate::dataset::Row;
use crate::exec::{self, CampaignMeta, CampaignOutcome, Progress};
use crate::spec::{CampaignSpec, Mode};

/// Seed 002's three emulated scenarios.
pub const DEFAULT_PRESETS: [&str; 3] = ["qir-sat", "qir-satloss", "qir-terrestrial"];

/// What `matrix.json` holds: the matrix as asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixSpec {
    /// Campaign name (the directory belongs to it, as for `campaign run`).
    pub name: String,
    /// Implementations, by adapter name; every one is tried as client and as server.
    pub impls: Vec<String>,
    /// Link presets (or link files), as `satquic link --link` takes them.
    pub presets: Vec<String>,
    /// Congestion controls asked of both sides: `default` or one of
    /// [`peers::CC_NAMES`].
    pub ccs: Vec<String>,
    pub repetitions: u32,
    /// Seed of the link's random processes in repetition 0 (`seed + rep` after).
    pub seed: u64,
    /// Size of the file downloaded.
    pub bytes: u64,
    /// Longest one download may take (client start to exit).
    #[serde(with = "secs")]
    pub time_cap: Duration,
    /// Application protocols in order of preference; a pair uses the first both speak.
    pub alpn: Vec<String>,
    /// Ask both sides for qlogs.
    pub qlog: bool,
    /// Bytes each kernel TCP row sends (default: `bytes`).
    #[serde(default)]
    pub tcp_bytes: Option<u64>,
    /// A sender cap in front of every link (`satquic link --sender-cap`, RATE[:LATENCY],
    /// e.g. the seeds' `200M:1.5s`); none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cap: Option<String>,
}

mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

impl MatrixSpec {
    /// The file's name under `www/`.
    pub fn file_name(&self) -> String {
        format!("data-{}", self.bytes)
    }

    /// Bytes of a kernel TCP row.
    pub fn tcp_size(&self) -> u64 {
        self.tcp_bytes.unwrap_or(self.bytes)
    }

    /// The sender cap, parsed (checked when the matrix is planned).
    pub fn sender_cap_spec(&self) -> Result<Option<ShaperSpec>, String> {
        self.sender_cap
            .as_deref()
            .map_or(Ok(None), ShaperSpec::parse_cap)
    }
}

/// One download of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRun {
    pub index: usize,
    pub run_id: String,
    pub preset: String,
    pub cc: String,
    pub rep: u32,
    pub seed: u64,
    pub client: String,
    pub server: String,
    /// A kernel TCP variant (client = server = its name), not a QUIC pair.
    pub tcp: bool,
}

impl MatrixRun {
    /// `CLIENT/SERVER`, the run's variant in runs.csv.
    pub fn pair(&self) -> String {
        if self.tcp {
            return self.client.clone();
        }
        format!("{}/{}", self.client, self.server)
    }
}

/// Checks a spec against the adapters and expands it, in plan order: presets, then ccs,
/// then repetitions, then clients, then servers (an implementation without a client, such
/// as Caddy, is only a server). Errors are usage errors.
pub fn plan(spec: &MatrixSpec, adapters: &AdapterFile) -> Result<Vec<MatrixRun>, LabError> {
    let usage = |m: String| LabError::Usage(m);
    if spec.impls.is_empty() {
        return Err(usage("no implementation to run".into()));
    }
    for name in &spec.impls {
        if adapters.get(name).is_none() && adapters.get_tcp(name).is_none() {
            return Err(usage(format!(
                "unknown implementation {name:?}; the adapters know {}",
                adapters.names().join(", ")
            )));
        }
    }
    if spec.presets.is_empty() {
        return Err(usage("no preset to run on".into()));
    }
    for p in &spec.presets {
        satquic_run::resolve_link(p).map_err(|e| usage(format!("--preset {p}: {e}")))?;
    }
    for cc in &spec.ccs {
        if cc != "default" && !peers::CC_NAMES.contains(&cc.as_str()) {
            return Err(usage(format!(
                "--cc {cc}: expected default or one of {}",
                peers::CC_NAMES.join(", ")
            )));
        }
    }
    if spec.ccs.is_empty() {
        return Err(usage("--cc: no congestion control".into()));
    }
    spec.sender_cap_spec()
        .map_err(|e| usage(format!("--sender-cap: {e}")))?;
    if !(1..=1000).contains(&spec.repetitions) {
        return Err(usage(format!(
            "--reps {}: expected 1 to 1000",
            spec.repetitions
        )));
    }
    if spec.bytes == 0 || spec.tcp_bytes == Some(0) {
        return Err(usage("-n: the file must have at least one byte".into()));
    }
    if spec.time_cap.is_zero() {
        return Err(usage("--time-cap must be above zero".into()));
    }
    // A protocol is one some implementation's adapter speaks (h3 and hq-interop for
    // the built-in ones; an adapter file may add its own, as qperf's).
    let spoken: BTreeSet<&str> = spec
        .impls
        .iter()
        .filter_map(|n| adapters.get(n))
        .flat_map(|a| a.alpn.iter().map(String::as_str))
        .chain(["h3", "hq-interop"])
        .collect();
    for a in &spec.alpn {
        if !spoken.contains(a.as_str()) {
            return Err(usage(format!(
                "--alpn {a}: no implementation speaks it (expected one of {})",
                spoken.iter().copied().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut runs = Vec::new();
    for preset in &spec.presets {
        for cc in &spec.ccs {
            for rep in 0..spec.repetitions {
                // Server-only (or client-only) implementations take only their role.
                let with = |role: fn(&peers::Adapter) -> bool| {
                    spec.impls
                        .iter()
                        .filter(move |n| adapters.get(n).is_some_and(role))
                };
                for client in with(|a| a.client.is_some()) {
                    for server in with(|a| a.server.is_some()) {
                        let seed = spec.seed.wrapping_add(u64::from(rep));
                        let key = format!(
                            "{preset}|{cc}|{client}|{server}|{}|{seed}|{}|{}",
                            spec.bytes,
                            spec.time_cap.as_secs_f64(),
                            spec.alpn.join(",")
                        );
                        let run_id = format!(
                            "{}__{}--{}__{}__{}__r{:03}-{:08x}",
                            crate::plan::sanitize(preset),
                            crate::plan::sanitize(client),
                            crate::plan::sanitize(server),
                            crate::plan::sanitize(cc),
                            crate::spec::size_label(spec.bytes),
                            rep,
                            crate::plan::fnv1a(key.as_bytes()) as u32
                        );
                        runs.push(MatrixRun {
                            index: runs.len(),
                            run_id,
                            preset: preset.clone(),
                            cc: cc.clone(),
                            rep,
                            seed,
                            client: client.clone(),
                            server: server.clone(),
                            tcp: false,
                        });
                    }
                }
            }
        }
        for rep in 0..spec.repetitions {
            for t in spec.impls.iter().filter_map(|n| adapters.get_tcp(n)) {
                let seed = spec.seed.wrapping_add(u64::from(rep));
                let key = format!(
                    "{preset}|tcp|{}|{}|{seed}|{}",
                    t.name,
                    spec.tcp_size(),
                    spec.time_cap.as_secs_f64()
                );
                let run_id = format!(
                    "{}__{}__{}__{}__r{:03}-{:08x}",
                    crate::plan::sanitize(preset),
                    crate::plan::sanitize(&t.name),
                    crate::plan::sanitize(&t.cc),
                    crate::spec::size_label(spec.tcp_size()),
                    rep,
                    crate::plan::fnv1a(key.as_bytes()) as u32
                );
                runs.push(MatrixRun {
                    index: runs.len(),
                    run_id,
                    preset: preset.clone(),
                    cc: t.cc.clone(),
                    rep,
                    seed,
                    client: t.name.clone(),
                    server: t.name.clone(),
                    tcp: true,
                });
            }
        }
    }
    Ok(runs)
}

/// How to run a matrix.
#[derive(Debug, Clone, Default)]
pub struct MatrixOptions {
    /// Run only shard `(index, count)` (runs with `index % count == index`).
    pub shard: Option<(usize, usize)>,
    /// Run failed and timed-out runs again.
    pub retry_failed: bool,
    /// Take over a directory of another campaign.
    pub take_over: bool,
}

/// The implementations of `spec` that are not installed here, with why.
pub fn missing(spec: &MatrixSpec, adapters: &AdapterFile, env: &PeerEnv) -> Vec<(String, String)> {
    spec.impls
        .iter()
        .filter_map(|name| {
            let why = match (adapters.get(name), adapters.get_tcp(name)) {
                (Some(a), _) => a.missing(env),
                (None, Some(t)) => tcp_missing(t),
                (None, None) => None,
            };
            why.map(|why| (name.clone(), why))
        })
        .collect()
}

fn tcp_missing(t: &satquic_net::tcp::TcpAdapter) -> Option<String> {
    t.missing()
}

/// The synthetic campaign spec that makes a matrix directory a campaign directory.
fn campaign_spec(spec: &MatrixSpec) -> CampaignSpec {
    let mut text = format!(
        "name = {:?}\ndescription = {:?}\nmode = \"emulated\"\nrepetitions = {}\nseed = {}\ninterleave = false\n",
        spec.name,
        format!(
            "satquic matrix: {} as clients x servers, {} download",
            spec.impls.join(", "),
            crate::spec::size_label(spec.bytes)
        ),
        spec.repetitions,
        spec.seed
    );
    for p in &spec.presets {
        text.push_str(&format!("[[link]]\npreset = {p:?}\n"));
    }
    let mut cs: CampaignSpec = toml::from_str(&text).expect("the matrix's campaign spec parses");
    cs.time_cap = spec.time_cap;
    cs
}

fn meta(spec: &MatrixSpec, runs: &[MatrixRun]) -> CampaignMeta {
    let cs = campaign_spec(spec);
    let mut variants: Vec<String> = Vec::new();
    for r in runs {
        if !variants.contains(&r.pair()) {
            variants.push(r.pair());
        }
    }
    CampaignMeta {
        schema: exec::CAMPAIGN_SCHEMA.into(),
        name: spec.name.clone(),
        description: cs.description.clone(),
        mode: Mode::Emulated,
        analysis: cs.analysis.clone(),
        links: spec.presets.clone(),
        variants,
        workloads: {
            let mut w = vec![crate::spec::size_label(spec.bytes)];
            if runs.iter().any(|r| r.tcp) && spec.tcp_size() != spec.bytes {
                w.push(crate::spec::size_label(spec.tcp_size()));
            }
            w
        },
        run_ids: runs.iter().map(|r| r.run_id.clone()).collect(),
        spec: cs,
    }
}

/// Reads `matrix.json` of a matrix directory, if it is one.
pub fn read_spec(dir: &Path) -> Option<MatrixSpec> {
    let text = std::fs::read_to_string(dir.join("matrix.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Runs (the rest of) a matrix into `out`, calling `progress` after each run.
pub fn run_matrix(
    spec: &MatrixSpec,
    adapters: &AdapterFile,
    env: &PeerEnv,
    out: &Path,
    opts: &MatrixOptions,
    progress: &dyn Fn(&Progress),
) -> Result<CampaignOutcome, LabError> {
    let started = Instant::now();
    let runs = plan(spec, adapters)?;
    if let Some((i, n)) = opts.shard
        && (n == 0 || i >= n)
    {
        return Err(LabError::Usage(format!(
            "shard index {i} is not below the shard count {n}"
        )));
    }
    crate::output_dir(out)?;
    let _lock = exec::lock::lock(out, opts.shard)?;
    let cs = campaign_spec(spec);
    if !opts.take_over {
        exec::check_owner(&cs, out)?;
    }
    let runs_dir = out.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| exec::io_err(&runs_dir, e))?;
    exec::remove_stale_partials(&runs_dir);
    let write = |name: &str, bytes: Vec<u8>| {
        exec::write_atomic_unique(out, name, &bytes).map_err(|e| exec::io_err(out, e))
    };
    write(
        "campaign.json",
        serde_json::to_vec_pretty(&meta(spec, &runs)).expect("meta serializes"),
    )?;
    write(
        "matrix.json",
        serde_json::to_vec_pretty(spec).expect("spec serializes"),
    )?;
    let www = out.join("www");
    let file = spec.file_name();
    peers::prepare_file(&www.join(&file), spec.bytes, spec.seed).map_err(LabError::Io)?;
    let (cert, key) = peers::prepare_identity(&out.join("certs")).map_err(LabError::Io)?;
    let links: BTreeMap<&str, LinkSpec> = spec
        .presets
        .iter()
        .map(|p| {
            let l = satquic_run::resolve_link(p).map_err(LabError::Usage)?;
            Ok((p.as_str(), l))
        })
        .collect::<Result<_, LabError>>()?;
    let missing: BTreeMap<String, String> = missing(spec, adapters, env).into_iter().collect();

    let selected: Vec<&MatrixRun> = runs
        .iter()
        .filter(|r| opts.shard.is_none_or(|(i, n)| r.index % n == i))
        .collect();
    let mut todo = Vec::new();
    let mut skipped = 0;
    for run in &selected {
        let dir = runs_dir.join(&run.run_id);
        match exec::read_row(&dir) {
            Some(row) if is_final(&row.status, opts.retry_failed) => skipped += 1,
            Some(_) => {
                std::fs::remove_dir_all(&dir).map_err(|e| exec::io_err(&dir, e))?;
                todo.push(*run);
            }
            None => todo.push(*run),
        }
    }
    let mut p = Progress {
        total: todo.len(),
        done: 0,
        failed: 0,
        skipped,
        last: None,
    };
    progress(&p);
    for run in todo {
        let partial = runs_dir.join(format!(
            ".partial-{}-{}@{}",
            run.run_id,
            std::process::id(),
            exec::lock::host_name()
        ));
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(|e| exec::io_err(&partial, e))?;
        }
        std::fs::create_dir_all(&partial).map_err(|e| exec::io_err(&partial, e))?;
        let link = &links[run.preset.as_str()];
        let run_started = Instant::now();
        let row = execute(
            spec, adapters, env, run, link, &missing, &partial, &www, &file, &cert, &key,
        );
        let wall = run_started.elapsed();
        let timing = Timing::new(wall, wall);
        std::fs::write(
            partial.join("timing.json"),
            serde_json::to_vec_pretty(&timing).expect("timing serializes"),
        )
        .and_then(|_| {
            std::fs::write(
                partial.join("row.json"),
                serde_json::to_vec_pretty(&row).expect("rows serialize"),
            )
        })
        .map_err(|e| exec::io_err(&partial, e))?;
        let finished = runs_dir.join(&run.run_id);
        // The command lines name the run's files where they are once it is finished.
        let commands = partial.join("commands.txt");
        if let Ok(text) = std::fs::read_to_string(&commands) {
            let _ = std::fs::write(
                &commands,
                text.replace(&*partial.to_string_lossy(), &finished.to_string_lossy()),
            );
        }
        if let Err(e) = std::fs::rename(&partial, &finished) {
            let _ = std::fs::remove_dir_all(&partial);
            if !finished.join("row.json").exists() {
                return Err(exec::io_err(&finished, e));
            }
        }
        p.done += 1;
        if matches!(row.status.as_str(), "failed" | "timeout") {
            p.failed += 1;
        }
        p.last = Some((row.run_id.clone(), row.status.clone()));
        exec::collect(out, runs.iter().map(|r| r.run_id.as_str()))?;
        progress(&p);
    }
    let rows = exec::collect(out, runs.iter().map(|r| r.run_id.as_str()))?.len();
    Ok(CampaignOutcome {
        planned: runs.len(),
        selected: selected.len(),
        skipped,
        ran: p.done,
        failed: p.failed,
        rows,
        runs_csv: Some(out.join("runs.csv")),
        wall: started.elapsed(),
    })
}

/// Whether a stored row stands (is not run again).
fn is_final(status: &str, retry_failed: bool) -> bool {
    match status {
        "completed" => true,
        "failed" | "timeout" => !retry_failed,
        // incompatible, skipped: decided without running; decided again.
        _ => false,
    }
}

#[allow(clippy::too_many_arguments)]
fn execute(
    spec: &MatrixSpec,
    adapters: &AdapterFile,
    env: &PeerEnv,
    run: &MatrixRun,
    link: &LinkSpec,
    missing: &BTreeMap<String, String>,
    dir: &Path,
    www: &Path,
    file: &str,
    cert: &Path,
    key: &Path,
) -> Row {
    let base = row(spec, run, link);
    let not_installed: Vec<String> = [&run.client, &run.server]
        .into_iter()
        .filter_map(|n| {
            missing
                .get(n)
                .map(|why| format!("{n} not installed ({why})"))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !not_installed.is_empty() {
        return Row {
            status: "skipped".into(),
            reason: format!(
                "{}; scripts/install-peers.sh installs it",
                not_installed.join("; ")
            ),
            ..base
        };
    }
    if run.tcp {
        return execute_tcp(spec, adapters, run, link, base, dir);
    }
    let (client, server) = (
        adapters.get(&run.client).expect("planned"),
        adapters.get(&run.server).expect("planned"),
    );
    let plan = match peers::plan_pair(client, server, &spec.alpn, &run.cc) {
        Ok(p) => p,
        Err(why) => {
            return Row {
                status: "incompatible".into(),
                reason: why,
                ..base
            };
        }
    };
    let cell = peers::Cell {
        env,
        client,
        server,
        plan,
        link: run.preset.clone(),
        seed: run.seed,
        www: www.to_path_buf(),
        file: file.to_string(),
        size_bytes: spec.bytes,
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        dir: dir.to_path_buf(),
        time_cap: spec.time_cap,
        qlog: spec.qlog,
        sender_cap: spec.sender_cap.clone(),
    };
    let outcome = peers::run_cell(&cell);
    write_chunks(dir, &outcome.progress.mb_times_s);
    outcome_row(base, &outcome)
}

/// `chunks.csv` of a run from the times it had each MB (nothing when there are none).
fn write_chunks(dir: &Path, mb_times_s: &[f64]) {
    let chunks = ChunkRow::of_flow(0, mb_times_s.iter().copied());
    if !chunks.is_empty() {
        let _ = std::fs::write(dir.join("chunks.csv"), chunks_csv(&chunks));
    }
}

fn execute_tcp(
    spec: &MatrixSpec,
    adapters: &AdapterFile,
    run: &MatrixRun,
    link: &LinkSpec,
    base: Row,
    dir: &Path,
) -> Row {
    let adapter = adapters.get_tcp(&run.client).expect("planned");
    let cell = satquic_net::tcp::TcpCell {
        adapter,
        link: link.clone(),
        seed: run.seed,
        size_bytes: spec.tcp_size(),
        dir: dir.to_path_buf(),
        time_cap: spec.time_cap,
        sender_cap: spec.sender_cap_spec().ok().flatten(),
    };
    let outcome = satquic_net::tcp::run_tcp_cell(&cell);
    write_chunks(dir, &outcome.mb_times_s);
    tcp_row(base, &outcome)
}

/// A kernel TCP row with what the cell measured, classified as the simulator's rows are.
fn tcp_row(base: Row, o: &satquic_net::tcp::TcpOutcome) -> Row {
    use crate::analysis::{capacity_from_latency_offset, classify};
    let mut row = outcome_row(
        base,
        &CellOutcome {
            status: o.status.clone(),
            reason: o.reason.clone(),
            client_time: o.completion_s.map(Duration::from_secs_f64),
            delivered_bytes: o.delivered_bytes,
            progress: Default::default(),
            link: None,
        },
    );
    let e = &o.exit;
    row.exit_at_s = e.exit_at_s;
    row.exit_reason = e
        .exit_at_s
        .map(|_| if e.exit_by_loss { "loss" } else { "hystart" }.to_string());
    row.exit_cwnd_before = e.cwnd_before_bytes;
    row.exit_ssthresh = e.ssthresh_bytes;
    row.exit_rtt_s = e.rtt_at_exit_ms.map(|ms| ms / 1e3);
    row.first_loss_detected_at_s = e.first_loss_at_s;
    row.capacity_at_s = o.capacity_at_s;
    row.capacity_source = o.capacity_source.clone();
    row.min_rtt_s = o.min_rtt_s;
    row.max_queue_bytes = o.max_queue_bytes;
    row.drops_congestion = o.drops_congestion;
    row.drops_random = o.drops_random;
    row.packets_lost = o.retransmits;
    if o.samples > 0 {
        let classes = |capacity: Option<f64>| {
            // Variants without a slow-start exit (BBR) have no class.
            o.exit_signal
                .then(|| classify(e.exit_at_s, e.exit_by_loss, e.first_loss_at_s, capacity))
                .map(|c| c.as_str().to_string())
        };
        row.exit_class = classes(o.capacity_at_s);
        row.owd_capacity_at_s = o
            .min_rtt_s
            .and_then(|min| capacity_from_latency_offset(&o.rtt_offsets, min));
        row.owd_exit_class = classes(row.owd_capacity_at_s);
        if let (Some(x), Some(l), Some(rtt)) = (e.exit_at_s, e.first_loss_at_s, row.exit_rtt_s)
            && rtt > 0.0
        {
            row.exit_to_loss_ratio = Some((l - x) / rtt);
        }
    }
    row
}

/// The row of a run before it runs: identity, link and workload columns.
pub fn row(spec: &MatrixSpec, run: &MatrixRun, link: &LinkSpec) -> Row {
    let bytes = if run.tcp { spec.tcp_size() } else { spec.bytes };
    Row {
        index: run.index,
        run_id: run.run_id.clone(),
        campaign: spec.name.clone(),
        mode: "matrix".into(),
        link: run.preset.clone(),
        link_source: run.preset.clone(),
        variant: run.pair(),
        cc: run.cc.clone(),
        workload: crate::spec::size_label(bytes),
        workload_kind: "download".into(),
        bytes: Some(bytes),
        flows: 1,
        rep: run.rep,
        seed: run.seed,
        time_cap_s: spec.time_cap.as_secs_f64(),
        client_impl: Some(run.client.clone()),
        server_impl: Some(run.server.clone()),
        transport: Some(if run.tcp { "tcp" } else { "quic" }.into()),
        ..Row::with_link(link)
    }
}

/// A row with what the cell measured.
fn outcome_row(base: Row, o: &CellOutcome) -> Row {
    let mut row = Row {
        status: o.status.clone(),
        reason: o.reason.replace(['\n', '\r'], " "),
        delivered_bytes: o.delivered_bytes,
        flows_completed: Some(u32::from(o.status == "completed")),
        ..base
    };
    if let Some(l) = &o.link {
        row.drops_congestion = Some(l.drops_congestion);
        row.drops_random = Some(l.drops_random);
        row.first_drop_at_s = l.first_drop_at_s;
    }
    if let Some(t) = o.client_time {
        let secs = t.as_secs_f64();
        let bytes = row.bytes.unwrap_or(0) as f64;
        let goodput = bytes * 8.0 / secs.max(1e-9);
        row.completion_time_s = Some(secs);
        row.sim_time_s = Some(secs);
        row.goodput_bps = Some(goodput);
        row.total_goodput_bps = Some(goodput);
        let rate = row.down_rate_bps as f64;
        row.efficiency = (rate > 0.0).then(|| goodput / rate);
        row.utilization = row.efficiency;
        row.jain_index = Some(1.0);
    }
    row
}

/// The rows of a matrix as text: per preset and cc, clients as rows and servers as
/// columns, the mean efficiency of the completed runs of each pair (`F` failed, `T`
/// timed out, `x` incompatible, `s` skipped where none completed), then the counts of
/// each status.
pub fn text_summary(rows: &[Row]) -> String {
    let all: Vec<&Row> = rows.iter().filter(|r| r.client_impl.is_some()).collect();
    let rows: Vec<&Row> = all
        .iter()
        .copied()
        .filter(|r| r.transport.as_deref() != Some("tcp"))
        .collect();
    let mut out = String::new();
    let order = |v: &mut Vec<String>, s: &str| {
        if !v.iter().any(|x| x == s) {
            v.push(s.to_string());
        }
    };
    let (mut scenarios, mut clients, mut servers) = (Vec::new(), Vec::new(), Vec::new());
    for r in &rows {
        order(&mut scenarios, &format!("{} cc={}", r.link, r.cc));
        order(&mut clients, r.client_impl.as_deref().unwrap_or(""));
        order(&mut servers, r.server_impl.as_deref().unwrap_or(""));
    }
    for scenario in &scenarios {
        out.push_str(&format!(
            "{scenario}: mean efficiency (goodput / down rate), client rows x server columns\n"
        ));
        out.push_str(&format!("{:<12}", "client\\server"));
        for s in &servers {
            out.push_str(&format!(" {s:>9}"));
        }
        out.push('\n');
        for c in &clients {
            out.push_str(&format!("{c:<12}"));
            for s in &servers {
                let cell: Vec<&&Row> = rows
                    .iter()
                    .filter(|r| {
                        format!("{} cc={}", r.link, r.cc) == *scenario
                            && r.client_impl.as_deref() == Some(c)
                            && r.server_impl.as_deref() == Some(s)
                    })
                    .collect();
                let eff: Vec<f64> = cell
                    .iter()
                    .filter(|r| r.status == "completed")
                    .filter_map(|r| r.efficiency)
                    .collect();
                let text = if !eff.is_empty() {
                    format!("{:.0}%", 100.0 * eff.iter().sum::<f64>() / eff.len() as f64)
                } else {
                    let has = |st: &str| cell.iter().any(|r| r.status == st);
                    if cell.is_empty() {
                        "".into()
                    } else if has("timeout") {
                        "T".into()
                    } else if has("failed") {
                        "F".into()
                    } else if has("incompatible") {
                        "x".into()
                    } else {
                        "s".into()
                    }
                };
                out.push_str(&format!(" {text:>9}"));
            }
            out.push('\n');
        }
    }
    out.push_str(&tcp_summary(&all));
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &all {
        *counts.entry(r.status.as_str()).or_default() += 1;
    }
    out.push_str(&format!(
        "{} runs: {}\n",
        all.len(),
        counts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out
}

/// The kernel TCP rows, one line each: time, efficiency and seed 003's slow-start columns.
fn tcp_summary(rows: &[&Row]) -> String {
    let tcp: Vec<&&Row> = rows
        .iter()
        .filter(|r| r.transport.as_deref() == Some("tcp"))
        .collect();
    if tcp.is_empty() {
        return String::new();
    }
    let opt = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.2}{unit}"));
    let mut out = format!(
        "kernel TCP (iperf3 through satquic link --tun), slow-start exit classes as seed 003's Table III\n{:<16} {:<18} {:>3} {:>9} {:>8} {:>5} {:>16} {:>9} {:>10}\n",
        "link", "variant", "rep", "status", "time", "eff", "exit", "capacity", "class"
    );
    for r in tcp {
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "{:<16} {:<18} {:>3} {:>9} {:>8} {:>5} {:>16} {:>9} {:>10}\n",
                r.link,
                r.variant,
                r.rep,
                r.status,
                opt(r.completion_time_s, " s"),
                r.efficiency
                    .map_or("-".into(), |e| format!("{:.0}%", 100.0 * e)),
                match (&r.exit_reason, r.exit_at_s) {
                    (Some(why), Some(t)) => format!("{t:.2} s {why}"),
                    _ => "-".into(),
                },
                opt(r.capacity_at_s, " s"),
                r.exit_class.as_deref().unwrap_or("-")
            ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> MatrixSpec {
        MatrixSpec {
            name: "m".into(),
            impls: vec!["satquic".into(), "ngtcp2".into()],
            presets: vec!["qir-sat".into()],
            ccs: vec!["default".into()],
            repetitions: 2,
            seed: 1,
            bytes: 1 << 20,
            time_cap: Duration::from_secs(30),
            alpn: vec!["h3".into()],
            qlog: false,
            tcp_bytes: None,
            sender_cap: None,
        }
    }

    #[test]
    fn plans_every_pair_per_preset_cc_and_repetition() {
        let runs = plan(&spec(), &AdapterFile::builtin()).unwrap();
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[1].pair(), "satquic/ngtcp2");
        assert_eq!(runs[4].rep, 1);
        let mut ids: Vec<_> = runs.iter().map(|r| &r.run_id).collect();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        assert!(
            runs[0]
                .run_id
                .starts_with("qir-sat__satquic--satquic__default__1MiB__r000-")
        );
    }

    #[test]
    fn tcp_variants_run_once_per_preset_and_repetition_whatever_the_ccs() {
        let mut s = spec();
        s.impls = vec![
            "satquic".into(),
            "tcp-cubic-hystart".into(),
            "tcp-bbr".into(),
        ];
        s.ccs = vec!["default".into(), "bbr".into()];
        s.tcp_bytes = Some(50_000_000);
        let runs = plan(&s, &AdapterFile::builtin()).unwrap();
        // satquic/satquic per cc and rep (4), each tcp variant per rep (4).
        assert_eq!(runs.len(), 8);
        let tcp: Vec<&MatrixRun> = runs.iter().filter(|r| r.tcp).collect();
        assert_eq!(tcp.len(), 4);
        assert_eq!(tcp[0].pair(), "tcp-cubic-hystart");
        assert_eq!(tcp[0].cc, "cubic");
        assert_eq!(tcp[1].cc, "bbr");
        let link = satquic_run::resolve_link("qir-sat").unwrap();
        let r = row(&s, tcp[0], &link);
        assert_eq!(r.bytes, Some(50_000_000));
        assert_eq!(r.transport.as_deref(), Some("tcp"));
        assert_eq!(row(&s, &runs[0], &link).bytes, Some(1 << 20));
    }

    #[test]
    fn bad_specs_are_usage_errors() {
        let adapters = AdapterFile::builtin();
        for (edit, want) in [
            (
                Box::new(|s: &mut MatrixSpec| s.impls.push("msquic".into()))
                    as Box<dyn Fn(&mut MatrixSpec)>,
                "unknown implementation \"msquic\"",
            ),
            (
                Box::new(|s| s.presets = vec!["mars".into()]),
                "--preset mars",
            ),
            (Box::new(|s| s.ccs = vec!["vegas".into()]), "--cc vegas"),
            (Box::new(|s| s.repetitions = 0), "--reps 0"),
            (Box::new(|s| s.bytes = 0), "-n"),
            (Box::new(|s| s.alpn = vec!["h2".into()]), "--alpn h2"),
        ] {
            let mut s = spec();
            edit(&mut s);
            match plan(&s, &adapters) {
                Err(LabError::Usage(m)) => assert!(m.contains(want), "{m}"),
                other => panic!("{want}: {other:?}"),
            }
        }
    }

    #[test]
    fn finished_rows_stand_and_decided_ones_are_decided_again() {
        assert!(is_final("completed", true));
        assert!(is_final("failed", false));
        assert!(!is_final("failed", true));
        assert!(!is_final("skipped", false));
        assert!(!is_final("incompatible", false));
    }

    #[test]
    fn outcome_rows_have_goodput_and_efficiency_against_the_down_rate() {
        let s = spec();
        let runs = plan(&s, &AdapterFile::builtin()).unwrap();
        let link = satquic_run::resolve_link("qir-sat").unwrap();
        let base = row(&s, &runs[0], &link);
        let r = outcome_row(
            base,
            &CellOutcome {
                status: "completed".into(),
                reason: String::new(),
                client_time: Some(Duration::from_secs(1)),
                delivered_bytes: Some(1 << 20),
                progress: Default::default(),
                link: None,
            },
        );
        assert_eq!(r.goodput_bps, Some(8.0 * (1 << 20) as f64));
        let eff = r.efficiency.unwrap();
        assert!((eff - 8.0 * (1 << 20) as f64 / 20e6).abs() < 1e-9, "{eff}");
        assert_eq!(r.client_impl.as_deref(), Some("satquic"));
    }
}
