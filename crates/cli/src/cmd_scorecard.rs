//! `satquic scorecard`: every regime a satellite controller must serve, judged in one
//! command (logic in satquic-lab's `scorecard`).

use std::path::PathBuf;

use satquic_lab::scorecard::{self, SetKind};

use crate::Failure;
use crate::cmd_campaign::{exec_options, lab_failure, stop_on_signals};
use crate::cmd_reproduce::CampaignsProgress;

#[derive(clap::Args)]
pub struct Args {
    /// A controller spec to judge (repeatable; the first is the one the others are
    /// compared with). Default: satellite.
    #[arg(long = "cc")]
    ccs: Vec<String>,
    /// Only these regimes (comma-separated: geo-lossless, geo-loss, startup, resumption,
    /// beside, leo).
    #[arg(long, value_delimiter = ',')]
    regime: Vec<String>,
    /// The smoke set: one scenario per regime, about two minutes.
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// Every scenario of every regime (the benchmark); resumes finished runs.
    #[arg(long)]
    full: bool,
    /// Output directory: scorecard.json, wall.json, scorecard.html and runs/ (the
    /// campaigns, keyed by the binary's SHA-256, so finished runs are reused, never stale).
    #[arg(long, short, default_value = "satquic-scorecard")]
    out: PathBuf,
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// A saved scorecard.json to compare with, on the scenarios both hold.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Run the set at this seed: every scenario's seeds shifted by N - 1 (1: the set as
    /// committed); the same set at seeds 1, 2, 3 gives the spread across seeds.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A scenario set file instead of the committed ones (tests).
    #[arg(long, hide = true)]
    set: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let kind = if args.quick {
        SetKind::Quick
    } else if args.full {
        SetKind::Full
    } else {
        SetKind::Default
    };
    let opts = exec_options(args.jobs)?;
    let specs = if args.ccs.is_empty() {
        vec!["satellite".to_string()]
    } else {
        args.ccs.clone()
    };
    if let Some((i, twice)) = specs
        .iter()
        .enumerate()
        .find(|(i, s)| specs[..*i].contains(s))
    {
        return Err(Failure::Usage(format!(
            "--cc {twice} is given twice (the {} --cc); each spec is judged once",
            ordinal(i + 1)
        )));
    }
    let regimes = scorecard::regimes(&args.regime).map_err(lab_failure)?;
    let scenarios = match &args.set {
        Some(p) => scorecard::read_set(p),
        None => scorecard::parse_set(kind.text()),
    }
    .map_err(lab_failure)?;
    let scenarios = scorecard::at_seed(scenarios, args.seed).map_err(lab_failure)?;
    let baseline = match &args.baseline {
        Some(p) => Some(scorecard::read_card(p).map_err(lab_failure)?),
        None => None,
    };
    let exe = std::env::current_exe()
        .and_then(std::fs::read)
        .map_err(|e| Failure::Other(format!("cannot read the satquic binary: {e}")))?;
    let sha = satquic_net::tls::sha256_hex(&exe);
    // The specs are checked (the campaigns planned) with the link files in a scratch
    // directory before --out is touched.
    let scratch = std::env::temp_dir().join(format!("satquic-scorecard-{}", std::process::id()));
    let checked = scorecard::jobs(&scenarios, &specs, &regimes, &scratch.join("links"));
    let _ = std::fs::remove_dir_all(&scratch);
    checked.map_err(lab_failure)?;
    satquic_lab::output_dir(&args.out).map_err(|e| match e {
        satquic_lab::LabError::Io(m) => Failure::Usage(m),
        e => lab_failure(e),
    })?;
    let probe = args.out.join(".scorecard-probe");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| Failure::Usage(format!("--out {}: cannot write: {e}", args.out.display())))?;
    // The campaigns name their link files by path from their own directory: give them an
    // absolute one, whatever --out was relative to.
    let out = std::fs::canonicalize(&args.out)
        .map_err(|e| Failure::Usage(format!("--out {}: {e}", args.out.display())))?;
    // Each seed's runs apart, so a run at another seed never resumes from this one's.
    let runs_dir = match args.seed {
        1 => out.join("runs").join(&sha[..16]),
        n => out.join("runs").join(format!("{}-seed{n}", &sha[..16])),
    };
    let jobs = scorecard::jobs(&scenarios, &specs, &regimes, &runs_dir.join("links"))
        .map_err(lab_failure)?;
    // SIGINT and SIGTERM stop between runs, as in `campaign run` (a signal killed it with
    // no word before).
    let opts = stop_on_signals(opts);
    let progress = CampaignsProgress::new("satquic scorecard");
    let outcome = scorecard::run(
        &jobs,
        &scorecard::Request {
            set: kind,
            seed: args.seed,
            specs: &specs,
            regimes: &regimes,
            runs_dir: &runs_dir,
            binary_sha256: &sha,
        },
        &opts,
        &|name, p| progress.update(name, p),
    );
    let finished = progress.finish();
    let (card, walls) = outcome.map_err(|e| match e {
        satquic_lab::LabError::Stopped { .. } => Failure::Other(format!(
            "scorecard stopped: {} finished runs kept in {} (the runs in flight abandoned); \
             scorecard.json is written once every regime is done: run the same command \
             again to resume",
            finished_runs(&runs_dir),
            runs_dir.display()
        )),
        e => lab_failure(e),
    })?;
    let json = serde_json::to_string_pretty(&card)? + "\n";
    scorecard::write_atomic(&args.out, "scorecard.json", json.as_bytes()).map_err(lab_failure)?;
    let wall = serde_json::to_string_pretty(&walls)? + "\n";
    scorecard::write_atomic(&args.out, "wall.json", wall.as_bytes()).map_err(lab_failure)?;
    let html = scorecard::render::html(&card);
    scorecard::write_atomic(&args.out, "scorecard.html", html.as_bytes()).map_err(lab_failure)?;
    out!("{}", scorecard::render::table(&card))?;
    if let Some(b) = &baseline {
        outln!("\nagainst the baseline:")?;
        for line in scorecard::compare(&card, b) {
            outln!("  {line}")?;
        }
    }
    let total: f64 = walls.values().sum();
    outln!(
        "\nwall time {total:.1} s ({}); {} written",
        walls
            .iter()
            .map(|(r, s)| format!("{r} {s:.1} s"))
            .collect::<Vec<_>>()
            .join(", "),
        args.out.join("scorecard.json").display()
    )?;
    finished
}

/// The rows of every scenario's runs.csv under `runs_dir` (`REGIME/SCENARIO/runs.csv`).
fn finished_runs(runs_dir: &std::path::Path) -> usize {
    let dirs = |d: &std::path::Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    dirs(runs_dir)
        .iter()
        .flat_map(|regime| dirs(regime))
        .filter_map(|scenario| satquic_lab::dataset::read_csv(&scenario.join("runs.csv")).ok())
        .map(|rows| rows.len())
        .sum()
}

/// `1st`, `2nd`, `3rd`, `4th`, ...
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
