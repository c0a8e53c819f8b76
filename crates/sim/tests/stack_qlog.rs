//! quinn-proto's own qlog in virtual time (`RunOptions::stack_qlog`), merged with
//! satquic's events into one JSON-SEQ file per connection and vantage point
//! (`satquic_run::qlog::connection_qlog_files`): names, framing, the events and fields
//! qvis reads, virtual times, determinism.

use std::time::Duration;

use satquic_run::qlog::connection_qlog_files;
use satquic_run::{Scenario, TransportSpec};
use satquic_sim::{RunOptions, RunOutput, run_with};
use serde_json::Value;

/// 2 MB over QIR-SE SATLOSS (1 % loss each way, 600 ms RTT): packets get lost.
fn lossy() -> Scenario {
    let link = satquic_link::presets::lookup("qir-satloss").unwrap();
    Scenario::download(link, TransportSpec::with_cc("cubic+search"), 2_000_000, 7)
}

fn run(scenario: &Scenario) -> RunOutput {
    let options = RunOptions {
        stack_qlog: true,
        ..RunOptions::default()
    };
    run_with(scenario, &options).unwrap()
}

/// The JSON-SEQ records of a file, checking the framing of each.
fn records(bytes: &[u8]) -> Vec<Value> {
    assert_eq!(bytes.first(), Some(&0x1e), "a record starts the file");
    bytes[1..]
        .split(|b| *b == 0x1e)
        .map(|text| {
            assert_eq!(text.last(), Some(&b'\n'), "records end with a newline");
            serde_json::from_slice(text).expect("each record is one JSON text")
        })
        .collect()
}

fn named<'a>(events: &'a [Value], name: &'a str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["name"] == name).collect()
}

/// The file of one vantage point: (name, header, events).
fn file(files: &[(String, Vec<u8>)], vantage: &str) -> (String, Value, Vec<Value>) {
    let (name, bytes) = files
        .iter()
        .find(|(n, _)| n.ends_with(&format!("_{vantage}.sqlog")))
        .unwrap_or_else(|| panic!("no {vantage} file among {:?}", names(files)));
    let mut all = records(bytes);
    let events = all.split_off(1);
    (name.clone(), all.remove(0), events)
}

