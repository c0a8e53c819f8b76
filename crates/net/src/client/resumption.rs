//! What a client keeps between its connections to resume one: the TLS configuration
//! holding the server's session tickets (0-RTT), the server's address-validation tokens,
//! and, for uploads, its own Careful Resume parameters for the path (RFC 9959).
//!
//! # Across processes (`--state FILE`)
//!
//! The tokens and the saved path state can live in a file: read before the first
//! connection and written back at once, which proves the path writable before any
//! transfer ([`Resumption::load`]), then written after the last ([`Resumption::save`]). A
//! second `satquic client` process is then recognised (its token spares it the Retry)
//! and resumed (the server's Careful Resume for downloads, the client's own for uploads).
//! The TLS session cannot follow: rustls 0.23 has no way to write a TLS 1.3 client
//! session out (`Tls13ClientSessionValue` has private fields and no encoding;
//! rustls/rustls#2287), so a new process makes a full handshake, without 0-RTT.
//!
//! The file is a JSON document of [`STATE_FORMAT`], version [`STATE_VERSION`]:
//!
//! ```text
//! {"format":"satquic-client-state","version":1,
//! "tokens":[
//! {"server":"localhost","address":"127.0.0.1:4433","token":"4f1c...","received_at_unix_ms":1767225600000,"expires_at_unix_ms":1767312000000}
//! ],
//! "careful_resume":[
//! {"local":"127.0.0.1","remote":"127.0.0.1","saved_cwnd_bytes":253440,"saved_rtt_us":100412,"saved_at_unix_ms":1767225600000,"expires_at_unix_ms":1767229200000}
//! ]}
//! ```
//!
//! one entry per line ([`TokenEntry`], [`SavedEntry`]), at most [`STATE_FILE_MAX_BYTES`]
//! (858 kB). Expired entries are dropped when it is read.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use quinn::Connection;
use satquic_cc::{RemoteEndpoint, ResumeParams};
use serde::Deserialize;

use super::lock;
use super::tokens::{
    SavedTokens, TOKEN_ENTRY_MAX_BYTES, TOKEN_SERVERS, TOKENS_PER_SERVER, TokenEntry,
};
use crate::NetError;
use crate::persist::saved::{Loan, SAVED_ENTRY_MAX_BYTES, SavedEntry, SavedStates};
use crate::persist::{check_header, document, read_private, write_private};
use crate::tls::ServerVerifier;

/// The `format` of the client's state file.
pub const STATE_FORMAT: &str = "satquic-client-state";
/// The version of the state file this client reads and writes.
pub const STATE_VERSION: u32 = 1;
/// Server paths whose Careful Resume parameters the client keeps (uploads).
pub const CLIENT_SAVED_CAPACITY: usize = 256;
/// The state file's size bound: its opening and closing lines, every token the store can
/// hold and [`CLIENT_SAVED_CAPACITY`] Careful Resume entries, each at its longest, with
/// separators (857,728 bytes).
pub const STATE_FILE_MAX_BYTES: u64 = 128
    + (TOKEN_SERVERS * TOKENS_PER_SERVER) as u64 * (TOKEN_ENTRY_MAX_BYTES + 2)
    + CLIENT_SAVED_CAPACITY as u64 * (SAVED_ENTRY_MAX_BYTES + 2);

/// The state file's body.
#[derive(Deserialize)]
struct StateDocument {
    tokens: Vec<TokenEntry>,
    careful_resume: Vec<SavedEntry>,
}

/// What a client keeps between its connections to resume one: its TLS configuration,
/// whose session cache holds the server's tickets (for 0-RTT, RFC 9001 Sec. 4.6; rustls
/// resumes a session only with the configuration and certificate verifier that made it),
/// the server's address-validation tokens (NEW_TOKEN, RFC 9000 Sec. 8.1.3, which let the
/// server answer at once) and the client's own Careful Resume parameters (uploads). Share
/// one between the runs of one process, with the same server and options; with a file
/// ([`Resumption::load`]) the tokens and parameters also reach the next process.
pub struct Resumption {
    /// The TLS configuration and verifier of the first run, reused by the next.
    pub(super) tls: Mutex<Option<(Arc<rustls::ClientConfig>, Arc<ServerVerifier>)>>,
    tokens: Arc<SavedTokens>,
    /// The client's Careful Resume parameters per path, for its uploads.
    saved: Arc<Mutex<SavedStates>>,
    /// Where the tokens and parameters are kept, if anywhere.
    file: Option<PathBuf>,
}

