//! `satquic link --tun` end to end: real traffic between two network namespaces through
//! the model, the namespaces removed on SIGTERM, existing names refused; and a kernel TCP
//! row of `satquic matrix` with a classified slow-start exit.
//!
//! These need root, /dev/net/tun and (for the TCP row) iperf3, which `.ci/run` installs
//! through `scripts/install-peers.sh tcp`. Without them the tests fail and say why: they
//! do not skip quietly.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn require_root_and_tun() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| text(&o.stdout).trim() == "0");
    assert!(
        root,
        "this test needs root (network namespaces and TUN devices); run the tests as root as CI does"
    );
    assert!(
        Path::new("/dev/net/tun").exists(),
        "this test needs /dev/net/tun (the tun module)"
    );
}

fn require(program: &str, install: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()));
    assert!(found, "this test needs {program}; {install}");
}

fn ns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// A process killed (SIGKILL) if the test fails while it runs.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn sigterm(child: &Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
}

#[test]
fn tun_link_carries_quic_with_the_links_delay_and_removes_its_namespaces() {
    require_root_and_tun();
    let (c, s) = (
        format!("sqt-c-{}", std::process::id()),
        format!("sqt-s-{}", std::process::id()),
    );
    // 50 ms each way: every RTT sample is at least 100 ms.
    let mut link = Command::new(BIN)
        .args([
            "link",
            "--tun",
            "--client-ns",
            &c,
            "--server-ns",
            &s,
            "--rate",
            "20M",
            "--delay",
            "50ms",
            "-q",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("satquic runs");
    let stdout = link.stdout.take().unwrap();
    let mut link = Guard(Some(link));
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        first.contains(&c) && first.contains(&s),
        "satquic link --tun did not come up: {first}"
    );
    let mut said = first.clone();
    for l in lines.by_ref().take(4).map_while(Result::ok) {
        said.push('\n');
        said.push_str(&l);
    }
    assert!(said.contains(&format!("ip netns exec {c} ")), "{said}");
    assert!(ns_exists(&c) && ns_exists(&s));

    let mut server = Guard(Some(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &s,
                BIN,
                "server",
                "--listen",
                "10.199.0.2:4433",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts"),
    ));
    std::thread::sleep(Duration::from_millis(500));
    let client = Command::new("ip")
        .args([
            "netns",
            "exec",
            &c,
            BIN,
            "client",
            "10.199.0.2:4433",
            "-n",
            "1M",
            "-i",
            "0.2",
            "-J",
            "--insecure",
        ])
        .output()
        .expect("the client runs");
    let out = text(&client.stdout);
    assert!(
        client.status.success(),
        "client failed: {out}{}",
        text(&client.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("client -J prints JSON");
    assert_eq!(
        v.pointer("/flows/0/delivered_bytes")
            .and_then(|b| b.as_u64()),
        Some(1_000_000),
        "{out}"
    );
    let mut rtts = Vec::new();
    collect_rtts(&v, &mut rtts);
    assert!(!rtts.is_empty(), "no RTT in the client's JSON: {out}");
    let min = rtts.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        min >= 0.100,
        "an RTT of {min} s is below the link's 2 x 50 ms: the traffic did not cross the model"
    );
    drop(server.0.take().map(|mut s| {
        let _ = s.kill();
        s.wait()
    }));

    // SIGTERM: the link stops, reports and removes both namespaces.
    let mut child = link.0.take().unwrap();
    sigterm(&child);
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "satquic link --tun did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(status.success(), "exit {status:?}: {rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("removed")),
        "no closing report: {rest:?}"
    );
    assert!(
        !ns_exists(&c) && !ns_exists(&s),
        "namespaces left behind after SIGTERM"
    );
}

fn collect_rtts(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k.contains("rtt")
                    && let Some(f) = x.as_f64()
                {
                    out.push(f);
                }
                collect_rtts(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_rtts(x, out)),
        _ => {}
    }
}

