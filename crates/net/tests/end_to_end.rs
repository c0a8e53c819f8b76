//! End to end on loopback: server, relay and client with real sockets and real time.
//!
//! The completion-time checks compare with the simulator (the same quinn, congestion
//! controller and link model in virtual time), the most precise "expectation of the link
//! model" there is; links are scaled down (20 Mbit/s, 100 ms RTT) to keep the tests short.

use std::net::SocketAddr;
use std::time::Duration;

use satquic_link::{DirectionSpec, DropReason, LinkSpec, LossSpec, QueueLimit};
use satquic_net::client::{Alpn, ClientOptions, run_client};
use satquic_net::relay::{Relay, RelayOptions};
use satquic_net::{Server, ServerOptions};
use satquic_run::{Scenario, TransportSpec};

fn scaled_link() -> LinkSpec {
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

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn runtime() -> tokio::runtime::Runtime {
    satquic_net::install_crypto_provider();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The emulated setup as `satquic server` + `satquic link` + `satquic client` run it, but
/// with the simulator's transport (1200-byte packets, no MTU probing) and no Retry, so the
/// simulator is a like-for-like expectation.
fn server_options() -> ServerOptions {
    let mut o = ServerOptions {
        listen: loopback(),
        retry: false,
        ..ServerOptions::default()
    };
    o.transport.spec = TransportSpec::with_cc("cubic");
    o
}

fn within(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance * expected
}

#[test]
fn download_20mb_through_the_relay_matches_the_link_model() {
    let link = scaled_link();
    let bytes = 20_000_000;
    let sim = satquic_sim::run(&Scenario::download(
        link.clone(),
        TransportSpec::with_cc("cubic"),
        bytes,
        1,
    ))
    .unwrap();
    let expected = sim.summary.flows[0].completion_time_s.unwrap();

    let rt = runtime();
    let (result, json) = rt.block_on(async {
        let server = Server::bind(server_options()).unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });
        let relay = Relay::start(RelayOptions::new(loopback(), addr, Some(link))).unwrap();
        let mut options = ClientOptions::download(relay.local_addr(), bytes);
        options.transport.spec = TransportSpec::with_cc("cubic");
        options.interval = Some(Duration::from_secs(1));
        let result = run_client(options.clone(), None).await.unwrap();
        let json = satquic_net::record::client_json(&options, &result);
        let snapshot = relay.snapshot();
        assert_eq!(snapshot.down.overload_drops, 0);
        drop(relay);
        serve.abort();
        (result, json)
    });
    assert_eq!(result.status, "completed", "{:?}", result.error);
    let actual = result.completed_at.unwrap().as_secs_f64();
    assert!(
        within(actual, expected, 0.15),
        "emulated {actual:.3} s vs simulated {expected:.3} s"
    );
    // The physical floor: 20 MB at 20 Mbit/s.
    assert!(actual > 8.0, "{actual}");

    // -J output parses and has the per-MB times.
    let text = serde_json::to_string(&json).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed["schema"], "satquic-run/1");
    let chunks = parsed["chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 20);
    let times: Vec<f64> = chunks
        .iter()
        .map(|c| c["time_s"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(parsed["flows"][0]["delivered_bytes"], bytes);
    assert!(
        parsed["flows"][0]["packets_sent"].as_u64().unwrap() > 16_000,
        "server report"
    );
    assert!(!parsed["intervals"].as_array().unwrap().is_empty());
}

/// An upload's record describes the upload: the per-MB times follow the link (not the
/// writes into quinn's buffer), the sender's counters are the client's, and a timed
/// upload stops near its time with no interval faster than the link.
#[test]
fn upload_records_measure_delivered_bytes_and_the_client_as_sender() {
    const LINK_BPS: f64 = 20e6;
    let rt = runtime();
    rt.block_on(async {
        let server = Server::bind(server_options()).unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });
        let relay = Relay::start(RelayOptions::new(loopback(), addr, Some(scaled_link()))).unwrap();
        let mut options = ClientOptions::download(relay.local_addr(), 4_000_000);
        options.transport.spec = TransportSpec::with_cc("cubic");
        options.upload = true;
        options.time_cap = Some(Duration::from_secs(30));
        let r = run_client(options.clone(), None).await.unwrap();
        assert_eq!(r.status, "completed", "{:?}", r.error);
        let done = r.completed_at.unwrap().as_secs_f64();
        let mb: Vec<f64> = r.mb_times.iter().map(|t| t.as_secs_f64()).collect();
        assert_eq!(mb.len(), 4);
        // 1 MB takes 0.4 s at 20 Mbit/s: the MB times are that far apart, not all at the end.
        for w in mb.windows(2) {
            assert!(w[1] - w[0] > 0.25, "MB times {mb:?}, done at {done}");
        }
        assert!(mb[0] < done - 1.0, "MB times {mb:?}, done at {done}");
        let json = satquic_net::record::client_json(&options, &r);
        let flow = &json["flows"][0];
        assert!(flow["packets_sent"].as_u64().unwrap() > 3000, "{flow}");
        assert!(flow["bytes_sent"].as_u64().unwrap() > 4_000_000, "{flow}");
        let min_rtt = flow["min_rtt_s"].as_f64().unwrap();
        assert!((0.09..0.2).contains(&min_rtt), "{flow}");
        assert_eq!(json["events_time_base"], "flow start");

        // Timed, with intervals: ends soon after its 2 s, and no row beats the link.
        options.workload = satquic_run::Workload::Timed {
            duration: Duration::from_secs(2),
        };
        options.interval = Some(Duration::from_millis(500));
        let r = run_client(options, None).await.unwrap();
        assert_eq!(r.status, "completed", "{:?}", r.error);
        let ended = r.ended_at.as_secs_f64();
        // Stopping at 2 s leaves about two congestion windows to drain (0.5 s here);
        // writing ahead without bound left up to 256 MiB.
        assert!(ended < 3.0, "a 2 s upload ran {ended} s");
        for row in &r.intervals {
            if row.end_s - row.start_s >= 0.25 {
                assert!(
                    row.rate_bps < LINK_BPS * 1.15,
                    "{row:?} is faster than the {LINK_BPS} bit/s link"
                );
            }
        }
        drop(relay);
        serve.abort();
    });
}

