//! The bandwidth-on-demand allocator (see [`BodSpec`] for the model).
//!
//! Events: a *decision* every `period` on the grid `k x period` (k >= 1), and a *grant*
//! `lag` after each decision. Decisions measure the bytes offered during `[d - window, d)`;
//! arrivals at exactly `d` count for the next decision. While nothing is offered and the
//! allocation is back at its floor the allocator is quiescent and schedules no events, so an
//! idle link costs nothing; the decision grid resumes with the next arrival.

use crate::service::ArrivalLog;
use crate::spec::BodSpec;
use crate::units::{NANOS_PER_SEC, Nanos, to_nanos};
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub(crate) struct Bod {
    period_ns: Nanos,
    lag_ns: Nanos,
    window_ns: Nanos,
    min_rate_bps: u64,
    plan_rate_bps: u64,
    headroom: f64,
    /// The rate the link may currently use.
    allocation_bps: u64,
    /// Next decision on the grid.
    next_decision: Nanos,
    /// Decided grants not yet in effect: (effective time, rate).
    grants: VecDeque<(Nanos, u64)>,
    /// Offered packets not yet outside every future window: (time, bytes).
    arrivals: ArrivalLog,
    /// Sum of the bytes in `arrivals`.
    arrivals_bytes: u64,
}

impl Bod {
    pub(crate) fn new(spec: &BodSpec, plan_rate_bps: u64) -> Self {
        let period_ns = to_nanos(spec.period).max(1);
        Bod {
            period_ns,
            lag_ns: to_nanos(spec.lag),
            window_ns: to_nanos(spec.window).max(1),
            min_rate_bps: spec.min_rate_bps,
            plan_rate_bps,
            headroom: spec.headroom,
            allocation_bps: spec.initial_rate_bps,
            next_decision: period_ns,
            grants: VecDeque::new(),
            arrivals: VecDeque::new(),
            arrivals_bytes: 0,
        }
    }

    pub(crate) fn allocation_bps(&self) -> u64 {
        self.allocation_bps
    }

    fn quiescent(&self) -> bool {
        self.arrivals.is_empty()
            && self.grants.is_empty()
            && self.allocation_bps == self.min_rate_bps
    }

    /// Next decision or grant, None while quiescent.
    pub(crate) fn next_event(&self) -> Option<Nanos> {
        if self.quiescent() {
            return None;
        }
        Some(match self.grants.front() {
            Some(&(g, _)) => g.min(self.next_decision),
            None => self.next_decision,
        })
    }

    /// Processes the events at `t`; returns the new allocation if a grant took effect.
    pub(crate) fn apply(&mut self, t: Nanos) -> Option<u64> {
        let mut changed = None;
        if self.next_decision <= t {
            let from = t.saturating_sub(self.window_ns);
            while let Some(&(at, bytes)) = self.arrivals.front() {
                if at >= from {
                    break;
                }
                self.arrivals.pop_front();
                self.arrivals_bytes -= bytes;
            }
            let measured_bps =
                self.arrivals_bytes as f64 * 8.0 * NANOS_PER_SEC as f64 / self.window_ns as f64;
            let request = (measured_bps * self.headroom).round();
            let rate = if request >= self.plan_rate_bps as f64 {
                self.plan_rate_bps
            } else {
                (request as u64).max(self.min_rate_bps)
            };
            self.grants.push_back((t.saturating_add(self.lag_ns), rate));
            self.next_decision = t.saturating_add(self.period_ns);
        }
        while let Some(&(g, rate)) = self.grants.front() {
            if g > t {
                break;
            }
            self.grants.pop_front();
            if rate != self.allocation_bps {
                self.allocation_bps = rate;
                changed = Some(rate);
            }
        }
        changed
    }

    /// An offered packet at `t` (after all events at or before `t` were applied).
    pub(crate) fn record_arrival(&mut self, t: Nanos, bytes: u32) {
        if self.quiescent() && self.next_decision <= t {
            // Resume the grid after an idle stretch that scheduled no events.
            self.next_decision = (t / self.period_ns + 1).saturating_mul(self.period_ns);
        }
        self.arrivals.push_back((t, u64::from(bytes)));
        self.arrivals_bytes += u64::from(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec() -> BodSpec {
        BodSpec {
            period: Duration::from_millis(100),
            lag: Duration::from_millis(50),
            window: Duration::from_millis(100),
            initial_rate_bps: 1_000_000,
            min_rate_bps: 1_000_000,
            headroom: 2.0,
        }
    }

    #[test]
    fn grants_follow_offered_load_after_lag() {
        let mut b = Bod::new(&spec(), 100_000_000);
        assert_eq!(b.next_event(), None, "quiescent at start");
        // 125 kB in the first 100 ms = 10 Mbit/s offered.
        for i in 0..100u64 {
            b.record_arrival(i * 1_000_000, 1250);
        }
        assert_eq!(b.next_event(), Some(100_000_000));
        assert_eq!(b.apply(100_000_000), None);
        assert_eq!(b.next_event(), Some(150_000_000));
        assert_eq!(
            b.apply(150_000_000),
            Some(20_000_000),
            "10 Mbit/s x headroom 2"
        );
        // Nothing more offered: next decision grants the floor, then quiescent.
        assert_eq!(b.next_event(), Some(200_000_000));
        b.apply(200_000_000);
        assert_eq!(b.apply(250_000_000), Some(1_000_000));
        assert_eq!(b.next_event(), None);
    }

    #[test]
    fn capped_at_plan_rate() {
        let mut b = Bod::new(&spec(), 5_000_000);
        for i in 0..100u64 {
            b.record_arrival(i * 1_000_000, 1250);
        }
        b.apply(100_000_000);
        assert_eq!(b.apply(150_000_000), Some(5_000_000));
    }

    #[test]
    fn resumes_grid_after_idle() {
        let mut b = Bod::new(&spec(), 100_000_000);
        b.record_arrival(1_234_567_890, 1500);
        assert_eq!(b.next_event(), Some(1_300_000_000));
    }
}
