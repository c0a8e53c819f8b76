//! Runs one download and prints its summary and speed.
//!
//! `cargo run --release -p satquic-sim --example one_run -- geo-viasat cubic+search 200000000 1`

use std::time::Instant;

use satquic_run::{Scenario, TransportSpec};
use satquic_sim::run;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let link = args.first().map(String::as_str).unwrap_or("qir-sat");
    let cc = args.get(1).map(String::as_str).unwrap_or("cubic");
    let bytes: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let spec = satquic_link::presets::lookup(link).expect("known preset");
    let mut transport = TransportSpec::with_cc(cc);
    if let Some(w) = std::env::var("RWND").ok().and_then(|w| w.parse().ok()) {
        transport.receive_window = w;
        transport.stream_receive_window = w;
    }
    if std::env::var_os("QUICLY").is_some() {
        transport.window_update = satquic_run::scenario::WindowUpdate::Quicly;
    }
    let scenario = Scenario::download(spec, transport, bytes, seed);
    let started = Instant::now();
    let record = run(&scenario).expect("valid scenario");
    let wall = started.elapsed().as_secs_f64();
    let mut summary = serde_json::to_value(&record.summary).unwrap();
    summary.as_object_mut().unwrap().remove("scenario");
    println!("{}", serde_json::to_string_pretty(&summary).unwrap());
    if let Some(dir) = args.get(4) {
        record
            .write_to(std::path::Path::new(dir))
            .expect("writable");
    }
    println!(
        "simulated {:.3} s in {:.3} s wall: {:.1}x real time; {} series rows, {} events",
        record.sim_time.as_secs_f64(),
        wall,
        record.sim_time.as_secs_f64() / wall,
        record.series.len(),
        record.events.len()
    );
}
