//! Time to deliver N MB (seeds 000 and 001): the median time over MB delivered, the times
//! and the runs that delivered within the cap at the marks (000 Fig. 10 and Table 4, 001
//! Fig. 6 and Table II), the savings against the baseline (000 Fig. 11, 001 Fig. 7-8), the
//! run-by-run comparison (001 Sec. IV) and the CDFs of the time at a mark (000 Fig. 12,
//! 001 Fig. 9). For downloads of at least 5 MB.

use super::{FigureEntry, Item, Loaded, Table, runs_desc, variant_runs};
use crate::analysis::{self, Saving};
use crate::claims::table::{self, DeliveredRow};
use crate::dataset::RunData;
use crate::plot::{Chart, Figure, Legend, Marker, Series, SeriesKind};

/// Downloads smaller than this have no delivery figures.
const MIN_BYTES: u64 = 5_000_000;

/// The items of every link and download workload of the clean runs.
pub(super) fn items(
    l: &Loaded,
    tag: &str,
    clean_runs: &[&RunData],
    baseline: Option<&str>,
) -> Vec<Item> {
    let mut items = Vec::new();
    for ((link, workload), runs) in
        analysis::group_by(clean_runs, |r| (r.row.link.clone(), r.row.workload.clone()))
    {
        let Some(bytes) = runs[0].row.bytes else {
            continue;
        };
        if runs[0].row.workload_kind == "timed" || bytes < MIN_BYTES {
            continue;
        }
        let g = Group::new(l, tag, &link, &workload, bytes, &runs);
        items.push(g.time_to_mb_figure());
        items.push(Item::Table(g.marks_table()));
        if let Some(base) = baseline.filter(|b| g.variants.iter().any(|v| v.as_str() == *b)) {
            items.extend(g.saving_items(base));
        }
        items.extend(g.cdf_figures());
        // The seed's runs were 200 MB downloads on the real link.
        let seed_mb = table::TABLE_4_MB[table::TABLE_4_MB.len() - 1];
        if link == table::REAL && bytes >= seed_mb * 1_000_000 {
            items.extend(g.delivered_figure(&table::TABLE_4, &table::TABLE_4_MB));
        }
    }
    items
}

/// Marks for a download of `bytes` without marks in the spec: 1/4, 1/2, 3/4 and all.
fn default_marks(bytes: u64) -> Vec<u64> {
    let mb = bytes / 1_000_000;
    let mut v: Vec<u64> = [mb / 4, mb / 2, mb * 3 / 4, mb]
        .into_iter()
        .filter(|m| *m > 0)
        .collect();
    v.dedup();
    v
}

/// The runs of one link and download workload, and what their figures need.
struct Group<'a> {
    name: &'a str,
    link: &'a str,
    runs: &'a [&'a RunData],
    /// The campaign's variants that have runs here, in spec order.
    variants: Vec<&'a String>,
    /// Every MB up to the download size.
    all_mb: Vec<u64>,
    /// MB marks of the tables.
    marks: Vec<u64>,
    /// MB marks of the CDFs and the run-by-run comparison.
    cdf_marks: Vec<u64>,
    /// Figure ids start with this.
    id_base: String,
    /// The runs, for captions.
    desc: String,
}

