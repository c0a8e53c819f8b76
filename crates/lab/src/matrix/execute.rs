//! Running a matrix into its campaign directory: the directory's lock, campaign.json and
//! matrix.json, the file served and the certificates; then each run not already final,
//! one at a time, in a partial directory renamed into place when its row is written; and
//! runs.csv collected after each. A run's cell is satquic-net's ([`peers::run_cell`],
//! [`satquic_net::tcp::run_tcp_cell`]); its row is [`super::rows`]'.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use satquic_link::LinkSpec;
use satquic_net::peers::{self, AdapterFile, PeerEnv};
use satquic_run::record::{ChunkRow, Timing, chunks_csv};

use super::rows::{outcome_row, row, tcp_row};
use super::{MatrixRun, MatrixSpec, plan};
use crate::LabError;
use crate::dataset::Row;
use crate::exec::{self, CampaignMeta, CampaignOutcome, Progress};
use crate::spec::{CampaignSpec, Mode};

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
    let bench = Bench::prepare(spec, adapters, env, out, opts, &runs)?;
    let selected: Vec<&MatrixRun> = runs
        .iter()
        .filter(|r| opts.shard.is_none_or(|(i, n)| r.index % n == i))
        .collect();
    let mut rerun = Vec::new();
    let (todo, skipped) = to_run(&selected, &bench.runs_dir, opts.retry_failed, &mut rerun)?;
    let mut p = Progress {
        total: todo.len(),
        done: 0,
        failed: 0,
        skipped,
        last: None,
    };
    progress(&p);
    for run in todo {
        let row = bench.run(run)?;
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
        rerun,
    })
}

/// The selected runs without a final row (a stored row that is not final, or a row.json
/// that cannot be read, is removed, to be run again; the latter's reasons go to `rerun`),
/// and how many rows stand.
fn to_run<'a>(
    selected: &[&'a MatrixRun],
    runs_dir: &Path,
    retry_failed: bool,
    rerun: &mut Vec<String>,
) -> Result<(Vec<&'a MatrixRun>, usize), LabError> {
    let mut todo = Vec::new();
    let mut skipped = 0;
    for run in selected {
        let dir = runs_dir.join(&run.run_id);
        match exec::stored_row(&dir) {
            exec::Stored::Finished(row) if is_final(&row.status, retry_failed) => skipped += 1,
            exec::Stored::Finished(_) => {
                std::fs::remove_dir_all(&dir).map_err(|e| exec::io_err(&dir, e))?;
                todo.push(*run);
            }
            exec::Stored::Corrupt(reason) => {
                std::fs::remove_dir_all(&dir).map_err(|e| exec::io_err(&dir, e))?;
                rerun.push(reason);
                todo.push(*run);
            }
            exec::Stored::Missing => todo.push(*run),
        }
    }
    Ok((todo, skipped))
}

/// Whether a stored row stands (is not run again).
pub(super) fn is_final(status: &str, retry_failed: bool) -> bool {
    match status {
        "completed" => true,
        "failed" | "timeout" => !retry_failed,
        // incompatible, skipped: decided without running; decided again.
        _ => false,
    }
}

/// A matrix directory ready for its runs, and what every run shares: the adapters, the
/// links, which implementations are missing, the file served and the certificates.
struct Bench<'a> {
    spec: &'a MatrixSpec,
    adapters: &'a AdapterFile,
    env: &'a PeerEnv,
    /// Held while the matrix runs: no other invocation runs this shard meanwhile.
    _lock: exec::lock::DirLock,
    runs_dir: PathBuf,
    links: BTreeMap<&'a str, LinkSpec>,
    missing: BTreeMap<String, String>,
    www: PathBuf,
    file: String,
    cert: PathBuf,
    key: PathBuf,
}