#[test]
fn emulated_run_agrees_with_the_simulator() {
    // Median of three seeds each way: a 3 MB download over the scaled link.
    let mut emulated = Vec::new();
    let mut simulated = Vec::new();
    for seed in 1..=3 {
        let scenario = Scenario::download(
            scaled_link(),
            TransportSpec::with_cc("cubic"),
            3_000_000,
            seed,
        )
        .with_time_cap(Duration::from_secs(30));
        let sim = satquic_sim::run(&scenario).unwrap();
        simulated.push(sim.summary.flows[0].completion_time_s.unwrap());
        let run = satquic_net::emulated::run_emulated(&scenario).unwrap();
        let f = &run.record.summary.flows[0];
        assert_eq!(run.record.summary.outcome, "completed", "{:?}", f.error);
        emulated.push(f.completion_time_s.unwrap());
        assert_eq!(run.record.chunks.len(), 3);
        assert!(!run.record.series.is_empty());
        assert!(run.record.summary.link.delivered_bytes > 3_000_000);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[1]
    };
    let (e, s) = (median(&mut emulated), median(&mut simulated));
    assert!(
        within(e, s, 0.15),
        "emulated {e:.3} s vs simulated {s:.3} s"
    );
}

#[test]
fn a_sender_cap_is_applied_in_front_of_the_link_as_the_simulator_applies_it() {
    // A 5 Mbit/s cap with 200 ms of queue in front of the 20 Mbit/s link: the cap is the
    // bottleneck, its queue overflows in slow start, and the relay's run agrees with the
    // simulator's on the time and on where the drops were.
    let mut scenario =
        Scenario::download(scaled_link(), TransportSpec::with_cc("cubic"), 2_000_000, 1)
            .with_time_cap(Duration::from_secs(30));
    scenario.flows[0].transport.sender_shaper =
        satquic_run::ShaperSpec::parse_cap("5M:200ms").unwrap();
    let sim = satquic_sim::run(&scenario).unwrap();
    let run = satquic_net::emulated::run_emulated(&scenario).unwrap();
    let (s, e) = (&sim.summary.flows[0], &run.record.summary.flows[0]);
    assert_eq!(run.record.summary.outcome, "completed", "{:?}", e.error);
    let (st, et) = (s.completion_time_s.unwrap(), e.completion_time_s.unwrap());
    // 2 MB at 5 Mbit/s is 3.2 s of the cap alone.
    assert!(
        st > 3.2 && et > 3.2,
        "simulated {st:.2} s, emulated {et:.2} s"
    );
    assert!(
        within(et, st, 0.15),
        "emulated {et:.3} s vs simulated {st:.3} s"
    );
    assert!(
        s.sender_cap_drops > 0,
        "the simulator's cap dropped nothing"
    );
    assert!(e.sender_cap_drops > 0, "the relay's cap dropped nothing");
    assert_eq!(
        e.link_drops.values().sum::<u64>(),
        0,
        "the link behind the cap dropped"
    );
}