#[test]
fn existing_namespace_names_are_refused_in_one_line() {
    require_root_and_tun();
    let taken = format!("sqt-taken-{}", std::process::id());
    assert!(
        Command::new("ip")
            .args(["netns", "add", &taken])
            .status()
            .unwrap()
            .success()
    );
    let o = Command::new(BIN)
        .args([
            "link",
            "--tun",
            "--client-ns",
            &taken,
            "--server-ns",
            &format!("sqt-free-{}", std::process::id()),
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    let _ = Command::new("ip").args(["netns", "del", &taken]).status();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("exists"), "{err}");
    // Same names for both sides, a bad name: usage errors too, before anything is made.
    for args in [
        &["--client-ns", "same", "--server-ns", "same"][..],
        &["--client-ns", "a b"],
    ] {
        let o = Command::new(BIN)
            .args(["link", "--tun"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("satquic-tun-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn read_hystart() -> String {
    std::fs::read_to_string("/sys/module/tcp_cubic/parameters/hystart").unwrap_or_default()
}

#[test]
fn a_kernel_tcp_row_has_a_classified_slow_start_exit() {
    require_root_and_tun();
    require(
        "iperf3",
        "run scripts/install-peers.sh tcp (Debian's iperf3)",
    );
    let hystart_before = read_hystart();
    let dir = temp_dir("tcp");
    let dir_s = dir.to_str().unwrap();
    // HyStart off on a 20 Mbit/s, 30 ms path with 25-packet queues: slow start ends in a
    // loss well within 4 MB.
    let o = Command::new(BIN)
        .args([
            "matrix",
            "--impl",
            "tcp-cubic",
            "--preset",
            "qir-terrestrial",
            "-n",
            "100k",
            "--tcp-bytes",
            "4MB",
            "--reps",
            "1",
            "--time-cap",
            "30s",
            "--out",
            dir_s,
        ])
        .output()
        .expect("satquic runs");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("kernel TCP"), "{out}");
    let rows = satquic_lab::dataset::read_csv(&dir.join("runs.csv")).unwrap();
    assert_eq!(rows.len(), 1, "{out}");
    let r = &rows[0];
    assert_eq!(r.status, "completed", "{}", r.reason);
    assert_eq!(r.transport.as_deref(), Some("tcp"));
    assert_eq!(r.client_impl.as_deref(), Some("tcp-cubic"));
    assert_eq!(r.cc, "cubic");
    assert_eq!(r.bytes, Some(4_000_000));
    assert!(r.completion_time_s.is_some_and(|t| t > 0.0));
    assert!(r.exit_at_s.is_some(), "no slow-start exit found: {out}");
    assert_eq!(r.exit_reason.as_deref(), Some("loss"));
    assert_eq!(r.exit_class.as_deref(), Some("late"), "{out}");
    let min_rtt = r.min_rtt_s.expect("tcp_info RTTs");
    assert!(
        min_rtt >= 0.030,
        "min RTT {min_rtt} s below the preset's 30 ms"
    );
    let run_dir = dir.join("runs").join(&r.run_id);
    // The time the link had delivered each MB, within the run, in order.
    let mb = satquic_lab::dataset::read_chunks(&run_dir);
    let t = r.completion_time_s.unwrap();
    assert_eq!(mb.len(), 4, "{mb:?}");
    assert!(
        mb.windows(2).all(|w| w[0] <= w[1]) && mb[0] > 0.0 && mb[3] <= t + 1e-6,
        "{mb:?} {t}"
    );
    let csv = std::fs::read_to_string(run_dir.join("tcp_info.csv")).unwrap();
    assert!(csv.lines().count() > 5, "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.split(',').nth(4).is_some_and(|s| !s.is_empty()))
    );
    // The module parameter is restored, the run's namespaces removed.
    assert_eq!(read_hystart(), hystart_before);
    let commands = std::fs::read_to_string(run_dir.join("commands.txt")).unwrap();
    let ns: Vec<&str> = commands
        .split_whitespace()
        .skip_while(|w| *w != "--client-ns")
        .skip(1)
        .step_by(2)
        .take(2)
        .collect();
    assert_eq!(ns.len(), 2, "{commands}");
    for name in ns {
        assert!(!ns_exists(name), "{name} left behind");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
