//! Classic HyStart (Ha & Rhee, "Taming the elephants: New TCP slow start", Computer
//! Networks 55(9), 2011) as Linux runs it in CUBIC, its default congestion control:
//! `net/ipv4/tcp_cubic.c` (`hystart_update`, `bictcp_hystart_reset`, `cubictcp_acked`) in
//! the form it has had since Linux 5.7 (microsecond clock, `hystart_ack_delay`, the pacing
//! halving of the ACK-train threshold).
//!
//! This is the "HyStart on" of seed 003 Table III, which exited slow start before capacity
//! in 100% of the GEO runs, after 1.3 s on average. It is not HyStart++ (RFC 9406, see
//! [`super::HyStartPlusPlus`]), which replaced the ACK train by Conservative Slow Start.
//!
//! Once the window is at least `hystart_low_window` segments, every acknowledgement feeds
//! two detectors that work per round:
//!
//! * **ACK train** (`HYSTART_ACK_TRAIN`): ACKs that arrive within `hystart_ack_delta_us` of
//!   the previous one extend the train that began at the round's first ACK. When such an
//!   ACK arrives more than `delay_min + ack_delay` after the round began (half that for an
//!   unpaced sender), the window is taken to fill the path. A gap longer than the delta
//!   stops the train for the rest of the round: `last_ack` no longer advances, so no later
//!   ACK of that round is close to it.
//! * **Delay** (`HYSTART_DELAY`): the minimum RTT of the round, after
//!   `HYSTART_MIN_SAMPLES` samples, exceeds the connection's minimum RTT by
//!   `clamp(delay_min / 8, 4 ms, 16 ms)`.
//!
//! Either sets `ssthresh` to the current window, which ends slow start without changing
//! the window. Below the low window, and while neither fires, growth is classic (bytes
//! acknowledged, RFC 3465).
//!
//! Rounds come from the controller (`on_round_end`, the `windowEnd` rule). As Linux resets
//! the round inside `hystart_update` before looking at the ACK that began it, the reset
//! here happens on the first ACK after the round ended, and that ACK's time is the round's
//! start. Two differences from Linux remain: the first round begins at the first ACK with
//! the window at the low window and ends at the controller's next boundary (Linux starts a
//! full round there); and ACKs handled in the same batch as the one that ended the round
//! still count in the old round (the controller learns of the boundary after the batch).
//!
//! # Options
//!
//! Spec `hystart[:OPTION,...]`; each option sets a [`LinuxHyStartConfig`] field whose
//! default is the Linux value. Sources are Linux `net/ipv4/tcp_cubic.c` (5.7 and later).
//!
//! | option | meaning | default | source |
//! |---|---|---|---|
//! | `ack-train`, `delay` | [`LinuxHyStartConfig::detect`]: run only that detector (both or neither written: both) | both | `hystart_detect` = 3 |
//! | `low-window=N` | [`LinuxHyStartConfig::low_window_segments`]: HyStart runs once the window is at least N segments | 16 | `hystart_low_window` |
//! | `ack-delta=MS` | [`LinuxHyStartConfig::ack_delta`]: largest spacing of two ACKs of one train | 2 ms | `hystart_ack_delta_us` = 2000 |
//! | `ack-delay=MS` | [`LinuxHyStartConfig::ack_delay`]: cushion added to `delay_min` in the ACK-train threshold | 1 ms | `hystart_ack_delay()`, at most 1 ms |
//! | `unpaced` | [`LinuxHyStartConfig::paced`] off: the ACK-train threshold is halved | paced | `sk_pacing_status == SK_PACING_NONE` |
//! | `min-samples=N` | [`LinuxHyStartConfig::min_samples`]: RTT samples a round counts before the delay check | 8 | `HYSTART_MIN_SAMPLES` |
//! | `min-thresh=MS` | [`LinuxHyStartConfig::delay_thresh_min`]: lower bound of the delay threshold | 4 ms | `HYSTART_DELAY_MIN` |
//! | `max-thresh=MS` | [`LinuxHyStartConfig::delay_thresh_max`]: upper bound of the delay threshold | 16 ms | `HYSTART_DELAY_MAX` |
//! | `divisor=N` (N >= 1) | [`LinuxHyStartConfig::delay_divisor`]: the delay threshold is `delay_min / N` before clamping | 8 | `HYSTART_DELAY_THRESH(delay_min >> 3)` |
//!
//! `MS` is milliseconds (fractions allowed, 0 to 3 600 000). `hystart` is not `hystart++`
//! ([`super::hystart_plus_plus`]): neither takes the other's options.

use std::time::Duration;

use super::{AckSample, SlowStart, SsDecision};
use crate::event::{Emitter, ExitReason};

