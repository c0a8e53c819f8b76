//! The bandwidth-on-demand allocator (see [`BodSpec`] for the model).
//!
//! Events: a *decision* every `period` on the grid `offset + k x period` (k >= 1; the
//! offset is 0, or uniform in `[0, period)` with `random_phase`), and a *grant* `lag` (plus
//! a uniform draw in `[0, lag_jitter]`) after each decision, of the measured rate times
//! `headroom` (or a uniform draw within `headroom_spread` of it). Decisions measure the
//! bytes offered during `[d - window, d)`; arrivals at exactly `d` count for the next
//! decision. While nothing is offered and the allocation is back at its floor the
//! allocator is quiescent and schedules no events, so an idle link costs nothing; the
//! decision grid resumes with the next arrival.

use crate::random::{STREAM_BOD, stream_rng};
use crate::service::ArrivalLog;
use crate::spec::BodSpec;
use crate::units::{NANOS_PER_SEC, Nanos, to_nanos};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub(crate) struct Bod {
    period_ns: Nanos,
    /// Start of the decision grid, in `[0, period)`.
    offset_ns: Nanos,
    lag_ns: Nanos,
    /// The grants' randomness, only with a `lag_jitter` or a `headroom_spread` (boxed, as
    /// most links have neither).
    draws: Option<Box<Draws>>,
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

#[derive(Debug, Clone)]
struct Draws {
    rng: ChaCha8Rng,
    lag_jitter_ns: Nanos,
    headroom_spread: f64,
}

impl Bod {
    pub(crate) fn new(spec: &BodSpec, plan_rate_bps: u64, seed: u64) -> Self {
        let period_ns = to_nanos(spec.period).max(1);
        let mut rng = stream_rng(seed, STREAM_BOD);
        let offset_ns = if spec.random_phase {
            rng.random_range(0..period_ns)
        } else {
            0
        };
        Bod {
            period_ns,
            offset_ns,
            lag_ns: to_nanos(spec.lag),
            draws: (!spec.lag_jitter.is_zero() || spec.headroom_spread > 0.0).then(|| {
                Box::new(Draws {
                    rng,
                    lag_jitter_ns: to_nanos(spec.lag_jitter),
                    headroom_spread: spec.headroom_spread,
                })
            }),
            window_ns: to_nanos(spec.window).max(1),
            min_rate_bps: spec.min_rate_bps,
            plan_rate_bps,
            headroom: spec.headroom,
            allocation_bps: spec.initial_rate_bps,
            next_decision: offset_ns + period_ns,
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
            // The factor is drawn before the jitter, and only with a spread, so links
            // without one draw the same jitter sequence as before.
            let (headroom, jitter) = match self.draws.as_deref_mut() {
                Some(d) => {
                    let s = d.headroom_spread;
                    let h = if s > 0.0 {
                        d.rng.random_range(self.headroom - s..=self.headroom + s)
                    } else {
                        self.headroom
                    };
                    let j = if d.lag_jitter_ns > 0 {
                        d.rng.random_range(0..=d.lag_jitter_ns)
                    } else {
                        0
                    };
                    (h, j)
                }
                None => (self.headroom, 0),
            };
            let request = (measured_bps * headroom).round();
            let rate = if request >= self.plan_rate_bps as f64 {
                self.plan_rate_bps
            } else {
                (request as u64).max(self.min_rate_bps)
            };
            let at = t.saturating_add(self.lag_ns).saturating_add(jitter);
            self.grants.push_back((at, rate));
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
            let k = t.saturating_sub(self.offset_ns) / self.period_ns + 1;
            self.next_decision = k
                .saturating_mul(self.period_ns)
                .saturating_add(self.offset_ns);
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
            lag_jitter: Duration::ZERO,
            headroom_spread: 0.0,
            random_phase: false,
        }
    }

    #[test]
    fn grants_follow_offered_load_after_lag() {
        let mut b = Bod::new(&spec(), 100_000_000, 1);
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
        let mut b = Bod::new(&spec(), 5_000_000, 1);
        for i in 0..100u64 {
            b.record_arrival(i * 1_000_000, 1250);
        }
        b.apply(100_000_000);
        assert_eq!(b.apply(150_000_000), Some(5_000_000));
    }

    /// Each decision's time and the grant it queued `(effective time, rate)`, offered
    /// 10 Mbit/s for 2 s.
    fn decisions(spec: &BodSpec, plan_rate_bps: u64, seed: u64) -> Vec<(Nanos, (Nanos, u64))> {
        let mut b = Bod::new(spec, plan_rate_bps, seed);
        let mut out = Vec::new();
        for i in 0..2000u64 {
            let t = i * 1_000_000;
            while let Some(e) = b.next_event().filter(|&e| e <= t) {
                let decided = b.next_decision == e;
                b.apply(e);
                if decided {
                    out.push((e, *b.grants.back().expect("a decision queues a grant")));
                }
            }
            b.record_arrival(t, 1250);
        }
        out
    }

    #[test]
    fn a_random_phase_shifts_the_grid_and_jitter_delays_each_grant() {
        let random = BodSpec {
            lag_jitter: Duration::from_millis(40),
            random_phase: true,
            ..spec()
        };
        // Decision times and each decision's grant delay.
        let run = |seed| -> (Vec<Nanos>, Vec<Nanos>) {
            decisions(&random, 100_000_000, seed)
                .into_iter()
                .map(|(d, (at, _))| (d, at - d))
                .unzip()
        };
        let (decisions, lags) = run(1);
        assert_eq!((decisions.clone(), lags.clone()), run(1), "same seed");
        assert_ne!(lags, run(2).1, "another seed, other draws");
        // The grid is shifted by an offset in (0, 100 ms) and keeps its period.
        assert!(
            (100_000_001..200_000_000).contains(&decisions[0]),
            "{decisions:?}"
        );
        assert!(decisions.windows(2).all(|w| w[1] - w[0] == 100_000_000));
        // Each grant comes lag (50 ms) plus 0-40 ms after its decision, not always the same.
        assert!(
            lags.iter().all(|l| (50_000_000..=90_000_000).contains(l)),
            "{lags:?}"
        );
        assert!(lags.iter().any(|&l| l != lags[0]), "{lags:?}");
    }

    #[test]
    fn a_lag_jitter_of_a_whole_period_is_refused() {
        let spec = BodSpec {
            lag_jitter: Duration::from_millis(100),
            ..spec()
        };
        let e = spec.validate(100_000_000).unwrap_err().to_string();
        assert!(e.contains("lag_jitter") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn a_headroom_spread_draws_each_grants_factor_around_the_headroom() {
        let spread = BodSpec {
            headroom_spread: 1.0,
            ..spec()
        };
        spread.validate(1_000_000_000).unwrap();
        // The granted rates, decision after decision.
        let grants = |seed| -> Vec<u64> {
            decisions(&spread, 1_000_000_000, seed)
                .into_iter()
                .map(|(_, (_, rate))| rate)
                .collect()
        };
        let rates = grants(1);
        assert!(rates.len() >= 18, "{rates:?}");
        assert_eq!(rates, grants(1), "same seed");
        assert_ne!(rates, grants(2), "another seed, other draws");
        // Factor in [1, 3] around the headroom of 2, so 10 to 30 Mbit/s, and not one value.
        assert!(
            rates.iter().all(|r| (10_000_000..=30_000_000).contains(r)),
            "{rates:?}"
        );
        assert!(rates.iter().any(|&r| r < 18_000_000), "{rates:?}");
        assert!(rates.iter().any(|&r| r > 22_000_000), "{rates:?}");
    }

    #[test]
    fn a_spread_below_a_factor_of_one_is_refused() {
        for bad in [-0.5, 1.5, f64::NAN] {
            let spec = BodSpec {
                headroom_spread: bad,
                ..spec()
            };
            let e = spec.validate(100_000_000).unwrap_err().to_string();
            assert!(
                e.contains("headroom_spread") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn resumes_grid_after_idle() {
        let mut b = Bod::new(&spec(), 100_000_000, 1);
        b.record_arrival(1_234_567_890, 1500);
        assert_eq!(b.next_event(), Some(1_300_000_000));
    }
}
