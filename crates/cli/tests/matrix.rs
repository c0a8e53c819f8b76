//! `satquic matrix` end to end: satquic and aioquic, as clients and servers, through
//! `satquic link` on qir-terrestrial with a sender cap in front, with a small file;
//! runs.csv, the per-MB progress, the link's drops, resuming and the report.
//! aioquic must be installed (`scripts/install-peers.sh aioquic`, which `.ci/run` calls):
//! without it the test fails and says so. Its scripts are taken from this checkout
//! (`SATQUIC_PEERS=peers`), so the test runs the committed ones.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");
const SIZE: u64 = 2_000_000;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn satquic(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("SATQUIC_PEERS", repo().join("peers"))
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("satquic-matrix-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn satquic_and_aioquic_fill_a_two_by_two_matrix() {
    let list = satquic(&["matrix", "--list"]);
    let list = text(&list.stdout);
    let aioquic = list
        .lines()
        .find(|l| l.starts_with("aioquic "))
        .expect("aioquic has an adapter");
    assert!(
        !aioquic.contains("not installed"),
        "aioquic is needed by this test and is not installed; run scripts/install-peers.sh aioquic ({aioquic})"
    );

    let dir = temp_dir("two");
    let dir_s = dir.to_str().unwrap();
    let args = [
        "matrix",
        "--impl",
        "satquic,aioquic",
        "--preset",
        "qir-terrestrial",
        "-n",
        "2000000",
        "--sender-cap",
        "4M:300ms",
        "--reps",
        "1",
        "--time-cap",
        "30s",
        "--out",
        dir_s,
        "--report",
    ];
    let o = satquic(&args);
    assert!(
        o.status.success(),
        "matrix failed: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let out = text(&o.stdout);
    assert!(out.contains("qir-terrestrial cc=default"), "{out}");
    assert!(out.contains("4 runs: 4 completed"), "{out}");

    let rows = satquic_lab::dataset::read_csv(&dir.join("runs.csv")).unwrap();
    assert_eq!(rows.len(), 4);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for r in &rows {
        assert_eq!(r.status, "completed", "{}: {}", r.run_id, r.reason);
        assert_eq!(r.mode, "matrix");
        assert_eq!(r.delivered_bytes, Some(SIZE), "{}", r.run_id);
        assert_eq!(r.bytes, Some(SIZE));
        let t = r.completion_time_s.unwrap();
        // 2 MB through the 4 Mbit/s cap in front of the 20 Mbit/s link take 4 s at least.
        assert!(t > 4.0 && t < 30.0, "{}: {t}", r.run_id);
        let eff = r.efficiency.unwrap();
        assert!(eff > 0.0 && eff < 0.2, "{eff}");
        // The link's totals for the run, and the client's progress: when it had each MB
        // (satquic's JSON, aioquic's growing file), in order, within the run.
        assert!(r.drops_congestion.is_some(), "{}", r.run_id);
        let run_dir = dir.join("runs").join(&r.run_id);
        let relay: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run_dir.join("relay.json")).unwrap()).unwrap();
        assert!(
            relay["sender_cap"]["offered_packets"].as_u64().unwrap() > 1000,
            "{relay}"
        );
        // The download's queueing delay, from the relay's books of the run's flows.
        assert!(run_dir.join("relay-flows.json").is_file(), "{}", r.run_id);
        let (p50, p95) = (r.queue_p50_ms.unwrap(), r.queue_p95_ms.unwrap());
        assert!(0.0 <= p50 && p50 <= p95, "{}: {p50} {p95}", r.run_id);
        let chunks = satquic_lab::dataset::read_chunks(&run_dir);
        assert_eq!(chunks.len(), 2, "{}: {chunks:?}", r.run_id);
        assert!(
            chunks[0] > 1.0 && chunks[0] < chunks[1] && chunks[1] <= t,
            "{chunks:?} {t}"
        );
        pairs.push((
            r.client_impl.clone().unwrap(),
            r.server_impl.clone().unwrap(),
        ));
        assert!(
            dir.join("runs")
                .join(&r.run_id)
                .join("commands.txt")
                .is_file()
        );
    }
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("aioquic", "aioquic"),
            ("aioquic", "satquic"),
            ("satquic", "aioquic"),
            ("satquic", "satquic")
        ]
        .map(|(c, s)| (c.to_string(), s.to_string()))
    );
    let report = dir.join("report");
    let figures: Vec<String> = std::fs::read_dir(report.join("figures"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        figures
            .iter()
            .any(|f| f.contains("matrix-heatmap") && f.ends_with(".svg")),
        "{figures:?}"
    );
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        index.contains("seed's number"),
        "Table II comparison is missing"
    );

    // Resumed: nothing runs again.
    let o = satquic(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("0 run now, 4 done before"),
        "{}",
        text(&o.stdout)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pairs_that_cannot_run_are_recorded_with_the_reason() {
    // ngtcp2 speaks only h3: with hq-interop alone the pair cannot talk, and nothing runs.
    let dir = temp_dir("incompatible");
    let o = satquic(&[
        "matrix",
        "--impl",
        "ngtcp2",
        "--preset",
        "qir-sat",
        "--alpn",
        "hq-interop",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = satquic_lab::dataset::read_csv(&dir.join("runs.csv")).unwrap();
    assert_eq!(rows.len(), 3, "three repetitions of ngtcp2/ngtcp2");
    for r in &rows {
        // Not installed here (skipped) or installed and incompatible: never dropped.
        assert!(
            (r.status == "incompatible" && r.reason.contains("no common ALPN"))
                || (r.status == "skipped" && r.reason.contains("not installed")),
            "{}: {}",
            r.status,
            r.reason
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A relative --out: the peers run in their run's directory, where `out/www` and
/// `out/certs` named nothing, and every run failed (the server: `--www m/www: No such file
/// or directory`).
#[test]
fn a_relative_out_directory_runs() {
    let dir = temp_dir("relative");
    std::fs::create_dir_all(&dir).unwrap();
    let o = Command::new(BIN)
        .current_dir(&dir)
        .args(["matrix", "--impl", "satquic", "--preset", "qir-terrestrial"])
        .args([
            "-n",
            "10k",
            "--reps",
            "1",
            "--time-cap",
            "20s",
            "--out",
            "m",
        ])
        .env("SATQUIC_PEERS", repo().join("peers"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = satquic_lab::dataset::read_csv(&dir.join("m/runs.csv")).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].status, "completed", "{}", rows[0].reason);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn usage_error(args: &[&str]) -> String {
    let o = satquic(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
    err
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let help = satquic(&["matrix", "--help"]);
    assert!(text(&help.stdout).contains("Usage: satquic matrix"));
    let dir = temp_dir("bad");
    let out = dir.to_str().unwrap();
    assert!(usage_error(&["matrix", "--impl", "msquic", "--out", out]).contains("msquic"));
    assert!(usage_error(&["matrix", "--preset", "mars", "--out", out]).contains("mars"));
    assert!(usage_error(&["matrix", "--cc", "vegas", "--out", out]).contains("vegas"));
    assert!(usage_error(&["matrix", "-n", "lots", "--out", out]).contains("-n"));
    let err = usage_error(&["matrix", "--sender-cap", "200MB", "--out", out]);
    assert!(
        err.contains("--sender-cap") && err.contains("bits per second"),
        "{err}"
    );
    let err = usage_error(&["matrix", "--alpn", "spdy", "--out", out]);
    assert!(err.contains("no implementation speaks it"), "{err}");
    assert!(
        usage_error(&["matrix", "--index", "3", "--of", "2", "--out", out]).contains("--index")
    );
    assert!(usage_error(&["matrix"]).contains("--out"));
    // Ran the whole matrix under no name before.
    assert!(usage_error(&["matrix", "--name", "", "--out", out]).contains("--name"));
    assert!(usage_error(&["matrix", "--name", " ", "--out", out]).contains("--name"));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[[impl]]\nname = \"x\"\nalpn = []\n[impl.server]\ncommand = [\"x\"]\n",
    )
    .unwrap();
    let err = usage_error(&["matrix", "--adapters", bad.to_str().unwrap(), "--out", out]);
    assert!(err.contains("alpn is empty"), "{err}");
    std::fs::write(&bad, "[[impl]\n").unwrap();
    let err = usage_error(&["matrix", "--adapters", bad.to_str().unwrap(), "--out", out]);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(
        usage_error(&["matrix", "--adapters", "/nonexistent.toml", "--out", out])
            .contains("/nonexistent.toml")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
