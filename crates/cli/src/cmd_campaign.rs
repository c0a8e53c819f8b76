//! `satquic campaign`: plan, run, shard (or submit as a Slurm job array) and collect
//! campaigns (logic in satquic-lab).

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use satquic_lab::LabError;
use satquic_lab::exec::{self, ExecOptions, Progress};
use satquic_lab::plan::Plan;
use satquic_lab::slurm;
use satquic_lab::spec::CampaignSpec;

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// List the runs a spec expands to (one line per run; --csv for a table).
    Plan {
        /// Campaign spec (TOML).
        spec: PathBuf,
        /// Print CSV (index,run_id,link,variant,workload,rep,seed) instead of aligned text.
        #[arg(long)]
        csv: bool,
        /// Only the runs of shard INDEX (with --of).
        #[arg(long, requires = "of")]
        index: Option<usize>,
        /// Number of shards.
        #[arg(long, requires = "index")]
        of: Option<usize>,
    },
    /// Run a campaign, or resume it: finished runs in --out are skipped.
    Run {
        /// Campaign spec (TOML).
        spec: PathBuf,
        /// Campaign directory (runs.csv, runs/, report/).
        #[arg(long, short)]
        out: PathBuf,
        #[command(flatten)]
        exec: ExecArgs,
        /// Also write the report (report/index.html) when done.
        #[arg(long)]
        report: bool,
    },
    /// Run one shard of a campaign (a cluster job array's task); see `collect`.
    Shard {
        /// Campaign spec (TOML).
        spec: PathBuf,
        /// This shard, from 0 (e.g. $SLURM_ARRAY_TASK_ID).
        #[arg(long)]
        index: usize,
        /// Number of shards.
        #[arg(long)]
        of: usize,
        /// Campaign directory shared by all shards.
        #[arg(long, short)]
        out: PathBuf,
        #[command(flatten)]
        exec: ExecArgs,
    },
    /// Write a Slurm job array (DIR/slurm.sh) that runs the campaign's shards into DIR;
    /// --submit hands it to sbatch. Submitting again runs only what is missing.
    Slurm {
        /// Campaign spec (TOML).
        spec: PathBuf,
        /// Array tasks, one shard each.
        #[arg(long)]
        shards: usize,
        /// Campaign directory, on a file system every node shares.
        #[arg(long, short)]
        out: PathBuf,
        /// Submit the script with sbatch (otherwise print how to).
        #[arg(long)]
        submit: bool,
        /// Slurm partition (default: the cluster's default partition).
        #[arg(long, short)]
        partition: Option<String>,
        /// Time limit of one task: minutes, HH:MM:SS or D-HH:MM:SS (default: the
        /// partition's).
        #[arg(long, short)]
        time: Option<String>,
        /// CPUs per task; each shard runs that many simulations in parallel.
        #[arg(long, short, default_value_t = 1)]
        cpus_per_task: usize,
        /// At most this many tasks at once (--array=0-N%K).
        #[arg(long)]
        max_running: Option<usize>,
        /// Another #SBATCH option, e.g. --sbatch-option=--mem=4G (repeatable).
        #[arg(long, allow_hyphen_values = true)]
        sbatch_option: Vec<String>,
        /// The satquic binary the tasks run (default: this one).
        #[arg(long)]
        satquic: Option<PathBuf>,
        /// Run failed and timed-out runs again.
        #[arg(long)]
        retry_failed: bool,
    },
    /// Rebuild runs.csv from the run directories (after shards, or to check a directory).
    Collect {
        /// Campaign directory.
        dir: PathBuf,
    },
}

#[derive(clap::Args)]
struct ExecArgs {
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Run failed and timed-out runs again.
    #[arg(long)]
    retry_failed: bool,
    /// Run even where the directory holds another campaign (its campaign.json is
    /// replaced) or a campaign.json that cannot be read.
    #[arg(long)]
    force: bool,
}

impl ExecArgs {
    fn options(&self, shard: Option<(usize, usize)>) -> Result<ExecOptions, Failure> {
        let mut o = exec_options(self.jobs)?;
        o.retry_failed = self.retry_failed;
        o.take_over = self.force;
        o.shard = shard;
        Ok(o)
    }
}

/// The default execution options with `--jobs` (at least 1; none: the number of CPUs).
pub(crate) fn exec_options(jobs: Option<usize>) -> Result<ExecOptions, Failure> {
    let mut o = ExecOptions::default();
    if let Some(j) = jobs {
        if j == 0 {
            return Err(Failure::Usage("--jobs must be at least 1".into()));
        }
        o.jobs = j;
    }
    Ok(o)
}

