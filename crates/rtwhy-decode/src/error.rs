//! The decoder's errors: a file that cannot be opened or read, bytes that break the
//! format at a known offset, data that ends inside a structure, a format or feature the
//! decoder does not read. Each names where it happened, so the binary can print one line
//! a user can act on.

use std::path::PathBuf;

/// What went wrong while decoding, with where it went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read at all.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes at `offset` are not what the format requires.
    #[error("at file offset {offset:#x}: {what}")]
    Corrupt {
        /// Byte offset in the file (or in the buffer being decoded).
        offset: u64,
        /// What was expected or what was wrong.
        what: String,
    },
    /// The data ended before a structure did.
    #[error(
        "at file offset {offset:#x}: truncated: {what} needs {needed} bytes, {available} left"
    )]
    Truncated {
        /// Where the structure starts.
        offset: u64,
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: u64,
    },
    /// An event `format` description could not be parsed.
    #[error("event format {name:?}: line {line}: {what}")]
    Format {
        /// The event (or `header_page`).
        name: String,
        /// 1-based line in the format text.
        line: usize,
        /// What was wrong.
        what: String,
    },
    /// A feature the file uses that rtwhy does not read.
    #[error("at file offset {offset:#x}: unsupported: {what}")]
    Unsupported {
        /// Where it was found.
        offset: u64,
        /// What it is, and what to do about it.
        what: String,
    },
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A directory was given where a trace file belongs.
    #[error("{}", directory_message(.path, .capture.as_deref()))]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Its first capture, when it is a recording session.
        capture: Option<PathBuf>,
    },
    /// No format recognises the file.
    #[error("{path}: neither a trace.dat (no trace-cmd magic at offset 0) nor `trace-cmd report` text; record with `trace-cmd extract` or give the report output")]
    NotATrace {
        /// The file.
        path: PathBuf,
    },
    /// A recognised file could not be opened as its format.
    #[error("{path} is not a readable {format}: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The format it looked like.
        format: &'static str,
        /// What was wrong.
        source: Box<Error>,
    },
    /// Reading a file's events failed.
    #[error("{path}: {source}")]
    In {
        /// The file.
        path: PathBuf,
        /// What was wrong, and where in the file.
        source: Box<Error>,
    },
    /// A `trace-cmd report` text line could not be read.
    #[error("line {line}: {what}")]
    Text {
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        what: String,
    },
}

impl Error {
    pub(crate) fn corrupt(offset: u64, what: impl Into<String>) -> Error {
        Error::Corrupt {
            offset,
            what: what.into(),
        }
    }
}

fn directory_message(path: &std::path::Path, capture: Option<&std::path::Path>) -> String {
    match capture {
        Some(c) => format!(
            "{} is a recording session; give one of its captures ({}) or open them all with `rtwhy tui {}`",
            path.display(),
            c.display(),
            path.display()
        ),
        None => format!(
            "{} is a directory; give a trace.dat or report text file",
            path.display()
        ),
    }
}

impl Error {
    /// `self`, said to have happened in the file at `path`.
    pub fn in_file(self, path: &std::path::Path) -> Error {
        Error::In {
            path: path.to_path_buf(),
            source: Box::new(self),
        }
    }
}

/// Result of decoding.
pub type Result<T> = std::result::Result<T, Error>;
