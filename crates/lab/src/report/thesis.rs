//! Seed 004 (the thesis): bulk goodput over buffer size x loss rate for links swept over
//! `buffer` (004 A1, Fig. 6.6-6.8), and the fairness of parallel flows (004 Eq. 6.3, Fig.
//! 6.11-6.13) for multi-flow workloads: a table per run, and Jain's index over time from
//! the runs' per-flow series (two flows of one controller, BBR against CUBIC, latecomers).

use std::path::Path;

use super::{FigureEntry, Item, Loaded, Table, mbps, pct, runs_desc, variant_runs};
use crate::analysis;
use crate::dataset::RunData;
use crate::plot::{Chart, Figure, Marker, Series, SeriesKind};
use satquic_run::record::SeriesRow;

/// Width of the windows Jain's index over time is computed on, s: long enough for several
/// 600 ms round trips on thesis-sat, short enough to show a latecomer's first 20 s.
pub(crate) const JFI_WINDOW_S: f64 = 5.0;

/// The table and panels of mean goodput over buffer x PLR; nothing without swept runs.
pub(super) fn buffer_plr_items(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let swept: Vec<&RunData> = runs
        .iter()
        .copied()
        .filter(|r| r.row.buffer_bdp.is_some())
        .collect();
    if swept.is_empty() {
        return Vec::new();
    }
    let mut plrs: Vec<f64> = swept.iter().map(|r| r.row.plr).collect();
    plrs.sort_by(f64::total_cmp);
    plrs.dedup();
    let mut buffers: Vec<f64> = swept.iter().filter_map(|r| r.row.buffer_bdp).collect();
    buffers.sort_by(f64::total_cmp);
    buffers.dedup();
    let mut charts = Vec::new();
    let mut table = Table {
        title: format!(
            "{}: mean goodput (Mbit/s) over buffer size and loss",
            l.meta.name
        ),
        seed_ref: "004 Fig. 6.6-6.8 (A1)".into(),
        columns: vec!["link family".into(), "PLR".into(), "variant".into()],
        rows: Vec::new(),
        note: String::new(),
    };
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
                let (row, pts) = goodput_over_buffers(&source, *plr, v, &vr, &buffers);
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
    vec![
        Item::Table(table),
        Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-goodput-buffer-plr"),
            figure: Figure::Panels {
                title: "Bulk download goodput over buffer size, per loss rate".into(),
                charts,
            },
            seed_ref: "004 Fig. 6.6 (PLR 0), 6.7 (0.1%), 6.8 (1%)".into(),
            runs: runs_desc(&l.meta.name, None, None, &swept),
        })),
    ]
}

