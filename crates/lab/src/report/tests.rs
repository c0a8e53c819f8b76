use super::*;
use crate::exec::{ExecOptions, run_campaign};
use crate::plan::Plan;
use crate::spec::CampaignSpec;

#[test]
fn report_of_a_tiny_campaign_has_every_expected_figure() {
    let spec = CampaignSpec::from_toml_str(
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
        None,
    )
    .unwrap();
    let plan = Plan::new(&spec).unwrap();
    let dir = std::env::temp_dir().join(format!("satquic-lab-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    run_campaign(&spec, &plan, &dir, &ExecOptions::default(), &|_| {}).unwrap();
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
