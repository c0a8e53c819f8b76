//! SEARCH (spec `search`), one behaviour per test on hand-built ACK sequences: seed 003's
//! worked example, microsecond to multi-second RTTs, the outcomes that are not a verdict
//! (RTT inflated, reset, nothing sent) and the state size. Whole slow starts on synthetic
//! timelines are in `search_timelines.rs`.

mod common;

use std::time::Duration;

use common::samples::ack;
use satquic_cc::event::Emitter;
use satquic_cc::slow_start::PrevPoint;
use satquic_cc::{
    CcEvent, EventLog, Search, SearchClock, SearchConfig, SearchMode, SearchOutcome, SearchVersion,
    SlowStart,
};

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Seed 003 Sec. IV-B's worked example for SEARCH 2.0: a window of 4 RTTs, delivered
/// bytes doubling 1, 2, 4, 8, 16 and then capped at 16 per RTT. One RTT after capacity
/// the normalized difference is (60 - 44) / 60 = 0.27; with the window full of capped
/// values it is (128 - 64) / 128 = 0.5 (the seed prints "/ 64", a typo).
#[test]
fn search_v2_reproduces_the_worked_example_of_seed_003() {
    let mut config = Search::v2().mode(SearchMode::Shadow);
    config.window_factor = 4.0; // window = 4 RTTs ...
    config.bins = 4; // ... of one bin per RTT
    config.prev_point = PrevPoint::Round;
    let mut search = Search::new(config);
    let log = EventLog::new();
    let events = Emitter::new(Some(log.clone()));
    let rtt = secs(1.0);
    // Bin 0 (partial, never used) holds the first ACK; bin k >= 1 delivers d_k kB.
    search.on_ack(&ack(Duration::ZERO, 1, rtt), &events);
    let delivered = [1, 2, 4, 8, 16, 16, 16, 16, 16, 16, 16];
    for (k, d) in delivered.iter().enumerate() {
        search.on_ack(&ack(secs(k as f64 + 1.5), d * 1000, rtt), &events);
    }
    // The ACK in bin k+1 evaluates the windows ending at bin k.
    let diffs: Vec<(u64, f64, u64, u64)> = log
        .events()
        .into_iter()
        .filter_map(|e| match e {
            CcEvent::SearchEval {
                bin,
                norm_diff,
                curr_delivered,
                reference,
                outcome: SearchOutcome::Continue | SearchOutcome::Exit,
                ..
            } => Some((bin - 1, norm_diff, curr_delivered, reference)),
            _ => None,
        })
        .collect();
    let at = |last: u64| diffs.iter().find(|d| d.0 == last).copied().unwrap();
    // Bins 1..=5 double (1..16): bins 2-5 vs 1-4 -> exactly 2x, norm_diff 0.
    assert_eq!(at(5).1, 0.0);
    // Bin 6 is the first capped one: curr 4+8+16+16 = 44, prev 2+4+8+16 = 30.
    let one_after = at(6);
    assert_eq!((one_after.2, one_after.3), (44_000, 60_000));
    assert!((one_after.1 - 16.0 / 60.0).abs() < 1e-9, "{}", one_after.1);
    // Bin 10: both windows full of 16s.
    let full = at(10);
    assert_eq!((full.2, full.3), (64_000, 128_000));
    assert!((full.1 - 0.5).abs() < 1e-9);
    // 0.35 is first crossed two bins (RTTs) after capacity: (88 - 56) / 88 = 0.36.
    let first_exit = diffs.iter().find(|d| d.1 >= 0.35).unwrap();
    assert_eq!(first_exit.0, 7);
}

