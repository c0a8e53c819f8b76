//! What every run shares: this satquic binary and where the peers are installed, the
//! values of the `{satquic}` and `{peers}` placeholders (an adapter's `requires` and
//! `check` use them to tell whether it is installed).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// What every run shares: this satquic binary and where the peers are installed.
#[derive(Debug, Clone)]
pub struct PeerEnv {
    pub satquic: PathBuf,
    pub peers: PathBuf,
}

impl PeerEnv {
    /// `satquic` and the peers' directory: `$SATQUIC_PEERS`, else `~/.local/satquic-peers`
    /// (where `scripts/install-peers.sh` puts them).
    pub fn new(satquic: PathBuf) -> Self {
        let peers = std::env::var_os("SATQUIC_PEERS")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home =
                    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
                home.join(".local/satquic-peers")
            });
        PeerEnv { satquic, peers }
    }

    pub(super) fn base_values(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("satquic", self.satquic.display().to_string()),
            ("peers", self.peers.display().to_string()),
        ])
    }
}
