//! What a client keeps between its connections to resume one: the TLS configuration
//! holding the server's session tickets (0-RTT) and the server's address-validation
//! tokens.

use std::sync::{Arc, Mutex};

use crate::tls::ServerVerifier;

/// What a client keeps between its connections to resume one, in memory: its TLS
/// configuration, whose session cache holds the server's tickets (for 0-RTT, RFC 9001
/// Sec. 4.6; rustls resumes a session only with the configuration and certificate
/// verifier that made it), and the server's address-validation tokens (NEW_TOKEN, RFC
/// 9000 Sec. 8.1.3, which let the server answer at once). Share one between the runs of
/// one process, with the same server and options; rustls cannot write its tickets out,
/// so a new process starts afresh.
pub struct Resumption {
    /// The TLS configuration and verifier of the first run, reused by the next.
    pub(super) tls: Mutex<Option<(Arc<rustls::ClientConfig>, Arc<ServerVerifier>)>>,
    pub(super) tokens: Arc<dyn quinn_proto::TokenStore>,
}

impl Resumption {
    pub fn new() -> Self {
        Resumption {
            tls: Mutex::new(None),
            tokens: Arc::new(quinn_proto::TokenMemoryCache::default()),
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
        f.write_str("Resumption")
    }
}
