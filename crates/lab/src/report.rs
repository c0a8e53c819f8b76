//! The report: `report/index.html` (self-contained: CSS and every figure inlined as SVG),
//! the figures as `figures/*.svg` and `figures/*.png`, and `summary.md`.
//!
//! The report reads campaign directories (runs.csv is rebuilt from the run directories
//! first, so a partial or sharded campaign reports what it has) and shows, for each
//! campaign, what its data supports:
//!
//! | section | when | seed figure / table |
//! |---|---|---|
//! | dataset makeup | always | 000 Tables 1-3, 001 Tables I, III |
//! | time to deliver N MB, savings, CDFs, runs within the cap | downloads of >= 5 MB | 000 Fig. 10-12, Table 4; 001 Fig. 6-9, Table II |
//! | exit classes, capacity / loss / exit times | runs with slow-start exits or losses | 003 Tables II, III |
//! | exit-to-loss ratio, cwnd reduction ratio | runs with SEARCH (or shadow) exits | 000 Fig. 8, 001 Fig. 10 |
//! | goodput, efficiency CDF and heatmap | always | 002 Table II, Fig. 3-4 |
//! | goodput over buffer x loss | links swept over `buffer` | 004 Fig. 6.6-6.8 |
//! | fairness | multi-flow workloads | 004 Eq. 6.3, Fig. 6.11-6.12 |
//! | time-offset plot, cwnd / RTT / queue of one run | always | 002 Fig. 7-11, 001 Fig. 4-5 |
//!
//! Every figure's caption names the seed figure it corresponds to and the runs it used.

mod page;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::LabError;
use crate::analysis::{self, ExclusionRules, ExitSource, Quartiles};
use crate::dataset::{self, RunData};
use crate::exec::{self, CampaignMeta};
use crate::plot::{Chart, Figure, Heatmap, Marker, Series, SeriesKind};

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
            let mb_times_s = dataset::read_chunks(&dir.join("runs").join(&row.run_id));
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

// ---------------------------------------------------------------------------------------
// Formatting helpers.

