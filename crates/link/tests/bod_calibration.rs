//! Calibration of the `geo-viasat-bod` preset: during a classic slow-start download the RTT
//! must oscillate with a dominant period of 2 s +- 0.5 s (seed 003 Sec IV-A, Fig 3b: FFT
//! peak at 0.5 Hz) and swing by a few hundred ms (seed 003 Fig 2).
//!
//! The sender is a toy: cwnd doubles each RTT from 10 packets of 1200 B (cwnd += acked
//! bytes), ACK-clocked, over a 600 ms base RTT and a 150 Mbit/s plan. The RTT series is the
//! mean RTT sample per 50 ms bin, from the first ACK to the end of ramp-up (the allocation
//! reaches the plan rate, or the first congestion drop if earlier); its linear trend is
//! removed and the period is that of the largest DFT component above 0.2 Hz.

mod common;

use common::*;
use satquic_link::presets;
use std::time::Duration;

const BIN: Duration = Duration::from_millis(50);

struct Oscillation {
    period_s: f64,
    min_rtt_s: f64,
    max_rtt_s: f64,
    ramp_end: Duration,
}

fn analyse(run: &ToyRun) -> Oscillation {
    let start = run.rtt_samples.first().expect("ACKs arrived").0;
    let ramp_end = match (run.full_allocation_at, run.first_congestion_drop) {
        (Some(a), Some(d)) => a.min(d),
        (a, d) => a.or(d).expect("ramp-up ends within the run"),
    };
    assert!(
        ramp_end > start + Duration::from_secs(4),
        "ramp-up too short to analyse"
    );
    let series = binned_rtt(&run.rtt_samples, start, ramp_end, BIN);
    let period_s = dominant_period_s(&series, BIN.as_secs_f64(), 0.2);
    let (min_rtt_s, max_rtt_s) = series
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    Oscillation {
        period_s,
        min_rtt_s,
        max_rtt_s,
        ramp_end,
    }
}

#[test]
fn geo_viasat_bod_rtt_oscillates_with_a_two_second_period() {
    let spec = presets::lookup("geo-viasat-bod").unwrap();
    let run = run_slow_start(&spec, 1, Duration::from_secs(30));
    let o = analyse(&run);
    let swing = o.max_rtt_s - o.min_rtt_s;
    println!(
        "geo-viasat-bod: period {:.2} s, RTT {:.3}..{:.3} s (swing {:.3} s), ramp-up ends {:?}, \
         full allocation {:?}, first congestion drop {:?}, allocation {:?}",
        o.period_s,
        o.min_rtt_s,
        o.max_rtt_s,
        swing,
        o.ramp_end,
        run.full_allocation_at,
        run.first_congestion_drop,
        run.allocation
    );
    assert!(
        (1.5..=2.5).contains(&o.period_s),
        "dominant period {:.2} s",
        o.period_s
    );
    assert!(
        (0.55..0.65).contains(&o.min_rtt_s),
        "troughs at the base RTT"
    );
    assert!(
        (0.2..=0.8).contains(&swing),
        "swing of a few hundred ms, got {swing:.3} s"
    );
    assert!(
        run.full_allocation_at.is_some(),
        "plan rate granted during the run"
    );
}

#[test]
fn calibration_holds_for_sender_variations() {
    let spec = presets::lookup("geo-viasat-bod").unwrap();
    for cfg in [
        ToyConfig {
            ack_every: 2,
            ..Default::default()
        },
        ToyConfig {
            paced: true,
            ..Default::default()
        },
        ToyConfig {
            ack_every: 2,
            paced: true,
            ..Default::default()
        },
    ] {
        let run = run_slow_start_with(&spec, 1, Duration::from_secs(30), cfg);
        let o = analyse(&run);
        println!(
            "{cfg:?}: period {:.2} s, RTT {:.3}..{:.3} s",
            o.period_s, o.min_rtt_s, o.max_rtt_s
        );
        assert!(
            (1.5..=2.5).contains(&o.period_s),
            "{cfg:?}: dominant period {:.2} s",
            o.period_s
        );
    }
}

#[test]
fn without_bod_there_is_no_two_second_oscillation() {
    // The plain geo-viasat link: RTT stays at the base until the queue builds at capacity.
    let spec = presets::lookup("geo-viasat").unwrap();
    let run = run_slow_start(&spec, 1, Duration::from_secs(30));
    let capacity = run.capacity_at.expect("the queue overflowed");
    let before: Vec<_> = run
        .rtt_samples
        .iter()
        .filter(|(t, _)| *t < capacity)
        .map(|(_, r)| r.as_secs_f64())
        .collect();
    let max = before.iter().cloned().fold(0.0, f64::max);
    assert!(
        max < 0.7,
        "RTT before capacity stays near 600 ms, max {max:.3}"
    );
}

#[test]
fn dft_finds_a_known_period() {
    // 2 s sinusoid on a ramp, 50 ms bins, 8 s long.
    let x: Vec<f64> = (0..160)
        .map(|i| {
            let t = i as f64 * 0.05;
            0.6 + 0.05 * t + 0.2 * (std::f64::consts::TAU * t / 2.0).sin()
        })
        .collect();
    assert!((dominant_period_s(&x, 0.05, 0.2) - 2.0).abs() < 1e-9);
}