impl Resumption {
    /// Nothing kept yet, in memory only.
    pub fn new() -> Self {
        Resumption {
            tls: Mutex::new(None),
            tokens: Arc::new(SavedTokens::default()),
            saved: Arc::new(Mutex::new(empty_saved())),
            file: None,
        }
    }

    /// What `path` keeps (nothing if it does not exist yet), to be written back there by
    /// [`Resumption::save`], and written back at once. A file that is too large or does
    /// not parse, or a path that cannot be written, is a usage error naming it.
    pub fn load(path: &Path) -> Result<Self, NetError> {
        let bad = |why: String| NetError::Usage(format!("--state {}: {why}", path.display()));
        crate::persist::prepare(path).map_err(bad)?;
        let mut resumption = Resumption::new();
        if let Some(bytes) = read_private(path, STATE_FILE_MAX_BYTES).map_err(bad)? {
            let (tokens, saved) = parse_state(&bytes, SystemTime::now()).map_err(bad)?;
            resumption.tokens = Arc::new(tokens);
            resumption.saved = Arc::new(Mutex::new(saved));
        }
        resumption.file = Some(path.to_path_buf());
        // Written back at once (expired entries dropped, mode 0600): a path that cannot
        // be written is refused before the transfer, not after it.
        resumption
            .write(path)
            .map_err(|e| bad(format!("cannot write it: {e}")))?;
        Ok(resumption)
    }

    /// Writes the tokens and parameters to the file they were loaded from (atomically,
    /// mode 0600); nothing without one.
    pub fn save(&self) -> Result<(), NetError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        self.write(path).map_err(|e| {
            NetError::Setup(format!(
                "cannot write the state file {}: {e}",
                path.display()
            ))
        })
    }

    /// Replaces `path` with the tokens and parameters fresh now.
    fn write(&self, path: &Path) -> std::io::Result<()> {
        let now = SystemTime::now();
        let tokens = self.tokens.entries(now);
        let saved = lock(&self.saved).entries();
        write_private(path, &state_document(&tokens, &saved))
    }

    /// The file the state is kept in, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The token store quinn is given for a run against `server`.
    pub(super) fn token_store(&self, server: SocketAddr) -> Arc<dyn quinn_proto::TokenStore> {
        Arc::new(self.tokens.for_server(server))
    }

    /// The parameters saved for `endpoint`, if a set is there, still valid and not lent
    /// to another connection, lent to this one until it is connected (RFC 9959 Sec. 3.2:
    /// a set serves one connection; one that fails to connect gives it back).
    pub(super) fn lend_saved(&self, endpoint: RemoteEndpoint) -> Option<(ResumeParams, Loan)> {
        Loan::lend(&self.saved, endpoint, SystemTime::now())
    }

    /// Sec. 3.1 "Updating": what the connection's controller observed replaces the set
    /// saved for `endpoint` (nothing when it observed nothing worth saving).
    pub(super) fn save_observation(&self, conn: &Connection, endpoint: RemoteEndpoint) {
        let observed = satquic_run::probe::careful_resume_observation(conn.congestion_state());
        if let Ok(o) = observed {
            lock(&self.saved).save(o.save(endpoint, SystemTime::now()));
        }
    }
}

