//! Simulation speed: simulated seconds per wall-clock second, one run at a time on one
//! core, and the process's peak memory.
//!
//! `cargo bench -p satquic-sim --bench speed` (release build). Pass case names to run a
//! subset: `cargo bench -p satquic-sim --bench speed -- qir`.

use std::time::Instant;

use satquic_run::{MB, MIB, Scenario, ShaperSpec, TransportSpec};
use satquic_sim::run;

struct Case {
    name: &'static str,
    link: &'static str,
    cc: &'static str,
    bytes: u64,
    shaper: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "geo-viasat 200 MB cubic+search",
        link: "geo-viasat",
        cc: "cubic+search",
        bytes: 200 * MB,
        shaper: false,
    },
    Case {
        name: "geo-viasat 200 MB cubic+search, 200M shaper",
        link: "geo-viasat",
        cc: "cubic+search",
        bytes: 200 * MB,
        shaper: true,
    },
    Case {
        name: "geo-viasat 30 MB cubic+search (no loss)",
        link: "geo-viasat",
        cc: "cubic+search",
        bytes: 30 * MB,
        shaper: false,
    },
    Case {
        name: "qir-sat 10 MiB cubic+search",
        link: "qir-sat",
        cc: "cubic+search",
        bytes: 10 * MIB,
        shaper: false,
    },
];

/// Peak resident set size of this process so far, from /proc (Linux), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1000.0)
}

/// CPU time this thread has used so far (user + system), from /proc (Linux, 10 ms
/// ticks). Unlike wall time it does not grow when other processes share the cores.
fn thread_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14, 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let repeats = 3;
    println!(
        "{:<46} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8}",
        "case", "sim s", "wall s", "sim/wall", "cpu s", "sim/cpu", "peak MB"
    );
    for case in CASES {
        if !filters.is_empty() && !filters.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        let link = satquic_link::presets::lookup(case.link).expect("preset");
        let transport = TransportSpec {
            sender_shaper: case.shaper.then(ShaperSpec::seeds_server),
            ..TransportSpec::with_cc(case.cc)
        };
        let scenario = Scenario::download(link, transport, case.bytes, 1);
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut sim = 0.0;
        for _ in 0..repeats {
            let cpu0 = thread_cpu_s();
            let started = Instant::now();
            let record = run(&scenario).expect("valid scenario");
            walls.push(started.elapsed().as_secs_f64());
            if let (Some(a), Some(b)) = (cpu0, thread_cpu_s()) {
                cpus.push(b - a);
            }
            sim = record.sim_time.as_secs_f64();
        }
        walls.sort_by(f64::total_cmp);
        cpus.sort_by(f64::total_cmp);
        let best = walls[0];
        let cpu = cpus.first().copied().unwrap_or(f64::NAN);
        println!(
            "{:<46} {:>8.2} {:>8.3} {:>9.1} {:>8.2} {:>8.1} {:>8.0}",
            case.name,
            sim,
            best,
            sim / best,
            cpu,
            sim / cpu,
            peak_rss_mb().unwrap_or(f64::NAN)
        );
    }
    println!("(best of {repeats} runs per case; peak MB is the process's high-water mark so far)");
}
