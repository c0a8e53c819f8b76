//! Careful Resume's saved parameters (RFC 9959 Sec. 2.4, 3.1) as a sender keeps them: a
//! bounded store, one set per Remote Endpoint (Sec. 2.2: the local and the peer's IP
//! address, no port), and the entry each set is written as.
//!
//! An entry, one JSON object per line of the file:
//!
//! ```text
//! {"local":"10.0.0.1","remote":"10.0.0.2","saved_cwnd_bytes":2400000,"saved_rtt_us":600123,
//!  "saved_at_unix_ms":1767225600000,"expires_at_unix_ms":1767229200000}
//! ```
//!
//! `local` is `null` where the sender could not tell its interface; `dscp` (0-63) appears
//! only for a set saved for one. `expires_at_unix_ms` is `saved_at` plus the Lifetime (Sec.
//! 4.3.1): from then on the set is not used, and it is dropped when the file is read. A
//! set saved in the future (a clock stepped back) is treated as expired, as in memory.
//!
//! A file is read as input, not trusted: an entry whose window is 0 or above
//! [`SAVED_CWND_MAX_BYTES`], whose RTT is 0 or above [`SAVED_RTT_MAX_US`], or whose Lifetime
//! is longer than the store keeps a set, refuses the whole file with one line naming the
//! entry. The writer saves only what its reader accepts: a window of 0 (an observation
//! `cr:min-observe=0` lets through) or out of range is not saved, an RTT is rounded up to
//! whole microseconds (so one under 1 µs is saved as 1 µs), and a Lifetime longer than the
//! store keeps a set is saved as that longest one.
//!
//! [`SavedStates`] wraps satquic-cc's [`SavedStateStore`] (its capacity, its oldest-first
//! eviction, its Lifetime checks) and remembers which endpoints hold a set, since that
//! store lists none; [`SavedStates::changes`] tells a writer whether there is anything new
//! to write. A set is lent to a connection until its handshake ends ([`Loan`]), and one
//! IPv6 /64 keeps at most [`SAVED_PER_PREFIX`] sets: a host holds a whole /64 and can send
//! from any of its addresses, and would otherwise evict every other client's set.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use satquic_cc::{RemoteEndpoint, ResumeParams, ResumeRejected, SavedCcParams, SavedStateStore};
use serde::{Deserialize, Serialize};

use super::from_unix_ms;

pub use super::loan::Loan;

/// The longest an entry's line can be: two IPv6 addresses of 39 characters, a DSCP and
/// four 20-digit numbers come to 270 bytes (a test writes that entry).
pub const SAVED_ENTRY_MAX_BYTES: u64 = 272;

/// The most sets one IPv6 /64 keeps (a household's or a host's addresses); the set saved
/// longest ago in the /64 makes room. 256 such prefixes fill the server's 4,096.
pub const SAVED_PER_PREFIX: usize = 16;

/// The highest DSCP (six bits, RFC 2474).
const DSCP_MAX: u8 = 63;

/// The largest saved window accepted: 64 GiB, what a 1 Tbit/s path holds over a 500 ms
/// round trip. Far above any path satquic models; a bound so that a hand-edited
/// `u64::MAX` is refused rather than handed to the controller.
pub const SAVED_CWND_MAX_BYTES: u64 = 1 << 36;

/// The longest saved (minimum) RTT accepted, microseconds: one minute, twice quinn's idle
/// timeout of 30 s, over which no handshake completes.
pub const SAVED_RTT_MAX_US: u64 = 60_000_000;

/// One saved set as written to a file. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedEntry {
    /// The sender's local address (the interface of Sec. 2.2); `None`: unknown.
    pub local: Option<IpAddr>,
    /// The peer's address, without port (Sec. 2.2).
    pub remote: IpAddr,
    /// The DSCP the set was saved for, if any (Sec. 2.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// Sec. 2.4 `saved_cwnd`.
    pub saved_cwnd_bytes: u64,
    /// Sec. 2.4 `saved_rtt`, microseconds.
    pub saved_rtt_us: u64,
    /// When the set was saved, milliseconds since the Unix epoch.
    pub saved_at_unix_ms: u64,
    /// When it stops being usable: `saved_at` plus the Lifetime (Sec. 4.3.1).
    pub expires_at_unix_ms: u64,
}

