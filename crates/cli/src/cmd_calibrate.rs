//! `satquic calibrate`: the seeds' claims about their real GEO link, evaluated with
//! candidate links in its place (logic in satquic-lab's `calibrate`).

use std::path::PathBuf;

use satquic_lab::calibrate;

use crate::Failure;
use crate::cmd_campaign::{exec_options, stop_on_signals, stopped};
use crate::cmd_reproduce::CampaignsProgress;

#[derive(clap::Args)]
pub struct Args {
    /// A candidate link: a preset with parameters, e.g.
    /// `geo-viasat-bod:lag-jitter=1s,phase=random,cross=60M:2s:4s:exp:random`, or a link
    /// file (`FILE.toml`, e.g. from `satquic presets --toml geo-viasat-bod`); repeat to
    /// rank several.
    #[arg(long = "link", required = true)]
    links: Vec<String>,
    /// Repetitions per variant of both campaigns (default: reproduce --quick's, 12 for a
    /// and 8 for b).
    #[arg(long)]
    repetitions: Option<u32>,
    /// Output directory: one `candidate-NN` directory per link, in the order given, and
    /// `calibration.md`. Finished runs already there are kept (resume).
    #[arg(long, short, default_value = "satquic-calibrate")]
    out: PathBuf,
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long, short)]
    jobs: Option<usize>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    // SIGINT and SIGTERM stop between runs, as in `campaign run`.
    let opts = stop_on_signals(exec_options(args.jobs)?);
    let progress = CampaignsProgress::new("satquic calibrate");
    let current = std::sync::Mutex::new(String::new());
    let outcome = calibrate::calibrate(&args.links, args.repetitions, &args.out, &opts, &|n, p| {
        *current.lock().unwrap_or_else(|e| e.into_inner()) = n.to_string();
        progress.update(n, p)
    });
    let finished = progress.finish();
    let results = outcome.map_err(|e| {
        stopped(
            e,
            &current.into_inner().unwrap_or_else(|e| e.into_inner()),
            None,
        )
    })?;
    let text = calibrate::markdown(&results);
    let path = args.out.join("calibration.md");
    std::fs::write(&path, &text)
        .map_err(|e| Failure::Other(format!("cannot write {}: {e}", path.display())))?;
    outln!("{text}")?;
    outln!("written: {}", path.display())?;
    finished
}
