//! The built `satquic` binary, end to end: for each of the nine subcommands a success path
//! on small inputs, `--help`, and one bad input answered with one line on stderr and exit
//! code 2. Everything runs on loopback; servers and relays are children killed on drop.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");

fn satquic(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `args`, expecting success; returns stdout.
fn ok(args: &[&str]) -> String {
    let o = satquic(args);
    assert!(
        o.status.success(),
        "{args:?} failed ({:?}): {}",
        o.status,
        stderr(&o)
    );
    stdout(&o)
}

/// Runs `args`, expecting a usage error: exit code 2, one line on stderr, no panic, nothing
/// on stdout. Returns the line.
fn usage_error(args: &[&str]) -> String {
    let o = satquic(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{args:?}: {err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
    assert!(!err.trim().is_empty(), "{args:?}");
    assert!(o.stdout.is_empty(), "{args:?}: stdout {}", stdout(&o));
    err
}

fn help(command: &str) {
    let text = ok(&[command, "--help"]);
    assert!(text.contains("Usage: satquic"), "{command} --help: {text}");
    // A default stated in a doc comment and by clap as well prints twice.
    for line in text.lines() {
        assert!(
            line.matches("[default: ").count() <= 1,
            "{command} --help: {line}"
        );
    }
}

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("satquic-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn join(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed when the test ends, pass or fail.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> Background {
    Background(
        Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary starts"),
    )
}

/// A UDP port free on loopback right now.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A 1 MB download through `satquic link` to `satquic server`, retried while the children
/// start (bounded); returns the client's JSON.
fn download_through(relay: SocketAddr) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let o = satquic(&["client", &relay.to_string(), "-n", "1M", "--insecure", "-J"]);
        if o.status.success() {
            return serde_json::from_slice(&o.stdout).expect("client -J prints JSON");
        }
        assert!(
            Instant::now() < deadline,
            "client never succeeded: {}",
            stderr(&o)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn sim_runs_prints_json_and_refuses_bad_sizes() {
    help("sim");
    let json = ok(&[
        "sim", "--link", "qir-sat", "--cc", "cubic", "-n", "200K", "-J",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["link"], "qir-sat");
    assert_eq!(v["variants"][0]["completed"], 1);
    assert_eq!(v["per_run"][0]["status"], "completed");
    // --ss composes with every --cc, as on run, client and server.
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "sim",
        "--link",
        "qir-sat",
        "--cc",
        "cubic",
        "--cc",
        "newreno",
        "--ss",
        "hystart++",
        "-n",
        "200K",
        "-J",
    ]))
    .unwrap();
    assert_eq!(v["variants"][0]["label"], "cubic+hystart++", "{v}");
    assert_eq!(v["variants"][1]["label"], "newreno+hystart++", "{v}");
    usage_error(&["sim", "--cc", "cubic+search", "--ss", "hystart++"]);
    let err = usage_error(&["sim", "-n", "0"]);
    assert!(err.contains("size"), "{err}");
}

/// Results that are incomplete still print, and the exit code says so: CUBIC does not
/// move 10 MiB through 1 % loss in the 60 s cap.
#[test]
fn sim_prints_capped_runs_and_exits_1() {
    let o = satquic(&[
        "sim",
        "--link",
        "qir-satloss",
        "--cc",
        "cubic",
        "-n",
        "10MiB",
        "-J",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON printed");
    assert_eq!(v["per_run"][0]["status"], "capped", "{v}");
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("1 of 1 runs did not complete"), "{err}");
}

#[test]
fn presets_lists_every_preset_and_prints_toml() {
    help("presets");
    let table = ok(&["presets"]);
    for name in ["geo-viasat", "geo-viasat-bod", "qir-sat", "leo", "lte"] {
        assert!(table.contains(name), "{name} missing from:\n{table}");
    }
    let toml = ok(&["presets", "--toml", "qir-sat"]);
    let dir = TempDir::new("presets");
    let file = dir.join("qir-sat.toml");
    std::fs::write(&file, toml).unwrap();
    // The printed TOML is a link every command accepts.
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["sim", "--link", &file, "-n", "100K", "-J"])).unwrap();
    assert_eq!(v["variants"][0]["completed"], 1);
    usage_error(&["presets", "--toml", "no-such-preset"]);
}

/// `presets --limits`: the grids' limits from the lab's model, the ones their committed
/// points.csv carry (p00: 100 kB over 10.68 Mbit/s, 273 ms each way; LEO p00 over its
/// slots); a link with neither a constant rate nor slots, or no size, is one line, exit 2.
#[test]
fn presets_print_the_physical_limits_of_transfers_over_a_link() {
    let grid = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../lab/campaigns/grid/links/p00.toml"
    );
    let csv = ok(&["presets", "--limits", grid, "--bytes", "100000,1000000"]);
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        csv.lines().next(),
        Some("bytes,up_s,down_s,serialization_s")
    );
    let six = |x: f64| (x * 1e6).round() / 1e6;
    assert_eq!(
        (six(rows[0][1]), six(rows[0][2])),
        (0.897679, 1.170679),
        "{csv}"
    );
    assert!((rows[0][2] - rows[0][1] - 0.273).abs() < 1e-9);
    assert!((rows[0][1] - rows[0][3] - 3.0 * 0.273).abs() < 1e-9);
    assert!(rows[1][1] > rows[0][1]);
    let leo = satquic_lab::limit::leo_points().remove(0);
    let csv = ok(&[
        "presets",
        "--limits",
        &leo.link,
        "--bytes",
        &leo.bytes.to_string(),
    ]);
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let up: f64 = row[1].parse().unwrap();
    let down: f64 = row[2].parse().unwrap();
    assert_eq!((six(up), six(down)), (leo.phys_up_s, leo.phys_down_s));
    assert_eq!(row[3], "", "no serialization time on a slotted link");
    usage_error(&["presets", "--limits", "lte", "--bytes", "1000"]);
    usage_error(&["presets", "--limits", "qir-sat", "--bytes", "0"]);
    usage_error(&["presets", "--limits", "qir-sat"]);
    usage_error(&["presets", "--limits", "no-such-link", "--bytes", "1"]);
}

