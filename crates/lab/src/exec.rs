//! Running a campaign: a local pool of workers, resumable, shardable. This is satquic's
//! one executor: `satquic campaign`, `satquic reproduce` and `satquic sim` (a campaign of
//! one link, one workload and its `--cc` variants, [`execute_plan`] without a directory
//! unless `--out` asks for one) all run here.
//!
//! # Layout of a campaign directory
//!
//! ```text
//! DIR/campaign.json          the spec as run, the plan's run ids, analysis settings
//! DIR/runs.csv               one row per finished run, in plan order (crate::dataset)
//! DIR/runs/<run_id>/         summary.json chunks.csv events.jsonl series.csv
//!                            timing.json row.json (the run's runs.csv row),
//!                            qlog.sqlog (with ExecOptions::qlog) and, for
//!                            simulated runs, <odcid>_<client|server>.sqlog per
//!                            connection (quinn-proto's qlog merged with satquic's
//!                            events, satquic_run::qlog::connection_qlog_files)
//! DIR/report/                written by `satquic report`
//! DIR/.lock                  while an invocation runs (DIR/.lock-shard-I-of-N for a
//!                            shard; see [`lock`] for stale locks)
//! ```
//!
//! A directory holds one campaign: an invocation refuses a campaign.json of another
//! campaign (another name) or one it cannot read, unless [`ExecOptions::take_over`].
//!
//! # Resuming
//!
//! A run is done in `runs/.partial-<run_id>-<pid>@<host>/` and renamed to `runs/<run_id>/` when
//! every file is written (a directory rename is atomic), so a run directory either is
//! complete or does not exist. A restarted campaign skips the runs whose directory exists
//! and never runs one twice; runs.csv is rebuilt from the directories after every run
//! batch, so it can never hold a duplicate or lose a finished run. Failed and timed-out
//! runs are finished runs too (a row with `status` and `reason`); `retry_failed` runs
//! them again.
//!
//! # Shards
//!
//! `shard = Some((i, n))` runs the plan entries with `index % n == i`. Shards of a cluster
//! job array write into the same directory on a shared file system (or into separate
//! directories copied together afterwards); `satquic campaign collect DIR` (or `satquic
//! report DIR`) rebuilds runs.csv from whatever run directories are there. Shards of one
//! campaign run side by side in one directory: each holds only its own shard's lock. A
//! Slurm job array of them is what `satquic campaign slurm` writes ([`crate::slurm`]):
//!
//! ```sh
//! #!/bin/sh
//! #SBATCH --array=0-31
//! #SBATCH --cpus-per-task=4
//! exec satquic campaign shard campaign.toml --index "$SLURM_ARRAY_TASK_ID" --of 32 \
//!     --out /shared/geo-search --jobs "$SLURM_CPUS_PER_TASK"
//! ```
//!
//! then `satquic campaign collect /shared/geo-search` once the array is finished.
//!
//! # Modes
//!
//! `sim` runs satquic-sim in virtual time (many runs in parallel, deterministic).
//! `emulated` runs satquic-net's emulated run: server, relay applying the link model and
//! client on loopback, in real time, so a run takes about as long as its transfer and runs
//! execute one at a time whatever `jobs` says; records have the same files and rows.
//!
//! # Timeouts
//!
//! With a spec `timeout`, each run executes on its own thread and the worker waits at
//! most that long; a run that exceeds it becomes a `timeout` row, a simulation is told to
//! stop (satquic-sim's `RunOptions::cancel`), and the worker moves on.
//! The simulator cannot be interrupted, so the abandoned thread runs on in the background
//! until its virtual time cap ends it (its result is discarded).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use satquic_run::record::{RunRecord, Timing};
pub use satquic_sim::PacketCipher;

use crate::LabError;
use crate::dataset::{self, Row};
use crate::plan::{Plan, PlannedRun};
use crate::spec::{AnalysisSpec, CampaignSpec, Mode};

pub mod lock;
mod thread;

use thread::{Executed, execute};