fn mean_sd_str(v: Option<(f64, f64)>) -> String {
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
// Sections of one campaign.

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

/// The sections of one campaign; `tag` makes figure ids unique across campaigns.
pub fn campaign_sections(l: &Loaded, tag: &str) -> Vec<Section> {
    let name = l.meta.name.clone();
    let all: Vec<&RunData> = l.runs.iter().collect();
    let mut sections = Vec::new();

    // Overview and dataset makeup.
    let mut items = Vec::new();
    let mut status: BTreeMap<String, usize> = BTreeMap::new();
    for r in &all {
        *status.entry(r.row.status.clone()).or_default() += 1;
    }
    items.push(Item::Text(format!(
        "{}{} runs of {} planned ({}); mode {}; links: {}; variants: {}; workloads: {}.",
        if l.meta.description.is_empty() {
            String::new()
        } else {
            format!("{} ", l.meta.description)
        },
        all.len(),
        l.meta.run_ids.len(),
        status
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        l.meta.mode.as_str(),
        l.meta.links.join(", "),
        l.meta.variants.join(", "),
        l.meta.workloads.join(", "),
    )));
    let rules = rules(l);
    let mut makeup = Table {
        title: format!("{name}: dataset makeup"),
        seed_ref: "000 Tables 1-3, 001 Tables I and III".into(),
        columns: [
            "link",
            "variant",
            "first-RTT loss",
            "wireless loss",
            "clean",
            "failed/timeout",
            "total",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: format!(
            "Exclusion rules: first-RTT loss {}, wireless loss {}. In simulation these losses exist only if the link models random loss, so the rules are off unless the spec's [analysis] turns them on.",
            if rules.first_rtt_loss { "on" } else { "off" },
            match rules.wireless_loss_before_s {
                Some(t) => format!("before {t} s"),
                None => "off".into(),
            }
        ),
    };
    for (link, runs) in analysis::group_by(&all, |r| r.row.link.clone()) {
        for v in &l.meta.variants {
            let vr = variant_runs(&runs, v);
            if vr.is_empty() {
                continue;
            }
            let m = analysis::dataset_makeup(&vr, &rules);
            makeup.rows.push(vec![
                link.clone(),
                v.clone(),
                m.first_rtt_loss.to_string(),
                m.wireless_loss.to_string(),
                m.clean.to_string(),
                m.failed.to_string(),
                m.total.to_string(),
            ]);
        }
    }
    items.push(Item::Table(makeup));
    let failures: Vec<&RunData> = all
        .iter()
        .copied()
        .filter(|r| matches!(r.row.status.as_str(), "failed" | "timeout"))
        .collect();
    if !failures.is_empty() {
        items.push(Item::Table(Table {
            title: format!("{name}: failed and timed-out runs"),
            seed_ref: "002 Fig. 4 (X and T)".into(),
            columns: ["run", "status", "reason"].map(String::from).to_vec(),
            rows: failures
                .iter()
                .take(50)
                .map(|r| {
                    vec![
                        r.row.run_id.clone(),
                        r.row.status.clone(),
                        r.row.reason.clone(),
                    ]
                })
                .collect(),
            note: if failures.len() > 50 {
                format!("First 50 of {}.", failures.len())
            } else {
                String::new()
            },
        }));
    }
    sections.push(Section {
        title: format!("{name}: overview"),
        items,
    });

    let clean_runs = analysis::clean(&all, &rules);
    let baseline = baseline_label(l);

    // Time to deliver N MB.
    let mut items = Vec::new();
    for ((link, workload), runs) in analysis::group_by(&clean_runs, |r| {
        (r.row.link.clone(), r.row.workload.clone())
    }) {
        let Some(bytes) = runs[0].row.bytes else {
            continue;
        };
        if runs[0].row.workload_kind != "download" || bytes < 5_000_000 {
            continue;
        }
        items.extend(delivery_items(
            l,
            tag,
            &link,
            &workload,
            bytes,
            &runs,
            baseline.as_deref(),
        ));
    }
    if !items.is_empty() {
        sections.push(Section {
            title: format!("{name}: time to deliver N MB"),
            items,
        });
    }

    // Slow-start exits.
    let items = exit_items(l, tag, &clean_runs);
    if !items.is_empty() {
        sections.push(Section {
            title: format!("{name}: slow-start exits"),
            items,
        });
    }

    // Goodput and efficiency.
    sections.push(Section {
        title: format!("{name}: goodput and efficiency"),
        items: goodput_items(l, tag, &all),
    });

    // Fairness.
    let multi: Vec<&RunData> = all.iter().copied().filter(|r| r.row.flows > 1).collect();
    if !multi.is_empty() {
        let mut t = Table {
            title: format!("{name}: fairness of parallel flows"),
            seed_ref: "004 Eq. 6.3, Fig. 6.11-6.13".into(),
            columns: ["link", "variant", "workload", "flows", "runs", "mean JFI", "min JFI", "mean utilization"]
                .map(String::from)
                .to_vec(),
            rows: Vec::new(),
            note: "Jain's index over the flows' goodputs of each run; utilization = sum of goodputs / link rate.".into(),
        };
        for ((link, variant, workload), runs) in analysis::group_by(&multi, |r| {
            (
                r.row.link.clone(),
                r.row.variant.clone(),
                r.row.workload.clone(),
            )
        }) {
            let j: Vec<f64> = runs.iter().filter_map(|r| r.row.jain_index).collect();
            let u: Vec<f64> = runs.iter().filter_map(|r| r.row.utilization).collect();
            t.rows.push(vec![
                link,
                variant,
                workload,
                runs[0].row.flows.to_string(),
                runs.len().to_string(),
                analysis::mean_sd(&j).map_or("-".into(), |m| format!("{:.3}", m.0)),
                j.iter()
                    .copied()
                    .reduce(f64::min)
                    .map_or("-".into(), |v| format!("{v:.3}")),
                analysis::mean_sd(&u).map_or("-".into(), |m| pct(m.0 * 100.0)),
            ]);
        }
        sections.push(Section {
            title: format!("{name}: fairness"),
            items: vec![Item::Table(t)],
        });
    }

    // One run in detail.
    let items = detail_items(l, tag, &all, baseline.as_deref());
    if !items.is_empty() {
        sections.push(Section {
            title: format!("{name}: single runs in detail"),
            items,
        });
    }
    sections
}

fn default_marks(bytes: u64) -> Vec<u64> {
    let mb = bytes / 1_000_000;
    let mut v: Vec<u64> = [mb / 4, mb / 2, mb * 3 / 4, mb]
        .into_iter()
        .filter(|m| *m > 0)
        .collect();
    v.dedup();
    v
}

#[allow(clippy::too_many_arguments)]
fn delivery_items(
    l: &Loaded,
    tag: &str,
    link: &str,
    workload: &str,
    bytes: u64,
    runs: &[&RunData],
    baseline: Option<&str>,
) -> Vec<Item> {
    let name = &l.meta.name;
    let max_mb = bytes / 1_000_000;
    let all_mb: Vec<u64> = (1..=max_mb).collect();
    let marks = if l.meta.analysis.marks_mb.is_empty() {
        default_marks(bytes)
    } else {
        l.meta
            .analysis
            .marks_mb
            .iter()
            .copied()
            .filter(|m| *m <= max_mb)
            .collect()
    };
    let cdf_marks = if l.meta.analysis.cdf_mb.is_empty() {
        let m = default_marks(bytes);
        m.iter().rev().take(2).rev().copied().collect()
    } else {
        l.meta.analysis.cdf_mb.clone()
    };
    let id_base = format!(
        "{tag}-{}-{}",
        crate::plan::sanitize(link),
        crate::plan::sanitize(workload)
    );
    let desc = runs_desc(name, Some(link), Some(workload), runs);
    let variants: Vec<&String> = l
        .meta
        .variants
        .iter()
        .filter(|v| runs.iter().any(|r| &r.row.variant == *v))
        .collect();
    let mut items = Vec::new();

    // 000 Fig. 10 / 001 Fig. 6.
    let mut series = Vec::new();
    for (i, v) in variants.iter().enumerate() {
        let vr = variant_runs(runs, v);
        let q = analysis::time_to_mb_quartiles(&vr, &all_mb);
        let pts: Vec<(f64, f64)> = q
            .iter()
            .filter_map(|(mb, q)| q.map(|q| (*mb as f64, q.median)))
            .collect();
        let band: Vec<(f64, f64, f64)> = q
            .iter()
            .filter_map(|(mb, q)| q.map(|q| (*mb as f64, q.q1, q.q3)))
            .collect();
        series.push(Series::line(v.as_str(), pts, i).with_band(band));
    }
    items.push(Item::Figure(Box::new(FigureEntry {
        id: format!("{id_base}-time-to-mb"),
        figure: Figure::Chart(Chart {
            title: format!("Median time to deliver N MB, {link}"),
            x_label: "MB delivered".into(),
            y_label: "time (s)".into(),
            series,
            ..Chart::default()
        }),
        seed_ref: "000 Fig. 10 / 001 Fig. 6 (shading: 25% to 75% quartiles; each mark over the runs that delivered it)".into(),
        runs: desc.clone(),
    })));

    // Table of quartiles at the marks and runs within the cap (000 Table 4).
    let mut t = Table {
        title: format!(
            "{name}, {link}: time to deliver N MB, median (q1-q3) s, and runs delivering N MB within the cap"
        ),
        seed_ref: "000 Fig. 10 and Table 4 / 001 Fig. 6 and Table II".into(),
        columns: std::iter::once("variant".to_string())
            .chain(std::iter::once("runs".to_string()))
            .chain(marks.iter().map(|m| format!("{m} MB")))
            .collect(),
        rows: Vec::new(),
        note: format!(
            "Cells: median (q1-q3) seconds, then [runs that delivered the mark within the {} s cap].",
            runs[0].row.time_cap_s
        ),
    };
    for v in &variants {
        let vr = variant_runs(runs, v);
        let q = analysis::time_to_mb_quartiles(&vr, &marks);
        let within = analysis::delivered_within_cap(&vr, &marks);
        let mut row = vec![v.to_string(), vr.len().to_string()];
        for ((_, q), (_, n)) in q.iter().zip(within) {
            row.push(match q {
                Some(q) => format!("{:.2} ({:.2}-{:.2}) [{n}]", q.median, q.q1, q.q3),
                None => format!("- [{n}]"),
            });
        }
        t.rows.push(row);
    }
    items.push(Item::Table(t));

    // Savings (000 Fig. 11, 001 Fig. 7-8).
    if let Some(base) = baseline.filter(|b| variants.iter().any(|v| v.as_str() == *b)) {
        let br = variant_runs(runs, base);
        let others: Vec<&&String> = variants.iter().filter(|v| v.as_str() != base).collect();
        if !others.is_empty() {
            let mut abs = Vec::new();
            let mut rel = Vec::new();
            let mut table = Table {
                title: format!("{name}, {link}: median saving against {base}"),
                seed_ref: "000 Fig. 11 / 001 Fig. 7-8".into(),
                columns: std::iter::once("variant".to_string())
                    .chain(marks.iter().map(|m| format!("{m} MB")))
                    .chain(std::iter::once("largest saving".to_string()))
                    .collect(),
                rows: Vec::new(),
                note: "Saving = baseline median - variant median (positive: the variant is faster), seconds and % of the baseline median.".into(),
            };
            for (i, v) in others.iter().enumerate() {
                let vr = variant_runs(runs, v);
                let s = analysis::median_savings(&br, &vr, &all_mb);
                abs.push(
                    Series::line(
                        v.as_str(),
                        s.iter().map(|s| (s.mb as f64, s.saving_s)).collect(),
                        i + 1,
                    )
                    .with_band(
                        s.iter()
                            .map(|s| {
                                (
                                    s.mb as f64,
                                    s.q1_diff_s.min(s.q3_diff_s),
                                    s.q1_diff_s.max(s.q3_diff_s),
                                )
                            })
                            .collect(),
                    ),
                );
                rel.push(Series::line(
                    v.as_str(),
                    s.iter().map(|s| (s.mb as f64, s.saving_pct)).collect(),
                    i + 1,
                ));
                let at_marks = analysis::median_savings(&br, &vr, &marks);
                let mut row = vec![v.to_string()];
                for m in &marks {
                    row.push(match at_marks.iter().find(|s| s.mb == *m) {
                        Some(s) => format!("{:+.2} s ({:+.1}%)", s.saving_s, s.saving_pct),
                        None => "-".into(),
                    });
                }
                row.push(
                    match s.iter().max_by(|a, b| a.saving_s.total_cmp(&b.saving_s)) {
                        Some(b) => format!(
                            "{:+.2} s ({:+.1}%) at {} MB",
                            b.saving_s, b.saving_pct, b.mb
                        ),
                        None => "-".into(),
                    },
                );
                table.rows.push(row);
            }
            items.push(Item::Figure(Box::new(FigureEntry {
                id: format!("{id_base}-saving"),
                figure: Figure::Chart(Chart {
                    title: format!("Median time saved against {base}, {link}"),
                    x_label: "MB delivered".into(),
                    y_label: "saving (s)".into(),
                    series: abs,
                    hlines: vec![Marker {
                        at: 0.0,
                        label: String::new(),
                        color: 6,
                    }],
                    ..Chart::default()
                }),
                seed_ref: "000 Fig. 11 / 001 Fig. 7 (shading: difference of the quartiles)".into(),
                runs: desc.clone(),
            })));
            items.push(Item::Figure(Box::new(FigureEntry {
                id: format!("{id_base}-saving-pct"),
                figure: Figure::Chart(Chart {
                    title: format!("Median time saved against {base} in %, {link}"),
                    x_label: "MB delivered".into(),
                    y_label: "saving (% of the baseline median)".into(),
                    series: rel,
                    hlines: vec![Marker {
                        at: 0.0,
                        label: String::new(),
                        color: 6,
                    }],
                    ..Chart::default()
                }),
                seed_ref: "001 Fig. 8".into(),
                runs: desc.clone(),
            })));
            items.push(Item::Table(table));

            // Paired comparison at the CDF marks.
            let mut pt = Table {
                title: format!("{name}, {link}: run-by-run comparison with {base} (same seed)"),
                seed_ref:
                    "001 Sec. IV on Fig. 9 (45% no difference, 40% faster, 15% slower at 150 MB)"
                        .into(),
                columns: ["variant", "MB", "pairs", "within 0.5 s", "faster", "slower"]
                    .map(String::from)
                    .to_vec(),
                rows: Vec::new(),
                note: "Each run is compared with the baseline run of the same seed.".into(),
            };
            for v in &others {
                let vr = variant_runs(runs, v);
                for m in &cdf_marks {
                    if let Some(p) = analysis::paired_outcomes(&br, &vr, *m, 0.5) {
                        pt.rows.push(vec![
                            v.to_string(),
                            m.to_string(),
                            p.pairs.to_string(),
                            pct(p.same * 100.0),
                            pct(p.faster * 100.0),
                            pct(p.slower * 100.0),
                        ]);
                    }
                }
            }
            if !pt.rows.is_empty() {
                items.push(Item::Table(pt));
            }
        }
    }

    // CDFs (000 Fig. 12 / 001 Fig. 9).
    for m in &cdf_marks {
        let mut series = Vec::new();
        let mut labels = Vec::new();
        for (i, v) in variants.iter().enumerate() {
            let vr = variant_runs(runs, v);
            let times = analysis::times_to_mb(&vr, *m);
            labels.push(format!("{v}: {}/{}", times.len(), vr.len()));
            series.push(
                Series::line(
                    format!("{v} ({} of {} runs)", times.len(), vr.len()),
                    analysis::cdf(&times),
                    i,
                )
                .with_kind(SeriesKind::Step),
            );
        }
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{id_base}-cdf-{m}mb"),
            figure: Figure::Chart(Chart {
                title: format!("CDF of the time to deliver {m} MB, {link}"),
                x_label: "time (s)".into(),
                y_label: "fraction of runs".into(),
                series,
                y_range: Some((0.0, 1.02)),
                ..Chart::default()
            }),
            seed_ref: format!(
                "000 Fig. 12 / 001 Fig. 9 (surviving runs in the legend: {})",
                labels.join(", ")
            ),
            runs: desc.clone(),
        })));
    }
    items
}

