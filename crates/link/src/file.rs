//! Reading the files a user names, bounded: the one way satquic reads a link file, a
//! trace, and (through the crates above this one) campaign specs, adapter files, run
//! records and reports.
//!
//! A path given on the command line or in a spec can name anything: `/dev/zero`, a FIFO
//! nobody writes to, a sparse file of 10 GB. Reading such a thing whole would take all
//! memory or never return, so every read here
//!
//! - looks at the file first (`stat`, which does not open it): anything but a regular
//!   file is refused, so a FIFO cannot block and a device cannot stream forever;
//! - refuses a file whose size is above the limit of its kind ([`FileLimit`]) before
//!   reading a byte, so a huge file is refused at once;
//! - reads through a reader that stops with an error once it has passed the limit
//!   ([`BoundedFile`]), so a file that grows while it is read is bounded too.
//!
//! Each crate keeps the limits of the files it reads in one place, as named
//! [`FileLimit`] constants; this crate's are [`LINK_FILE`] and [`TRACE_FILE`]. Every
//! error is one line that names the file, what is wrong and the limit.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path as FsPath;

/// A kind of file and the most bytes satquic reads of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimit {
    /// What the file is, for messages (`link file`, `campaign spec`).
    pub what: &'static str,
    /// Largest accepted size, bytes.
    pub max_bytes: u64,
}

/// A satquic-link TOML file (`--link FILE`, a campaign's `[[link]] file`): 4 MiB, checked
/// before it is read. Parsing TOML takes 25 to 45 times the file's size (a 127 MB file
/// took 3.4 GB), so this keeps a link under 200 MB; a trace inline (`timestamps_ms`, about
/// 10 bytes per opportunity) may hold some 400,000 opportunities, a longer one goes in a
/// mahimahi file (`file = ...`, [`TRACE_FILE`]), read line by line.
pub const LINK_FILE: FileLimit = FileLimit {
    what: "link file",
    max_bytes: 4 << 20,
};

/// A mahimahi trace (`rate = { kind = "mahimahi_trace", file = ... }`): 64 MiB, about 8
/// million opportunities, 10 minutes of a 150 Mbit/s link at 1500 bytes each.
pub const TRACE_FILE: FileLimit = FileLimit {
    what: "mahimahi trace",
    max_bytes: 64 << 20,
};

impl FileLimit {
    /// The limit for people: `128 MiB`, `4 KiB`, `100 bytes`.
    pub fn size_text(&self) -> String {
        let b = self.max_bytes;
        match b {
            _ if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
            _ if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
            _ if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
            _ => format!("{b} bytes"),
        }
    }

    fn too_large(&self, size: &str) -> String {
        format!(
            "{size}, above the {} limit for the {} ({} bytes)",
            self.size_text(),
            self.what,
            self.max_bytes
        )
    }
}

/// Why a file was not read; `Display` is one line: the path, then the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The file as given.
    pub path: String,
    /// What is wrong, with the limit where that is the problem.
    pub reason: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for FileError {}

fn error(path: &FsPath, reason: impl Into<String>) -> FileError {
    FileError {
        path: path.display().to_string(),
        reason: reason.into().replace('\n', " "),
    }
}

/// An open regular file that reads at most its [`FileLimit`]: a read past the limit
/// fails with an error that states it (a file can grow after it was checked).
#[derive(Debug)]
pub struct BoundedFile {
    inner: io::Take<File>,
    limit: FileLimit,
    read_bytes: u64,
}

impl Read for BoundedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read_bytes += n as u64;
        if self.read_bytes > self.limit.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                self.limit.too_large("grew while read"),
            ));
        }
        Ok(n)
    }
}

/// Opens `path` for a bounded read: a regular file of at most `limit.max_bytes`.
pub fn open(path: &FsPath, limit: FileLimit) -> Result<BoundedFile, FileError> {
    open_sized(path, limit).map(|(file, _)| file)
}

/// The bytes of `path`, a regular file of at most `limit.max_bytes`.
pub fn read(path: &FsPath, limit: FileLimit) -> Result<Vec<u8>, FileError> {
    let (mut file, size) = open_sized(path, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|e| error(path, e.to_string()))?;
    Ok(bytes)
}

/// The text of `path`, a regular UTF-8 file of at most `limit.max_bytes`.
pub fn read_to_string(path: &FsPath, limit: FileLimit) -> Result<String, FileError> {
    let bytes = read(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        error(
            path,
            format!(
                "not UTF-8 text (byte {}); the {} is text",
                e.utf8_error().valid_up_to(),
                limit.what
            ),
        )
    })
}

