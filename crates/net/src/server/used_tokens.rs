//! The record of used address-validation tokens, kept beside the token key (`--token-key
//! FILE` keeps it in `FILE.used`) so that a restarted server refuses a token its
//! predecessor accepted (RFC 9000 Sec. 8.1.4: a server MUST prevent or limit the replay of
//! tokens). Without a key file, tokens die with the process and the record stays in
//! memory.
//!
//! The file lists each accepted token's nonce and expiry, and whether the server that
//! wrote it last had stopped (`"stopped":true`, written at SIGINT/SIGTERM after the last
//! connection closed). It is written with the Careful Resume store, when it changed, at
//! most once a second while the server runs, so a server killed (kill -9, a crash) may have
//! accepted tokens the file does not list: unless the file says the server stopped, its
//! successor refuses every token issued before it started (those clients pay one Retry),
//! and so does a server with a key but no record (made by an earlier satquic); a key made
//! now needs no such care.
//!
//! ```text
//! {"format":"satquic-used-tokens","version":1,"stopped":true,
//! "used":[
//! {"nonce":"8c1f...","expires_at_unix_ms":1767229200000}
//! ]}
//! ```
//!
//! Servers that share a key (behind one address) each keep their own record: a token is
//! accepted at most once by each of them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use satquic_run::token_log::{DEFAULT_TOKEN_LOG_CAPACITY, SingleUseTokenLog};
use serde::{Deserialize, Serialize};

use super::lock;
use crate::NetError;
use crate::persist::{check_header, document, from_unix_ms, read_private, write_private};

/// The `format` of the record of used tokens.
pub const USED_TOKENS_FORMAT: &str = "satquic-used-tokens";
/// The version of that file this server reads and writes.
pub const USED_TOKENS_VERSION: u32 = 1;
/// The longest line of one token: a 32-digit nonce and a 20-digit time (a test writes it).
pub const USED_TOKEN_ENTRY_MAX_BYTES: u64 = 86;
/// The file's size bound: its opening and closing lines and as many tokens as the record
/// holds (5.8 MB).
pub const USED_TOKENS_FILE_MAX_BYTES: u64 =
    128 + DEFAULT_TOKEN_LOG_CAPACITY as u64 * (USED_TOKEN_ENTRY_MAX_BYTES + 2);

/// One used token as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsedToken {
    /// The token's nonce, 32 hex digits.
    nonce: String,
    /// When the token expires, milliseconds since the Unix epoch.
    expires_at_unix_ms: u64,
}

/// The file's body.
#[derive(Deserialize)]
struct UsedTokensDocument {
    stopped: bool,
    used: Vec<UsedToken>,
}

/// The server's record of used tokens, and where it is kept.
pub(super) struct UsedTokens {
    /// What quinn asks whether a token was used.
    pub(super) log: Arc<SingleUseTokenLog>,
    /// With a key file: the record's file, and what was written to it last.
    file: Option<(PathBuf, Mutex<Option<Written>>)>,
}

/// What the file holds: the record's change count and the stop flag.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Written {
    changes: u64,
    stopped: bool,
}

impl UsedTokens {
    /// A record in memory only (no key file: the tokens die with the process).
    pub(super) fn in_memory() -> Self {
        UsedTokens {
            log: Arc::new(SingleUseTokenLog::default()),
            file: None,
        }
    }

    /// The record for the key file `key` (`made`: the key is new, so no token was given
    /// with it before), read from `KEY.used` at wall-clock `now`. A file that is not one is
    /// a usage error.
    pub(super) fn open(key: &Path, made: bool, now: SystemTime) -> Result<Self, NetError> {
        let path = path_beside(key);
        let bad = |why: String| {
            NetError::Usage(format!(
                "--token-key {}: its record of used tokens {}: {why}",
                key.display(),
                path.display()
            ))
        };
        crate::persist::prepare(&path).map_err(bad)?;
        let log = match read_private(&path, USED_TOKENS_FILE_MAX_BYTES).map_err(bad)? {
            Some(bytes) => parse(&bytes, now).map_err(bad)?,
            None if made => SingleUseTokenLog::default(),
            // A key from before there was a record: what it was used for is unknown.
            None => SingleUseTokenLog::restore(DEFAULT_TOKEN_LOG_CAPACITY, [], Some(cut(now))),
        };
        Ok(UsedTokens {
            log: Arc::new(log),
            file: Some((path, Mutex::new(None))),
        })
    }

    /// Writes the record if it changed since the last write, saying whether the server
    /// has `stopped` (nothing without a key file).
    pub(super) fn write(&self, stopped: bool) -> Result<(), NetError> {
        let Some((path, written)) = &self.file else {
            return Ok(());
        };
        let mut written = lock(written);
        let now = Written {
            changes: self.log.changes(),
            stopped,
        };
        if *written == Some(now) {
            return Ok(());
        }
        write_private(path, &used_tokens_document(&self.log, stopped)).map_err(|e| {
            NetError::Setup(format!(
                "cannot write the record of used tokens {}: {e}",
                path.display()
            ))
        })?;
        *written = Some(now);
        Ok(())
    }
}

/// `KEY.used` beside the key file `KEY`.
fn path_beside(key: &Path) -> PathBuf {
    let mut name = key.file_name().unwrap_or_default().to_os_string();
    name.push(".used");
    key.with_file_name(name)
}

