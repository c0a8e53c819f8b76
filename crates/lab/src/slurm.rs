//! A campaign as a Slurm job array: the sbatch script `satquic campaign slurm` writes.
//!
//! Task `I` of the array runs `satquic campaign shard SPEC --index I --of N --out DIR`,
//! so every shard writes into the one campaign directory (on a file system all nodes
//! share) and `satquic campaign collect DIR` merges them into runs.csv. The files:
//!
//! ```text
//! DIR/slurm.sh               the job script (sbatch DIR/slurm.sh)
//! DIR/slurm/<job>_<task>.out each task's stdout and stderr
//! ```
//!
//! # Failed and cancelled shards
//!
//! A shard that is cancelled (`scancel`), killed at its time limit or lost with its node
//! leaves only complete run directories behind ([`crate::exec`]: a run appears by an
//! atomic rename). Submitting the same script again runs every shard again, and each
//! skips the runs it finished before: only what is missing runs, nothing twice.
//! `sbatch --array=3,7 DIR/slurm.sh` resubmits some tasks only. A shard that still runs
//! keeps its lock (`DIR/.lock-shard-I-of-N`), so the same shard submitted twice runs once:
//! the second task fails at once, naming the lock.

use std::path::{Path, PathBuf};

use crate::LabError;
use crate::plan::Plan;
use crate::spec::CampaignSpec;

/// The job script, in the campaign directory.
pub const SCRIPT: &str = "slurm.sh";
/// The tasks' output files, under the campaign directory.
pub const LOG_DIR: &str = "slurm";

/// What the job array asks of Slurm.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOptions {
    /// Array tasks, one shard each.
    pub shards: usize,
    /// At most this many tasks at once (`--array=0-N%K`); none: as many as fit.
    pub max_running: Option<usize>,
    /// Slurm partition; none: the cluster's default partition.
    pub partition: Option<String>,
    /// Time limit of one task, in Slurm's format (`MM`, `HH:MM:SS`, `D-HH:MM`);
    /// none: the partition's default.
    pub time: Option<String>,
    /// CPUs per task; the shard runs that many simulations in parallel.
    pub cpus_per_task: usize,
    /// More `#SBATCH` options, each as written after `#SBATCH ` (`--mem=4G`).
    pub sbatch_options: Vec<String>,
    /// The satquic binary the tasks run (an absolute path the nodes can reach).
    pub satquic: PathBuf,
    /// Pass `--retry-failed` to the shards: failed and timed-out runs run again.
    pub retry_failed: bool,
}

fn usage(msg: String) -> LabError {
    LabError::Usage(msg)
}

/// A path as one shell word.
fn sh_quote(path: &Path) -> Result<String, LabError> {
    let text = path
        .to_str()
        .ok_or_else(|| usage(format!("{}: not a UTF-8 path", path.display())))?;
    if text.contains(['\n', '\r']) {
        return Err(usage(format!("{text:?}: a path with a line break")));
    }
    Ok(format!("'{}'", text.replace('\'', r"'\''")))
}

/// The option values the script holds, checked so that none can end an `#SBATCH` line
/// or be read as another option.
fn check(opts: &JobOptions, runs: usize, out: &Path) -> Result<(), LabError> {
    if opts.shards == 0 {
        return Err(usage("--shards must be at least 1".into()));
    }
    if opts.shards > runs {
        return Err(usage(format!(
            "--shards {} is more than the {runs} runs of the campaign (a shard without runs would only queue)",
            opts.shards
        )));
    }
    if opts.max_running == Some(0) {
        return Err(usage("--max-running must be at least 1".into()));
    }
    if opts.cpus_per_task == 0 {
        return Err(usage("--cpus-per-task must be at least 1".into()));
    }
    if let Some(p) = &opts.partition
        && (p.is_empty()
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ',')))
    {
        return Err(usage(format!(
            "--partition {p:?}: a partition name is letters, digits and _ - . ,"
        )));
    }
    if let Some(t) = &opts.time {
        let clock = !t.is_empty()
            && t.chars().next().is_some_and(|c| c.is_ascii_digit())
            && t.chars()
                .all(|c| c.is_ascii_digit() || c == ':' || c == '-');
        if !(clock || t == "UNLIMITED" || t == "INFINITE") {
            return Err(usage(format!(
                "--time {t:?}: give minutes or Slurm's MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS (or UNLIMITED)"
            )));
        }
    }
    for o in &opts.sbatch_options {
        if !o.starts_with("--") || o.contains(['\n', '\r']) || o.trim() != o {
            return Err(usage(format!(
                "--sbatch-option {o:?}: one sbatch long option, e.g. --mem=4G"
            )));
        }
    }
    let text = out.to_string_lossy();
    if text.contains(|c: char| c.is_whitespace() || c == '%') {
        return Err(usage(format!(
            "{text}: an #SBATCH --output path cannot hold spaces or '%'; choose another --out"
        )));
    }
    Ok(())
}