/// What `campaign.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignMeta {
    pub schema: String,
    pub name: String,
    pub description: String,
    pub mode: Mode,
    pub analysis: AnalysisSpec,
    /// Labels in spec order.
    pub links: Vec<String>,
    pub variants: Vec<String>,
    pub workloads: Vec<String>,
    /// Run ids in plan order.
    pub run_ids: Vec<String>,
    /// The spec as parsed.
    pub spec: CampaignSpec,
}

pub const CAMPAIGN_SCHEMA: &str = "satquic-campaign/1";

impl CampaignMeta {
    pub fn new(spec: &CampaignSpec, plan: &Plan) -> Self {
        CampaignMeta {
            schema: CAMPAIGN_SCHEMA.into(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            mode: spec.mode,
            analysis: spec.analysis.clone(),
            links: plan.links.iter().map(|l| l.label.clone()).collect(),
            variants: plan.variants.iter().map(|v| v.label.clone()).collect(),
            workloads: plan.workloads.iter().map(|w| w.label.clone()).collect(),
            run_ids: plan.runs.iter().map(|r| r.run_id.clone()).collect(),
            spec: spec.clone(),
        }
    }

    pub fn read(dir: &Path) -> Result<Self, LabError> {
        let path = dir.join("campaign.json");
        let text = satquic_link::file::read_to_string(&path, crate::files::CAMPAIGN_META).map_err(
            |e| {
                LabError::Usage(format!(
                    "{}: not a campaign directory (cannot read campaign.json: {})",
                    dir.display(),
                    e.reason
                ))
            },
        )?;
        serde_json::from_str(&text).map_err(|e| {
            LabError::Usage(format!(
                "{}: not a satquic campaign.json ({e})",
                path.display()
            ))
        })
    }
}

/// Most worker threads an invocation starts (`--jobs`): each is an OS thread, and
/// thousands of them fail to spawn long before they would help.
pub const MAX_JOBS: usize = 1024;

/// How to run.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Worker threads (runs in parallel).
    pub jobs: usize,
    /// Run only shard `(index, count)`.
    pub shard: Option<(usize, usize)>,
    /// Run failed and timed-out runs again.
    pub retry_failed: bool,
    /// Also write each run's qlog (`qlog.sqlog`, satquic-run's qlog of the record).
    pub qlog: bool,
    /// How simulated runs protect their packets ([`PacketCipher`]). Records are the same
    /// either way (satquic-sim's `tests/null_cipher.rs`; BENCHMARKS.md compares whole
    /// campaigns), so campaigns, `reproduce` and `satquic sim` default to the faster
    /// [`PacketCipher::Null`].
    pub packet_cipher: PacketCipher,
    /// Run even in a directory that holds another campaign (its campaign.json is
    /// replaced; its runs stay but are no longer part of the campaign) or a campaign.json
    /// that cannot be read.
    pub take_over: bool,
    /// Asked before each run and while a run is in flight (every [`STOP_POLL`]): once it
    /// answers true no run starts, the runs in flight are abandoned (cancelled, no
    /// directory), runs.csv is written for the finished ones, the lock is released and
    /// [`execute_plan`] returns [`LabError::Stopped`]. `satquic campaign run` passes
    /// "SIGINT or SIGTERM arrived".
    pub stop: Option<fn() -> bool>,
}

/// How often a worker waiting for its run asks [`ExecOptions::stop`]: a signal ends a
/// campaign within about this long, and a poll costs nothing next to a run.
pub const STOP_POLL: Duration = Duration::from_millis(100);

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_JOBS)),
            shard: None,
            retry_failed: false,
            qlog: false,
            packet_cipher: PacketCipher::Null,
            take_over: false,
            stop: None,
        }
    }
}

/// Reported after each run.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Runs to do in this invocation (finished ones excluded).
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    /// Finished before this invocation started.
    pub skipped: usize,
    /// The run that just finished: id and status.
    pub last: Option<(String, String)>,
}

/// What a campaign invocation did.
#[derive(Debug, Clone)]
pub struct CampaignOutcome {
    pub planned: usize,
    /// Runs of this shard (all runs without shards).
    pub selected: usize,
    pub skipped: usize,
    pub ran: usize,
    pub failed: usize,
    /// Rows now in runs.csv.
    pub rows: usize,
    /// The campaign's runs.csv (none without a directory).
    pub runs_csv: Option<PathBuf>,
    pub wall: Duration,
    /// Runs executed again because their row.json could not be read: why, naming it.
    pub rerun: Vec<String>,
}

