//! What every cell of a matrix shares, made once before the first: the servers'
//! certificate and the file they serve.
//!
//! Both are kept between runs (a file of the right size, a certificate pair that is
//! there), so a resumed matrix serves the same bytes with the same identity.

use std::path::{Path, PathBuf};

/// Writes a self-signed certificate for `localhost` and 127.0.0.1 (ECDSA P-256, which
/// every implementation reads) as `cert.pem` and `key.pem` (PKCS#8) into `dir`, unless
/// both are there; returns their paths.
pub fn prepare_identity(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    if cert.is_file() && key.is_file() {
        return Ok((cert, key));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let generated = rcgen::generate_simple_self_signed(names)
        .map_err(|e| format!("cannot generate a certificate: {e}"))?;
    std::fs::write(&key, generated.signing_key.serialize_pem())
        .and_then(|_| std::fs::write(&cert, generated.cert.pem()))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok((cert, key))
}

/// Writes `size_bytes` of pseudo-random bytes (from `seed`, incompressible) to `path`
/// unless a file of that size is there.
pub fn prepare_file(path: &Path, size_bytes: u64, seed: u64) -> Result<(), String> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == size_bytes) {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    use std::io::Write;
    let tmp = path.with_extension("partial");
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?,
    );
    // xorshift64*: fast and enough to defeat compression; not for cryptography.
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut left = size_bytes;
    while left > 0 {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let word = x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
        let n = left.min(8) as usize;
        out.write_all(&word[..n])
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        left -= n as u64;
    }
    out.flush().map_err(|e| format!("{}: {e}", tmp.display()))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}
