//! [`SavedStateStore`]: a bounded store of saved parameters, one set per Remote Endpoint.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use super::endpoint::RemoteEndpoint;
use super::saved::{ResumeParams, ResumeRejected, SavedCcParams};

/// A bounded store of saved parameters, one set per Remote Endpoint (Sec. 3.1 "MUST NOT
/// retain more than one set"). [`take`](Self::take) hands a set to one connection and
/// removes it (Sec. 3.2 "Only one connection can use a specific set"), deleting expired
/// sets; the connection saves a new observation when it ends (Sec. 3.1 "Updating"). Not
/// used by the controller: a sender keeps one per process (or shares it, Sec. 4.2).
#[derive(Debug, Clone)]
pub struct SavedStateStore {
    capacity: usize,
    max_lifetime: Duration,
    entries: BTreeMap<RemoteEndpoint, SavedCcParams>,
}

impl SavedStateStore {
    /// At most `capacity` sets; none is used beyond `max_lifetime` whatever its own
    /// Lifetime (Sec. 4.3.1: "the maximum Lifetime is a configurable parameter").
    pub fn new(capacity: usize, max_lifetime: Duration) -> Self {
        Self {
            capacity,
            max_lifetime,
            entries: BTreeMap::new(),
        }
    }

    /// Keeps `params`, replacing the set of the same endpoint; when full, the set saved
    /// longest ago makes room.
    pub fn save(&mut self, params: SavedCcParams) {
        if self.capacity == 0 {
            return;
        }
        let key = params.saved_remote_endpoint;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(k, v)| (v.saved_at, **k))
                .map(|(k, _)| *k);
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, params);
    }

    /// Takes the set for `endpoint` to resume from, at wall-clock `now`. An expired set is
    /// deleted and rejected.
    pub fn take(
        &mut self,
        endpoint: &RemoteEndpoint,
        now: SystemTime,
    ) -> Result<ResumeParams, ResumeRejected> {
        let saved = self
            .entries
            .remove(endpoint)
            .ok_or(ResumeRejected::NotSaved)?;
        saved.check_lifetime(now, saved.lifetime.min(self.max_lifetime))?;
        saved.check(endpoint, now)
    }

    /// The set for `endpoint` checked as [`take`](Self::take) checks it, but left in the
    /// store: for a caller that lends it to a connection and removes it only once that
    /// connection's handshake completes (an expired set is still rejected, and left for
    /// the caller to remove).
    pub fn check(
        &self,
        endpoint: &RemoteEndpoint,
        now: SystemTime,
    ) -> Result<ResumeParams, ResumeRejected> {
        let saved = self.entries.get(endpoint).ok_or(ResumeRejected::NotSaved)?;
        saved.check_lifetime(now, saved.lifetime.min(self.max_lifetime))?;
        saved.check(endpoint, now)
    }

    /// The set for `endpoint`, if any (expired or not).
    pub fn get(&self, endpoint: &RemoteEndpoint) -> Option<&SavedCcParams> {
        self.entries.get(endpoint)
    }

    /// Deletes the set for `endpoint` (Sec. 3.5 "Removing saved information").
    pub fn remove(&mut self, endpoint: &RemoteEndpoint) -> Option<SavedCcParams> {
        self.entries.remove(endpoint)
    }

    /// Deletes the sets expired at `now`; returns how many.
    pub fn purge_expired(&mut self, now: SystemTime) -> usize {
        let before = self.entries.len();
        let max = self.max_lifetime;
        self.entries
            .retain(|_, v| v.check_lifetime(now, v.lifetime.min(max)).is_ok());
        before - self.entries.len()
    }

    /// Deletes everything (Sec. 4.3.1: after a configuration change).
    pub fn flush(&mut self) {
        self.entries.clear();
    }

    /// Number of sets kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