/// A run the executor has just finished, as its hook sees it.
pub struct Finished<'a> {
    pub run: &'a PlannedRun,
    /// Its runs.csv row (`status` and `reason` say how it went).
    pub row: &'a Row,
    /// The record, unless the run failed or timed out.
    pub record: Option<&'a RunRecord>,
    /// Wall-clock time the run took.
    pub wall: Duration,
}

/// Called with each finished run, from a worker thread, before the run is stored.
pub type RunHook<'a> = &'a (dyn Fn(&Finished) + Sync);

/// Runs (the rest of) a campaign into `out`.
pub fn run_campaign(
    spec: &CampaignSpec,
    plan: &Plan,
    out: &Path,
    opts: &ExecOptions,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<CampaignOutcome, LabError> {
    execute_plan(spec, plan, Some(out), opts, progress, None)
}

/// Checks before any run starts that every run of an emulated campaign can be emulated
/// (one flow, a link and transport satquic-net's emulated run accepts), so a campaign is refused in one
/// line rather than run differently from its spec.
fn check_emulated(spec: &CampaignSpec, plan: &Plan) -> Result<(), LabError> {
    if spec.mode != Mode::Emulated {
        return Ok(());
    }
    if let Some(run) = plan.runs.iter().find(|r| r.scenario.flows.len() != 1) {
        return Err(LabError::Usage(format!(
            "workload {:?}: emulated mode runs exactly one flow (satquic-net's emulated run); use mode = \"sim\" for {} flows",
            run.workload.label,
            run.scenario.flows.len()
        )));
    }
    for run in &plan.runs {
        satquic_net::emulated::validate(&run.scenario)
            .map_err(|e| LabError::Usage(format!("variant {:?}: {e}", run.variant)))?;
    }
    Ok(())
}

/// The executor: runs the plan's runs (those of `opts.shard`) on `opts.jobs` workers,
/// each with the spec's wall-clock timeout, calling `on_run` with each finished run and
/// `progress` after it. With `out`, the campaign directory (module docs) is
/// written and resumed (runs finished before are not run again; `on_run` sees them read
/// back from their directories); without, nothing is written and every selected run
/// executes.
pub fn execute_plan(
    spec: &CampaignSpec,
    plan: &Plan,
    out: Option<&Path>,
    opts: &ExecOptions,
    progress: &(dyn Fn(&Progress) + Sync),
    on_run: Option<RunHook>,
) -> Result<CampaignOutcome, LabError> {
    let started = Instant::now();
    if !(1..=MAX_JOBS).contains(&opts.jobs) {
        return Err(LabError::Usage(format!(
            "--jobs {} must be between 1 and {MAX_JOBS}",
            opts.jobs
        )));
    }
    check_emulated(spec, plan)?;
    if let Some((i, n)) = opts.shard
        && (n == 0 || i >= n)
    {
        return Err(LabError::Usage(format!(
            "shard index {i} is not below the shard count {n}"
        )));
    }
    let runs_dir = out.map(|out| out.join("runs"));
    // Held until the invocation ends: one invocation per directory (or shard) at a time.
    let _lock = match (out, &runs_dir) {
        (Some(out), Some(runs_dir)) => Some(prepare_dir(spec, plan, out, runs_dir, opts)?),
        _ => None,
    };

    let selected: Vec<&PlannedRun> = match opts.shard {
        Some((i, n)) => plan.shard(i, n),
        None => plan.runs.iter().collect(),
    };
    let mut rerun = Vec::new();
    let (todo, skipped) = runs_to_do(&selected, runs_dir.as_deref(), opts, on_run, &mut rerun)?;

    let state = Mutex::new(Progress {
        total: todo.len(),
        done: 0,
        failed: 0,
        skipped,
        last: None,
    });
    progress(&state.lock().unwrap_or_else(|e| e.into_inner()).clone());
    let target = Target {
        runs_dir: runs_dir.as_deref(),
        qlog: opts.qlog,
        packet_cipher: opts.packet_cipher,
        on_run,
        stop: opts.stop,
    };
    let first_error = run_workers(spec, &todo, opts.jobs, &target, &state, progress);
    let rows = match out {
        Some(out) => collect(out, plan.runs.iter().map(|r| r.run_id.as_str()))?.len(),
        None => 0,
    };
    let p = state.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = first_error {
        return Err(match e {
            LabError::Stopped { .. } => LabError::Stopped {
                ran: p.done,
                remaining: todo.len() - p.done,
                rows,
            },
            e => e,
        });
    }
    Ok(CampaignOutcome {
        planned: plan.runs.len(),
        selected: selected.len(),
        skipped,
        ran: p.done,
        failed: p.failed,
        rows,
        runs_csv: out.map(|out| out.join("runs.csv")),
        wall: started.elapsed(),
        rerun,
    })
}

/// Creates the campaign directory and locks it ([`lock`]), checks that it holds no other
/// campaign, clears half-written runs of a killed invocation and writes campaign.json.
fn prepare_dir(
    spec: &CampaignSpec,
    plan: &Plan,
    out: &Path,
    runs_dir: &Path,
    opts: &ExecOptions,
) -> Result<lock::DirLock, LabError> {
    crate::output_dir(out)?;
    let held = lock::lock(out, opts.shard)?;
    if !opts.take_over {
        check_owner(spec, out)?;
    }
    std::fs::create_dir_all(runs_dir).map_err(|e| io_err(runs_dir, e))?;
    remove_stale_partials(runs_dir);
    remove_stale_temporaries(out);
    write_meta(spec, plan, out)?;
    Ok(held)
}

/// Makes `out` the directory of this campaign before any invocation runs there (as
/// `satquic campaign slurm` does for the shards it submits): refuses another campaign's
/// directory like an invocation does, creates `runs/` and writes campaign.json, so that
/// `collect` works on it whichever shards have run.
pub fn adopt_dir(spec: &CampaignSpec, plan: &Plan, out: &Path) -> Result<(), LabError> {
    crate::output_dir(out)?;
    check_owner(spec, out)?;
    let runs_dir = out.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| io_err(&runs_dir, e))?;
    write_meta(spec, plan, out)
}

