//! Slow-start exits (seeds 003, 000 and 001): exit classes against the capacity point and
//! the first loss (003 Table III), capacity, loss and exit times (003 Table II), the
//! exit-to-loss ratio (000 Fig. 8) and the cwnd reduction at the SEARCH exit (001 Fig.
//! 10). For runs with slow-start exits or losses.

use super::{
    FigureEntry, Item, Loaded, Table, is_shadow, mean_sd_str, pct, runs_desc, variant_runs,
};
use crate::analysis::{self, ExitClass, ExitSource};
use crate::claims::table;
use crate::dataset::RunData;
use crate::plot::{Chart, Figure, Legend, Marker, Series, SeriesKind};

pub(super) fn items(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let has_exit_info = runs
        .iter()
        .any(|r| r.row.exit_class.is_some() || r.row.shadow_exit_class.is_some());
    if !has_exit_info {
        return Vec::new();
    }
    let name = &l.meta.name;
    let mut classes = classes_table(name);
    let mut times = times_table(name);
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
                classes.rows.push(class_row(&link, &label, &vr, use_shadow));
                times.rows.push(time_row(&link, label, &vr, use_shadow));
            }
        }
    }
    let mut items = vec![Item::Table(classes), Item::Table(times)];
    items.extend(table_ii_figures(l, tag, runs));
    items.extend(exit_to_loss_figures(l, tag, runs));
    items.extend(cwnd_reduction_figure(l, tag, runs));
    items
}

fn classes_table(name: &str) -> Table {
    Table {
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
    }
}

fn times_table(name: &str) -> Table {
    Table {
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
    }
}

/// The class of a run whose shadow SEARCH never exited: late if a loss came, none if not.
fn no_exit_class(r: &RunData) -> Option<&'static str> {
    Some(if r.row.first_loss_detected_at_s.is_some() {
        "late"
    } else {
        "none"
    })
}

/// A row of the exit classes: ground truth, then the OWD heuristic's.
fn class_row(link: &str, label: &str, vr: &[&RunData], use_shadow: bool) -> Vec<String> {
    let (gt, owd) = if use_shadow {
        (
            analysis::class_counts(
                vr.iter()
                    .map(|r| r.row.shadow_exit_class.as_deref().or(no_exit_class(r))),
            ),
            analysis::class_counts(
                vr.iter()
                    .map(|r| r.row.owd_shadow_exit_class.as_deref().or(no_exit_class(r))),
            ),
        )
    } else {
        (
            analysis::class_counts(vr.iter().map(|r| r.row.exit_class.as_deref())),
            analysis::class_counts(vr.iter().map(|r| r.row.owd_exit_class.as_deref())),
        )
    };
    use ExitClass::{Chokepoint, Early, Late};
    let owd_cell = |c| {
        if owd.total() == 0 {
            "-".to_string()
        } else {
            pct(owd.pct(c))
        }
    };
    vec![
        link.to_string(),
        label.to_string(),
        gt.total().to_string(),
        pct(gt.pct(Early)),
        pct(gt.pct(Late)),
        pct(gt.pct(Chokepoint)),
        pct(gt.pct(ExitClass::None)),
        owd_cell(Early),
        owd_cell(Late),
        owd_cell(Chokepoint),
    ]
}

/// A row of the times: with the ground-truth capacity point, then the heuristic's.
fn time_row(link: &str, label: String, vr: &[&RunData], use_shadow: bool) -> Vec<String> {
    let t = analysis::exit_times(
        vr,
        ExitSource {
            shadow: use_shadow,
            heuristic_capacity: false,
        },
    );
    let th = analysis::exit_times(
        vr,
        ExitSource {
            shadow: use_shadow,
            heuristic_capacity: true,
        },
    );
    vec![
        link.to_string(),
        label,
        t.runs.to_string(),
        mean_sd_str(t.capacity_s),
        mean_sd_str(t.loss_s),
        mean_sd_str(t.exit_s),
        t.timely_pct.map_or("-".into(), pct),
        mean_sd_str(th.capacity_s),
        th.timely_pct.map_or("-".into(), pct),
    ]
}

/// Per link that stands for a network of seed 003 Table II, the CDFs of the capacity,
/// first-loss and shadow exit times of its shadow runs beside the seed's. The seed reports
/// a mean and a standard deviation only, so its distribution is drawn as the normal with
/// those (issue 13: distributions, not only means).
pub(super) fn table_ii_figures(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let mut items = Vec::new();
    for (link, lr) in analysis::group_by(runs, |r| r.row.link.clone()) {
        let Some(&(net, _, capacity, loss, exit, _)) = table::table_ii_row(&link) else {
            continue;
        };
        let Some(v) = l
            .meta
            .variants
            .iter()
            .find(|v| variant_runs(&lr, v).iter().any(|r| is_shadow(r)))
        else {
            continue;
        };
        let vr = variant_runs(&lr, v);
        let s = analysis::exit_samples(
            &vr,
            ExitSource {
                shadow: true,
                heuristic_capacity: false,
            },
        );
        let mut series = Vec::new();
        for (i, (what, ours, (mean, sd))) in [
            ("capacity", &s.capacity_s, capacity),
            ("first loss", &s.loss_s, loss),
            ("SEARCH exit", &s.exit_s, exit),
        ]
        .into_iter()
        .enumerate()
        {
            if !ours.is_empty() {
                series.push(
                    Series::line(
                        format!("{what}, ours ({} runs)", ours.len()),
                        analysis::cdf(ours),
                        i,
                    )
                    .with_kind(SeriesKind::Step),
                );
            }
            series.push(Series::line(
                format!("{what}, 003 ({mean} s, sd {sd})"),
                // Times before the download began are not drawn.
                analysis::normal_cdf(mean, sd, 61)
                    .into_iter()
                    .filter(|p| p.0 >= 0.0)
                    .collect(),
                i,
            ));
        }
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-{}-table-ii", crate::plan::sanitize(&link)),
            figure: Figure::Chart(Chart {
                title: format!("Capacity, first loss and exit times, {link} ({v} [shadow])"),
                x_label: "time (s)".into(),
                y_label: "fraction of runs".into(),
                series,
                y_range: Some((0.0, 1.02)),
                ..Chart::default()
            }),
            seed_ref: format!(
                "003 Table II, {net}: steps are our runs, smooth lines the normal with the \
                 seed's mean and standard deviation (the seed gives no more of its \
                 distribution)"
            ),
            runs: runs_desc(&l.meta.name, Some(&link), None, &vr),
        })));
    }
    items
}

