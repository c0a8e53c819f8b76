//! `satquic report`: the HTML report of campaign directories (logic in satquic-lab).

use std::path::{Path, PathBuf};

use crate::Failure;
use crate::cmd_campaign::lab_failure;

#[derive(clap::Args)]
pub struct Args {
    /// Campaign directories (written by `satquic campaign run`); several are reported
    /// together.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Where to write index.html, summary.md and figures/ (default: DIR/report of the
    /// first directory).
    #[arg(long, short)]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    for d in &args.dirs {
        if !d.join("campaign.json").exists() {
            return Err(Failure::Usage(format!(
                "{}: not a campaign directory (no campaign.json); run `satquic campaign run SPEC --out {}` first",
                d.display(),
                d.display()
            )));
        }
    }
    let out = args.out.unwrap_or_else(|| args.dirs[0].join("report"));
    write_and_print(&args.dirs, &out)
}

/// Writes the report of `dirs` into `out` and prints where its index is.
fn write_and_print(dirs: &[PathBuf], out: &Path) -> Result<(), Failure> {
    let index = satquic_lab::report::write_report(dirs, out, None).map_err(lab_failure)?;
    outln!("report: {}", index.display())?;
    Ok(())
}

/// The report of one campaign directory, into `DIR/report` (`--report` of the commands
/// that run campaigns).
pub fn report_campaign(dir: &Path) -> Result<(), Failure> {
    write_and_print(
        std::slice::from_ref(&dir.to_path_buf()),
        &dir.join("report"),
    )
}
