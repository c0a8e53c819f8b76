//! `satquic beside`: the controllers beside other traffic, pairs and a busy beam, and
//! their report (logic in satquic-lab's `beside`).

use std::path::PathBuf;

use satquic_lab::beside::{self, Selection};
use satquic_lab::reproduce::Scale;

use crate::Failure;
use crate::cmd_campaign::{exec_options, lab_failure, stop_on_signals, stopped};
use crate::cmd_reproduce::CampaignsProgress;

#[derive(clap::Args)]
pub struct Args {
    /// One seed and shorter flows (20 s pairs, a 30 s beam): minutes instead of an hour
    /// (the default).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The benchmark: 60 s pairs, a 60 s beam, three seeds.
    #[arg(long)]
    full: bool,
    /// Output directory: specs/ (the spec and link files run), one campaign directory
    /// per campaign and report/. Finished runs already there are kept (resume).
    #[arg(long, short, default_value = "satquic-beside")]
    out: PathBuf,
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Only these campaigns (comma-separated: pairs, beam).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Only these paths (comma-separated labels: thesis-sat, qir-sat, sat-250-3-mirror,
    /// geo-viasat, grid-p02-1bdp, grid-p10-0.5bdp, leo, starlink-busy, lte; the beam's geo-viasat,
    /// beam-120m-1bdp).
    #[arg(long, value_delimiter = ',')]
    links: Vec<String>,
    /// Only these controllers (comma-separated: satellite, cubic, bbr3, newreno, bbr): a
    /// pair runs when both its flows' are listed, a beam variant when its bulk flows' is.
    #[arg(long = "cc", value_delimiter = ',')]
    ccs: Vec<String>,
    /// Seeds per cell instead of the campaign's (1 with --quick, 3 with --full).
    #[arg(long)]
    seeds: Option<u32>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    let opts = exec_options(args.jobs)?;
    let specs = args.out.join("specs");
    let selection = Selection {
        only: args.only,
        links: args.links,
        ccs: args.ccs,
        seeds: args.seeds,
    };
    let campaigns =
        beside::select(beside::builtins(scale, &specs), &selection).map_err(lab_failure)?;
    satquic_lab::output_dir(&args.out).map_err(lab_failure)?;
    beside::write_specs(&specs).map_err(lab_failure)?;
    // SIGINT and SIGTERM stop between runs, as `campaign run` does (before, a signal killed
    // it with no word and no runs.csv).
    let opts = stop_on_signals(opts);
    let progress = CampaignsProgress::new("satquic beside");
    let current = std::sync::Mutex::new(String::new());
    let outcome = beside::beside(&campaigns, &args.out, &opts, &|name, p| {
        *current.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
        progress.update(name, p)
    });
    let finished = progress.finish();
    let o = outcome.map_err(|e| {
        let name = current.into_inner().unwrap_or_else(|e| e.into_inner());
        stopped(e, &name, Some(&args.out.join(&name)))
    })?;
    for c in &o.campaigns {
        outln!(
            "{}: {} runs ({} now) in {:.1} s of wall time; the runs' own times add up to {:.1} s",
            c.name,
            c.rows,
            c.ran,
            c.wall_s,
            c.run_wall_s
        )?;
    }
    outln!(
        "report: {} (tables as Markdown: {})",
        o.index_html.display(),
        o.index_html.with_file_name("summary.md").display()
    )?;
    finished
}