/// The class of a run whose shadow SEARCH never exited: late if a loss came, none if not.
fn no_exit_class(r: &RunData) -> Option<&'static str> {
    Some(if r.row.first_loss_detected_at_s.is_some() {
        "late"
    } else {
        "none"
    })
}

fn exit_items(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let name = &l.meta.name;
    let has_exit_info = runs
        .iter()
        .any(|r| r.row.exit_class.is_some() || r.row.shadow_exit_class.is_some());
    if !has_exit_info {
        return Vec::new();
    }
    let mut items = Vec::new();
    let mut classes = Table {
        title: format!("{name}: slow-start exit classes, % of runs"),
        seed_ref: "003 Table III".into(),
        columns: [
            "link", "variant", "runs", "early", "late", "chokepoint", "none",
            "early (OWD)", "late (OWD)", "chokepoint (OWD)",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: "Columns as in 003 Table III (early / late / chokepoint). Left: capacity point from the simulator's bottleneck queue (ground truth). (OWD): capacity point from the latency-offset heuristic of 003 Sec. V-B on the run's RTT series; runs where the heuristic finds no point (the queueing delay never exceeds 2 x min RTT) count as early if they exited. [shadow] rows classify where SEARCH in shadow mode would have exited (003 ran SEARCH offline on HyStart-off logs, which is this).".into(),
    };
    let mut times = Table {
        title: format!("{name}: capacity, first loss and exit times, mean (sd) s"),
        seed_ref: "003 Table II".into(),
        columns: [
            "link", "variant", "runs", "capacity", "loss", "exit", "timely",
            "capacity (OWD)", "timely (OWD)",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: "capacity: ground-truth capacity point; loss: first loss the sender detected; exit: the non-loss slow-start exit (for [shadow] rows the shadow SEARCH exit); timely: exits at or after the capacity point among runs with both.".into(),
    };
    for (link, lr) in analysis::group_by(runs, |r| r.row.link.clone()) {
        for v in &l.meta.variants {
            let vr = variant_runs(&lr, v);
            if vr.is_empty() {
                continue;
            }
            let shadow = vr.iter().any(|r| is_shadow(r));
            let mut rows_for = vec![(v.clone(), false)];
            if shadow {
                rows_for.push((format!("{v} [shadow]"), true));
            }
            for (label, use_shadow) in rows_for {
                let (gt, owd) = if use_shadow {
                    (
                        analysis::class_counts(
                            vr.iter()
                                .map(|r| r.row.shadow_exit_class.as_deref().or(no_exit_class(r))),
                        ),
                        analysis::class_counts(
                            vr.iter().map(|r| {
                                r.row.owd_shadow_exit_class.as_deref().or(no_exit_class(r))
                            }),
                        ),
                    )
                } else {
                    (
                        analysis::class_counts(vr.iter().map(|r| r.row.exit_class.as_deref())),
                        analysis::class_counts(vr.iter().map(|r| r.row.owd_exit_class.as_deref())),
                    )
                };
                use analysis::ExitClass::{Chokepoint, Early, Late};
                let owd_cell = |c| {
                    if owd.total() == 0 {
                        "-".to_string()
                    } else {
                        pct(owd.pct(c))
                    }
                };
                classes.rows.push(vec![
                    link.clone(),
                    label.clone(),
                    gt.total().to_string(),
                    pct(gt.pct(Early)),
                    pct(gt.pct(Late)),
                    pct(gt.pct(Chokepoint)),
                    pct(gt.pct(analysis::ExitClass::None)),
                    owd_cell(Early),
                    owd_cell(Late),
                    owd_cell(Chokepoint),
                ]);
                let t = analysis::exit_times(
                    &vr,
                    ExitSource {
                        shadow: use_shadow,
                        heuristic_capacity: false,
                    },
                );
                let th = analysis::exit_times(
                    &vr,
                    ExitSource {
                        shadow: use_shadow,
                        heuristic_capacity: true,
                    },
                );
                times.rows.push(vec![
                    link.clone(),
                    label,
                    t.runs.to_string(),
                    mean_sd_str(t.capacity_s),
                    mean_sd_str(t.loss_s),
                    mean_sd_str(t.exit_s),
                    t.timely_pct.map_or("-".into(), pct),
                    mean_sd_str(th.capacity_s),
                    th.timely_pct.map_or("-".into(), pct),
                ]);
            }
        }
    }
    items.push(Item::Table(classes));
    items.push(Item::Table(times));

    // Exit-to-loss ratio CDF (000 Fig. 8).
    for (link, lr) in analysis::group_by(runs, |r| r.row.link.clone()) {
        let mut series = Vec::new();
        let mut used: Vec<&RunData> = Vec::new();
        for (i, v) in l.meta.variants.iter().enumerate() {
            let vr = variant_runs(&lr, v);
            let ratios: Vec<f64> = vr
                .iter()
                .filter_map(|r| {
                    if is_shadow(r) {
                        r.row.shadow_exit_to_loss_ratio
                    } else if r.row.exit_reason.as_deref().is_some_and(|x| x != "loss") {
                        r.row.exit_to_loss_ratio
                    } else {
                        None
                    }
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let shadow = vr.iter().any(|r| is_shadow(r));
            // Runs whose (shadow) exit never came before a loss count as ratio <= 0.
            series.push(
                Series::line(
                    format!(
                        "{v}{} ({} runs with exit and loss)",
                        if shadow { " [shadow]" } else { "" },
                        ratios.len()
                    ),
                    analysis::cdf(&ratios),
                    i,
                )
                .with_kind(SeriesKind::Step),
            );
            used.extend(vr);
        }
        if series.is_empty() {
            continue;
        }
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-{}-exit-to-loss", crate::plan::sanitize(&link)),
            figure: Figure::Chart(Chart {
                title: format!("Exit-to-loss ratio, {link}"),
                x_label: "(first loss - SEARCH exit) / RTT at exit".into(),
                y_label: "fraction of runs".into(),
                series,
                vlines: vec![
                    Marker { at: 0.0, label: "loss at exit".into(), color: 6 },
                    Marker { at: 1.0, label: "1 RTT".into(), color: 6 },
                ],
                y_range: Some((0.0, 1.02)),
                ..Chart::default()
            }),
            seed_ref: "000 Fig. 8 (shadow mode on the real link: 45% of clean runs lose a packet before SEARCH would exit, 35% exit more than one RTT before loss)".into(),
            runs: runs_desc(name, Some(&link), None, &used),
        })));
    }

    // cwnd reduction ratio (001 Fig. 10).
    let mut series = Vec::new();
    let mut used: Vec<&RunData> = Vec::new();
    for (i, ((link, v), vr)) in
        analysis::group_by(runs, |r| (r.row.link.clone(), r.row.variant.clone()))
            .into_iter()
            .enumerate()
    {
        let ratios: Vec<f64> = vr
            .iter()
            .filter_map(|r| r.row.cwnd_reduction_ratio)
            .collect();
        if ratios.is_empty() || ratios.iter().all(|r| r.abs() < 1e-12) {
            continue;
        }
        series.push(
            Series::line(
                format!("{v}, {link} ({} exits)", ratios.len()),
                analysis::cdf(&ratios),
                i,
            )
            .with_kind(SeriesKind::Step),
        );
        used.extend(vr);
    }
    if !series.is_empty() {
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-cwnd-reduction"),
            figure: Figure::Chart(Chart {
                title: "cwnd reduction at the SEARCH exit".into(),
                x_label: "(cwnd before - cwnd after) / cwnd before".into(),
                y_label: "fraction of runs".into(),
                series,
                vlines: vec![Marker { at: 0.3, label: "CUBIC beta 0.3".into(), color: 6 }],
                y_range: Some((0.0, 1.02)),
                ..Chart::default()
            }),
            seed_ref: "001 Fig. 10 (SEARCH's cwnd lowering removes less than CUBIC's multiplicative decrease)".into(),
            runs: runs_desc(name, None, None, &used),
        })));
    }
    items
}

