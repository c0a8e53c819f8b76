//! The servers' address-validation tokens (NEW_TOKEN, RFC 9000 Sec. 8.1.3) a client keeps
//! to present on its next connection, so that the server answers at once instead of
//! sending a Retry first.
//!
//! quinn asks a `TokenStore` for a token by server name only; [`ServerTokens`] is the view
//! of one run, which adds the server's address, so two servers behind one name (or one
//! `localhost`) never get each other's tokens. Each token is handed out once (Sec. 8.1.3:
//! reusing one would let an observer link the connections). The store is bounded: at
//! most [`TOKENS_PER_SERVER`] per server (quinn's own cache keeps two), at most
//! [`TOKEN_SERVERS`] servers (the one used longest ago makes room), tokens of at most
//! [`TOKEN_MAX_BYTES`] (quinn's are about 70), each dropped [`TOKEN_KEEP`] after it came.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::lock;
use crate::persist::from_unix_ms;

/// Tokens kept per server.
pub const TOKENS_PER_SERVER: usize = 2;
/// Servers whose tokens are kept.
pub const TOKEN_SERVERS: usize = 256;
/// The longest token kept, bytes.
pub const TOKEN_MAX_BYTES: usize = 512;
/// The longest server name kept (a DNS name has at most 253 characters).
pub const SERVER_NAME_MAX_BYTES: usize = 253;
/// How long a token is kept: as long as `satquic server` accepts one
/// ([`TOKEN_LIFETIME`](crate::server::TOKEN_LIFETIME), one hour). Presented later, it would
/// cost what no token costs, a Retry, and leave one fewer fresh token to present.
pub const TOKEN_KEEP: Duration = crate::server::TOKEN_LIFETIME;
/// The longest line of a token in the client's file: a server name of 253 bytes, an IPv6
/// socket address with a scope, a token of [`TOKEN_MAX_BYTES`] in hex and two times.
pub const TOKEN_ENTRY_MAX_BYTES: u64 = 1536;

/// Which server a token is for: the name quinn gave it (TLS SNI) and its address.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ServerKey {
    name: String,
    address: SocketAddr,
}

/// A token, when it came and until when it is presented.
#[derive(Debug, Clone)]
struct Kept {
    token: Bytes,
    received_at: SystemTime,
    expires_at: SystemTime,
}

impl Kept {
    /// Whether it may be presented at `now` (not if it came in the future: a clock
    /// stepped back).
    fn fresh(&self, now: SystemTime) -> bool {
        self.received_at <= now && now < self.expires_at
    }
}

/// One token as written to the client's file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// The server's name (TLS SNI).
    pub server: String,
    /// The server's address and port.
    pub address: SocketAddr,
    /// The token, in hex.
    pub token: String,
    /// When the client received it, milliseconds since the Unix epoch.
    pub received_at_unix_ms: u64,
    /// When the client stops presenting it (at most [`TOKEN_KEEP`] later).
    pub expires_at_unix_ms: u64,
}

/// The tokens of every server, bounded. See the module docs.
#[derive(Debug, Default)]
pub struct SavedTokens {
    servers: Mutex<BTreeMap<ServerKey, Vec<Kept>>>,
}

impl SavedTokens {
    /// The view quinn is given for a run against the server at `address`.
    pub(super) fn for_server(self: &Arc<Self>, address: SocketAddr) -> ServerTokens {
        ServerTokens {
            saved: self.clone(),
            address,
        }
    }

    /// Keeps `token` for `key`, within the bounds.
    fn insert(&self, key: ServerKey, kept: Kept) {
        let token = &kept.token;
        if token.is_empty()
            || token.len() > TOKEN_MAX_BYTES
            || key.name.len() > SERVER_NAME_MAX_BYTES
        {
            return;
        }
        let mut servers = lock(&self.servers);
        if !servers.contains_key(&key) && servers.len() >= TOKEN_SERVERS {
            let stalest = servers
                .iter()
                .min_by_key(|(_, kept)| kept.iter().map(|k| k.received_at).max())
                .map(|(k, _)| k.clone());
            if let Some(stalest) = stalest {
                servers.remove(&stalest);
            }
        }
        let tokens = servers.entry(key).or_default();
        if tokens.len() >= TOKENS_PER_SERVER {
            tokens.remove(0);
        }
        tokens.push(kept);
    }

