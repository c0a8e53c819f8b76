//! A filter that tells isolated (random) losses from congestion, picoquic's way: the
//! window is reduced only when the smoothed loss rate says the losses are repeated.
//!
//! RFC 9002 Sec. 7.3.2 (and RFC 9438 Sec. 4.6 for CUBIC) reduce the window once per
//! round trip with a loss, whatever its cause. On a satellite path with random loss that
//! caps the window near the Mathis bound (BENCHMARKS.md, "Random loss"). picoquic's CUBIC
//! and NewReno react only after "repeated losses, not just after a single loss" (`cubic.c`,
//! with `picoquic_cc_hystart_loss_test` in `cc_common.c`): an exponentially weighted loss
//! indicator per packet number, decayed
//! by `1 - gain` for every packet since the previous loss (at most `scope` of them) and
//! raised by `gain x (1 - rate)` for every lost packet, must exceed a threshold before a
//! loss reduces the window:
//!
//! | constant | value | picoquic |
//! |---|---|---|
//! | [`LOSS_FILTER_GAIN`] | 1/16 | `PICOQUIC_SMOOTHED_LOSS_FACTOR` |
//! | [`LOSS_FILTER_SCOPE`] | 32 packets | `PICOQUIC_SMOOTHED_LOSS_SCOPE` |
//! | [`LOSS_FILTER_THRESHOLD`] | 0.15 | `PICOQUIC_SMOOTHED_LOSS_THRESHOLD` |
//!
//! One loss in 64 packets keeps the rate near 0.07 and is never answered; three losses in
//! a row (a queue overflowing) reach 0.18 and are. Differences from picoquic: quinn-proto
//! tells the controller the bytes lost per ACK batch, not the lost packet numbers, so the
//! distance since the previous loss is counted in packets acknowledged meanwhile and the
//! lost packets of one batch count as consecutive. Persistent congestion (RFC 9002
//! Sec. 7.6) is always answered, as picoquic answers a timeout, and so is an ECN-CE mark. Careful Resume still sees
//! every loss (its Safe Retreat is a safety rule, RFC 9959 Sec. 4.5), unless the `cr`
//! option says otherwise: then a loss the filter lets pass is not heard by Careful Resume
//! either, so one random loss during a jump does not retreat to PipeSize (ours; a burst of
//! losses, an overloaded path, still retreats).
//!
//! This is not RFC 9002 or RFC 9438 behaviour: it is an option (spec part
//! `+loss-filter[:threshold=F,gain=F,scope=N,cr]`), measured in BENCHMARKS.md ("Random
//! loss").

use std::fmt;

use crate::modifiers::{SpecPart, write_part};

/// Weight of one packet in the smoothed loss rate (picoquic: 1/16).
pub const LOSS_FILTER_GAIN: f64 = 1.0 / 16.0;

/// Most packets the rate decays over between two losses (picoquic: 32).
pub const LOSS_FILTER_SCOPE: u32 = 32;

/// Smoothed loss rate above which a loss reduces the window (picoquic: 0.15).
pub const LOSS_FILTER_THRESHOLD: f64 = 0.15;

/// The filter's configuration. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossFilterConfig {
    /// Rate above which a loss is congestion, in (0, 1).
    pub threshold: f64,
    /// Weight of one packet, in (0, 1).
    pub gain: f64,
    /// Most packets of decay between losses, at least 1.
    pub scope: u32,
    /// Whether Careful Resume hears only the losses the filter answers (`cr`).
    pub careful_resume: bool,
}

impl Default for LossFilterConfig {
    /// picoquic's constants.
    fn default() -> Self {
        Self {
            threshold: LOSS_FILTER_THRESHOLD,
            gain: LOSS_FILTER_GAIN,
            scope: LOSS_FILTER_SCOPE,
            careful_resume: false,
        }
    }
}

