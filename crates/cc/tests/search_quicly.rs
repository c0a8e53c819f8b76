//! SEARCH 2.0 (spec `search:v2`) behaves as the code the seeds ran: quicly's
//! `ss_search10_delv` (seed 000 Appendix A, `lib/ss-search10-delv.c` in the fork qperf
//! pins). One behaviour per test, each on a tiny hand-built ACK timeline.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::samples::ack;
use satquic_cc::event::Emitter;
use satquic_cc::{
    CcEvent, EventLog, Search, SearchClock, SearchConfig, SearchMode, SearchOutcome, SlowStart,
};

/// The first RTT sample: quicly's bin is `floor(612 x 3.5 / 10)` = 214 ms.
const FIRST_RTT: Duration = Duration::from_millis(612);
const BIN: Duration = Duration::from_millis(214);

fn ms(x: f64) -> Duration {
    Duration::from_secs_f64(x / 1000.0)
}

/// The SEARCH evaluations in `log`: (bin, reference, outcome).
fn evals(log: &Arc<EventLog>) -> Vec<(u64, u64, SearchOutcome)> {
    log.events()
        .into_iter()
        .filter_map(|e| match e {
            CcEvent::SearchEval {
                bin,
                reference,
                outcome,
                ..
            } => Some((bin, reference, outcome)),
            _ => None,
        })
        .collect()
}

/// SEARCH 2.0 in shadow mode after one ACK per bin for `bins` bins, bin `k` delivering
/// `1000 x k` bytes (bin 0 holds the first ACK's 1 byte). Returns it with its log.
fn warmed_up(config: SearchConfig, bins: u32) -> (Search, Arc<EventLog>) {
    let mut search = Search::new(config.mode(SearchMode::Shadow));
    let log = EventLog::new();
    let events = Emitter::new(Some(log.clone()));
    search.on_ack(&ack(Duration::ZERO, 1, FIRST_RTT), &events);
    for k in 1..=bins {
        let mid_bin = BIN * k + BIN / 2;
        search.on_ack(&ack(mid_bin, 1000 * u64::from(k), FIRST_RTT), &events);
    }
    (search, log)
}

/// The reference of the evaluation made by an ACK with latest RTT `rtt` in the bin after
/// 20 warmed-up bins.
fn reference_looking_back(rtt: Duration) -> u64 {
    let (mut search, log) = warmed_up(Search::v2(), 20);
    let events = Emitter::new(Some(log.clone()));
    search.on_ack(&ack(BIN * 21 + BIN / 2, 1000, rtt), &events);
    evals(&log).last().unwrap().1
}

#[test]
fn bins_are_whole_milliseconds_of_the_first_rtt() {
    // quicly: `bin_time = (latest * 3.5) / 10` stored as a uint32 of milliseconds.
    let (search, _) = warmed_up(Search::v2(), 0);
    assert_eq!(search.bin_duration(), Some(BIN));
    let mut exact = Search::v2();
    exact.clock = SearchClock::Exact;
    let (search, _) = warmed_up(exact, 0);
    let exact_bin = search.bin_duration().unwrap().as_secs_f64() * 1000.0;
    assert!((exact_bin - 214.2).abs() < 1e-6, "{exact_bin} ms");
    // The RTT is read in whole milliseconds too: 612.9 ms is quicly's 612.
    let mut search = Search::new(Search::v2());
    search.on_ack(&ack(Duration::ZERO, 1, ms(612.9)), &Emitter::new(None));
    assert_eq!(search.bin_duration(), Some(BIN));
}

#[test]
fn the_look_back_rounds_half_a_bin_down_in_whole_milliseconds() {
    // quicly: `shift = latest / bin`, one more only when `latest % bin > bin / 2`.
    let one_bin = reference_looking_back(BIN);
    let two_bins = reference_looking_back(BIN * 2);
    assert_ne!(one_bin, two_bins);
    // 321 ms is 1.5 bins: a remainder of 107 ms, not over 214 / 2, stays at one bin.
    assert_eq!(reference_looking_back(Duration::from_millis(321)), one_bin);
    assert_eq!(reference_looking_back(Duration::from_millis(322)), two_bins);
    // Fractions of a millisecond are not seen: 321.9 ms is 321.
    assert_eq!(reference_looking_back(ms(321.9)), one_bin);
    // Below half a bin the look-back is still one bin.
    assert_eq!(reference_looking_back(Duration::from_millis(50)), one_bin);
}

#[test]
fn the_exit_needs_a_difference_above_the_threshold() {
    // One bin per window, one RTT per bin: the window ending at bin 2 (1300 bytes) against
    // twice bin 1 (2 x 1000) is (2000 - 1300) / 2000 = 0.35, exactly THRESH.
    let outcome = |strict: bool| {
        let mut config = Search::v2().mode(SearchMode::Shadow);
        config.window_factor = 1.0;
        config.bins = 1;
        config.strict_threshold = strict;
        let mut search = Search::new(config);
        let log = EventLog::new();
        let events = Emitter::new(Some(log.clone()));
        let rtt = Duration::from_secs(1);
        for (at, bytes) in [(0.0, 1), (1500.0, 1000), (2500.0, 1300), (3500.0, 1)] {
            search.on_ack(&ack(ms(at), bytes, rtt), &events);
        }
        evals(&log).last().unwrap().2
    };
    // quicly and seed 000 Algorithm 1 line 24: `norm_diff > THRESH`.
    assert_eq!(outcome(true), SearchOutcome::Continue);
    // Seeds 001/003 write `>=`.
    assert_eq!(outcome(false), SearchOutcome::Exit);
    assert!(Search::v2().strict_threshold);
    assert!(!Search::draft().strict_threshold);
}

#[test]
fn a_gap_of_25_whole_bins_is_not_a_reset() {
    // quicly resets when `(now - bin_end) / bin_time > 25`: 25 whole bins past the current
    // bin's end (which is 15 x 214 ms here) still roll the bins and evaluate.
    let (mut search, log) = warmed_up(Search::v2(), 14);
    let events = Emitter::new(Some(log.clone()));
    let bin_end = BIN * 15;
    search.on_ack(&ack(bin_end + BIN * 25 + BIN / 2, 1000, FIRST_RTT), &events);
    let (bin, _, _) = *evals(&log).last().unwrap();
    assert_eq!(bin, 14 + 26);
}

#[test]
fn a_reset_starts_the_bins_at_the_ack_that_found_the_gap() {
    // 26 whole bins past the bin's end: quicly re-initializes at this ACK (its RTT sets the
    // new bin, its time the new bin's start), so the next bin boundary is one bin later.
    let (mut search, log) = warmed_up(Search::v2(), 14);
    let events = Emitter::new(Some(log.clone()));
    let gap_ack = BIN * 15 + BIN * 26 + BIN / 2;
    let before = evals(&log).len();
    let new_rtt = Duration::from_millis(1000); // a 350 ms bin
    search.on_ack(&ack(gap_ack, 1000, new_rtt), &events);
    assert_eq!(evals(&log).len(), before, "a reset evaluates nothing");
    assert_eq!(search.bin_duration(), Some(Duration::from_millis(350)));
    // Half a bin later: still bin 0. Just past one bin: bin 1, still warming up.
    search.on_ack(&ack(gap_ack + ms(175.0), 1000, new_rtt), &events);
    assert_eq!(evals(&log).len(), before);
    search.on_ack(&ack(gap_ack + ms(351.0), 1000, new_rtt), &events);
    let last = *evals(&log).last().unwrap();
    assert_eq!((last.0, last.2), (1, SearchOutcome::WarmingUp));
}