fn goodput_items(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let name = &l.meta.name;
    let mut items = Vec::new();
    let mut t = Table {
        title: format!("{name}: goodput and efficiency per link (all variants pooled)"),
        seed_ref: "002 Table II (mean / max goodput and efficiency = goodput / link rate, Eq. 1)".into(),
        columns: ["link", "runs", "unfinished", "mean Mbit/s", "mean eff.", "max Mbit/s", "max eff."]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
        note: "Goodput of flow 0: delivered bytes x 8 / time to completion (or to the cap). Unfinished: capped, failed or timed out.".into(),
    };
    let links = analysis::group_by(runs, |r| r.row.link.clone());
    for (link, lr) in &links {
        if let Some(g) = analysis::goodput_table(lr) {
            t.rows.push(vec![
                link.clone(),
                g.runs.to_string(),
                g.unfinished.to_string(),
                mbps(g.mean_bps),
                pct(g.mean_efficiency * 100.0),
                mbps(g.max_bps),
                pct(g.max_efficiency * 100.0),
            ]);
        }
    }
    items.push(Item::Table(t));
    let mut tv = Table {
        title: format!("{name}: goodput per link and variant"),
        seed_ref: "002 Table II, Fig. 4".into(),
        columns: [
            "link",
            "variant",
            "runs",
            "unfinished",
            "mean Mbit/s",
            "mean eff.",
            "max Mbit/s",
            "median completion s",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
        note: String::new(),
    };
    let mut heat = vec![vec![None; links.len()]; l.meta.variants.len()];
    for (c, (link, lr)) in links.iter().enumerate() {
        for (r, v) in l.meta.variants.iter().enumerate() {
            let vr = variant_runs(lr, v);
            if let Some(g) = analysis::goodput_table(&vr) {
                heat[r][c] = Some(g.mean_efficiency);
                let completion: Vec<f64> =
                    vr.iter().filter_map(|r| r.row.completion_time_s).collect();
                tv.rows.push(vec![
                    link.clone(),
                    v.clone(),
                    g.runs.to_string(),
                    g.unfinished.to_string(),
                    mbps(g.mean_bps),
                    pct(g.mean_efficiency * 100.0),
                    mbps(g.max_bps),
                    Quartiles::of(&completion).map_or("-".into(), |q| format!("{:.2}", q.median)),
                ]);
            }
        }
    }
    items.push(Item::Table(tv));
    let desc = runs_desc(name, None, None, runs);
    let series: Vec<Series> = links
        .iter()
        .enumerate()
        .map(|(i, (link, lr))| {
            let e: Vec<f64> = lr.iter().filter_map(|r| r.row.efficiency).collect();
            Series::line(link.clone(), analysis::cdf(&e), i).with_kind(SeriesKind::Step)
        })
        .collect();
    items.push(Item::Figure(Box::new(FigureEntry {
        id: format!("{tag}-efficiency-cdf"),
        figure: Figure::Chart(Chart {
            title: "Efficiency (goodput / link rate) per link, all variants".into(),
            x_label: "efficiency".into(),
            y_label: "fraction of runs".into(),
            series,
            x_range: Some((0.0, 1.05)),
            y_range: Some((0.0, 1.02)),
            ..Chart::default()
        }),
        seed_ref: "002 Fig. 3".into(),
        runs: desc.clone(),
    })));
    if links.len() * l.meta.variants.len() > 1 {
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-efficiency-heatmap"),
            figure: Figure::Heatmap(Heatmap {
                title: "Mean efficiency, variant x link".into(),
                columns: links.iter().map(|(l, _)| short(l, 26)).collect(),
                rows: l.meta.variants.iter().map(|v| short(v, 32)).collect(),
                values: heat,
                range: (0.0, 1.0),
                percent: true,
            }),
            seed_ref:
                "002 Fig. 4 (result matrix; our variants in place of the implementation pairs)"
                    .into(),
            runs: desc.clone(),
        })));
    }

    // Goodput over buffer x PLR (004 A1).
    let swept: Vec<&RunData> = runs
        .iter()
        .copied()
        .filter(|r| r.row.buffer_bdp.is_some())
        .collect();
    if !swept.is_empty() {
        let mut plrs: Vec<f64> = swept.iter().map(|r| r.row.plr).collect();
        plrs.sort_by(f64::total_cmp);
        plrs.dedup();
        let mut charts = Vec::new();
        let mut table = Table {
            title: format!("{name}: mean goodput (Mbit/s) over buffer size and loss"),
            seed_ref: "004 Fig. 6.6-6.8 (A1)".into(),
            columns: vec!["link family".into(), "PLR".into(), "variant".into()],
            rows: Vec::new(),
            note: String::new(),
        };
        let mut buffers: Vec<f64> = swept.iter().filter_map(|r| r.row.buffer_bdp).collect();
        buffers.sort_by(f64::total_cmp);
        buffers.dedup();
        table
            .columns
            .extend(buffers.iter().map(|b| format!("{b} BDP")));
        for (source, sr) in analysis::group_by(&swept, |r| r.row.link_source.clone()) {
            for plr in &plrs {
                let pr: Vec<&RunData> = sr.iter().copied().filter(|r| r.row.plr == *plr).collect();
                if pr.is_empty() {
                    continue;
                }
                let mut series = Vec::new();
                for (i, v) in l.meta.variants.iter().enumerate() {
                    let vr = variant_runs(&pr, v);
                    if vr.is_empty() {
                        continue;
                    }
                    let mut row = vec![source.clone(), format!("{}%", plr * 100.0), v.clone()];
                    let mut pts = Vec::new();
                    for b in &buffers {
                        let g: Vec<f64> = vr
                            .iter()
                            .filter(|r| r.row.buffer_bdp == Some(*b))
                            .filter_map(|r| r.row.goodput_bps)
                            .collect();
                        match analysis::mean_sd(&g) {
                            Some((m, _)) => {
                                pts.push((*b, m / 1e6));
                                row.push(mbps(m));
                            }
                            None => row.push("-".into()),
                        }
                    }
                    table.rows.push(row);
                    series.push(Series::line(v.as_str(), pts, i).with_kind(SeriesKind::Line));
                }
                charts.push(Chart {
                    title: format!("{source}, PLR {}%", plr * 100.0),
                    x_label: "bottleneck buffer (x BDP)".into(),
                    y_label: "goodput (Mbit/s)".into(),
                    series,
                    ..Chart::default()
                });
            }
        }
        items.push(Item::Table(table));
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-goodput-buffer-plr"),
            figure: Figure::Panels {
                title: "Bulk download goodput over buffer size, per loss rate".into(),
                charts,
            },
            seed_ref: "004 Fig. 6.6 (PLR 0), 6.7 (0.1%), 6.8 (1%)".into(),
            runs: runs_desc(name, None, None, &swept),
        })));
    }
    items
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// Rows of a run's series.csv for one flow, thinned to at most `max` rows.
fn read_series(dir: &Path, flow: u32, max: usize) -> Vec<satquic_run::record::SeriesRow> {
    let Ok(mut r) = csv::Reader::from_path(dir.join("series.csv")) else {
        return Vec::new();
    };
    let rows: Vec<satquic_run::record::SeriesRow> = r
        .deserialize::<satquic_run::record::SeriesRow>()
        .flatten()
        .filter(|s| s.flow == flow)
        .collect();
    let step = rows.len().div_ceil(max.max(1)).max(1);
    rows.into_iter().step_by(step).collect()
}

