//! Bounds-checked reads of numbers in the byte order of the traced machine.

use crate::{Error, Result};

/// Byte order of the traced machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Little endian (x86, most ARM).
    Little,
    /// Big endian.
    Big,
}

impl Endian {
    /// Reads an unsigned number of `size` bytes (1, 2, 4 or 8) at `at`; `None` if out of bounds
    /// or an odd size.
    #[inline]
    pub fn read_uint(self, data: &[u8], at: usize, size: usize) -> Option<u64> {
        // One bounds check per read: a fixed-size chunk of the bytes from `at` on.
        let d = data.get(at..)?;
        Some(match (size, self) {
            (1, _) => u64::from(*d.first()?),
            (2, Endian::Little) => u64::from(u16::from_le_bytes(*d.first_chunk()?)),
            (2, Endian::Big) => u64::from(u16::from_be_bytes(*d.first_chunk()?)),
            (4, Endian::Little) => u64::from(u32::from_le_bytes(*d.first_chunk()?)),
            (4, Endian::Big) => u64::from(u32::from_be_bytes(*d.first_chunk()?)),
            (8, Endian::Little) => u64::from_le_bytes(*d.first_chunk()?),
            (8, Endian::Big) => u64::from_be_bytes(*d.first_chunk()?),
            _ => return None,
        })
    }

    /// Reads a `u16` at `at`.
    #[inline]
    pub fn u16(self, data: &[u8], at: usize) -> Option<u16> {
        self.read_uint(data, at, 2).map(|v| v as u16)
    }

    /// Reads a `u32` at `at`.
    #[inline]
    pub fn u32(self, data: &[u8], at: usize) -> Option<u32> {
        self.read_uint(data, at, 4).map(|v| v as u32)
    }

    /// Reads a `u64` at `at`.
    #[inline]
    pub fn u64(self, data: &[u8], at: usize) -> Option<u64> {
        self.read_uint(data, at, 8)
    }

    /// Writes `v` as `size` bytes.
    pub fn put_uint(self, out: &mut Vec<u8>, v: u64, size: usize) {
        let bytes = match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        match self {
            Endian::Little => out.extend_from_slice(&bytes[..size]),
            Endian::Big => out.extend_from_slice(&bytes[8 - size..]),
        }
    }
}

/// A cursor over a byte buffer that knows its position in the file, so every error names
/// the file offset.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, whose first byte is at file offset `base`.
    pub fn new(data: &'a [u8], base: u64, endian: Endian) -> Cursor<'a> {
        Cursor {
            data,
            pos: 0,
            base,
            endian,
        }
    }

    /// The file offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Changes the byte order for what follows.
    pub fn set_endian(&mut self, endian: Endian) {
        self.endian = endian;
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                offset: self.offset(),
                what,
                needed: n as u64,
                available: self.remaining() as u64,
            });
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The next `n` bytes where `n` came from the file as a 64-bit size.
    pub fn bytes_u64(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(Error::Truncated {
                offset: self.offset(),
                what,
                needed: n,
                available: self.remaining() as u64,
            });
        }
        self.bytes(n as usize, what)
    }

    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub fn cstr(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = &self.data[self.pos..];
        match rest.iter().position(|b| *b == 0) {
            Some(n) => {
                self.pos += n + 1;
                Ok(&rest[..n])
            }
            None => Err(Error::Truncated {
                offset: self.offset(),
                what,
                needed: rest.len() as u64 + 1,
                available: rest.len() as u64,
            }),
        }
    }

    /// A byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.bytes(1, what)?[0])
    }

    /// A 16-bit number.
    pub fn u16(&mut self, what: &'static str) -> Result<u16> {
        let b = self.bytes(2, what)?;
        Ok(self.endian.u16(b, 0).unwrap_or_default())
    }

    /// A 32-bit number.
    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.bytes(4, what)?;
        Ok(self.endian.u32(b, 0).unwrap_or_default())
    }

    /// A 64-bit number.
    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        let b = self.bytes(8, what)?;
        Ok(self.endian.u64(b, 0).unwrap_or_default())
    }
}
