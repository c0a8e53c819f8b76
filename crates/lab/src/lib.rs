//! # satquic-lab: campaigns, the dataset, analysis, plots, the report and `reproduce`
//!
//! The lab turns a campaign spec (TOML, [`spec`]) into a plan of runs ([`plan`]), runs them
//! on a local pool of workers or as one shard of a cluster job array, resumably
//! ([`exec`]), keeps one directory per run plus a `runs.csv` with one row per run
//! ([`dataset`]), analyses them the way the seeds did ([`analysis`]), draws the figures
//! ([`plot`]) and writes a self-contained HTML report ([`report`]). [`reproduce`] holds the
//! built-in campaigns that put our numbers next to the seeds' ([`claims`]); [`beside`] those
//! that judge the controllers beside other traffic (pairs, harm, a busy beam).
//!
//! ```no_run
//! use satquic_lab::{exec, plan::Plan, spec::CampaignSpec};
//! let spec = CampaignSpec::from_file("campaign.toml".as_ref()).unwrap();
//! let plan = Plan::new(&spec).unwrap();
//! exec::run_campaign(&spec, &plan, "out".as_ref(), &exec::ExecOptions::default(), &|_| {})
//!     .unwrap();
//! satquic_lab::report::write_report(&["out".into()], "out/report".as_ref(), None).unwrap();
//! ```
//!
//! # Commands
//!
//! ```sh
//! satquic campaign plan SPEC [--csv] [--index I --of N]    # list the runs
//! satquic campaign run SPEC --out DIR [--jobs N] [--retry-failed] [--report]
//! satquic campaign shard SPEC --index I --of N --out DIR    # one slice (Slurm --array)
//! satquic campaign slurm SPEC --shards N --out DIR [--submit] # a Slurm job array of shards
//! satquic campaign collect DIR                              # rebuild runs.csv (merge shards)
//! satquic report DIR [DIR...] [--out DIR/report]
//! satquic reproduce [--quick|--full] [--out DIR] [--jobs N] [--only a,b,c,d,e]
//! satquic beside [--quick|--full] [--out DIR] [--jobs N] [--only pairs,beam] [--links L] [--cc C]
//! satquic matrix [--impl a,b] [--preset p,q] [--cc default,bbr] [--reps N] [-n SIZE] --out DIR
//! ```
//!
//! The spec format is documented in [`spec`]; examples are in `crates/lab/campaigns/`.
//!
//! # runs.csv
//!
//! One header row, one row per finished run, plain comma-separated columns: it loads
//! with `pandas.read_csv("runs.csv")` and no options. Empty cells are missing values. The
//! columns are the fields of [`dataset::Row`], in this order:
//!
//! | group | columns |
//! |---|---|
//! | identity | `index` (plan order), `run_id` (directory under `runs/`), `campaign`, `mode` |
//! | link | `link` (label), `link_source` (preset or file), `link_params` (`k=v;k=v`), `buffer_bdp`, `plr`, `down_rate_bps`, `up_rate_bps`, `base_rtt_s`, `down_queue_bytes`, `down_queue_packets` |
//! | transport | `variant`, `cc`, `initial_window`, `receive_window`, `stream_receive_window`, `send_window`, `initial_rtt_s`, `mtu`, `sender_cap_bps` |
//! | workload | `workload`, `workload_kind` (`download`/`upload`/`timed`/`beam`), `bytes`, `duration_s`, `flows`, `stagger_s`, `rep`, `seed`, `time_cap_s` |
//! | outcome | `status` (`completed`, `capped`, `failed`, `timeout`), `reason`, `sim_time_s` |
//! | flow 0 | `delivered_bytes`, `completion_time_s`, `handshake_time_s`, `goodput_bps`, `efficiency`, `packets_sent`, `packets_lost`, `bytes_lost`, `congestion_events`, `first_rtt_s`, `min_rtt_s`, `first_drop_at_s`, `drops_congestion`, `drops_random`, `first_loss_detected_at_s` |
//! | slow-start exit | `exit_at_s`, `exit_reason`, `exit_cwnd_before`, `exit_cwnd_after`, `exit_ssthresh`, `exit_rtt_s`, `cwnd_reduction_ratio`, `shadow_exit_at_s`, `shadow_exit_cwnd` |
//! | classification | `capacity_at_s`, `capacity_source`, `exit_class`, `shadow_exit_class`, `exit_to_loss_ratio`, `shadow_exit_to_loss_ratio`, `owd_capacity_at_s`, `owd_exit_class`, `owd_shadow_exit_class`, `max_queue_bytes` |
//! | queueing delay (flow 0) | `queue_p50_ms`, `queue_p95_ms`: how long its data packets waited in the bottleneck's queue over the whole flow, median and 95th percentile, ms (the link's ground truth: the simulator's link, or for matrix QUIC cells the relay's books of the download; empty for kernel TCP cells) |
//! | all flows | `flows_completed`, `total_goodput_bps`, `utilization`, `jain_index` |
//! | resumed runs | `first_completion_time_s` (the first connection), `resume_jump_cwnd` (Careful Resume's jump, bytes) |
//! | implementation matrix | `client_impl`, `server_impl` (adapter names; empty outside `satquic matrix`, [`matrix`]) |
//!
//! Units are in the names (`_s` seconds, `_bps` bit/s, `_bytes`/`bytes` bytes); times are
//! seconds since the start of the run, except `completion_time_s` and `handshake_time_s`
//! (since the flow's start). Each run directory also holds satquic-sim's record files
//! (`summary.json`, `chunks.csv` and `received_chunks.csv` with the per-MB times in order
//! and received in any order, `[analysis] delivery` choosing which the report reads,
//! `events.jsonl`, `series.csv`),
//! `timing.json` (wall-clock time: the only machine-dependent file) and `row.json`.
//!
//! The same spec and seeds give byte-identical runs.csv files, whatever `--jobs` and
//! sharding, except for `bbr` runs (quinn's BBR draws from the thread RNG; satquic's
//! `bbr3` draws from the run seed and is reproducible).