/// `opts` stopped by SIGINT and SIGTERM between runs, as `campaign run` is: the runs in
/// flight are abandoned, the campaign's runs.csv is written for the finished ones, and
/// [`stopped`] says so. For the commands that run several campaigns (beside, reproduce,
/// calibrate), which a signal killed with no word.
pub(crate) fn stop_on_signals(opts: ExecOptions) -> ExecOptions {
    satquic_net::tun::stop_on_termination_signals();
    ExecOptions {
        stop: Some(satquic_net::tun::termination_requested),
        ..opts
    }
}

/// The line of a command of several campaigns stopped in `campaign` (whose directory is
/// `dir`, if known): what was kept and how to resume; other errors as [`lab_failure`].
pub(crate) fn stopped(e: LabError, campaign: &str, dir: Option<&Path>) -> Failure {
    match e {
        e @ LabError::Stopped { .. } => {
            let runs_csv = dir.map_or(String::new(), |d| {
                format!(" ({})", d.join("runs.csv").display())
            });
            Failure::Other(format!(
                "{campaign}: {e}{runs_csv}; the report is written once every campaign is \
                 done: run the same command again to resume (finished runs are kept)"
            ))
        }
        e => lab_failure(e),
    }
}

/// A lab error as a command failure: bad input exits 2.
pub(crate) fn lab_failure(e: LabError) -> Failure {
    match e {
        LabError::Usage(m) => Failure::Usage(m),
        LabError::Io(m) => Failure::Other(m),
        e @ LabError::Stopped { .. } => Failure::Other(e.to_string()),
    }
}

pub(crate) fn load(spec: &Path) -> Result<(CampaignSpec, Plan), Failure> {
    let s = CampaignSpec::from_file(spec).map_err(|e| Failure::Usage(e.0))?;
    let plan = Plan::new(&s).map_err(|e| Failure::Usage(format!("{}: {}", spec.display(), e.0)))?;
    Ok((s, plan))
}

