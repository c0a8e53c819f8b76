//! Careful Resume's store glue (RFC 9959): what each client address's last connection
//! observed (Sec. 3.1) is saved when it closes and handed to the next connection from the
//! same address (Sec. 3.2), whose controller may then start from it.
//!
//! The store lives in the server ([`ServerState`]) and is keyed by the pair of addresses
//! ([`RemoteEndpoint`]: the server's and the client's IP, no port, as Sec. 2.2 allows): a
//! set saved for one path is never used on another.
//!
//! # On disk (`--resume-store FILE`)
//!
//! With a file the store outlives the process: it is read when the server starts (sets
//! past their Lifetime dropped, at most [`SAVED_STATE_CAPACITY`] kept), written when it
//! changed (a set saved or spent) at most once a
//! [`FILE_WRITE_INTERVAL`](super::FILE_WRITE_INTERVAL), and when the
//! server shuts down ([`Server::shut_down`](super::Server::shut_down), which `satquic
//! server` runs on SIGINT and SIGTERM). A kill -9 loses at most the last interval's
//! changes. The file is a JSON document of [`STORE_FORMAT`], version [`STORE_VERSION`]:
//!
//! ```text
//! {"format":"satquic-careful-resume-store","version":1,
//! "entries":[
//! {"local":"127.0.0.1","remote":"127.0.0.1","saved_cwnd_bytes":253440,"saved_rtt_us":100412,"saved_at_unix_ms":1767225600000,"expires_at_unix_ms":1767229200000}
//! ]}
//! ```
//!
//! one entry per line ([`SavedEntry`](crate::persist::saved::SavedEntry) describes the
//! fields), at most [`STORE_FILE_MAX_BYTES`] (1.1 MB). A file above that, or one that
//! does not parse, stops the server at start with one line naming it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use quinn::Connection;
use satquic_cc::{RemoteEndpoint, ResumeParams};
use satquic_run::probe::careful_resume_observation;
use serde::Deserialize;

use super::{ServerState, lock};
use crate::NetError;
use crate::persist::saved::{Loan, SAVED_ENTRY_MAX_BYTES, SavedEntry, SavedStates};
use crate::persist::{check_header, document, read_private, write_private};

/// Client addresses whose Careful Resume parameters the server keeps (the oldest set
/// makes room); a set is a few dozen bytes in memory, at most
/// [`SAVED_ENTRY_MAX_BYTES`] on disk.
pub const SAVED_STATE_CAPACITY: usize = 4096;
/// The `format` of the store file.
pub const STORE_FORMAT: &str = "satquic-careful-resume-store";
/// The version of the store file this server reads and writes.
pub const STORE_VERSION: u32 = 1;
/// The store file's size bound: its opening and closing lines and
/// [`SAVED_STATE_CAPACITY`] entries of at most [`SAVED_ENTRY_MAX_BYTES`] each, with their
/// separators (1,122,432 bytes).
pub const STORE_FILE_MAX_BYTES: u64 =
    128 + SAVED_STATE_CAPACITY as u64 * (SAVED_ENTRY_MAX_BYTES + 2);

/// The store file's body.
#[derive(Deserialize)]
struct StoreDocument {
    entries: Vec<SavedEntry>,
}

/// Where the store is written, and what was written last.
pub(super) struct StoreFile {
    path: PathBuf,
    /// The store's change count at the last write; held while writing, so writes follow
    /// one another.
    written: Mutex<u64>,
}

/// An empty store of [`SAVED_STATE_CAPACITY`] sets, each valid for at most Careful
/// Resume's default lifetime.
fn empty_store() -> SavedStates {
    SavedStates::new(
        SAVED_STATE_CAPACITY,
        satquic_cc::careful_resume::DEFAULT_LIFETIME,
    )
}

/// The server's store: read from `path` when given (a missing file is an empty store),
/// else empty. A file that is too large or does not parse is a usage error naming it.
pub(super) fn open_store(
    path: Option<&Path>,
) -> Result<(SavedStates, Option<StoreFile>), NetError> {
    let Some(path) = path else {
        return Ok((empty_store(), None));
    };
    let bad = |why: String| NetError::Usage(format!("--resume-store {}: {why}", path.display()));
    crate::persist::prepare(path).map_err(bad)?;
    let store = match read_private(path, STORE_FILE_MAX_BYTES).map_err(bad)? {
        Some(bytes) => parse_store(&bytes, SystemTime::now()).map_err(bad)?,
        None => empty_store(),
    };
    let file = StoreFile {
        path: path.to_path_buf(),
        // Written at once (expired sets dropped, mode 0600), which also proves the path
        // writable before the server listens.
        written: Mutex::new(u64::MAX),
    };
    Ok((store, Some(file)))
}

