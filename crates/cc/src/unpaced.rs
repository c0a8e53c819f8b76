//! No pacing: the window leaves as fast as the ACKs open it, as quicly sends.
//!
//! quinn-proto paces every window at `1.25 x cwnd / smoothed RTT`; quicly, the stack the
//! seeds measured SEARCH in (seed 000), does not pace, and sends whatever the window
//! allows as each ACK opens it: in a slow start, twice the bytes acknowledged at once.
//! On geo-viasat, unpaced classic slow start has 50 MB 0.23 s earlier than paced (9.37 s
//! against 9.60 s; BENCHMARKS.md, "The seeds' SEARCH and satquic's, side by side"). With
//! `+unpaced` the controller asks quinn-proto's pacer for a rate of 0, at which it does
//! not pace (`Controller::pacing_rate`, patch 7, vendor/quinn-proto/SATQUIC-PATCH.md),
//! for the whole connection. Default: paced.
//!
//! Spec part `+unpaced`, no options. It is the seeds' stack, not a start-up mechanism:
//! it lets a campaign run "as the seeds' stack did".

use std::fmt;

use crate::modifiers::{SpecPart, bare_part, write_part};

/// quinn-proto's pacing off (`+unpaced`). See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unpaced;

impl Unpaced {
    /// The rate, bytes per second, the controller hands quinn-proto's pacer: 0, at which it
    /// does not pace.
    pub const PACING_RATE_BYTES_PER_SEC: u64 = 0;
}

impl SpecPart for Unpaced {
    const NAME: &'static str = "unpaced";
    const STANDALONE_REFUSAL: &'static str = "is paced by its own rule and takes no unpaced";

    fn parse_options(opts: &str) -> Result<Self, String> {
        bare_part(opts)
    }

    fn options(&self) -> Option<Vec<String>> {
        Some(Vec::new())
    }
}

impl fmt::Display for Unpaced {
    /// The `+unpaced` spec part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_part(f, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_part_is_bare_and_refuses_options() {
        assert_eq!(Unpaced::parse_options(""), Ok(Unpaced));
        assert_eq!(Unpaced.to_string(), "+unpaced");
        let e = Unpaced::parse_options("fast").unwrap_err();
        assert!(
            e.contains("+unpaced takes no options") && !e.contains('\n'),
            "{e}"
        );
    }
}