pub mod analysis;
pub mod beside;
pub mod calibrate;
pub mod claims;
pub mod dataset;
pub mod exec;
pub mod files;
pub mod limit;
pub mod matrix;
pub mod plan;
pub mod plot;
pub mod report;
pub mod reproduce;
pub mod scorecard;
pub mod slurm;
pub mod spec;
pub mod stats;

/// Creates the output directory `dir` (and its parents). A path that exists and is not a
/// directory, or one that cannot be created (`/proc/x`, under a file, without
/// permission), or an existing one this process cannot create files in (read-only), is
/// the path the user gave: a usage error (exit 2), as every command that takes an output
/// directory answers it, not an I/O failure.
pub fn output_dir(dir: &std::path::Path) -> Result<(), LabError> {
    if dir.exists() && !dir.is_dir() {
        return Err(LabError::Usage(format!(
            "{}: not a directory; give an output directory (it is created if missing)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        LabError::Usage(format!(
            "{}: cannot create the output directory: {e}",
            dir.display()
        ))
    })?;
    // An existing directory this process cannot write in is bad input too, refused before
    // anything runs (it failed at the first file written, exit 1).
    let probe = dir.join(format!(".satquic-write-check.{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(LabError::Usage(format!(
            "{}: cannot write in the output directory: {e}",
            dir.display()
        ))),
    }
}

/// Why a lab operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabError {
    /// Bad input from the user (spec, arguments, directory): one line, exit code 2.
    Usage(String),
    /// A file could not be read or written.
    Io(String),
    /// [`ExecOptions::stop`](exec::ExecOptions::stop) asked the campaign to stop: the
    /// runs in flight were abandoned, runs.csv holds the finished ones, the directory
    /// lock is released; the same invocation again resumes.
    Stopped {
        /// Runs this invocation finished before it stopped.
        ran: usize,
        /// Runs of this invocation left to do (abandoned ones included).
        remaining: usize,
        /// Rows in runs.csv (finished runs of every invocation).
        rows: usize,
    },
}

impl std::fmt::Display for LabError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabError::Usage(m) | LabError::Io(m) => f.write_str(m),
            LabError::Stopped {
                ran,
                remaining,
                rows,
            } => write!(
                f,
                "stopped: {ran} runs finished in this invocation, {remaining} not run \
                 (those in flight abandoned); runs.csv holds {rows} rows"
            ),
        }
    }
}

impl std::error::Error for LabError {}

impl From<spec::SpecError> for LabError {
    fn from(e: spec::SpecError) -> Self {
        LabError::Usage(e.0)
    }
}
