//! Same scenario and seed => byte-identical record; different seeds => different records;
//! the randomness left inside TLS changes packet bytes but never sizes or times.

use satquic_run::{Scenario, TransportSpec};
use satquic_sim::{RunOptions, run, run_with};

/// 2 MB over QIR-SE SATLOSS (20/2 Mbit/s, 300 ms each way, 1 % loss each way): random
/// loss makes the seed matter.
fn lossy(seed: u64) -> Scenario {
    let link = satquic_link::presets::lookup("qir-satloss").unwrap();
    Scenario::download(
        link,
        TransportSpec::with_cc("cubic+search"),
        2_000_000,
        seed,
    )
}

fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    satquic_run::record::RECORD_FILES
        .iter()
        .map(|f| (f.to_string(), std::fs::read(dir.join(f)).unwrap()))
        .collect()
}

#[test]
fn same_scenario_and_seed_give_byte_identical_record_files() {
    let tmp = std::env::temp_dir().join(format!("satquic-sim-det-{}", std::process::id()));
    let a = run(&lossy(7)).unwrap();
    let b = run(&lossy(7)).unwrap();
    a.write_to(&tmp.join("a")).unwrap();
    b.write_to(&tmp.join("b")).unwrap();
    let (fa, fb) = (files(&tmp.join("a")), files(&tmp.join("b")));
    for ((name, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(!x.is_empty(), "{name} is empty");
        assert!(x == y, "{name} differs between two runs with the same seed");
    }
    // The run saw loss, so the comparison covered recovery too.
    assert!(a.summary.flows[0].packets_lost > 0);
    assert_eq!(a.summary.flows[0].status, "completed");
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn different_seeds_give_different_records() {
    let a = run(&lossy(1)).unwrap();
    let b = run(&lossy(2)).unwrap();
    assert_ne!(a.summary_json(), b.summary_json());
    assert_ne!(a.series_csv(), b.series_csv());
}

/// The argument of `satquic_sim::tls`: TLS keys differ from run to run (ring draws the
/// X25519 shares from the OS), yet every datagram has the same time, direction and size.
#[test]
fn datagram_trace_is_identical_although_tls_keys_differ() {
    let options = RunOptions {
        datagram_trace: true,
        tls_exporter: true,
        ..RunOptions::default()
    };
    let a = run_with(&lossy(3), &options).unwrap();
    let b = run_with(&lossy(3), &options).unwrap();
    assert!(
        a.trace.len() > 1000,
        "trace has {} datagrams",
        a.trace.len()
    );
    assert_eq!(a.trace, b.trace);
    let (ka, kb) = (a.tls_exporter[0].unwrap(), b.tls_exporter[0].unwrap());
    assert_ne!(ka, kb, "TLS secrets should be fresh in every run");
    assert_eq!(a.record.summary_json(), b.record.summary_json());
}

#[test]
fn wall_time_is_kept_out_of_the_record() {
    let record = run(&lossy(5)).unwrap();
    let json = record.summary_json();
    assert!(
        !json.contains("wall"),
        "summary.json must not carry wall-clock values"
    );
}

#[test]
fn a_cancelled_run_stops_without_a_record_and_an_unset_flag_changes_nothing() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let flag = Arc::new(AtomicBool::new(true));
    let cancelled = run_with(
        &lossy(5),
        &RunOptions {
            cancel: Some(flag.clone()),
            ..RunOptions::default()
        },
    );
    assert!(
        matches!(cancelled, Err(satquic_sim::SimError::Cancelled)),
        "{:?}",
        cancelled.map(|o| o.record.summary.outcome)
    );
    flag.store(false, std::sync::atomic::Ordering::Relaxed);
    let kept = run_with(
        &lossy(5),
        &RunOptions {
            cancel: Some(flag),
            ..RunOptions::default()
        },
    )
    .unwrap()
    .record;
    let plain = run(&lossy(5)).unwrap();
    assert_eq!(
        serde_json::to_string(&kept.summary).unwrap(),
        serde_json::to_string(&plain.summary).unwrap()
    );
}
