//! Reading a stream out of order: the in-order prefix, and the bytes a sender writes.
//!
//! quinn-proto 0.11's ordered reassembly gives up after 1024 gaps in a stream buffer
//! ("too many gaps in stream buffer", `INTERNAL_ERROR`), which the Viasat AQM (dropping one
//! arrival in four above half its queue) produces within a second of overshoot. So every
//! satquic receiver, simulated or real, reads with `ordered = false` and tracks the
//! in-order prefix itself with [`InOrder`].

use std::collections::BTreeMap;

/// One megabyte of zeros: what senders write (as static `Bytes`, no copy). Large writes
/// matter for speed: quinn-proto 0.11 finds a packet's data by scanning its list of
/// written segments, one per write, so with ~40 MB unacknowledged on a GEO link 64 KB
/// writes would mean 600 segments per lookup. Segment sizes do not change what goes on
/// the wire.
pub static ZEROS: [u8; 1_000_000] = [0; 1_000_000];

/// The in-order prefix of a stream read out of order: the ranges received beyond the
/// prefix, merged as holes fill.
#[derive(Debug, Default, Clone)]
pub struct InOrder {
    prefix: u64,
    /// start -> end of received ranges beyond `prefix`, non-overlapping.
    beyond: BTreeMap<u64, u64>,
}

impl InOrder {
    /// Records `len` bytes at `offset`; returns the in-order prefix length.
    pub fn insert(&mut self, offset: u64, len: u64) -> u64 {
        let end = offset + len;
        if offset <= self.prefix {
            self.prefix = self.prefix.max(end);
            while let Some((&start, &stop)) = self.beyond.first_key_value() {
                if start > self.prefix {
                    break;
                }
                self.prefix = self.prefix.max(stop);
                self.beyond.pop_first();
            }
        } else {
            let stop = self.beyond.entry(offset).or_insert(end);
            *stop = (*stop).max(end);
        }
        self.prefix
    }

    /// Bytes received in order.
    pub fn prefix(&self) -> u64 {
        self.prefix
    }

    /// Holes currently open.
    pub fn gaps(&self) -> usize {
        self.beyond.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn in_order_prefix_waits_for_holes() {
        let mut r = InOrder::default();
        assert_eq!(r.insert(0, 10), 10);
        assert_eq!(r.insert(20, 10), 10);
        assert_eq!(r.insert(40, 5), 10);
        assert_eq!(r.gaps(), 2);
        assert_eq!(r.insert(10, 10), 30);
        assert_eq!(r.insert(30, 10), 45);
        assert_eq!(r.gaps(), 0);
        assert_eq!(
            r.insert(5, 5),
            45,
            "a duplicate below the prefix changes nothing"
        );
    }

    proptest! {
        #[test]
        fn in_order_prefix_matches_a_bitmap(
            order in Just((0..40u64).collect::<Vec<_>>()).prop_shuffle(),
            len in 1..5u64,
        ) {
            let mut r = InOrder::default();
            let mut have = [false; 40];
            for i in order {
                let got = r.insert(i * len, len);
                have[i as usize] = true;
                let expected = have.iter().take_while(|h| **h).count() as u64 * len;
                prop_assert_eq!(got, expected);
            }
            prop_assert_eq!(r.prefix(), 40 * len);
        }

        #[test]
        fn overlapping_ranges_give_the_bitmap_prefix(
            chunks in proptest::collection::vec((0u64..200, 1u64..20), 0..60),
        ) {
            let mut o = InOrder::default();
            let mut bits = vec![false; 256];
            for (off, len) in chunks {
                let got = o.insert(off, len);
                for b in off..off + len {
                    bits[b as usize] = true;
                }
                let want = bits.iter().position(|b| !b).unwrap_or(bits.len()) as u64;
                prop_assert_eq!(got, want);
            }
        }
    }
}