fn write_meta(spec: &CampaignSpec, plan: &Plan, out: &Path) -> Result<(), LabError> {
    let meta = CampaignMeta::new(spec, plan);
    write_atomic_unique(
        out,
        "campaign.json",
        &serde_json::to_vec_pretty(&meta).expect("meta serializes"),
    )
    .map_err(|e| io_err(&out.join("campaign.json"), e))
}

/// Refuses a directory whose campaign.json is another campaign's (by name: a campaign
/// whose spec changed is resumed, its changed runs run again) or cannot be read.
pub(crate) fn check_owner(spec: &CampaignSpec, out: &Path) -> Result<(), LabError> {
    if !out.join("campaign.json").exists() {
        return Ok(());
    }
    let meta = CampaignMeta::read(out)?;
    if meta.name != spec.name {
        return Err(LabError::Usage(format!(
            "{} holds campaign {:?}, not {:?}; choose another directory, or --force to run {:?} there",
            out.display(),
            meta.name,
            spec.name,
            spec.name
        )));
    }
    Ok(())
}

/// The selected runs still to execute, and how many were skipped because their directory
/// holds a finished run (the hook sees those read back). Failed runs are removed and
/// executed again with `retry_failed`; a directory whose row.json cannot be read is
/// removed and its run executed again, the reason added to `rerun`.
fn runs_to_do<'p>(
    selected: &[&'p PlannedRun],
    runs_dir: Option<&Path>,
    opts: &ExecOptions,
    on_run: Option<RunHook>,
    rerun: &mut Vec<String>,
) -> Result<(Vec<&'p PlannedRun>, usize), LabError> {
    let mut todo = Vec::new();
    let mut skipped = 0;
    for run in selected {
        let Some(runs_dir) = runs_dir else {
            todo.push(*run);
            continue;
        };
        let dir = runs_dir.join(&run.run_id);
        match stored_row(&dir) {
            Stored::Finished(row) if !(opts.retry_failed && is_failure(&row.status)) => {
                skipped += 1;
                if let Some(hook) = on_run {
                    // A finished run is not run again; the hook still sees it.
                    replay_finished(hook, run, &row, &dir);
                }
            }
            Stored::Finished(_) => {
                std::fs::remove_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
                todo.push(*run);
            }
            // Its directory holds no result to keep: run it again (the new directory
            // could not replace a non-empty one, and the run never finished).
            Stored::Corrupt(reason) => {
                std::fs::remove_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
                rerun.push(reason);
                todo.push(*run);
            }
            Stored::Missing => todo.push(*run),
        }
    }
    Ok((todo, skipped))
}