impl SavedEntry {
    /// The entry of `params`.
    pub fn of(params: &SavedCcParams) -> Self {
        let endpoint = params.saved_remote_endpoint;
        let saved_at = crate::unix_ms(params.saved_at);
        let lifetime_ms = u64::try_from(params.lifetime.as_millis()).unwrap_or(u64::MAX);
        SavedEntry {
            local: endpoint.local,
            remote: endpoint.remote,
            dscp: endpoint.dscp,
            saved_cwnd_bytes: params.saved_cwnd,
            // Rounded up: an RTT under 1 µs is saved as 1 µs, not as the 0 a reader refuses.
            saved_rtt_us: u64::try_from(params.saved_rtt.as_nanos().div_ceil(1000))
                .unwrap_or(u64::MAX),
            saved_at_unix_ms: saved_at,
            expires_at_unix_ms: saved_at.saturating_add(lifetime_ms),
        }
    }

    /// The saved set this entry describes, or why it cannot be one: each value within its
    /// range, and a Lifetime of at most `max_lifetime`.
    pub fn params(&self, max_lifetime: Duration) -> Result<SavedCcParams, String> {
        if self.dscp.is_some_and(|d| d > DSCP_MAX) {
            return Err(format!("a DSCP above {DSCP_MAX}"));
        }
        if !(1..=SAVED_CWND_MAX_BYTES).contains(&self.saved_cwnd_bytes) {
            return Err(format!(
                "a saved_cwnd_bytes of {}, outside 1 to {SAVED_CWND_MAX_BYTES}",
                self.saved_cwnd_bytes
            ));
        }
        if !(1..=SAVED_RTT_MAX_US).contains(&self.saved_rtt_us) {
            return Err(format!(
                "a saved_rtt_us of {}, outside 1 to {SAVED_RTT_MAX_US}",
                self.saved_rtt_us
            ));
        }
        let lifetime_ms = self
            .expires_at_unix_ms
            .checked_sub(self.saved_at_unix_ms)
            .ok_or("an expiry before its saving")?;
        let lifetime = Duration::from_millis(lifetime_ms);
        if lifetime > max_lifetime {
            return Err(format!(
                "a Lifetime of {lifetime_ms} ms (expires_at_unix_ms - saved_at_unix_ms), \
                 above the {} ms a set is kept",
                max_lifetime.as_millis()
            ));
        }
        let saved_at = from_unix_ms(self.saved_at_unix_ms).ok_or("a time out of range")?;
        let mut endpoint = RemoteEndpoint::new(self.local, self.remote);
        endpoint.dscp = self.dscp;
        Ok(SavedCcParams {
            saved_cwnd: self.saved_cwnd_bytes,
            saved_rtt: Duration::from_micros(self.saved_rtt_us),
            saved_remote_endpoint: endpoint,
            saved_at,
            lifetime,
        })
    }

    /// The entry's line.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an entry serializes")
    }
}

/// A bounded store of saved sets that can be written out and read back. See the module
/// docs.
#[derive(Debug, Clone)]
pub struct SavedStates {
    store: SavedStateStore,
    /// The endpoints given a set and not taken since: a superset of those in `store`
    /// (its eviction is silent), pruned when listed or when twice the capacity.
    endpoints: BTreeSet<RemoteEndpoint>,
    capacity: usize,
    /// The longest a set is kept, whatever its own Lifetime.
    max_lifetime: Duration,
    /// The endpoints whose set is lent to a connection whose handshake is under way, with
    /// the lent set's saving time (a set saved since is another one).
    lent: BTreeMap<RemoteEndpoint, SystemTime>,
    /// How many times a set was saved or spent.
    changes: u64,
}

impl SavedStates {
    /// At most `capacity` sets, none used beyond `max_lifetime` whatever its own Lifetime.
    pub fn new(capacity: usize, max_lifetime: Duration) -> Self {
        SavedStates {
            store: SavedStateStore::new(capacity, max_lifetime),
            endpoints: BTreeSet::new(),
            capacity,
            max_lifetime,
            lent: BTreeMap::new(),
            changes: 0,
        }
    }