/// The outcomes of the SEARCH evaluations in `log`, in order.
fn eval_outcomes(log: &EventLog) -> Vec<SearchOutcome> {
    log.events()
        .into_iter()
        .filter_map(|e| match e {
            CcEvent::SearchEval { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect()
}

/// Feeds `n` ACKs spaced `gap` apart with RTT `rtt`; returns the outcomes seen.
fn outcomes(version: SearchVersion, rtt: Duration, gap: Duration, n: u32) -> Vec<SearchOutcome> {
    let config = match version {
        // 2.0 on exact durations: quicly's millisecond clock is tested below.
        SearchVersion::V2 => {
            let mut c = Search::v2();
            c.clock = SearchClock::Exact;
            c
        }
        SearchVersion::V3 => Search::v3(),
        SearchVersion::Draft => Search::draft(),
    };
    outcomes_of(config, rtt, gap, n)
}

fn outcomes_of(config: SearchConfig, rtt: Duration, gap: Duration, n: u32) -> Vec<SearchOutcome> {
    let mut search = Search::new(config.mode(SearchMode::Shadow));
    let log = EventLog::new();
    let events = Emitter::new(Some(log.clone()));
    for i in 0..n {
        search.on_sent(gap * i, 2400);
        search.on_ack(&ack(gap * i, 1200, rtt), &events);
    }
    assert!(search.bin_duration().unwrap() > Duration::ZERO);
    eval_outcomes(&log)
}

#[test]
fn search_works_from_microsecond_to_multi_second_rtts() {
    // The reference quicly code divides by a bin duration that rounds to zero under 3 ms
    // (SIGFPE on loopback). Here every RTT evaluates normally once warmed up.
    for version in [SearchVersion::V2, SearchVersion::V3, SearchVersion::Draft] {
        for (rtt, gap) in [
            (Duration::from_nanos(3), Duration::from_nanos(1)),
            (Duration::from_micros(2), Duration::from_nanos(100)),
            (Duration::from_micros(50), Duration::from_micros(2)),
            (Duration::from_millis(1), Duration::from_micros(20)),
            (secs(5.0), Duration::from_millis(50)),
        ] {
            let seen = outcomes(version, rtt, gap, 2_000);
            assert!(
                seen.iter()
                    .any(|o| matches!(o, SearchOutcome::Continue | SearchOutcome::Exit)),
                "{version:?} rtt {rtt:?}: {seen:?}"
            );
        }
        // A zero RTT must not divide by zero either.
        outcomes(version, Duration::ZERO, Duration::from_nanos(1), 100);
    }
    // 2.0 on quicly's millisecond clock: bins of at least 1 ms (000 Appendix A's floor),
    // so it evaluates from RTTs of a few milliseconds and never divides by zero below.
    for (rtt, gap) in [
        (Duration::from_millis(3), Duration::from_micros(100)),
        (secs(5.0), Duration::from_millis(50)),
    ] {
        let seen = outcomes_of(Search::v2(), rtt, gap, 2_000);
        assert!(
            seen.iter()
                .any(|o| matches!(o, SearchOutcome::Continue | SearchOutcome::Exit)),
            "v2 rtt {rtt:?}: {seen:?}"
        );
    }
    outcomes_of(Search::v2(), Duration::ZERO, Duration::from_nanos(1), 100);
    outcomes_of(
        Search::v2(),
        Duration::from_nanos(3),
        Duration::from_nanos(1),
        100,
    );
}

#[test]
fn search_reports_rtt_inflation_and_resets_after_a_long_gap() {
    let mut search = Search::new(Search::draft());
    let log = EventLog::new();
    let events = Emitter::new(Some(log.clone()));
    let rtt = Duration::from_millis(100); // bins of 35 ms
    for i in 0..300u32 {
        search.on_sent(Duration::from_millis(10) * i, 1200);
        search.on_ack(&ack(Duration::from_millis(10) * i, 1200, rtt), &events);
    }
    // An RTT of 1 s looks back 28 bins: beyond the 15 extra bins.
    search.on_ack(&ack(Duration::from_millis(3_020), 1200, secs(1.0)), &events);
    let last = log.events().last().cloned().unwrap();
    assert!(
        matches!(
            last,
            CcEvent::SearchEval {
                outcome: SearchOutcome::RttInflated,
                ..
            }
        ),
        "{last:?}"
    );
    // More than W bins without an ACK: the draft resets and warms up again.
    search.on_ack(&ack(secs(6.0), 1200, rtt), &events);
    search.on_ack(&ack(secs(6.04), 1200, rtt), &events);
    search.on_ack(&ack(secs(6.08), 1200, rtt), &events);
    let last = log.events().last().cloned().unwrap();
    assert!(
        matches!(
            last,
            CcEvent::SearchEval {
                outcome: SearchOutcome::WarmingUp,
                ..
            }
        ),
        "{last:?}"
    );
}

#[test]
fn search_draft_reports_nothing_sent() {
    // ACKs arrive but nothing was ever reported sent: the reference is zero.
    let outcomes = outcomes_without_sends();
    assert!(
        outcomes.contains(&SearchOutcome::NothingSent),
        "{outcomes:?}"
    );
}

fn outcomes_without_sends() -> Vec<SearchOutcome> {
    let mut search = Search::new(Search::draft());
    let log = EventLog::new();
    let events = Emitter::new(Some(log.clone()));
    for i in 0..200u32 {
        search.on_ack(
            &ack(
                Duration::from_millis(10) * i,
                1200,
                Duration::from_millis(100),
            ),
            &events,
        );
    }
    eval_outcomes(&log)
}

#[test]
fn search_state_is_small() {
    for config in [Search::v2(), Search::v3(), Search::draft()] {
        let size = Search::new(config.clone()).state_size();
        println!("{:?}: {size} bytes", config.version);
        assert!(size < 512, "{:?}: {size} bytes", config.version);
    }
}