#[test]
fn presets_print_a_slot_schedule_and_a_probe_of_a_starlink_link() {
    let slots = ok(&[
        "presets",
        "--slots",
        "starlink-moving:phase=5s,slot-seed=3",
        "--for",
        "50s",
    ]);
    let rows: Vec<&str> = slots.lines().collect();
    assert!(
        rows[0].starts_with("slot,start_s,end_s,base_rtt_ms,down_rate_bps"),
        "{slots}"
    );
    // Slot 0 up to the first boundary at 5 s, then every 15 s: 0-5, 5-20, 20-35, 35-50.
    assert_eq!(rows.len(), 5, "{slots}");
    assert!(rows[2].starts_with("1,5.000000,20.000000,"), "{slots}");
    // The same file as TOML runs in the simulator, and its schedule is its own.
    let dir = TempDir::new("slots");
    let file = dir.join("moving.toml");
    let toml = ok(&["presets", "--toml", "starlink-moving:phase=5s,slot-seed=3"]);
    std::fs::write(&file, toml).unwrap();
    assert_eq!(
        ok(&["presets", "--slots", &file, "--for", "50s", "--seed", "9"]),
        slots
    );
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["sim", "--link", &file, "-n", "1M", "-J"])).unwrap();
    assert_eq!(v["variants"][0]["completed"], 1);
    let probe: serde_json::Value = serde_json::from_str(&ok(&[
        "presets",
        "--probe",
        "starlink-quiet",
        "--for",
        "20s",
    ]))
    .unwrap();
    assert_eq!(probe["down_bps"].as_array().unwrap().len(), 20);
    assert!(probe["pings"].as_array().unwrap().len() > 1000);
    // The relay takes the file and says what it holds.
    let relay = ok(&[
        "link",
        "--listen",
        "127.0.0.1:0",
        "--to",
        "127.0.0.1:9",
        "--link",
        &file,
        "--duration",
        "200ms",
        "-q",
    ]);
    assert!(
        relay.contains("per slot") && relay.contains("base RTT from"),
        "{relay}"
    );
    // And an emulated run crosses it.
    let run: serde_json::Value =
        serde_json::from_str(&ok(&["run", "--link", &file, "-n", "200K", "-J"])).unwrap();
    assert_eq!(run["outcome"], "completed", "{run}");
    usage_error(&["presets", "--slots", "geo-viasat"]);
    usage_error(&["presets", "--slots", "starlink-busy", "--for", "2d"]);
    usage_error(&["presets", "--probe", "starlink-busy:phase=20s"]);
    usage_error(&[
        "presets",
        "--probe",
        "starlink-busy",
        "--ping-interval",
        "0s",
    ]);
}

#[test]
fn campaign_plans_runs_collects_and_report_draws_it() {
    help("campaign");
    help("report");
    let dir = TempDir::new("campaign");
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        r#"
name = "tiny"
repetitions = 2
[[link]]
preset = "qir-terrestrial"
[[variant]]
cc = "cubic"
[[variant]]
cc = "cubic+search"
[[workload]]
kind = "download"
bytes = "1MB"
"#,
    )
    .unwrap();
    let plan = ok(&["campaign", "plan", &spec]);
    assert!(
        plan.contains("4 runs") || plan.lines().count() >= 4,
        "{plan}"
    );
    let out = dir.join("out");
    ok(&["campaign", "run", &spec, "--out", &out, "--jobs", "2"]);
    let runs_csv = std::fs::read_to_string(dir.path().join("out/runs.csv")).unwrap();
    assert_eq!(
        runs_csv.lines().count(),
        5,
        "header and 4 rows:\n{runs_csv}"
    );
    ok(&["campaign", "collect", &out]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/runs.csv")).unwrap(),
        runs_csv,
        "collect rebuilds the same runs.csv"
    );
    let report = ok(&["report", &out]);
    assert!(report.contains("index.html"), "{report}");
    let html = std::fs::read_to_string(dir.path().join("out/report/index.html")).unwrap();
    assert!(
        html.contains("tiny") && html.contains("<html"),
        "report page"
    );
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"bad\"\nrepetitions = 0\n[[link]]\npreset = \"mars\"\n",
    )
    .unwrap();
    usage_error(&["campaign", "plan", &bad]);
    usage_error(&["report", &dir.join("no-such-dir")]);
}

#[test]
fn reproduce_runs_one_built_in_campaign_and_refuses_an_unknown_one() {
    help("reproduce");
    let dir = TempDir::new("reproduce");
    let out = dir.join("out");
    let o = satquic(&[
        "reproduce",
        "--quick",
        "--only",
        "c",
        "--jobs",
        "2",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("report"), "{text}");
    // stderr is no terminal here: progress comes as lines, at least one per campaign.
    assert!(
        stderr(&o).contains("satquic reproduce: c-qir-se: "),
        "{}",
        stderr(&o)
    );
    let rows = std::fs::read_to_string(dir.path().join("out/c-qir-se/runs.csv")).unwrap();
    assert!(rows.lines().count() > 10, "{rows}");
    let html = std::fs::read_to_string(dir.path().join("out/report/index.html")).unwrap();
    assert!(html.contains("verdict"), "the seed comparison table");
    // Resumed (nothing left to run) with nowhere to print the table: quiet, exit 0.
    with_closed_stdout(&["reproduce", "--only", "c", "--jobs", "2", "--out", &out]);
    usage_error(&["reproduce", "--only", "z", "--out", &out]);
}

/// `satquic beside` end to end on a tiny slice (one path, cubic and the profile, one
/// seed, --quick): the pairs run, the report has the pair, harm and check tables in HTML
/// and Markdown, and bad selections are one line and exit 2 before anything runs.
#[test]
fn beside_runs_a_tiny_pair_campaign_into_its_report() {
    help("beside");
    let dir = TempDir::new("beside");
    let out = dir.join("out");
    let text = ok(&[
        "beside",
        "--quick",
        "--only",
        "pairs",
        "--links",
        "qir-sat",
        "--cc",
        "cubic,satellite",
        "--jobs",
        "2",
        "--out",
        &out,
    ]);
    assert!(text.contains("beside-pairs: 12 runs"), "{text}");
    let md = std::fs::read_to_string(dir.path().join("out/report/summary.md")).unwrap();
    for table in [
        "the satellite profile's checks at a glance",
        "the profile's loss in every pair with it",
        "the profile's harm as the latecomer",
        "harm of each newcomer to each incumbent",
        "every pair over the shared period",
    ] {
        assert!(md.contains(table), "{table} missing");
    }
    assert!(
        md.contains("| qir-sat | 0 s | cubic | satellite |"),
        "the pair rows"
    );
    let html = std::fs::read_to_string(dir.path().join("out/report/index.html")).unwrap();
    assert!(html.contains("harm of each newcomer"));
    assert!(dir.path().join("out/specs/beside/pairs.toml").is_file());
    for bad in [
        &["beside", "--links", "mars", "--out", &out][..],
        &["beside", "--cc", "vegas", "--out", &out],
        &["beside", "--only", "nothing", "--out", &out],
        &["beside", "--seeds", "0", "--out", &out],
        &["beside", "--jobs", "0", "--out", &out],
    ] {
        usage_error(bad);
    }
}

/// SIGINT and SIGTERM stop `beside` between runs as they stop `campaign run`: one line
/// saying what was kept and how to resume, exit 1, the campaign's runs.csv written; the
/// same command then finishes it. Before, the signal killed it with no word and no runs.csv.
#[test]
fn a_signal_stops_beside_with_what_was_kept_and_how_to_resume() {
    for signal in ["-INT", "-TERM"] {
        let dir = TempDir::new(&format!("beside-signal{signal}"));
        let out = dir.join("out");
        let args = [
            "beside", "--quick", "--only", "pairs", "--links", "qir-sat", "--cc", "cubic",
            "--jobs", "1", "--out", &out,
        ];
        let campaign = dir.path().join("out/beside-pairs");
        let o = signalled_once(&args, signal, || campaign.join("runs").exists());
        let all = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{signal}: {all}");
        // Progress lines come first (stderr is no terminal); the last line says it.
        let err = all.trim_end().lines().last().unwrap_or_default();
        assert!(err.starts_with("satquic: "), "{signal}: {all}");
        assert!(
            err.contains("beside-pairs: stopped")
                && err.contains("run the same command again to resume")
                && err.contains("runs.csv"),
            "{signal}: {err}"
        );
        assert!(campaign.join("runs.csv").exists(), "{signal}");
        ok(&args);
        assert!(dir.path().join("out/report/index.html").exists());
    }
}

/// `satquic ARGS`, sent `signal` once `ready` holds (within 60 s), and what it printed.
fn signalled_once(args: &[&str], signal: &str, ready: impl Fn() -> bool) -> Output {
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "{args:?}: not ready in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success()
    );
    child.wait_with_output().unwrap()
}