    /// The newest token for `key` still within [`TOKEN_KEEP`] at `now`, taken.
    fn take(&self, key: &ServerKey, now: SystemTime) -> Option<Bytes> {
        let mut servers = lock(&self.servers);
        let kept = servers.get_mut(key)?;
        kept.retain(|k| k.fresh(now));
        let token = kept.pop().map(|k| k.token);
        if kept.is_empty() {
            servers.remove(key);
        }
        token
    }

    /// Every token kept at `now`, as entries (expired ones left out).
    pub fn entries(&self, now: SystemTime) -> Vec<TokenEntry> {
        let servers = lock(&self.servers);
        let mut entries = Vec::new();
        for (key, kept) in servers.iter() {
            for k in kept.iter().filter(|k| k.fresh(now)) {
                entries.push(TokenEntry {
                    server: key.name.clone(),
                    address: key.address,
                    token: hex(&k.token),
                    received_at_unix_ms: crate::unix_ms(k.received_at),
                    expires_at_unix_ms: crate::unix_ms(k.expires_at),
                });
            }
        }
        entries
    }

    /// The tokens of `entries` (read from a file) still fresh at `now`, within the bounds.
    /// An entry that cannot be a token is an error naming it.
    pub fn from_entries(entries: &[TokenEntry], now: SystemTime) -> Result<Self, String> {
        let saved = SavedTokens::default();
        for (i, e) in entries.iter().enumerate() {
            let bad = |why: &str| format!("token {} has {why}", i + 1);
            let token = unhex(&e.token).ok_or_else(|| bad("a token that is not hex"))?;
            if token.is_empty() || token.len() > TOKEN_MAX_BYTES {
                return Err(bad("an empty or oversized token"));
            }
            if e.server.len() > SERVER_NAME_MAX_BYTES {
                return Err(bad("a server name above 253 bytes"));
            }
            let (Some(received_at), Some(expires_at)) = (
                from_unix_ms(e.received_at_unix_ms),
                from_unix_ms(e.expires_at_unix_ms),
            ) else {
                return Err(bad("a time out of range"));
            };
            let kept = Kept {
                token: Bytes::from(token),
                received_at,
                expires_at: expires_at.min(received_at + TOKEN_KEEP),
            };
            if kept.fresh(now) {
                let key = ServerKey {
                    name: e.server.clone(),
                    address: e.address,
                };
                saved.insert(key, kept);
            }
        }
        Ok(saved)
    }
}

