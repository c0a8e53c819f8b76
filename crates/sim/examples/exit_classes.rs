//! Exit classes of several congestion controls over many seeds (the numbers behind the
//! exit-class tests), and the batch speed.
//!
//! `cargo run --release -p satquic-sim --example exit_classes -- geo-viasat 50 2 200000000 cubic cubic+search cubic+search:v2`

use std::time::Instant;

use satquic_sim::batch::{Variant, VariantStats, run_batch};
use satquic_sim::{Scenario, TransportSpec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let link_name = args.first().map(String::as_str).unwrap_or("geo-viasat");
    let runs: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let jobs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let bytes: u64 = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000_000);
    let ccs: Vec<String> = if args.len() > 4 {
        args[4..].to_vec()
    } else {
        vec!["cubic".into(), "cubic+search".into()]
    };
    let link = satquic_link::presets::lookup(link_name).expect("known preset");
    let variants: Vec<Variant> = ccs
        .iter()
        .map(|cc| Variant {
            label: cc.clone(),
            scenario: Scenario::download(
                link.clone(),
                TransportSpec {
                    sender_shaper: std::env::var_os("SHAPER")
                        .map(|_| satquic_sim::scenario::ShaperSpec::seeds_server()),
                    ..TransportSpec::with_cc(cc)
                },
                bytes,
                1,
            ),
        })
        .collect();
    let started = Instant::now();
    let results = run_batch(&variants, runs, 1, jobs, |_| {}).expect("pool");
    let wall = started.elapsed().as_secs_f64();
    let simulated: f64 = results
        .iter()
        .filter_map(|r| r.record.as_ref().ok())
        .map(|r| r.sim_time.as_secs_f64())
        .sum();
    for (i, v) in variants.iter().enumerate() {
        let records: Vec<_> = results
            .iter()
            .filter(|r| r.variant == i)
            .filter_map(|r| r.record.as_ref().ok())
            .collect();
        let stats =
            VariantStats::from_records(&v.label, records.iter().copied(), &[50, 100, 150, 200]);
        let exit_minus_capacity: Vec<f64> = records
            .iter()
            .filter_map(|r| {
                let f = &r.summary.flows[0];
                Some(f.slow_start_exit.as_ref()?.at_s - f.capacity_at_s?)
            })
            .collect();
        let ratio: Vec<f64> = records
            .iter()
            .filter_map(|r| r.summary.flows[0].exit_to_loss_ratio)
            .collect();
        println!(
            "{:<28} classes {:?}  completion median {:?}  exit median {:?}  loss median {:?}  exit-capacity median {:?}  exit-to-loss median {:?}",
            v.label,
            stats.exit_classes,
            stats
                .completion_s
                .map(|q| (q.median * 100.0).round() / 100.0),
            stats.exit_s.map(|q| (q.median * 100.0).round() / 100.0),
            stats
                .first_loss_s
                .map(|q| (q.median * 100.0).round() / 100.0),
            satquic_sim::batch::Quartiles::of(&exit_minus_capacity)
                .map(|q| (q.median * 100.0).round() / 100.0),
            satquic_sim::batch::Quartiles::of(&ratio).map(|q| (q.median * 100.0).round() / 100.0),
        );
    }
    println!(
        "{} runs, {jobs} jobs: {wall:.1} s wall, {simulated:.0} s simulated ({:.1}x real time overall)",
        results.len(),
        simulated / wall
    );
}