/// Calls the hook with a run finished by an earlier invocation, read back from `dir`.
fn replay_finished(hook: RunHook, run: &PlannedRun, row: &Row, dir: &Path) {
    let record = RunRecord::read_from(dir).ok();
    let wall = satquic_link::file::read(&dir.join("timing.json"), crate::files::RUN_SMALL_JSON)
        .ok()
        .and_then(|t| serde_json::from_slice::<Timing>(&t).ok())
        .map_or(Duration::ZERO, |t| {
            Duration::from_secs_f64(t.wall_s.max(0.0))
        });
    hook(&Finished {
        run,
        row,
        record: record.as_ref(),
        wall,
    });
}

/// Executes `todo` on a pool of workers (one for emulated campaigns), updating `state`
/// and calling `progress` after each run; returns the first error, after which workers
/// take no new run.
fn run_workers(
    spec: &CampaignSpec,
    todo: &[&PlannedRun],
    jobs: usize,
    target: &Target,
    state: &Mutex<Progress>,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Option<LabError> {
    let next = AtomicUsize::new(0);
    let first_error: Mutex<Option<LabError>> = Mutex::new(None);
    // Emulated runs are real time: parallel runs would share the CPU and distort each
    // other's timing, so they run one at a time.
    let jobs = match spec.mode {
        Mode::Sim => jobs.max(1).min(todo.len().max(1)),
        Mode::Emulated => 1,
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(run) = todo.get(i) else { break };
                    if first_error.lock().map(|e| e.is_some()).unwrap_or(true) {
                        break;
                    }
                    if target.stop.is_some_and(|stop| stop()) {
                        let mut slot = first_error.lock().unwrap_or_else(|e| e.into_inner());
                        slot.get_or_insert(STOPPED);
                        break;
                    }
                    match execute_and_store(&spec.name, run, spec.timeout, target) {
                        Ok(row) => {
                            let mut p = state.lock().unwrap_or_else(|e| e.into_inner());
                            p.done += 1;
                            if is_failure(&row.status) {
                                p.failed += 1;
                            }
                            p.last = Some((row.run_id.clone(), row.status.clone()));
                            progress(&p);
                        }
                        Err(e) => {
                            let mut slot = first_error.lock().unwrap_or_else(|e| e.into_inner());
                            slot.get_or_insert(e);
                        }
                    }
                }
            });
        }
    });
    first_error.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The error a worker reports when it stops; [`execute_plan`] fills in the counts.
const STOPPED: LabError = LabError::Stopped {
    ran: 0,
    remaining: 0,
    rows: 0,
};

fn is_failure(status: &str) -> bool {
    matches!(status, "failed" | "timeout")
}

pub(crate) fn io_err(path: &Path, e: std::io::Error) -> LabError {
    LabError::Io(format!("{}: {e}", path.display()))
}

pub(crate) fn read_row(dir: &Path) -> Option<Row> {
    match stored_row(dir) {
        Stored::Finished(row) => Some(*row),
        Stored::Missing | Stored::Corrupt(_) => None,
    }
}

/// What a run's directory under `runs/` holds.
pub(crate) enum Stored {
    /// No directory: the run was not finished here.
    Missing,
    Finished(Box<Row>),
    /// A directory (which appears only complete, by a rename) whose row.json cannot be
    /// read as a row: why, naming the file.
    Corrupt(String),
}

pub(crate) fn stored_row(dir: &Path) -> Stored {
    if std::fs::symlink_metadata(dir).is_err() {
        return Stored::Missing;
    }
    let path = dir.join("row.json");
    let text = match satquic_link::file::read_to_string(&path, crate::files::RUN_SMALL_JSON) {
        Ok(text) => text,
        Err(e) => return Stored::Corrupt(e.to_string()),
    };
    match serde_json::from_str(&text) {
        Ok(row) => Stored::Finished(Box::new(row)),
        Err(e) => Stored::Corrupt(format!("{}: not a run's row ({e})", path.display())),
    }
}