#[test]
fn writes_the_same_record_files_as_the_simulator() {
    let scenario = Scenario::download(
        scaled_link(),
        TransportSpec::with_cc("cubic+search"),
        1_000_000,
        7,
    )
    .with_time_cap(Duration::from_secs(20));
    let run = satquic_net::emulated::run_emulated(&scenario).unwrap();
    let dir = std::env::temp_dir().join(format!("satquic-emulated-{}", std::process::id()));
    run.record.write_to(&dir).unwrap();
    run.timing.write_to(&dir).unwrap();
    for f in [
        "summary.json",
        "chunks.csv",
        "received_chunks.csv",
        "events.jsonl",
        "series.csv",
        "timing.json",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let summary: satquic_run::Summary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary.flows[0].cc, "cubic+search");
    assert_eq!(summary.scenario, scenario);
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn fetch(
    addr: SocketAddr,
    alpn: Alpn,
    path: Option<&str>,
    bytes: u64,
) -> satquic_net::ClientResult {
    let mut options = ClientOptions::download(addr, bytes);
    options.alpn = alpn;
    options.path = path.map(str::to_string);
    run_client(options, None).await.unwrap()
}

/// Loss makes retransmissions arrive after later data: the hq-interop response is read
/// out of order and only its in-order prefix counts, so the byte count is exact.
#[test]
fn hq_interop_download_through_a_lossy_relay_counts_the_whole_response() {
    let mut link = scaled_link();
    link.down.loss = LossSpec::Bernoulli { plr: 0.02 };
    let rt = runtime();
    let (r, lost) = rt.block_on(async {
        let server = Server::bind(server_options()).unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });
        let relay = Relay::start(RelayOptions::new(loopback(), addr, Some(link))).unwrap();
        let r = fetch(relay.local_addr(), Alpn::Hq, None, 2_000_000).await;
        let lost = relay.snapshot().down.dropped(DropReason::RandomLoss);
        drop(relay);
        serve.abort();
        (r, lost)
    });
    assert_eq!(r.status, "completed", "{:?}", r.error);
    assert_eq!(r.bytes, 2_000_000);
    assert!(lost > 10, "the relay dropped only {lost} packets");
}