fn names(files: &[(String, Vec<u8>)]) -> Vec<&str> {
    files.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn each_end_gets_one_file_with_quinns_packet_and_recovery_events_in_virtual_time() {
    let out = run(&lossy());
    let files = connection_qlog_files(&out.record, &out.stack_qlogs);
    assert_eq!(files.len(), 2, "{:?}", names(&files));
    let sim_ms = out.record.summary.sim_time_s * 1e3;
    for vantage in ["server", "client"] {
        let (name, header, events) = file(&files, vantage);
        // QLOGDIR names: <odcid in hex>_<vantage>.sqlog, the ODCID the client chose.
        let odcid = name.strip_suffix(&format!("_{vantage}.sqlog")).unwrap();
        assert_eq!(odcid.len(), 40, "a 20-byte ODCID in hex: {name}");
        assert!(odcid.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
        assert_eq!(header["qlog_version"], "0.3");
        assert_eq!(header["qlog_format"], "JSON-SEQ");
        assert_eq!(header["trace"]["vantage_point"]["type"], vantage);
        assert_eq!(header["trace"]["common_fields"]["time_format"], "relative");
        assert_eq!(header["trace"]["satquic:odcid"], odcid);

        let times: Vec<f64> = events.iter().map(|e| e["time"].as_f64().unwrap()).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{name}: out of order"
        );
        // Virtual time: the last event is near the simulated end (seconds of link time),
        // not at the few milliseconds of wall time the run took.
        let last = *times.last().unwrap();
        assert!(
            last > 1000.0 && last <= sim_ms + 1.0,
            "{name}: last {last} ms of {sim_ms}"
        );

        let sent = named(&events, "transport:packet_sent");
        let received = named(&events, "transport:packet_received");
        let metrics = named(&events, "recovery:metrics_updated");
        assert!(sent.len() > 100, "{name}: {} packet_sent", sent.len());
        assert!(
            received.len() > 100,
            "{name}: {} packet_received",
            received.len()
        );
        assert!(!metrics.is_empty(), "{name}: no metrics_updated");
        // What qvis's sequence and congestion views read.
        for e in sent.iter().chain(&received) {
            let header = &e["data"]["header"];
            assert!(header["packet_number"].is_u64(), "{name}: {e}");
            assert!(header["packet_type"].is_string(), "{name}: {e}");
        }
        assert!(sent.iter().all(|e| e["data"]["header"]["length"].is_u64()));
        for field in ["congestion_window", "bytes_in_flight", "smoothed_rtt"] {
            assert!(
                metrics.iter().any(|e| e["data"][field].is_number()),
                "{name}: no metrics_updated with {field}"
            );
        }
        assert_eq!(events[0]["name"], "transport:connection_started");
    }
    // The sender's file carries satquic's controller and link events; the receiver's not.
    let (_, _, server) = file(&files, "server");
    let (_, _, client) = file(&files, "client");
    assert!(
        !named(&server, "recovery:packet_lost").is_empty(),
        "1 % loss"
    );
    assert!(!named(&server, "satquic:search_eval").is_empty());
    assert!(!named(&server, "satquic:series").is_empty());
    assert!(named(&client, "satquic:search_eval").is_empty());
    assert!(named(&client, "satquic:series").is_empty());
    assert!(!named(&client, "satquic:chunk_delivered").is_empty());
    // quinn's server sent as many packets as its stats say.
    let quinn_sent = out.record.summary.flows[0].packets_sent;
    assert_eq!(
        named(&server, "transport:packet_sent").len() as u64,
        quinn_sent
    );
}

#[test]
fn the_files_are_byte_identical_for_the_same_seed_and_the_record_is_unchanged() {
    let a = run(&lossy());
    let b = run(&lossy());
    let (fa, fb) = (
        connection_qlog_files(&a.record, &a.stack_qlogs),
        connection_qlog_files(&b.record, &b.stack_qlogs),
    );
    assert_eq!(names(&fa), names(&fb));
    for ((name, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{name} differs between two runs with the same seed");
    }
    let plain = satquic_sim::run(&lossy()).unwrap();
    assert_eq!(plain.summary_json(), a.record.summary_json());
    assert_eq!(plain.events_jsonl(), a.record.events_jsonl());
    assert!(
        satquic_sim::run_with(&lossy(), &RunOptions::default())
            .unwrap()
            .stack_qlogs
            .is_empty()
    );
}

#[test]
fn a_resumed_run_has_one_pair_of_files_per_connection() {
    let link = satquic_link::presets::lookup("qir-sat").unwrap();
    let scenario = Scenario::download(link, TransportSpec::with_cc("cubic+search"), 1 << 20, 1)
        .resumed_after(Duration::from_secs(10));
    let out = run(&scenario);
    let files = connection_qlog_files(&out.record, &out.stack_qlogs);
    assert_eq!(files.len(), 4, "{:?}", names(&files));
    // Both passes replay the same seeds, so both connections have the same ODCID; the
    // first connection's files carry a prefix, and no satquic events (the record
    // describes the resumed connection).
    let first: Vec<&str> = names(&files)
        .into_iter()
        .filter(|n| n.starts_with("first-"))
        .collect();
    assert_eq!(first.len(), 2, "{:?}", names(&files));
    let (_, _, events) = file(&files[..2], "server");
    assert!(named(&events, "satquic:series").is_empty());
    assert!(!named(&events, "transport:packet_sent").is_empty());
    // The resumed connection's client sends 0-RTT packets.
    let (_, _, events) = file(&files[2..], "client");
    assert!(
        events.iter().any(|e| e["name"] == "transport:packet_sent"
            && e["data"]["header"]["packet_type"] == "0RTT"),
        "no 0-RTT packet in the resumed client's qlog"
    );
}