/// A `runs` directory somewhere under `dir` (a campaign has started).
fn has_runs_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name() == "runs" || (e.path().is_dir() && has_runs_dir(&e.path())))
    })
}

/// `reproduce` and `calibrate` run several campaigns as `beside` does, and a signal killed
/// them the same way, with no word: now one line says what was kept and how to resume, exit 1.
#[test]
fn a_signal_stops_reproduce_and_calibrate_with_how_to_resume() {
    let dir = TempDir::new("several-signal");
    let reproduce = dir.join("reproduce");
    let calibrate = dir.join("calibrate");
    for (args, out, campaign) in [
        (
            vec![
                "reproduce",
                "--quick",
                "--only",
                "c",
                "--jobs",
                "1",
                "--out",
                &reproduce,
            ],
            &reproduce,
            "c-qir-se: stopped",
        ),
        (
            vec![
                "calibrate",
                "--link",
                "qir-sat",
                "--repetitions",
                "1",
                "--jobs",
                "1",
                "--out",
                &calibrate,
            ],
            &calibrate,
            "candidate 1",
        ),
    ] {
        let o = signalled_once(&args, "-TERM", || has_runs_dir(Path::new(out)));
        let all = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {all}");
        let err = all.trim_end().lines().last().unwrap_or_default();
        assert!(
            err.starts_with("satquic: ")
                && err.contains(campaign)
                && err.contains("stopped")
                && err.contains("run the same command again to resume"),
            "{args:?}: {all}"
        );
    }
}

#[test]
fn calibrate_refuses_bad_candidates_in_one_line() {
    help("calibrate");
    let dir = TempDir::new("calibrate");
    let out = dir.join("out");
    // A candidate is a link preset; the first bad one stops the command before any run.
    let e = usage_error(&[
        "calibrate",
        "--link",
        "geo-viasat-bod:phase=often",
        "--out",
        &out,
    ]);
    assert!(
        e.contains("candidate 1") && e.contains("random or fixed"),
        "{e}"
    );
    usage_error(&["calibrate", "--link", "no-such-link", "--out", &out]);
    // A bad candidate after a good one: refused before the good one runs.
    let e = usage_error(&[
        "calibrate",
        "--link",
        "geo-viasat-bod",
        "--link",
        "geo-viasat-bod:lag-jitter=2s",
        "--out",
        &out,
    ]);
    assert!(e.contains("candidate 2"), "{e}");
    let nothing_written = || assert!(!std::path::Path::new(&out).exists(), "{out}");
    nothing_written();
    // A link file is a candidate too; one that does not exist or parse is refused first.
    let missing = dir.join("no-such-link.toml");
    let e = usage_error(&["calibrate", "--link", &missing, "--out", &out]);
    assert!(
        e.contains("candidate 1") && e.contains("no-such-link.toml"),
        "{e}"
    );
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "name = \"bad\"\n").unwrap();
    usage_error(&["calibrate", "--link", &bad, "--out", &out]);
    nothing_written();
    usage_error(&["calibrate", "--out", &out]);
    usage_error(&[
        "calibrate",
        "--link",
        "geo-viasat",
        "--repetitions",
        "0",
        "--out",
        &out,
    ]);
    usage_error(&[
        "calibrate",
        "--link",
        "geo-viasat",
        "--jobs",
        "0",
        "--out",
        &out,
    ]);
}

#[test]
fn run_emulates_a_download_on_loopback_and_refuses_a_zero_window() {
    help("run");
    let v: serde_json::Value = serde_json::from_str(&ok(&[
        "run",
        "--link",
        "qir-terrestrial",
        "--cc",
        "cubic",
        "-n",
        "500K",
        "-J",
    ]))
    .unwrap();
    assert_eq!(v["outcome"], "completed", "{v}");
    assert_eq!(v["flows"][0]["delivered_bytes"], 500_000);
    let err = usage_error(&["run", "--link", "qir-terrestrial", "--iw", "0"]);
    assert!(err.contains("size"), "{err}");
}

#[test]
fn server_link_and_client_move_bytes_through_the_emulated_link() {
    help("server");
    help("link");
    help("client");
    help("matrix");
    let server_port = free_port();
    let relay_port = free_port();
    let server = format!("127.0.0.1:{server_port}");
    let relay: SocketAddr = format!("127.0.0.1:{relay_port}").parse().unwrap();
    let _server = spawn(&["server", "--listen", &server]);
    let _relay = spawn(&[
        "link",
        "--listen",
        &relay.to_string(),
        "--to",
        &server,
        "--link",
        "qir-terrestrial",
    ]);
    let v = download_through(relay);
    assert_eq!(v["flows"][0]["delivered_bytes"], 1_000_000, "{v}");
    assert_eq!(v["outcome"], "completed");
    // The transport flags every connection-building command shares: an upload asking the
    // server for a window-following ACK frequency, from a 1400-byte MTU, with `--rwnd`
    // (sim's name) for `--max-window`.
    let up = ok(&[
        "client",
        &relay.to_string(),
        "-R",
        "-n",
        "1M",
        "--insecure",
        "--mtu",
        "1400",
        "--ack-freq",
        "16:25ms:cwnd/4",
        "--rwnd",
        "8M",
        "-J",
    ]);
    let up: serde_json::Value = serde_json::from_str(&up).unwrap();
    assert_eq!(up["outcome"], "completed", "{up}");
    usage_error(&["client", "127.0.0.1:1", "--ack-freq", "16:25ms:cwnd/0"]);
    usage_error(&["client", "127.0.0.1:1", "--mtu", "100"]);
    usage_error(&["server", "--ack-freq", "fast"]);
    // A closed stdout ends client, server and link quietly.
    with_closed_stdout(&[
        "client",
        &relay.to_string(),
        "-n",
        "100K",
        "--insecure",
        "-i",
        "0.1",
    ]);
    with_closed_stdout(&["server", "--listen", "127.0.0.1:0"]);
    with_closed_stdout(&["link", "--listen", "127.0.0.1:0", "--to", &server]);
    usage_error(&["server", "--max-bytes", "lots"]);
    usage_error(&[
        "link",
        "--listen",
        "127.0.0.1:1",
        "--to",
        "127.0.0.1:2",
        "--link",
        "mars",
    ]);
    usage_error(&["client", "127.0.0.1:1", "-n", "12Q"]);
}

/// Runs `args` with stdout a socket whose reader is already gone (as `| head -1` leaves
/// it): the command must end quietly with exit code 0, and no panic.
fn with_closed_stdout(args: &[&str]) -> Output {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    drop(ours);
    let o = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs");
    let err = stderr(&o);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{args:?}: {err}"
    );
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    o
}

