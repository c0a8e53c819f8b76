//! The report: `report/index.html` (self-contained: CSS and every figure inlined as SVG),
//! the figures as `figures/*.svg` and `figures/*.png`, and `summary.md`.
//!
//! The report reads campaign directories (runs.csv is rebuilt from the run directories
//! first, so a partial or sharded campaign reports what it has) and shows, for each
//! campaign, what its data supports:
//!
//! | section | when | seed figure / table | file |
//! |---|---|---|---|
//! | dataset makeup | always | 000 Tables 1-3, 001 Tables I, III | `report/overview.rs` |
//! | time to deliver N MB, savings, CDFs, runs within the cap | downloads of >= 5 MB | 000 Fig. 10-12, Table 4; 001 Fig. 6-9, Table II | `report/delivery.rs` |
//! | exit classes, capacity / loss / exit times | runs with slow-start exits or losses | 003 Tables II, III | `report/exits.rs` |
//! | exit-to-loss ratio, cwnd reduction ratio | runs with SEARCH (or shadow) exits | 000 Fig. 8, 001 Fig. 10 | `report/exits.rs` |
//! | goodput, efficiency CDF and heatmap | always | 002 Table II, Fig. 3-4 | `report/goodput.rs` |
//! | client x server heatmaps, CDFs, Table II against the seed | `satquic matrix` directories (instead of the other sections but the overview) | 002 Table II, Fig. 3-4 | `report/matrix.rs` |
//! | goodput over buffer x loss | links swept over `buffer` | 004 Fig. 6.6-6.8 | `report/thesis.rs` |
//! | fairness | multi-flow workloads | 004 Eq. 6.3, Fig. 6.11-6.12 | `report/thesis.rs` |
//! | beside other traffic: pairs, harm, the profile's checks | two-flow runs | issue 38; Ware et al., HotNets 2019 | `report/beside.rs` |
//! | busy beam: short flows' completion times, short requests in min RTTs, ratios, bulk flows | `kind = "beam"` workloads | issue 38 | `report/beam.rs` |
//! | time-offset plot, cwnd / RTT / queue of one run | always | 002 Fig. 7-11, 001 Fig. 4-5 | `report/detail.rs` |
//!
//! Every figure's caption names the seed figure it corresponds to and the runs it used.
//! `report/page.rs` writes the files.

mod beam;
mod beside;
mod delivery;
mod detail;
mod exits;
mod goodput;
mod matrix;
mod overview;
mod page;
mod thesis;

use std::path::{Path, PathBuf};

use crate::LabError;
use crate::analysis::{self, ExclusionRules};
use crate::dataset::{self, RunData};
use crate::exec::{self, CampaignMeta};
use crate::plot::Figure;

/// One row of the comparison table that opens a `reproduce` report.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonRow {
    /// Seed and figure/table, e.g. `001 Fig. 7`.
    pub source: String,
    /// What is compared.
    pub what: String,
    pub seed: String,
    pub ours: String,
    /// `matches`, `same trend`, `differs` or `no data`.
    pub verdict: String,
}

/// Extra content of a `reproduce` report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extras {
    pub title: Option<String>,
    pub comparison: Vec<ComparisonRow>,
    /// Paragraphs shown after the comparison (what was scaled, caveats).
    pub notes: Vec<String>,
}

/// A table of the report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub title: String,
    pub seed_ref: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub note: String,
}

/// A figure of the report with its caption.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureEntry {
    /// File stem under `figures/`.
    pub id: String,
    pub figure: Figure,
    pub seed_ref: String,
    /// Which runs the figure used.
    pub runs: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Text(String),
    Table(Table),
    Figure(Box<FigureEntry>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: String,
    pub items: Vec<Item>,
}

/// A campaign loaded for reporting.
pub struct Loaded {
    pub dir: PathBuf,
    pub meta: CampaignMeta,
    pub runs: Vec<RunData>,
}

/// Loads a campaign directory: rebuilds runs.csv, reads the rows and per-MB times.
pub fn load(dir: &Path) -> Result<Loaded, LabError> {
    let meta = CampaignMeta::read(dir)?;
    let rows = exec::collect_dir(dir)?;
    let runs = rows
        .into_iter()
        .map(|row| {
            let run_dir = dir.join("runs").join(&row.run_id);
            let mb_times_s = dataset::read_chunks_as(&run_dir, meta.analysis.delivery);
            RunData { row, mb_times_s }
        })
        .collect();
    Ok(Loaded {
        dir: dir.to_path_buf(),
        meta,
        runs,
    })
}

/// Writes the report of the campaigns in `dirs` into `out`; returns the index.html path.
pub fn write_report(
    dirs: &[PathBuf],
    out: &Path,
    extras: Option<&Extras>,
) -> Result<PathBuf, LabError> {
    let loaded: Vec<Loaded> = dirs.iter().map(|d| load(d)).collect::<Result<_, _>>()?;
    let mut sections = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        sections.extend(campaign_sections(l, &format!("c{}", i + 1)));
    }
    page::write_files(&loaded, &sections, out, extras)
}

