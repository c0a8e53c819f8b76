//! Goodput and efficiency (seed 002): mean and max goodput and efficiency per link (002
//! Table II), per link and variant, the efficiency CDF (002 Fig. 3) and the variant x link
//! matrix (002 Fig. 4). Always shown; seed 004's goodput over buffer x loss follows in
//! the same section ([`super::thesis`]).

use super::{FigureEntry, Item, Loaded, Table, mbps, pct, runs_desc, thesis, variant_runs};
use crate::analysis::{self, Quartiles};
use crate::dataset::RunData;
use crate::plot::{Chart, Figure, Heatmap, Series, SeriesKind};

pub(super) fn items(l: &Loaded, tag: &str, runs: &[&RunData]) -> Vec<Item> {
    let links = analysis::group_by(runs, |r| r.row.link.clone());
    let (per_variant, heat) = variant_table(l, &links);
    let desc = runs_desc(&l.meta.name, None, None, runs);
    let mut items = vec![
        Item::Table(link_table(&l.meta.name, &links)),
        Item::Table(per_variant),
        efficiency_cdf(tag, &links, &desc),
    ];
    if links.len() * l.meta.variants.len() > 1 {
        items.push(efficiency_heatmap(l, tag, &links, heat, desc));
    }
    items.extend(thesis::buffer_plr_items(l, tag, runs));
    items
}

type Links<'a> = [(String, Vec<&'a RunData>)];

/// All variants pooled, per link (002 Table II).
fn link_table(name: &str, links: &Links) -> Table {
    let mut t = Table {
        title: format!("{name}: goodput and efficiency per link (all variants pooled)"),
        seed_ref: "002 Table II (mean / max goodput and efficiency = goodput / link rate, Eq. 1)".into(),
        columns: ["link", "runs", "unfinished", "mean Mbit/s", "mean eff.", "max Mbit/s", "max eff."]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
        note: "Goodput of flow 0: delivered bytes x 8 / time to completion (or to the cap). Unfinished: capped, failed or timed out.".into(),
    };
    for (link, lr) in links {
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
    t
}

/// Per link and variant (002 Table II, Fig. 4), and the mean efficiencies as a variant x
/// link matrix for the heatmap.
fn variant_table(l: &Loaded, links: &Links) -> (Table, Vec<Vec<Option<f64>>>) {
    let mut tv = Table {
        title: format!("{}: goodput per link and variant", l.meta.name),
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
    (tv, heat)
}

/// The CDF of the efficiency per link, all variants (002 Fig. 3).
fn efficiency_cdf(tag: &str, links: &Links, desc: &str) -> Item {
    efficiency_cdf_figure(
        format!("{tag}-efficiency-cdf"),
        "Efficiency (goodput / link rate) per link, all variants",
        "efficiency",
        links.iter().map(|(link, lr)| {
            let e = lr.iter().filter_map(|r| r.row.efficiency).collect();
            (link.clone(), e)
        }),
        desc.to_string(),
    )
}

/// A figure of efficiency CDFs (002 Fig. 3), one step line per named group of
/// efficiencies.
pub(super) fn efficiency_cdf_figure(
    id: String,
    title: &str,
    x_label: &str,
    groups: impl Iterator<Item = (String, Vec<f64>)>,
    runs: String,
) -> Item {
    let series = groups
        .enumerate()
        .map(|(i, (name, e))| Series::line(name, analysis::cdf(&e), i).with_kind(SeriesKind::Step))
        .collect();
    Item::Figure(Box::new(FigureEntry {
        id,
        figure: Figure::Chart(Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: "fraction of runs".into(),
            series,
            x_range: Some((0.0, 1.05)),
            y_range: Some((0.0, 1.02)),
            ..Chart::default()
        }),
        seed_ref: "002 Fig. 3".into(),
        runs,
    }))
}

/// The mean efficiency of each variant on each link (002 Fig. 4's result matrix).
fn efficiency_heatmap(
    l: &Loaded,
    tag: &str,
    links: &Links,
    heat: Vec<Vec<Option<f64>>>,
    desc: String,
) -> Item {
    Item::Figure(Box::new(FigureEntry {
        id: format!("{tag}-efficiency-heatmap"),
        figure: Figure::Heatmap(Heatmap {
            title: "Mean efficiency, variant x link".into(),
            columns: links.iter().map(|(l, _)| short(l, 26)).collect(),
            rows: l.meta.variants.iter().map(|v| short(v, 32)).collect(),
            values: heat,
            range: (0.0, 1.0),
            percent: true,
        }),
        seed_ref: "002 Fig. 4 (result matrix; our variants in place of the implementation pairs)"
            .into(),
        runs: desc,
    }))
}

/// `s` cut to `n` characters with an ellipsis.
fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}
