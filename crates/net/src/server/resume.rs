//! Careful Resume's store glue (RFC 9959): what each client address's last connection
//! observed (Sec. 3.1) is saved when it closes and handed to the next connection from the
//! same address (Sec. 3.2), whose controller may then start from it.
//!
//! The store lives in the server ([`ServerState`]) and is keyed by the pair of addresses
//! ([`RemoteEndpoint`]): a set saved for one path is never used on another.

use std::time::SystemTime;

use quinn::Connection;
use satquic_cc::{RemoteEndpoint, ResumeParams, SavedStateStore};
use satquic_run::probe::careful_resume_observation;

use super::{ServerState, lock};

/// Client addresses whose Careful Resume parameters the server keeps (the oldest set
/// makes room); a set is a few dozen bytes.
pub const SAVED_STATE_CAPACITY: usize = 4096;

/// An empty store of [`SAVED_STATE_CAPACITY`] sets, each valid for Careful Resume's
/// default lifetime.
pub(super) fn saved_state_store() -> SavedStateStore {
    SavedStateStore::new(
        SAVED_STATE_CAPACITY,
        satquic_cc::careful_resume::DEFAULT_LIFETIME,
    )
}

/// The parameters saved for `endpoint`, if a set is there and still valid (taken: a set
/// serves one connection).
pub(super) fn take_saved(state: &ServerState, endpoint: &RemoteEndpoint) -> Option<ResumeParams> {
    lock(&state.saved).take(endpoint, SystemTime::now()).ok()
}

/// Sec. 3.1 "Updating": the closed connection's observation replaces the saved set.
pub(super) fn save_observation(state: &ServerState, conn: &Connection, endpoint: RemoteEndpoint) {
    if let Ok(o) = careful_resume_observation(conn.congestion_state()) {
        lock(&state.saved).save(o.save(endpoint, SystemTime::now()));
    }
}