#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let dir = TempDir::new("closed-stdout");
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        "name = \"tiny\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n\
         [[workload]]\nkind = \"download\"\nbytes = \"200KB\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    with_closed_stdout(&["presets"]);
    with_closed_stdout(&["presets", "--toml", "qir-sat"]);
    with_closed_stdout(&["campaign", "plan", "../lab/campaigns/geo-search.toml"]);
    with_closed_stdout(&["campaign", "plan", &spec, "--csv"]);
    with_closed_stdout(&["campaign", "run", &spec, "--out", &out]);
    // The results were written before the summary found nowhere to go.
    let rows = std::fs::read_to_string(dir.path().join("out/runs.csv")).unwrap();
    assert_eq!(rows.lines().count(), 2, "{rows}");
    with_closed_stdout(&["campaign", "collect", &out]);
    with_closed_stdout(&["report", &out]);
    assert!(dir.path().join("out/report/index.html").is_file());
    with_closed_stdout(&["sim", "--link", "qir-terrestrial", "-n", "100K"]);
    with_closed_stdout(&["sim", "--link", "qir-terrestrial", "-n", "100K", "-J"]);
    with_closed_stdout(&["run", "--link", "qir-terrestrial", "-n", "100K"]);
    with_closed_stdout(&["run", "--link", "qir-terrestrial", "-n", "100K", "-J"]);
    with_closed_stdout(&["--help"]);
}

#[test]
fn time_flags_refuse_values_a_duration_cannot_hold_and_name_the_range() {
    let err = usage_error(&["sim", "-n", "5M", "-t", "18446744073709551615"]);
    assert!(
        err.contains("-t 18446744073709551615: must be between"),
        "{err}"
    );
    let err = usage_error(&["sim", "-t", "-1"]);
    assert!(err.contains("between"), "{err}");
    let err = usage_error(&[
        "link",
        "--listen",
        "127.0.0.1:1",
        "--to",
        "127.0.0.1:2",
        "--duration",
        "1e300",
    ]);
    assert!(err.contains("--duration 1e300: must be between"), "{err}");
    let err = usage_error(&["run", "-t", "0"]);
    assert!(err.contains("must be between 1ms"), "{err}");
    let err = usage_error(&["run", "-t", "-1"]);
    assert!(err.contains("-t -1: must be between 1ms"), "{err}");
    let err = usage_error(&["client", "127.0.0.1:1", "-i", "-1"]);
    assert!(err.contains("-i -1: must be between 1ms"), "{err}");
    let err = usage_error(&["server", "--handshake-timeout", "1e-300"]);
    assert!(err.contains("between 1ms"), "{err}");
    let err = usage_error(&["client", "127.0.0.1:1", "-t", "1e300"]);
    assert!(!err.contains("positive"), "{err}");
    // One grammar everywhere: seconds or a unit.
    let err = usage_error(&["run", "-t", "25h"]);
    assert!(
        err.contains("-t 25h: must be between 1ms and 86400s"),
        "{err}"
    );
    let err = usage_error(&["client", "127.0.0.1:1", "-i", "0.5ms"]);
    assert!(err.contains("-i 0.5ms: must be between 1ms"), "{err}");
    let err = usage_error(&["client", "127.0.0.1:1", "--resume=later"]);
    assert!(err.contains("--resume"), "{err}");
    let err = usage_error(&["client", "127.0.0.1:1", "--resume=25h"]);
    assert!(err.contains("--resume 25h"), "{err}");
    for flag in ["--idle-timeout", "--handshake-timeout"] {
        let err = usage_error(&["server", flag, "2h"]);
        assert!(
            err.contains("must be between 1ms and 3600s"),
            "{flag}: {err}"
        );
    }
    let err = usage_error(&[
        "link",
        "--listen",
        "127.0.0.1:1",
        "--to",
        "127.0.0.1:2",
        "--flow-idle-timeout",
        "ten",
    ]);
    assert!(err.starts_with("satquic: --flow-idle-timeout"), "{err}");
}

