use super::*;
use crate::exec::{ExecOptions, run_campaign};
use crate::plan::Plan;
use crate::spec::CampaignSpec;

/// Runs a small campaign (TOML) in a fresh temporary directory named after it; the
/// caller removes the directory.
pub(super) fn tiny_campaign(toml: &str) -> std::path::PathBuf {
    let spec = CampaignSpec::from_toml_str(toml, None).unwrap();
    let plan = Plan::new(&spec).unwrap();
    let dir =
        std::env::temp_dir().join(format!("satquic-lab-{}-{}", spec.name, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    run_campaign(&spec, &plan, &dir, &ExecOptions::default(), &|_| {}).unwrap();
    dir
}

#[test]
fn report_of_a_tiny_campaign_has_every_expected_figure() {
    let dir = tiny_campaign(
        r#"
name = "tiny-report"
repetitions = 2
[[link]]
preset = "thesis-terr"
params = { buffer = [2, 4], plr = 0 }
[[variant]]
label = "classic"
cc = "cubic"
[[variant]]
label = "shadow"
cc = "cubic+search:shadow"
[[variant]]
label = "search"
cc = "cubic+search:lower-cwnd"
[[workload]]
kind = "download"
bytes = "6MB"
"#,
    );
    let index = write_report(std::slice::from_ref(&dir), &dir.join("report"), None).unwrap();
    let html = std::fs::read_to_string(&index).unwrap();
    for needle in [
        "000 Fig. 10",
        "001 Fig. 7",
        "001 Fig. 8",
        "000 Fig. 12",
        "000 Tables 1-3",
        "003 Table III",
        "003 Table II",
        "000 Fig. 8",
        "002 Table II",
        "002 Fig. 3",
        "002 Fig. 4",
        "004 Fig. 6.6",
        "002 Fig. 7-11",
        "001 Fig. 4-5",
        "<svg",
    ] {
        assert!(html.contains(needle), "report lacks {needle}");
    }
    assert!(!html.contains("<script"), "no scripts");
    let figs: Vec<_> = std::fs::read_dir(dir.join("report/figures"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let svgs = figs.iter().filter(|f| f.ends_with(".svg")).count();
    let pngs = figs.iter().filter(|f| f.ends_with(".png")).count();
    assert!(svgs >= 8 && svgs == pngs, "{figs:?}");
    assert_eq!(html.matches("<figure").count(), svgs);
    let md = std::fs::read_to_string(dir.join("report/summary.md")).unwrap();
    assert!(md.contains("003 Table III") && md.contains("figures/"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jain_over_time_has_a_panel_per_workload_and_a_line_per_variant() {
    // Two flows together and two 5 s apart (a latecomer), 12 s each, on thesis-sat.
    let dir = tiny_campaign(
        r#"
name = "tiny-jain"
repetitions = 1
time_cap = "25s"
[[link]]
preset = "thesis-sat"
[[variant]]
label = "cubic"
cc = "cubic"
[[variant]]
label = "bbr3-vs-cubic"
cc = "bbr3|cubic"
[[workload]]
label = "x2"
kind = "timed"
duration = "12s"
flows = 2
[[workload]]
label = "late2"
kind = "timed"
duration = "12s"
flows = 2
stagger = "5s"
"#,
    );
    let l = load(&dir).unwrap();
    let all: Vec<&RunData> = l.runs.iter().collect();
    let Some(crate::plot::Figure::Panels { charts, .. }) = thesis::jain_over_time_figure(&l, &all)
    else {
        panic!("no Jain's index figure");
    };
    assert_eq!(charts.len(), 2);
    for chart in &charts {
        let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cubic", "bbr3-vs-cubic"], "{}", chart.title);
        for s in &chart.series {
            for &(t, j) in &s.points {
                // Window ends, s; an index of two flows lies in [0.5, 1].
                assert_eq!(t % thesis::JFI_WINDOW_S, 0.0, "{t}");
                assert!((0.5..=1.0 + 1e-12).contains(&j), "{}: {j} at {t}", s.name);
            }
        }
    }
    let late = charts.iter().find(|c| c.title.contains("late2")).unwrap();
    // The latecomer starts at 5 s: the first window with both flows ends at 10 s, and
    // the second flow's 12 s end at 17 s leaves no window after 15 s.
    for s in &late.series {
        let times: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        assert_eq!(times, [10.0], "{}", s.name);
    }
    assert_eq!(late.vlines.len(), 1);
    assert_eq!(late.vlines[0].at, 5.0);
    let together = charts.iter().find(|c| c.title.contains("x2")).unwrap();
    let cubic = &together.series[0];
    assert_eq!(
        cubic.points.iter().map(|p| p.0).collect::<Vec<_>>(),
        [5.0, 10.0]
    );
    // Two CUBIC flows started together over a deterministic link stay in step.
    assert!(
        cubic.points.iter().all(|p| p.1 > 0.99),
        "{:?}",
        cubic.points
    );
    let index = write_report(std::slice::from_ref(&dir), &dir.join("report"), None).unwrap();
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.contains("6.16 (latecomers)"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_table_ii_link_gets_its_times_beside_the_seeds_distribution() {
    // leo stands for 003 Table II's LEO row; a shadow variant gives its exit times.
    let dir = tiny_campaign(
        r#"
name = "tiny-table-ii"
repetitions = 2
[[link]]
preset = "leo"
[[link]]
preset = "thesis-terr"
[[variant]]
label = "search-shadow"
cc = "cubic+search:shadow"
[[workload]]
kind = "download"
bytes = "20MB"
"#,
    );
    let l = load(&dir).unwrap();
    let all: Vec<&RunData> = l.runs.iter().collect();
    let items = exits::table_ii_figures(&l, "t", &all);
    // One figure: thesis-terr has no Table II row.
    assert_eq!(items.len(), 1);
    let Item::Figure(entry) = &items[0] else {
        panic!("not a figure")
    };
    assert_eq!(entry.id, "t-leo-table-ii");
    let crate::plot::Figure::Chart(chart) = &entry.figure else {
        panic!("not a chart")
    };
    let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
    for seed in [
        "capacity, 003 (0.4 s, sd 0.1)",
        "first loss, 003 (0.6 s, sd 0.1)",
        "SEARCH exit, 003 (0.5 s, sd 0.1)",
    ] {
        assert!(names.contains(&seed), "{names:?}");
    }
    // Our losses: both runs lose a packet on leo, as a step CDF ending at 1.
    let loss = chart
        .series
        .iter()
        .find(|s| s.name == "first loss, ours (2 runs)")
        .unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(loss.kind, crate::plot::SeriesKind::Step);
    assert_eq!(loss.points.last().unwrap().1, 1.0);
    // The seed's normal starts at 0 s, not before (0.6 - 3 x 0.1 > 0 here).
    let seed = &chart.series[names
        .iter()
        .position(|n| n.starts_with("first loss, 003"))
        .unwrap()];
    assert!((seed.points[0].0 - 0.3).abs() < 1e-9 && seed.points.len() == 61);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exit_to_loss_counts_a_loss_before_any_exit_at_zero_beside_the_seeds_shares() {
    let dir = tiny_campaign(
        r#"
name = "tiny-exit-to-loss"
repetitions = 2
[[link]]
preset = "thesis-terr"
[[variant]]
label = "classic"
cc = "cubic"
[[variant]]
label = "shadow"
cc = "cubic+search:shadow"
[[workload]]
kind = "download"
bytes = "1MB"
"#,
    );
    let mut l = load(&dir).unwrap();
    // As if on the real link: every run loses; one shadow run exits 1.5 RTTs before its
    // loss, the other never exits.
    let mut shadow_runs = 0;
    for r in &mut l.runs {
        r.row.link = crate::claims::table::REAL.into();
        r.row.first_loss_detected_at_s = Some(5.0);
        r.row.exit_to_loss_ratio = None;
        r.row.shadow_exit_to_loss_ratio = None;
        if r.row.variant == "shadow" {
            if shadow_runs == 0 {
                r.row.shadow_exit_to_loss_ratio = Some(1.5);
            }
            shadow_runs += 1;
        }
    }
    let all: Vec<&RunData> = l.runs.iter().collect();
    let items = exits::exit_to_loss_figures(&l, "t", &all);
    let [Item::Figure(entry)] = items.as_slice() else {
        panic!("one figure")
    };
    let crate::plot::Figure::Chart(chart) = &entry.figure else {
        panic!("not a chart")
    };
    let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
    // classic runs no SEARCH: not drawn, although it lost.
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "shadow [shadow] (2 runs with a loss)");
    assert_eq!(chart.series[0].points.first().unwrap(), &(0.0, 0.5));
    assert_eq!(chart.series[0].points.last().unwrap(), &(1.5, 1.0));
    assert!(names[1].starts_with("000 Fig. 8, real link: 45 %"));
    assert_eq!(chart.series[1].points, vec![(0.0, 0.45), (1.0, 0.65)]);
    std::fs::remove_dir_all(&dir).unwrap();
}