/// The open file and its size when it was checked.
fn open_sized(path: &FsPath, limit: FileLimit) -> Result<(BoundedFile, u64), FileError> {
    let size = check(path, limit)?;
    // A FIFO put in the file's place after the check would block here; one that was
    // there before is refused by `check`, which does not open it.
    let file = File::open(path).map_err(|e| error(path, e.to_string()))?;
    let bounded = BoundedFile {
        inner: file.take(limit.max_bytes + 1),
        limit,
        read_bytes: 0,
    };
    Ok((bounded, size))
}

/// Refuses what is not a regular file of at most `limit.max_bytes`, without opening it;
/// returns its size.
fn check(path: &FsPath, limit: FileLimit) -> Result<u64, FileError> {
    let meta = std::fs::metadata(path).map_err(|e| error(path, e.to_string()))?;
    if !meta.is_file() {
        return Err(error(
            path,
            format!(
                "{}, not a regular file; satquic reads the {} from a regular file of at most {}",
                kind_of(&meta.file_type()),
                limit.what,
                limit.size_text()
            ),
        ));
    }
    if meta.len() > limit.max_bytes {
        return Err(error(
            path,
            limit.too_large(&format!("{} bytes", meta.len())),
        ));
    }
    Ok(meta.len())
}

/// What a non-regular file is, for messages ("a FIFO", "a directory"): the reason every
/// reader of a user's file gives when it refuses one.
pub fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const SMALL: FileLimit = FileLimit {
        what: "test file",
        max_bytes: 16,
    };

    fn temp_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("satquic-file-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn one_line(e: &FileError) -> String {
        let text = e.to_string();
        assert!(!text.contains('\n'), "{text:?}");
        text
    }

    #[test]
    fn a_file_within_its_limit_is_read_whole() {
        let dir = temp_dir("ok");
        let path = dir.join("f");
        std::fs::write(&path, "sixteen bytes ok").unwrap();
        assert_eq!(read_to_string(&path, SMALL).unwrap(), "sixteen bytes ok");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn devices_fifos_directories_and_large_files_are_refused_at_once_with_the_limit() {
        let started = Instant::now();
        let e = read(FsPath::new("/dev/zero"), LINK_FILE).unwrap_err();
        let text = one_line(&e);
        assert!(
            text.contains("character device") && text.contains("4 MiB"),
            "{text}"
        );
        let dir = temp_dir("kinds");
        let e = read(&dir, SMALL).unwrap_err();
        assert!(one_line(&e).contains("a directory"), "{e}");
        // A FIFO nobody writes to: opening it would block forever.
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        if made {
            let e = read_to_string(&fifo, TRACE_FILE).unwrap_err();
            assert!(one_line(&e).contains("a FIFO"), "{e}");
        }
        // A sparse file of 10 GB is refused by its size, before a byte is read.
        let sparse = dir.join("sparse");
        File::create(&sparse)
            .unwrap()
            .set_len(10_000_000_000)
            .unwrap();
        let e = read_to_string(&sparse, LINK_FILE).unwrap_err();
        let text = one_line(&e);
        assert!(
            text.contains("10000000000 bytes") && text.contains("4 MiB limit for the link file"),
            "{text}"
        );
        let over = dir.join("over");
        std::fs::write(&over, [b'x'; 17]).unwrap();
        assert!(read(&over, SMALL).unwrap_err().reason.contains("17 bytes"));
        assert!(started.elapsed() < Duration::from_secs(5));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_reader_stops_at_the_limit_even_if_the_file_grew() {
        let dir = temp_dir("grow");
        let path = dir.join("f");
        std::fs::write(&path, "small").unwrap();
        let mut file = open(&path, SMALL).unwrap();
        std::fs::write(&path, [b'x'; 64]).unwrap();
        let mut buf = Vec::new();
        let e = file.read_to_end(&mut buf).unwrap_err();
        assert!(e.to_string().contains("16 bytes"), "{e}");
        assert!(buf.len() <= 17);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn binary_is_not_text_and_missing_files_say_why() {
        let dir = temp_dir("bin");
        let path = dir.join("f");
        std::fs::write(&path, [0xff, 0xfe, 0]).unwrap();
        assert!(
            read_to_string(&path, SMALL)
                .unwrap_err()
                .reason
                .contains("not UTF-8")
        );
        let e = read(&dir.join("missing"), SMALL).unwrap_err();
        assert!(one_line(&e).contains("No such file"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn limits_read_in_binary_units() {
        assert_eq!(LINK_FILE.size_text(), "4 MiB");
        assert_eq!(TRACE_FILE.size_text(), "64 MiB");
        assert_eq!(SMALL.size_text(), "16 bytes");
    }
}
