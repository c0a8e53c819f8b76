//! SEARCH's exit rule: where "one RTT earlier" falls among the bins, the delivered
//! bytes against the reference, the test against `THRESH`, and the window an exit leaves.

use std::time::Duration;

use super::clock::quicly_shift;
use super::{ExitAction, PrevPoint, Search, SearchClock, SearchVersion};
use crate::event::SearchOutcome;

/// The result of one evaluation.
pub(super) struct Evaluation {
    pub(super) outcome: SearchOutcome,
    pub(super) curr_delivered: u64,
    pub(super) reference: u64,
    pub(super) norm_diff: f64,
}

impl Evaluation {
    pub(super) fn without(outcome: SearchOutcome) -> Self {
        Self {
            outcome,
            curr_delivered: 0,
            reference: 0,
            norm_diff: 0.0,
        }
    }
}

impl Search {
    /// The look-back in bins: whole bins and the fraction (0..1) of the next older one.
    fn look_back(&self, rtt: Duration) -> (u64, f64) {
        if self.config.clock == SearchClock::Millis && self.config.prev_point == PrevPoint::Round {
            return (quicly_shift(rtt, self.bin_duration), 0.0);
        }
        let bins = rtt.as_nanos() as f64 / self.bin_duration.as_nanos() as f64;
        let bins = bins.min(1e12);
        match self.config.prev_point {
            PrevPoint::Round => ((bins.round() as u64).max(1), 0.0),
            PrevPoint::Interpolate | PrevPoint::InterpolateForward => {
                (bins.floor() as u64, bins.fract())
            }
        }
    }

    /// V2: sum of the `W` bins ending at (and including) bin `end`.
    fn window_sum(&self, end: u64) -> u64 {
        let w = self.config.w();
        (0..w)
            .map(|k| self.acked_bins[Self::slot(&self.acked_bins, end - k)])
            .fold(0u64, u64::saturating_add)
    }

    /// Cumulative rings: bytes between the snapshots `end - W` and `end`.
    fn window_diff(ring: &[u64], end: u64, w: u64) -> u64 {
        ring[Self::slot(ring, end)].saturating_sub(ring[Self::slot(ring, end - w)])
    }

    /// Blends the windows ending at `p` and its neighbour per the look-back mode.
    fn blend(&self, at_p: u64, neighbour: u64, fraction: f64) -> u64 {
        (at_p as f64 * (1.0 - fraction) + neighbour as f64 * fraction).round() as u64
    }

    pub(super) fn evaluate(&self, curr: u64, rtt: Duration) -> Evaluation {
        let w = self.config.w();
        let extra = self.config.extra();
        let (shift, fraction) = self.look_back(rtt);
        let forward = self.config.prev_point == PrevPoint::InterpolateForward;
        // Extra bins the interpolation reads beyond the look-back point.
        let older = u64::from(fraction > 0.0 && !forward);
        match self.config.version {
            SearchVersion::V2 => {
                // Windows of completed bins: the current bin `curr` has just started.
                let last = curr - 1;
                let Some(p) = last.checked_sub(shift) else {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                };
                // The oldest bin read must be a complete one (bin 0 is partial).
                if p < w + older {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                }
                if shift + older >= extra {
                    return Evaluation::without(SearchOutcome::RttInflated);
                }
                let curr_delivered = self.window_sum(last);
                let prev = if fraction > 0.0 && !(forward && shift == 0) {
                    let neighbour = if forward { p + 1 } else { p - 1 };
                    self.blend(self.window_sum(p), self.window_sum(neighbour), fraction)
                } else {
                    self.window_sum(p)
                };
                self.finish(curr_delivered, prev.saturating_mul(2))
            }
            SearchVersion::V3 | SearchVersion::Draft => {
                let Some(p) = curr.checked_sub(shift) else {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                };
                // neqo's rules: the snapshot `p - W - 1` must exist, and the span from it to
                // `curr` must fit the ring of `W + 1 + EXTRA_BINS` snapshots.
                if p <= w {
                    return Evaluation::without(SearchOutcome::WarmingUp);
                }
                if curr - p >= extra {
                    return Evaluation::without(SearchOutcome::RttInflated);
                }
                let curr_delivered = Self::window_diff(&self.acked_bins, curr, w);
                let ring = if self.config.version == SearchVersion::Draft {
                    &self.sent_bins
                } else {
                    &self.acked_bins
                };
                let at_p = Self::window_diff(ring, p, w);
                let prev = if fraction > 0.0 && !(forward && shift == 0) {
                    let neighbour = if forward { p + 1 } else { p - 1 };
                    self.blend(at_p, Self::window_diff(ring, neighbour, w), fraction)
                } else {
                    at_p
                };
                let reference = if self.config.version == SearchVersion::Draft {
                    prev
                } else {
                    prev.saturating_mul(2)
                };
                self.finish(curr_delivered, reference)
            }
        }
    }

    fn finish(&self, curr_delivered: u64, reference: u64) -> Evaluation {
        if reference == 0 {
            return Evaluation {
                outcome: SearchOutcome::NothingSent,
                curr_delivered,
                reference,
                norm_diff: 0.0,
            };
        }
        let norm_diff = (reference as f64 - curr_delivered as f64) / reference as f64;
        let t = self.config.threshold;
        let outcome = if norm_diff > t || (norm_diff == t && !self.config.strict_threshold) {
            SearchOutcome::Exit
        } else {
            SearchOutcome::Continue
        };
        Evaluation {
            outcome,
            curr_delivered,
            reference,
            norm_diff,
        }
    }

    /// Bytes delivered over the last `bins` bins (fractional), ending now.
    fn delivered_over(&self, curr: u64, bins: f64) -> u64 {
        let whole = bins.floor() as u64;
        let fraction = bins.fract();
        if self.cumulative() {
            let len = self.acked_bins.len() as u64;
            let whole = whole.min(len.saturating_sub(2)).min(curr);
            let now_total = self.acked_bins[Self::slot(&self.acked_bins, curr)];
            let at = |k: u64| self.acked_bins[Self::slot(&self.acked_bins, curr - k)];
            let base = at(whole);
            let older = if whole < curr { at(whole + 1) } else { base };
            let then = base as f64 * (1.0 - fraction) + older as f64 * fraction;
            (now_total as f64 - then).max(0.0).round() as u64
        } else {
            // Completed bins end at `curr - 1`.
            let len = self.acked_bins.len() as u64;
            let whole = whole.min(len.saturating_sub(2)).min(curr);
            let bin = |k: u64| self.acked_bins[Self::slot(&self.acked_bins, curr - k)];
            let mut sum = (1..=whole).map(bin).fold(0u64, u64::saturating_add) as f64;
            if whole < curr {
                sum += bin(whole + 1) as f64 * fraction;
            }
            sum.round() as u64
        }
    }

    pub(super) fn exit_window(&self, curr: u64, cwnd: u64) -> u64 {
        let initial_rtt_bins =
            self.initial_rtt.as_nanos() as f64 / self.bin_duration.as_nanos() as f64;
        match self.config.exit_action {
            ExitAction::SetSsthresh => cwnd,
            ExitAction::LowerCwnd => {
                let over =
                    self.delivered_over(curr, initial_rtt_bins * self.config.lower_cwnd_rtts);
                cwnd.saturating_sub(over)
            }
            ExitAction::DrainToTarget => self.delivered_over(curr, initial_rtt_bins).min(cwnd),
        }
    }
}