impl<'a> Group<'a> {
    fn new(
        l: &'a Loaded,
        tag: &str,
        link: &'a str,
        workload: &str,
        bytes: u64,
        runs: &'a [&'a RunData],
    ) -> Self {
        let max_mb = bytes / 1_000_000;
        let analysis = &l.meta.analysis;
        let marks = if analysis.marks_mb.is_empty() {
            default_marks(bytes)
        } else {
            analysis
                .marks_mb
                .iter()
                .copied()
                .filter(|m| *m <= max_mb)
                .collect()
        };
        let cdf_marks = if analysis.cdf_mb.is_empty() {
            let m = default_marks(bytes);
            m.iter().rev().take(2).rev().copied().collect()
        } else {
            analysis.cdf_mb.clone()
        };
        Group {
            name: &l.meta.name,
            link,
            runs,
            variants: l
                .meta
                .variants
                .iter()
                .filter(|v| runs.iter().any(|r| &r.row.variant == *v))
                .collect(),
            all_mb: (1..=max_mb).collect(),
            marks,
            cdf_marks,
            id_base: format!(
                "{tag}-{}-{}",
                crate::plan::sanitize(link),
                crate::plan::sanitize(workload)
            ),
            desc: runs_desc(&l.meta.name, Some(link), Some(workload), runs),
        }
    }

    fn figure(&self, id: &str, chart: Chart, seed_ref: impl Into<String>) -> Item {
        Item::Figure(Box::new(FigureEntry {
            id: format!("{}-{id}", self.id_base),
            figure: Figure::Chart(chart),
            seed_ref: seed_ref.into(),
            runs: self.desc.clone(),
        }))
    }

    /// Median time over MB delivered with the quartiles shaded (000 Fig. 10 / 001 Fig. 6).
    fn time_to_mb_figure(&self) -> Item {
        let mut series = Vec::new();
        for (i, v) in self.variants.iter().enumerate() {
            let vr = variant_runs(self.runs, v);
            let q = analysis::time_to_mb_quartiles(&vr, &self.all_mb);
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
        self.figure(
            "time-to-mb",
            Chart {
                title: format!("Median time to deliver N MB, {}", self.link),
                x_label: "MB delivered".into(),
                y_label: "time (s)".into(),
                series,
                ..Chart::default()
            },
            "000 Fig. 10 / 001 Fig. 6 (shading: 25% to 75% quartiles; each mark over the runs that delivered it)",
        )
    }

    /// Quartiles at the marks and runs within the cap (000 Table 4).
    fn marks_table(&self) -> Table {
        let mut t = Table {
            title: format!(
                "{}, {}: time to deliver N MB, median (q1-q3) s, and runs delivering N MB within the cap",
                self.name, self.link
            ),
            seed_ref: "000 Fig. 10 and Table 4 / 001 Fig. 6 and Table II".into(),
            columns: std::iter::once("variant".to_string())
                .chain(std::iter::once("runs".to_string()))
                .chain(self.marks.iter().map(|m| format!("{m} MB")))
                .collect(),
            rows: Vec::new(),
            note: format!(
                "Cells: median (q1-q3) seconds, then [runs that delivered the mark within the {} s cap].",
                self.runs[0].row.time_cap_s
            ),
        };
        for v in &self.variants {
            let vr = variant_runs(self.runs, v);
            let q = analysis::time_to_mb_quartiles(&vr, &self.marks);
            let within = analysis::delivered_within_cap(&vr, &self.marks);
            let mut row = vec![v.to_string(), vr.len().to_string()];
            for ((_, q), (_, n)) in q.iter().zip(within) {
                row.push(match q {
                    Some(q) => format!("{:.2} ({:.2}-{:.2}) [{n}]", q.median, q.q1, q.q3),
                    None => format!("- [{n}]"),
                });
            }
            t.rows.push(row);
        }
        t
    }

    /// Savings against `base` (000 Fig. 11, 001 Fig. 7-8) and the run-by-run comparison
    /// (001 Sec. IV); nothing if `base` is the only variant.
    fn saving_items(&self, base: &str) -> Vec<Item> {
        let br = variant_runs(self.runs, base);
        let others: Vec<&&String> = self
            .variants
            .iter()
            .filter(|v| v.as_str() != base)
            .collect();
        if others.is_empty() {
            return Vec::new();
        }
        let mut abs = Vec::new();
        let mut rel = Vec::new();
        let mut table = Table {
            title: format!("{}, {}: median saving against {base}", self.name, self.link),
            seed_ref: "000 Fig. 11 / 001 Fig. 7-8".into(),
            columns: std::iter::once("variant".to_string())
                .chain(self.marks.iter().map(|m| format!("{m} MB")))
                .chain(std::iter::once("largest saving".to_string()))
                .collect(),
            rows: Vec::new(),
            note: "Saving = baseline median - variant median (positive: the variant is faster), seconds and % of the baseline median.".into(),
        };
        for (i, v) in others.iter().enumerate() {
            let vr = variant_runs(self.runs, v);
            let s = analysis::median_savings(&br, &vr, &self.all_mb);
            abs.push(saving_series(v, &s, i + 1));
            rel.push(Series::line(
                v.as_str(),
                s.iter().map(|s| (s.mb as f64, s.saving_pct)).collect(),
                i + 1,
            ));
            table.rows.push(self.saving_row(v, &br, &vr, &s));
        }
        let zero = || Marker {
            at: 0.0,
            label: String::new(),
            color: 6,
        };
        let mut items = vec![
            self.figure(
                "saving",
                Chart {
                    title: format!("Median time saved against {base}, {}", self.link),
                    x_label: "MB delivered".into(),
                    y_label: "saving (s)".into(),
                    series: abs,
                    hlines: vec![zero()],
                    ..Chart::default()
                },
                "000 Fig. 11 / 001 Fig. 7 (shading: difference of the quartiles)",
            ),
            self.figure(
                "saving-pct",
                Chart {
                    title: format!("Median time saved against {base} in %, {}", self.link),
                    x_label: "MB delivered".into(),
                    y_label: "saving (% of the baseline median)".into(),
                    series: rel,
                    hlines: vec![zero()],
                    ..Chart::default()
                },
                "001 Fig. 8",
            ),
            Item::Table(table),
        ];
        items.extend(self.paired_table(base, &br, &others).map(Item::Table));
        items
    }

    /// A variant's savings at the marks and its largest saving.
    fn saving_row(
        &self,
        variant: &str,
        base_runs: &[&RunData],
        runs: &[&RunData],
        savings: &[Saving],
    ) -> Vec<String> {
        let at_marks = analysis::median_savings(base_runs, runs, &self.marks);
        let mut row = vec![variant.to_string()];
        for m in &self.marks {
            row.push(match at_marks.iter().find(|s| s.mb == *m) {
                Some(s) => format!("{:+.2} s ({:+.1}%)", s.saving_s, s.saving_pct),
                None => "-".into(),
            });
        }
        row.push(
            match savings
                .iter()
                .max_by(|a, b| a.saving_s.total_cmp(&b.saving_s))
            {
                Some(b) => format!(
                    "{:+.2} s ({:+.1}%) at {} MB",
                    b.saving_s, b.saving_pct, b.mb
                ),
                None => "-".into(),
            },
        );
        row
    }

    /// Each run against the baseline run of the same seed at the CDF marks.
    fn paired_table(
        &self,
        base: &str,
        base_runs: &[&RunData],
        others: &[&&String],
    ) -> Option<Table> {
        let mut pt = Table {
            title: format!(
                "{}, {}: run-by-run comparison with {base} (same seed)",
                self.name, self.link
            ),
            seed_ref: "001 Sec. IV on Fig. 9 (45% no difference, 40% faster, 15% slower at 150 MB)"
                .into(),
            columns: ["variant", "MB", "pairs", "within 0.5 s", "faster", "slower"]
                .map(String::from)
                .to_vec(),
            rows: Vec::new(),
            note: "Each run is compared with the baseline run of the same seed; 95 % Wilson intervals in brackets.".into(),
        };
        for v in others {
            let vr = variant_runs(self.runs, v);
            for m in &self.cdf_marks {
                if let Some(p) = analysis::paired_outcomes(base_runs, &vr, *m, 0.5) {
                    let share = |f: f64| analysis::share_text(p.count(f), p.pairs, 0, "%");
                    pt.rows.push(vec![
                        v.to_string(),
                        m.to_string(),
                        p.pairs.to_string(),
                        share(p.same),
                        share(p.faster),
                        share(p.slower),
                    ]);
                }
            }
        }
        (!pt.rows.is_empty()).then_some(pt)
    }

    /// CDFs of the time to deliver each CDF mark (000 Fig. 12 / 001 Fig. 9).
    fn cdf_figures(&self) -> Vec<Item> {
        let mut items = Vec::new();
        for m in &self.cdf_marks {
            let mut series = Vec::new();
            let mut labels = Vec::new();
            for (i, v) in self.variants.iter().enumerate() {
                let vr = variant_runs(self.runs, v);
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
            items.push(self.figure(
                &format!("cdf-{m}mb"),
                Chart {
                    title: format!("CDF of the time to deliver {m} MB, {}", self.link),
                    x_label: "time (s)".into(),
                    y_label: "fraction of runs".into(),
                    series,
                    y_range: Some((0.0, 1.02)),
                    ..Chart::default()
                },
                format!(
                    "000 Fig. 12 / 001 Fig. 9 (surviving runs in the legend: {})",
                    labels.join(", ")
                ),
            ));
        }
        items
    }
}

/// A point of a series and the band around it, `(x, low, high)`.
type BandedPoint = ((f64, f64), (f64, f64, f64));

/// A share of `k` in `n` at `x`, and its 95 % Wilson interval as a band point.
fn share_point(x: f64, k: usize, n: usize) -> Option<BandedPoint> {
    let (lo, hi) = analysis::wilson_interval(k, n, analysis::Z_95)?;
    Some(((x, k as f64 / n as f64), (x, lo, hi)))
}

impl Group<'_> {
    /// The share of runs delivering each mark within the time cap, ours beside the seed's
    /// (000 Table 4, for the link that stands for the real one), both with their 95 %
    /// Wilson intervals shaded: the seed's table as a distribution over MB, not only its
    /// 200 MB row. None without runs of the seed's variants.
    fn delivered_figure(&self, seed: &[DeliveredRow], marks_mb: &[u64]) -> Option<Item> {
        // The marks within this download, with their column in the seed's rows.
        let (columns, marks): (Vec<usize>, Vec<u64>) = marks_mb
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, m)| self.all_mb.contains(m))
            .unzip();
        let mut series = Vec::new();
        for (i, row) in seed.iter().enumerate() {
            let Some(v) = self.variants.iter().find(|v| v.as_str() == row.variant) else {
                continue;
            };
            let vr = variant_runs(self.runs, v);
            let (ours, ours_band): (Vec<_>, Vec<_>) = analysis::delivered_within_cap(&vr, &marks)
                .into_iter()
                .filter_map(|(mb, k)| share_point(mb as f64, k, vr.len()))
                .unzip();
            let (theirs, theirs_band): (Vec<_>, Vec<_>) = columns
                .iter()
                .zip(&marks)
                .filter_map(|(&j, &m)| share_point(m as f64, row.delivered[j], row.runs))
                .unzip();
            series.push(
                Series::line(format!("{v}, ours ({} runs)", vr.len()), ours, i)
                    .with_band(ours_band),
            );
            series.push(
                Series::line(
                    format!("{}, 000 Table 4 ({} runs)", row.seed_label, row.runs),
                    theirs,
                    i,
                )
                .with_kind(SeriesKind::Points)
                .with_band(theirs_band),
            );
        }
        if series.is_empty() || marks.is_empty() {
            return None;
        }
        let cap = self.runs[0].row.time_cap_s;
        Some(self.figure(
            "delivered",
            Chart {
                title: format!("Runs delivering N MB within {cap:.0} s, {}", self.link),
                x_label: "MB".into(),
                y_label: "share of runs".into(),
                series,
                y_range: Some((0.0, 1.02)),
                legend: Legend::LowerLeft,
                ..Chart::default()
            },
            "000 Table 4 / 001 Table II (lines: ours, points: the seed's dataset 1; \
             shading: 95 % Wilson intervals)",
        ))
    }
}