/// The job script for campaign `name` with spec file `spec` and directory `out` (both
/// absolute, as the nodes will see them).
pub fn job_script(
    name: &str,
    spec: &Path,
    out: &Path,
    runs: usize,
    opts: &JobOptions,
) -> Result<String, LabError> {
    check(opts, runs, out)?;
    let n = opts.shards;
    let job_name: String = crate::plan::sanitize(&format!("satquic-{name}"));
    let mut s = String::new();
    s.push_str("#!/bin/sh\n");
    s.push_str(&format!(
        "# Campaign {name:?} ({runs} runs) in {n} shards, one Slurm array task each.\n"
    ));
    s.push_str("# Written by `satquic campaign slurm`. Submit it again to run what is missing\n");
    s.push_str("# (finished runs are skipped); some tasks only: sbatch --array=3,7 this-file.\n");
    s.push_str("# Then: satquic campaign collect DIR (merges the shards into DIR/runs.csv).\n");
    s.push_str(&format!("#SBATCH --job-name={job_name}\n"));
    match opts.max_running {
        Some(k) => s.push_str(&format!("#SBATCH --array=0-{}%{k}\n", n - 1)),
        None => s.push_str(&format!("#SBATCH --array=0-{}\n", n - 1)),
    }
    s.push_str(&format!("#SBATCH --cpus-per-task={}\n", opts.cpus_per_task));
    if let Some(p) = &opts.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(t) = &opts.time {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    s.push_str(&format!(
        "#SBATCH --output={}/{LOG_DIR}/%A_%a.out\n",
        out.display()
    ));
    for o in &opts.sbatch_options {
        s.push_str(&format!("#SBATCH {o}\n"));
    }
    s.push_str("set -eu\n");
    s.push_str(&format!(
        "exec {} campaign shard {} --index \"$SLURM_ARRAY_TASK_ID\" --of {n} --out {} --jobs \"${{SLURM_CPUS_PER_TASK:-1}}\"{}\n",
        sh_quote(&opts.satquic)?,
        sh_quote(spec)?,
        sh_quote(out)?,
        if opts.retry_failed {
            " --retry-failed"
        } else {
            ""
        }
    ));
    Ok(s)
}

/// Prepares `out` for the shards ([`crate::exec::adopt_dir`]) and writes the job script
/// there; returns its path. `spec_file` is the file `spec` was read from.
pub fn write_job(
    spec: &CampaignSpec,
    plan: &Plan,
    spec_file: &Path,
    out: &Path,
    opts: &JobOptions,
) -> Result<PathBuf, LabError> {
    // Checked before anything is written, with the absolute path the script will hold.
    let absolute =
        std::path::absolute(out).map_err(|e| LabError::Usage(format!("{}: {e}", out.display())))?;
    job_script(&spec.name, spec_file, &absolute, plan.runs.len(), opts)?;
    crate::exec::adopt_dir(spec, plan, out)?;
    let io = |p: &Path, e: std::io::Error| LabError::Io(format!("{}: {e}", p.display()));
    let out = out.canonicalize().map_err(|e| io(out, e))?;
    let spec_file = spec_file.canonicalize().map_err(|e| io(spec_file, e))?;
    let text = job_script(&spec.name, &spec_file, &out, plan.runs.len(), opts)?;
    let logs = out.join(LOG_DIR);
    std::fs::create_dir_all(&logs).map_err(|e| io(&logs, e))?;
    crate::exec::write_atomic_unique(&out, SCRIPT, text.as_bytes()).map_err(|e| io(&out, e))?;
    let script = out.join(SCRIPT);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io(&script, e))?;
    }
    Ok(script)
}

