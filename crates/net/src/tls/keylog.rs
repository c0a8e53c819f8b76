//! `SSLKEYLOGFILE`: the TLS secrets in the NSS key log format Wireshark reads, one line
//! per secret (`LABEL CLIENT_RANDOM SECRET`, both in hex).
//!
//! rustls's own `KeyLogFile` opens the file with a plain `open`, which waits for ever
//! when the variable names a FIFO nobody reads, and leaves a file it cannot open with a
//! warning in a log the command line does not show. Here the file is opened with
//! `O_NONBLOCK` (a FIFO without a reader is refused at once, one with a reader is
//! refused after the open), created owner-only (it holds the session keys), and any
//! file it cannot be is one line, the command's exit 2.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use satquic_link::file::kind_of;

use crate::NetError;

/// The variable's name, as in the NSS documentation and every TLS library.
pub const VARIABLE: &str = "SSLKEYLOGFILE";

/// The key log that `SSLKEYLOGFILE` asks for: none when it is unset or empty, the file
/// otherwise; a path that is not a regular file, or that cannot be opened to append, is
/// a usage error naming the variable.
pub fn from_environment() -> Result<Arc<dyn rustls::KeyLog>, NetError> {
    match std::env::var_os(VARIABLE) {
        Some(path) if !path.is_empty() => Ok(Arc::new(KeyLogFile::open(Path::new(&path))?)),
        _ => Ok(Arc::new(rustls::NoKeyLog)),
    }
}

/// An open key log file.
#[derive(Debug)]
pub struct KeyLogFile(Mutex<File>);

impl KeyLogFile {
    /// Opens `path` to append, creating it with mode 0600; never blocks.
    pub fn open(path: &Path) -> Result<Self, NetError> {
        let refused =
            |why: String| NetError::Usage(format!("{VARIABLE} {}: {why}", path.display()));
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match std::fs::metadata(path) {
                // A FIFO without a reader: ENXIO for an O_NONBLOCK open to write.
                Ok(meta) if !meta.is_file() => refused(not_regular(&meta.file_type())),
                _ => refused(format!("cannot append to it: {e}")),
            })?;
        let kind = file
            .metadata()
            .map_err(|e| refused(format!("cannot append to it: {e}")))?
            .file_type();
        if !kind.is_file() {
            return Err(refused(not_regular(&kind)));
        }
        Ok(Self(Mutex::new(file)))
    }
}

fn not_regular(kind: &std::fs::FileType) -> String {
    format!("{}, not a regular file", kind_of(kind))
}

impl rustls::KeyLog for KeyLogFile {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let mut line =
            String::with_capacity(label.len() + 2 * (client_random.len() + secret.len()) + 3);
        line.push_str(label);
        line.push(' ');
        line.push_str(&super::hex(client_random));
        line.push(' ');
        line.push_str(&super::hex(secret));
        line.push('\n');
        // One write per line, so that two connections' lines never interleave; a write
        // that fails (a full disk) loses that line and never the connection.
        let mut file = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = file.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::{mkfifo, scratch};
    use rustls::KeyLog as _;

    #[test]
    fn lines_are_the_nss_format_appended_to_an_owner_only_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("keylog-lines");
        let path = dir.join("keys");
        let log = KeyLogFile::open(&path).unwrap();
        log.log(
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
            &[0x01, 0xab],
            &[0xff, 0x00],
        );
        let again = KeyLogFile::open(&path).unwrap();
        again.log("SERVER_TRAFFIC_SECRET_0", &[0x02], &[0x10]);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET 01ab ff00\nSERVER_TRAFFIC_SECRET_0 02 10\n"
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_fifo_or_a_directory_is_refused_without_blocking() {
        let dir = scratch("keylog-fifo");
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        let err = KeyLogFile::open(&fifo).unwrap_err().to_string();
        assert!(
            err.starts_with("SSLKEYLOGFILE ") && err.contains("FIFO"),
            "{err}"
        );
        // A reader on the FIFO: the open succeeds, the look through the descriptor refuses.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let err = KeyLogFile::open(&fifo).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        drop(reader);
        let err = KeyLogFile::open(&dir).unwrap_err().to_string();
        assert!(err.contains("directory, not a regular file"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
