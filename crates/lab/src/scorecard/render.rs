//! The scorecard's screen table and its HTML page (plain HTML and SVG, no script).

use super::{Card, Measures, RegimeCard, ScenarioResult};

/// The one-screen table: a row per regime, a column per spec (its headline and verdict),
/// the ratio of each further spec's figure to the first's, the references and the target.
pub fn table(card: &Card) -> String {
    let mut out = String::new();
    let seed = match card.seed {
        1 => String::new(),
        n => format!(", seed {n}"),
    };
    out += &format!("satquic scorecard ({} set{seed})\n", card.set);
    for r in &card.regimes {
        out += &format!("\n{}  [target: {} ({})]\n", r.name, r.target, r.source);
        let first = card.specs.first().and_then(|s| r.verdicts.get(s));
        for spec in &card.specs {
            let Some(v) = r.verdicts.get(spec) else {
                continue;
            };
            let ratio = match (v.figure, first.and_then(|f| f.figure)) {
                (Some(a), Some(b)) if spec != &card.specs[0] && b != 0.0 => {
                    format!("  ({:.3} x the first)", a / b)
                }
                _ => String::new(),
            };
            out += &format!(
                "  {:<28} {:<16} {}{}\n  {:<28} {:<16} {}\n",
                spec, v.verdict, v.headline, ratio, "", "", v.references
            );
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A cell's value: the candidate's time over the reference (the limit, picoquic, the
/// faster solo reference), or the pair's other-flow share.
fn cell(r: &RegimeCard, s: &ScenarioResult, label: &str) -> Option<f64> {
    let m: &Measures = s.runs.get(label)?;
    if s.kind == "pair" {
        let k = if s.name.contains("-latecomer-") {
            "incumbent_share"
        } else {
            "latecomer_share"
        };
        return m.get(k).copied();
    }
    if matches!(s.kind.as_str(), "beam" | "rpm") {
        // The objects' median over the reference's: cubic's bulk flows (beam), the faster
        // of cubic's and bbr3's objects (rpm).
        let median = |m: &Measures| m.get("object_median_s").copied();
        let reference = s
            .runs
            .iter()
            .filter(|(l, _)| l.as_str() == "cubic" || s.kind == "rpm" && l.as_str() == "bbr3")
            .filter_map(|(_, m)| median(m))
            .reduce(f64::min)?;
        return Some(median(m)? / reference);
    }
    let t = m.get("completion_s").copied()?;
    let reference = match r.name.as_str() {
        "geo-lossless" => s.picoquic_s.or(s.limit_s),
        "geo-loss" => s.limit_s,
        "resumption" => m.get("first_completion_s").copied(),
        _ => s
            .runs
            .iter()
            .filter(|(l, _)| l.as_str() == "cubic" || l.as_str() == "bbr3")
            .filter_map(|(_, m)| m.get("completion_s").copied())
            .reduce(f64::min)
            .or(s.limit_s),
    }?;
    Some(t / reference)
}

fn color(v: Option<f64>, share: bool) -> &'static str {
    match v {
        None => "#bbbbbb",
        Some(v) if share => {
            if v >= 0.45 {
                "#2e7d32"
            } else if v >= 0.3 {
                "#f9a825"
            } else {
                "#c62828"
            }
        }
        Some(v) if v <= 1.0 => "#2e7d32",
        Some(v) if v <= 1.1 => "#9ccc65",
        Some(v) if v <= 1.5 => "#f9a825",
        Some(_) => "#c62828",
    }
}

fn panel(card: &Card, r: &RegimeCard) -> String {
    let mut h = format!(
        "<section class=\"panel\" id=\"panel-{0}\"><h2>{0}</h2><p>Target: {1} <small>({2})</small></p><ul>",
        esc(&r.name),
        esc(&r.target),
        esc(&r.source)
    );
    for spec in &card.specs {
        if let Some(v) = r.verdicts.get(spec) {
            h += &format!(
                "<li><b>{}</b>: {} — {}; {}</li>",
                esc(spec),
                esc(&v.verdict),
                esc(&v.headline),
                esc(&v.references)
            );
        }
    }
    h += "</ul>";
    // A heatmap: a row per spec, a cell per scenario, coloured by its ratio (or share).
    let cw = 18;
    let n = r.scenarios.len().max(1);
    let width = 160 + n * cw;
    let height = 20 + card.specs.len() * 22;
    h += &format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">",
        esc(&r.name)
    );
    for (row, spec) in card.specs.iter().enumerate() {
        let y = 10 + row * 22;
        h += &format!(
            "<text x=\"0\" y=\"{}\" font-size=\"11\">{}</text>",
            y + 14,
            esc(&truncate(spec, 24))
        );
        for (i, s) in r.scenarios.iter().enumerate() {
            let label = s
                .runs
                .keys()
                .find(|l| {
                    l.as_str() == spec
                        || l.ends_with(&format!("|{spec}")) && s.name.contains("latecomer")
                        || l.starts_with(&format!("{spec}|")) && !s.name.contains("latecomer")
                })
                .cloned()
                .unwrap_or_default();
            let v = cell(r, s, &label);
            h += &format!(
                "<rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"18\" fill=\"{}\"><title>{}: {}</title></rect>",
                160 + i * cw,
                cw - 2,
                color(v, s.kind == "pair"),
                esc(&s.name),
                v.map_or("-".into(), |v| format!("{v:.3}"))
            );
        }
    }
    h += "</svg>";
    h += "<table><tr><th>scenario</th><th>limit s</th><th>picoquic s</th><th>runs</th></tr>";
    for s in &r.scenarios {
        let runs = s
            .runs
            .iter()
            .map(|(l, m)| {
                let vals = m
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("<b>{}</b>: {}", esc(l), esc(&vals))
            })
            .collect::<Vec<_>>()
            .join("<br>");
        h += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{runs}</td></tr>",
            esc(&s.name),
            s.limit_s.map_or("-".into(), |x| format!("{x:.3}")),
            s.picoquic_s.map_or("-".into(), |x| format!("{x:.3}"))
        );
    }
    h + "</table></section>\n"
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).collect::<String>() + "…"
    }
}

/// `scorecard.html`: one panel per regime.
pub fn html(card: &Card) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>satquic scorecard</title><style>body{font-family:sans-serif;margin:1em}section{border:1px solid #ccc;padding:.5em;margin:.5em 0}table{border-collapse:collapse;font-size:11px}td,th{border:1px solid #ddd;padding:2px 4px;vertical-align:top}</style></head><body>\n",
    );
    h += &format!(
        "<h1>satquic scorecard</h1><p>Set: {} (seed {}); specs: {}; binary sha256 {}. Cells: the candidate's time over picoquic's best or the limit (GEO), the first connection (resumption), the faster of cubic and bbr3 (start-up, LEO); the objects' median completion time over cubic's bulk flows' (the busy beam) or over the faster of cubic's and bbr3's objects beside the same bulk flow (LEO responsiveness); the other flow's share (pairs). Green at most 1 (pairs: at least 0.45).</p>\n",
        esc(&card.set),
        card.seed,
        esc(&card.specs.join(", ")),
        esc(&card.binary_sha256)
    );
    for r in &card.regimes {
        h += &panel(card, r);
    }
    h + "</body></html>\n"
}