/// A variant's median saving over MB, the difference of the quartiles shaded.
fn saving_series(variant: &str, s: &[Saving], color: usize) -> Series {
    Series::line(
        variant,
        s.iter().map(|s| (s.mb as f64, s.saving_s)).collect(),
        color,
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
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivered_shares_stand_beside_the_seeds_with_their_intervals() {
        let dir = super::super::tests::tiny_campaign(
            r#"
name = "tiny-delivered"
repetitions = 2
[[link]]
preset = "thesis-terr"
[[variant]]
label = "classic"
cc = "cubic"
[[variant]]
label = "other"
cc = "newreno"
[[workload]]
kind = "download"
bytes = "6MB"
"#,
        );
        let l = super::super::load(&dir).unwrap();
        let runs: Vec<&RunData> = l.runs.iter().collect();
        let g = Group::new(
            &l,
            "t",
            "thesis-terr",
            &runs[0].row.workload,
            6_000_000,
            &runs,
        );
        let seed = [
            DeliveredRow {
                variant: "classic",
                seed_label: "baseline",
                runs: 10,
                delivered: [9, 8, 7, 6],
            },
            // Not a variant of this campaign: no series.
            DeliveredRow {
                variant: "search",
                seed_label: "SEARCH",
                runs: 10,
                delivered: [5, 5, 5, 5],
            },
        ];
        // 9 MB is beyond the download: left out.
        let Some(Item::Figure(entry)) = g.delivered_figure(&seed, &[1, 3, 6, 9]) else {
            panic!("no figure")
        };
        assert_eq!(entry.id, "t-thesis-terr-dl6MB-delivered");
        let Figure::Chart(chart) = &entry.figure else {
            panic!("not a chart")
        };
        assert_eq!(chart.series.len(), 2);
        let (ours, theirs) = (&chart.series[0], &chart.series[1]);
        assert_eq!(ours.name, "classic, ours (2 runs)");
        // Both runs deliver everything on this link; the interval of 2 of 2 is wide.
        assert_eq!(ours.points, vec![(1.0, 1.0), (3.0, 1.0), (6.0, 1.0)]);
        assert!(ours.band.iter().all(|b| b.1 < 0.5 && b.2 == 1.0));
        assert_eq!(theirs.name, "baseline, 000 Table 4 (10 runs)");
        assert_eq!(theirs.kind, SeriesKind::Points);
        assert_eq!(theirs.points, vec![(1.0, 0.9), (3.0, 0.8), (6.0, 0.7)]);
        assert!(
            theirs
                .band
                .iter()
                .zip(&theirs.points)
                .all(|(b, p)| b.1 < p.1 && p.1 < b.2)
        );
        // No variant of the seed's: no figure.
        assert!(g.delivered_figure(&seed[1..], &[1, 3]).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
