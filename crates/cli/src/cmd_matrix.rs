//! `satquic matrix`: every client x server pair of QUIC implementations through
//! `satquic link` (logic in satquic-lab's `matrix` and satquic-net's `peers`).

use std::path::PathBuf;
use std::time::Duration;

use satquic_lab::matrix::{self, MatrixOptions, MatrixSpec};
use satquic_net::peers::{AdapterFile, PeerEnv};

use crate::Failure;
use crate::cmd_campaign::{Bar, lab_failure};

/// What `--quick` runs unless a flag says otherwise.
const QUICK_PRESETS: [&str; 2] = ["qir-sat", "qir-satloss"];
const QUICK_SIZE: &str = "1MiB";
const QUICK_TIME_CAP: &str = "15s";
/// Kernel TCP rows of `--quick`: enough to leave slow start on qir-sat (BDP 1.5 MB).
const QUICK_TCP_SIZE: &str = "10MiB";

#[derive(clap::Args)]
pub struct Args {
    /// Campaign directory (runs.csv, runs/, report/); a matrix there is resumed.
    #[arg(long, short, required_unless_present = "list")]
    out: Option<PathBuf>,
    /// Implementations, comma-separated (default: every adapter; see --list).
    #[arg(long = "impl", value_delimiter = ',')]
    impls: Vec<String>,
    /// Link presets, comma-separated [default: qir-sat,qir-satloss,qir-terrestrial].
    #[arg(long, value_delimiter = ',')]
    preset: Vec<String>,
    /// Congestion controls asked of both sides, comma-separated: default (each
    /// implementation's own), cubic, bbr, newreno [default: default].
    #[arg(long, value_delimiter = ',')]
    cc: Vec<String>,
    /// Repetitions of each pair (seed 002 made 10) [default: 3].
    #[arg(long)]
    reps: Option<u32>,
    /// Size of the file downloaded (k/M/G decimal, Ki/Mi/Gi binary) [default: 10MiB].
    #[arg(short = 'n', long = "bytes")]
    bytes: Option<String>,
    /// Size each kernel TCP row sends (the [[tcp]] variants; default: -n, --quick 10MiB).
    #[arg(long)]
    tcp_bytes: Option<String>,
    /// Longest one download may take before it counts as a timeout [default: 60s].
    #[arg(long)]
    time_cap: Option<String>,
    /// A sender cap in front of every link, as `satquic link --sender-cap` applies it:
    /// RATE[:LATENCY] (the seeds' 200M:1.5s token bucket at the server), or none.
    #[arg(long, value_name = "RATE[:LATENCY]")]
    sender_cap: Option<String>,
    /// Application protocols in order of preference; a pair uses the first both speak.
    #[arg(long, value_delimiter = ',', default_value = "h3,hq-interop")]
    alpn: Vec<String>,
    /// Seed of the link model's random processes (repetition r uses SEED + r).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Ask both sides for qlogs (runs/<id>/qlog/{server,client}/, where the implementation
    /// writes qlogs: not quiche-peer, Caddy or satquic server; large on long runs).
    #[arg(long)]
    qlog: bool,
    /// Under 10 minutes: 1 MiB (kernel TCP rows 10 MiB), qir-sat and qir-satloss, one
    /// repetition, 15 s cap (explicit flags still win).
    #[arg(long)]
    quick: bool,
    /// Adapter file (default: the built-in peers/adapters.toml).
    #[arg(long)]
    adapters: Option<PathBuf>,
    /// Run only shard INDEX of --of N (a cluster job array's task).
    #[arg(long, requires = "of")]
    index: Option<usize>,
    /// Number of shards.
    #[arg(long, requires = "index")]
    of: Option<usize>,
    /// Run failed and timed-out pairs again.
    #[arg(long)]
    retry_failed: bool,
    /// Run even where the directory holds another campaign.
    #[arg(long)]
    force: bool,
    /// Also write the report (DIR/report/index.html) when done.
    #[arg(long)]
    report: bool,
    /// Campaign name (a directory belongs to one).
    #[arg(long, default_value = "matrix")]
    name: String,
    /// List the implementations, whether each is installed, and exit.
    #[arg(long)]
    list: bool,
}

fn size(text: &str) -> Result<u64, Failure> {
    satquic_link::units::parse_size(text).map_err(|e| Failure::Usage(format!("-n: {e}")))
}

fn duration(text: &str) -> Result<Duration, Failure> {
    satquic_link::units::parse_duration(text)
        .map_err(|e| Failure::Usage(format!("--time-cap: {e}")))
}

