//! Errors of the recorder, each naming what failed, where, and the fix when known.

use std::path::PathBuf;

/// What went wrong while recording.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A tracefs file could not be read or written.
    #[error("{path}: {source}")]
    Tracefs {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// tracefs is missing or cannot be mounted.
    #[error("tracefs is not available: {0}")]
    NoTracefs(String),
    /// The recorder lacks the privileges it needs.
    #[error("{0} (run as root, or with CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON and CAP_SYS_NICE)")]
    Privilege(String),
    /// The BPF detector could not be loaded or attached.
    #[error("BPF detector: {0}")]
    Bpf(String),
    /// The output directory or a capture file could not be written.
    #[error("{path}: {source}")]
    Output {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The command to record could not be started.
    #[error("cannot start {command}: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Something else, already phrased for the user.
    #[error("{0}")]
    Other(String),
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, RecordError>;

impl From<rtwhy_sys::child::SpawnError> for RecordError {
    fn from(e: rtwhy_sys::child::SpawnError) -> Self {
        match e {
            rtwhy_sys::child::SpawnError::Io { command, source } => {
                RecordError::Spawn { command, source }
            }
            other => RecordError::Other(other.to_string()),
        }
    }
}