    /// The store of `entries` (read from a file) at wall-clock `now`: expired sets
    /// dropped, at most `capacity` kept (the most recently saved). An entry that cannot
    /// be a saved set is an error naming it.
    pub fn from_entries(
        entries: &[SavedEntry],
        capacity: usize,
        max_lifetime: Duration,
        now: SystemTime,
    ) -> Result<Self, String> {
        let mut states = SavedStates::new(capacity, max_lifetime);
        for (i, entry) in entries.iter().enumerate() {
            let params = entry
                .params(max_lifetime)
                .map_err(|why| format!("entry {} has {why}", i + 1))?;
            states.save(params);
        }
        states.store.purge_expired(now);
        states.prune();
        states.changes = 0;
        Ok(states)
    }

    /// The set for `endpoint`, checked for the path and the Lifetime at wall-clock `now`,
    /// lent to one connection: it stays in the store (and its file) but no other
    /// connection gets it until [`spend`](Self::spend) removes it or
    /// [`give_back`](Self::give_back) returns it (Sec. 3.2: a set serves one connection).
    /// An expired set is removed. Use it through [`Loan::lend`].
    pub(super) fn lend(
        &mut self,
        endpoint: &RemoteEndpoint,
        now: SystemTime,
    ) -> Option<ResumeParams> {
        if self.lent.contains_key(endpoint) {
            return None;
        }
        match self.store.check(endpoint, now) {
            Ok(params) => {
                let saved_at = self.store.get(endpoint)?.saved_at;
                self.lent.insert(*endpoint, saved_at);
                Some(params)
            }
            Err(ResumeRejected::NotSaved) => None,
            Err(_) => {
                self.remove(endpoint);
                None
            }
        }
    }

    /// The connection `endpoint`'s set was lent to completed its handshake: the set is
    /// used up (unless a newer one was saved meanwhile, which stays).
    pub(super) fn spend(&mut self, endpoint: &RemoteEndpoint) {
        let Some(saved_at) = self.lent.remove(endpoint) else {
            return;
        };
        if self
            .store
            .get(endpoint)
            .is_some_and(|p| p.saved_at == saved_at)
        {
            self.remove(endpoint);
        }
    }

    /// The connection `endpoint`'s set was lent to ended before its handshake completed:
    /// the set is there for the next one.
    pub(super) fn give_back(&mut self, endpoint: &RemoteEndpoint) {
        self.lent.remove(endpoint);
    }

    fn remove(&mut self, endpoint: &RemoteEndpoint) {
        self.store.remove(endpoint);
        self.endpoints.remove(endpoint);
        self.changes += 1;
    }

    /// Keeps `params`, replacing the set of its endpoint (Sec. 3.1 "Updating"); when
    /// full, the set saved longest ago makes room. Its Lifetime is cut to the longest the
    /// store keeps a set; a set a reader of the file would refuse (a window of 0 or out of
    /// range, an RTT of 0 or out of range) is not kept.
    pub fn save(&mut self, mut params: SavedCcParams) {
        params.lifetime = params.lifetime.min(self.max_lifetime);
        if self.capacity == 0 || SavedEntry::of(&params).params(self.max_lifetime).is_err() {
            return;
        }
        self.make_room_in_prefix(&params.saved_remote_endpoint);
        self.endpoints.insert(params.saved_remote_endpoint);
        self.store.save(params);
        self.changes += 1;
        if self.endpoints.len() > self.capacity.saturating_mul(2) {
            self.prune();
        }
    }

    /// Every set kept, as entries in endpoint order (expired ones included: a reader
    /// drops them).
    pub fn entries(&mut self) -> Vec<SavedEntry> {
        self.prune();
        self.endpoints
            .iter()
            .filter_map(|e| self.store.get(e))
            .map(SavedEntry::of)
            .collect()
    }

    /// Sets kept.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// How many times a set was saved or spent since this store was made or read: a
    /// writer that remembers the count it wrote knows whether to write again.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// Forgets the endpoints whose set the store evicted.
    fn prune(&mut self) {
        let store = &self.store;
        self.endpoints.retain(|e| store.get(e).is_some());
    }

