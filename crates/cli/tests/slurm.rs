//! `satquic campaign slurm` on a real Slurm cluster: scripts/slurm-local.sh starts a
//! single-node one on this machine (installing Slurm and munge if missing, so this test
//! runs as root), the job array runs a small campaign in 3 shards, one shard is
//! cancelled mid-way with `scancel` and the array submitted again. The merged runs.csv
//! must equal a single-machine `campaign run` of the same spec byte for byte (runs.csv
//! holds no wall-clock column: each run's wall-clock time is in its timing.json), and
//! the runs finished before the resubmission must not run again. The cancelled shard's
//! lock is made to look as if it came from another node, so the resubmitted shard must
//! find through Slurm that its holder has ended.
//!
//! Where Slurm cannot be started, the test fails with the script's reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/slurm-local.sh");

/// 12 runs of about half a second each (debug build), so a shard of 4 runs is still
/// running when the test cancels it.
const SPEC: &str = r#"
name = "slurm-test"
repetitions = 6
seed = 7
[[link]]
preset = "qir-sat"
[[variant]]
cc = "cubic"
[[variant]]
cc = "cubic+search"
[[workload]]
kind = "download"
bytes = "20MB"
"#;
const SHARDS: usize = 3;
const RUNS: usize = 12;
/// The shard that is cancelled.
const CANCELLED: usize = 1;
const JOB_WAIT: Duration = Duration::from_secs(150);

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn ok(program: &str, args: &[&str]) -> String {
    let o = run(program, args);
    assert!(
        o.status.success(),
        "{program} {args:?} failed ({}): {}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh directory, removed when the test passes (kept for a look when it fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("satquic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The job's tasks still queued or running (`squeue` lists none once all have ended).
fn tasks_left(job: &str) -> usize {
    let o = run("squeue", &["-h", "-j", job, "-o", "%i %T"]);
    String::from_utf8_lossy(&o.stdout).lines().count()
}

fn wait_for_job(job: &str, out: &Path) {
    let deadline = Instant::now() + JOB_WAIT;
    while tasks_left(job) > 0 {
        assert!(
            Instant::now() < deadline,
            "job {job} not done after {JOB_WAIT:?}: {}; task logs: {}",
            ok("squeue", &["-j", job]),
            logs(out)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every task's output, for failure messages.
fn logs(out: &Path) -> String {
    let mut text = String::new();
    for e in std::fs::read_dir(out.join("slurm"))
        .into_iter()
        .flatten()
        .flatten()
    {
        text.push_str(&format!(
            "\n== {}\n{}",
            e.file_name().to_string_lossy(),
            std::fs::read_to_string(e.path()).unwrap_or_default()
        ));
    }
    text
}

/// The finished runs (their row.json) and each one's timing.json, which holds the
/// wall-clock time of that execution: equal before and after means not run again.
fn finished(out: &Path) -> BTreeMap<String, String> {
    let mut runs = BTreeMap::new();
    for e in std::fs::read_dir(out.join("runs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.path().join("row.json").exists() {
            let timing = std::fs::read_to_string(e.path().join("timing.json")).unwrap();
            runs.insert(name, timing);
        }
    }
    runs
}

/// The run ids of shard `index`.
fn shard_runs(spec: &str, index: usize) -> Vec<String> {
    let csv = ok(
        BIN,
        &[
            "campaign",
            "plan",
            spec,
            "--csv",
            "--index",
            &index.to_string(),
            "--of",
            &SHARDS.to_string(),
        ],
    );
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().to_string())
        .collect()
}

#[test]
fn a_campaign_runs_as_a_slurm_job_array_and_a_cancelled_shard_is_resubmitted() {
    let started = Instant::now();
    let o = run("bash", &[SCRIPT, "start"]);
    assert!(
        o.status.success(),
        "cannot start the local Slurm cluster ({SCRIPT} start, {}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr).trim()
    );
    let setup = started.elapsed();
    // Starting a running cluster changes nothing.
    let o = run("bash", &[SCRIPT, "start"]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("idle"),
        "a second start: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    let dir = TempDir::new("slurm");
    let spec = dir.0.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let spec = spec.to_str().unwrap();
    let local = dir.0.join("local");
    let out = dir.0.join("cluster");
    let out_s = out.to_str().unwrap();

    // Bad input: one line, exit code 2, nothing written.
    let bad = run(
        BIN,
        &["campaign", "slurm", spec, "--shards", "13", "--out", out_s],
    );
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).trim().lines().count(),
        1
    );
    assert!(!out.exists(), "nothing is written for a refused job");

    let submitted = ok(
        BIN,
        &[
            "campaign",
            "slurm",
            spec,
            "--shards",
            &SHARDS.to_string(),
            "--out",
            out_s,
            "--submit",
        ],
    );
    let job = submitted
        .lines()
        .find_map(|l| l.strip_prefix("submitted job array "))
        .unwrap_or_else(|| panic!("no job id in: {submitted}"))
        .trim()
        .to_string();

    // Cancel one shard once it has stored some of its runs but not all.
    let mine = shard_runs(spec, CANCELLED);
    let deadline = Instant::now() + JOB_WAIT;
    loop {
        let done = mine
            .iter()
            .filter(|id| out.join("runs").join(id).join("row.json").exists())
            .count();
        if done >= 1 {
            assert!(
                done < mine.len(),
                "shard {CANCELLED} finished all {done} runs before it could be cancelled"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "shard {CANCELLED} stored no run within {JOB_WAIT:?}: {}",
            logs(&out)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    ok("scancel", &[&format!("{job}_{CANCELLED}")]);
    wait_for_job(&job, &out);

    // The single-machine reference.
    ok(
        BIN,
        &[
            "campaign",
            "run",
            spec,
            "--out",
            local.to_str().unwrap(),
            "--jobs",
            "1",
        ],
    );
    let reference = std::fs::read_to_string(local.join("runs.csv")).unwrap();
    assert_eq!(reference.lines().count(), RUNS + 1, "{reference}");

    let collected = ok(BIN, &["campaign", "collect", out_s]);
    let before = finished(&out);
    let missing: Vec<_> = mine.iter().filter(|id| !before.contains_key(*id)).collect();
    assert!(
        !missing.is_empty() && before.len() == RUNS - missing.len(),
        "after scancel: {} of {RUNS} runs, {} of shard {CANCELLED} missing ({collected})",
        before.len(),
        missing.len()
    );
    let partial_csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(partial_csv.lines().count(), before.len() + 1);

    // The cancelled shard's lock, as if it had run on another node of the cluster: its
    // process cannot be checked from here, its Slurm task can.
    std::fs::write(
        out.join(format!(".lock-shard-{CANCELLED}-of-{SHARDS}")),
        format!("1 another-node slurm-job={job}_{CANCELLED}\n"),
    )
    .unwrap();

    // Submitting the same script again runs what is missing, and only that.
    let again = ok("sbatch", &["--parsable", &format!("{out_s}/slurm.sh")]);
    let again = again.trim().split(';').next().unwrap().to_string();
    wait_for_job(&again, &out);
    ok(BIN, &["campaign", "collect", out_s]);
    let after = finished(&out);
    assert_eq!(after.len(), RUNS, "{}", logs(&out));
    for (id, timing) in &before {
        assert_eq!(&after[id], timing, "{id} ran again after resubmission");
    }
    let merged = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(
        merged, reference,
        "merged runs.csv differs from the single-machine run"
    );
    let mut ids: Vec<&str> = merged
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), RUNS, "a run id twice in runs.csv");
    // Nothing half-written or locked is left behind.
    let leftovers: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .chain(std::fs::read_dir(out.join("runs")).unwrap())
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".lock") || n.starts_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Each run's files, not only its row, equal the local run's (timing.json aside).
    for id in after.keys() {
        for file in [
            "summary.json",
            "chunks.csv",
            "received_chunks.csv",
            "series.csv",
            "events.jsonl",
        ] {
            assert_eq!(
                std::fs::read(out.join("runs").join(id).join(file)).unwrap(),
                std::fs::read(local.join("runs").join(id).join(file)).unwrap(),
                "{id}/{file}"
            );
        }
    }
    eprintln!(
        "slurm test: cluster up in {:.1} s, whole test {:.1} s",
        setup.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// Without Slurm: the script `campaign slurm` writes, and its one-line refusals.
#[test]
fn campaign_slurm_writes_the_job_script_and_refuses_bad_input() {
    let dir = TempDir::new("slurm-script");
    let spec = dir.0.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let spec = spec.to_str().unwrap();
    let out = dir.0.join("out");
    let out_s = out.to_str().unwrap();
    let printed = ok(
        BIN,
        &[
            "campaign",
            "slurm",
            spec,
            "--shards",
            "4",
            "--out",
            out_s,
            "--partition",
            "batch",
            "--time",
            "30",
            "--cpus-per-task",
            "2",
            "--max-running",
            "2",
            "--sbatch-option=--mem=1G",
        ],
    );
    assert!(
        printed.contains("12 runs in 4 shards") && printed.contains("sbatch "),
        "{printed}"
    );
    let script = std::fs::read_to_string(out.join("slurm.sh")).unwrap();
    for line in [
        "#SBATCH --array=0-3%2",
        "#SBATCH --partition=batch",
        "#SBATCH --time=30",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem=1G",
    ] {
        assert!(script.lines().any(|l| l == line), "{line}:\n{script}");
    }
    assert!(
        script.contains(&format!("--of 4 --out '{out_s}'")) && script.contains(BIN),
        "{script}"
    );
    // The directory is the campaign's before any shard runs: collect works on it.
    let collected = ok(BIN, &["campaign", "collect", out_s]);
    assert!(collected.contains("0 of 12 runs"), "{collected}");

    let usage = |args: &[&str], expected: &str| {
        let o = run(BIN, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(expected) && err.trim().lines().count() == 1,
            "{args:?}: {err}"
        );
    };
    let base = ["campaign", "slurm", spec, "--out", out_s];
    usage(&[&base[..], &["--shards", "0"]].concat(), "--shards");
    usage(
        &[&base[..], &["--shards", "2", "--time", "1 h"]].concat(),
        "--time",
    );
    usage(
        &[&base[..], &["--shards", "2", "--partition", "a b"]].concat(),
        "--partition",
    );
    usage(
        &[
            &base[..],
            &["--shards", "2", "--satquic", "/no/such/satquic"],
        ]
        .concat(),
        "--satquic",
    );
    usage(&["campaign", "slurm", spec, "--out", out_s], "--shards");
    let other = dir.0.join("other.toml");
    std::fs::write(&other, SPEC.replace("slurm-test", "another")).unwrap();
    usage(
        &[
            "campaign",
            "slurm",
            other.to_str().unwrap(),
            "--shards",
            "2",
            "--out",
            out_s,
        ],
        "holds campaign",
    );
}
