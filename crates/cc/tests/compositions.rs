//! Property tests over what ships: random compositions of every slow start, avoidance
//! and modifier (growth, floor, jump, burst, loss filter, rollback, Careful Resume, with
//! their options), and the `satellite` profile fresh and resumed, under random
//! ACK/loss/RTT event streams (issue 32 item 10). Invariants: no panic or overflow; the
//! window never below the controller's minimum nor above [`MAX_WINDOW`]; a pacing rate,
//! when Careful Resume asks for one, finite and positive, and a pacing burst positive;
//! the same input giving the same output.

use std::time::Duration;

use proptest::prelude::*;
use satquic_cc::controller::MAX_WINDOW;
use satquic_cc::{CongestionConfig, Controller, ResumeParams, RttInfo};

/// Congestion avoidance with its slow starts (each a spec prefix that parses alone).
const BASES: &[&str] = &[
    "cubic",
    "newreno",
    "hybla",
    "cubic+hystart++",
    "cubic+hystart",
    "newreno+hystart:ack-train",
    "cubic+search",
    "cubic+search:draft",
    "cubic+search:v2,lower-cwnd",
    "cubic+search:v3,interp",
    "hybla+search:v2,lookback=latest",
];

/// Each modifier: the spellings a composition picks from (one per modifier at most).
const MODIFIERS: &[&[&str]] = &[
    &["+growth:x=3", "+growth:x=4", "+growth:rtt"],
    &[
        "+floor",
        "+floor:ref=200,max-rtt=400",
        "+floor:iw=15360,max-rtt=1000",
    ],
    &[
        "+jump",
        "+jump:cap",
        "+jump:fraction=0.25",
        "+jump:rtt=smoothed",
        "+jump:cap=3,interval=50",
        "+jump:bound",
        "+jump:cap,bound=2",
        "+jump:cap=1.5,bound,validate",
        "+jump:cap,bound=4,bound-margin=0.1,validate=0.5",
    ],
    &[
        "+burst",
        "+burst:min=65536",
        "+burst:divisor=8,min=65536,min-rtt=100",
        "+burst:min=65536,time=10",
        "+burst:time=0.5",
    ],
    &["+unpaced"],
    &[
        "+loss-filter",
        "+loss-filter:cr",
        "+loss-filter:threshold=0.3",
    ],
    &["+rollback", "+rollback:share=0.1,min=3"],
    &["+retreat"],
    &[
        "+cr",
        "+cr:ss-cap=1,jump-on-confirm",
        "+cr:fast",
        "+cr:unpaced,no-pacer,jump=0.25",
        "+cr:retreat=0.25,min-observe=0,burst=24000,pacer-gain=2",
        "+cr:max-jump=5000000,beta=0.7",
    ],
];

#[derive(Debug, Clone)]
enum Op {
    Sent {
        dt: u64,
        bytes: u64,
    },
    Ack {
        dt: u64,
        bytes: u64,
        rtt: u64,
        app_limited: bool,
    },
    EndAcks,
    Loss {
        persistent: bool,
        bytes: u64,
    },
    Mtu(u16),
    PathChange,
}

fn op() -> impl Strategy<Value = Op> {
    let dt = prop_oneof![Just(0u64), 0u64..2_000_000, 0u64..2_000_000_000];
    let bytes = prop_oneof![Just(0u64), 1u64..1500, 1u64..10_000_000, Just(u64::MAX / 2)];
    let rtt = prop_oneof![Just(0u64), 1u64..1_000_000, 1_000_000u64..3_000_000_000];
    prop_oneof![
        6 => (dt.clone(), 1u64..1500).prop_map(|(dt, bytes)| Op::Sent { dt, bytes }),
        6 => (dt, bytes.clone(), rtt, any::<bool>())
            .prop_map(|(dt, bytes, rtt, app_limited)| Op::Ack { dt, bytes, rtt, app_limited }),
        2 => Just(Op::EndAcks),
        1 => (any::<bool>(), bytes).prop_map(|(persistent, bytes)| Op::Loss { persistent, bytes }),
        1 => (1200u16..=9000).prop_map(Op::Mtu),
        1 => Just(Op::PathChange),
    ]
}

/// A composition: a base and, per modifier, none or one of its spellings.
fn composition() -> impl Strategy<Value = String> {
    let picks: Vec<_> = MODIFIERS
        .iter()
        .map(|m| proptest::option::of(0..m.len()))
        .collect();
    (0..BASES.len(), picks).prop_map(|(base, picks)| {
        let mut spec = BASES[base].to_string();
        for (m, pick) in MODIFIERS.iter().zip(picks) {
            if let Some(i) = pick {
                spec.push_str(m[i]);
            }
        }
        spec
    })
}