/// The store a file's `bytes` hold at wall-clock `now`.
pub(crate) fn parse_store(bytes: &[u8], now: SystemTime) -> Result<SavedStates, String> {
    check_header(bytes, STORE_FORMAT, STORE_VERSION)?;
    let doc: StoreDocument =
        serde_json::from_slice(bytes).map_err(|e| format!("not a valid store: {e}"))?;
    SavedStates::from_entries(
        &doc.entries,
        SAVED_STATE_CAPACITY,
        satquic_cc::careful_resume::DEFAULT_LIFETIME,
        now,
    )
}

/// The store file's contents for `entries`.
fn store_document(entries: &[SavedEntry]) -> Vec<u8> {
    let lines = entries.iter().map(SavedEntry::to_line).collect();
    document(STORE_FORMAT, STORE_VERSION, &[], &[("entries", lines)])
}

/// Writes the store to its file if it changed since the last write (nothing without a
/// file).
pub(super) fn write_store(state: &ServerState) -> Result<(), NetError> {
    let Some(file) = &state.store_file else {
        return Ok(());
    };
    let mut written = lock(&file.written);
    let (entries, changes) = {
        let mut saved = lock(&state.saved);
        if saved.changes() == *written {
            return Ok(());
        }
        (saved.entries(), saved.changes())
    };
    write_private(&file.path, &store_document(&entries)).map_err(|e| {
        NetError::Setup(format!(
            "cannot write the Careful Resume store {}: {e}",
            file.path.display()
        ))
    })?;
    *written = changes;
    Ok(())
}

/// The parameters saved for `endpoint`, if a set is there, still valid and not lent to
/// another connection, lent to this one until its handshake ends.
pub(super) fn lend_saved(
    state: &ServerState,
    endpoint: RemoteEndpoint,
) -> Option<(ResumeParams, Loan)> {
    Loan::lend(&state.saved, endpoint, SystemTime::now())
}

/// Sec. 3.1 "Updating": the closed connection's observation replaces the saved set.
pub(super) fn save_observation(state: &ServerState, conn: &Connection, endpoint: RemoteEndpoint) {
    if let Ok(o) = careful_resume_observation(conn.congestion_state()) {
        lock(&state.saved).save(o.save(endpoint, SystemTime::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::saved::{SAVED_CWND_MAX_BYTES, SAVED_RTT_MAX_US};
    use satquic_cc::SavedCcParams;
    use std::net::{IpAddr, Ipv6Addr};
    use std::time::Duration;

    /// The store at its bound, every entry as long as an entry can be.
    fn full_store(now: SystemTime) -> SavedStates {
        let mut store = empty_store();
        for i in 0..SAVED_STATE_CAPACITY as u16 + 10 {
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
            store.save(SavedCcParams {
                saved_cwnd: SAVED_CWND_MAX_BYTES,
                saved_rtt: Duration::from_micros(SAVED_RTT_MAX_US),
                saved_remote_endpoint: RemoteEndpoint::new(Some(ip), ip).with_dscp(63),
                saved_at: now,
                lifetime: Duration::from_secs(3600),
            });
        }
        store
    }

    #[test]
    fn a_full_store_of_the_longest_entries_stays_within_the_file_bound() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(4_000_000_000);
        let mut store = full_store(now);
        let entries = store.entries();
        assert_eq!(entries.len(), SAVED_STATE_CAPACITY);
        let bytes = store_document(&entries);
        assert!(
            bytes.len() as u64 <= STORE_FILE_MAX_BYTES,
            "{} > {STORE_FILE_MAX_BYTES}",
            bytes.len()
        );
        let back = parse_store(&bytes, now).unwrap();
        assert_eq!(back.len(), SAVED_STATE_CAPACITY);
    }

    #[test]
    fn a_store_file_that_is_not_one_is_refused() {
        let now = SystemTime::now();
        for (bytes, why) in [
            (&b""[..], "not a satquic-careful-resume-store file"),
            (b"{\"format\":\"satquic-client-state\",\"version\":1}", "'satquic-client-state'"),
            (b"{\"format\":\"satquic-careful-resume-store\",\"version\":9}", "version 9"),
            (b"{\"format\":\"satquic-careful-resume-store\",\"version\":1}", "missing field"),
            (
                b"{\"format\":\"satquic-careful-resume-store\",\"version\":1,\"entries\":[{\"remote\":\"::1\"}]}",
                "missing field",
            ),
        ] {
            let e = parse_store(bytes, now).expect_err("refused");
            assert!(e.contains(why), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
