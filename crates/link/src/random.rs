//! Seeding: every random process gets its own ChaCha8 stream derived from the caller's
//! seed, so enabling one process (say jitter) does not shift the draws of another (loss),
//! and the two directions of a path never share a stream.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// SplitMix64 finalizer: a bijective 64-bit mix.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A sub-seed for `stream` of `seed`.
pub(crate) fn derive_seed(seed: u64, stream: u64) -> u64 {
    mix64(seed ^ mix64(stream))
}

/// The generator of one stream.
pub(crate) fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(derive_seed(seed, stream))
}

/// Uniform integer in `[0, max]` from a 64-bit hash (for values that must not depend on
/// the order in which they are asked for).
pub(crate) fn uniform_from_hash(hash: u64, max: u64) -> u64 {
    ((hash as u128 * (max as u128 + 1)) >> 64) as u64
}

pub(crate) const STREAM_LOSS: u64 = 1;
pub(crate) const STREAM_AQM: u64 = 2;
pub(crate) const STREAM_JITTER: u64 = 3;
pub(crate) const STREAM_PATH: u64 = 4;
pub(crate) const STREAM_CROSS: u64 = 5;
pub(crate) const STREAM_BOD: u64 = 6;
/// The slot schedule's seed, where the link does not fix one.
pub(crate) const STREAM_SLOTS: u64 = 7;
/// The slot schedule's draws, each keyed by slot index under its own stream.
pub(crate) const STREAM_SLOT_PHASE: u64 = 0x51;
pub(crate) const STREAM_SLOT_RTT: u64 = 0x52;
pub(crate) const STREAM_SLOT_RATE_FORWARD: u64 = 0x53;
pub(crate) const STREAM_SLOT_RATE_RETURN: u64 = 0x54;
pub(crate) const STREAM_SLOT_SPIKE: u64 = 0x55;
pub(crate) const STREAM_SLOT_SPIKE_LEN: u64 = 0x56;
pub(crate) const STREAM_SLOT_OUTAGE: u64 = 0x57;
pub(crate) const STREAM_SLOT_OUTAGE_LEN: u64 = 0x58;
pub(crate) const STREAM_SLOT_LOSS: u64 = 0x59;
pub(crate) const STREAM_SLOT_LOSS_LEN: u64 = 0x5A;
/// A direction's per-packet draws inside a partial loss burst.
pub(crate) const STREAM_BURST_PACKETS: u64 = 0x5B;
pub(crate) const STREAM_DOWN: u64 = 0xD0;
pub(crate) const STREAM_UP: u64 = 0x0B;
