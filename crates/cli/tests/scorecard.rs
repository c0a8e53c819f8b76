//! `satquic scorecard` end to end on a tiny set (one scenario per regime, short): both
//! output files, byte-identical JSON across two runs, the refusals of bad input (one line,
//! exit 2, nothing written) and --baseline. Verdicts are results, not failures here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use satquic_lab::scorecard::REGIMES;

const BIN: &str = env!("CARGO_BIN_EXE_satquic");

const TINY: &str = include_str!("../../lab/campaigns/scorecard/tiny.toml");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "satquic-scorecard-test-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scorecard(set: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .arg("scorecard")
        .arg("--set")
        .arg(set)
        .arg("--out")
        .arg(out)
        .args(["--jobs", "2"])
        .args(extra)
        .output()
        .unwrap()
}

fn refused(o: &Output, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(err.starts_with("satquic: "), "{what}: {err}");
}

#[test]
fn end_to_end_on_a_tiny_set() {
    let d = scratch("e2e");
    let set = d.join("tiny.toml");
    std::fs::write(&set, TINY).unwrap();
    let (a, b) = (d.join("a"), d.join("b"));
    let o = scorecard(&set, &a, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    for r in REGIMES {
        assert!(table.contains(r), "{r} missing from the table:\n{table}");
    }
    let json_a = std::fs::read(a.join("scorecard.json")).unwrap();
    let html = std::fs::read_to_string(a.join("scorecard.html")).unwrap();
    for r in REGIMES {
        assert!(html.contains(&format!("id=\"panel-{r}\"")), "panel {r}");
    }
    assert!(a.join("wall.json").is_file());
    let card: serde_json::Value = serde_json::from_slice(&json_a).unwrap();
    assert_eq!(card["regimes"].as_array().unwrap().len(), 6);
    // The busy beam (beside) and LEO responsiveness (leo): the objects' completion times
    // of the candidate and its reference in the same role, in the row and the panel.
    for (regime, scenario, reference, words) in [
        ("beside", "beam-geo-viasat", "cubic", "busy beam "),
        (
            "leo",
            "rpm-starlink-busy-cubic",
            "cubic",
            "beside a bulk flow",
        ),
    ] {
        let r = card["regimes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == regime)
            .unwrap();
        let s = r["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == scenario)
            .unwrap_or_else(|| panic!("{scenario} missing"));
        for v in ["satellite", reference] {
            let m = &s["runs"][v];
            assert!(m["objects"].as_f64().unwrap() > 0.0, "{scenario} {v}: {m}");
            assert!(
                m["object_median_s"].as_f64().unwrap() > 0.0,
                "{scenario} {v}"
            );
            assert!(m["object_p95_s"].as_f64().is_some(), "{scenario} {v}");
        }
        let v = &r["verdicts"]["satellite"];
        let row = format!("{} {}", v["headline"], v["references"]);
        assert!(row.contains(words), "{regime}: {row}");
        assert!(table.contains(words), "{words} not in the table");
        assert!(
            html.contains(&format!("<title>{scenario}: ")),
            "{scenario}'s cell"
        );
        assert!(
            !html.contains(&format!("<title>{scenario}: -")),
            "{scenario}'s cell has no figure"
        );
    }
    let text = String::from_utf8_lossy(&json_a);
    assert!(
        !text.contains(&d.display().to_string()),
        "an absolute path in scorecard.json"
    );

    // A second run elsewhere: the same bytes.
    let o = scorecard(&set, &b, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json_a, std::fs::read(b.join("scorecard.json")).unwrap());

    // Two specs side by side and a baseline.
    let c = d.join("c");
    let baseline = a.join("scorecard.json");
    let o = scorecard(
        &set,
        &c,
        &[
            "--cc",
            "satellite",
            "--cc",
            "cubic",
            "--baseline",
            baseline.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("x the first"), "{table}");
    assert!(table.contains("against the baseline"), "{table}");
    assert!(table.contains("could not compare: none"), "{table}");

    // A baseline with a regime fewer: said.
    let o = scorecard(
        &set,
        &d.join("e"),
        &[
            "--regime",
            "leo,startup",
            "--baseline",
            baseline.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("could not compare: regime geo-lossless"));
    let _ = std::fs::remove_dir_all(&d);
}

/// A relative --out (the default is one) names the same files from the campaigns' own
/// directories: the link files were looked up below themselves before.
#[test]
fn a_relative_out_directory_runs() {
    let d = scratch("relative");
    std::fs::write(d.join("tiny.toml"), TINY).unwrap();
    let o = Command::new(BIN)
        .current_dir(&d)
        .args([
            "scorecard",
            "--set",
            "tiny.toml",
            "--out",
            "card",
            "--jobs",
            "2",
        ])
        .args(["--regime", "geo-loss"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.join("card/scorecard.json").is_file());
}

#[test]
fn bad_input_is_one_line_and_nothing_written() {
    let d = scratch("bad");
    let set = d.join("tiny.toml");
    std::fs::write(&set, TINY).unwrap();
    let out = d.join("out");
    refused(
        &scorecard(&set, &out, &["--cc", "no-such-controller"]),
        "unknown spec",
    );
    refused(
        &scorecard(&set, &out, &["--regime", "mars"]),
        "unknown regime",
    );
    // A spec given twice was judged and printed twice, and listed twice in the card.
    refused(
        &scorecard(
            &set,
            &out,
            &["--cc", "satellite", "--cc", "cubic", "--cc", "satellite"],
        ),
        "a spec twice",
    );
    refused(
        &scorecard(&set, &out, &["--baseline", "/nonexistent/scorecard.json"]),
        "baseline",
    );
    for seed in ["0", "-1", "two", "18446744073709551616"] {
        refused(&scorecard(&set, &out, &["--seed", seed]), "a bad seed");
    }
    let junk = d.join("junk.json");
    std::fs::write(&junk, "not json").unwrap();
    refused(
        &scorecard(&set, &out, &["--baseline", junk.to_str().unwrap()]),
        "bad baseline",
    );
    assert!(
        !out.exists(),
        "an output directory was written for refused input"
    );
    let file = d.join("a-file");
    std::fs::write(&file, "").unwrap();
    refused(&scorecard(&set, &file, &[]), "--out a file");
    refused(
        &scorecard(&set, &file.join("below"), &[]),
        "--out below a file",
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A `row.json` somewhere under `dir` (a run has finished).
fn has_finished_run(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name() == "row.json" || (e.path().is_dir() && has_finished_run(&e.path()))
        })
    })
}

/// SIGTERM (as SIGINT) stops the scorecard between runs: one line says how many finished
/// runs were kept, where, and to run the same command again, exit 1. The signal killed it
/// with no word before (exit 143), and a campaign in flight had no runs.csv.
#[test]
fn a_signal_stops_the_scorecard_with_what_was_kept_and_how_to_resume() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let d = scratch("signal");
    let out = d.join("out");
    let child = Command::new(BIN)
        .arg("scorecard")
        .args(["--regime", "geo-lossless", "--jobs", "1", "--out"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !has_finished_run(&out) {
        assert!(Instant::now() < deadline, "no finished run in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let o = child.wait_with_output().unwrap();
    let all = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let err = all.trim_end().lines().last().unwrap_or_default();
    let what = err
        .strip_prefix("satquic: error: scorecard stopped: ")
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        what.contains("finished runs kept in")
            && what.contains("run the same command again to resume"),
        "{all}"
    );
    let kept: usize = what.split_whitespace().next().unwrap().parse().unwrap();
    assert!(kept >= 1, "{err}");
    assert!(!out.join("scorecard.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}
