//! SEARCH on synthetic ACK timelines (no network): below capacity it must not exit, at
//! capacity it must exit after the chokepoint and soon. Numbers are printed for
//! BENCHMARKS.md (`cargo test -p satquic-cc --test search_timelines -- --nocapture`).

mod common;

use std::time::Duration;

use common::{BASE_RTT, Noise, PathModel, RttSeen, rtts, run};
use satquic_cc::{CongestionConfig, ExitAction, ExitReason, Search, SearchConfig};

/// 150 Mbit/s, the seeds' GEO plan rate.
const RATE_BPS: f64 = 150e6;

fn versions() -> [(&'static str, SearchConfig); 3] {
    [("v2", Search::v2()), ("v3", Search::v3()), ("draft", Search::draft())]
}

fn cc(search: SearchConfig) -> CongestionConfig {
    CongestionConfig::cubic().slow_start(search)
}

/// 20 RTTs of uncapped doubling from a 10-packet window.
fn uncapped(search: SearchConfig, noise: Noise) -> Option<(Duration, ExitReason, u64, u64)> {
    let trace = run(cc(search), &PathModel::uncapped(noise), BASE_RTT * 20, Duration::ZERO);
    // Doubling really went on: the window grew by far more than 2^15.
    if trace.exit.is_none() {
        assert!(trace.controller.window() > 12_000 << 15, "window {}", trace.controller.window());
    }
    trace.exit
}

#[test]
fn no_exit_below_capacity_noiseless() {
    for (name, search) in versions() {
        assert_eq!(uncapped(search, Noise::None), None, "{name}");
    }
}

#[test]
fn no_exit_below_capacity_with_geo_like_oscillation() {
    // +-25% at 0.5 Hz on 600 ms: the GEO RTT oscillation of seed 003 Fig. 2-3.
    for (name, search) in versions() {
        let noise = Noise::Sine {
            amplitude: 0.25,
            hz: 0.5,
        };
        assert_eq!(uncapped(search, noise), None, "{name}");
    }
}

#[test]
fn rarely_exits_below_capacity_with_random_jitter() {
    for (name, search) in versions() {
        let exits = (0..100)
            .filter(|&seed| {
                let noise = Noise::Jitter {
                    amplitude: 0.25,
                    seed,
                };
                uncapped(search.clone(), noise).is_some()
            })
            .count();
        println!("{name}: {exits}/100 false exits with +-25% per-ACK jitter");
        assert!(exits <= 5, "{name}: {exits} of 100 jitter traces exited below capacity");
    }
}

#[test]
fn fixed_rtt_model_exits_after_capacity_within_three_rtts() {
    // Seed 003 Sec. IV-B's model: delivery capped at the BDP, RTT fixed.
    let path = PathModel::bottleneck(RATE_BPS, RttSeen::Propagation);
    for (name, search) in versions() {
        let trace = run(cc(search), &path, BASE_RTT * 40, BASE_RTT);
        let (exit_at, reason, ..) = trace.exit.expect("exit");
        assert_eq!(reason, ExitReason::Search, "{name}");
        let capacity = trace.capacity_at_exit.expect("queue was busy at exit");
        let delay = rtts(exit_at - capacity);
        println!("{name}: fixed-RTT model: exit {delay:.2} RTTs after capacity");
        assert!(exit_at > capacity, "{name}");
        assert!(delay <= 3.0, "{name}: exit {delay:.2} RTTs after capacity");
    }
}

#[test]
fn physical_bottleneck_exits_before_queueing_delay_reaches_three_rtts() {
    // A bottleneck serializing into an unbounded queue: the RTT inflates after capacity.
    let path = PathModel::bottleneck(RATE_BPS, RttSeen::Measured);
    for (name, search) in versions() {
        let trace = run(cc(search), &path, BASE_RTT * 60, BASE_RTT);
        let (exit_at, reason, ..) = trace.exit.expect("exit");
        assert_eq!(reason, ExitReason::Search, "{name}");
        let capacity = trace.capacity_at_exit.expect("queue was busy at exit");
        println!(
            "{name}: physical bottleneck: exit {:.2} base RTTs after capacity, queueing delay at exit {:.0} ms ({:.2} base RTTs)",
            rtts(exit_at - capacity),
            trace.queue_delay_at_exit.as_secs_f64() * 1e3,
            rtts(trace.queue_delay_at_exit),
        );
        assert!(exit_at > capacity, "{name}");
        assert!(trace.queue_delay_at_exit < BASE_RTT * 3, "{name}");
        if let Some(t) = trace.queue_3x_at {
            assert!(exit_at < t, "{name}");
        }
    }
}

#[test]
fn lowering_action_lands_near_the_bdp() {
    let path = PathModel::bottleneck(RATE_BPS, RttSeen::Propagation);
    let cases = [
        ("v2", Search::v2().exit_action(ExitAction::LowerCwnd)),
        ("v3", Search::v3().exit_action(ExitAction::LowerCwnd)),
        ("draft", Search::draft().exit_action(ExitAction::DrainToTarget)),
    ];
    for (name, search) in cases {
        let action = search.exit_action;
        let trace = run(cc(search), &path, BASE_RTT * 40, Duration::ZERO);
        let (_, _, before, after) = trace.exit.expect("exit");
        let ratio = after as f64 / path.bdp();
        println!(
            "{name} {}: cwnd at exit {:.2} BDP, after {:.3} BDP",
            action.as_str(),
            before as f64 / path.bdp(),
            ratio
        );
        assert!((0.5..=1.5).contains(&ratio), "{name}: {ratio:.3} x BDP");
    }
}

#[test]
fn shadow_mode_reports_but_keeps_growing() {
    let path = PathModel::bottleneck(RATE_BPS, RttSeen::Measured);
    let search = Search::draft().mode(satquic_cc::SearchMode::Shadow);
    let trace = run(cc(search), &path, BASE_RTT * 25, Duration::ZERO);
    assert!(trace.exit.is_none(), "shadow mode must not exit");
    let shadow_exits = trace
        .events
        .iter()
        .filter(|e| matches!(e, satquic_cc::CcEvent::SlowStartExit { shadow: true, .. }))
        .count();
    assert_eq!(shadow_exits, 1);
    assert!(trace.controller.in_slow_start());
}