/// Runs `ops` on `ctl`, checking the invariants after each; returns the windows seen.
fn drive(ctl: &mut Controller, ops: &[Op]) -> Result<Vec<(u64, Option<u64>)>, TestCaseError> {
    let mut now = Duration::ZERO;
    let mut pn = 0u64;
    let mut trace = Vec::with_capacity(ops.len());
    for op in ops {
        match *op {
            Op::Sent { dt, bytes } => {
                now += Duration::from_nanos(dt);
                pn += 1;
                ctl.on_sent(now, bytes, pn);
            }
            Op::Ack {
                dt,
                bytes,
                rtt,
                app_limited,
            } => {
                now += Duration::from_nanos(dt);
                let rtt = Duration::from_nanos(rtt);
                ctl.on_ack(
                    now,
                    now.saturating_sub(rtt),
                    bytes,
                    app_limited,
                    RttInfo::fixed(rtt),
                );
            }
            Op::EndAcks => ctl.on_end_acks(now, 0, Some(pn)),
            Op::Loss { persistent, bytes } => {
                ctl.on_congestion_event(
                    now,
                    now.saturating_sub(Duration::from_millis(1)),
                    persistent,
                    bytes,
                );
            }
            Op::Mtu(m) => ctl.on_mtu_update(m),
            Op::PathChange => ctl.on_path_change(now),
        }
        let window = ctl.window();
        prop_assert!(
            window >= ctl.minimum_window(),
            "{window} < {}",
            ctl.minimum_window()
        );
        prop_assert!(window <= MAX_WINDOW, "{window} > MAX_WINDOW");
        prop_assert!(ctl.congestion_window() <= MAX_WINDOW);
        if let Some(p) = ctl.pacing() {
            prop_assert!(
                p.rate_bytes_per_sec.is_finite() && p.rate_bytes_per_sec > 0.0,
                "pacing rate {}",
                p.rate_bytes_per_sec
            );
        }
        let burst = ctl.pacing_burst();
        prop_assert!(burst.is_none_or(|b| b > 0), "pacing burst 0");
        trace.push((window, burst));
    }
    Ok(trace)
}

/// Builds two controllers of `make()` (a fresh configuration each: saved parameters go
/// to the first controller of a configuration and its clones only) and runs `ops` on both.
fn check(make: impl Fn() -> CongestionConfig, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut first = make()
        .build_controller(1200)
        .expect("a composed controller");
    let mut again = make()
        .build_controller(1200)
        .expect("a composed controller");
    let a = drive(&mut first, ops)?;
    let b = drive(&mut again, ops)?;
    prop_assert_eq!(a, b, "the same input gave different windows");
    Ok(())
}

/// `config` resuming from `(saved_cwnd bytes, saved_rtt ms)`, if given.
fn with_resume(config: CongestionConfig, resume: Option<(u64, u64)>) -> CongestionConfig {
    match resume {
        Some((cwnd, rtt_ms)) => {
            config.resume(ResumeParams::new(cwnd, Duration::from_millis(rtt_ms)))
        }
        None => config,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_composition_keeps_its_invariants(
        spec in composition(),
        resume in proptest::option::of((1u64..1_000_000_000, 1u64..5_000)),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        if let Err(e) = spec.parse::<CongestionConfig>() {
            // A combination the parser refuses is refused in one line, not a panic.
            prop_assert!(!e.to_string().contains('\n'), "{spec}: {e}");
            return Ok(());
        }
        let make = || with_resume(spec.parse().expect("parsed above"), resume);
        check(make, &ops).map_err(|e| TestCaseError::fail(format!("{spec}: {e}")))?;
    }

    #[test]
    fn the_satellite_profile_keeps_its_invariants_fresh_and_resumed(
        resume in proptest::option::of((1u64..1_000_000_000, 1u64..5_000)),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        check(|| with_resume(satquic_cc::profile::satellite_cc(), resume), &ops)?;
    }
}

/// Most compositions parse: the generator exercises the modifiers, not only refusals.
#[test]
fn the_generator_mostly_makes_specs_that_parse() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = composition();
    let mut parsed = 0;
    for _ in 0..200 {
        let spec = strategy.new_tree(&mut runner).unwrap().current();
        parsed += usize::from(spec.parse::<CongestionConfig>().is_ok());
    }
    assert!(parsed >= 100, "{parsed} of 200 compositions parse");
}