/// A variant's mean goodput at each buffer size: the table row and the chart's points
/// (Mbit/s; buffers without runs are `-` and no point).
fn goodput_over_buffers(
    source: &str,
    plr: f64,
    variant: &str,
    runs: &[&RunData],
    buffers: &[f64],
) -> (Vec<String>, Vec<(f64, f64)>) {
    let mut row = vec![
        source.to_string(),
        format!("{}%", plr * 100.0),
        variant.to_string(),
    ];
    let mut pts = Vec::new();
    for b in buffers {
        let g: Vec<f64> = runs
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
    (row, pts)
}

/// Jain's index and utilization of multi-flow runs per link, variant and workload;
/// `None` without multi-flow runs.
pub(super) fn fairness_table(l: &Loaded, all: &[&RunData]) -> Option<Table> {
    let multi: Vec<&RunData> = all.iter().copied().filter(|r| r.row.flows > 1).collect();
    if multi.is_empty() {
        return None;
    }
    let mut t = Table {
        title: format!("{}: fairness of parallel flows", l.meta.name),
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
    Some(t)
}

/// Jain's index over time of the multi-flow runs, one panel per link and workload and one
/// line per variant (mean over its runs, window by window); `None` without multi-flow runs
/// with a series.
pub(super) fn jain_over_time_item(l: &Loaded, tag: &str, all: &[&RunData]) -> Option<Item> {
    let figure = jain_over_time_figure(l, all)?;
    let multi: Vec<&RunData> = all.iter().copied().filter(|r| r.row.flows > 1).collect();
    Some(Item::Figure(Box::new(FigureEntry {
        id: format!("{tag}-jain-over-time"),
        figure,
        seed_ref: "004 Fig. 6.11 (two flows), 6.14 (BBR against CUBIC), 6.16 (latecomers)".into(),
        runs: runs_desc(&l.meta.name, None, None, &multi),
    })))
}

/// The figure of [`jain_over_time_item`]: each chart's series are the variants' mean
/// index per [`JFI_WINDOW_S`] window, points at the window's end (s).
pub(crate) fn jain_over_time_figure(l: &Loaded, all: &[&RunData]) -> Option<Figure> {
    let multi: Vec<&RunData> = all
        .iter()
        .copied()
        .filter(|r| r.row.flows > 1 && r.row.status != "failed")
        .collect();
    let mut charts = Vec::new();
    for ((link, workload), runs) in
        analysis::group_by(&multi, |r| (r.row.link.clone(), r.row.workload.clone()))
    {
        let mut series = Vec::new();
        for (i, v) in l.meta.variants.iter().enumerate() {
            let per_run: Vec<Vec<(f64, f64)>> = variant_runs(&runs, v)
                .iter()
                .map(|r| run_jain_over_time(&l.dir.join("runs").join(&r.row.run_id), r))
                .filter(|p| !p.is_empty())
                .collect();
            let points = mean_by_time(&per_run);
            if !points.is_empty() {
                series.push(Series::line(v.as_str(), points, i));
            }
        }
        if series.is_empty() {
            continue;
        }
        let first = &runs[0].row;
        let mut vlines = Vec::new();
        if first.stagger_s > 0.0 {
            vlines = (1..first.flows)
                .map(|f| Marker {
                    at: first.stagger_s * f64::from(f),
                    label: format!("flow {} starts", f + 1),
                    color: 6,
                })
                .collect();
        }
        charts.push(Chart {
            title: format!("{link}, {workload}: {} flows", first.flows),
            x_label: "time (s)".into(),
            y_label: format!("Jain's index per {JFI_WINDOW_S} s"),
            series,
            vlines,
            y_range: Some((0.0, 1.05)),
            ..Chart::default()
        });
    }
    (!charts.is_empty()).then(|| Figure::Panels {
        title: "Jain's index of the flows' goodputs over time".into(),
        charts,
    })
}

/// One run's index over time from its series.csv; empty when it has none.
fn run_jain_over_time(dir: &Path, run: &RunData) -> Vec<(f64, f64)> {
    let Ok(mut reader) = csv::Reader::from_path(dir.join("series.csv")) else {
        return Vec::new();
    };
    let flows = run.row.flows as usize;
    let mut delivered: Vec<Vec<(f64, u64)>> = vec![Vec::new(); flows];
    for row in reader.deserialize::<SeriesRow>().flatten() {
        if let Some(samples) = delivered.get_mut(row.flow as usize) {
            samples.push((row.time_s, row.delivered_bytes));
        }
    }
    let until = delivered
        .iter()
        .filter_map(|s| s.last().map(|x| x.0))
        .fold(0.0, f64::max);
    let active: Vec<(f64, f64)> = (0..flows)
        .map(|f| {
            let start = run.row.stagger_s * f as f64;
            let end = run.row.duration_s.map_or(until, |d| (start + d).min(until));
            (start, end)
        })
        .collect();
    analysis::jain_over_time(&delivered, &active, JFI_WINDOW_S, until)
}

/// The mean of several runs' `(time, value)` points at each time that any has.
fn mean_by_time(per_run: &[Vec<(f64, f64)>]) -> Vec<(f64, f64)> {
    let mut times: Vec<f64> = per_run.iter().flatten().map(|p| p.0).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
        .into_iter()
        .filter_map(|t| {
            let v: Vec<f64> = per_run
                .iter()
                .flatten()
                .filter(|p| p.0 == t)
                .map(|p| p.1)
                .collect();
            analysis::mean_sd(&v).map(|(m, _)| (t, m))
        })
        .collect()
}