/// The directory a run is written in until it is complete: named after the run, the
/// process and its host, so that shards on other nodes of a shared file system can tell
/// whose it is. The run id is cut ([`crate::plan::fit_name`]) so that the whole name stays
/// within [`MAX_FILE_NAME`](crate::plan::MAX_FILE_NAME) bytes with the pid and host after
/// it (an id near the limit, and a host name up to 64 bytes, would pass it otherwise).
pub(crate) fn partial_dir(runs_dir: &Path, run_id: &str) -> PathBuf {
    let owner = format!("-{}@{}", std::process::id(), lock::host_name());
    let prefix = ".partial-";
    let room = crate::plan::MAX_FILE_NAME.saturating_sub(prefix.len() + owner.len());
    runs_dir.join(format!(
        "{prefix}{}{owner}",
        crate::plan::fit_name(run_id, room)
    ))
}

/// Removes `.partial-*` directories left by processes of this host that no longer exist
/// (Linux: by their pid); those of other hosts (shards on other nodes), and any where
/// pids cannot be checked, only once they are older than a day.
pub(crate) fn remove_stale_partials(runs_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return;
    };
    let here = lock::host_name();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(".partial-") else {
            continue;
        };
        // Names before hosts were added have none: this host's.
        let (rest, host) = match rest.rsplit_once('@') {
            Some((rest, host)) => (rest, host),
            None => (rest, here.as_str()),
        };
        let pid = rest.rsplit('-').next().and_then(|p| p.parse::<u32>().ok());
        let stale = match pid {
            Some(pid) if host == here && !here.is_empty() && Path::new("/proc/self").exists() => {
                pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
            }
            _ => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > Duration::from_secs(86_400)),
        };
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Where a finished run goes.
#[derive(Clone, Copy, Default)]
pub struct Target<'a> {
    /// The campaign's `runs/` directory; none: the run is not stored.
    pub runs_dir: Option<&'a Path>,
    /// Also write `qlog.sqlog`.
    pub qlog: bool,
    /// How simulated runs protect their packets.
    pub packet_cipher: PacketCipher,
    pub on_run: Option<RunHook<'a>>,
    /// [`ExecOptions::stop`].
    pub stop: Option<fn() -> bool>,
}

/// Executes a run and stores its directory atomically; returns its row.
pub fn execute_and_store(
    campaign: &str,
    run: &PlannedRun,
    timeout: Option<Duration>,
    target: &Target,
) -> Result<Row, LabError> {
    let (executed, wall) = execute(run, timeout, target);
    if matches!(executed, Executed::Abandoned) {
        return Err(STOPPED);
    }
    let row = outcome_row(campaign, run, &executed);
    if let Some(hook) = target.on_run {
        hook(&Finished {
            run,
            row: &row,
            record: match &executed {
                Executed::Record(record, ..) => Some(record),
                _ => None,
            },
            wall,
        });
    }
    let Some(runs_dir) = target.runs_dir else {
        return Ok(row);
    };
    let partial = partial_dir(runs_dir, &run.run_id);
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| io_err(&partial, e))?;
    }
    std::fs::create_dir_all(&partial).map_err(|e| io_err(&partial, e))?;
    if let Executed::Record(record, timing, connection_qlogs) = &executed {
        // Plain writes: the directory rename below is what makes a run appear
        // complete, and per-file fsyncs cost ~0.1 s each on some file systems.
        let timing = timing
            .clone()
            .unwrap_or_else(|| Timing::new(wall, record.sim_time));
        let timing = serde_json::to_vec_pretty(&timing).expect("timing serializes");
        let qlog = if target.qlog {
            record.qlog_files()
        } else {
            Vec::new()
        };
        let qlog = qlog.into_iter().chain(connection_qlogs.iter().cloned());
        for (name, bytes) in record
            .data_files()
            .into_iter()
            .map(|(name, bytes)| (name.to_string(), bytes))
            .chain([
                (
                    "summary.json".to_string(),
                    record.summary_json().into_bytes(),
                ),
                ("timing.json".to_string(), timing),
            ])
            .chain(qlog)
        {
            std::fs::write(partial.join(name), bytes).map_err(|e| io_err(&partial, e))?;
        }
    }
    std::fs::write(
        partial.join("row.json"),
        serde_json::to_vec_pretty(&row).expect("rows serialize"),
    )
    .map_err(|e| io_err(&partial, e))?;
    let finished = runs_dir.join(&run.run_id);
    if let Err(e) = std::fs::rename(&partial, &finished) {
        // Another shard finished the same run first: keep its directory.
        let _ = std::fs::remove_dir_all(&partial);
        if read_row(&finished).is_none() {
            return Err(io_err(&finished, e));
        }
    }
    Ok(row)
}

