//! What can go wrong opening a capture or the terminal.

use std::path::PathBuf;

/// An error of the viewer, with the file or terminal it concerns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trace could not be opened or read (the decoder's message names the file).
    #[error("{0}")]
    Input(rtwhy_decode::Error),
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A directory holds no `spike-NNN.dat` capture.
    #[error("{path}: no captures (spike-NNN.dat) in this directory; give a trace.dat, report text or an `rtwhy record` session directory")]
    NoCaptures {
        /// The directory.
        path: PathBuf,
    },
    /// The trace holds more event data than the viewer indexes (4 GiB).
    #[error("{path}: more than 4 GiB of event data; cut the trace with `trace-cmd split` first")]
    TooLarge {
        /// The trace.
        path: PathBuf,
    },
    /// Standard output is not a terminal.
    #[error(
        "rtwhy tui needs a terminal (standard output is not one); use `rtwhy analyze` for a report"
    )]
    NotATerminal,
    /// The terminal is smaller than the viewer can lay out.
    #[error("the terminal is {width}x{height}; rtwhy tui needs at least {min_width}x{min_height}")]
    TooSmall {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
        /// Columns needed.
        min_width: u16,
        /// Rows needed.
        min_height: u16,
    },
    /// Talking to the terminal failed.
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// The viewer's result type.
pub type Result<T> = std::result::Result<T, Error>;
