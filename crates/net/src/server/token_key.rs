//! The key of the server's address-validation tokens (Retry and NEW_TOKEN, RFC 9000 Sec.
//! 8.1), kept in a file (`--token-key FILE`) so that a restarted server still accepts the
//! tokens it gave before: a returning client is then answered at once instead of after a
//! Retry round trip.
//!
//! Without a file quinn draws a random key per process. The file holds [`TOKEN_KEY_BYTES`]
//! random bytes, nothing else (`head -c 32 /dev/urandom > FILE` makes one; servers behind
//! one address can share it); the server creates it, mode 0600, when it is missing, and
//! refuses one that others may read or write. quinn derives each token's AEAD key from it
//! with HKDF-SHA256, as it does from its random key.
//!
//! Whoever reads the file can forge tokens for any client address: a spoofed Initial with
//! such a token skips the Retry and lifts the server's 3x amplification limit toward the
//! spoofed address. It cannot decrypt connections or impersonate the server (TLS keys are
//! unrelated).

use std::path::Path;
use std::sync::Arc;

use ring::rand::SecureRandom;

use crate::NetError;
use crate::persist::{create_private, read_private};

/// Length of the key file: a 256-bit secret.
pub const TOKEN_KEY_BYTES: usize = 32;

/// The token key in `path`, made (random, mode 0600) if the file does not exist, and
/// whether it was made now (no token was given with it before). A file of another length,
/// or one others may read or write, is a usage error.
pub(super) fn load_or_create(
    path: &Path,
) -> Result<(Arc<dyn quinn_proto::crypto::HandshakeTokenKey>, bool), NetError> {
    let bad = |why: String| NetError::Usage(format!("--token-key {}: {why}", path.display()));
    crate::persist::prepare(path).map_err(bad)?;
    let (secret, made) = match read_key(path).map_err(bad)? {
        Some(secret) => (secret, false),
        None => create(path).map_err(bad)?,
    };
    let key = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&secret);
    Ok((Arc::new(key), made))
}

/// The key in `path`, if there is a file: exactly [`TOKEN_KEY_BYTES`], private to its
/// owner.
fn read_key(path: &Path) -> Result<Option<[u8; TOKEN_KEY_BYTES]>, String> {
    let Some(bytes) = read_private(path, TOKEN_KEY_BYTES as u64)? else {
        return Ok(None);
    };
    let secret = <[u8; TOKEN_KEY_BYTES]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "{} bytes; a key is {TOKEN_KEY_BYTES} random bytes (head -c {TOKEN_KEY_BYTES} \
             /dev/urandom > FILE)",
            bytes.len()
        )
    })?;
    Ok(Some(secret))
}

/// A new random key, made `path` whole or not at all (a crash leaves no key or the whole
/// one, never an empty file that would stop every later start), and whether this call
/// made it: when two servers start at once, one makes it and the other reads that one's
/// key.
fn create(path: &Path) -> Result<([u8; TOKEN_KEY_BYTES], bool), String> {
    let mut secret = [0u8; TOKEN_KEY_BYTES];
    ring::rand::SystemRandom::new()
        .fill(&mut secret)
        .map_err(|_| "no random bytes from the system".to_string())?;
    if create_private(path, &secret).map_err(|e| format!("cannot create it: {e}"))? {
        return Ok((secret, true));
    }
    let theirs = read_key(path)?.ok_or_else(|| "vanished as it was made".to_string())?;
    Ok((theirs, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_is_created_private_then_read_back_and_bad_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("satquic-token-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("key");
        load_or_create(&path).unwrap();
        let first = std::fs::read(&path).unwrap();
        assert_eq!(first.len(), TOKEN_KEY_BYTES);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        load_or_create(&path).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            first,
            "an existing key is kept"
        );

        let usage = |path: &Path| match load_or_create(path) {
            Err(NetError::Usage(m)) => m,
            Err(e) => panic!("not a usage error: {e}"),
            Ok(_) => panic!("accepted {}", path.display()),
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(usage(&path).contains("chmod 600"));
        let short = dir.join("short");
        std::fs::write(&short, b"0123").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(usage(&short).contains("4 bytes"));
        let long = dir.join("long");
        std::fs::write(&long, [0u8; 33]).unwrap();
        std::fs::set_permissions(&long, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(usage(&long).contains("33 bytes"));
        assert!(usage(&dir.join("missing-dir/key")).contains("does not exist"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Servers started together on one missing key file all end with the same key: one
    /// makes it, the others read it (before, one could read the file between its creation
    /// and its write, found 0 bytes and stopped).
    #[test]
    fn servers_starting_together_agree_on_one_key() {
        let dir = std::env::temp_dir().join(format!("satquic-key-race-{}", std::process::id()));
        for round in 0..20 {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("key");
            let barrier = std::sync::Barrier::new(4);
            let keys: Vec<_> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        let (path, barrier) = (&path, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            match read_key(path) {
                                Ok(Some(key)) => Ok(key),
                                Ok(None) => create(path).map(|(key, _)| key),
                                Err(e) => Err(e),
                            }
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let first = keys[0].clone().unwrap();
            for key in keys {
                assert_eq!(key, Ok(first), "round {round}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