/// Times of congestion events (losses the sender detected) and of the real and shadow
/// slow-start exits of a flow, from events.jsonl.
struct RunEvents {
    losses: Vec<f64>,
    exit: Option<f64>,
    shadow_exit: Option<f64>,
}

fn read_events(dir: &Path, flow: u64) -> RunEvents {
    let mut ev = RunEvents {
        losses: Vec::new(),
        exit: None,
        shadow_exit: None,
    };
    let Ok(text) = std::fs::read_to_string(dir.join("events.jsonl")) else {
        return ev;
    };
    for line in text.lines() {
        if !(line.contains("\"congestion\"") || line.contains("\"slow_start_exit\"")) {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v.get("flow").and_then(|f| f.as_u64()) != Some(flow) {
            continue;
        }
        let at = v.get("at").and_then(|a| a.as_f64());
        match (v.get("type").and_then(|t| t.as_str()), at) {
            (Some("congestion"), Some(t)) => ev.losses.push(t),
            (Some("slow_start_exit"), Some(t)) => {
                if v.get("shadow").and_then(|s| s.as_bool()) == Some(true) {
                    ev.shadow_exit.get_or_insert(t);
                } else {
                    ev.exit.get_or_insert(t);
                }
            }
            _ => {}
        }
    }
    ev
}

fn detail_items(l: &Loaded, tag: &str, runs: &[&RunData], baseline: Option<&str>) -> Vec<Item> {
    let name = &l.meta.name;
    let mut items = Vec::new();
    let finished: Vec<&RunData> = runs
        .iter()
        .copied()
        .filter(|r| !matches!(r.row.status.as_str(), "failed" | "timeout"))
        .collect();
    for (li, (link, lr)) in analysis::group_by(&finished, |r| r.row.link.clone())
        .into_iter()
        .enumerate()
    {
        if li >= 4 {
            break;
        }
        let first_workload = lr[0].row.workload.clone();
        let lr: Vec<&RunData> = lr
            .into_iter()
            .filter(|r| r.row.workload == first_workload)
            .collect();
        // Time-offset plot: the first repetition of every variant.
        let mut series = Vec::new();
        let mut used = Vec::new();
        for (i, v) in l.meta.variants.iter().enumerate() {
            let Some(r) = lr.iter().find(|r| &r.row.variant == v) else {
                continue;
            };
            let dir = l.dir.join("runs").join(&r.row.run_id);
            let s = read_series(&dir, 0, 1500);
            if s.is_empty() {
                continue;
            }
            let ev = read_events(&dir, 0);
            let pts: Vec<(f64, f64)> = s
                .iter()
                .map(|x| (x.time_s, x.delivered_bytes as f64 / 1e6))
                .collect();
            let at = |t: f64| {
                pts.iter()
                    .take_while(|p| p.0 <= t)
                    .last()
                    .map_or(0.0, |p| p.1)
            };
            let losses: Vec<(f64, f64)> = ev.losses.iter().map(|t| (*t, at(*t))).collect();
            series.push(Series::line(v.as_str(), pts, i));
            if !losses.is_empty() {
                series.push(
                    Series::line(format!("{v}: loss detected"), losses, i)
                        .with_kind(SeriesKind::Crosses),
                );
            }
            used.push(*r);
        }
        if !series.is_empty() {
            items.push(Item::Figure(Box::new(FigureEntry {
                id: format!("{tag}-{}-time-offset", crate::plan::sanitize(&link)),
                figure: Figure::Chart(Chart {
                    title: format!("Time-offset plot, {link}"),
                    x_label: "time (s)".into(),
                    y_label: "stream offset delivered to the client (MB)".into(),
                    series,
                    ..Chart::default()
                }),
                seed_ref: "002 Fig. 7-11 (time vs stream offset; here the in-order offset the client application has, sampled every 10 ms, with the sender's loss detections marked as crosses instead of per-packet retransmissions)".into(),
                runs: format!(
                    "{} ({})",
                    runs_desc(name, Some(&link), Some(&first_workload), &used),
                    used.iter().map(|r| r.row.run_id.as_str()).collect::<Vec<_>>().join(", ")
                ),
            })));
        }
        // cwnd / RTT / queue of the baseline and of the first variant that exited early
        // of loss (or has a shadow exit).
        let mut picks: Vec<&RunData> = Vec::new();
        if let Some(b) = baseline.and_then(|b| lr.iter().find(|r| r.row.variant == b)) {
            picks.push(b);
        }
        if let Some(s) = lr.iter().find(|r| {
            Some(r.row.variant.as_str()) != baseline
                && (r.row.exit_reason.as_deref().is_some_and(|x| x != "loss")
                    || r.row.shadow_exit_at_s.is_some())
        }) {
            picks.push(s);
        }
        for r in picks {
            let dir = l.dir.join("runs").join(&r.row.run_id);
            let s = read_series(&dir, 0, 1500);
            if s.is_empty() {
                continue;
            }
            let ev = read_events(&dir, 0);
            let mut marks = Vec::new();
            if let Some(t) = ev.exit {
                marks.push(Marker {
                    at: t,
                    label: "exit".into(),
                    color: 2,
                });
            }
            if let Some(t) = ev.shadow_exit {
                marks.push(Marker {
                    at: t,
                    label: "shadow exit".into(),
                    color: 3,
                });
            }
            if let Some(t) = r.row.first_loss_detected_at_s {
                marks.push(Marker {
                    at: t,
                    label: "loss".into(),
                    color: 1,
                });
            }
            if let Some(t) = r.row.capacity_at_s {
                marks.push(Marker {
                    at: t,
                    label: "capacity".into(),
                    color: 6,
                });
            }
            let panel = |title: &str, y: &str, pts: Vec<(f64, f64)>, color: usize| Chart {
                title: title.into(),
                x_label: "time (s)".into(),
                y_label: y.into(),
                series: vec![Series::line("", pts, color)],
                vlines: marks.clone(),
                ..Chart::default()
            };
            let charts = vec![
                panel(
                    "congestion window",
                    "cwnd (MB)",
                    s.iter()
                        .map(|x| (x.time_s, x.cwnd_bytes as f64 / 1e6))
                        .collect(),
                    0,
                ),
                panel(
                    "RTT (latest sample)",
                    "RTT (s)",
                    s.iter()
                        .filter_map(|x| Some((x.time_s, x.latest_rtt_s?)))
                        .collect(),
                    4,
                ),
                panel(
                    "bottleneck queue",
                    "queue (MB)",
                    s.iter()
                        .map(|x| (x.time_s, x.queue_bytes as f64 / 1e6))
                        .collect(),
                    5,
                ),
            ];
            items.push(Item::Figure(Box::new(FigureEntry {
                id: format!(
                    "{tag}-{}-series-{}",
                    crate::plan::sanitize(&link),
                    crate::plan::sanitize(&r.row.variant)
                ),
                figure: Figure::Panels {
                    title: format!("{} on {link}, seed {}", r.row.variant, r.row.seed),
                    charts,
                },
                seed_ref:
                    "001 Fig. 4-5 (cwnd and RTT over time with the exit marked); 004 Fig. 6.9"
                        .into(),
                runs: format!("campaign {name}, run {}", r.row.run_id),
            })));
        }
    }
    items
}

#[cfg(test)]
mod tests;
