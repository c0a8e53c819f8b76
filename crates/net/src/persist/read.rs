//! Reading a state file: only a regular file, private to the user running satquic, of at
//! most its bound, and never by an `open` that can block.
//!
//! A path on the command line can name a FIFO nobody writes to, whose plain `open` waits
//! for a writer for ever. So the file is looked at first (`stat`, which does not open
//! it), then opened with `O_NONBLOCK` and looked at again through the descriptor: a FIFO
//! put in its place between the two is refused as well, never waited on.
//!
//! Whoever can write one of these files steers the server (a saved window it jumps to, a
//! token key), and whoever can read one learns client addresses or can forge tokens: a
//! file that others may read or write, or that another user owns, is refused with the
//! command that fixes it.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use satquic_link::file::kind_of;

/// The file at `path` whole, or `None` if there is none. Anything but a regular file, a
/// file above `max_bytes`, one that others may read or write or another user owns, and
/// one that cannot be read are refused with a one-line reason.
pub fn read_private(path: &Path, max_bytes: u64) -> Result<Option<Vec<u8>>, String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
        Ok(meta) => check_regular(&meta)?,
    }
    let Some(file) = open_without_blocking(path)? else {
        return Ok(None);
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    check_regular(&meta)?;
    check_private(&meta)?;
    check_size(&meta, max_bytes)?;
    read_at_most(file, meta.len(), max_bytes).map(Some)
}

/// Opens `path` to read with `O_NONBLOCK` (which changes nothing for a regular file, and
/// makes the open of a FIFO return at once); `None` if it vanished since it was looked at.
fn open_without_blocking(path: &Path) -> Result<Option<File>, String> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read it: {e}")),
    }
}

fn check_regular(meta: &Metadata) -> Result<(), String> {
    if meta.is_file() {
        return Ok(());
    }
    Err(format!(
        "{}, not a regular file",
        kind_of(&meta.file_type())
    ))
}

/// Refuses a file another user owns, or whose mode lets others read or write it.
fn check_private(meta: &Metadata) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "owned by user {}, not by this one ({me}); satquic reads only its own files \
             here (chown it, or remove it to start afresh)",
            meta.uid()
        ));
    }
    let shared = meta.mode() & 0o077;
    if shared != 0 {
        return Err(format!(
            "others may read or write it (mode bits {shared:03o}); chmod 600 it"
        ));
    }
    Ok(())
}

fn check_size(meta: &Metadata, max_bytes: u64) -> Result<(), String> {
    if meta.len() > max_bytes {
        return Err(format!(
            "{} bytes, above the {max_bytes} bytes such a file can reach",
            meta.len()
        ));
    }
    Ok(())
}

/// The file's bytes, refused if it grew past `max_bytes` since it was looked at.
fn read_at_most(file: File, size: u64, max_bytes: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!("above the {max_bytes} bytes such a file can reach"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::{mkfifo, scratch};
    use std::os::unix::fs::PermissionsExt;

    fn private_file(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn a_reader_refuses_what_is_above_its_bound_and_misses_nothing_else() {
        let dir = scratch("read-bound");
        let path = dir.join("state.json");
        assert_eq!(read_private(&path, 10), Ok(None));
        private_file(&path, b"0123456789");
        assert_eq!(read_private(&path, 10).unwrap().unwrap().len(), 10);
        private_file(&path, b"0123456789A");
        assert!(read_private(&path, 10).unwrap_err().contains("11 bytes"));
        let e = read_private(&dir, 10).unwrap_err();
        assert!(e.contains("a directory, not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = scratch("read-fifo");
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        let e = read_private(&fifo, 10).unwrap_err();
        assert!(e.contains("a FIFO, not a regular file"), "{e}");
        // The open the race would reach: it returns, and the descriptor says FIFO.
        let file = open_without_blocking(&fifo).unwrap().unwrap();
        assert!(check_regular(&file.metadata().unwrap()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_others_may_read_or_write_is_refused() {
        let dir = scratch("read-mode");
        let path = dir.join("state.json");
        for mode in [0o644, 0o620, 0o604, 0o660] {
            std::fs::write(&path, b"{}").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_private(&path, 10).unwrap_err();
            assert!(e.contains("chmod 600"), "{mode:o}: {e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_another_user_owns_is_refused() {
        // Only root can give a file away; elsewhere the check is the uid comparison above.
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("not root: cannot make a file another user owns");
            return;
        }
        let dir = scratch("read-owner");
        let path = dir.join("state.json");
        private_file(&path, b"{}");
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let e = read_private(&path, 10).unwrap_err();
        assert!(e.contains("owned by user 65534"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