impl SpecPart for LossFilterConfig {
    const NAME: &'static str = "loss-filter";
    const STANDALONE_REFUSAL: &'static str = "takes no loss filter";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        let unit = |key: &str, v: &str| -> Result<f64, String> {
            v.parse()
                .ok()
                .filter(|f: &f64| f.is_finite() && *f > 0.0 && *f < 1.0)
                .ok_or_else(|| format!("loss-filter option {key}={v} must be a number in (0, 1)"))
        };
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                None if opt == "cr" => out.careful_resume = true,
                Some(("threshold", v)) => out.threshold = unit("threshold", v)?,
                Some(("gain", v)) => out.gain = unit("gain", v)?,
                Some(("scope", v)) => {
                    out.scope = v
                        .parse()
                        .ok()
                        .filter(|n: &u32| (1..=1_000_000).contains(n))
                        .ok_or_else(|| {
                            format!("loss-filter option scope={v} must be packets in [1, 1000000]")
                        })?;
                }
                _ => {
                    return Err(format!(
                        "unknown loss-filter option '{opt}'; valid: threshold=F, gain=F, scope=N, cr"
                    ));
                }
            }
        }
        Ok(out)
    }

    fn options(&self) -> Option<Vec<String>> {
        let d = Self::default();
        let mut opts = Vec::new();
        if self.threshold != d.threshold {
            opts.push(format!("threshold={}", self.threshold));
        }
        if self.gain != d.gain {
            opts.push(format!("gain={}", self.gain));
        }
        if self.scope != d.scope {
            opts.push(format!("scope={}", self.scope));
        }
        if self.careful_resume {
            opts.push("cr".into());
        }
        Some(opts)
    }
}

impl fmt::Display for LossFilterConfig {
    /// The `+loss-filter[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

/// The smoothed loss rate. See the module docs.
#[derive(Debug, Clone)]
pub struct LossFilter {
    config: LossFilterConfig,
    /// The smoothed per-packet loss indicator, in [0, 1).
    rate: f64,
    /// Packets acknowledged since the last loss, capped at the scope.
    since_loss: u32,
}

impl LossFilter {
    /// A filter with no loss seen.
    pub fn new(config: LossFilterConfig) -> Self {
        Self {
            config,
            rate: 0.0,
            since_loss: 0,
        }
    }

    /// One packet was acknowledged.
    pub fn on_acked(&mut self) {
        self.since_loss = (self.since_loss + 1).min(self.config.scope);
    }

    /// `packets` (at least one) were declared lost together; true if the losses are
    /// congestion (the smoothed rate exceeds the threshold).
    pub fn on_lost(&mut self, packets: u64) -> bool {
        let keep = 1.0 - self.config.gain;
        for i in 0..packets.clamp(1, u64::from(self.config.scope)) {
            // The lost packet's own distance from the previous one: the packets delivered
            // in between plus itself, at most the scope.
            let distance = if i == 0 {
                (self.since_loss + 1).min(self.config.scope)
            } else {
                1
            };
            self.rate *= keep.powi(distance as i32);
            self.rate += (1.0 - self.rate) * self.config.gain;
        }
        self.since_loss = 0;
        self.rate > self.config.threshold
    }

    /// The configuration.
    pub fn config(&self) -> &LossFilterConfig {
        &self.config
    }

    /// The smoothed loss rate: a fraction of packets (0 to 1), not a data rate.
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_loss_in_64_is_tolerated_and_a_burst_is_not() {
        let mut f = LossFilter::new(LossFilterConfig::default());
        for _ in 0..100 {
            for _ in 0..63 {
                f.on_acked();
            }
            assert!(!f.on_lost(1), "rate {}", f.rate());
        }
        assert!((0.06..0.08).contains(&f.rate()), "{}", f.rate());
        // A queue overflowing: three packets lost in a row.
        assert!(!f.on_lost(1));
        assert!(f.on_lost(2), "rate {}", f.rate());
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in [
            "",
            "threshold=0.3",
            "gain=0.125,scope=8",
            "cr",
            "cr,threshold=0.2",
        ] {
            let c = LossFilterConfig::parse_options(text).unwrap();
            let printed = c.to_string();
            let opts = printed
                .strip_prefix("+loss-filter")
                .unwrap()
                .trim_start_matches(':');
            assert_eq!(LossFilterConfig::parse_options(opts), Ok(c), "{printed}");
        }
        for bad in ["threshold=1", "gain=0", "scope=0", "scope=x", "big", "cr=1"] {
            let e = LossFilterConfig::parse_options(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            crate::modifiers::split_part(
                "cubic+search+loss-filter:threshold=0.2+cr",
                "loss-filter"
            ),
            ("cubic+search+cr".to_string(), Some("threshold=0.2"))
        );
    }
}
