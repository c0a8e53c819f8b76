//! State that outlives a process: the server's Careful Resume store, its
//! address-validation key and record of used tokens, the client's tokens and its own
//! saved path state.
//!
//! Each file is small and bounded, private to the user running satquic (mode 0600: it
//! names client addresses, steers the server's first window, or can forge tokens), and
//! never seen in part: [`write`] puts the bytes in a temporary file beside it and gives
//! that the file's name in one step, so a crash or a kill mid-write leaves the old file or
//! the new one, never a mix. Two processes writing the same file lose one's changes (the
//! last rename wins), never the file; a file that must not be replaced (the key) is
//! created only where there is none.
//!
//! [`read`] refuses, with one line naming the file, anything but a regular file (without
//! ever waiting on a FIFO), a file that others may read or write or another user owns, a
//! file above its bound (before reading it); its caller refuses any file it cannot parse.
//! The command line makes that a usage error (exit code 2), so a damaged file is seen at
//! once instead of silently starting afresh.
//!
//! The documents are JSON, one object with a `format` name and a `version` (1), then one
//! entry per line so that `grep` and `jq` read them; [`saved`] holds the Careful Resume
//! entry both ends share.

mod loan;
mod read;
pub mod saved;
mod write;

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

pub use read::read_private;
pub use write::{create_private, write_private};

/// The mode of every file written here: read and write for the owner only.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Readies `path` to be read and later written: its directory must exist (a missing file
/// is fine; it is created), and the temporary files that writers killed mid-write left
/// beside it are removed.
pub fn prepare(path: &Path) -> Result<(), String> {
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
    write::remove_leftovers(path);
    Ok(())
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

/// `{"format":F,"version":V`, each field as `,"NAME":VALUE` (VALUE is JSON) on the same
/// line, then each list as `"NAME":[` one entry per line `]`, `}`.
pub(crate) fn document(
    format: &str,
    version: u32,
    fields: &[(&str, &str)],
    lists: &[(&str, Vec<String>)],
) -> Vec<u8> {
    let mut out = format!("{{\"format\":\"{format}\",\"version\":{version}");
    for (name, value) in fields {
        out.push_str(&format!(",\"{name}\":{value}"));
    }
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

    #[test]
    fn headers_name_the_format_and_the_version() {
        assert!(check_header(br#"{"format":"x","version":1,"e":[]}"#, "x", 1).is_ok());
        assert!(check_header(br#"{"format":"y","version":1}"#, "x", 1).is_err());
        assert!(check_header(br#"{"format":"x","version":2}"#, "x", 1).is_err());
        assert!(check_header(b"\x00garbage", "x", 1).is_err());
        let doc = document(
            "x",
            1,
            &[("g", "true")],
            &[("e", vec!["1".into(), "2".into()]), ("f", vec![])],
        );
        let v: serde_json::Value = serde_json::from_slice(&doc).unwrap();
        assert_eq!(v["g"], serde_json::json!(true));
        assert_eq!(v["e"], serde_json::json!([1, 2]));
        assert_eq!(v["f"], serde_json::json!([]));
    }
}
