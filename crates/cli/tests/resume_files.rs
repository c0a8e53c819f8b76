//! `satquic server --resume-store FILE --token-key FILE` and `satquic client --state FILE`
//! as processes: bad files are one line and exit code 2; a second client process is
//! recognised and resumed; a server stopped with SIGTERM writes its store, and its
//! successor on the same files resumes the next client without a Retry.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_satquic");

fn satquic(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Runs `args`, expecting a usage error: exit code 2, one line on stderr naming `file`,
/// no panic, nothing on stdout.
fn usage_error(args: &[&str], file: &Path) -> String {
    let o = satquic(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
    assert!(err.contains(&*file.to_string_lossy()), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
    err
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

    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
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

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A path where no file can be made, root included (sysfs takes no new files), if this
/// machine has one.
fn unwritable() -> Option<PathBuf> {
    let path = PathBuf::from("/sys/satquic-unwritable.json");
    match std::fs::write(&path, b"") {
        Ok(()) => {
            let _ = std::fs::remove_file(&path);
            eprintln!("{} is writable here: not tested", path.display());
            None
        }
        Err(_) => Some(path),
    }
}

/// `bytes` in a new file `path` that only its owner may read and write, as satquic
/// writes its own.
fn private_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Corrupt, oversized, foreign, future, shared, misplaced and unwritable files: each
/// stops the command at start with one line naming the file, exit code 2.
#[test]
fn bad_state_files_are_one_line_and_exit_code_2() {
    let dir = TempDir::new("bad-state");
    let garbage = dir.join("garbage.json");
    private_file(
        &garbage,
        b"{\"format\":\"satquic-careful-resume-store\",\"vers",
    );
    let oversized = dir.join("oversized.json");
    private_file(&oversized, &vec![b' '; 1_200_000]);
    let wrong = dir.join("wrong.json");
    private_file(
        &wrong,
        b"{\"format\":\"satquic-client-state\",\"version\":1,\"tokens\":[],\"careful_resume\":[]}",
    );
    let future = dir.join("future.json");
    private_file(
        &future,
        b"{\"format\":\"satquic-client-state\",\"version\":2,\"tokens\":[],\"careful_resume\":[]}",
    );
    let short_key = dir.join("short.key");
    private_file(&short_key, &[7u8; 5]);
    let open_key = dir.join("open.key");
    std::fs::write(&open_key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Hand-edited values no path has: refused, not handed to the controller (before, a
    // window of u64::MAX was used and showed as the ssthresh).
    let entry = |cwnd: u64, rtt_us: u64, expires: u64| {
        format!(
            "{{\"local\":null,\"remote\":\"127.0.0.1\",\"saved_cwnd_bytes\":{cwnd},\
             \"saved_rtt_us\":{rtt_us},\"saved_at_unix_ms\":1767225600000,\
             \"expires_at_unix_ms\":{expires}}}"
        )
    };
    let huge_cwnd = dir.join("huge-cwnd.json");
    private_file(
        &huge_cwnd,
        format!(
            "{{\"format\":\"satquic-careful-resume-store\",\"version\":1,\"entries\":[\n{}\n]}}",
            entry(u64::MAX, 600_000, 1767229200000)
        )
        .as_bytes(),
    );
    let huge_rtt = dir.join("huge-rtt.json");
    private_file(
        &huge_rtt,
        format!(
            "{{\"format\":\"satquic-client-state\",\"version\":1,\"tokens\":[],\"careful_resume\":[\n{}\n]}}",
            entry(1_000_000, u64::MAX, 1767229200000)
        )
        .as_bytes(),
    );
    let endless = dir.join("endless.json");
    private_file(
        &endless,
        format!(
            "{{\"format\":\"satquic-careful-resume-store\",\"version\":1,\"entries\":[\n{}\n]}}",
            entry(1_000_000, 600_000, u64::MAX)
        )
        .as_bytes(),
    );
    // A store and a state file others may write: they would steer the server's first
    // window and the client's.
    let shared_store = dir.join("shared-store.json");
    std::fs::write(
        &shared_store,
        b"{\"format\":\"satquic-careful-resume-store\",\"version\":1,\"entries\":[]}",
    )
    .unwrap();
    std::fs::set_permissions(&shared_store, std::fs::Permissions::from_mode(0o666)).unwrap();
    let shared_state = dir.join("shared-state.json");
    std::fs::write(
        &shared_state,
        b"{\"format\":\"satquic-client-state\",\"version\":1,\"tokens\":[],\"careful_resume\":[]}",
    )
    .unwrap();
    std::fs::set_permissions(&shared_state, std::fs::Permissions::from_mode(0o644)).unwrap();
    let nowhere = dir.join("missing/store.json");
    let server = |flag: &str, file: &Path| {
        usage_error(
            &["server", "--listen", "127.0.0.1:0", flag, text(file)],
            file,
        )
    };
    assert!(server("--resume-store", &garbage).contains("not a satquic-careful-resume-store"));
    assert!(server("--resume-store", &oversized).contains("1200000 bytes"));
    assert!(server("--resume-store", &wrong).contains("'satquic-client-state'"));
    assert!(server("--resume-store", &nowhere).contains("does not exist"));
    assert!(server("--token-key", &short_key).contains("5 bytes"));
    assert!(server("--token-key", &open_key).contains("chmod 600"));
    assert!(server("--resume-store", &shared_store).contains("chmod 600"));
    assert!(server("--resume-store", &huge_cwnd).contains("entry 1 has a saved_cwnd_bytes"));
    assert!(server("--resume-store", &endless).contains("entry 1 has a Lifetime"));
    let client = |file: &Path| {
        usage_error(
            &[
                "client",
                "127.0.0.1:9",
                "-n",
                "1K",
                "--insecure",
                "--state",
                text(file),
            ],
            file,
        )
    };
    assert!(client(&garbage).contains("satquic-client-state"));
    assert!(client(&oversized).contains("1200000 bytes"));
    assert!(client(&nowhere).contains("does not exist"));
    assert!(client(&future).contains("version 2"));
    assert!(client(&shared_state).contains("chmod 600"));
    assert!(client(&huge_rtt).contains("entry 1 has a saved_rtt_us"));
    if let Some(readonly) = unwritable() {
        assert!(server("--resume-store", &readonly).contains("cannot write"));
        assert!(server("--token-key", &readonly).contains("cannot create"));
        assert!(client(&readonly).contains("cannot write"));
    }
    // Nothing was written over them.
    assert_eq!(std::fs::metadata(&oversized).unwrap().len(), 1_200_000);
}

/// Runs `args` with a deadline (a command that waits on a FIFO would never return), then
/// expects what [`usage_error`] expects.
fn usage_error_at_once(args: &[&str], file: &Path) -> String {
    usage_error_at_once_with(&[], args, file)
}

/// [`usage_error_at_once`] with environment variables `env` set.
fn usage_error_at_once_with(env: &[(&str, &Path)], args: &[&str], file: &Path) -> String {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err:?}");
    assert!(err.contains(&*file.to_string_lossy()), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
    err
}

/// A FIFO nobody writes to, for every flag that names a file to read: one line and exit
/// code 2 at once (before, `open` waited for a writer for ever).
#[test]
fn a_fifo_for_any_file_flag_is_refused_at_once() {
    let dir = TempDir::new("fifo");
    let fifo = dir.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).unwrap();
    let f = text(&fifo);
    for args in [
        vec!["server", "--listen", "127.0.0.1:0", "--token-key", f],
        vec!["server", "--listen", "127.0.0.1:0", "--resume-store", f],
        vec!["server", "--listen", "127.0.0.1:0", "--cert", f, "--key", f],
        vec![
            "client",
            "127.0.0.1:9",
            "-n",
            "1K",
            "--insecure",
            "--state",
            f,
        ],
        vec!["client", "127.0.0.1:9", "-n", "1K", "--ca", f],
    ] {
        let err = usage_error_at_once(&args, &fifo);
        assert!(err.contains("FIFO"), "{args:?}: {err}");
    }
    // The record of used tokens beside a good key.
    let key = dir.join("token.key");
    private_file(&key, &[7u8; 32]);
    let used = dir.join("token.key.used");
    assert!(
        Command::new("mkfifo")
            .arg(&used)
            .status()
            .unwrap()
            .success()
    );
    let args = [
        "server",
        "--listen",
        "127.0.0.1:0",
        "--token-key",
        text(&key),
    ];
    assert!(usage_error_at_once(&args, &used).contains("FIFO"));
    // SSLKEYLOGFILE, which the server and the client open to append (rustls's own key
    // log waited for a reader for ever).
    for args in [
        vec!["server", "--listen", "127.0.0.1:0"],
        vec!["client", "127.0.0.1:9", "-n", "1K", "--insecure"],
        vec!["run", "-n", "1K"],
    ] {
        let env = [("SSLKEYLOGFILE", fifo.as_path())];
        let err = usage_error_at_once_with(&env, &args, &fifo);
        assert!(
            err.contains("SSLKEYLOGFILE") && err.contains("FIFO"),
            "{args:?}: {err}"
        );
    }
}

/// Lines a child prints, read on a thread.
fn lines_of(out: impl std::io::Read + Send + 'static) -> Receiver<String> {
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
fn wait_for(lines: &Receiver<String>, want: impl Fn(&str) -> bool) -> String {
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
fn counter(line: &str, name: &str) -> Option<u64> {
    let words: Vec<&str> = line
        .split(|c: char| c == ',' || c == '(' || c == ')' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let i = words.iter().position(|w| *w == name)?;
    words.get(i + 1)?.parse().ok()
}

/// `satquic server -i 0.1` keeping its store and key in `dir`, and its lines.
fn server(listen: &str, dir: &TempDir) -> (Background, Receiver<String>) {
    let mut child = Command::new(BIN)
        .args(["server", "--listen", listen, "-i", "0.1", "--cc", "cubic"])
        .args(["--resume-store", text(&dir.join("store.json"))])
        .args(["--token-key", text(&dir.join("token.key"))])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    wait_for(&lines, |l| l.starts_with("certificate sha256"));
    (Background(child), lines)
}

/// One `satquic client` process through the link, with its state file in `dir`.
fn client(relay: &str, dir: &TempDir) {
    let o = satquic(&[
        "client",
        relay,
        "-n",
        "3M",
        "--insecure",
        "--state",
        text(&dir.join("client.json")),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The server's counters once it has accepted `accepted` connections and none is active.
fn settled(lines: &Receiver<String>, accepted: u64) -> String {
    wait_for(lines, |l| {
        counter(l, "accepted") == Some(accepted) && counter(l, "connections") == Some(0)
    })
}

#[test]
fn client_and_server_processes_resume_across_restarts() {
    let dir = TempDir::new("resume-processes");
    let listen = format!("127.0.0.1:{}", free_port());
    let relay = format!("127.0.0.1:{}", free_port());
    let (first, lines) = server(&listen, &dir);
    let mut link = Command::new(BIN)
        .args([
            "link",
            "--listen",
            &relay,
            "--to",
            &listen,
            "--link",
            "thesis-terr",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let link_lines = lines_of(link.stdout.take().unwrap());
    let _link = Background(link);
    wait_for(&link_lines, |l| l.starts_with("satquic link"));

    // Two client processes: the second presents the first's token and is resumed.
    client(&relay, &dir);
    let line = settled(&lines, 1);
    assert_eq!(
        (counter(&line, "retries"), counter(&line, "tokens")),
        (Some(1), Some(0)),
        "{line}"
    );
    client(&relay, &dir);
    let line = settled(&lines, 2);
    assert_eq!(
        counter(&line, "retries"),
        Some(1),
        "no second Retry: {line}"
    );
    assert_eq!(counter(&line, "tokens"), Some(1), "{line}");
    assert_eq!(counter(&line, "resumed"), Some(1), "{line}");

    // SIGTERM: the server writes its store and exits 0.
    let mut first = first;
    let pid = first.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(s) = first.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0));
    let store = dir.join("store.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    assert_eq!(doc["entries"].as_array().unwrap().len(), 1, "{doc}");
    for file in [&store, &dir.join("token.key"), &dir.join("client.json")] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }

    // Its successor on the same files: the third client is resumed without a Retry.
    let (_second, lines) = server(&listen, &dir);
    client(&relay, &dir);
    let line = settled(&lines, 1);
    assert_eq!(counter(&line, "retries"), Some(0), "{line}");
    assert_eq!(counter(&line, "tokens"), Some(1), "{line}");
    assert_eq!(counter(&line, "resumed"), Some(1), "{line}");
}

/// The ID of a process that has ended.
fn ended_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A server killed (SIGKILL) at any moment of its start leaves either no key or a whole
/// one (before, a kill between the key's creation and its write left an empty key that
/// stopped every later start), and the temporary files killed writers leave beside the key
/// and the store are removed by the next start (before, they stayed for good).
#[test]
fn a_server_killed_as_it_starts_leaves_a_whole_key_or_none_and_no_leftovers() {
    let dir = TempDir::new("killed");
    let (key, store) = (dir.join("token.key"), dir.join("store.json"));
    let start = || {
        Command::new(BIN)
            .args(["server", "--listen", "127.0.0.1:0"])
            .args(["--token-key", text(&key), "--resume-store", text(&store)])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    for round in 0..25u64 {
        let _ = std::fs::remove_file(&key);
        let mut server = start();
        std::thread::sleep(Duration::from_millis(round * 3));
        server.kill().unwrap();
        server.wait().unwrap();
        match std::fs::read(&key) {
            Ok(bytes) => assert_eq!(bytes.len(), 32, "round {round}: a partial key"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "round {round}"),
        }
    }
    let dead = ended_pid();
    for name in [".token.key", ".store.json"] {
        std::fs::write(dir.join(&format!("{name}.{dead}.0.tmp")), b"half").unwrap();
    }
    let mut server = start();
    let lines = lines_of(server.stdout.take().unwrap());
    let _server = Background(server);
    wait_for(&lines, |l| l.starts_with("certificate sha256"));
    let left: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
}