/// Writes a report of already built sections (used by `reproduce`, which adds its
/// comparison table and notes).
pub fn write_report_sections(
    loaded: &[Loaded],
    sections: &[Section],
    out: &Path,
    extras: &Extras,
) -> Result<PathBuf, LabError> {
    page::write_files(loaded, sections, out, Some(extras))
}

/// The sections of one campaign, in the order of the module docs' table; those without
/// items are left out (the overview and goodput always have some). `tag` makes figure
/// ids unique across campaigns.
pub fn campaign_sections(l: &Loaded, tag: &str) -> Vec<Section> {
    let all: Vec<&RunData> = l.runs.iter().collect();
    if matrix::is_matrix(l) {
        // A `satquic matrix` directory: its own views (seed 002) instead of those of a
        // simulated campaign (no per-MB times, slow-start exits or series).
        let overview = vec![Item::Text(overview::summary(l, &all))];
        return [
            ("overview", overview),
            ("implementation matrix", matrix::items(l, tag, &all)),
        ]
        .into_iter()
        .map(|(title, items)| Section {
            title: format!("{}: {title}", l.meta.name),
            items,
        })
        .collect();
    }
    let rules = rules(l);
    let clean_runs = analysis::clean(&all, &rules);
    let baseline = baseline_label(l);
    let baseline = baseline.as_deref();
    let fairness = thesis::fairness_table(l, &all)
        .map(Item::Table)
        .into_iter()
        .chain(thesis::jain_over_time_item(l, tag, &all));
    [
        ("overview", overview::items(l, &all, &rules)),
        (
            "time to deliver N MB",
            delivery::items(l, tag, &clean_runs, baseline),
        ),
        ("slow-start exits", exits::items(l, tag, &clean_runs)),
        ("goodput and efficiency", goodput::items(l, tag, &all)),
        ("fairness", fairness.collect()),
        ("beside other traffic", beside::items(l, &all)),
        ("busy beam", beam::items(l, &all)),
        (
            "single runs in detail",
            detail::items(l, tag, &all, baseline),
        ),
    ]
    .into_iter()
    .filter(|(_, items)| !items.is_empty())
    .map(|(title, items)| Section {
        title: format!("{}: {title}", l.meta.name),
        items,
    })
    .collect()
}

// ---------------------------------------------------------------------------------------
// Formatting helpers.

pub(crate) fn mean_sd_str(v: Option<(f64, f64)>) -> String {
    match v {
        Some((m, sd)) => format!("{m:.1} ({sd:.1})"),
        None => "-".into(),
    }
}

fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

fn mbps(bps: f64) -> String {
    format!("{:.2}", bps / 1e6)
}

/// Which runs a figure or table used, for captions.
fn runs_desc(
    campaign: &str,
    link: Option<&str>,
    workload: Option<&str>,
    runs: &[&RunData],
) -> String {
    let mut variants: Vec<&str> = Vec::new();
    for r in runs {
        if !variants.contains(&r.row.variant.as_str()) {
            variants.push(&r.row.variant);
        }
    }
    let mut s = format!("campaign {campaign}");
    if let Some(l) = link {
        s.push_str(&format!(", link {l}"));
    }
    if let Some(w) = workload {
        s.push_str(&format!(", workload {w}"));
    }
    let seeds: Vec<u64> = {
        let mut v: Vec<u64> = runs.iter().map(|r| r.row.seed).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let seed_text = match (seeds.first(), seeds.last()) {
        (Some(a), Some(b)) if a != b => format!("seeds {a}-{b}"),
        (Some(a), _) => format!("seed {a}"),
        _ => "no seeds".into(),
    };
    s.push_str(&format!(
        ", variants {}; {} runs ({seed_text}; rows of runs.csv with these values)",
        variants.join(", "),
        runs.len()
    ));
    s
}

// ---------------------------------------------------------------------------------------
// What the sections share: the baseline, exclusion rules, runs of a variant.

fn baseline_label(l: &Loaded) -> Option<String> {
    if let Some(b) = &l.meta.analysis.baseline {
        return Some(b.clone());
    }
    let variants = &l.meta.spec.variants;
    variants
        .iter()
        .zip(&l.meta.variants)
        .find(|(v, _)| {
            let cc = v.cc.trim().to_ascii_lowercase();
            cc == "cubic" || cc == "newreno" || cc.ends_with("+classic")
        })
        .map(|(_, label)| label.clone())
        .or_else(|| l.meta.variants.first().cloned())
}

fn is_shadow(r: &RunData) -> bool {
    r.row.cc.to_ascii_lowercase().contains("shadow")
}

fn rules(l: &Loaded) -> ExclusionRules {
    ExclusionRules {
        first_rtt_loss: l.meta.analysis.exclude_first_rtt_loss,
        wireless_loss_before_s: l
            .meta
            .analysis
            .exclude_wireless_loss_before
            .map(|d| d.as_secs_f64()),
    }
}

fn variant_runs<'a>(runs: &[&'a RunData], variant: &str) -> Vec<&'a RunData> {
    runs.iter()
        .copied()
        .filter(|r| r.row.variant == variant)
        .collect()
}

#[cfg(test)]
mod tests;
