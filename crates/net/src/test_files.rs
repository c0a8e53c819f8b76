//! Files for the unit tests of the readers and writers: a fresh scratch directory, and a
//! FIFO (the file kind whose plain `open` waits for ever, which they must refuse).

use std::path::{Path, PathBuf};

/// An empty directory of its own for the test named by `tag` (unique across the crate's
/// tests, which run in parallel in one process).
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("satquic-net-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Makes a FIFO at `path`, owner-only.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}
