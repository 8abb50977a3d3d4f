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

/// Result of decoding.
pub type Result<T> = std::result::Result<T, Error>;
