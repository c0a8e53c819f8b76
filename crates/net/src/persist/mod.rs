//! State that outlives a process: the server's Careful Resume store and its
//! address-validation key, the client's tokens and its own saved path state.
//!
//! Each file is small and bounded, readable by its owner only (mode 0600: it names client
//! addresses, and the key can forge tokens), and replaced whole: a temporary file beside
//! it is written, synced and renamed over it, so a crash or a kill mid-write leaves the
//! old file or the new one, never a mix, and a reader never sees a partial file. Two
//! processes writing the same file lose one's changes (the last rename wins), never the
//! file.
//!
//! A reader refuses a file above its bound before reading it, and any file it cannot
//! parse, with one line naming the file: the command line makes that a usage error
//! (exit code 2), so a damaged file is seen at once instead of silently starting afresh.
//!
//! The documents are JSON, one object with a `format` name and a `version` (1), then one
//! entry per line so that `grep` and `jq` read them; [`saved`] holds the Careful Resume
//! entry both ends share.

pub mod saved;

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::Deserialize;

/// The mode of every file written here: read and write for the owner only.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Reads `path` whole, or `None` if it does not exist. A file larger than `max_bytes`, a
/// directory or an unreadable file is refused with a one-line reason.
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<Option<Vec<u8>>, String> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "{} bytes, above the {max_bytes} bytes such a file can reach",
            meta.len()
        ));
    }
    // Read at most one byte past the bound, in case the file grows meanwhile.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("above the {max_bytes} bytes such a file can reach"));
    }
    Ok(Some(bytes))
}

/// Replaces `path` with `bytes`, atomically and with mode 0600: a temporary file in the
/// same directory, synced, then renamed over `path`.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = temporary_beside(path);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(PRIVATE_FILE_MODE)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// A name beside `path` no other writer uses: `.NAME.PID.N.tmp`.
fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Whether `path` can be written later: its directory exists. (A missing file is fine;
/// it is created.)
pub fn check_directory(path: &Path) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if path.file_name().is_none() {
        return Err("names no file".into());
    }
    if !dir.is_dir() {
        return Err(format!("its directory {} does not exist", dir.display()));
    }
    Ok(())
}

/// The permission bits of `path` that let others than its owner read or write it.
pub fn shared_mode_bits(path: &Path) -> std::io::Result<u32> {
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o077)
}

/// The `format` and `version` every document here opens with.
#[derive(Deserialize)]
struct Header {
    format: String,
    version: u32,
}

/// Checks that `bytes` is a JSON document of `format`, version `version`, before its body
/// is parsed (a later version's body would otherwise fail with a confusing reason).
pub(crate) fn check_header(bytes: &[u8], format: &str, version: u32) -> Result<(), String> {
    let header: Header = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a {format} file (version {version}): {e}"))?;
    if header.format != format {
        return Err(format!(
            "a '{}' file, not '{format}'",
            header.format.escape_default()
        ));
    }
    if header.version != version {
        return Err(format!(
            "version {} of {format}; this satquic reads version {version}",
            header.version
        ));
    }
    Ok(())
}

/// `{"format":F,"version":V,` then each list as `"NAME":[` one entry per line `]`, `}`.
pub(crate) fn document(format: &str, version: u32, lists: &[(&str, Vec<String>)]) -> Vec<u8> {
    let mut out = format!("{{\"format\":\"{format}\",\"version\":{version}");
    for (name, entries) in lists {
        out.push_str(&format!(",\n\"{name}\":["));
        for (i, entry) in entries.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(entry);
        }
        out.push_str("\n]");
    }
    out.push_str("}\n");
    out.into_bytes()
}

/// The time `ms` milliseconds after the Unix epoch (`None` beyond what `SystemTime`
/// holds).
pub(crate) fn from_unix_ms(ms: u64) -> Option<SystemTime> {
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("satquic-persist-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_file_is_replaced_whole_and_private() {
        let dir = temp("write");
        let path = dir.join("state.json");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(shared_mode_bits(&path).unwrap(), 0, "mode 0600");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_reader_refuses_what_is_above_its_bound_and_misses_nothing_else() {
        let dir = temp("read");
        let path = dir.join("state.json");
        assert_eq!(read_bounded(&path, 10), Ok(None));
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_bounded(&path, 10).unwrap().unwrap().len(), 10);
        std::fs::write(&path, b"0123456789A").unwrap();
        assert!(read_bounded(&path, 10).unwrap_err().contains("11 bytes"));
        assert!(read_bounded(&dir, 10).is_err(), "a directory");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn headers_name_the_format_and_the_version() {
        assert!(check_header(br#"{"format":"x","version":1,"e":[]}"#, "x", 1).is_ok());
        assert!(check_header(br#"{"format":"y","version":1}"#, "x", 1).is_err());
        assert!(check_header(br#"{"format":"x","version":2}"#, "x", 1).is_err());
        assert!(check_header(b"\x00garbage", "x", 1).is_err());
        let doc = document(
            "x",
            1,
            &[("e", vec!["1".into(), "2".into()]), ("f", vec![])],
        );
        let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
        assert_eq!(v["e"], serde_json::json!([1, 2]));
        assert_eq!(v["f"], serde_json::json!([]));
    }
}