/// The runs.csv row of an executed run.
fn outcome_row(campaign: &str, run: &PlannedRun, executed: &Executed) -> Row {
    match executed {
        Executed::Record(record, ..) => dataset::record_row(campaign, run, record),
        Executed::Failed(reason) => dataset::failed_row(campaign, run, "failed", reason),
        // Not stored ([`execute_and_store`] returns before); a row for completeness.
        Executed::Abandoned => dataset::failed_row(
            campaign,
            run,
            "failed",
            "abandoned: the campaign was stopped",
        ),
        Executed::TimedOut(limit) => dataset::failed_row(
            campaign,
            run,
            "timeout",
            &format!(
                "no result within the {} s wall-clock timeout",
                limit.as_secs_f64()
            ),
        ),
    }
}

/// Rebuilds `runs.csv` from the run directories of `run_ids` (plan order) and returns the
/// rows. Runs without a directory are left out; a directory whose row.json cannot be read
/// is an error naming it (`campaign run` runs it again), not a run silently left out.
pub fn collect<'a>(
    out: &Path,
    run_ids: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<Row>, LabError> {
    let runs_dir = out.join("runs");
    let mut rows = Vec::new();
    for (index, id) in run_ids.into_iter().enumerate() {
        match stored_row(&runs_dir.join(id)) {
            Stored::Finished(mut row) => {
                row.index = index;
                rows.push(*row);
            }
            Stored::Missing => {}
            Stored::Corrupt(reason) => {
                return Err(LabError::Usage(format!(
                    "{reason}; `satquic campaign run` on this directory runs it again"
                )));
            }
        }
    }
    write_atomic_unique(out, "runs.csv", &dataset::to_csv(&rows))
        .map_err(|e| io_err(&out.join("runs.csv"), e))?;
    Ok(rows)
}

/// Rebuilds runs.csv of a campaign directory from its `campaign.json` (merging shards).
pub fn collect_dir(out: &Path) -> Result<Vec<Row>, LabError> {
    let meta = CampaignMeta::read(out)?;
    collect(out, meta.run_ids.iter().map(String::as_str))
}

/// Atomic write through a temporary name unique to this process and call, so that
/// concurrent shards never share a temporary file. Atomic against a killed process, not
/// against power loss (no fsync: it costs ~0.1 s per file on some file systems). A write
/// that fails (a full disk) removes its temporary file.
pub fn write_atomic_unique(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let suffix = format!(".{}.{n}.tmp", std::process::id());
    let room = crate::plan::MAX_FILE_NAME.saturating_sub(1 + suffix.len());
    let tmp = dir.join(format!(".{}{suffix}", crate::plan::fit_name(name, room)));
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
        .and_then(|()| std::fs::rename(&tmp, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Removes the temporary files of [`write_atomic_unique`] in `dir` that a killed process
/// left: those of a process of this host that no longer exists, a minute old at least (a
/// shard on another node of a shared file system may have the same pid), and any an hour
/// old.
pub(crate) fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
            continue;
        };
        let mut parts = rest.rsplitn(3, '.');
        let (Some(n), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(_), Ok(pid)) = (n.parse::<usize>(), pid.parse::<u32>()) else {
            continue;
        };
        let age = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default();
        let dead = Path::new("/proc/self").exists()
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists();
        if (dead && age > Duration::from_secs(60)) || age > Duration::from_secs(3600) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests;
