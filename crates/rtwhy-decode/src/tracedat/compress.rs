//! Decompression of trace.dat v7 sections and trace data chunks: zstd with libzstd (the
//! reference decoder, statically linked through the `zstd` crate, fuzzed upstream and
//! faster than rtwhy's own decoder was on every corpus file: docs/PERFORMANCE.md), zlib
//! with `miniz_oxide`.

use std::cell::RefCell;

use zstd::zstd_safe::{self, DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

use crate::{Error, Result};

thread_local! {
    /// libzstd's decompression context (tables and buffers), kept between the chunks
    /// one thread decompresses; made on first use.
    static ZSTD: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
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
            Codec::Zstd => ZSTD
                .with(|dctx| {
                    let mut dctx = dctx.borrow_mut();
                    if dctx.is_none() {
                        *dctx = DCtx::try_create();
                    }
                    match dctx.as_mut() {
                        Some(dctx) => zstd_into(dctx, data, expected as usize, out),
                        None => Err("libzstd could not allocate its context".to_string()),
                    }
                })
                .map_err(|e| {
                    Error::corrupt(offset, format!("zstd data does not decompress: {e}"))
                })?,
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

/// Decompresses the zstd frames of `data` into `out` (emptied first) with libzstd, to at
/// most `expected` bytes: more is an error, less is left to the caller's size check.
///
/// The expected size is only a claim from the file: `out` starts with what the input can
/// plausibly expand to (or the memory it already holds, reused from an earlier chunk)
/// and grows only as output really arrives, so a lying header costs no memory. When
/// `out` has room for the expected size (the usual case) libzstd decodes the frames in
/// one pass straight into `out`; otherwise it streams through its window, whose size a
/// frame may declare only up to 8 MiB or the expected size, whichever is larger.
fn zstd_into(
    dctx: &mut DCtx<'static>,
    data: &[u8],
    expected: usize,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    let name = |code| zstd_safe::get_error_name(code).to_string();
    out.clear();
    // Exact: an amortized reserve could double the buffer past the claim.
    out.reserve_exact(expected.min(data.len().saturating_mul(32).saturating_add(4096)));
    // Whole frames straight into `out` when it has room for the claim: the streaming
    // decoder below passes every byte through its window and copies it out again (when
    // a frame does not state its size, as trace-cmd's do not), which costs a copy and the
    // window's fresh pages. Only an exact fit is taken; anything else (an error, a short
    // or empty output) is decided by the streaming decoder, so that what is accepted and
    // every error message stay the same.
    if expected > 0 && out.capacity() >= expected {
        dctx.reset(ResetDirective::SessionOnly).map_err(name)?;
        if dctx.decompress(out, data).is_ok() && out.len() == expected {
            return Ok(());
        }
        out.clear();
    }
    dctx.reset(ResetDirective::SessionOnly).map_err(name)?;
    let window_log = usize::BITS - expected.saturating_sub(1).leading_zeros();
    dctx.set_parameter(DParameter::WindowLogMax(window_log.clamp(23, 31)))
        .map_err(name)?;
    let mut input = InBuffer::around(data);
    loop {
        let before = (input.pos(), out.len());
        let at = out.len();
        // Writing through the OutBuffer sets `out`'s length to the end of the output.
        let left = dctx
            .decompress_stream(&mut OutBuffer::around_pos(out, at), &mut input)
            .map_err(name)?;
        if out.len() > expected {
            return Err(format!("more than the expected {expected} bytes"));
        }
        if left == 0 && input.pos() == data.len() {
            return Ok(());
        }
        if out.len() == out.capacity() {
            // Full: room for more, up to one byte past the claim (which is an error).
            let room = out.capacity().max(4096).min(expected + 1 - out.len());
            out.reserve_exact(room);
        } else if (input.pos(), out.len()) == before {
            return Err("the data ends inside a frame".to_string());
        }
    }
}
