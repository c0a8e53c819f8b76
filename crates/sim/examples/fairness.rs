//! N timed flows of one congestion control on one bottleneck: each flow's goodput over
//! the second half of the run, and Jain's fairness index over 5-second windows and over
//! the second half (the CLI cannot ask for several flows yet, issue 12 part 3).
//!
//! `cargo run --release -p satquic-sim --example fairness -- thesis-sat bbr3 2 60 1 10`
//! (arguments: link preset, cc spec, flows, seconds, seed, seconds between flow starts)

use std::time::{Duration, Instant};

use satquic_run::{DataDirection, FlowSpec, RunRecord, Scenario, TransportSpec, Workload};
use satquic_sim::run;

/// Width of the windows the index is computed over.
const WINDOW: Duration = Duration::from_secs(5);

fn delivered_by(record: &RunRecord, flow: u32, t_s: f64) -> u64 {
    record
        .series
        .iter()
        .filter(|r| r.flow == flow && r.time_s <= t_s)
        .map(|r| r.delivered_bytes)
        .max()
        .unwrap_or(0)
}

fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if squares == 0.0 {
        return 0.0;
    }
    sum * sum / (xs.len() as f64 * squares)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let link = args.first().map(String::as_str).unwrap_or("thesis-sat");
    let cc = args.get(1).map(String::as_str).unwrap_or("bbr3");
    let flows: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let seconds: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let stagger: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(0);
    let scenario = Scenario {
        link: satquic_link::presets::lookup(link).expect("known preset"),
        flows: (0..flows)
            .map(|i| FlowSpec {
                start: Duration::from_secs(stagger * u64::from(i)),
                transport: TransportSpec::with_cc(cc),
                workload: Workload::Timed {
                    // Every flow ends at `seconds`.
                    duration: Duration::from_secs(seconds - stagger * u64::from(i)),
                },
                direction: DataDirection::Download,
            })
            .collect(),
        seed,
        time_cap: Duration::from_secs(seconds + 5),
        resume_after: None,
    };
    let started = Instant::now();
    let record = run(&scenario).expect("valid scenario");
    let half = seconds as f64 / 2.0;
    let end = seconds as f64;
    let shares: Vec<f64> = (0..flows)
        .map(|f| (delivered_by(&record, f, end) - delivered_by(&record, f, half)) as f64)
        .collect();
    println!("{link} {cc}, {flows} flows {stagger} s apart, {seconds} s, seed {seed}");
    for (f, bytes) in shares.iter().enumerate() {
        println!(
            "flow {f}: {:.2} Mbit/s over [{half}, {end}] s",
            bytes * 8.0 / half / 1e6
        );
    }
    println!("Jain's index over [{half}, {end}] s: {:.4}", jain(&shares));
    let mut t = 0.0;
    let mut row = Vec::new();
    while t + WINDOW.as_secs_f64() <= end {
        let next = t + WINDOW.as_secs_f64();
        let xs: Vec<f64> = (0..flows)
            .map(|f| (delivered_by(&record, f, next) - delivered_by(&record, f, t)) as f64)
            .collect();
        row.push(format!("{:.0}-{:.0}s {:.3}", t, next, jain(&xs)));
        t = next;
    }
    println!(
        "Jain's index per {} s: {}",
        WINDOW.as_secs(),
        row.join(", ")
    );
    println!("wall clock {:.1} s", started.elapsed().as_secs_f64());
}
