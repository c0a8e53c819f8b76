//! Classic slow start: RFC 2001 Sec. 2.1 / RFC 5681 Sec. 3.1 with byte counting
//! (RFC 3465): the window grows by the bytes acknowledged and slow start ends only on
//! loss (or when the window reaches `ssthresh`). The baseline of seeds 000/001.
//!
//! # Options
//!
//! The spec name is `classic` (alias `ss`); it takes no options. It is the slow start of
//! `newreno` and `cubic` when none is named ([`crate::spec`]).

use super::{AckSample, SlowStart, SsDecision};
use crate::event::Emitter;

/// RFC 5681 slow start with byte counting; exits on loss only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Classic;

impl SlowStart for Classic {
    fn name(&self) -> &'static str {
        "classic"
    }

    fn on_ack(&mut self, ack: &AckSample, _events: &Emitter) -> SsDecision {
        SsDecision::Grow {
            increase: ack.bytes,
        }
    }

    fn reset(&mut self) {}

    fn clone_box(&self) -> Box<dyn SlowStart> {
        Box::new(*self)
    }

    fn state_size(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}
