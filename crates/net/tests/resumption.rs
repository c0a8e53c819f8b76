//! Resumption across processes, on loopback with real sockets: the server's Careful Resume
//! store and token key in files (`--resume-store`, `--token-key`), the client's tokens and
//! saved path state in a file (`--state`). A "process" here is a fresh in-memory state:
//! a new `Server` on the same files, a new `Resumption` loaded from the same file.
//!
//! Transfers go through the relay on a 20 Mbit/s, 100 ms RTT link: a path whose capacity
//! is worth saving (above the four initial windows Careful Resume asks for, RFC 9959
//! Sec. 3.1), with transfers short enough to keep the tests fast.

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use satquic_link::{DirectionSpec, LinkSpec, QueueLimit};
use satquic_net::client::{ClientOptions, Resumption, run_client};
use satquic_net::relay::{Relay, RelayOptions};
use satquic_net::{ClientResult, Server, ServerOptions, ServerStats};
use satquic_run::TransportSpec;

/// A transfer long enough for the sender to measure the path (several round trips at
/// the link's rate), short enough for a test.
const BYTES: u64 = 3_000_000;

fn link() -> LinkSpec {
    let d = DirectionSpec::simple(20_000_000, Duration::from_millis(50), QueueLimit::Bdp(1.0));
    LinkSpec {
        name: "scaled".into(),
        description: "20 Mbit/s, 100 ms RTT, 1 BDP".into(),
        source: "test".into(),
        down: d.clone(),
        up: d,
        slots: None,
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn runtime() -> tokio::runtime::Runtime {
    satquic_net::install_crypto_provider();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("satquic-resume-{tag}-{}", std::process::id()));
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

/// A serving server (Retry on, as `satquic server` by default) keeping its store and key
/// in `store` and `key`, on `port` (0: any).
struct Serving {
    server: Arc<Server>,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Binds (again and again for a while if the port is still held by a server that
    /// just stopped) and serves.
    async fn start(port: u16, store: Option<&Path>, key: Option<&Path>) -> Self {
        let mut options = ServerOptions {
            listen: loopback(port),
            resume_store: store.map(Path::to_path_buf),
            token_key: key.map(Path::to_path_buf),
            ..ServerOptions::default()
        };
        options.transport.spec = TransportSpec::with_cc("cubic");
        let mut tries = 0;
        let server = loop {
            match Server::bind(options.clone()) {
                Ok(s) => break Arc::new(s),
                Err(e) if tries < 100 => {
                    tries += 1;
                    eprintln!("{e}; trying again");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("{e}"),
            }
        };
        let serving = server.clone();
        let task = tokio::spawn(async move { serving.serve().await });
        Serving { server, task }
    }

    fn port(&self) -> u16 {
        self.server.local_addr().port()
    }

    fn stats(&self) -> ServerStats {
        self.server.stats()
    }

    /// Waits until no connection is active: the last one's observation is saved.
    async fn idle(&self) {
        for _ in 0..250 {
            if self.stats().active_connections == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("a connection stayed active");
    }

    /// Stops as a killed server stops: without the last write of its files (the port is
    /// freed all the same).
    async fn kill(self) {
        self.task.abort();
        let endpoint = self.server.endpoint();
        endpoint.close(quinn::VarInt::from_u32(0), b"killed");
        let _ = tokio::time::timeout(Duration::from_secs(5), endpoint.wait_idle()).await;
    }

    /// Shuts down as `satquic server` does on SIGTERM (the store written), and lets the
    /// closed connections drain so that the port is free again.
    async fn stop(self) {
        self.server.shut_down().await.unwrap();
        let _ = self.task.await;
        let endpoint = self.server.endpoint();
        let _ = tokio::time::timeout(Duration::from_secs(5), endpoint.wait_idle()).await;
    }
}

/// One `satquic client` process: its state read from `state`, one transfer through
/// `relay`, its state written back.
async fn client_process(relay: SocketAddr, state: &Path, upload: bool) -> ClientResult {
    let resumption = Arc::new(Resumption::load(state).unwrap());
    let mut options = ClientOptions::download(relay, BYTES);
    options.upload = upload;
    options.transport.spec = TransportSpec::with_cc("cubic");
    options.resumption = Some(resumption.clone());
    let result = run_client(options, None).await.unwrap();
    resumption.save().unwrap();
    assert_eq!(result.status, "completed", "{:?}", result.error);
    result
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn private(path: &Path) -> bool {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777 == 0o600
}

/// The Careful Resume phase changes in a sender's report (a resumed controller starts
/// with Reconnaissance).
fn resume_phases(result: &ClientResult) -> usize {
    let report = result
        .server_report
        .as_ref()
        .or(result.sender_report.as_ref())
        .expect("a sender's report");
    report
        .events
        .iter()
        .filter(|e| e["type"] == "careful_resume_phase_updated")
        .count()
}

/// Two client processes with the same state file against one server: the second
/// presents the token the first received (no Retry), and the server resumes its Careful
/// Resume from the first's observation. No 0-RTT: the TLS session stays in the first
/// process.
#[test]
fn a_second_client_process_is_recognised_and_resumed() {
    let dir = TempDir::new("second");
    let state = dir.join("client.json");
    runtime().block_on(async {
        let serving = Serving::start(0, None, None).await;
        let relay = Relay::start(RelayOptions::new(
            loopback(0),
            loopback(serving.port()),
            Some(link()),
        ))
        .unwrap();
        let first = client_process(relay.local_addr(), &state, false).await;
        serving.idle().await;
        assert_eq!(
            serving.stats().retries_sent,
            1,
            "a new client is sent a Retry"
        );
        assert_eq!(serving.stats().tokens_accepted, 0);
        assert_eq!(resume_phases(&first), 0, "nothing to resume yet");
        let file = read_json(&state);
        // One token, or two when the packet carrying the first was lost (quinn makes a
        // new one for the retransmission).
        let tokens = file["tokens"].as_array().unwrap().len();
        assert!((1..=2).contains(&tokens), "{file}");
        assert!(private(&state));

        let second = client_process(relay.local_addr(), &state, false).await;
        let stats = serving.stats();
        assert_eq!(
            stats.retries_sent, 1,
            "the token spared the second one the Retry"
        );
        assert_eq!(stats.tokens_accepted, 1);
        assert_eq!(stats.resumed, 1);
        assert!(
            resume_phases(&second) > 0,
            "the server's controller resumed"
        );
        assert_eq!(second.zero_rtt, None, "no TLS session across processes");
        serving.stop().await;
    });
}

/// Uploads: the client is the data sender, so its own Careful Resume parameters are what
/// a second process resumes from, read from the state file.
#[test]
fn a_second_upload_process_resumes_from_the_clients_saved_path() {
    let dir = TempDir::new("upload");
    let state = dir.join("client.json");
    runtime().block_on(async {
        let serving = Serving::start(0, None, None).await;
        let relay = Relay::start(RelayOptions::new(
            loopback(0),
            loopback(serving.port()),
            Some(link()),
        ))
        .unwrap();
        let first = client_process(relay.local_addr(), &state, true).await;
        assert_eq!(resume_phases(&first), 0, "nothing to resume yet");
        let file = read_json(&state);
        let saved = file["careful_resume"].as_array().unwrap();
        assert_eq!(saved.len(), 1, "{file}");
        assert_eq!(saved[0]["remote"], "127.0.0.1");
        assert!(saved[0]["saved_cwnd_bytes"].as_u64().unwrap() > 0, "{file}");

        let second = client_process(relay.local_addr(), &state, true).await;
        assert!(
            resume_phases(&second) > 0,
            "the client's controller resumed"
        );
        assert_eq!(serving.stats().tokens_accepted, 1);
        serving.stop().await;
    });
}

/// A server restarted on the same store and key files resumes the next client and
/// accepts the token its predecessor gave; a server with another key still resumes (the
/// store) but cannot read the token, so it sends a Retry.
#[test]
fn a_restarted_server_resumes_the_next_client() {
    let dir = TempDir::new("restart");
    let (store, key, state) = (
        dir.join("store.json"),
        dir.join("key"),
        dir.join("client.json"),
    );
    runtime().block_on(async {
        let first = Serving::start(0, Some(&store), Some(&key)).await;
        let port = first.port();
        let relay =
            Relay::start(RelayOptions::new(loopback(0), loopback(port), Some(link()))).unwrap();
        client_process(relay.local_addr(), &state, false).await;
        first.idle().await;
        first.stop().await;
        let file = read_json(&store);
        assert_eq!(file["format"], "satquic-careful-resume-store");
        assert_eq!(file["entries"].as_array().unwrap().len(), 1, "{file}");
        assert!(private(&store) && private(&key));
        assert!(
            std::fs::metadata(&store).unwrap().len() <= satquic_net::server::STORE_FILE_MAX_BYTES
        );

        let second = Serving::start(port, Some(&store), Some(&key)).await;
        assert_eq!(second.stats().saved_paths, 1, "read back");
        let resumed = client_process(relay.local_addr(), &state, false).await;
        second.idle().await;
        let stats = second.stats();
        assert_eq!(
            (stats.resumed, stats.retries_sent, stats.tokens_accepted),
            (1, 0, 1)
        );
        assert!(resume_phases(&resumed) > 0);
        second.stop().await;

        let third = Serving::start(port, Some(&store), Some(&dir.join("other-key"))).await;
        client_process(relay.local_addr(), &state, false).await;
        let stats = third.stats();
        assert_eq!(
            (stats.resumed, stats.retries_sent, stats.tokens_accepted),
            (1, 1, 0)
        );
        third.stop().await;
    });
}

/// A store entry for the relay's path, written by hand: `age` ago, valid for `lifetime`.
/// Two entries, with and without the local address, whichever quinn reports.
fn store_with_entry(path: &Path, age: Duration, lifetime: Duration) {
    let saved_at = satquic_net::unix_ms(SystemTime::now() - age);
    let entry = |local: &str| {
        format!(
            "{{\"local\":{local},\"remote\":\"127.0.0.1\",\"saved_cwnd_bytes\":250000,\
             \"saved_rtt_us\":100000,\"saved_at_unix_ms\":{saved_at},\"expires_at_unix_ms\":{}}}",
            saved_at + lifetime.as_millis() as u64
        )
    };
    let text = format!(
        "{{\"format\":\"satquic-careful-resume-store\",\"version\":1,\"entries\":[\n{},\n{}\n]}}\n",
        entry("\"127.0.0.1\""),
        entry("null")
    );
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A set past its Lifetime (RFC 9959 Sec. 3.2) is dropped when the store is read and
/// never resumes a connection; a set within it does.
#[test]
fn expired_entries_are_not_used() {
    let dir = TempDir::new("expired");
    let store = dir.join("store.json");
    let hour = Duration::from_secs(3600);
    runtime().block_on(async {
        for (age, expected) in [(2 * hour, 0), (Duration::from_secs(60), 1)] {
            store_with_entry(&store, age, hour);
            let serving = Serving::start(0, Some(&store), None).await;
            assert_eq!(
                serving.stats().saved_paths,
                2 * expected as usize,
                "{age:?}"
            );
            let mut options = ClientOptions::download(loopback(serving.port()), 100_000);
            options.resumption = Some(Arc::new(Resumption::new()));
            let result = run_client(options, None).await.unwrap();
            assert_eq!(result.status, "completed");
            assert_eq!(serving.stats().resumed, expected, "saved {age:?} ago");
            serving.stop().await;
        }
        // The store written at shutdown holds no expired set either.
        store_with_entry(&store, 2 * hour, hour);
        Serving::start(0, Some(&store), None).await.stop().await;
        assert_eq!(read_json(&store)["entries"], serde_json::json!([]));
    });
}

/// A UDP forwarder that passes on to `server` whatever is sent to it and drops every
/// answer: as the Initials of someone who spoofs a client's address reach a server (the
/// answers go to the client, who did not ask, and are lost).
struct OneWay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl OneWay {
    fn start(server: SocketAddr) -> Self {
        let front = UdpSocket::bind(loopback(0)).unwrap();
        front
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let upstream = UdpSocket::bind(loopback(0)).unwrap();
        upstream.connect(server).unwrap();
        let addr = front.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while !stopped.load(Ordering::Relaxed) {
                if let Ok((n, _)) = front.recv_from(&mut buf) {
                    let _ = upstream.send(&buf[..n]);
                }
            }
        });
        OneWay { addr, stop }
    }
}

impl Drop for OneWay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// With `--no-retry`, Initials spoofed from a client's address reach the server, which
/// starts a connection for them with the client's saved set; their handshakes never
/// complete, and the set stays the client's: its own next connection resumes from it.
/// Before, the set was spent at the first Initial, and the client started afresh.
#[test]
fn spoofed_initials_do_not_spend_a_saved_path() {
    let dir = TempDir::new("spoofed");
    let store = dir.join("store.json");
    store_with_entry(&store, Duration::from_secs(60), Duration::from_secs(3600));
    runtime().block_on(async {
        let mut options = ServerOptions {
            listen: loopback(0),
            retry: false,
            handshake_timeout: Duration::from_millis(300),
            resume_store: Some(store.clone()),
            ..ServerOptions::default()
        };
        options.transport.spec = TransportSpec::with_cc("cubic");
        let server = Arc::new(Server::bind(options).unwrap());
        let serving = server.clone();
        let task = tokio::spawn(async move { serving.serve().await });
        let addr = loopback(server.local_addr().port());
        assert_eq!(
            server.stats().saved_paths,
            2,
            "with and without the local address"
        );

        let spoofer = OneWay::start(addr);
        for _ in 0..3 {
            let mut spoofed = ClientOptions::download(spoofer.addr, 100_000);
            spoofed.time_cap = Some(Duration::from_millis(500));
            assert!(run_client(spoofed, None).await.is_err());
        }
        for _ in 0..250 {
            let s = server.stats();
            if s.handshake_failures >= 3 && s.active_connections == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let s = server.stats();
        assert_eq!((s.accepted, s.handshake_failures), (3, 3), "{s:?}");
        assert_eq!((s.saved_paths, s.resumed), (2, 0), "{s:?}");

        let mut own = ClientOptions::download(addr, 100_000);
        own.transport.spec = TransportSpec::with_cc("cubic");
        let result = run_client(own, None).await.unwrap();
        assert_eq!(result.status, "completed", "{:?}", result.error);
        assert_eq!(server.stats().resumed, 1, "the client resumed from its set");
        task.abort();
    });
}

/// A token captured once it was used (here: a copy of the client's state file, whose
/// token the client then presented) is refused by the server's successor on the same key
/// file, stopped cleanly or killed; a token never used is still accepted after a clean
/// stop. Before, the record of used tokens lived in memory: a captured token was accepted
/// once more after every restart, for the whole hour it is valid.
#[test]
fn a_token_replayed_after_a_restart_is_refused() {
    let dir = TempDir::new("replay");
    let (key, state, copy) = (
        dir.join("key"),
        dir.join("client.json"),
        dir.join("captured.json"),
    );
    runtime().block_on(async {
        let first = Serving::start(0, None, Some(&key)).await;
        let port = first.port();
        let server = loopback(port);
        client_process(server, &state, false).await;
        // The state now holds a fresh token: captured, then used by the client.
        std::fs::copy(&state, &copy).unwrap();
        client_process(server, &state, false).await;
        first.idle().await;
        assert_eq!(first.stats().tokens_accepted, 1);
        first.stop().await;

        let second = Serving::start(port, None, Some(&key)).await;
        // The client's own next token, never used: accepted after a clean stop.
        client_process(server, &state, false).await;
        // The captured one: refused, so the replayer is sent a Retry.
        client_process(server, &copy, false).await;
        second.idle().await;
        let stats = second.stats();
        assert_eq!(
            (stats.tokens_accepted, stats.retries_sent),
            (1, 1),
            "{stats:?}"
        );
        // A server killed (no clean stop) leaves a record that may miss its last
        // tokens: its successor refuses every older token, used or not.
        std::fs::copy(&state, &copy).unwrap();
        second.kill().await;
        let third = Serving::start(port, None, Some(&key)).await;
        client_process(server, &copy, false).await;
        third.idle().await;
        assert_eq!(third.stats().tokens_accepted, 0);
        third.stop().await;
    });
}
