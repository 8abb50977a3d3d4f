//! Where trace.dat bytes come from: a file read piece by piece (so memory does not
//! grow with the file), or bytes already in memory (tests, fuzzing).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::{Error, Result};

/// Random-access bytes.
pub trait Source: Send + Sync {
    /// Total length.
    fn len(&self) -> u64;
    /// Whether there are no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads as many bytes as are available at `offset` into `buf`, returning how many.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl Source for File {
    fn len(&self) -> u64 {
        self.metadata().map(|m| m.len()).unwrap_or(0)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match FileExt::read_at(self, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

impl Source for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.as_slice().len());
        let n = buf.len().min(self.as_slice().len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// Shared handle to a source with a file length known up front.
#[derive(Clone)]
pub struct Bytes {
    inner: Arc<dyn Source>,
    len: u64,
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.len)
    }
}

impl Bytes {
    /// Wraps a source.
    pub fn new(source: Arc<dyn Source>) -> Bytes {
        let len = source.len();
        Bytes { inner: source, len }
    }

    /// Total length.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the source is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Exactly `len` bytes at `offset`, or a truncation error naming `what`. The length is
    /// checked against the file before anything is allocated.
    pub fn read_exact(&self, offset: u64, len: u64, what: &'static str) -> Result<Vec<u8>> {
        let available = self.len.saturating_sub(offset);
        if len > available {
            return Err(Error::Truncated {
                offset,
                what,
                needed: len,
                available,
            });
        }
        let mut buf = vec![0u8; len as usize];
        self.fill(offset, &mut buf, what)?;
        Ok(buf)
    }

    /// Fills `buf` from `offset`, or fails naming `what`.
    pub fn fill(&self, offset: u64, buf: &mut [u8], what: &'static str) -> Result<()> {
        let n = self
            .inner
            .read_at(offset, buf)
            .map_err(|e| Error::corrupt(offset, format!("reading {what}: {e}")))?;
        if n < buf.len() {
            return Err(Error::Truncated {
                offset,
                what,
                needed: buf.len() as u64,
                available: n as u64,
            });
        }
        Ok(())
    }

    /// Up to `max` bytes at `offset` (fewer at the end of the file).
    pub fn read_upto(&self, offset: u64, max: usize) -> Result<Vec<u8>> {
        let n = (self.len.saturating_sub(offset)).min(max as u64) as usize;
        let mut buf = vec![0u8; n];
        self.fill(offset, &mut buf, "data")?;
        Ok(buf)
    }
}