/// The time before which a server started at `now` refuses tokens it cannot vouch for:
/// the next whole second, since a token carries its issue time in whole seconds (one
/// issued by the old server in the second the new one started is refused too; one the
/// new server issues in that second costs its client a Retry).
fn cut(now: SystemTime) -> SystemTime {
    let seconds = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    UNIX_EPOCH + Duration::from_secs(seconds + 1)
}

/// The record a file's `bytes` hold at wall-clock `now`: expired tokens dropped; every
/// token issued before [`cut`]`(now)` refused unless the file was written at a stop.
fn parse(bytes: &[u8], now: SystemTime) -> Result<SingleUseTokenLog, String> {
    check_header(bytes, USED_TOKENS_FORMAT, USED_TOKENS_VERSION)?;
    let doc: UsedTokensDocument = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a valid record of used tokens: {e}"))?;
    let mut used = Vec::with_capacity(doc.used.len());
    for (i, token) in doc.used.iter().enumerate() {
        let bad = |why: &str| format!("token {} has {why}", i + 1);
        let hex = token.nonce.len() == 32 && token.nonce.bytes().all(|b| b.is_ascii_hexdigit());
        let nonce = hex
            .then(|| u128::from_str_radix(&token.nonce, 16).ok())
            .flatten()
            .ok_or_else(|| bad("a nonce that is not 32 hex digits"))?;
        let expiry =
            from_unix_ms(token.expires_at_unix_ms).ok_or_else(|| bad("a time out of range"))?;
        if expiry > now {
            used.push((nonce, expiry));
        }
    }
    let refuse_before = (!doc.stopped).then(|| cut(now));
    Ok(SingleUseTokenLog::restore(
        DEFAULT_TOKEN_LOG_CAPACITY,
        used,
        refuse_before,
    ))
}

/// The file's contents for `log`.
fn used_tokens_document(log: &SingleUseTokenLog, stopped: bool) -> Vec<u8> {
    let lines = log
        .used()
        .into_iter()
        .map(|(nonce, expiry)| entry_line(nonce, expiry))
        .collect();
    document(
        USED_TOKENS_FORMAT,
        USED_TOKENS_VERSION,
        &[("stopped", if stopped { "true" } else { "false" })],
        &[("used", lines)],
    )
}

fn entry_line(nonce: u128, expiry: SystemTime) -> String {
    let token = UsedToken {
        nonce: format!("{nonce:032x}"),
        expires_at_unix_ms: crate::unix_ms(expiry),
    };
    serde_json::to_string(&token).expect("a used token serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::TokenLog;

    const HOUR: Duration = Duration::from_secs(3600);

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
    }

    #[test]
    fn the_longest_entry_fits_its_bound() {
        let line = entry_line(
            u128::MAX,
            SystemTime::UNIX_EPOCH + Duration::from_millis(u64::MAX),
        );
        assert_eq!(line.len() as u64, USED_TOKEN_ENTRY_MAX_BYTES, "{line}");
    }

    /// Written at a stop, the record refuses exactly the tokens it lists; written while
    /// the server ran (it was killed after), it also refuses every older token.
    #[test]
    fn a_record_read_back_refuses_its_tokens_and_after_a_kill_all_older_ones() {
        let log = SingleUseTokenLog::default();
        assert!(log.check_and_insert(7, t0(), HOUR).is_ok());
        let later = t0() + Duration::from_secs(60);
        for (stopped, unused_accepted) in [(true, true), (false, false)] {
            let bytes = used_tokens_document(&log, stopped);
            let next = parse(&bytes, later).unwrap();
            assert!(next.check_and_insert(7, t0(), HOUR).is_err(), "replayed");
            assert_eq!(
                next.check_and_insert(8, t0(), HOUR).is_ok(),
                unused_accepted,
                "stopped {stopped}"
            );
            // Issue times are whole seconds: after a kill, the second the successor
            // started in cannot be told apart from its predecessor's last.
            let next_second = later + Duration::from_secs(1);
            assert_eq!(next.check_and_insert(9, later, HOUR).is_ok(), stopped);
            assert!(
                next.check_and_insert(10, next_second, HOUR).is_ok(),
                "issued since"
            );
        }
        // An hour later the used token has expired (quinn refuses it itself) and is gone.
        let next = parse(&used_tokens_document(&log, true), t0() + 2 * HOUR).unwrap();
        assert!(next.used().is_empty());
    }

    #[test]
    fn a_file_that_is_not_a_record_is_refused() {
        for (bytes, why) in [
            (&b"{}"[..], "not a satquic-used-tokens file"),
            (
                b"{\"format\":\"satquic-used-tokens\",\"version\":1,\"used\":[]}",
                "missing field `stopped`",
            ),
            (
                b"{\"format\":\"satquic-used-tokens\",\"version\":1,\"stopped\":true,\"used\":[{\"nonce\":\"xyz\",\"expires_at_unix_ms\":1}]}",
                "token 1 has a nonce",
            ),
            (
                b"{\"format\":\"satquic-used-tokens\",\"version\":1,\"stopped\":true,\"used\":[{\"nonce\":\"+0000000000000000000000000000001\",\"expires_at_unix_ms\":1}]}",
                "token 1 has a nonce",
            ),
        ] {
            let e = parse(bytes, t0()).expect_err("refused");
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn the_record_lives_beside_the_key() {
        assert_eq!(
            path_beside(Path::new("/var/lib/satquic/token.key")),
            Path::new("/var/lib/satquic/token.key.used")
        );
    }
}
