//! Inputs that asked satquic for gigabytes (issue 47): campaign plans, slot plans, probes,
//! link files and scorecard baselines. Each child runs under an address-space limit of 1 GiB (RLIMIT_AS) and a
//! guard that kills it after [`GUARD`] (a hang fails the test; no timing is asserted). It
//! either refuses in one line with exit 2, or runs within the limit, streaming what it
//! prints. Each test prints how long its children took (`--nocapture`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");
/// The address space a child may use.
const LIMIT: u64 = 1 << 30;
/// A child still running after this long is killed and the test fails.
const GUARD: Duration = Duration::from_secs(300);

struct Ran {
    status: ExitStatus,
    stdout_bytes: u64,
    stderr: String,
    took: Duration,
}

/// Runs satquic with `args` under [`LIMIT`] and [`GUARD`]; stdout is counted, not kept.
fn bounded(args: &[&str]) -> Ran {
    let dir = std::env::temp_dir();
    let tag = format!("{}-{:?}", std::process::id(), std::thread::current().id());
    let err_path = dir.join(format!("satquic-bounded-{tag}.err").replace(['(', ')'], ""));
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err_path).unwrap());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("the binary starts");
    let mut stdout = child.stdout.take().unwrap();
    let counter = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            match std::io::Read::read(&mut stdout, &mut buf) {
                Ok(0) | Err(_) => return n,
                Ok(k) => n += k as u64,
            }
        }
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still ran after {GUARD:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    let stdout_bytes = counter.join().unwrap();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    println!("{args:?}: {status} in {took:.2?}, {stdout_bytes} bytes on stdout");
    Ran {
        status,
        stdout_bytes,
        stderr,
        took,
    }
}

