//! Decompression of trace.dat v7 sections and trace data chunks (zstd with rtwhy's own
//! decoder, zlib with `miniz_oxide`), pure Rust.

use std::cell::RefCell;

use super::zstd;

use crate::{Error, Result};

thread_local! {
    /// Tables and buffers kept between the chunks one thread decompresses.
    static ZSTD: RefCell<zstd::Decoder> = RefCell::default();
}

/// Largest uncompressed piece accepted: trace-cmd compresses in chunks of a few pages, so
/// anything bigger is a corrupt size, not data.
pub const MAX_UNCOMPRESSED: u64 = 256 << 20;

/// The file's compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Sections are stored as they are.
    None,
    /// zlib (RFC 1950) streams.
    Zlib,
    /// Zstandard frames.
    Zstd,
}

impl Codec {
    /// The codec for a trace.dat compression name (`none`, `zlib`, `zstd`).
    pub fn from_name(name: &str, offset: u64) -> Result<Codec> {
        match name {
            "none" | "" => Ok(Codec::None),
            "zlib" => Ok(Codec::Zlib),
            "zstd" => Ok(Codec::Zstd),
            other => Err(Error::Unsupported {
                offset,
                what: format!("compression {other:?} (rtwhy reads none, zlib and zstd); convert the file with `trace-cmd convert --compression zstd`"),
            }),
        }
    }

    /// Decompresses `data` (at file offset `offset`) that must expand to exactly `expected` bytes.
    pub fn decompress(self, data: &[u8], expected: u64, offset: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.decompress_into(data, expected, offset, &mut out)?;
        Ok(out)
    }

    /// [`Codec::decompress`] into `out`, replacing what it held and reusing its memory
    /// (zstd writes over the old bytes instead of clearing them first).
    pub fn decompress_into(
        self,
        data: &[u8],
        expected: u64,
        offset: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if expected > MAX_UNCOMPRESSED {
            return Err(Error::corrupt(
                offset,
                format!("compressed block claims {expected} bytes uncompressed"),
            ));
        }
        match self {
            Codec::None => {
                out.clear();
                out.extend_from_slice(data);
            }
            Codec::Zlib => {
                *out =
                    miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(data, expected as usize)
                        .map_err(|e| {
                            Error::corrupt(
                                offset,
                                format!("zlib data does not inflate: {:?}", e.status),
                            )
                        })?
            }
            Codec::Zstd => {
                // The header's size is only a claim: reserve what the input can plausibly
                // expand to and let real data grow the buffer up to the claim.
                let hint =
                    (expected as usize).min(data.len().saturating_mul(32).saturating_add(4096));
                out.reserve(hint.saturating_sub(out.len()));
                ZSTD.with(|dec| {
                    let mut dec = dec.borrow_mut();
                    zstd::decompress_over(&mut dec, data, out, expected as usize)
                })
                .map_err(|e| {
                    Error::corrupt(offset, format!("zstd data does not decompress: {e}"))
                })?;
            }
        }
        if out.len() as u64 != expected {
            return Err(Error::corrupt(
                offset,
                format!(
                    "block decompressed to {} bytes, its header says {expected}",
                    out.len()
                ),
            ));
        }
        Ok(())
    }
}
