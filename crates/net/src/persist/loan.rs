//! A saved Careful Resume set lent to one connection from its start until its handshake
//! ends (RFC 9959 Sec. 3.2: a set serves one connection).
//!
//! The controller is built, with the set, when the first Initial arrives; whether that
//! Initial came from the client is known only when the handshake completes. So the set is
//! spent then, not before: a handshake that fails (an Initial spoofed from the client's
//! address with `--no-retry`, a client that gives up, a timeout) gives the set back for
//! the client's next connection, and while it is lent no other connection gets it.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use satquic_cc::{RemoteEndpoint, ResumeParams};

use super::saved::SavedStates;

/// The set of one endpoint, lent to one connection: [`Loan::spend`] when its handshake
/// completes; dropped unspent, it is given back.
#[derive(Debug)]
pub struct Loan {
    states: Arc<Mutex<SavedStates>>,
    endpoint: RemoteEndpoint,
    spent: bool,
}

impl Loan {
    /// The parameters saved for `endpoint` in `states`, if a set is there, still valid at
    /// wall-clock `now` and not lent to another connection, and the loan that holds it.
    pub fn lend(
        states: &Arc<Mutex<SavedStates>>,
        endpoint: RemoteEndpoint,
        now: SystemTime,
    ) -> Option<(ResumeParams, Loan)> {
        let params = lock(states).lend(&endpoint, now)?;
        let loan = Loan {
            states: states.clone(),
            endpoint,
            spent: false,
        };
        Some((params, loan))
    }

    /// The handshake completed: the set is used up.
    pub fn spend(mut self) {
        lock(&self.states).spend(&self.endpoint);
        self.spent = true;
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        if !self.spent {
            lock(&self.states).give_back(&self.endpoint);
        }
    }
}

/// Locks the store, also one a panicking task left poisoned (its tables stay consistent).
fn lock(states: &Mutex<SavedStates>) -> std::sync::MutexGuard<'_, SavedStates> {
    states.lock().unwrap_or_else(|e| e.into_inner())
}