pub fn run(args: Args) -> Result<(), Failure> {
    let adapters = match &args.adapters {
        Some(path) => AdapterFile::read(path).map_err(Failure::Usage)?,
        None => AdapterFile::builtin(),
    };
    let satquic = std::env::current_exe()
        .map_err(|e| Failure::Other(format!("cannot find this satquic binary: {e}")))?;
    let env = PeerEnv::new(satquic);
    if args.list {
        return list(&adapters, &env);
    }
    let Some(out) = args.out.clone() else {
        return Err(Failure::Usage("--out DIR is required".into()));
    };
    let spec = matrix_spec(&args, &adapters)?;
    let shard = shard(args.index, args.of)?;
    // Checked before anything is written or reported.
    let planned = matrix::plan(&spec, &adapters).map_err(lab_failure)?;
    for (name, why) in matrix::missing(&spec, &adapters, &env) {
        eprintln!(
            "satquic matrix: {name} not installed ({why}); its pairs are recorded as skipped (scripts/install-peers.sh installs it)"
        );
    }
    let bar = Bar::new("matrix");
    let outcome = matrix::run_matrix(
        &spec,
        &adapters,
        &env,
        &out,
        &MatrixOptions {
            shard,
            retry_failed: args.retry_failed,
            take_over: args.force,
        },
        &|p| bar.update(p),
    );
    bar.finish();
    let outcome = outcome.map_err(lab_failure)?;
    if let Some(first) = outcome.rerun.first() {
        eprintln!(
            "satquic: ran {} runs again whose row.json could not be read ({first}{})",
            outcome.rerun.len(),
            if outcome.rerun.len() > 1 { ", ..." } else { "" }
        );
    }
    let rows = satquic_lab::dataset::read_csv(&out.join("runs.csv")).map_err(Failure::Other)?;
    out!("{}", matrix::text_summary(&rows))?;
    outln!(
        "campaign {}: {} runs planned, {} run now, {} done before; runs.csv: {}",
        spec.name,
        planned.len(),
        outcome.ran,
        outcome.skipped,
        out.join("runs.csv").display()
    )?;
    if args.report {
        crate::cmd_report::report_campaign(&out)?;
    }
    Ok(())
}

/// `--list`: each implementation and kernel TCP variant, its roles and whether it is
/// installed.
fn list(adapters: &AdapterFile, env: &PeerEnv) -> Result<(), Failure> {
    for a in &adapters.impls {
        let state = a.missing(env).map_or_else(
            || "installed".to_string(),
            |why| format!("not installed: {why}"),
        );
        let roles = match (&a.client, &a.server) {
            (Some(_), Some(_)) => "client+server",
            (Some(_), None) => "client",
            _ => "server",
        };
        outln!("{:<18} {:<14} {} ({})", a.name, roles, state, a.description)?;
    }
    for t in &adapters.tcp {
        let state = t.missing().map_or_else(
            || "installed".to_string(),
            |why| format!("not installed: {why}"),
        );
        outln!(
            "{:<18} {:<14} {} ({})",
            t.name,
            "kernel TCP",
            state,
            t.description
        )?;
    }
    Ok(())
}

/// The matrix the flags ask for: what is not given takes the default, or `--quick`'s.
fn matrix_spec(args: &Args, adapters: &AdapterFile) -> Result<MatrixSpec, Failure> {
    // As a campaign spec's `name`: a directory belongs to one, so it cannot be empty (an
    // empty --name ran the whole matrix under no name).
    if args.name.trim().is_empty() {
        return Err(Failure::Usage(format!(
            "--name {:?}: must not be empty",
            args.name
        )));
    }
    let or = |given: &[String], default: &[&str]| -> Vec<String> {
        if given.is_empty() {
            default.iter().map(|s| s.to_string()).collect()
        } else {
            given.to_vec()
        }
    };
    let presets: Vec<&str> = if args.quick {
        QUICK_PRESETS.to_vec()
    } else {
        matrix::DEFAULT_PRESETS.to_vec()
    };
    Ok(MatrixSpec {
        name: args.name.clone(),
        impls: if args.impls.is_empty() {
            adapters.names().iter().map(|s| s.to_string()).collect()
        } else {
            args.impls.clone()
        },
        presets: absolute_link_files(or(&args.preset, &presets)),
        ccs: or(&args.cc, &["default"]),
        repetitions: args.reps.unwrap_or(if args.quick { 1 } else { 3 }),
        seed: args.seed,
        bytes: size(args.bytes.as_deref().unwrap_or(if args.quick {
            QUICK_SIZE
        } else {
            "10MiB"
        }))?,
        time_cap: duration(args.time_cap.as_deref().unwrap_or(if args.quick {
            QUICK_TIME_CAP
        } else {
            "60s"
        }))?,
        alpn: args.alpn.clone(),
        qlog: args.qlog,
        sender_cap: args
            .sender_cap
            .clone()
            .filter(|c| !c.trim().eq_ignore_ascii_case("none")),
        tcp_bytes: match (&args.tcp_bytes, args.quick) {
            (Some(t), _) => Some(size(t)?),
            (None, true) => Some(size(QUICK_TCP_SIZE)?),
            (None, false) => None,
        },
    })
}

/// Each `--preset` that names a link file, made absolute: the relay of a cell runs in the
/// cell's own directory, where a path relative to the caller's would name nothing.
fn absolute_link_files(presets: Vec<String>) -> Vec<String> {
    presets
        .into_iter()
        .map(|p| match std::path::absolute(&p) {
            Ok(abs) if PathBuf::from(&p).is_relative() && abs.is_file() => {
                abs.display().to_string()
            }
            _ => p,
        })
        .collect()
}

/// `--index I --of N`: shard I of N, I below N; none without them.
fn shard(index: Option<usize>, of: Option<usize>) -> Result<Option<(usize, usize)>, Failure> {
    match (index, of) {
        (Some(i), Some(n)) if n == 0 || i >= n => Err(Failure::Usage(format!(
            "--index {i} must be below --of {n}"
        ))),
        (Some(i), Some(n)) => Ok(Some((i, n))),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_link_file_is_made_absolute_and_a_preset_is_kept() {
        // Unit tests run in the crate's directory, which holds Cargo.toml.
        let given = vec!["qir-sat".to_string(), "Cargo.toml".to_string()];
        let out = absolute_link_files(given);
        assert_eq!(out[0], "qir-sat");
        let file = PathBuf::from(&out[1]);
        assert!(file.is_absolute() && file.is_file(), "{}", out[1]);
        assert_eq!(
            absolute_link_files(vec![out[1].clone()]),
            vec![out[1].clone()]
        );
    }
}
