//! Saved congestion-control parameters (RFC 9959 Sec. 3.1, 3.2): the record a sender
//! keeps, the checks before it seeds a connection, and the one-time hand-over to a
//! controller.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use super::endpoint::RemoteEndpoint;

/// Saved congestion-control parameters (Sec. 3.1): the record a sender keeps per Remote
/// Endpoint, serializable with the `serde` feature.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SavedCcParams {
    /// Sec. 2.4 `saved_cwnd`, bytes.
    pub saved_cwnd: u64,
    /// Sec. 2.4 `saved_rtt`.
    pub saved_rtt: Duration,
    /// Sec. 2.4 `saved_remote_endpoint`.
    pub saved_remote_endpoint: RemoteEndpoint,
    /// Wall-clock time of saving.
    pub saved_at: SystemTime,
    /// Sec. 4.3.1 Lifetime: unusable from `saved_at + lifetime` on.
    pub lifetime: Duration,
}

/// Why saved parameters cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeRejected {
    /// Sec. 3.2 "Path change": the Remote Endpoint is not the saved one.
    PathChanged,
    /// Sec. 3.2 "Lifetime of saved CC parameters": the Lifetime is exceeded (or the saved
    /// time is in the future: a clock that stepped back cannot vouch for the age).
    Expired,
    /// Nothing is saved for this endpoint (a [`SavedStateStore`](super::SavedStateStore) look-up).
    NotSaved,
}

impl fmt::Display for ResumeRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PathChanged => "the remote endpoint is not the saved one",
            Self::Expired => "the saved parameters outlived their lifetime",
            Self::NotSaved => "nothing is saved for this endpoint",
        })
    }
}

impl std::error::Error for ResumeRejected {}

impl SavedCcParams {
    /// When the parameters stop being usable (`None`: beyond what `SystemTime` holds).
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.saved_at.checked_add(self.lifetime)
    }

    /// Whether the parameters may seed a connection to `endpoint` at wall-clock `now`
    /// (Sec. 3.2 "Path change" and "Lifetime"). A rejected set is to be deleted.
    pub fn check(
        &self,
        endpoint: &RemoteEndpoint,
        now: SystemTime,
    ) -> Result<ResumeParams, ResumeRejected> {
        self.check_lifetime(now, self.lifetime)?;
        if *endpoint != self.saved_remote_endpoint {
            return Err(ResumeRejected::PathChanged);
        }
        Ok(ResumeParams::new(self.saved_cwnd, self.saved_rtt))
    }

    pub(super) fn check_lifetime(
        &self,
        now: SystemTime,
        lifetime: Duration,
    ) -> Result<(), ResumeRejected> {
        match now.duration_since(self.saved_at) {
            Ok(age) if age < lifetime => Ok(()),
            _ => Err(ResumeRejected::Expired),
        }
    }
}

/// The parameters a connection resumes from (the qlog draft's `restored_data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ResumeParams {
    /// Bytes.
    pub saved_cwnd: u64,
    /// Minimum RTT of the observed connection.
    pub saved_rtt: Duration,
}

impl ResumeParams {
    /// Parameters the caller vouches for (path and Lifetime already checked). Prefer
    /// [`SavedCcParams::check`] or [`SavedStateStore::take`](super::SavedStateStore::take), which check them.
    pub fn new(saved_cwnd: u64, saved_rtt: Duration) -> Self {
        Self {
            saved_cwnd,
            saved_rtt,
        }
    }
}

/// One saved-parameter set, handed to the first controller built from a configuration
/// (Sec. 3.2 "Using saved_cwnd"): clones of the configuration share the claim.
#[derive(Debug, Clone)]
pub(crate) struct ResumeTicket {
    params: ResumeParams,
    claimed: Arc<AtomicBool>,
}

impl ResumeTicket {
    pub(crate) fn new(params: ResumeParams) -> Self {
        Self {
            params,
            claimed: Arc::new(AtomicBool::new(false)),
        }
    }

    pub(crate) fn claim(&self) -> Option<ResumeParams> {
        (!self.claimed.swap(true, Ordering::AcqRel)).then_some(self.params)
    }

    pub(crate) fn pending(&self) -> Option<ResumeParams> {
        (!self.claimed.load(Ordering::Acquire)).then_some(self.params)
    }
}
