//! The server's record of used address-validation tokens (RFC 9000 Sec. 8.1.4: a token
//! from a NEW_TOKEN frame may be used once). quinn-proto's own log (`BloomTokenLog`) needs
//! its `bloom` feature, which the workspace leaves off (one dependency less); without a
//! log quinn ignores every token. This one keeps the nonces it has seen, each until its
//! token expires, and at most a fixed number of them: when full it refuses new tokens,
//! which costs those clients a round trip (the server then treats them as new), never a
//! replay.
//!
//! A server whose token key outlives it must carry the record over to its successor, or a
//! captured token is accepted once more after every restart: [`SingleUseTokenLog::used`]
//! lists what to keep, [`SingleUseTokenLog::restore`] starts from it, and
//! [`SingleUseTokenLog::changes`] tells a writer whether there is anything new. When the
//! record may be incomplete (its predecessor stopped without writing it last), `restore`
//! refuses every token issued before a given time: those clients pay a Retry, and no
//! token used after the record's last write is accepted again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Tokens a server log holds unless told otherwise.
pub const DEFAULT_TOKEN_LOG_CAPACITY: usize = 1 << 16;

/// Single-use nonces, bounded. See the module docs.
#[derive(Debug)]
pub struct SingleUseTokenLog {
    inner: Mutex<Seen>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Seen {
    nonces: BTreeSet<u128>,
    /// (expiry, nonce), to forget expired ones in order.
    by_expiry: BTreeMap<(SystemTime, u128), ()>,
    /// The latest issue time seen: the clock has passed it.
    newest_issued: Option<SystemTime>,
    /// Tokens issued before this are refused whatever their nonce.
    refuse_issued_before: Option<SystemTime>,
    /// Tokens accepted (nonces recorded) so far.
    changes: u64,
}

impl SingleUseTokenLog {
    /// A log of at most `capacity` live tokens.
    pub fn new(capacity: usize) -> Self {
        SingleUseTokenLog {
            inner: Mutex::new(Seen::default()),
            capacity,
        }
    }

    /// A log of at most `capacity` live tokens that starts with `used` (nonce and expiry
    /// of each token already accepted) and refuses every token issued before
    /// `refuse_issued_before`.
    pub fn restore(
        capacity: usize,
        used: impl IntoIterator<Item = (u128, SystemTime)>,
        refuse_issued_before: Option<SystemTime>,
    ) -> Self {
        let mut seen = Seen {
            refuse_issued_before,
            ..Seen::default()
        };
        for (nonce, expiry) in used.into_iter().take(capacity) {
            if seen.nonces.insert(nonce) {
                seen.by_expiry.insert((expiry, nonce), ());
            }
        }
        SingleUseTokenLog {
            inner: Mutex::new(seen),
            capacity,
        }
    }

    /// The nonce and expiry of every token accepted and not forgotten, in order of expiry.
    pub fn used(&self) -> Vec<(u128, SystemTime)> {
        self.seen()
            .by_expiry
            .keys()
            .map(|&(expiry, nonce)| (nonce, expiry))
            .collect()
    }

    /// How many tokens were accepted since the log was made: a writer that remembers the
    /// count it wrote knows whether to write again.
    pub fn changes(&self) -> u64 {
        self.seen().changes
    }

    /// Tokens held now.
    pub fn len(&self) -> usize {
        self.seen().nonces.len()
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True if no token is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for SingleUseTokenLog {
    fn default() -> Self {
        Self::new(DEFAULT_TOKEN_LOG_CAPACITY)
    }
}

impl quinn_proto::TokenLog for SingleUseTokenLog {
    fn check_and_insert(
        &self,
        nonce: u128,
        issued: SystemTime,
        lifetime: Duration,
    ) -> Result<(), quinn_proto::TokenReuseError> {
        let mut seen = self.seen();
        if seen.refuse_issued_before.is_some_and(|t| issued < t) {
            return Err(quinn_proto::TokenReuseError);
        }
        let newest = seen.newest_issued.map_or(issued, |n| n.max(issued));
        seen.newest_issued = Some(newest);
        // Tokens that expired before the newest one was issued can no longer be presented.
        while let Some((&(expiry, old), ())) = seen.by_expiry.first_key_value() {
            if expiry >= newest {
                break;
            }
            seen.by_expiry.remove(&(expiry, old));
            seen.nonces.remove(&old);
        }
        if seen.nonces.contains(&nonce) || seen.nonces.len() >= self.capacity {
            return Err(quinn_proto::TokenReuseError);
        }
        seen.nonces.insert(nonce);
        seen.by_expiry.insert((issued + lifetime, nonce), ());
        seen.changes += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::TokenLog;

    #[test]
    fn a_token_is_used_once_and_forgotten_when_it_expires() {
        let log = SingleUseTokenLog::new(2);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Duration::from_secs(3600);
        assert!(log.check_and_insert(1, t0, hour).is_ok());
        assert!(log.check_and_insert(1, t0, hour).is_err(), "reused");
        assert!(log.check_and_insert(2, t0, hour).is_ok());
        assert!(log.check_and_insert(3, t0, hour).is_err(), "full");
        // Two hours later 1 and 2 have expired: room again, and 1 is forgotten (quinn
        // refuses an expired token before it asks the log).
        let later = t0 + 2 * hour;
        assert!(log.check_and_insert(3, later, hour).is_ok());
        assert_eq!(log.len(), 1);
        assert!(log.check_and_insert(3, later, hour).is_err());
    }

    /// A restored log refuses the tokens its predecessor accepted, and, when told, every
    /// token issued before a time; it goes on recording new ones.
    #[test]
    fn a_restored_log_refuses_what_its_predecessor_accepted() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Duration::from_secs(3600);
        let first = SingleUseTokenLog::new(8);
        assert!(first.check_and_insert(1, t0, hour).is_ok());
        assert!(first.check_and_insert(2, t0, hour).is_ok());
        assert_eq!(first.changes(), 2);
        assert_eq!(first.used(), [(1, t0 + hour), (2, t0 + hour)]);

        let next = SingleUseTokenLog::restore(8, first.used(), None);
        assert_eq!(next.changes(), 0);
        assert!(next.check_and_insert(1, t0, hour).is_err(), "replayed");
        assert!(next.check_and_insert(3, t0, hour).is_ok(), "never used");
        assert_eq!(next.changes(), 1);

        let after_a_crash = SingleUseTokenLog::restore(8, first.used(), Some(t0));
        let before = t0 - Duration::from_secs(1);
        assert!(after_a_crash.check_and_insert(4, before, hour).is_err());
        assert!(after_a_crash.check_and_insert(5, t0, hour).is_ok());
    }
}
