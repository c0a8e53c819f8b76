//! A path: the two directions of a [`LinkSpec`], built with distinct random streams.

use crate::direction::Direction;
use crate::error::LinkError;
use crate::random::{STREAM_DOWN, STREAM_UP, derive_seed};
use crate::spec::LinkSpec;
use crate::truth::GroundTruthConfig;

/// Both directions of a path. `down` carries server -> client packets, `up` the reverse.
#[derive(Debug, Clone)]
pub struct Path<T> {
    /// Server -> client.
    pub down: Direction<T>,
    /// Client -> server.
    pub up: Direction<T>,
}

impl<T> Path<T> {
    /// Validates `spec`, resolves BDP queue limits (rate x base RTT) and builds both
    /// directions, each with its own sub-seed of `seed`.
    pub fn new(spec: &LinkSpec, seed: u64) -> Result<Self, LinkError> {
        Self::with_ground_truth(spec, seed, GroundTruthConfig::default())
    }

    /// As [`Path::new`], choosing what ground truth to record (both directions).
    pub fn with_ground_truth(
        spec: &LinkSpec,
        seed: u64,
        config: GroundTruthConfig,
    ) -> Result<Self, LinkError> {
        spec.validate()?;
        let resolved = spec.resolved();
        Ok(Path {
            down: Direction::with_ground_truth(
                &resolved.down,
                derive_seed(seed, STREAM_DOWN),
                config.clone(),
            )
            .map_err(|e| e.within("down"))?,
            up: Direction::with_ground_truth(&resolved.up, derive_seed(seed, STREAM_UP), config)
                .map_err(|e| e.within("up"))?,
        })
    }

    /// Earliest timeout of the two directions.
    pub fn poll_timeout(&self) -> Option<std::time::Duration> {
        match (self.down.poll_timeout(), self.up.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, None) => a,
            (None, b) => b,
        }
    }
}
