//! HyStart++ (RFC 9406): slow start that watches the per-round minimum RTT, moves to
//! Conservative Slow Start (CSS) when it rises, goes back to slow start if the rise was
//! spurious, and ends slow start after `CSS_ROUNDS` rounds of CSS.
//!
//! Rounds are delimited by the controller with the `windowEnd` rule of RFC 9406 Sec. 4.2
//! (a round ends when a packet sent at or after the round's start is acknowledged).
//! Per the RFC's recommendation it is used for the initial slow start only; later slow
//! starts (after a loss) are classic and bounded by `ssthresh`.
//!
//! # Options
//!
//! Spec `hystart++[:OPTION,...]` (aliases `hspp`, `hystartpp`); each option sets a
//! [`HyStartConfig`] field whose default is the RFC's recommended value. All are RFC 9406
//! Sec. 4.3 constants.
//!
//! | option | meaning | default |
//! |---|---|---|
//! | `n-rtt-sample=N` | [`HyStartConfig::n_rtt_sample`], `N_RTT_SAMPLE`: RTT samples a round takes before the RTT checks | 8 |
//! | `min-thresh=MS` | [`HyStartConfig::min_rtt_thresh`], `MIN_RTT_THRESH`: lower bound of `RttThresh` | 4 ms |
//! | `max-thresh=MS` | [`HyStartConfig::max_rtt_thresh`], `MAX_RTT_THRESH`: upper bound of `RttThresh` | 16 ms |
//! | `divisor=N` (N >= 1) | [`HyStartConfig::min_rtt_divisor`], `MIN_RTT_DIVISOR`: `RttThresh = lastRoundMinRTT / N` before clamping | 8 |
//! | `css-divisor=N` (N >= 1) | [`HyStartConfig::css_growth_divisor`], `CSS_GROWTH_DIVISOR`: CSS grows at 1/N of slow start's rate | 4 |
//! | `css-rounds=N` | [`HyStartConfig::css_rounds`], `CSS_ROUNDS`: CSS rounds before congestion avoidance | 5 |
//! | `ack-limit=N` (N >= 1) | [`HyStartConfig::ack_growth_limit_segments`], `L`: per-ACK growth cap in segments | none: the RFC's infinity for a paced sender (8 unpaced); quinn paces |
//!
//! `MS` is milliseconds (fractions allowed, 0 to 3 600 000). `hystart++` is not `hystart`
//! ([`super::hystart`]): neither takes the other's options.

use std::time::Duration;

use super::{AckSample, SlowStart, SsDecision};
use crate::event::{CcEvent, Emitter, ExitReason};

/// HyStart++ constants, RFC 9406 Sec. 4.3. Defaults are the RFC's recommended values.
#[derive(Debug, Clone, PartialEq)]
pub struct HyStartConfig {
    /// `MIN_RTT_THRESH`, lower bound of the RTT-increase threshold (4 ms).
    pub min_rtt_thresh: Duration,
    /// `MAX_RTT_THRESH`, upper bound of the RTT-increase threshold (16 ms).
    pub max_rtt_thresh: Duration,
    /// `MIN_RTT_DIVISOR`: the threshold is `lastRoundMinRTT / MIN_RTT_DIVISOR` (8).
    pub min_rtt_divisor: u32,
    /// `N_RTT_SAMPLE`: RTT samples needed in a round before deciding (8).
    pub n_rtt_sample: u32,
    /// `CSS_GROWTH_DIVISOR`: CSS grows at 1/4 of slow start's rate (4).
    pub css_growth_divisor: u32,
    /// `CSS_ROUNDS`: rounds of CSS before entering congestion avoidance (5).
    pub css_rounds: u32,
    /// `L`: per-ACK growth cap in segments. The RFC says 8 for non-paced senders and
    /// infinity when paced; quinn paces, so the default is `None` (no cap).
    pub ack_growth_limit_segments: Option<u64>,
}

impl Default for HyStartConfig {
    fn default() -> Self {
        Self {
            min_rtt_thresh: Duration::from_millis(4),
            max_rtt_thresh: Duration::from_millis(16),
            min_rtt_divisor: 8,
            n_rtt_sample: 8,
            css_growth_divisor: 4,
            css_rounds: 5,
            ack_growth_limit_segments: None,
        }
    }
}