/// Which detectors run (Linux `hystart_detect`: 1 = packet train, 2 = delay, 3 = both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HyStartDetect {
    /// `HYSTART_ACK_TRAIN` only.
    AckTrain,
    /// `HYSTART_DELAY` only.
    Delay,
    /// Both (`HYSTART_ACK_TRAIN | HYSTART_DELAY`), the Linux default.
    #[default]
    Both,
}

impl HyStartDetect {
    /// Whether the ACK-train detector runs.
    pub fn ack_train(self) -> bool {
        matches!(self, Self::AckTrain | Self::Both)
    }

    /// Whether the delay detector runs.
    pub fn delay(self) -> bool {
        matches!(self, Self::Delay | Self::Both)
    }
}

/// Classic HyStart constants. Defaults are those of Linux `tcp_cubic.c` (5.7 and later);
/// each field names the Linux parameter or macro it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct LinuxHyStartConfig {
    /// `hystart_detect`: the detectors that run (both).
    pub detect: HyStartDetect,
    /// `hystart_low_window`: HyStart runs only once the window is at least this many
    /// segments (16).
    pub low_window_segments: u32,
    /// `hystart_ack_delta_us`: largest spacing between two ACKs of one train (2 ms).
    pub ack_delta: Duration,
    /// `hystart_ack_delay()`: cushion added to `delay_min` in the ACK-train threshold
    /// (1 ms). Linux computes `min(1 ms, 4 * sk_gso_max_size / sk_pacing_rate)` to allow for
    /// TSO/GRO aggregation; quinn gives the controller neither a GSO size nor its pacing
    /// rate, so this is a constant. With Linux's 64 KiB GSO size the cap of 1 ms applies to
    /// every pacing rate under 262 MB/s (2.1 Gbit/s), i.e. to all satellite paths.
    pub ack_delay: Duration,
    /// Whether the sender paces (`sk_pacing_status != SK_PACING_NONE`). When it does not,
    /// Linux halves the ACK-train threshold (`threshold >>= 1`). quinn always paces, so
    /// the default is `true`.
    pub paced: bool,
    /// `HYSTART_MIN_SAMPLES`: RTT samples a round takes before the delay check (8). The
    /// check runs from the sample after these on.
    pub min_samples: u32,
    /// `HYSTART_DELAY_MIN`: lower bound of the delay threshold (4 ms).
    pub delay_thresh_min: Duration,
    /// `HYSTART_DELAY_MAX`: upper bound of the delay threshold (16 ms).
    pub delay_thresh_max: Duration,
    /// The delay threshold is `delay_min / delay_divisor` before clamping (Linux
    /// `HYSTART_DELAY_THRESH(ca->delay_min >> 3)`: 8).
    pub delay_divisor: u32,
}

impl Default for LinuxHyStartConfig {
    fn default() -> Self {
        Self {
            detect: HyStartDetect::Both,
            low_window_segments: 16,
            ack_delta: Duration::from_millis(2),
            ack_delay: Duration::from_millis(1),
            paced: true,
            min_samples: 8,
            delay_thresh_min: Duration::from_millis(4),
            delay_thresh_max: Duration::from_millis(16),
            delay_divisor: 8,
        }
    }
}

impl LinuxHyStartConfig {
    /// Runs only the given detectors.
    pub fn detect(mut self, detect: HyStartDetect) -> Self {
        self.detect = detect;
        self
    }

    /// Declares the sender unpaced (halves the ACK-train threshold, as Linux does).
    pub fn unpaced(mut self) -> Self {
        self.paced = false;
        self
    }

    /// The ACK-train threshold for a minimum RTT of `delay_min`: `delay_min + ack_delay`,
    /// halved for an unpaced sender.
    pub fn ack_train_threshold(&self, delay_min: Duration) -> Duration {
        let threshold = delay_min.saturating_add(self.ack_delay);
        if self.paced { threshold } else { threshold / 2 }
    }

    /// The RTT increase that ends slow start for a minimum RTT of `delay_min`:
    /// `clamp(delay_min / divisor, HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)` (the lower bound
    /// wins if the two are inverted).
    pub fn delay_threshold(&self, delay_min: Duration) -> Duration {
        (delay_min / self.delay_divisor.max(1))
            .min(self.delay_thresh_max)
            .max(self.delay_thresh_min)
    }
}

/// Classic HyStart state (the `struct bictcp` fields of `tcp_cubic.c` it uses).
#[derive(Debug, Clone)]
pub struct LinuxHyStart {
    config: LinuxHyStartConfig,
    /// `round_start`: time of the first ACK of the current round.
    round_start: Duration,
    /// `last_ack`: time of the last ACK of the train that began at `round_start`.
    last_ack: Duration,
    /// `curr_rtt`: minimum RTT sample of the current round (`Duration::MAX` = none yet).
    curr_rtt: Duration,
    /// `sample_cnt`: RTT samples counted in this round, up to `min_samples`.
    sample_cnt: u32,
    /// A round ended (or none began yet): the next ACK HyStart looks at begins a new one
    /// (`bictcp_hystart_reset`).
    round_pending: bool,
    /// `found`: the detector that ended slow start.
    found: Option<ExitReason>,
}