/// A token that came at `now`, presented for [`TOKEN_KEEP`].
fn received(token: Bytes, now: SystemTime) -> Kept {
    Kept {
        token,
        received_at: now,
        expires_at: now + TOKEN_KEEP,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    // Digits only: from_str_radix would also take a sign ("+f").
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What quinn sees of [`SavedTokens`] for one run: the tokens of the server at one
/// address.
pub(super) struct ServerTokens {
    saved: Arc<SavedTokens>,
    address: SocketAddr,
}

impl ServerTokens {
    fn key(&self, server_name: &str) -> ServerKey {
        ServerKey {
            name: server_name.to_string(),
            address: self.address,
        }
    }
}

impl quinn_proto::TokenStore for ServerTokens {
    fn insert(&self, server_name: &str, token: Bytes) {
        self.saved
            .insert(self.key(server_name), received(token, SystemTime::now()));
    }

    fn take(&self, server_name: &str) -> Option<Bytes> {
        self.saved.take(&self.key(server_name), SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::TokenStore;

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
    }

    fn key(name: &str, port: u16) -> ServerKey {
        ServerKey {
            name: name.into(),
            address: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    #[test]
    fn a_token_is_for_one_server_and_taken_once() {
        let saved = Arc::new(SavedTokens::default());
        let a = saved.for_server(SocketAddr::from(([127, 0, 0, 1], 4433)));
        let b = saved.for_server(SocketAddr::from(([127, 0, 0, 1], 4434)));
        a.insert("localhost", Bytes::from_static(b"one"));
        assert_eq!(b.take("localhost"), None, "another port, another server");
        assert_eq!(a.take("other"), None, "another name");
        assert_eq!(a.take("localhost"), Some(Bytes::from_static(b"one")));
        assert_eq!(a.take("localhost"), None, "taken once");
    }

    #[test]
    fn tokens_are_bounded_and_expire() {
        let saved = SavedTokens::default();
        for i in 0..5u8 {
            saved.insert(key("s", 1), received(Bytes::from(vec![i]), t0()));
        }
        assert_eq!(saved.entries(t0()).len(), TOKENS_PER_SERVER);
        assert_eq!(
            saved.take(&key("s", 1), t0()),
            Some(Bytes::from(vec![4])),
            "newest"
        );
        for port in 0..TOKEN_SERVERS as u16 + 10 {
            saved.insert(
                key("s", 100 + port),
                received(
                    Bytes::from_static(b"t"),
                    t0() + Duration::from_secs(port.into()),
                ),
            );
        }
        let now = t0() + Duration::from_secs(1000);
        assert_eq!(saved.entries(now).len(), TOKEN_SERVERS);
        let big = received(Bytes::from(vec![0; TOKEN_MAX_BYTES + 1]), t0());
        saved.insert(key("big", 1), big);
        assert!(
            saved.take(&key("big", 1), now).is_none(),
            "too long to keep"
        );
        let later = t0() + TOKEN_KEEP + Duration::from_secs(3600);
        assert!(saved.entries(later).is_empty());
        // Kept exactly as long as satquic server accepts one (before: 24 h against 1 h).
        assert_eq!(TOKEN_KEEP, crate::server::TOKEN_LIFETIME);
        let old = t0() + TOKEN_KEEP;
        saved.insert(key("s", 1), received(Bytes::from_static(b"t"), t0()));
        assert!(
            saved.take(&key("s", 1), old).is_none(),
            "as old as the server's limit"
        );
        assert!(saved.take(&key("s", 200), later).is_none(), "expired");
    }

    #[test]
    fn entries_round_trip_and_bad_ones_are_refused() {
        let saved = SavedTokens::default();
        saved.insert(
            key("localhost", 4433),
            received(Bytes::from_static(&[0, 1, 0xfe, 0xff]), t0()),
        );
        let entries = saved.entries(t0());
        assert_eq!(entries[0].token, "0001feff");
        let back = SavedTokens::from_entries(&entries, t0()).unwrap();
        assert_eq!(back.entries(t0()), entries);
        for token in ["0g", "abc", "", "+f"] {
            let bad = TokenEntry {
                token: token.into(),
                ..entries[0].clone()
            };
            let e = SavedTokens::from_entries(&[entries[0].clone(), bad], t0()).unwrap_err();
            assert!(e.starts_with("token 2 has"), "{e}");
        }
    }

    #[test]
    fn the_longest_token_entry_fits_its_bound() {
        let entry = TokenEntry {
            server: "a".repeat(SERVER_NAME_MAX_BYTES),
            address: "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff%4294967295]:65535"
                .parse()
                .unwrap(),
            token: "ff".repeat(TOKEN_MAX_BYTES),
            received_at_unix_ms: u64::MAX,
            expires_at_unix_ms: u64::MAX,
        };
        let len = serde_json::to_string(&entry).unwrap().len() as u64;
        assert!(len <= TOKEN_ENTRY_MAX_BYTES, "{len}");
    }
}