impl<'a> Bench<'a> {
    /// Locks `out`, checks that it holds this campaign (unless taken over), writes
    /// campaign.json and matrix.json, and prepares the file and the certificates.
    fn prepare(
        spec: &'a MatrixSpec,
        adapters: &'a AdapterFile,
        env: &'a PeerEnv,
        out: &Path,
        opts: &MatrixOptions,
        runs: &[MatrixRun],
    ) -> Result<Self, LabError> {
        crate::output_dir(out)?;
        // The peers run in their run's directory and are given the served file, the
        // certificates and their logs by path: from there a relative `out` names nothing
        // (`--www m/www: No such file or directory`, every run failed).
        let out = &std::fs::canonicalize(out).map_err(|e| exec::io_err(out, e))?;
        let lock = exec::lock::lock(out, opts.shard)?;
        let cs = campaign_spec(spec);
        if !opts.take_over {
            exec::check_owner(&cs, out)?;
        }
        let runs_dir = out.join("runs");
        std::fs::create_dir_all(&runs_dir).map_err(|e| exec::io_err(&runs_dir, e))?;
        exec::remove_stale_partials(&runs_dir);
        let write = |name: &str, bytes: Vec<u8>| {
            exec::write_atomic_unique(out, name, &bytes)
                .map_err(|e| exec::io_err(&out.join(name), e))
        };
        write(
            "campaign.json",
            serde_json::to_vec_pretty(&meta(spec, runs)).expect("meta serializes"),
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
        Ok(Bench {
            spec,
            adapters,
            env,
            _lock: lock,
            runs_dir,
            links,
            missing,
            www,
            file,
            cert,
            key,
        })
    }

    /// Runs one download in a partial directory, writes its timing and row there, and
    /// renames it into place.
    fn run(&self, run: &MatrixRun) -> Result<Row, LabError> {
        let partial = exec::partial_dir(&self.runs_dir, &run.run_id);
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(|e| exec::io_err(&partial, e))?;
        }
        std::fs::create_dir_all(&partial).map_err(|e| exec::io_err(&partial, e))?;
        let run_started = Instant::now();
        let row = self.execute(run, &partial);
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
        let finished = self.runs_dir.join(&run.run_id);
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
            if exec::read_row(&finished).is_none() {
                return Err(exec::io_err(&finished, e));
            }
        }
        Ok(row)
    }

    /// The row of one run in `dir`: skipped when an implementation is missing,
    /// incompatible when the pair cannot talk, else what its cell measured.
    fn execute(&self, run: &MatrixRun, dir: &Path) -> Row {
        let link = &self.links[run.preset.as_str()];
        let base = row(self.spec, run, link);
        let not_installed: Vec<String> = [&run.client, &run.server]
            .into_iter()
            .filter_map(|n| {
                self.missing
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
            return self.execute_tcp(run, link, base, dir);
        }
        let (client, server) = (
            self.adapters.get(&run.client).expect("planned"),
            self.adapters.get(&run.server).expect("planned"),
        );
        let plan = match peers::plan_pair(client, server, &self.spec.alpn, &run.cc) {
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
            env: self.env,
            client,
            server,
            plan,
            link: run.preset.clone(),
            seed: run.seed,
            www: self.www.clone(),
            file: self.file.clone(),
            size_bytes: self.spec.bytes,
            cert: self.cert.clone(),
            key: self.key.clone(),
            dir: dir.to_path_buf(),
            time_cap: self.spec.time_cap,
            qlog: self.spec.qlog,
            sender_cap: self.spec.sender_cap.clone(),
        };
        let outcome = peers::run_cell(&cell);
        write_chunks(dir, &outcome.progress.mb_times_s);
        outcome_row(base, &outcome)
    }

    fn execute_tcp(&self, run: &MatrixRun, link: &LinkSpec, base: Row, dir: &Path) -> Row {
        let adapter = self.adapters.get_tcp(&run.client).expect("planned");
        let cell = satquic_net::tcp::TcpCell {
            adapter,
            link: link.clone(),
            seed: run.seed,
            size_bytes: self.spec.tcp_size(),
            dir: dir.to_path_buf(),
            time_cap: self.spec.time_cap,
            sender_cap: self.spec.sender_cap_spec().ok().flatten(),
        };
        let outcome = satquic_net::tcp::run_tcp_cell(&cell);
        write_chunks(dir, &outcome.mb_times_s);
        tcp_row(base, &outcome)
    }
}

/// `chunks.csv` of a run from the times it had each MB (nothing when there are none).
fn write_chunks(dir: &Path, mb_times_s: &[f64]) {
    let chunks = ChunkRow::of_flow(0, mb_times_s.iter().copied());
    if !chunks.is_empty() {
        let _ = std::fs::write(dir.join("chunks.csv"), chunks_csv(&chunks));
    }
}