/// A progress bar on a terminal (stderr), nothing in pipes.
pub(crate) struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub(crate) fn new(prefix: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} runs, {elapsed_precise} elapsed, ETA {eta_precise} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        Bar { bar }
    }

    pub(crate) fn update(&self, p: &Progress) {
        self.bar.set_length(p.total as u64);
        self.bar.set_position(p.done as u64);
        let mut msg = String::new();
        if p.skipped > 0 {
            msg.push_str(&format!("({} done before) ", p.skipped));
        }
        if p.failed > 0 {
            msg.push_str(&format!("{} failed ", p.failed));
        }
        self.bar.set_message(msg);
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

pub fn run(args: Args) -> Result<(), Failure> {
    match args.command {
        Command::Plan {
            spec,
            csv,
            index,
            of,
        } => print_plan(&spec, csv, index.zip(of)),
        Command::Run {
            spec,
            out,
            exec,
            report,
        } => {
            let (s, plan) = load(&spec)?;
            run_one(&s, &plan, &out, &exec.options(None)?)?;
            if report {
                crate::cmd_report::report_campaign(&out)?;
            }
            Ok(())
        }
        Command::Shard {
            spec,
            index,
            of,
            out,
            exec,
        } => {
            check_shard(index, of)?;
            let (s, plan) = load(&spec)?;
            run_one(&s, &plan, &out, &exec.options(Some((index, of)))?)
        }
        Command::Slurm {
            spec,
            shards,
            out,
            submit,
            partition,
            time,
            cpus_per_task,
            max_running,
            sbatch_option,
            satquic,
            retry_failed,
        } => {
            let opts = slurm::JobOptions {
                shards,
                max_running,
                partition,
                time,
                cpus_per_task,
                sbatch_options: sbatch_option,
                satquic: PathBuf::new(),
                retry_failed,
            };
            write_slurm_job(&spec, &out, opts, satquic, submit)
        }
        Command::Collect { dir } => collect(&dir),
    }
}

/// `--index I --of N` names a shard: I below N.
fn check_shard(index: usize, of: usize) -> Result<(), Failure> {
    if of == 0 || index >= of {
        return Err(Failure::Usage(format!(
            "--index {index} must be below --of {of}"
        )));
    }
    Ok(())
}

/// `campaign plan`: the runs of the spec (or of one shard), as aligned text or CSV.
fn print_plan(spec: &Path, csv: bool, shard: Option<(usize, usize)>) -> Result<(), Failure> {
    let (_, plan) = load(spec)?;
    let runs: Vec<_> = match shard {
        Some((i, n)) => {
            check_shard(i, n)?;
            plan.shard(i, n)
        }
        None => plan.runs.iter().collect(),
    };
    if csv {
        outln!("index,run_id,link,variant,workload,rep,seed")?;
        for r in &runs {
            outln!(
                "{},{},\"{}\",\"{}\",\"{}\",{},{}",
                r.index,
                r.run_id,
                r.link.label,
                r.variant,
                r.workload.label,
                r.rep,
                r.seed
            )?;
        }
        return Ok(());
    }
    outln!(
        "campaign {}: {} runs ({} links x {} variants x {} workloads x {} repetitions)",
        plan.name,
        plan.runs.len(),
        plan.links.len(),
        plan.variants.len(),
        plan.workloads.len(),
        plan.runs.len() / (plan.links.len() * plan.variants.len() * plan.workloads.len()).max(1)
    )?;
    for r in &runs {
        outln!(
            "{:>6}  {:<28} {:<24} {:<12} rep {:<3} seed {:<6} {}",
            r.index,
            r.link.label,
            r.variant,
            r.workload.label,
            r.rep,
            r.seed,
            r.run_id
        )?;
    }
    Ok(())
}

/// `campaign slurm`: writes the job array for `spec` into `out` (the tasks run `satquic`,
/// default this binary) and submits it or says how to.
fn write_slurm_job(
    spec: &Path,
    out: &Path,
    mut opts: slurm::JobOptions,
    satquic: Option<PathBuf>,
    submit: bool,
) -> Result<(), Failure> {
    let (s, plan) = load(spec)?;
    opts.satquic = match satquic {
        Some(p) => p
            .canonicalize()
            .map_err(|e| Failure::Usage(format!("--satquic {}: {e}", p.display())))?,
        None => std::env::current_exe()?,
    };
    let script = slurm::write_job(&s, &plan, spec, out, &opts).map_err(lab_failure)?;
    outln!(
        "{}: {} runs in {} shards; wrote {}",
        s.name,
        plan.runs.len(),
        opts.shards,
        script.display()
    )?;
    if submit {
        let job = slurm::submit(&script, &[]).map_err(lab_failure)?;
        outln!("submitted job array {job}")?;
    } else {
        outln!("submit: sbatch {}", script.display())?;
    }
    outln!(
        "when it is done: satquic campaign collect {} (submit again to run what a failed or cancelled task left)",
        out.display()
    )
}

/// `campaign collect`: runs.csv rebuilt from the run directories.
fn collect(dir: &Path) -> Result<(), Failure> {
    let rows = exec::collect_dir(dir).map_err(lab_failure)?;
    let meta = exec::CampaignMeta::read(dir).map_err(lab_failure)?;
    outln!(
        "{}: {} of {} runs finished; wrote {}",
        meta.name,
        rows.len(),
        meta.run_ids.len(),
        dir.join("runs.csv").display()
    )?;
    Ok(())
}

fn run_one(
    spec: &CampaignSpec,
    plan: &Plan,
    out: &Path,
    opts: &ExecOptions,
) -> Result<(), Failure> {
    // SIGINT and SIGTERM stop the campaign between runs instead of killing it: the runs
    // in flight are abandoned, runs.csv is written for the finished ones and the lock
    // released, so the same command resumes.
    satquic_net::tun::stop_on_termination_signals();
    let opts = ExecOptions {
        stop: Some(satquic_net::tun::termination_requested),
        ..opts.clone()
    };
    let bar = Bar::new(&spec.name);
    let outcome = exec::run_campaign(spec, plan, out, &opts, &|p| bar.update(p));
    bar.finish();
    let o = outcome.map_err(|e| match e {
        LabError::Stopped { .. } => Failure::Other(format!(
            "{}: {e}; run the same command again to resume (finished runs are kept)",
            spec.name
        )),
        e => lab_failure(e),
    })?;
    if let Some(first) = o.rerun.first() {
        eprintln!(
            "satquic: ran {} runs again whose row.json could not be read ({first}{})",
            o.rerun.len(),
            if o.rerun.len() > 1 { ", ..." } else { "" }
        );
    }
    // A closed stdout does not hide that every run failed.
    let printed = outln!(
        "{}: {} runs planned, {} in this invocation: {} run now ({} failed or timed out), {} finished before; {} rows in {} ({:.1} s)",
        spec.name,
        o.planned,
        o.selected,
        o.ran,
        o.failed,
        o.skipped,
        o.rows,
        out.join("runs.csv").display(),
        o.wall.as_secs_f64()
    );
    if o.ran > 0 && o.failed == o.ran {
        return Err(Failure::Other(format!(
            "all {} runs of this invocation failed or timed out (reasons in {})",
            o.ran,
            out.join("runs.csv").display()
        )));
    }
    printed
}
