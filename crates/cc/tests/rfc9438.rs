//! RFC 9438 (CUBIC) requirements not covered by cubic.rs (docs/conformance.md, 9438-1).

use std::collections::VecDeque;
use std::time::Duration;

use satquic_cc::{CongestionConfig, Controller, RttInfo};

const MSS: u64 = 1200;
const RTT: Duration = Duration::from_millis(600);

/// A window-limited sender: fills the window, acknowledges it one RTT later.
struct Sender {
    ctl: Controller,
    now: Duration,
    pn: u64,
    flight: VecDeque<(u64, Duration)>,
}

impl Sender {
    fn new() -> Self {
        Self {
            ctl: CongestionConfig::cubic().build_controller(MSS).unwrap(),
            now: Duration::ZERO,
            pn: 0,
            flight: VecDeque::new(),
        }
    }

    fn fill(&mut self) {
        while (self.flight.len() as u64 + 1) * MSS <= self.ctl.window() {
            self.pn += 1;
            self.now += Duration::from_micros(1);
            self.ctl.on_sent(self.now, MSS, self.pn);
            self.flight.push_back((self.pn, self.now));
        }
    }

    /// One round trip: everything in flight is acknowledged (`app_limited` as quinn would
    /// report it), then the window is filled again unless application-limited.
    fn round(&mut self, app_limited: bool) {
        self.now += RTT;
        let mut largest = None;
        while let Some((pn, sent)) = self.flight.pop_front() {
            self.ctl
                .on_ack(self.now, sent, MSS, app_limited, RttInfo::fixed(RTT));
            largest = Some(pn);
        }
        let in_flight = self.flight.len() as u64 * MSS;
        self.ctl.on_end_acks(self.now, in_flight, largest);
        if app_limited {
            // A few packets keep the acknowledgements coming, far below the window.
            for _ in 0..4 {
                self.pn += 1;
                self.now += Duration::from_micros(1);
                self.ctl.on_sent(self.now, MSS, self.pn);
                self.flight.push_back((self.pn, self.now));
            }
        } else {
            self.fill();
        }
    }

    /// Slow start to a loss, then `rounds` of congestion avoidance.
    fn into_avoidance(rounds: usize) -> Self {
        let mut s = Self::new();
        s.fill();
        for _ in 0..6 {
            s.round(false);
        }
        let (_, sent) = *s.flight.back().unwrap();
        s.flight.pop_back();
        s.ctl.on_congestion_event(s.now, sent, false, MSS);
        for _ in 0..rounds {
            s.round(false);
        }
        s
    }
}

/// Sec. 4.2: "The elapsed time *t* in [Figure 1] MUST NOT include periods during which
/// *cwnd* has not been updated due to application-limited behavior". After 30 round trips
/// limited by the application, one window-limited round trip grows the window as one
/// round trip would have without the pause.
#[test]
fn sec_4_2_application_limited_time_does_not_count_in_t() {
    let mut paused = Sender::into_avoidance(3);
    let mut control = Sender::into_avoidance(3);
    let start = paused.ctl.congestion_window();
    assert_eq!(start, control.ctl.congestion_window());
    for _ in 0..30 {
        paused.round(true);
    }
    assert_eq!(
        paused.ctl.congestion_window(),
        start,
        "no growth while limited"
    );
    paused.fill();
    paused.round(false);
    control.round(false);
    let grew = paused.ctl.congestion_window() - start;
    let grew_control = control.ctl.congestion_window() - start;
    assert!(
        grew <= grew_control + MSS,
        "after the pause the window grew {grew} B in one round trip, {grew_control} B without it"
    );
}