#[test]
fn hq_interop_h3_uploads_and_files() {
    let www = std::env::temp_dir().join(format!("satquic-www-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&www).unwrap();
    let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(www.join("file.bin"), &content).unwrap();
    let rt = runtime();
    rt.block_on(async {
        let server = Server::bind(ServerOptions {
            listen: loopback(),
            www: Some(www.clone()),
            max_request_bytes: 50_000_000,
            ..ServerOptions::default()
        })
        .unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });

        for alpn in [Alpn::Hq, Alpn::H3] {
            let r = fetch(addr, alpn, None, 2_000_000).await;
            assert_eq!(r.status, "completed", "{alpn:?}: {:?}", r.error);
            assert_eq!(r.bytes, 2_000_000);
            let r = fetch(addr, alpn, Some("/file.bin"), 1).await;
            assert_eq!(r.status, "completed", "{alpn:?}: {:?}", r.error);
            assert_eq!(r.bytes, content.len() as u64);
            let r = fetch(addr, alpn, Some("/missing.html"), 1).await;
            assert_eq!(r.status, "failed", "{alpn:?}");
            let r = fetch(addr, alpn, Some("/../../etc/passwd"), 1).await;
            assert_eq!(r.status, "failed", "{alpn:?}");
        }

        // Upload (-R).
        let mut options = ClientOptions::download(addr, 3_000_000);
        options.upload = true;
        let r = run_client(options, None).await.unwrap();
        assert_eq!(r.status, "completed", "{:?}", r.error);
        assert_eq!(r.bytes, 3_000_000);

        // Above --max-bytes: refused with a clear error, the server keeps serving.
        let r = fetch(addr, Alpn::Perf, None, 60_000_000).await;
        assert_eq!(r.status, "failed");
        assert!(r.error.unwrap().contains("max-bytes"));
        let r = fetch(addr, Alpn::Perf, None, 1_000_000).await;
        assert_eq!(r.status, "completed");

        // Timed download (-t).
        let mut options = ClientOptions::download(addr, 1);
        options.workload = satquic_run::Workload::Timed {
            duration: Duration::from_millis(500),
        };
        let r = run_client(options, None).await.unwrap();
        assert_eq!(r.status, "completed", "{:?}", r.error);
        assert!(r.bytes > 0 && r.requested_bytes.is_none());
        serve.abort();
    });
    std::fs::remove_dir_all(&www).unwrap();
}

/// An HTTP/3 request whose end (its FIN) reaches the server after the whole response, as
/// when the client's task is slow to run under load: the server answers in full, then
/// stops reading the request with H3_NO_ERROR (RFC 9114 Sec. 4.1.2), and the client keeps
/// the response. Before, the server's stop carried code 0 and `h3_download` failed the
/// request whenever its FIN came late: `hq_interop_h3_uploads_and_files` failed now and
/// then with "h3 request: Remote reset: 0x0".
#[test]
fn an_h3_request_that_ends_after_its_response_is_answered_in_full() {
    use bytes::Buf;
    use satquic_net::tls::{ALPN_H3, ServerVerifier, Verify, client_crypto};
    let rt = runtime();
    rt.block_on(async {
        let server = Server::bind(ServerOptions {
            listen: loopback(),
            ..ServerOptions::default()
        })
        .unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });
        let crypto = client_crypto(ServerVerifier::new(Verify::Any).unwrap(), ALPN_H3).unwrap();
        let config = quinn::ClientConfig::new(std::sync::Arc::new(
            quinn::crypto::rustls::QuicClientConfig::try_from(crypto).unwrap(),
        ));
        let endpoint = quinn::Endpoint::client(loopback()).unwrap();
        let conn = endpoint
            .connect_with(config, addr, "localhost")
            .unwrap()
            .await
            .unwrap();
        let (mut driver, mut sender) = h3::client::new(h3_quinn::Connection::new(conn))
            .await
            .unwrap();
        let drive = tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let request = http::Request::get("https://localhost/2M").body(()).unwrap();
        let mut stream = sender.send_request(request).await.unwrap();
        assert_eq!(stream.recv_response().await.unwrap().status(), 200);
        let mut received = 0;
        while let Some(mut chunk) = stream.recv_data().await.unwrap() {
            received += chunk.remaining();
            chunk.advance(chunk.remaining());
        }
        assert_eq!(received, 2_000_000, "the whole response");
        // The server's stop follows its last data; give it time to arrive.
        tokio::time::sleep(Duration::from_millis(300)).await;
        match stream.finish().await {
            Err(h3::error::StreamError::RemoteTerminate { code, .. }) => {
                assert_eq!(code, h3::error::Code::H3_NO_ERROR);
            }
            other => panic!("the request's end should find it stopped: {other:?}"),
        }
        drive.abort();
        serve.abort();
    });
}

