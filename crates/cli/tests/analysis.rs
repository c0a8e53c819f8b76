//! examples/analysis.py (pandas and matplotlib) on a small campaign: it reads runs.csv,
//! the runs' chunks.csv and one series.csv, prints its table and draws its PNG. Where
//! python3, pandas or matplotlib is missing, the test fails with the script's reason
//! (`.ci/run` installs them).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/analysis.py");

/// Three slow starts over the bandwidth-on-demand GEO link: HyStart++ leaves early and
/// is slower, so the figure's lines differ (6 runs, a few seconds).
const SPEC: &str = r#"
name = "analysis-example"
repetitions = 2
seed = 1
sender_cap = "none"
[[link]]
preset = "geo-viasat-bod"
[[variant]]
label = "classic"
cc = "cubic"
[[variant]]
label = "search"
cc = "cubic+search:v2"
[[variant]]
label = "hystart++"
cc = "cubic+hystart++"
[[workload]]
kind = "download"
bytes = "30MB"
"#;

fn python(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(SCRIPT)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3: {e} (examples/analysis.py needs it)"))
}

#[test]
fn analysis_py_prints_the_table_and_draws_the_figure() {
    let dir = std::env::temp_dir().join(format!("satquic-analysis-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.join("campaign");
    let o = Command::new(BIN)
        .args(["campaign", "run"])
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let png: PathBuf = dir.join("figure.png");
    let o = python(&[out.to_str().unwrap(), "--out", png.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "analysis.py failed: {stderr}{stdout}");
    for text in [
        "median_completion_s",
        "geo-viasat-bod",
        "classic",
        "search",
        "hystart++",
        "6 runs, 6 with per-MB times",
    ] {
        assert!(stdout.contains(text), "{text:?} missing from:\n{stdout}");
    }
    // Each variant's row counts its 2 runs, both completed.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .any(|c| c == "classic" || c == "hystart++")
        })
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for row in rows {
        let cells: Vec<&str> = row.split_whitespace().collect();
        let at = cells
            .iter()
            .position(|c| *c == "classic" || *c == "hystart++")
            .unwrap();
        assert_eq!(&cells[at + 1..at + 3], ["2", "2"], "{row}");
    }
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
        "{} bytes, not a drawn PNG",
        bytes.len()
    );

    // A directory without runs.csv: one line and exit code 2.
    let o = python(&[dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no runs.csv") && stderr.trim().lines().count() == 1,
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