/// Per link, the CDF of the exit-to-loss ratio of each variant that has one (000 Fig. 8).
pub(super) fn exit_to_loss_figures(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let mut items = Vec::new();
    for (link, lr) in analysis::group_by(runs, |r| r.row.link.clone()) {
        let mut series = Vec::new();
        let mut used: Vec<&RunData> = Vec::new();
        for (i, v) in l.meta.variants.iter().enumerate() {
            let vr = variant_runs(&lr, v);
            // Runs of SEARCH with a loss and no exit before it (none at all, or the
            // loss's own) count as 0, loss at exit, as 000 Fig. 8's "loss before SEARCH
            // would exit" and the claim count them.
            let ratios: Vec<f64> = vr
                .iter()
                .filter(|r| r.row.cc.to_ascii_lowercase().contains("search"))
                .filter_map(|r| {
                    let ratio = if is_shadow(r) {
                        r.row.shadow_exit_to_loss_ratio
                    } else if r.row.exit_reason.as_deref().is_some_and(|x| x != "loss") {
                        r.row.exit_to_loss_ratio
                    } else {
                        None
                    };
                    ratio.or(r.row.first_loss_detected_at_s.map(|_| 0.0))
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let shadow = vr.iter().any(|r| is_shadow(r));
            series.push(
                Series::line(
                    format!(
                        "{v}{} ({} runs with a loss)",
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
        if link == table::REAL {
            // The seed's two shares as points of its CDF: at or below 0 (loss first) and
            // up to 1 (all but the exits more than one RTT ahead).
            let (lost_first, over_rtt) = table::FIG_8;
            series.push(
                Series::line(
                    format!(
                        "000 Fig. 8, real link: {:.0} % at or below 0, {:.0} % above 1",
                        lost_first * 100.0,
                        over_rtt * 100.0
                    ),
                    vec![(0.0, lost_first), (1.0, 1.0 - over_rtt)],
                    6,
                )
                .with_kind(SeriesKind::Points),
            );
        }
        items.push(Item::Figure(Box::new(FigureEntry {
            id: format!("{tag}-{}-exit-to-loss", crate::plan::sanitize(&link)),
            figure: Figure::Chart(Chart {
                title: format!("Exit-to-loss ratio, {link}"),
                x_label: "(first loss - SEARCH exit) / RTT at exit".into(),
                y_label: "fraction of runs".into(),
                series,
                vlines: vec![
                    Marker {
                        at: 0.0,
                        label: "loss at exit".into(),
                        color: 6,
                    },
                    Marker {
                        at: 1.0,
                        label: "1 RTT".into(),
                        color: 6,
                    },
                ],
                y_range: Some((0.0, 1.02)),
                // The markers' labels sit at the top left.
                legend: Legend::LowerRight,
                ..Chart::default()
            }),
            seed_ref: format!(
                "000 Fig. 8 (shadow mode on the real link: {:.0}% of clean runs lose a packet \
                 before SEARCH would exit, {:.0}% exit more than one RTT before loss; runs \
                 with a loss and no exit before it are drawn at 0)",
                table::FIG_8.0 * 100.0,
                table::FIG_8.1 * 100.0
            ),
            runs: runs_desc(&l.meta.name, Some(&link), None, &used),
        })));
    }
    items
}

/// The CDF of the cwnd reduction ratio per link and variant that lowers cwnd at its exit
/// (001 Fig. 10).
fn cwnd_reduction_figure(l: &Loaded, tag: &str, runs: &[&RunData]) -> Option<Item> {
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
    if series.is_empty() {
        return None;
    }
    Some(Item::Figure(Box::new(FigureEntry {
        id: format!("{tag}-cwnd-reduction"),
        figure: Figure::Chart(Chart {
            title: "cwnd reduction at the SEARCH exit".into(),
            x_label: "(cwnd before - cwnd after) / cwnd before".into(),
            y_label: "fraction of runs".into(),
            series,
            vlines: vec![Marker {
                at: 0.3,
                label: "CUBIC beta 0.3".into(),
                color: 6,
            }],
            y_range: Some((0.0, 1.02)),
            ..Chart::default()
        }),
        seed_ref:
            "001 Fig. 10 (SEARCH's cwnd lowering removes less than CUBIC's multiplicative decrease)"
                .into(),
        runs: runs_desc(&l.meta.name, None, None, &used),
    })))
}
