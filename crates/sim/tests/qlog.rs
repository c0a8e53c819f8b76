//! The qlog of simulated runs (satquic-run's qlog module, fed with satquic-sim records).
use std::sync::OnceLock;

use satquic_cc::{CcEvent, ExitReason};
use satquic_run::record::WriteOptions;
use satquic_run::{RunRecord, Scenario, TransportSpec};
use satquic_sim::run;
use serde_json::Value;

/// 3 MB over QIR-SE TERRESTRIAL (20 Mbit/s, RTT 30 ms, 25-packet queues): slow start
/// ends early in the transfer, with `cubic+hystart` on an ACK train (seed 4), with
/// `cubic` on a loss.
fn small_run(cc: &str, seed: u64) -> RunRecord {
    let link = satquic_link::presets::lookup("qir-terrestrial").unwrap();
    let scenario = Scenario::download(link, TransportSpec::with_cc(cc), 3_000_000, seed);
    run(&scenario).unwrap()
}

fn shared_run() -> &'static RunRecord {
    static RUN: OnceLock<RunRecord> = OnceLock::new();
    RUN.get_or_init(|| small_run("cubic+hystart", 4))
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

fn named<'a>(events: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> {
    events.iter().filter(move |e| e["name"] == name)
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("satquic-qlog-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_qlog_is_json_seq_with_a_0_3_header_and_events_in_time_order() {
    let record = shared_run();
    let dir = temp_dir("format");
    record
        .write_to_with(&dir, &WriteOptions { qlog: true })
        .unwrap();
    let all = records(&std::fs::read(dir.join("qlog.sqlog")).unwrap());
    let header = &all[0];
    assert_eq!(header["qlog_version"], "0.3");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert_eq!(header["trace"]["vantage_point"]["type"], "server");
    assert_eq!(header["trace"]["common_fields"]["time_format"], "relative");
    assert_eq!(header["trace"]["common_fields"]["reference_time"], 0);
    let events = &all[1..];
    let times: Vec<f64> = events.iter().map(|e| e["time"].as_f64().unwrap()).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "events out of order"
    );
    assert_eq!(events[0]["name"], "transport:connection_started");
    let end = events.last().unwrap();
    assert_eq!(end["name"], "satquic:transfer_ended");
    assert_eq!(end["data"]["status"], "completed");
    assert_eq!(end["data"]["bytes"], 3_000_000);
    let completion = record.summary.flows[0].completion_time_s.unwrap();
    assert!((end["time"].as_f64().unwrap() - completion * 1e3).abs() < 1e-6);
    assert_eq!(named(events, "satquic:chunk_delivered").count(), 3);
    assert_eq!(
        named(events, "satquic:handshake_done").count(),
        1,
        "one handshake"
    );
    // Every controller event of the record, under its satquic: name.
    let controller = events
        .iter()
        .filter(|e| {
            let name = e["name"].as_str().unwrap();
            name.starts_with("satquic:") && e["data"].get("type").is_some()
        })
        .count();
    assert_eq!(controller, record.events.len());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn metrics_updated_carry_the_series_rows() {
    let record = shared_run();
    let dir = temp_dir("metrics");
    record
        .write_to_with(&dir, &WriteOptions { qlog: true })
        .unwrap();
    let events = records(&std::fs::read(dir.join("qlog.sqlog")).unwrap());
    let mut series = csv::Reader::from_path(dir.join("series.csv")).unwrap();
    let all_rows: Vec<satquic_run::record::SeriesRow> =
        series.deserialize().map(Result::unwrap).collect();
    assert_eq!(
        named(&events, "satquic:series").count(),
        all_rows.len(),
        "every series row"
    );
    // Before the server accepts the connection there is no controller (cwnd 0).
    let rows: Vec<_> = all_rows.iter().filter(|r| r.cwnd_bytes > 0).collect();
    assert!(
        rows.len() < all_rows.len(),
        "the run starts without a controller"
    );
    let metrics: Vec<&Value> = named(&events, "recovery:metrics_updated").collect();
    assert_eq!(
        metrics.len(),
        rows.len(),
        "one metrics_updated per sender row"
    );
    assert!(rows.len() > 100);
    let mut with_rtt = 0;
    for (m, row) in metrics.iter().zip(rows.iter()) {
        assert!((m["time"].as_f64().unwrap() - row.time_s * 1e3).abs() < 1e-6);
        assert_eq!(m["data"]["congestion_window"], row.cwnd_bytes);
        assert_eq!(m["data"]["bytes_in_flight"], row.in_flight_bytes);
        if let Some(rtt) = row.smoothed_rtt_s {
            let qlog_ms = m["data"]["smoothed_rtt"].as_f64().unwrap();
            assert!((qlog_ms - rtt * 1e3).abs() < 1e-6);
            with_rtt += 1;
        }
    }
    assert!(with_rtt > 100);
    // The cwnd changes during the run, so equal windows are not a coincidence.
    assert!(rows.iter().any(|r| r.cwnd_bytes != rows[0].cwnd_bytes));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_slow_start_exit_is_a_congestion_state_update_at_the_exit_time() {
    let loss_run = small_run("cubic", 4);
    for (record, reason, new) in [
        (
            shared_run(),
            ExitReason::HyStartAckTrain,
            "congestion_avoidance",
        ),
        (&loss_run, ExitReason::Loss, "recovery"),
    ] {
        let exit = record.summary.flows[0]
            .slow_start_exit
            .as_ref()
            .expect("slow start ends within 3 MB");
        assert_eq!(exit.reason, reason);
        let (_, bytes) = &record.qlog_files()[0];
        let events = records(bytes);
        let updates: Vec<&Value> = named(&events, "recovery:congestion_state_updated").collect();
        let first = updates.first().expect("a state update");
        assert!((first["time"].as_f64().unwrap() - exit.at_s * 1e3).abs() < 1e-6);
        assert_eq!(first["data"]["old"], "slow_start");
        assert_eq!(first["data"]["new"], new);
        assert_eq!(first["data"]["trigger"], reason.as_str());
        let exit_event = named(&events, "satquic:slow_start_exit")
            .find(|e| e["data"]["shadow"] == false)
            .unwrap();
        assert_eq!(exit_event["time"], first["time"]);
        // A loss exit's congestion event is not a second transition.
        assert!(updates[1..].iter().all(|u| u["time"] != first["time"]));
    }
    let congestion = loss_run
        .events
        .iter()
        .filter(|e| matches!(e.event, CcEvent::Congestion { .. }))
        .count();
    assert!(
        congestion >= 2,
        "the loss run has later recovery periods too"
    );
    let (_, bytes) = &loss_run.qlog_files()[0];
    let updates = named(&records(bytes), "recovery:congestion_state_updated").count();
    assert_eq!(updates, congestion, "one update per recovery period");
}

#[test]
fn same_seed_gives_a_byte_identical_qlog_and_none_unless_asked() {
    let dir = temp_dir("det");
    let options = WriteOptions { qlog: true };
    shared_run()
        .write_to_with(&dir.join("a"), &options)
        .unwrap();
    small_run("cubic+hystart", 4)
        .write_to_with(&dir.join("b"), &options)
        .unwrap();
    let a = std::fs::read(dir.join("a/qlog.sqlog")).unwrap();
    let b = std::fs::read(dir.join("b/qlog.sqlog")).unwrap();
    assert!(a.len() > 10_000);
    assert!(a == b, "qlog differs between two runs with the same seed");
    shared_run().write_to(&dir.join("c")).unwrap();
    let names: Vec<String> = std::fs::read_dir(dir.join("c"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(dir.join("c/summary.json").is_file());
    assert!(
        !names.iter().any(|n| n.contains("qlog")),
        "no qlog unless asked: {names:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn several_flows_give_one_file_each() {
    let mut record = shared_run().clone();
    let mut second = record.summary.flows[0].clone();
    second.flow = 1;
    record.summary.flows.push(second);
    let names: Vec<String> = record.qlog_files().into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["qlog-flow0.sqlog", "qlog-flow1.sqlog"]);
}

/// A resumed connection's Careful Resume phases appear under the qlog draft's name
/// (draft-ietf-tsvwg-careful-resume-qlog) with its state and restored data.
#[test]
fn careful_resume_phases_are_qlog_careful_resume_phase_updated_events() {
    let link = satquic_link::presets::lookup("qir-sat").unwrap();
    let scenario = Scenario::download(link, TransportSpec::with_cc("cubic+search"), 3_000_000, 1)
        .resumed_after(std::time::Duration::from_secs(10));
    let record = run(&scenario).unwrap();
    let (_, bytes) = &record.qlog_files()[0];
    let events = records(bytes);
    let phases: Vec<&Value> = named(&events, "recovery:careful_resume_phase_updated").collect();
    let news: Vec<&str> = phases
        .iter()
        .map(|e| e["data"]["new"].as_str().unwrap())
        .collect();
    assert_eq!(
        news,
        ["reconnaissance", "unvalidated", "validating", "normal"]
    );
    assert!(phases[0]["data"].get("old").is_none());
    let jump = phases[1]["data"].clone();
    assert_eq!(jump["old"], "reconnaissance");
    assert_eq!(jump["trigger"], "congestion_window_limited");
    let saved = jump["restored_data"]["previous_congestion_window"]
        .as_u64()
        .unwrap();
    assert_eq!(
        jump["state_data"]["congestion_window"].as_u64(),
        Some(saved / 2)
    );
    assert!(jump["state_data"]["first_unvalidated_packet"].is_u64());
    let rtt = jump["restored_data"]["previous_rtt"].as_f64().unwrap();
    assert!((590.0..=620.0).contains(&rtt), "{rtt} ms");
    assert_eq!(
        phases[3]["data"]["trigger"],
        "last_unvalidated_packet_acknowledged"
    );
}