#[test]
fn an_mtu_quinn_cannot_send_is_refused_and_a_campaign_of_failed_runs_fails() {
    for args in [
        &["sim", "--mtu", "20000"][..],
        &["run", "--mtu", "20000"],
        &["run", "--mtu", "16384"],
    ] {
        let err = usage_error(args);
        assert!(err.contains("16383"), "{args:?}: {err}");
    }
    let dir = TempDir::new("mtu");
    let spec = dir.join("mtu.toml");
    std::fs::write(
        &spec,
        "name = \"mtu\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n\
         mtu = 20000\n[[workload]]\nkind = \"download\"\nbytes = \"200KB\"\n",
    )
    .unwrap();
    let err = usage_error(&["campaign", "plan", &spec]);
    assert!(err.contains("variant[0].mtu"), "{err}");
    // Every run times out: the campaign says so and exits 1.
    let spec = dir.join("timeout.toml");
    std::fs::write(
        &spec,
        "name = \"timeout\"\ntimeout = \"1ns\"\nrepetitions = 2\n[[link]]\npreset = \"geo-viasat\"\n\
         [[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"10MB\"\n",
    )
    .unwrap();
    let o = satquic(&["campaign", "run", &spec, "--out", &dir.join("out")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("all 2 runs"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn oversized_plans_and_seeds_past_the_largest_are_refused_at_planning() {
    let dir = TempDir::new("caps");
    let base = "name = \"big\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n\
                [[variant]]\ncc = \"cubic+search\"\n[[workload]]\nkind = \"download\"\nbytes = \"1MB\"\n";
    let workload = "[[workload]]\nkind = \"download\"\nbytes = \"1MB\"\nflows = 1000000000\n";
    for (keys, tables, expect) in [
        ("repetitions = 1000000000\n", "", "100000"),
        ("repetitions = 60000\n", "", "split it"),
        (
            "seed = 18446744073709551615\nrepetitions = 2\n",
            "",
            "2^64-1",
        ),
        (
            "",
            workload,
            "workload[1].flows: 1000000000 must be between 1 and 1000",
        ),
    ] {
        let spec = dir.join("big.toml");
        std::fs::write(&spec, format!("{keys}{base}{tables}")).unwrap();
        let started = Instant::now();
        let err = usage_error(&["campaign", "plan", &spec]);
        assert!(err.contains(expect), "{keys}{tables}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "planned for long"
        );
    }
    let spec = dir.join("big.toml");
    std::fs::write(&spec, base).unwrap();
    let err = usage_error(&[
        "campaign",
        "run",
        &spec,
        "--out",
        &dir.join("o"),
        "--jobs",
        "100000",
    ]);
    assert!(err.contains("1024"), "{err}");
    let err = usage_error(&["sim", "--seed", "18446744073709551615", "--runs", "2"]);
    assert!(err.contains("2^64-1"), "{err}");
}

/// A run directory whose row.json is garbage: `collect` and `report` name the file (exit 2),
/// and the next `campaign run` runs that run again and says so, so the campaign finishes.
/// Before, every `campaign run` left the garbage and reported "1 run now ..., 3 finished
/// before" (the new directory could not replace the corrupt one), and `collect` and
/// `report` left the run out and exited 0.
#[test]
fn a_corrupt_run_is_run_again_and_named_until_then() {
    let dir = TempDir::new("corrupt");
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        "name = \"tiny\"\nrepetitions = 2\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"200kB\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    ok(&["campaign", "run", &spec, "--out", &out]);
    let runs = dir.path().join("out/runs");
    let mut ids: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let row = runs.join(&ids[0]).join("row.json");
    std::fs::write(&row, "garbage").unwrap();
    for args in [&["campaign", "collect", &out][..], &["report", &out]] {
        let err = usage_error(args);
        assert!(
            err.contains(&row.display().to_string()) && err.contains("campaign run"),
            "{args:?}: {err}"
        );
    }
    let o = satquic(&["campaign", "run", &spec, "--out", &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ran 1 runs again whose row.json could not be read"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("1 run now"), "{}", stdout(&o));
    let text = std::fs::read_to_string(&row).unwrap();
    assert!(text.trim_start().starts_with('{'), "{text}");
    ok(&["campaign", "collect", &out]);
    let runs_csv = std::fs::read_to_string(dir.path().join("out/runs.csv")).unwrap();
    assert_eq!(runs_csv.lines().count(), 3, "{runs_csv}");
    // A directory without its row.json is the same.
    std::fs::remove_file(&row).unwrap();
    usage_error(&["campaign", "collect", &out]);
    ok(&["campaign", "run", &spec, "--out", &out]);
    ok(&["campaign", "collect", &out]);
}

/// A small tmpfs mounted (as root) for the test's life; `None` where mounting is not
/// allowed (not root, no tmpfs).
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(at: &Path, size: &str, read_only: bool) -> Option<SmallFs> {
        std::fs::create_dir_all(at).unwrap();
        let mut options = format!("size={size}");
        if read_only {
            options.push_str(",ro");
        }
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallFs(at.to_path_buf()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A full disk: `campaign collect` names runs.csv, the file it could not write (it named
/// the directory), and leaves no `.runs.csv.PID.N.tmp` behind (an empty one stayed, and no
/// resume removed it); one a killed process left is removed by the next `campaign run`.
#[test]
fn a_full_disk_names_the_file_and_leaves_no_temporary_file() {
    let dir = TempDir::new("full");
    let Some(_fs) = SmallFs::mount(&dir.path().join("fs"), "4m", false) else {
        eprintln!("skipped: cannot mount a tmpfs here (root only)");
        return;
    };
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        "name = \"tiny\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"200kB\"\n",
    )
    .unwrap();
    let out = dir.path().join("fs/out");
    ok(&["campaign", "run", &spec, "--out", out.to_str().unwrap()]);
    // Fill what is left.
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(dir.path().join("fs/filler")).unwrap();
        let block = vec![0u8; 1 << 16];
        while filler.write_all(&block).is_ok() {}
        let _ = filler.flush();
    }
    let o = satquic(&["campaign", "collect", out.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&out.join("runs.csv").display().to_string()) && err.contains("space"),
        "{err}"
    );
    let temporaries = || -> Vec<String> {
        std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    };
    assert!(temporaries().is_empty(), "{:?}", temporaries());
    std::fs::remove_file(dir.path().join("fs/filler")).unwrap();
    // One left by a process that is gone, two minutes ago, is removed on resume.
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .map_or(4_194_304, |s| s.trim().parse().unwrap());
    let stale = out.join(format!(".runs.csv.{}.0.tmp", pid_max + 1));
    let file = std::fs::File::create(&stale).unwrap();
    file.set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    drop(file);
    ok(&["campaign", "run", &spec, "--out", out.to_str().unwrap()]);
    assert!(temporaries().is_empty(), "{:?}", temporaries());
}

/// An existing output directory this process cannot write in (a read-only file system
/// here) is refused in one line, exit 2, as a path that cannot be made is; it failed at the
/// first file, exit 1.
#[test]
fn a_read_only_output_directory_is_refused_at_once() {
    let dir = TempDir::new("readonly");
    let Some(_fs) = SmallFs::mount(&dir.path().join("ro"), "1m", true) else {
        eprintln!("skipped: cannot mount a tmpfs here (root only)");
        return;
    };
    let ro = dir.join("ro");
    let err = usage_error(&[
        "beside", "--quick", "--only", "pairs", "--links", "qir-sat", "--cc", "cubic", "--out", &ro,
    ]);
    assert!(
        err.contains("cannot write in the output directory"),
        "{err}"
    );
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        "name = \"tiny\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"200kB\"\n",
    )
    .unwrap();
    let err = usage_error(&["campaign", "run", &spec, "--out", &ro]);
    assert!(
        err.contains("cannot write in the output directory"),
        "{err}"
    );
}

#[test]
fn a_campaign_directory_is_not_taken_over_and_is_locked_while_in_use() {
    let dir = TempDir::new("owner");
    let spec = |name: &str| {
        let path = dir.join(&format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\n\
                 cc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"200KB\"\n"
            ),
        )
        .unwrap();
        path
    };
    let (first, second) = (spec("first"), spec("second"));
    let out = dir.join("out");
    ok(&["campaign", "run", &first, "--out", &out]);
    let json = std::fs::read_to_string(dir.path().join("out/campaign.json")).unwrap();
    let err = usage_error(&["campaign", "run", &second, "--out", &out]);
    assert!(err.contains("holds campaign \"first\""), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/campaign.json")).unwrap(),
        json,
        "untouched"
    );
    // Resuming the same campaign is what --out is for.
    ok(&["campaign", "run", &first, "--out", &out]);
    // A lock another invocation holds (on another host: never guessed stale) refuses.
    let lock = dir.path().join("out/.lock");
    std::fs::write(&lock, format!("{} elsewhere\n", std::process::id())).unwrap();
    let err = usage_error(&["campaign", "run", &first, "--out", &out]);
    assert!(err.contains("in use"), "{err}");
    std::fs::remove_file(&lock).unwrap();
    // A corrupt campaign.json is refused, not overwritten, unless --force.
    std::fs::write(dir.path().join("out/campaign.json"), "{ not json").unwrap();
    let err = usage_error(&["campaign", "run", &first, "--out", &out]);
    assert!(err.contains("campaign.json"), "{err}");
    usage_error(&["report", &out]);
    ok(&["campaign", "run", &second, "--out", &out, "--force"]);
    assert!(!lock.exists(), "the lock is gone when the run ends");
    // --out naming a file.
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = usage_error(&["campaign", "run", &first, "--out", &file]);
    assert!(err.contains("not a directory"), "{err}");
}

#[test]
fn output_paths_that_are_files_and_empty_names_are_usage_errors() {
    let dir = TempDir::new("outfile");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let err = usage_error(&["reproduce", "--only", "c", "--out", &file]);
    assert!(err.contains("not a directory"), "{err}");
    let err = usage_error(&["reproduce", "--only", "", "--out", &dir.join("r")]);
    assert!(err.contains("empty"), "{err}");
    assert!(!dir.path().join("r").exists(), "nothing ran");
    let spec = dir.join("tiny.toml");
    std::fs::write(
        &spec,
        "name = \"tiny\"\n[[link]]\npreset = \"qir-terrestrial\"\n[[variant]]\ncc = \"cubic\"\n\
         [[workload]]\nkind = \"download\"\nbytes = \"200KB\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    ok(&["campaign", "run", &spec, "--out", &out]);
    let err = usage_error(&["report", &out, "-o", &file]);
    assert!(err.contains("not a directory"), "{err}");
    // The same bad output path is exit 2 from every command (issue 32 item 6: sim exited
    // 1 for a file, sim and campaign run 1 for a path that cannot be created).
    let under_file = dir.join("a-file/sub");
    for bad in [file.as_str(), "/proc/satquic-x", under_file.as_str()] {
        let sim = [
            "sim",
            "--link",
            "qir-terrestrial",
            "-n",
            "100K",
            "--out",
            bad,
        ];
        let campaign = ["campaign", "run", &spec, "--out", bad];
        let report = ["report", &out, "-o", bad];
        let reproduce = ["reproduce", "--only", "c", "--out", bad];
        for args in [&sim[..], &campaign, &report, &reproduce] {
            let err = usage_error(args);
            assert!(err.contains(bad), "{args:?}: {err}");
        }
    }
}

#[test]
fn argument_errors_of_clap_are_one_line_with_the_problem_first() {
    let err = usage_error(&["campaign", "run", "spec.toml"]);
    assert!(
        err.contains("required arguments were not provided") && err.contains("--out"),
        "{err}"
    );
    let err = usage_error(&["sim", "--no-such-flag"]);
    assert!(err.contains("--no-such-flag"), "{err}");
    let err = usage_error(&["client"]);
    assert!(err.contains("HOST"), "{err}");
    usage_error(&["no-such-command"]);
}

#[test]
fn a_relay_to_itself_and_contradicting_or_empty_values_are_refused() {
    let err = usage_error(&["link", "--listen", "127.0.0.1:7", "--to", "127.0.0.1:7"]);
    assert!(err.contains("own address"), "{err}");
    usage_error(&["link", "--listen", "0.0.0.0:7", "--to", "127.0.0.1:7"]);
    // Host names are taken (resolved), with a port.
    let err = usage_error(&["link", "--listen", "localhost", "--to", "127.0.0.1:7"]);
    assert!(err.contains("HOST:PORT"), "{err}");
    let err = usage_error(&["client", "[::1"]);
    assert!(err.contains("[ADDR]"), "{err}");
    let err = usage_error(&["client", "127.0.0.1:9", "--sni", ""]);
    assert!(err.contains("server name"), "{err}");
    let err = usage_error(&["client", "127.0.0.1:9", "-p", "10"]);
    assert!(err.contains("contradicts"), "{err}");
    // Queues that hold no QUIC packet.
    let err = usage_error(&["sim", "--link", "thesis-sat:buffer=1e-300"]);
    assert!(err.contains("holds no packet"), "{err}");
    let err = usage_error(&[
        "link",
        "--listen",
        "127.0.0.1:7",
        "--to",
        "127.0.0.1:8",
        "--queue",
        "1000",
    ]);
    assert!(err.contains("holds no packet"), "{err}");
    // One initial-window rule for every command.
    for args in [
        &["sim", "--iw", "1000"][..],
        &["run", "--iw", "1"],
        &["client", "127.0.0.1", "--iw", "1000"],
        &["server", "--iw", "1000"],
    ] {
        let err = usage_error(args);
        assert!(
            err.contains("initial window 1000 bytes") || err.contains("initial window 1 bytes"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("variant["),
            "{args:?}: a TOML path in a flag error: {err}"
        );
    }
    let err = usage_error(&["sim", "--sender-cap", "200MB"]);
    assert!(err.contains("bits per second"), "{err}");
    let relay = ["link", "--listen", "127.0.0.1:7", "--to", "127.0.0.1:8"];
    // The files written at exit are checked before the run: a missing directory, a
    // directory, and a FIFO (whose closing write would block) are refused at once.
    let fifo = std::env::temp_dir().join(format!("satquic-cli-fifo-{}", std::process::id()));
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    for flag in ["--summary-json", "--flows-json"] {
        for file in ["/nonexistent/dir/s.json", "/", fifo.to_str().unwrap()] {
            let err = usage_error(&[&relay[..], &["--duration", "1s", flag, file]].concat());
            assert!(err.contains(flag), "{flag} {file}: {err}");
        }
    }
    std::fs::remove_file(&fifo).unwrap();
    // A character device is written as a file is.
    let o = satquic(&[
        "link",
        "--listen",
        "127.0.0.1:0",
        "--to",
        "127.0.0.1:9",
        "--duration",
        "200ms",
        "--summary-json",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = usage_error(&[&relay[..], &["--sender-cap", "200M"]].concat());
    assert!(err.contains("needs a link model"), "{err}");
    let err = usage_error(
        &[
            &relay[..],
            &["--link", "geo-viasat", "--sender-cap", "200MB"],
        ]
        .concat(),
    );
    assert!(err.contains("bits per second"), "{err}");
    let err = usage_error(&["sim", "--cc", "cubic+search:v2,v3"]);
    assert!(err.contains("contradict"), "{err}");
    let err = usage_error(&[
        "client",
        "127.0.0.1",
        "--cc",
        "cubic+search:shadow",
        "--search-mode",
        "exit",
    ]);
    assert!(err.contains("contradict"), "{err}");
}

#[test]
fn an_h3_client_fetches_a_path_without_a_size() {
    let www = TempDir::new("www");
    std::fs::write(www.path().join("index.html"), "<html>hi</html>").unwrap();
    let port = free_port();
    let server = format!("127.0.0.1:{port}");
    let _server = spawn(&["server", "--listen", &server, "--www", &www.join("")]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let v: serde_json::Value = loop {
        let o = satquic(&[
            "client",
            &server,
            "--alpn",
            "h3",
            "--path",
            "/index.html",
            "--insecure",
            "-J",
        ]);
        if o.status.success() {
            break serde_json::from_slice(&o.stdout).unwrap();
        }
        assert!(
            !stderr(&o).contains("needs the perf protocol"),
            "{}",
            stderr(&o)
        );
        assert!(Instant::now() < deadline, "{}", stderr(&o));
        std::thread::sleep(Duration::from_millis(300));
    };
    assert_eq!(v["flows"][0]["delivered_bytes"], 15, "{v}");
    assert_eq!(
        v["flows"][0]["requested_bytes"],
        serde_json::Value::Null,
        "{v}"
    );
    let err = usage_error(&["client", &server, "--alpn", "h3"]);
    assert!(err.contains("--path"), "{err}");
}

/// `satquic server` on `listen`, and the SHA-256 of its certificate (from its first lines).
fn server_with_fingerprint(listen: &str) -> (Background, String) {
    use std::io::BufRead;
    let mut child = Command::new(BIN)
        .args(["server", "--listen", listen])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let background = Background(child);
    for line in lines {
        if let Some(fp) = line.unwrap().strip_prefix("certificate sha256 ") {
            return (background, fp.trim().to_string());
        }
    }
    panic!("the server printed no fingerprint");
}

#[test]
fn the_client_verifies_the_server_certificate_unless_told_not_to() {
    let server = format!("127.0.0.1:{}", free_port());
    let (_server, fingerprint) = server_with_fingerprint(&server);
    // By default a self-signed certificate is refused: one line, the fingerprint and how
    // to pin it, exit code 1, and no warning before it.
    let o = satquic(&["client", &server, "-n", "10K"]);
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let system_cas = std::env::var_os("SSL_CERT_FILE").is_some()
        || [
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/ca-bundle.pem",
            "/etc/ssl/cert.pem",
        ]
        .iter()
        .any(|f| Path::new(f).is_file());
    if system_cas {
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("refused") && err.contains(&format!("--pin {fingerprint}")),
            "{err}"
        );
    } else {
        // A machine without a CA bundle: nothing to verify against, said at once.
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("--pin"), "{err}");
    }
    // Pinned: accepted. --insecure: accepted, and quietly.
    ok(&["client", &server, "-n", "10K", "--pin", &fingerprint]);
    let o = satquic(&["client", &server, "-n", "10K", "--insecure"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    // A wrong pin is refused; a CA file that is not there, or two ways at once, are usage
    // errors.
    let o = satquic(&["client", &server, "-n", "10K", "--pin", &"ab".repeat(32)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("does not match --pin"),
        "{}",
        stderr(&o)
    );
    let err = usage_error(&["client", &server, "--ca", "/nonexistent/ca.pem"]);
    assert!(err.contains("--ca"), "{err}");
    usage_error(&["client", &server, "--insecure", "--pin", &fingerprint]);
}

/// Lines a child prints, read on a thread.
fn lines_of(out: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits (bounded) for a line of `lines` that `want` accepts.
fn wait_for(lines: &std::sync::mpsc::Receiver<String>, want: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if want(&line) => return line,
            Ok(_) => {}
            Err(e) => panic!("no such line: {e}"),
        }
    }
}

/// The counter `name` of a `satquic server -i` line (`connections 1 (accepted 1, ...`).
fn server_counter(line: &str, name: &str) -> Option<u64> {
    let words: Vec<&str> = line
        .split(|c: char| c == ',' || c == '(' || c == ')' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let i = words.iter().position(|w| *w == name)?;
    words.get(i + 1)?.parse().ok()
}

#[test]
fn ctrl_c_closes_the_connection_and_prints_the_partial_results() {
    let server = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(BIN)
        .args(["server", "--listen", &server, "-i"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server_lines = lines_of(child.stdout.take().unwrap());
    let _server = Background(child);
    wait_for(&server_lines, |l| l.starts_with("certificate sha256"));
    for signal in ["-INT", "-TERM"] {
        let mut client = Command::new(BIN)
            .args(["client", &server, "-t", "60", "-i", "0.2", "--insecure"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = lines_of(client.stdout.take().unwrap());
        let err = lines_of(client.stderr.take().unwrap());
        let pid = client.id().to_string();
        let client = Background(client);
        wait_for(&out, |l| l.starts_with("[  0]"));
        wait_for(&server_lines, |l| {
            server_counter(l, "connections") == Some(1)
        });
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success());
        // The partial summary, and exit code 1 with one line saying why.
        let summary = wait_for(&out, |l| l.contains(" in ") && l.contains("Mbit/s ("));
        assert!(summary.contains("(interrupted"), "{summary}");
        let why = wait_for(&err, |_| true);
        assert!(why.contains("interrupted"), "{why}");
        let mut client = client;
        let deadline = Instant::now() + Duration::from_secs(10);
        let code = loop {
            if let Some(s) = client.0.try_wait().unwrap() {
                break s.code();
            }
            assert!(Instant::now() < deadline, "the client did not end");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(code, Some(1), "{signal}");
        // The server heard the CONNECTION_CLOSE: the connection is gone without being
        // abandoned as silent (nor waiting for the 30 s idle timeout).
        let line = wait_for(&server_lines, |l| {
            server_counter(l, "connections") == Some(0)
        });
        assert_eq!(server_counter(&line, "abandoned"), Some(0), "{line}");
    }
}

#[test]
fn a_port_nothing_listens_on_is_reported_at_once() {
    let server = format!("127.0.0.1:{}", free_port());
    let started = Instant::now();
    let o = satquic(&["client", &server, "-n", "1K", "--insecure"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("connection refused"), "{err}");
    // Not after the 30 s handshake timeout.
    assert!(started.elapsed() < Duration::from_secs(15), "{err}");
}

#[test]
fn www_serves_index_html_for_a_directory() {
    let www = TempDir::new("www-index");
    std::fs::write(www.path().join("index.html"), "<html>home</html>").unwrap();
    let server = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(BIN)
        .args(["server", "--listen", &server, "--www", &www.join("")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Read on (and keep reading) so that the server's stdout stays open.
    let lines = lines_of(child.stdout.take().unwrap());
    let _server = Background(child);
    wait_for(&lines, |l| l.starts_with("serving"));
    let o = satquic(&[
        "client",
        &server,
        "--alpn",
        "h3",
        "--path",
        "/",
        "--insecure",
        "-J",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["flows"][0]["delivered_bytes"], 17, "{v}");
}

#[test]
fn a_run_cut_short_prints_its_results_and_exits_1() {
    let o = satquic(&[
        "run",
        "--link",
        "qir-terrestrial",
        "-n",
        "100M",
        "-t",
        "1",
        "-J",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("incomplete"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the record still");
    assert_eq!(v["outcome"], "capped", "{v}");
}

/// Every file satquic reads whole has a size limit and must be a regular file: a device,
/// a FIFO or a 10 GB sparse file named as a link, a trace, a campaign spec, an adapter
/// file or a campaign directory's files is refused at once in one line that states the
/// limit (issue 32 item 1; `sim --link /dev/zero` took 4.5 GB in 3 s before).
#[test]
fn files_that_are_devices_fifos_or_huge_are_refused_with_their_limit() {
    let started = Instant::now();
    let dir = TempDir::new("bounded");
    let fifo = dir.join("fifo");
    let made_fifo = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let sparse = dir.join("sparse.toml");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(10_000_000_000)
        .unwrap();
    let trace_link = dir.join("trace.toml");
    std::fs::write(
        &trace_link,
        "name = \"z\"\n[down]\nrate = { kind = \"mahimahi_trace\", file = \"/dev/zero\" }\n\
         delay = { base = \"20ms\" }\nqueue = { limit = { bytes = 100000 } }\n[up]\n\
         rate = { kind = \"constant\", rate_bps = 1000000 }\ndelay = { base = \"20ms\" }\n\
         queue = { limit = { bytes = 100000 } }\n",
    )
    .unwrap();
    let campaign = dir.join("c.toml");
    std::fs::write(
        &campaign,
        format!(
            "name = \"z\"\n[[link]]\nfile = \"{trace_link}\"\n[[variant]]\ncc = \"cubic\"\n\
             [[workload]]\nkind = \"download\"\nbytes = \"200KB\"\n"
        ),
    )
    .unwrap();
    let not_campaign = dir.join("not-campaign");
    std::fs::create_dir_all(&not_campaign).unwrap();
    std::os::unix::fs::symlink("/dev/zero", Path::new(&not_campaign).join("campaign.json"))
        .unwrap();
    let (out_o1, out_o2, out_o3, out_r) = (
        dir.join("o1"),
        dir.join("o2"),
        dir.join("o3"),
        dir.join("r"),
    );
    let mut cases: Vec<(Vec<&str>, &[&str])> = vec![
        (
            vec!["sim", "--link", "/dev/zero", "-n", "1M"],
            &["/dev/zero", "character device", "4 MiB"],
        ),
        (
            vec!["sim", "--link", &sparse, "-n", "1M"],
            &["10000000000 bytes", "4 MiB"],
        ),
        (
            vec!["sim", "--link", &trace_link, "-n", "1M"],
            &["/dev/zero", "mahimahi trace", "64 MiB"],
        ),
        (
            vec!["campaign", "run", "/dev/zero", "--out", &out_o1],
            &["campaign spec", "16 MiB"],
        ),
        (
            vec!["campaign", "run", &campaign, "--out", &out_o2],
            &["/dev/zero", "64 MiB"],
        ),
        (
            vec!["report", &not_campaign, "-o", &out_r],
            &["campaign.json", "64 MiB"],
        ),
        (
            vec!["matrix", "--adapters", "/dev/zero", "--list"],
            &["adapter file", "1 MiB"],
        ),
    ];
    if made_fifo {
        cases.push((vec!["sim", "--link", &fifo, "-n", "1M"], &["a FIFO"]));
        cases.push((
            vec!["campaign", "run", &fifo, "--out", &out_o3],
            &["a FIFO"],
        ));
    }
    for (args, needles) in &cases {
        let err = usage_error(args);
        for needle in *needles {
            assert!(err.contains(needle), "{args:?}: {err} lacks {needle:?}");
        }
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// A negative number given to a `link` flag gets the flag's range, not clap's
/// "unexpected argument '-0' found" (issue 32 item 9).
#[test]
fn negative_numbers_for_link_flags_get_the_range() {
    let base = ["link", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"];
    let cases: &[(&[&str], &[&str])] = &[
        (&["--loss", "-0.1"], &["--loss", "between 0 and 1"]),
        (&["--rate", "-5M"], &["--rate", "-5M"]),
        (&["--up-rate", "-1M"], &["--up-rate", "-1M"]),
        (&["--delay", "-1ms"], &["--delay", "negative"]),
        (&["--down-delay", "-3ms"], &["--down-delay", "negative"]),
        (&["--queue", "-5"], &["--queue", "-5"]),
        (&["--sender-cap", "-1M"], &["--sender-cap", "-1M"]),
        (&["--seed", "-1"], &["--seed", "whole number from 0"]),
        (
            &["--max-flows", "-1"],
            &["--max-flows", "whole number from 1"],
        ),
    ];
    for (flag, needles) in cases {
        let args: Vec<&str> = base.iter().chain(flag.iter()).copied().collect();
        let err = usage_error(&args);
        for needle in *needles {
            assert!(err.contains(needle), "{flag:?}: {err} lacks {needle:?}");
        }
        assert!(!err.contains("unexpected argument"), "{flag:?}: {err}");
    }
}

/// Finished run directories of a campaign directory (a finished run has its row.json).
fn finished_runs(out: &Path) -> usize {
    std::fs::read_dir(out.join("runs")).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.path().join("row.json").is_file())
            .count()
    })
}

/// Starts `campaign run`, sends `signal` once `after` runs have finished, and checks
/// how it ended: exit 1 (not killed), one line saying how to resume, runs.csv with a
/// row per finished run, no lock, no half-written run; returns the finished runs.
fn signal_campaign(spec: &str, out: &Path, signal: &str, after: usize) -> usize {
    let child = Command::new(BIN)
        .args([
            "campaign",
            "run",
            spec,
            "--out",
            out.to_str().unwrap(),
            "-j",
            "1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while finished_runs(out) < after && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(o.status.code(), Some(1), "{signal}: {:?}: {err}", o.status);
    assert!(
        last.contains("stopped") && last.contains("run the same command again to resume"),
        "{signal}: {err}"
    );
    let finished = finished_runs(out);
    let csv = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(csv.lines().count(), finished + 1, "{signal}: {csv}");
    assert!(
        last.contains(&format!("runs.csv holds {finished} rows")),
        "{last}"
    );
    let left: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .chain(std::fs::read_dir(out.join("runs")).unwrap())
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".lock") || name.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{signal}: left behind {left:?}");
    finished
}

/// SIGTERM and SIGINT during `campaign run` stop it cleanly: the runs in flight are
/// abandoned, runs.csv is written for what finished, the lock is released, and the same
/// command resumes (issue 32 item 7; before, SIGTERM killed it with the lock held and no
/// runs.csv).
#[test]
fn a_signalled_campaign_writes_its_rows_releases_its_lock_and_resumes() {
    let dir = TempDir::new("signal");
    let spec = dir.join("sig.toml");
    std::fs::write(
        &spec,
        "name = \"sig\"\nrepetitions = 8\n[[link]]\npreset = \"sat-250-3\"\n[[variant]]\n\
         cc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"20MB\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let first = signal_campaign(&spec, &out, "-TERM", 1);
    assert!((1..8).contains(&first), "{first} of 8 finished");
    let second = signal_campaign(&spec, &out, "-INT", first + 1);
    assert!(second > first, "{second} after {first}");
    let text = ok(&["campaign", "run", &spec, "--out", out.to_str().unwrap()]);
    assert!(
        text.contains(&format!("{second} finished before")),
        "{text}"
    );
    assert_eq!(finished_runs(&out), 8);
}

/// Runs `args` expecting it to end by itself within `limit`: a server that should refuse
/// to start must not be waited for forever. Killed (and the test failed) otherwise.
fn ends_within(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!("{args:?} still running after {limit:?}: {}", stdout(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `server --qlog FILE` started, served and wrote nothing; `client --path` under the
/// default perf protocol moved perf data and ignored the path. Both are refused at start
/// with one line and exit 2 (issue 32 items 3 and 5).
#[test]
fn a_qlog_path_that_is_no_directory_and_a_path_under_perf_are_refused_at_start() {
    let dir = TempDir::new("qlogfile");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    for qlog in [file.as_str(), "/proc/satquic-x"] {
        let o = ends_within(
            &["server", "--listen", &listen, "--qlog", qlog],
            Duration::from_secs(20),
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{qlog}: {err}");
        assert!(err.contains("--qlog") && err.contains(qlog), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    let err = usage_error(&["client", &listen, "-n", "1M", "--qlog", &file, "--insecure"]);
    assert!(err.contains("not a directory"), "{err}");
    // A directory whose parents are missing (a mistyped path): refused, and no tree of
    // directories made (before, the server made the whole tree, as root anywhere).
    let deep = dir.join("a/b/c");
    let o = ends_within(
        &["server", "--listen", &listen, "--qlog", &deep],
        Duration::from_secs(20),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("its parent") && err.contains("does not exist"),
        "{err}"
    );
    let err = usage_error(&["client", &listen, "-n", "1M", "--qlog", &deep, "--insecure"]);
    assert!(err.contains("its parent"), "{err}");
    assert!(
        !std::path::Path::new(&dir.join("a")).exists(),
        "nothing made"
    );
    for extra in [&["-t", "1"][..], &[]] {
        let args: Vec<&str> = ["client", &listen, "--path", "/f", "--insecure"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        let o = ends_within(&args, Duration::from_secs(20));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--path needs --alpn"), "{err}");
    }
}
