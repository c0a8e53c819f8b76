//! Standard output for every command: a reader that goes away (`satquic presets | head
//! -1`) ends the command quietly instead of panicking in `println!`.
//!
//! [`outln!`] and [`out!`] write to stdout and return [`Failure::Closed`] when the pipe
//! is closed; a command passes it up with `?` and `main` exits 0 without a word. Files a
//! command writes (records, runs.csv, reports) are written before its summary is
//! printed, so nothing is lost when the summary has nowhere to go.

use std::io::Write as _;

use crate::Failure;

/// Writes `args` to stdout. A closed pipe is [`Failure::Closed`]; any other write error
/// is a failure of the command.
pub fn write(args: std::fmt::Arguments) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .map_err(failure)
}

fn failure(e: std::io::Error) -> Failure {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => Failure::Closed,
        _ => Failure::Other(format!("cannot write to stdout: {e}")),
    }
}

/// Stdout through a buffer, for output of millions of rows that is printed as it is made
/// (one flush per row cost a system call each); errors as [`write`]'s.
pub struct Buffered(std::io::BufWriter<std::io::StdoutLock<'static>>);

impl Buffered {
    pub fn new() -> Self {
        Buffered(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout().lock(),
        ))
    }

    pub fn write(&mut self, args: std::fmt::Arguments) -> Result<(), Failure> {
        self.0.write_fmt(args).map_err(failure)
    }

    /// Flushes what is left.
    pub fn finish(mut self) -> Result<(), Failure> {
        self.0.flush().map_err(failure)
    }
}

/// `println!` that returns `Result<(), Failure>` instead of panicking.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that returns `Result<(), Failure>` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}
