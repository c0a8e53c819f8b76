//! `satquic reproduce`: the built-in campaigns and the report that puts our numbers next
//! to the seeds' (logic in satquic-lab).

use std::path::PathBuf;
use std::sync::Mutex;

use satquic_lab::exec::ExecOptions;
use satquic_lab::reproduce::{self, Scale};

use crate::Failure;
use crate::cmd_campaign::{Bar, lab_failure};

#[derive(clap::Args)]
pub struct Args {
    /// Scaled-down campaigns that finish in minutes (the default).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The seeds' repetition counts, including the seed-000-size campaign (2038 runs).
    #[arg(long)]
    full: bool,
    /// Output directory: one campaign directory per built-in campaign and report/.
    /// Finished runs already there are kept (resume).
    #[arg(long, short, default_value = "satquic-reproduce")]
    out: PathBuf,
    /// Runs in parallel (default: the number of CPUs).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Only the campaigns whose names start with these prefixes (comma-separated:
    /// a, b, c, d, e).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    let mut opts = ExecOptions::default();
    if let Some(j) = args.jobs {
        if j == 0 {
            return Err(Failure::Usage("--jobs must be at least 1".into()));
        }
        opts.jobs = j;
    }
    let bars: Mutex<Vec<(String, Bar)>> = Mutex::new(Vec::new());
    let outcome = reproduce::reproduce(scale, &args.out, &opts, &args.only, &|name, p| {
        let mut bars = bars.lock().unwrap_or_else(|e| e.into_inner());
        if bars.last().is_none_or(|(n, _)| n != name) {
            if let Some((_, b)) = bars.last() {
                b.finish();
            }
            bars.push((name.to_string(), Bar::new(name)));
        }
        if let Some((_, b)) = bars.last() {
            b.update(p);
        }
    });
    if let Some((_, b)) = bars.lock().unwrap_or_else(|e| e.into_inner()).last() {
        b.finish();
    }
    let o = outcome.map_err(lab_failure)?;
    for (name, secs, ran) in &o.per_campaign {
        outln!("{name}: {ran} runs executed in {secs:.1} s")?;
    }
    outln!()?;
    outln!("| source | what | seed's number | ours | verdict |")?;
    outln!("|---|---|---|---|---|")?;
    for r in &o.comparison {
        outln!(
            "| {} | {} | {} | {} | {} |",
            r.source,
            r.what,
            r.seed,
            r.ours,
            r.verdict
        )?;
    }
    outln!()?;
    outln!(
        "{} runs in {:.1} s; report: {}",
        o.runs,
        o.wall.as_secs_f64(),
        o.index_html.display()
    )?;
    Ok(())
}