impl LinuxHyStart {
    /// Classic HyStart with the given constants.
    pub fn new(config: LinuxHyStartConfig) -> Self {
        Self {
            config,
            round_start: Duration::ZERO,
            last_ack: Duration::ZERO,
            curr_rtt: Duration::MAX,
            sample_cnt: 0,
            round_pending: true,
            found: None,
        }
    }

    /// The constants in use.
    pub fn config(&self) -> &LinuxHyStartConfig {
        &self.config
    }

    /// `bictcp_hystart_reset`: a new round begins at `now`.
    fn start_round(&mut self, now: Duration) {
        self.round_pending = false;
        self.round_start = now;
        self.last_ack = now;
        self.curr_rtt = Duration::MAX;
        self.sample_cnt = 0;
    }

    /// `hystart_update` for one ACK; returns the detector that fired, if one did.
    fn update(
        &mut self,
        now: Duration,
        delay: Duration,
        delay_min: Duration,
    ) -> Option<ExitReason> {
        let mut found = None;
        if self.config.detect.ack_train()
            && now.saturating_sub(self.last_ack) <= self.config.ack_delta
        {
            self.last_ack = now;
            if now.saturating_sub(self.round_start) > self.config.ack_train_threshold(delay_min) {
                found = Some(ExitReason::HyStartAckTrain);
            }
        }
        if self.config.detect.delay() {
            self.curr_rtt = self.curr_rtt.min(delay);
            if self.sample_cnt < self.config.min_samples {
                self.sample_cnt += 1;
            } else if self.curr_rtt
                > delay_min.saturating_add(self.config.delay_threshold(delay_min))
            {
                // Linux counts both detections; the ACK train, checked first, names the exit.
                found = found.or(Some(ExitReason::HyStartDelay));
            }
        }
        found
    }
}

impl Default for LinuxHyStart {
    fn default() -> Self {
        Self::new(LinuxHyStartConfig::default())
    }
}

impl SlowStart for LinuxHyStart {
    fn name(&self) -> &'static str {
        "hystart"
    }

    fn on_ack(&mut self, ack: &AckSample, _events: &Emitter) -> SsDecision {
        if let Some(reason) = self.found {
            return SsDecision::Exit {
                cwnd: ack.cwnd,
                ssthresh: ack.cwnd,
                reason,
                drain: false,
            };
        }
        // cubictcp_acked: HyStart runs only from hystart_low_window segments on.
        if ack.cwnd < u64::from(self.config.low_window_segments).saturating_mul(ack.mss) {
            return SsDecision::Grow {
                increase: ack.bytes,
            };
        }
        // Linux clamps a zero sample to 1 us and keeps delay_min as the minimum of every
        // sample including this one (an unset minimum is taken from the sample).
        let delay = ack.rtt.max(Duration::from_micros(1));
        let delay_min = if ack.min_rtt.is_zero() {
            delay
        } else {
            ack.min_rtt.min(delay)
        };
        if self.round_pending {
            self.start_round(ack.now);
        }
        match self.update(ack.now, delay, delay_min) {
            Some(reason) => {
                // ssthresh = cwnd: slow start ends with the window as it is.
                self.found = Some(reason);
                SsDecision::Exit {
                    cwnd: ack.cwnd,
                    ssthresh: ack.cwnd,
                    reason,
                    drain: false,
                }
            }
            None => SsDecision::Grow {
                increase: ack.bytes,
            },
        }
    }

    fn on_round_end(&mut self, _now: Duration) {
        // The reset waits for the next ACK, whose time starts the round (Linux resets
        // inside hystart_update, on the ACK that is past the old round's end).
        self.round_pending = true;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_follow_linux() {
        let c = LinuxHyStartConfig::default();
        let ms = Duration::from_millis;
        // clamp(delay_min >> 3, 4 ms, 16 ms)
        assert_eq!(c.delay_threshold(ms(600)), ms(16));
        assert_eq!(c.delay_threshold(ms(80)), ms(10));
        assert_eq!(c.delay_threshold(ms(10)), ms(4));
        assert_eq!(c.ack_train_threshold(ms(600)), ms(601));
        assert_eq!(
            c.clone().unpaced().ack_train_threshold(ms(600)),
            Duration::from_micros(300_500)
        );
        // Inverted bounds do not panic; the lower one wins.
        let inverted = LinuxHyStartConfig {
            delay_thresh_min: ms(20),
            delay_thresh_max: ms(5),
            ..c
        };
        assert_eq!(inverted.delay_threshold(ms(600)), ms(20));
    }
}