    /// Before a set for `endpoint` is saved: if its IPv6 /64 already holds
    /// [`SAVED_PER_PREFIX`] sets of other endpoints, the oldest of them go.
    fn make_room_in_prefix(&mut self, endpoint: &RemoteEndpoint) {
        let Some(prefix) = ipv6_prefix(endpoint.remote) else {
            return;
        };
        let mut same: Vec<(SystemTime, RemoteEndpoint)> = self
            .endpoints
            .iter()
            .filter(|e| *e != endpoint && ipv6_prefix(e.remote) == Some(prefix))
            .filter_map(|e| self.store.get(e).map(|p| (p.saved_at, *e)))
            .collect();
        if same.len() < SAVED_PER_PREFIX {
            return;
        }
        same.sort();
        for (_, oldest) in &same[..=same.len() - SAVED_PER_PREFIX] {
            self.remove(oldest);
        }
    }
}

/// The /64 of an IPv6 address (`None` for IPv4, also written as IPv4-mapped IPv6).
fn ipv6_prefix(address: IpAddr) -> Option<u64> {
    match address.to_canonical() {
        IpAddr::V6(v6) => Some((u128::from(v6) >> 64) as u64),
        IpAddr::V4(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const HOUR: Duration = Duration::from_secs(3600);

    fn params(remote: [u8; 4], at: SystemTime) -> SavedCcParams {
        SavedCcParams {
            saved_cwnd: 1_000_000,
            saved_rtt: Duration::from_millis(600),
            saved_remote_endpoint: RemoteEndpoint::new(
                Some(IpAddr::from([10, 0, 0, 1])),
                IpAddr::from(remote),
            ),
            saved_at: at,
            lifetime: HOUR,
        }
    }

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
    }

    #[test]
    fn an_entry_carries_a_set_and_its_expiry() {
        let p = params([10, 0, 0, 2], t0());
        let entry = SavedEntry::of(&p);
        assert_eq!(entry.expires_at_unix_ms - entry.saved_at_unix_ms, 3_600_000);
        let line = entry.to_line();
        let back: SavedEntry = serde_json::from_str(&line).unwrap();
        assert_eq!(back.params(HOUR).unwrap(), p);
        assert!(!line.contains("dscp"), "{line}");
    }

    #[test]
    fn the_longest_entry_fits_its_bound() {
        let v6 = IpAddr::from(Ipv6Addr::new(
            0xffff, 0xfffe, 0xfffd, 0xfffc, 0xfffb, 0xfffa, 0xfff9, 0xfff8,
        ));
        let entry = SavedEntry {
            local: Some(v6),
            remote: v6,
            dscp: Some(63),
            saved_cwnd_bytes: u64::MAX,
            saved_rtt_us: u64::MAX,
            saved_at_unix_ms: u64::MAX,
            expires_at_unix_ms: u64::MAX,
        };
        let len = entry.to_line().len() as u64;
        assert!(len <= SAVED_ENTRY_MAX_BYTES, "{len}");
        assert!(
            len + 16 > SAVED_ENTRY_MAX_BYTES,
            "the bound is tight: {len}"
        );
    }

    #[test]
    fn entries_that_cannot_be_sets_are_refused() {
        let good = SavedEntry::of(&params([10, 0, 0, 2], t0()));
        for bad in [
            SavedEntry {
                dscp: Some(64),
                ..good.clone()
            },
            SavedEntry {
                saved_rtt_us: 0,
                ..good.clone()
            },
            SavedEntry {
                saved_cwnd_bytes: 0,
                ..good.clone()
            },
            SavedEntry {
                expires_at_unix_ms: good.saved_at_unix_ms - 1,
                ..good.clone()
            },
            // Hand-edited beyond what any path holds or any store keeps.
            SavedEntry {
                saved_cwnd_bytes: u64::MAX,
                ..good.clone()
            },
            SavedEntry {
                saved_cwnd_bytes: SAVED_CWND_MAX_BYTES + 1,
                ..good.clone()
            },
            SavedEntry {
                saved_rtt_us: u64::MAX,
                ..good.clone()
            },
            SavedEntry {
                saved_rtt_us: SAVED_RTT_MAX_US + 1,
                ..good.clone()
            },
            SavedEntry {
                expires_at_unix_ms: u64::MAX,
                ..good.clone()
            },
            SavedEntry {
                expires_at_unix_ms: good.saved_at_unix_ms + 3_600_001,
                ..good.clone()
            },
        ] {
            let e = SavedStates::from_entries(&[good.clone(), bad], 8, HOUR, t0()).unwrap_err();
            assert!(e.starts_with("entry 2 has"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let longest = SavedEntry {
            saved_cwnd_bytes: SAVED_CWND_MAX_BYTES,
            saved_rtt_us: SAVED_RTT_MAX_US,
            ..good.clone()
        };
        assert!(SavedStates::from_entries(&[longest], 8, HOUR, t0()).is_ok());
    }

    /// Whatever a connection observed, the store keeps only what a reader of its file
    /// accepts (before, an observation of 0 bytes, an RTT under 1 µs and a Lifetime longer
    /// than the store keeps were written, and the next start refused the file or kept the
    /// set for its own Lifetime).
    #[test]
    fn the_writer_saves_only_what_its_reader_accepts() {
        let observed = |cwnd: u64, rtt: Duration, lifetime: Duration| SavedCcParams {
            saved_cwnd: cwnd,
            saved_rtt: rtt,
            lifetime,
            ..params([10, 0, 0, 2], t0())
        };
        let day = 24 * HOUR;
        let ms = Duration::from_millis(600);
        for (set, kept) in [
            (observed(0, ms, HOUR), false),
            (observed(SAVED_CWND_MAX_BYTES + 1, ms, HOUR), false),
            (observed(1_000_000, Duration::ZERO, HOUR), false),
            (observed(1_000_000, Duration::from_secs(61), HOUR), false),
            (observed(1_000_000, Duration::from_nanos(400), HOUR), true),
            (observed(1_000_000, ms, day), true),
        ] {
            let mut states = SavedStates::new(8, HOUR);
            states.save(set.clone());
            let entries = states.entries();
            assert_eq!(entries.len(), usize::from(kept), "{set:?}");
            let read = SavedStates::from_entries(&entries, 8, HOUR, t0());
            assert!(read.is_ok(), "{set:?}: {read:?}");
            if let Some(entry) = entries.first() {
                assert!(entry.saved_rtt_us >= 1);
                assert!(entry.expires_at_unix_ms - entry.saved_at_unix_ms <= 3_600_000);
            }
        }
    }

    #[test]
    fn reading_drops_expired_sets_and_keeps_the_newest_within_the_bound() {
        let entries: Vec<SavedEntry> = (0..5u8)
            .map(|i| {
                SavedEntry::of(&params(
                    [10, 0, 0, i],
                    t0() + Duration::from_secs(u64::from(i)),
                ))
            })
            .collect();
        // Three fit: the two saved first make room.
        let now = t0() + Duration::from_secs(10);
        let mut states = SavedStates::from_entries(&entries, 3, HOUR, now).unwrap();
        assert_eq!(states.len(), 3);
        assert_eq!(states.changes(), 0, "reading is no change");
        let kept: Vec<IpAddr> = states.entries().iter().map(|e| e.remote).collect();
        assert_eq!(kept, [2, 3, 4].map(|i| IpAddr::from([10, 0, 0, i])));
        // An hour and two seconds later, the first three have expired.
        let later = t0() + HOUR + Duration::from_secs(2);
        let states = SavedStates::from_entries(&entries, 8, HOUR, later).unwrap();
        assert_eq!(states.len(), 2);
    }

    fn shared(states: SavedStates) -> std::sync::Arc<std::sync::Mutex<SavedStates>> {
        std::sync::Arc::new(std::sync::Mutex::new(states))
    }

    fn len(states: &std::sync::Mutex<SavedStates>) -> usize {
        states.lock().unwrap().entries().len()
    }

    #[test]
    fn a_set_serves_one_connection_and_every_change_counts() {
        let mut states = SavedStates::new(2, HOUR);
        let p = params([10, 0, 0, 2], t0());
        let endpoint = p.saved_remote_endpoint;
        states.save(p);
        assert_eq!(states.changes(), 1);
        let states = shared(states);
        let (_, loan) = Loan::lend(&states, endpoint, t0()).unwrap();
        assert!(Loan::lend(&states, endpoint, t0()).is_none(), "lent");
        assert_eq!(states.lock().unwrap().changes(), 1, "lending is no change");
        assert_eq!(len(&states), 1, "a lent set stays in the file");
        loan.spend();
        assert_eq!(states.lock().unwrap().changes(), 2);
        assert!(Loan::lend(&states, endpoint, t0()).is_none(), "spent");
        assert_eq!(len(&states), 0);
    }

    /// A connection whose handshake does not complete (a spoofed Initial, a client that
    /// gave up) gives its set back: the client's next connection resumes from it.
    #[test]
    fn a_set_lent_to_a_failed_handshake_is_given_back() {
        let mut states = SavedStates::new(2, HOUR);
        let p = params([10, 0, 0, 2], t0());
        let endpoint = p.saved_remote_endpoint;
        states.save(p.clone());
        let states = shared(states);
        let (resume, loan) = Loan::lend(&states, endpoint, t0()).unwrap();
        assert_eq!(resume.saved_cwnd, p.saved_cwnd);
        drop(loan);
        assert_eq!(states.lock().unwrap().changes(), 1, "no change");
        let (_, loan) = Loan::lend(&states, endpoint, t0()).expect("given back");
        // A set saved while it was lent (another connection closed) is newer: spending
        // the lent one leaves it.
        let newer = SavedCcParams {
            saved_at: t0() + Duration::from_secs(5),
            ..p
        };
        states.lock().unwrap().save(newer);
        loan.spend();
        assert_eq!(len(&states), 1);
        // An expired set is not lent, and is removed.
        assert!(Loan::lend(&states, endpoint, t0() + 2 * HOUR).is_none());
        assert_eq!(len(&states), 0);
    }

    /// One IPv6 /64 keeps at most its share; a host with many addresses in it cannot
    /// evict the sets of other clients (before, 4,096 addresses of one /64 evicted all).
    #[test]
    fn an_ipv6_prefix_keeps_at_most_its_share() {
        let mut states = SavedStates::new(4096, HOUR);
        let others: Vec<SavedCcParams> = (0..100u8).map(|i| params([10, 0, 1, i], t0())).collect();
        for p in &others {
            states.save(p.clone());
        }
        for i in 0..5000u32 {
            let remote = Ipv6Addr::new(0x2001, 0xdb8, 0, 7, 0, 0, (i >> 16) as u16, i as u16);
            states.save(SavedCcParams {
                saved_remote_endpoint: RemoteEndpoint::new(None, IpAddr::from(remote)),
                ..params([0, 0, 0, 0], t0() + Duration::from_millis(u64::from(i) + 1))
            });
        }
        let entries = states.entries();
        assert_eq!(entries.len(), 100 + SAVED_PER_PREFIX);
        for p in &others {
            assert!(
                entries
                    .iter()
                    .any(|e| e.remote == p.saved_remote_endpoint.remote)
            );
        }
        // The newest of the /64 stay; another /64 and IPv4-mapped addresses are apart.
        let newest = IpAddr::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 7, 0, 0, 0, 4999));
        assert!(entries.iter().any(|e| e.remote == newest));
        assert_eq!(ipv6_prefix(IpAddr::from([10, 0, 0, 1])), None);
        assert_eq!(
            ipv6_prefix(IpAddr::from(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped())),
            None
        );
    }

    #[test]
    fn evicted_endpoints_are_forgotten() {
        let mut states = SavedStates::new(2, HOUR);
        for i in 0..100u8 {
            states.save(params(
                [10, 0, 1, i],
                t0() + Duration::from_secs(u64::from(i)),
            ));
            assert!(states.endpoints.len() <= 4, "{}", states.endpoints.len());
        }
        assert_eq!(states.entries().len(), 2);
        assert_eq!(states.endpoints.len(), 2);
    }
}