/// A refusal: exit 2, one line on stderr (returned), no panic, no abort, nothing printed.
fn refused(args: &[&str]) -> String {
    let r = bounded(args);
    assert_eq!(r.status.code(), Some(2), "{args:?}: {}", r.stderr);
    assert_eq!(
        r.stderr.trim_end().lines().count(),
        1,
        "{args:?}: {:?}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    assert_eq!(r.stdout_bytes, 0, "{args:?}");
    println!("  refused in {:.2?}: {}", r.took, r.stderr.trim_end());
    r.stderr
}

/// A run within the limit: exit 0, nothing on stderr; the bytes it printed.
fn ran(args: &[&str]) -> u64 {
    let r = bounded(args);
    assert!(r.status.success(), "{args:?}: {} {}", r.status, r.stderr);
    r.stdout_bytes
}

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("satquic-bounded-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
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

/// A TOML list of `n` numbers.
fn values(n: usize, scale: f64) -> String {
    let v: Vec<String> = (1..=n).map(|i| format!("{}", i as f64 * scale)).collect();
    format!("[{}]", v.join(", "))
}

/// Four parameters of 200 values (1.6 x 10^9 links: 5.8 GB and an abort before) and two
/// of 1,000 (10^6 links: 2.4 GB and 8.8 s before the right line) are counted, not built.
#[test]
fn a_campaign_plan_is_counted_before_it_is_built() {
    let dir = TempDir::new("plan");
    let four = dir.join("four.toml");
    std::fs::write(
        &four,
        format!(
            "name = \"huge\"\n[[link]]\npreset = \"geo-viasat\"\nparams = {{ plr = {}, rate = {}, queue = {}, \"aqm-at\" = {} }}\n[[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"1MB\"\n",
            values(200, 0.0001),
            values(200, 1.0),
            values(200, 0.01),
            values(200, 0.001),
        ),
    )
    .unwrap();
    let e = refused(&["campaign", "plan", &four]);
    assert!(
        e.contains("1600000000 links") && e.contains("100000 runs"),
        "{e}"
    );
    let two = dir.join("two.toml");
    std::fs::write(
        &two,
        format!(
            "name = \"big\"\n[[link]]\npreset = \"geo-viasat\"\nparams = {{ plr = {}, rate = {} }}\n[[variant]]\ncc = \"cubic\"\n[[workload]]\nkind = \"download\"\nbytes = \"1MB\"\n",
            values(1000, 0.00001),
            values(1000, 1.0),
        ),
    )
    .unwrap();
    let e = refused(&["campaign", "plan", &two]);
    assert!(e.contains("1000000 links"), "{e}");
    // Runs too, before its directory is made.
    let out = dir.join("out");
    refused(&["campaign", "run", &four, "--out", &out]);
    assert!(!Path::new(&out).exists());
}

/// `presets --toml starlink-busy` with its slots 1 ms apart (and no handover events, which
/// must end within their slot).
fn one_ms_slots(dir: &TempDir) -> String {
    let o = Command::new(BIN)
        .args(["presets", "--toml", "starlink-busy"])
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let mut out = String::new();
    let mut in_slots = false;
    let mut in_handover = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_slots = line.trim() == "[slots]";
            in_handover = line.starts_with("[slots.handover");
        }
        if in_handover {
            continue;
        }
        if in_slots && line.starts_with("interval") {
            out.push_str("interval = \"1ms\"\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(out.contains("interval = \"1ms\""), "{text}");
    let path = dir.join("fast-slots.toml");
    std::fs::write(&path, out).unwrap();
    path
}

/// 1 ms slots: `--slots --for 10000s` took 2.6 GB and aborted, `--probe --for 3000s`
/// 1.2 GB. The rows are streamed now; a probe's pings (held until it ends) are bounded.
#[test]
fn slot_plans_and_probes_stream_their_rows_or_refuse_in_one_line() {
    let dir = TempDir::new("slots");
    let link = one_ms_slots(&dir);
    // 5 million rows, within the limit (before: all held, then printed).
    let bytes = ran(&["presets", "--slots", &link, "--for", "5000s"]);
    assert!(bytes > 5_000_000 * 40, "{bytes}");
    let bytes = ran(&["presets", "--probe", &link, "--for", "3000s"]);
    assert!(bytes > 3_000_000 * 40, "{bytes}");
    // A day at the default interval (5.96 million pings), the most a probe holds: its
    // queue-occupancy record alone took more than 1 GB.
    let bytes = ran(&["presets", "--probe", "starlink-busy", "--for", "86400s"]);
    assert!(bytes > 5_900_000 * 10, "{bytes}");
    // More pings than a probe holds: refused at once.
    let e = refused(&[
        "presets",
        "--probe",
        &link,
        "--for",
        "86400s",
        "--ping-interval",
        "1ms",
    ]);
    assert!(
        e.contains("86400000 pings") && e.contains("--ping-interval"),
        "{e}"
    );
}

/// A link file is refused by its size before it is parsed (127 MB took 3.4 GB before), and
/// a table of 10^6 quantiles (accepted in 54 MB, 2.4 GB) by the file cap and, smaller, by
/// the quantile bound.
#[test]
fn link_files_are_refused_by_their_size_and_their_tables_bounded() {
    let dir = TempDir::new("link");
    // Real bytes (not sparse): the cap must hold before any parse.
    let big = dir.join("big.toml");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
        writeln!(f, "name = \"big\"\n[down]\nrate = {{ kind = \"mahimahi_trace\", opportunity_bytes = 1500, timestamps_ms = [").unwrap();
        let mut written = 0u64;
        let mut t = 0u64;
        while written < 127_000_000 {
            let s = format!("{t},");
            written += s.len() as u64;
            f.write_all(s.as_bytes()).unwrap();
            t += 1;
        }
        writeln!(f, "] }}").unwrap();
    }
    let e = refused(&["sim", "--link", &big, "-n", "1M"]);
    assert!(e.contains("4 MiB"), "{e}");
    let quantiles = |n: usize| -> String {
        let q: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{{ p = {}, rate_bps = {} }}",
                    i as f64 / (n - 1) as f64,
                    1_000_000 + i
                )
            })
            .collect();
        format!(
            "name = \"many\"\n[down]\nrate = {{ kind = \"slotted\", quantiles = [{}] }}\ndelay = {{ base = \"20ms\" }}\nqueue = {{ limit = {{ bytes = 1000000 }} }}\n[up]\nrate = {{ kind = \"constant\", rate_bps = 10000000 }}\ndelay = {{ base = \"20ms\" }}\nqueue = {{ limit = {{ bytes = 1000000 }} }}\n[slots]\n",
            q.join(", ")
        )
    };
    let many = dir.join("many.toml");
    std::fs::write(&many, quantiles(1_000_000)).unwrap();
    let e = refused(&["sim", "--link", &many, "-n", "1M"]);
    assert!(e.contains("4 MiB"), "{e}");
    std::fs::write(&many, quantiles(1001)).unwrap();
    let e = refused(&["sim", "--link", &many, "-n", "1M"]);
    assert!(e.contains("1001 quantiles") && e.contains("1000"), "{e}");
}

/// `scorecard --baseline` read its file whole, whatever it was: a FIFO nobody writes hung
/// for ever, /dev/zero took 5.6 GB in 20 s (and on), a 2 GiB file all of its size; a card
/// of another schema was taken for one and the whole set ran before the comparison. Each
/// is refused in one line before anything runs, as a campaign spec or a link file is.
#[test]
fn a_scorecard_baseline_is_refused_unless_it_is_a_saved_card() {
    let dir = TempDir::new("baseline");
    let out = dir.join("out");
    let scorecard = |baseline: &str| -> String {
        refused(&[
            "scorecard",
            "--quick",
            "--jobs",
            "1",
            "--out",
            &out,
            "--baseline",
            baseline,
        ])
    };
    let e = scorecard("/dev/zero");
    assert!(e.contains("not a regular file"), "{e}");
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.clone()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = scorecard(&fifo);
    assert!(
        e.contains("FIFO") && e.contains("not a regular file"),
        "{e}"
    );
    let huge = dir.join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let e = scorecard(&huge);
    assert!(e.contains("16 MiB"), "{e}");
    let other = dir.join("other.json");
    std::fs::write(
        &other,
        r#"{"schema":"satquic-scorecard/99","set":"quick","binary_sha256":"","specs":[],"regimes":[]}"#,
    )
    .unwrap();
    let e = scorecard(&other);
    assert!(e.contains("satquic-scorecard/99"), "{e}");
    assert!(
        !Path::new(&out).exists(),
        "--out made for a refused baseline"
    );
}
