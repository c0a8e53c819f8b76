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

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use ring::rand::SecureRandom;

use crate::NetError;
use crate::persist::{PRIVATE_FILE_MODE, read_bounded, shared_mode_bits};

/// Length of the key file: a 256-bit secret.
pub const TOKEN_KEY_BYTES: usize = 32;

/// The token key in `path`, made (random, mode 0600) if the file does not exist. A file of
/// another length, or one others may read or write, is a usage error.
pub(super) fn load_or_create(
    path: &Path,
) -> Result<Arc<dyn quinn_proto::crypto::HandshakeTokenKey>, NetError> {
    let bad = |why: String| NetError::Usage(format!("--token-key {}: {why}", path.display()));
    crate::persist::check_directory(path).map_err(bad)?;
    let secret = match read_bounded(path, TOKEN_KEY_BYTES as u64).map_err(bad)? {
        Some(bytes) => existing_secret(path, bytes).map_err(bad)?,
        None => create(path).map_err(bad)?,
    };
    let key = ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&secret);
    Ok(Arc::new(key))
}

/// A key file's bytes, checked: exactly [`TOKEN_KEY_BYTES`], private to its owner.
fn existing_secret(path: &Path, bytes: Vec<u8>) -> Result<[u8; TOKEN_KEY_BYTES], String> {
    let shared = shared_mode_bits(path).map_err(|e| format!("cannot read it: {e}"))?;
    if shared != 0 {
        return Err(format!(
            "others may read or write it (mode bits {shared:03o}); chmod 600 it"
        ));
    }
    <[u8; TOKEN_KEY_BYTES]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "{} bytes; a key is {TOKEN_KEY_BYTES} random bytes (head -c {TOKEN_KEY_BYTES} \
             /dev/urandom > FILE)",
            bytes.len()
        )
    })
}

/// A new random key, written to `path` (which must not exist: two servers starting at
/// once do not overwrite each other's key; the second reads the first's).
fn create(path: &Path) -> Result<[u8; TOKEN_KEY_BYTES], String> {
    let mut secret = [0u8; TOKEN_KEY_BYTES];
    ring::rand::SystemRandom::new()
        .fill(&mut secret)
        .map_err(|_| "no random bytes from the system".to_string())?;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path);
    let mut file = match created {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let bytes = read_bounded(path, TOKEN_KEY_BYTES as u64)?.unwrap_or_default();
            return existing_secret(path, bytes);
        }
        Err(e) => return Err(format!("cannot create it: {e}")),
    };
    let written = file.write_all(&secret).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(path);
        return Err(format!("cannot write it: {e}"));
    }
    Ok(secret)
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
        assert_eq!(shared_mode_bits(&path).unwrap(), 0);
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
        assert!(usage(&long).contains("33 bytes"));
        assert!(usage(&dir.join("missing-dir/key")).contains("does not exist"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
