//! The layout of an `rtwhy record` session directory, named in one place: the recorder
//! writes it, and `rtwhy tui DIR`, `rtwhy summary` and the error for a directory given
//! as a trace read it.

use std::path::{Path, PathBuf};

/// An `rtwhy record --out DIR` directory: `session.json` and one `spike-NNN.dat` per
/// capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionDir {
    root: PathBuf,
}

impl SessionDir {
    /// The session's manifest, rewritten atomically as the recording goes on.
    pub const MANIFEST: &'static str = "session.json";

    /// Every watched thread's wake-up histogram and its tail by cause
    /// ([`crate::Overview`]), rewritten with the manifest.
    pub const OVERVIEW: &'static str = "overview.json";

    /// The session directory at `root`.
    pub fn new(root: impl Into<PathBuf>) -> SessionDir {
        SessionDir { root: root.into() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The manifest's path.
    pub fn manifest(&self) -> PathBuf {
        self.root.join(Self::MANIFEST)
    }

    /// The overview's path.
    pub fn overview(&self) -> PathBuf {
        self.root.join(Self::OVERVIEW)
    }

    /// The file name of capture `index` (`spike-001.dat`).
    pub fn capture_name(index: u64) -> String {
        format!("spike-{index:03}.dat")
    }

    /// The path of capture `index`.
    pub fn capture(&self, index: u64) -> PathBuf {
        self.root.join(Self::capture_name(index))
    }

    /// Whether a file name is a capture's.
    pub fn is_capture_name(name: &str) -> bool {
        name.starts_with("spike-") && name.ends_with(".dat")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_are_numbered_in_three_digits_and_recognised() {
        let d = SessionDir::new("/s");
        assert_eq!(d.capture(7), Path::new("/s/spike-007.dat"));
        assert_eq!(d.manifest(), Path::new("/s/session.json"));
        assert!(SessionDir::is_capture_name(&SessionDir::capture_name(123)));
        assert!(!SessionDir::is_capture_name("session.json"));
    }
}