#[test]
fn pinning_accepts_the_right_certificate_only() {
    let rt = runtime();
    rt.block_on(async {
        let server = Server::bind(ServerOptions {
            listen: loopback(),
            ..ServerOptions::default()
        })
        .unwrap();
        let addr = server.local_addr();
        let pin = server.fingerprint().to_string();
        let serve = tokio::spawn(async move { server.serve().await });
        let mut options = ClientOptions::download(addr, 10_000);
        options.verify = satquic_net::tls::Verify::Pin(pin.clone());
        let r = run_client(options.clone(), None).await.unwrap();
        assert_eq!(r.status, "completed");
        assert_eq!(r.server_certificate.as_deref(), Some(pin.as_str()));
        options.verify = satquic_net::tls::Verify::Pin("0".repeat(64));
        let err = run_client(options, None).await.unwrap_err();
        assert!(err.to_string().contains("does not match --pin"), "{err}");
        serve.abort();
    });
}

/// A certificate issued by a CA of the test's own, written as PEM files.
struct IssuedCertificate {
    dir: std::path::PathBuf,
    ca: Vec<rustls::pki_types::CertificateDer<'static>>,
}

impl IssuedCertificate {
    fn new(names: &[&str]) -> Self {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap()
                .signed_by(&key, &ca)
                .unwrap();
        let dir = std::env::temp_dir().join(format!("satquic-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let ca = satquic_net::tls::read_ca_file(&dir.join("ca.pem")).unwrap();
        IssuedCertificate { dir, ca }
    }
}

impl Drop for IssuedCertificate {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn certificates_are_verified_against_trusted_authorities_and_the_name() {
    use satquic_net::tls::Verify;
    let issued = IssuedCertificate::new(&["localhost"]);
    let rt = runtime();
    rt.block_on(async {
        let server = Server::bind(ServerOptions {
            listen: loopback(),
            cert: Some((issued.dir.join("cert.pem"), issued.dir.join("key.pem"))),
            ..ServerOptions::default()
        })
        .unwrap();
        let addr = server.local_addr();
        let serve = tokio::spawn(async move { server.serve().await });
        let mut options = ClientOptions::download(addr, 10_000);
        options.time_cap = Some(Duration::from_secs(20));
        // The CA that issued it, the name it holds: accepted.
        options.verify = Verify::Roots(issued.ca.clone());
        let r = run_client(options.clone(), None).await.unwrap();
        assert_eq!(r.status, "completed", "{:?}", r.error);
        // Another name: refused, and the message says why.
        options.server_name = "satquic.example".into();
        let err = run_client(options.clone(), None).await.unwrap_err();
        assert!(err.to_string().contains("not valid for the name"), "{err}");
        // The system's authorities did not issue it (nor a self-signed one).
        options.server_name = "localhost".into();
        if let Ok(system) = satquic_net::tls::system_roots() {
            options.verify = Verify::Roots(system);
            let err = run_client(options.clone(), None).await.unwrap_err();
            let err = err.to_string();
            assert!(
                err.contains("not issued by a trusted authority") && err.contains("--pin"),
                "{err}"
            );
        }
        serve.abort();
    });
}

/// Careful Resume across connections (RFC 9959): the server saves what a client
/// address's connection observed when it closes (Sec. 3.1) and hands it to the next
/// connection from that address (Sec. 3.2), whose controller then starts in the
/// Reconnaissance Phase. Through the relay: loopback's microsecond RTT makes a BDP below
/// the four initial windows worth saving.
#[test]
fn the_server_resumes_a_returning_client_from_its_saved_parameters() {
    let rt = runtime();
    rt.block_on(async {
        let mut options = server_options();
        options.transport.spec = TransportSpec::with_cc("cubic+search");
        options.keep_connections = 2;
        let server = std::sync::Arc::new(Server::bind(options).unwrap());
        let addr = server.local_addr();
        let serving = server.clone();
        let serve = tokio::spawn(async move { serving.serve().await });
        let relay = Relay::start(RelayOptions::new(loopback(), addr, Some(scaled_link()))).unwrap();
        let phases = |i: usize| -> Vec<satquic_cc::CcEvent> {
            server.connections()[i]
                .events
                .events()
                .into_iter()
                .filter(|e| matches!(e, satquic_cc::CcEvent::CarefulResumePhaseUpdated { .. }))
                .collect()
        };
        let mut client = ClientOptions::download(relay.local_addr(), 3_000_000);
        client.transport.spec = TransportSpec::with_cc("cubic+search");
        let first = run_client(client.clone(), None).await.unwrap();
        assert_eq!(first.status, "completed");
        // The server saves the observation once it sees the connection closed.
        for _ in 0..100 {
            if server.stats().active_connections == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(server.stats().resumed, 0);
        assert!(
            phases(0).is_empty(),
            "a first connection has nothing to resume"
        );
        let second = run_client(client, None).await.unwrap();
        assert_eq!(second.status, "completed");
        assert_eq!(server.stats().resumed, 1);
        let resumed = phases(1);
        assert!(
            matches!(
                resumed.first(),
                Some(satquic_cc::CcEvent::CarefulResumePhaseUpdated { old: None, saved_cwnd, .. })
                    if *saved_cwnd > 0
            ),
            "{resumed:?}"
        );
        drop(relay);
        serve.abort();
    });
}

/// Reads a JSON-SEQ qlog: its header and its events.
fn read_qlog(path: &std::path::Path) -> (serde_json::Value, Vec<serde_json::Value>) {
    let bytes = std::fs::read(path).unwrap();
    let mut records: Vec<serde_json::Value> = bytes
        .split(|b| *b == 0x1e)
        .filter(|r| !r.iter().all(u8::is_ascii_whitespace))
        .map(|r| serde_json::from_slice(r).unwrap())
        .collect();
    let events = records.split_off(1);
    (records.remove(0), events)
}

/// The qlogs of client and server (`--qlog DIR` or `QLOGDIR`) are quinn-proto's own qlog
/// of the connection merged with satquic's events: one JSON-SEQ file per end, named after
/// the original destination connection ID (`<odcid>_client.sqlog`, `<odcid>_server.sqlog`:
/// the QUIC interop runner's convention), events in time order, with the packet events and
/// fields qvis reads, and the server's with its congestion controller's events.
#[test]
fn the_qlogs_are_quinns_own_merged_with_satquics_events() {
    let rt = runtime();
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("satquic-qlog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut options = server_options();
        options.qlog_dir = Some(dir.clone());
        let server = std::sync::Arc::new(Server::bind(options).unwrap());
        let addr = server.local_addr();
        let serving = server.clone();
        let serve = tokio::spawn(async move { serving.serve().await });
        let mut client = ClientOptions::download(addr, 1_000_000);
        client.qlog_dir = Some(dir.clone());
        let result = run_client(client, None).await.unwrap();
        assert_eq!(result.status, "completed");
        let path = result.qlog_file.unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let odcid = name.strip_suffix("_client.sqlog").expect(&name);
        assert!(
            odcid.len() >= 16 && odcid.chars().all(|c| c.is_ascii_hexdigit()),
            "{name}"
        );
        let (header, events) = read_qlog(&path);
        assert_eq!(header["qlog_format"], "JSON-SEQ");
        assert_eq!(header["trace"]["vantage_point"]["type"], "client");
        assert_eq!(header["trace"]["common_fields"]["ODCID"], odcid);
        let times: Vec<f64> = events.iter().map(|e| e["time"].as_f64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "time order");
        let named = |n: &str| events.iter().filter(|e| e["name"] == n).count();
        // A 1 MB download is some 850 packets received; the client sends its ACKs.
        assert!(named("transport:packet_received") > 500);
        assert!(named("transport:packet_sent") > 5);
        let received = events
            .iter()
            .find(|e| e["name"] == "transport:packet_received")
            .unwrap();
        assert!(
            received["data"]["header"]["packet_number"].is_u64(),
            "{received}"
        );
        assert!(
            received["data"]["header"]["packet_type"].is_string(),
            "{received}"
        );
        assert_eq!(named("transport:connection_started"), 1);
        assert_eq!(named("satquic:transfer_ended"), 1);

        // The server writes its file when the connection has ended.
        let server_path = dir.join(format!("{odcid}_server.sqlog"));
        for _ in 0..250 {
            if server_path.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (header, events) = read_qlog(&server_path);
        assert_eq!(header["trace"]["vantage_point"]["type"], "server");
        assert_eq!(header["trace"]["common_fields"]["ODCID"], odcid);
        let times: Vec<f64> = events.iter().map(|e| e["time"].as_f64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "time order");
        let named = |n: &str| events.iter().filter(|e| e["name"] == n).count();
        assert!(
            named("transport:packet_sent") > 500,
            "the data sender's packets"
        );
        assert!(named("recovery:metrics_updated") > 0);
        let sent = events
            .iter()
            .find(|e| e["name"] == "transport:packet_sent")
            .unwrap();
        assert!(sent["data"]["header"]["packet_number"].is_u64(), "{sent}");
        assert!(
            named("satquic:sample") > 0,
            "the server's congestion-control events"
        );
        let _ = std::fs::remove_dir_all(&dir);
        serve.abort();
    });
}

/// A client that keeps its TLS session and address-validation token resumes: the second
/// connection sends its request in 0-RTT and the server, seeing a validated address,
/// answers in 0.5-RTT, so the first byte arrives about one round trip (100 ms here)
/// earlier than on the first connection.
#[test]
fn a_resumed_connection_sends_its_request_in_0rtt() {
    let rt = runtime();
    let (first, second, stats) = rt.block_on(async {
        let server = std::sync::Arc::new(Server::bind(server_options()).unwrap());
        let addr = server.local_addr();
        let serving = server.clone();
        let serve = tokio::spawn(async move { serving.serve().await });
        let relay = Relay::start(RelayOptions::new(loopback(), addr, Some(scaled_link()))).unwrap();
        let resumption = std::sync::Arc::new(satquic_net::client::Resumption::new());
        let run = || {
            let mut options = ClientOptions::download(relay.local_addr(), 200_000);
            options.resumption = Some(resumption.clone());
            run_client(options, None)
        };
        let first = run().await.unwrap();
        let second = run().await.unwrap();
        drop(relay);
        serve.abort();
        (first, second, server.stats())
    });
    for r in [&first, &second] {
        assert_eq!(r.status, "completed", "{:?}", r.error);
        assert_eq!(r.bytes, 200_000);
    }
    assert_eq!(
        first.zero_rtt, None,
        "nothing to resume on the first connection"
    );
    assert_eq!(second.zero_rtt, Some(true));
    let at = |r: &satquic_net::ClientResult| r.first_byte_at.unwrap().as_secs_f64();
    assert!(
        at(&second) < at(&first) - 0.05,
        "first byte at {:.3} s on the first connection, {:.3} s on the resumed one",
        at(&first),
        at(&second)
    );
    assert_eq!(stats.accepted, 2);
}
