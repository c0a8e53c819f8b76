//! Single runs in detail, from their series.csv and events.jsonl: the time-offset plot of
//! the first repetition of every variant (002 Fig. 7-11) and cwnd / RTT / queue over time
//! with the exit, loss and capacity point marked (001 Fig. 4-5, 004 Fig. 6.9). Always
//! shown, for the first four links.

use std::path::Path;

use satquic_run::record::SeriesRow;

use super::{FigureEntry, Item, Loaded, runs_desc};
use crate::analysis;
use crate::dataset::RunData;
use crate::plot::{Chart, Figure, Marker, Series, SeriesKind};

/// Links shown, at most.
const LINKS: usize = 4;
/// Rows of a run's series drawn, at most.
const SERIES_ROWS: usize = 1500;

pub(super) fn items(l: &Loaded, tag: &str, runs: &[&RunData], baseline: Option<&str>) -> Vec<Item> {
    let mut items = Vec::new();
    let finished: Vec<&RunData> = runs
        .iter()
        .copied()
        .filter(|r| !matches!(r.row.status.as_str(), "failed" | "timeout"))
        .collect();
    for (link, lr) in analysis::group_by(&finished, |r| r.row.link.clone())
        .into_iter()
        .take(LINKS)
    {
        let first_workload = lr[0].row.workload.clone();
        let lr: Vec<&RunData> = lr
            .into_iter()
            .filter(|r| r.row.workload == first_workload)
            .collect();
        items.extend(time_offset_figure(l, tag, &link, &first_workload, &lr));
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
        items.extend(
            picks
                .into_iter()
                .filter_map(|r| series_figure(l, tag, &link, r)),
        );
    }
    items
}

fn run_dir(l: &Loaded, r: &RunData) -> std::path::PathBuf {
    l.dir.join("runs").join(&r.row.run_id)
}

/// Data delivered over time of the first run of every variant, losses as crosses.
fn time_offset_figure(
    l: &Loaded,
    tag: &str,
    link: &str,
    workload: &str,
    lr: &[&RunData],
) -> Option<Item> {
    let mut series = Vec::new();
    let mut used = Vec::new();
    for (i, v) in l.meta.variants.iter().enumerate() {
        let Some(r) = lr.iter().find(|r| &r.row.variant == v) else {
            continue;
        };
        let dir = run_dir(l, r);
        let s = read_series(&dir, 0, SERIES_ROWS);
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
    if series.is_empty() {
        return None;
    }
    Some(Item::Figure(Box::new(FigureEntry {
        id: format!("{tag}-{}-time-offset", crate::plan::sanitize(link)),
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
            runs_desc(&l.meta.name, Some(link), Some(workload), &used),
            used.iter().map(|r| r.row.run_id.as_str()).collect::<Vec<_>>().join(", ")
        ),
    })))
}

/// Panels of cwnd, RTT and bottleneck queue over time of one run, with its exit, shadow
/// exit, first loss and capacity point marked; `None` without a series.
fn series_figure(l: &Loaded, tag: &str, link: &str, r: &RunData) -> Option<Item> {
    let dir = run_dir(l, r);
    let s = read_series(&dir, 0, SERIES_ROWS);
    if s.is_empty() {
        return None;
    }
    let marks = run_marks(r, &read_events(&dir, 0));
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
    Some(Item::Figure(Box::new(FigureEntry {
        id: format!(
            "{tag}-{}-series-{}",
            crate::plan::sanitize(link),
            crate::plan::sanitize(&r.row.variant)
        ),
        figure: Figure::Panels {
            title: format!("{} on {link}, seed {}", r.row.variant, r.row.seed),
            charts,
        },
        seed_ref: "001 Fig. 4-5 (cwnd and RTT over time with the exit marked); 004 Fig. 6.9".into(),
        runs: format!("campaign {}, run {}", l.meta.name, r.row.run_id),
    })))
}

/// The exit, shadow exit, first loss and capacity point of a run, as vertical lines.
fn run_marks(r: &RunData, ev: &RunEvents) -> Vec<Marker> {
    let mark = |at: Option<f64>, label: &str, color: usize| {
        at.map(|at| Marker {
            at,
            label: label.into(),
            color,
        })
    };
    [
        mark(ev.exit, "exit", 2),
        mark(ev.shadow_exit, "shadow exit", 3),
        mark(r.row.first_loss_detected_at_s, "loss", 1),
        mark(r.row.capacity_at_s, "capacity", 6),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Rows of a run's series.csv for one flow, thinned to at most `max` rows.
fn read_series(dir: &Path, flow: u32, max: usize) -> Vec<SeriesRow> {
    let Ok(mut r) = csv::Reader::from_path(dir.join("series.csv")) else {
        return Vec::new();
    };
    let rows: Vec<SeriesRow> = r
        .deserialize::<SeriesRow>()
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
    let Ok(text) =
        satquic_link::file::read_to_string(&dir.join("events.jsonl"), crate::files::RUN_LOG)
    else {
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