/// Submits a job script with `sbatch`; returns the job id.
pub fn submit(script: &Path, extra_args: &[&str]) -> Result<String, LabError> {
    let output = std::process::Command::new("sbatch")
        .arg("--parsable")
        .args(extra_args)
        .arg(script)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| LabError::Io(format!("cannot run sbatch: {e} (is Slurm installed here?)")))?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(LabError::Io(format!(
            "sbatch {} failed ({}): {}",
            script.display(),
            output.status,
            err.trim().replace('\n', "; ")
        )));
    }
    // --parsable prints "jobid" or "jobid;cluster".
    let text = String::from_utf8_lossy(&output.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(LabError::Io(format!(
            "sbatch printed no job id: {:?}",
            text.trim()
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> JobOptions {
        JobOptions {
            shards: 4,
            max_running: None,
            partition: None,
            time: None,
            cpus_per_task: 2,
            sbatch_options: Vec::new(),
            satquic: "/opt/satquic/bin/satquic".into(),
            retry_failed: false,
        }
    }

    #[test]
    fn the_script_runs_one_shard_per_array_task_into_the_directory() {
        let mut o = opts();
        o.partition = Some("batch".into());
        o.time = Some("1-00:00:00".into());
        o.max_running = Some(2);
        o.sbatch_options = vec!["--mem=4G".into()];
        let s = job_script(
            "geo search",
            "/shared/it's.toml".as_ref(),
            "/shared/out".as_ref(),
            10,
            &o,
        )
        .unwrap();
        assert!(s.starts_with("#!/bin/sh\n"), "{s}");
        for line in [
            "#SBATCH --job-name=satquic-geo_search",
            "#SBATCH --array=0-3%2",
            "#SBATCH --cpus-per-task=2",
            "#SBATCH --partition=batch",
            "#SBATCH --time=1-00:00:00",
            "#SBATCH --output=/shared/out/slurm/%A_%a.out",
            "#SBATCH --mem=4G",
            "exec '/opt/satquic/bin/satquic' campaign shard '/shared/it'\\''s.toml' --index \"$SLURM_ARRAY_TASK_ID\" --of 4 --out '/shared/out' --jobs \"${SLURM_CPUS_PER_TASK:-1}\"",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing from:\n{s}");
        }
        // sbatch reads #SBATCH lines only before the first command.
        let first_command = s
            .lines()
            .position(|l| !l.starts_with('#') && !l.is_empty())
            .unwrap();
        let lines: Vec<&str> = s.lines().collect();
        let last_sbatch = lines
            .iter()
            .rposition(|l| l.starts_with("#SBATCH"))
            .unwrap();
        assert!(last_sbatch < first_command, "{s}");
    }

    #[test]
    fn bad_options_are_refused_in_one_line() {
        let out: &Path = "/shared/out".as_ref();
        type Change = fn(&mut JobOptions);
        let cases: [(Change, &str); 9] = [
            (|o| o.shards = 0, "--shards"),
            (|o| o.shards = 11, "more than the 10 runs"),
            (|o| o.cpus_per_task = 0, "--cpus-per-task"),
            (|o| o.max_running = Some(0), "--max-running"),
            (
                |o| o.partition = Some("a\n#SBATCH --x".into()),
                "--partition",
            ),
            (|o| o.time = Some("soon".into()), "--time"),
            (|o| o.time = Some("-5".into()), "--time"),
            (
                |o| o.sbatch_options = vec!["mem=4G".into()],
                "--sbatch-option",
            ),
            (
                |o| o.sbatch_options = vec!["--mem=4G\nrm".into()],
                "--sbatch-option",
            ),
        ];
        for (change, expected) in cases {
            let mut o = opts();
            change(&mut o);
            let e = job_script("c", "/s.toml".as_ref(), out, 10, &o)
                .unwrap_err()
                .to_string();
            assert!(e.contains(expected) && !e.contains('\n'), "{e}");
        }
        let e = job_script("c", "/s.toml".as_ref(), "/my out".as_ref(), 10, &opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains("spaces"), "{e}");
        assert!(job_script("c", "/s.toml".as_ref(), out, 10, &opts()).is_ok());
    }
}