impl Default for Resumption {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Resumption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumption")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// An empty store of [`CLIENT_SAVED_CAPACITY`] sets, each valid for at most Careful
/// Resume's default lifetime.
fn empty_saved() -> SavedStates {
    SavedStates::new(
        CLIENT_SAVED_CAPACITY,
        satquic_cc::careful_resume::DEFAULT_LIFETIME,
    )
}

/// The tokens and parameters a state file's `bytes` hold at wall-clock `now`.
fn parse_state(bytes: &[u8], now: SystemTime) -> Result<(SavedTokens, SavedStates), String> {
    check_header(bytes, STATE_FORMAT, STATE_VERSION)?;
    let doc: StateDocument =
        serde_json::from_slice(bytes).map_err(|e| format!("not a valid state file: {e}"))?;
    let tokens = SavedTokens::from_entries(&doc.tokens, now)?;
    let saved = SavedStates::from_entries(
        &doc.careful_resume,
        CLIENT_SAVED_CAPACITY,
        satquic_cc::careful_resume::DEFAULT_LIFETIME,
        now,
    )?;
    Ok((tokens, saved))
}

/// The state file's contents.
fn state_document(tokens: &[TokenEntry], saved: &[SavedEntry]) -> Vec<u8> {
    let token_lines = tokens
        .iter()
        .map(|t| serde_json::to_string(t).expect("a token entry serializes"))
        .collect();
    let saved_lines = saved.iter().map(SavedEntry::to_line).collect();
    document(
        STATE_FORMAT,
        STATE_VERSION,
        &[],
        &[("tokens", token_lines), ("careful_resume", saved_lines)],
    )
}

/// The path to `server` as the client's Careful Resume sees it (RFC 9959 Sec. 2.2): the
/// local address the system routes from (asked of a connected UDP socket, which sends
/// nothing) and the server's address, without ports.
pub(super) fn path_to(server: SocketAddr) -> RemoteEndpoint {
    let bind: SocketAddr = if server.is_ipv4() {
        SocketAddr::from(([0, 0, 0, 0], 0))
    } else {
        SocketAddr::from(([0u16; 8], 0))
    };
    let local: Option<IpAddr> = std::net::UdpSocket::bind(bind)
        .and_then(|s| s.connect(server).and_then(|()| s.local_addr()))
        .ok()
        .map(|a| a.ip());
    RemoteEndpoint::new(local, server.ip())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::saved::{SAVED_CWND_MAX_BYTES, SAVED_RTT_MAX_US};
    use bytes::Bytes;
    use satquic_cc::SavedCcParams;
    use std::net::Ipv6Addr;
    use std::time::Duration;

    #[test]
    fn a_full_state_file_stays_within_its_bound() {
        let resumption = Resumption::new();
        let now = SystemTime::now();
        for port in 0..TOKEN_SERVERS as u16 {
            let address: SocketAddr = format!(
                "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff%4294967295]:{}",
                60000 + port
            )
            .parse()
            .unwrap();
            let store = resumption.token_store(address);
            for _ in 0..TOKENS_PER_SERVER {
                store.insert(
                    &"a".repeat(253),
                    Bytes::from(vec![0xff; super::super::tokens::TOKEN_MAX_BYTES]),
                );
            }
        }
        for i in 0..CLIENT_SAVED_CAPACITY as u16 {
            // Each in its own /64 (one /64 keeps only its share).
            let ip = IpAddr::from(Ipv6Addr::new(
                0xffff,
                0xfffe,
                0xfffd,
                0x8000 + i,
                0xfffb,
                0xfffa,
                0xfff9,
                0xfff8,
            ));
            lock(&resumption.saved).save(SavedCcParams {
                saved_cwnd: SAVED_CWND_MAX_BYTES,
                saved_rtt: Duration::from_micros(SAVED_RTT_MAX_US),
                saved_remote_endpoint: RemoteEndpoint::new(Some(ip), ip).with_dscp(63),
                saved_at: now,
                lifetime: Duration::from_secs(3600),
            });
        }
        let now = SystemTime::now();
        let tokens = resumption.tokens.entries(now);
        let saved = lock(&resumption.saved).entries();
        assert_eq!(tokens.len(), TOKEN_SERVERS * TOKENS_PER_SERVER);
        assert_eq!(saved.len(), CLIENT_SAVED_CAPACITY);
        let bytes = state_document(&tokens, &saved);
        assert!(
            bytes.len() as u64 <= STATE_FILE_MAX_BYTES,
            "{} > {STATE_FILE_MAX_BYTES}",
            bytes.len()
        );
        let (back_tokens, back_saved) = parse_state(&bytes, now).unwrap();
        assert_eq!(back_tokens.entries(now).len(), tokens.len());
        assert_eq!(back_saved.len(), saved.len());
    }

    #[test]
    fn a_state_file_that_is_not_one_is_refused() {
        let now = SystemTime::now();
        for (bytes, why) in [
            (&b"[]"[..], "not a satquic-client-state file"),
            (
                b"{\"format\":\"satquic-careful-resume-store\",\"version\":1}",
                "'satquic-careful-resume-store'",
            ),
            (
                b"{\"format\":\"satquic-client-state\",\"version\":1,\"tokens\":[]}",
                "missing field",
            ),
        ] {
            let e = parse_state(bytes, now).expect_err("refused");
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn the_path_to_a_server_names_the_local_address() {
        let path = path_to(SocketAddr::from(([127, 0, 0, 1], 4433)));
        assert_eq!(path.local, Some(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(path.remote, IpAddr::from([127, 0, 0, 1]));
    }
}
