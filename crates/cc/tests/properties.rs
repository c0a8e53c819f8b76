//! Property tests: no controller or slow start panics, overflows or drops below
//! 2 x MSS under arbitrary event sequences (zero and huge RTTs, equal or decreasing
//! timestamps, zero-byte and huge ACKs, loss storms, long idles, MTU changes).

use std::time::Duration;

use proptest::prelude::*;
use satquic_cc::{CongestionConfig, RttInfo};

const SPECS: &[&str] = &[
    "cubic",
    "newreno",
    "hybla",
    "cubic+hystart++",
    "cubic+hystart",
    "newreno+hystart:ack-train,unpaced,low-window=0,min-samples=0",
    "hybla+hystart:delay,min-thresh=0,max-thresh=0",
    "newreno+hybla",
    "cubic+search",
    "cubic+search:v2",
    "cubic+search:v3",
    "cubic+search:v2,lower-cwnd,interp",
    "cubic+search:draft,drain,no-reset",
    "cubic+search:v3,interp-forward,shadow",
    "hybla+search:v2,thresh=0.1,bins=1,extra=1",
];

#[derive(Debug, Clone)]
enum Op {
    Sent {
        dt: i64,
        bytes: u64,
    },
    Ack {
        dt: i64,
        bytes: u64,
        rtt: u64,
        app_limited: bool,
    },
    EndAcks {
        largest: Option<u64>,
    },
    Loss {
        persistent: bool,
        bytes: u64,
    },
    Mtu(u16),
}

fn nanos() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..1_000,
        0u64..10_000_000_000,
        Just(u64::MAX / 4),
    ]
}

fn bytes() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        1u64..1500,
        1u64..100_000_000,
        Just(u64::MAX / 2)
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let dt = prop_oneof![Just(0i64), -1_000_000i64..1_000_000, 0i64..100_000_000_000];
    prop_oneof![
        (dt.clone(), bytes()).prop_map(|(dt, bytes)| Op::Sent { dt, bytes }),
        (dt, bytes(), nanos(), any::<bool>()).prop_map(|(dt, bytes, rtt, app_limited)| Op::Ack {
            dt,
            bytes,
            rtt,
            app_limited
        }),
        proptest::option::of(any::<u64>()).prop_map(|largest| Op::EndAcks { largest }),
        (any::<bool>(), bytes()).prop_map(|(persistent, bytes)| Op::Loss { persistent, bytes }),
        (1200u16..=65535).prop_map(Op::Mtu),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn controllers_survive_any_event_sequence(spec in 0..SPECS.len(), ops in prop::collection::vec(op(), 1..400)) {
        let cc: CongestionConfig = SPECS[spec].parse().unwrap();
        let mut ctl = cc.build_controller(1200).unwrap();
        let mut now: u64 = 0;
        let mut pn = 0u64;
        let mut mss = 1200u64;
        for op in ops {
            match op {
                Op::Sent { dt, bytes } => {
                    now = now.saturating_add_signed(dt);
                    pn += 1;
                    ctl.on_sent(Duration::from_nanos(now), bytes, pn);
                }
                Op::Ack { dt, bytes, rtt, app_limited } => {
                    now = now.saturating_add_signed(dt);
                    let t = Duration::from_nanos(now);
                    let rtt = Duration::from_nanos(rtt);
                    ctl.on_ack(t, t.saturating_sub(rtt), bytes, app_limited, RttInfo::fixed(rtt));
                }
                Op::EndAcks { largest } => ctl.on_end_acks(Duration::from_nanos(now), 0, largest),
                Op::Loss { persistent, bytes } => {
                    let t = Duration::from_nanos(now);
                    ctl.on_congestion_event(t, t.saturating_sub(Duration::from_millis(1)), persistent, bytes);
                }
                Op::Mtu(m) => {
                    mss = u64::from(m);
                    ctl.on_mtu_update(m);
                }
            }
            prop_assert!(ctl.window() >= 2 * mss, "{} < 2 x {}", ctl.window(), mss);
            prop_assert!(ctl.window() <= satquic_cc::controller::MAX_WINDOW);
        }
    }

    #[test]
    fn spec_parser_never_panics(s in "[a-z0-9+:,=.\\-]{0,40}") {
        if let Err(e) = s.parse::<CongestionConfig>() {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }
}
