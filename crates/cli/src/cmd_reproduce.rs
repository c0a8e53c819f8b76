//! `satquic reproduce`: the built-in campaigns and the report that puts our numbers next
//! to the seeds' (logic in satquic-lab).

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use satquic_lab::exec::Progress;
use satquic_lab::reproduce::{self, Scale};

use crate::Failure;
use crate::cmd_campaign::{Bar, exec_options, stop_on_signals, stopped};

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
    /// a, b, c, d, e, f).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

/// Without a terminal (CI, batch logs) progress is a line on stderr this often, and when a
/// campaign starts.
pub const PROGRESS_LOG_EVERY: Duration = Duration::from_secs(10);

/// Progress as lines on stderr, for logs: a bar would be invisible there.
struct ProgressLog {
    /// The command, as the lines name it (`satquic reproduce`).
    command: &'static str,
    started: Instant,
    /// The campaign of the last line and when it was printed.
    last: Option<(String, Instant)>,
}

impl ProgressLog {
    fn update(&mut self, name: &str, p: &Progress) {
        let due = match &self.last {
            Some((n, at)) => n != name || at.elapsed() >= PROGRESS_LOG_EVERY,
            None => true,
        };
        if !due {
            return;
        }
        self.last = Some((name.to_string(), Instant::now()));
        let failed = if p.failed > 0 {
            format!(", {} failed", p.failed)
        } else {
            String::new()
        };
        // Not eprintln!: a closed stderr must not end the work.
        let _ = writeln!(
            std::io::stderr(),
            "{}: {name}: {}/{} runs{failed}, {:.0} s elapsed",
            self.command,
            p.done,
            p.total,
            self.started.elapsed().as_secs_f64()
        );
    }
}

/// The progress of several campaigns run one after the other: a bar per campaign on a
/// terminal, lines on stderr otherwise; remembers which had failed runs.
pub struct CampaignsProgress {
    bars: Mutex<Vec<(String, Bar)>>,
    log: Option<Mutex<ProgressLog>>,
    failed: Mutex<BTreeMap<String, usize>>,
}

impl CampaignsProgress {
    pub fn new(command: &'static str) -> Self {
        CampaignsProgress {
            bars: Mutex::new(Vec::new()),
            log: (!std::io::stderr().is_terminal()).then(|| {
                Mutex::new(ProgressLog {
                    command,
                    started: Instant::now(),
                    last: None,
                })
            }),
            failed: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn update(&self, name: &str, p: &Progress) {
        if p.failed > 0 {
            self.failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(name.to_string(), p.failed);
        }
        if let Some(log) = &self.log {
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .update(name, p);
            return;
        }
        let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
        if bars.last().is_none_or(|(n, _)| n != name) {
            if let Some((_, b)) = bars.last() {
                b.finish();
            }
            bars.push((name.to_string(), Bar::new(name)));
        }
        if let Some((_, b)) = bars.last() {
            b.update(p);
        }
    }

    /// Ends the last bar; an error naming the campaigns with failed runs, if any (the
    /// results are incomplete: say so after printing them).
    pub fn finish(self) -> Result<(), Failure> {
        if let Some((_, b)) = self.bars.lock().unwrap_or_else(|e| e.into_inner()).last() {
            b.finish();
        }
        let failed = self.failed.into_inner().unwrap_or_else(|e| e.into_inner());
        if failed.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = failed.iter().map(|(n, f)| format!("{n} {f}")).collect();
        Err(Failure::Other(format!(
            "failed runs ({}): the results above are incomplete",
            list.join(", ")
        )))
    }
}

pub fn run(args: Args) -> Result<(), Failure> {
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    // SIGINT and SIGTERM stop between runs, as in `campaign run`.
    let opts = stop_on_signals(exec_options(args.jobs)?);
    let progress = CampaignsProgress::new("satquic reproduce");
    let current = std::sync::Mutex::new(String::new());
    let outcome = reproduce::reproduce(scale, &args.out, &opts, &args.only, &|name, p| {
        *current.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
        progress.update(name, p)
    });
    // Bars end before the table; failed runs are reported after it.
    let finished = progress.finish();
    let o = outcome.map_err(|e| {
        let name = current.into_inner().unwrap_or_else(|e| e.into_inner());
        stopped(e, &name, Some(&args.out.join(&name)))
    })?;
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
    finished
}
