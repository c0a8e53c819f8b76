//! Retreat to what the path delivered: the first reduction of a connection is taken from
//! the bytes the path delivered in the last round trip, not from a window that start-up
//! raised far past them.
//!
//! A start-up that raises the window faster than the acknowledgements confirm it (growth
//! of 3x per round trip, picoquic's long-RTT floor, a jump to a measured BDP) can hold a
//! window many times what the path carries when the first loss is detected, a round trip
//! after the queue overflowed: beside another flow's standing queue, the `satellite`
//! profile's jump once held 15 BDP. RFC 9002's response (Sec. 7.3.2) takes `ssthresh`
//! from that window, so CUBIC keeps `0.7 x` it (RFC 9438 Sec. 4.6) and `W_max` at it: one
//! reduction per round trip, each of them still above the path, a round trip of drops each.
//! RFC 9959 gives Careful Resume's jump a safety valve for this (Sec. 3.5, Safe Retreat: the
//! window falls at once to what the path was seen to deliver), and RFC 9438 Sec. 4.6 asks an
//! implementation that reduces from `cwnd` rather than the flight to keep `cwnd` from an
//! "arbitrarily high" value. With `+retreat`, the first reduction of the connection takes
//! the avoidance's reduction (CUBIC's `beta`, NewReno's half) of the smaller of the window
//! and what the path delivers per round trip (the larger of the bytes acknowledged over
//! the latest RTT, the queue's whole length included, and the recent delivery rate times
//! that RTT: `RecentDelivery::per_round_trip`), and CUBIC's `W_max` is
//! that too. Later
//! reductions are RFC 9002's: in congestion avoidance the window and what the path delivers
//! per round trip agree, and the first reduction brought them together.
//!
//! | quantity | value | source |
//! |---|---|---|
//! | delivered per round trip | the larger of the bytes acknowledged over the latest RTT and the rate over the last quarter smoothed RTT x the latest RTT ([`crate::delivery`]) | RFC 9959 Sec. 3.5 PipeSize: what the path was seen to deliver |
//! | reduction | the avoidance's own, applied to it | RFC 9002 Sec. 7.3.2, RFC 9438 Sec. 4.6 |
//!
//! Spec part `+retreat`, no options (ours). Never raises a window: a reduction from the
//! window itself when the path delivered as much.

use std::fmt;

use crate::modifiers::{SpecPart, bare_part, write_part};

/// The first reduction from what the path delivered (`+retreat`). See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retreat;

impl SpecPart for Retreat {
    const NAME: &'static str = "retreat";
    const STANDALONE_REFUSAL: &'static str = "has its own loss response and takes no retreat";

    fn parse_options(opts: &str) -> Result<Self, String> {
        bare_part(opts)
    }

    fn options(&self) -> Option<Vec<String>> {
        Some(Vec::new())
    }
}

impl fmt::Display for Retreat {
    /// The `+retreat` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_is_bare_and_refuses_options() {
        assert_eq!(Retreat::parse_options(""), Ok(Retreat));
        assert_eq!(Retreat.to_string(), "+retreat");
        let e = Retreat::parse_options("fast").unwrap_err();
        assert!(e.contains("takes no options") && !e.contains('\n'), "{e}");
    }
}
