//! Undoing a window reduction whose recovery period lost few packets, Cloudflare quiche's
//! way: a loss that comes alone is taken for a random loss, not for congestion.
//!
//! RFC 9002 Sec. 7.3.2 and RFC 9438 Sec. 4.6 reduce the window once per recovery period,
//! whatever the number of packets lost in it. quiche's CUBIC (`recovery/congestion/
//! cubic.rs` in quiche 0.30.0, its default controller) saves the window and the CUBIC
//! state before each reduction and, when its recovery period ends (the first
//! acknowledgement of a packet sent after it began), restores them if fewer than
//! `max(2, 20 % of the window in packets)` packets were lost since the reduction. On
//! qir-satloss (1 % random loss, 600 ms RTT) nearly every congestion event is one lost
//! packet, so nearly every reduction is undone one round trip later, and quiche-peer's
//! server finishes a transfer a compliant CUBIC does not finish in the time allowed
//! (BENCHMARKS.md, "Random loss").
//!
//! | constant | value | quiche 0.30.0 |
//! |---|---|---|
//! | [`ROLLBACK_SHARE`] | 0.2 of the window | `ROLLBACK_THRESHOLD_PERCENT` (20) |
//! | [`ROLLBACK_MIN_PACKETS`] | 2 packets | `MIN_ROLLBACK_THRESHOLD` |
//!
//! This is not RFC 9438 or RFC 9002 behaviour. RFC 9438 Sec. 4.9.2 lets CUBIC restore its
//! state after a *spurious* loss, one the peer later acknowledges (for QUIC, a packet
//! acknowledged after it was declared lost); here the packets really were lost, and the
//! count of them is taken as the sign of their cause (quiche's authors call the rule their
//! own: cloudflare/quiche pull request 890). It is an option (spec part
//! `+rollback[:share=F,min=N]`), measured with its fairness cost in BENCHMARKS.md
//! ("Random loss").
//!
//! Differences from quiche, each to keep RFC 9002's recovery intact where the rule allows:
//!
//! * The decision is taken once, when the recovery period ends; quiche asks again on every
//!   later acknowledgement, so a window that grows past `5 x` the losses can still be
//!   restored seconds later.
//! * The recovery period stays as it was: packets sent before it began do not grow the
//!   window and their losses do not cut it again. quiche's CUBIC uses one timestamp for
//!   its recovery start and its CUBIC epoch, and restoring the epoch moves the recovery
//!   start back too.
//! * A reduction for an ECN-CE mark (quinn reports it with no bytes lost), in a recovery
//!   period that saw a mark, or for persistent congestion is never undone: that is
//!   congestion by definition (RFC 9002 Sec. 7.1, 7.6). quiche counts lost packets only,
//!   so it would undo a mark.
//! * As in quiche, the reduction that ends slow start is not undone (its state was slow
//!   start's), so a slow start that overshoots still backs off.

use std::fmt;

use crate::modifiers::{SpecPart, write_part};

/// Share of the window, in packets, below which a recovery period's losses are undone
/// (quiche: `ROLLBACK_THRESHOLD_PERCENT` = 20).
pub const ROLLBACK_SHARE: f64 = 0.2;

/// Fewest lost packets that keep a reduction, whatever the window (quiche:
/// `MIN_ROLLBACK_THRESHOLD` = 2): a single lost packet is always undone.
pub const ROLLBACK_MIN_PACKETS: u64 = 2;

/// The rule's configuration. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RollbackConfig {
    /// Share of the window (in packets) the losses of a recovery period must reach for the
    /// reduction to stand, in (0, 1].
    pub share: f64,
    /// Fewest lost packets for the reduction to stand, at least 1.
    pub min_packets: u64,
}

impl Default for RollbackConfig {
    /// quiche's constants.
    fn default() -> Self {
        Self {
            share: ROLLBACK_SHARE,
            min_packets: ROLLBACK_MIN_PACKETS,
        }
    }
}

impl RollbackConfig {
    /// Whether `lost_packets` lost in one recovery period are few enough to undo its
    /// reduction, with the window at `cwnd_packets` packets.
    pub fn undoes(&self, lost_packets: u64, cwnd_packets: u64) -> bool {
        let threshold = ((cwnd_packets as f64 * self.share) as u64).max(self.min_packets);
        lost_packets < threshold
    }
}

impl SpecPart for RollbackConfig {
    const NAME: &'static str = "rollback";
    const STANDALONE_REFUSAL: &'static str = "takes no rollback";

    fn parse_options(opts: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            match opt.split_once('=') {
                Some(("share", v)) => {
                    out.share = v
                        .parse()
                        .ok()
                        .filter(|f: &f64| f.is_finite() && *f > 0.0 && *f <= 1.0)
                        .ok_or_else(|| {
                            format!("rollback option share={v} must be a number in (0, 1]")
                        })?;
                }
                Some(("min", v)) => {
                    out.min_packets = v
                        .parse()
                        .ok()
                        .filter(|n: &u64| (1..=1_000_000).contains(n))
                        .ok_or_else(|| {
                            format!("rollback option min={v} must be packets in [1, 1000000]")
                        })?;
                }
                _ => {
                    return Err(format!(
                        "unknown rollback option '{opt}'; valid: share=F, min=N"
                    ));
                }
            }
        }
        Ok(out)
    }

    fn options(&self) -> Option<Vec<String>> {
        let d = Self::default();
        let mut opts = Vec::new();
        if self.share != d.share {
            opts.push(format!("share={}", self.share));
        }
        if self.min_packets != d.min_packets {
            opts.push(format!("min={}", self.min_packets));
        }
        Some(opts)
    }
}

impl fmt::Display for RollbackConfig {
    /// The `+rollback[:...]` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_or_few_losses_are_undone_and_a_fifth_of_the_window_is_not() {
        let c = RollbackConfig::default();
        // Small windows: the minimum of 2 decides.
        assert!(c.undoes(1, 4));
        assert!(!c.undoes(2, 4));
        // 100 packets: up to 19 lost packets are undone, 20 are congestion.
        assert!(c.undoes(19, 100));
        assert!(!c.undoes(20, 100));
    }

    #[test]
    fn options_parse_and_print_back() {
        for text in ["", "share=0.1", "min=3", "share=0.5,min=1"] {
            let c = RollbackConfig::parse_options(text).unwrap();
            let printed = c.to_string();
            let opts = printed
                .strip_prefix("+rollback")
                .unwrap()
                .trim_start_matches(':');
            assert_eq!(RollbackConfig::parse_options(opts), Ok(c), "{printed}");
        }
        for bad in ["share=0", "share=1.5", "min=0", "min=x", "big"] {
            let e = RollbackConfig::parse_options(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