/// HyStart++ state (RFC 9406 Sec. 4.2 variable names in the field docs).
#[derive(Debug, Clone)]
pub struct HyStartPlusPlus {
    config: HyStartConfig,
    /// `lastRoundMinRTT`: minimum RTT of the previous round; `None` = infinity.
    last_round_min_rtt: Option<Duration>,
    /// `currentRoundMinRTT`: minimum RTT of this round so far; `None` = infinity.
    current_round_min_rtt: Option<Duration>,
    /// `rttSampleCount`: RTT samples taken in this round.
    rtt_sample_count: u32,
    /// `cssBaselineMinRtt`: the round minimum that triggered CSS; `None` when not in CSS.
    css_baseline_min_rtt: Option<Duration>,
    /// Rounds completed in the current CSS episode.
    css_rounds_done: u32,
    /// CSS began during the current round: that partial round is not a CSS round.
    css_entered_this_round: bool,
    /// Latched when the CSS rounds are done: the next ACK exits slow start.
    css_complete: bool,
}

impl HyStartPlusPlus {
    /// HyStart++ with the given constants.
    pub fn new(config: HyStartConfig) -> Self {
        Self {
            config,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_sample_count: 0,
            css_baseline_min_rtt: None,
            css_rounds_done: 0,
            css_entered_this_round: false,
            css_complete: false,
        }
    }

    /// Whether the algorithm is in Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css_baseline_min_rtt.is_some()
    }

    /// `RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH))`.
    fn rtt_thresh(&self, last_round_min_rtt: Duration) -> Duration {
        let divided = last_round_min_rtt / self.config.min_rtt_divisor.max(1);
        divided
            .min(self.config.max_rtt_thresh)
            .max(self.config.min_rtt_thresh)
    }
}

impl Default for HyStartPlusPlus {
    fn default() -> Self {
        Self::new(HyStartConfig::default())
    }
}

impl SlowStart for HyStartPlusPlus {
    fn name(&self) -> &'static str {
        "hystart++"
    }

    fn on_ack(&mut self, ack: &AckSample, events: &Emitter) -> SsDecision {
        if self.css_complete {
            // CSS_ROUNDS done: enter congestion avoidance with ssthresh = cwnd.
            return SsDecision::Exit {
                cwnd: ack.cwnd,
                ssthresh: ack.cwnd,
                reason: ExitReason::HyStartPlusPlus,
                drain: false,
            };
        }
        // RFC 9406 Sec. 4.2: the window grows first, at the rate of the phase the ACK
        // arrived in; the RTT checks that may change the phase come after.
        let mut increase = ack.bytes;
        if let Some(limit) = self.config.ack_growth_limit_segments {
            increase = increase.min(limit.saturating_mul(ack.mss));
        }
        if self.in_css() {
            increase /= u64::from(self.config.css_growth_divisor.max(1));
        }
        self.current_round_min_rtt = Some(match self.current_round_min_rtt {
            Some(m) => m.min(ack.rtt),
            None => ack.rtt,
        });
        self.rtt_sample_count = self.rtt_sample_count.saturating_add(1);
        let enough = self.rtt_sample_count >= self.config.n_rtt_sample;
        match (self.css_baseline_min_rtt, self.current_round_min_rtt) {
            (None, Some(current)) => {
                if let (true, Some(last)) = (enough, self.last_round_min_rtt) {
                    if current >= last.saturating_add(self.rtt_thresh(last)) {
                        self.css_baseline_min_rtt = Some(current);
                        self.css_rounds_done = 0;
                        self.css_entered_this_round = true;
                        events.emit(|| CcEvent::HyStartPhase {
                            at: ack.now,
                            css: true,
                            last_round_min_rtt: last,
                            current_round_min_rtt: current,
                        });
                    }
                }
            }
            (Some(baseline), Some(current)) => {
                // Only CSS rounds are compared with the baseline (RFC 9406 Sec. 4.2): in the
                // round that entered CSS the running minimum can only fall below the
                // baseline it just set, which would flip between CSS and slow start on
                // every lower sample.
                if enough && !self.css_entered_this_round && current < baseline {
                    // Spurious: the RTT fell back below the baseline; resume slow start.
                    self.css_baseline_min_rtt = None;
                    events.emit(|| CcEvent::HyStartPhase {
                        at: ack.now,
                        css: false,
                        last_round_min_rtt: self.last_round_min_rtt.unwrap_or(Duration::MAX),
                        current_round_min_rtt: current,
                    });
                }
            }
            (_, None) => {}
        }
        SsDecision::Grow { increase }
    }

    fn on_round_end(&mut self, _now: Duration) {
        if self.in_css() && !std::mem::take(&mut self.css_entered_this_round) {
            self.css_rounds_done += 1;
            if self.css_rounds_done >= self.config.css_rounds {
                self.css_complete = true;
            }
        }
        self.last_round_min_rtt = self.current_round_min_rtt;
        self.current_round_min_rtt = None;
        self.rtt_sample_count = 0;
    }

    fn reset(&mut self) {
        *self = Self::new(self.config.clone());
    }

    fn clone_box(&self) -> Box<dyn SlowStart> {
        Box::new(self.clone())
    }

    fn state_size(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}
