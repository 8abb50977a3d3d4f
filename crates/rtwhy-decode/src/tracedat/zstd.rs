//! A Zstandard (RFC 8878) decoder for whole frames held in memory: the chunks and
//! sections trace-cmd writes are a few pages to a few megabytes each, and their
//! uncompressed size is known before decoding starts.
//!
//! Written for the decoder's two constraints: memory-safe on input from strangers (no
//! `unsafe`, every index checked, output bounded by the caller's limit) and fast enough
//! that decompression does not dominate printing a trace. It decodes straight into the
//! output buffer (no ring buffer or streaming copy), interleaves sequence decoding with
//! execution, and keeps each block's tables in a reusable [`Decoder`].
//!
//! Not supported, with an error: dictionaries. A frame's content checksum, where it has
//! one, is verified (trace-cmd writes none; the `zstd` command does).

use std::fmt;
use std::sync::OnceLock;

/// Why a frame did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZstdError(String);

impl fmt::Display for ZstdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

type Res<T> = std::result::Result<T, ZstdError>;

fn bad<T>(what: impl Into<String>) -> Res<T> {
    Err(ZstdError(what.into()))
}

const MAGIC: u32 = 0xFD2F_B528;
/// The most bits one sequence's three state updates take (the tables' largest
/// accuracies: literal lengths 9, match lengths 9, offsets 8).
const STATE_BITS: u32 = 26;
const BLOCK_MAX: usize = 128 << 10;

/// Decodes every frame of `input` into `out` (appended), producing at most `limit` bytes.
/// Tables are kept in the decoder between calls, so reuse one per thread.
pub fn decompress(dec: &mut Decoder, input: &[u8], out: &mut Vec<u8>, limit: usize) -> Res<()> {
    let start = out.len();
    decode_at(dec, input, out, start, limit)
}

/// [`decompress`] into `out` from its start, over what it held (not cleared first: a
/// buffer reused chunk after chunk is not zeroed each time). `out` ends as long as the
/// output, also after an error.
pub fn decompress_over(
    dec: &mut Decoder,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Res<()> {
    decode_at(dec, input, out, 0, limit)
}

/// Decodes into `out` from `start` on (what is there is written over), at most `limit`
/// bytes; `out` ends where the output does.
fn decode_at(
    dec: &mut Decoder,
    input: &[u8],
    out: &mut Vec<u8>,
    start: usize,
    limit: usize,
) -> Res<()> {
    let mut o = Out {
        buf: out,
        len: start,
        end: start.saturating_add(limit),
    };
    let r = frames(dec, input, &mut o);
    let len = o.len;
    out.truncate(len);
    r
}

fn frames(dec: &mut Decoder, input: &[u8], o: &mut Out<'_>) -> Res<()> {
    let mut at = 0usize;
    if input.is_empty() {
        return bad("empty zstd input");
    }
    while at < input.len() {
        let magic = le32(input, at).ok_or_else(|| ZstdError("truncated frame magic".into()))?;
        if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
            let size =
                le32(input, at + 4).ok_or_else(|| ZstdError("truncated skippable frame".into()))?;
            at = at
                .checked_add(8 + size as usize)
                .filter(|&e| e <= input.len())
                .ok_or_else(|| ZstdError("skippable frame runs past the input".into()))?;
            continue;
        }
        if magic != MAGIC {
            return bad(format!("not a zstd frame (magic {magic:#010x})"));
        }
        at = dec.frame(input, at + 4, o)?;
    }
    Ok(())
}

/// The output being written: `buf[..len]` is decoded, the rest is room, with [`SLACK`]
/// bytes past what is needed for copies that write whole words.
struct Out<'a> {
    buf: &'a mut Vec<u8>,
    len: usize,
    /// The caller's limit, as a length.
    end: usize,
}

/// Room kept past the output's end for word-sized copies.
const SLACK: usize = 32;

impl Out<'_> {
    /// Makes room for `n` more bytes, within the limit.
    #[inline]
    fn reserve(&mut self, n: usize) -> Res<()> {
        let need = self.len.saturating_add(n);
        if need > self.end {
            return bad("decompresses to more than expected");
        }
        if need.saturating_add(SLACK) > self.buf.len() {
            self.grow(need);
        }
        Ok(())
    }

    #[cold]
    fn grow(&mut self, need: usize) {
        // The caller's capacity first (its guess at the whole output), then doubling.
        let size = (self.buf.len() * 2)
            .max(self.buf.capacity())
            .min(self.end.saturating_add(SLACK))
            .max(need.saturating_add(SLACK));
        self.buf.resize(size, 0);
    }

    fn push_slice(&mut self, s: &[u8]) -> Res<()> {
        self.reserve(s.len())?;
        self.buf[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
        Ok(())
    }
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn le_n(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(n)?)?;
    Some(s.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

/// One state of an FSE decoding table: the symbol it stands for, and the next state as
/// `base` plus the next `bits` bits of the stream.
#[derive(Debug, Clone, Copy, Default)]
struct FseEntry {
    symbol: u8,
    bits: u8,
    base: u16,
}

/// An FSE decoding table of `1 << log` states.
#[derive(Debug, Clone, Default)]
struct FseTable {
    log: u32,
    entries: Vec<FseEntry>,
}

/// What the decoder keeps between blocks of a frame (and buffers between calls).
#[derive(Debug, Default)]
pub struct Decoder {
    /// The last Huffman table (treeless literals reuse it).
    huffman: Option<HuffTable>,
    /// The last tables of literal lengths, offsets and match lengths (for repeat mode).
    ll: Option<FseTable>,
    of: Option<FseTable>,
    ml: Option<FseTable>,
    /// The three repeat offsets.
    reps: [usize; 3],
    /// The current block's literals, when they are not stored raw in the block.
    literals: Vec<u8>,
    /// Probabilities read from a table description.
    probs: Vec<i16>,
}

/// A Huffman decoding table.
#[derive(Debug, Clone, Default)]
struct HuffTable {
    max_bits: u32,
    /// `symbol << 8 | bits`, indexed by the next `max_bits` bits.
    entries: Vec<u16>,
}

impl Decoder {
    /// Decodes one frame whose header starts at `at` (after the magic); returns where
    /// the next frame starts.
    fn frame(&mut self, input: &[u8], mut at: usize, out: &mut Out<'_>) -> Res<usize> {
        let desc = *input
            .get(at)
            .ok_or_else(|| ZstdError("truncated frame header".into()))?;
        at += 1;
        let fcs_flag = desc >> 6;
        let single = desc & 0x20 != 0;
        if desc & 0x08 != 0 {
            return bad("reserved bit set in the frame header");
        }
        let checksum = desc & 0x04 != 0;
        let dict_len = [0usize, 1, 2, 4][usize::from(desc & 3)];
        if !single {
            at += 1; // window descriptor: whole frames are decoded in memory
        }
        if dict_len > 0 {
            let id = le_n(input, at, dict_len)
                .ok_or_else(|| ZstdError("truncated frame header".into()))?;
            if id != 0 {
                return bad(format!(
                    "frame needs dictionary {id}, which rtwhy does not have"
                ));
            }
            at += dict_len;
        }
        let fcs_len = match fcs_flag {
            0 if single => 1,
            0 => 0,
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let content_size = if fcs_len > 0 {
            let v = le_n(input, at, fcs_len)
                .ok_or_else(|| ZstdError("truncated frame header".into()))?;
            at += fcs_len;
            Some(if fcs_len == 2 { v + 256 } else { v })
        } else {
            None
        };
        if let Some(cs) = content_size {
            if cs > (out.end - out.len) as u64 {
                return bad(format!("frame claims {cs} bytes, more than expected"));
            }
        }
        let frame_start = out.len;
        self.huffman = None;
        self.ll = None;
        self.of = None;
        self.ml = None;
        self.reps = [1, 4, 8];
        loop {
            let h = le_n(input, at, 3).ok_or_else(|| ZstdError("truncated block header".into()))?;
            at += 3;
            let last = h & 1 != 0;
            let kind = (h >> 1) & 3;
            let size = (h >> 3) as usize;
            match kind {
                0 => {
                    let data = input
                        .get(at..at + size)
                        .ok_or_else(|| ZstdError("raw block runs past the input".into()))?;
                    out.push_slice(data)?;
                    at += size;
                }
                1 => {
                    let b = *input
                        .get(at)
                        .ok_or_else(|| ZstdError("truncated RLE block".into()))?;
                    // libzstd takes RLE blocks of any size; the output limit bounds them.
                    out.reserve(size)?;
                    out.buf[out.len..out.len + size].fill(b);
                    out.len += size;
                    at += 1;
                }
                2 => {
                    if size > BLOCK_MAX {
                        return bad("compressed block larger than 128 KiB");
                    }
                    let block = input
                        .get(at..at + size)
                        .ok_or_else(|| ZstdError("compressed block runs past the input".into()))?;
                    self.block(block, out, frame_start)?;
                    at += size;
                }
                _ => return bad("reserved block type"),
            }
            if last {
                break;
            }
        }
        if checksum {
            let want =
                le32(input, at).ok_or_else(|| ZstdError("truncated content checksum".into()))?;
            let got = xxh64(&out.buf[frame_start..out.len]) as u32;
            if got != want {
                return bad(format!(
                    "content checksum {got:#010x} is not the frame's {want:#010x}"
                ));
            }
            at += 4;
        }
        if let Some(cs) = content_size {
            if (out.len - frame_start) as u64 != cs {
                return bad(format!(
                    "frame decoded to {} bytes, its header says {cs}",
                    out.len - frame_start
                ));
            }
        }
        Ok(at)
    }

    fn block(&mut self, block: &[u8], out: &mut Out<'_>, frame_start: usize) -> Res<()> {
        let (lit_src, used) = self.literals(block)?;
        let rest = block.get(used..).unwrap_or_default();
        // The literals: either borrowed from the block (raw) or in self.literals.
        let literals = std::mem::take(&mut self.literals);
        let r = {
            let lits: &[u8] = match lit_src {
                Lits::Raw(start, len) => &block[start..start + len],
                Lits::Buffer => &literals,
            };
            self.sequences(rest, lits, out, frame_start)
        };
        self.literals = literals;
        r
    }

    /// Reads the literals section; returns where the literals are and its length.
    fn literals(&mut self, b: &[u8]) -> Res<(Lits, usize)> {
        let b0 = *b
            .first()
            .ok_or_else(|| ZstdError("empty compressed block".into()))?;
        let kind = b0 & 3;
        let size_format = (b0 >> 2) & 3;
        match kind {
            0 | 1 => {
                let (regen, hdr) = match size_format {
                    0 | 2 => (usize::from(b0 >> 3), 1),
                    1 => {
                        let v = le_n(b, 0, 2).ok_or_else(trunc_lit)?;
                        ((v >> 4) as usize, 2)
                    }
                    _ => {
                        let v = le_n(b, 0, 3).ok_or_else(trunc_lit)?;
                        ((v >> 4) as usize, 3)
                    }
                };
                if regen > BLOCK_MAX {
                    return bad("literals larger than 128 KiB");
                }
                if kind == 0 {
                    if b.len() < hdr + regen {
                        return Err(trunc_lit());
                    }
                    Ok((Lits::Raw(hdr, regen), hdr + regen))
                } else {
                    let byte = *b.get(hdr).ok_or_else(trunc_lit)?;
                    self.literals.clear();
                    self.literals.resize(regen, byte);
                    Ok((Lits::Buffer, hdr + 1))
                }
            }
            _ => {
                let (hdr, bits, streams) = match size_format {
                    0 => (3, 10, 1),
                    1 => (3, 10, 4),
                    2 => (4, 14, 4),
                    _ => (5, 18, 4),
                };
                let v = le_n(b, 0, hdr).ok_or_else(trunc_lit)?;
                let mask = (1u64 << bits) - 1;
                let regen = ((v >> 4) & mask) as usize;
                let csize = ((v >> (4 + bits)) & mask) as usize;
                if regen > BLOCK_MAX {
                    return bad("literals larger than 128 KiB");
                }
                let data = b.get(hdr..hdr + csize).ok_or_else(trunc_lit)?;
                let tree_len = if kind == 2 {
                    let (table, used) = read_huffman_table(data)?;
                    self.huffman = Some(table);
                    used
                } else {
                    0
                };
                let Some(table) = &self.huffman else {
                    return bad("treeless literals with no earlier Huffman table");
                };
                let streams_data = &data[tree_len..];
                self.literals.clear();
                self.literals.resize(regen, 0);
                if streams == 1 {
                    huff_stream(table, streams_data, &mut self.literals)?;
                } else {
                    let s1 = le_n(streams_data, 0, 2).ok_or_else(trunc_lit)? as usize;
                    let s2 = le_n(streams_data, 2, 2).ok_or_else(trunc_lit)? as usize;
                    let s3 = le_n(streams_data, 4, 2).ok_or_else(trunc_lit)? as usize;
                    let total = streams_data.len().checked_sub(6).ok_or_else(trunc_lit)?;
                    let s4 = total.checked_sub(s1 + s2 + s3).ok_or_else(|| {
                        ZstdError("literal streams larger than their section".into())
                    })?;
                    let seg = regen.div_ceil(4);
                    if 3 * seg > regen {
                        return bad("too few literals for four streams");
                    }
                    let mut from = 6;
                    let mut lits: &mut [u8] = &mut self.literals;
                    for (i, len) in [s1, s2, s3, s4].into_iter().enumerate() {
                        let n = if i < 3 { seg } else { lits.len() };
                        let (dst, tail) = lits.split_at_mut(n);
                        huff_stream(table, &streams_data[from..from + len], dst)?;
                        lits = tail;
                        from += len;
                    }
                }
                Ok((Lits::Buffer, hdr + csize))
            }
        }
    }

    fn sequences(
        &mut self,
        b: &[u8],
        lits: &[u8],
        out: &mut Out<'_>,
        frame_start: usize,
    ) -> Res<()> {
        let b0 = *b
            .first()
            .ok_or_else(|| ZstdError("missing sequences section".into()))?;
        let (count, mut at) = match b0 {
            0 => (0usize, 1usize),
            1..=127 => (usize::from(b0), 1),
            128..=254 => {
                let b1 = *b.get(1).ok_or_else(trunc_seq)?;
                ((usize::from(b0 - 128) << 8) + usize::from(b1), 2)
            }
            255 => (le_n(b, 1, 2).ok_or_else(trunc_seq)? as usize + 0x7F00, 3),
        };
        if count == 0 {
            return out.push_slice(lits);
        }
        let modes = *b.get(at).ok_or_else(trunc_seq)?;
        at += 1;
        if modes & 3 != 0 {
            return bad("reserved bits set in the sequence compression modes");
        }
        // The tables' descriptions, in this order; each mode is two bits of `modes`.
        let slots = [
            (&mut self.ll, 6, Kind::Ll),
            (&mut self.of, 4, Kind::Of),
            (&mut self.ml, 2, Kind::Ml),
        ];
        for (slot, shift, kind) in slots {
            let mode = (modes >> shift) & 3;
            at += table_for(
                slot,
                mode,
                b.get(at..).unwrap_or_default(),
                kind,
                &mut self.probs,
            )?;
        }
        let (Some(ll_t), Some(of_t), Some(ml_t)) = (&self.ll, &self.of, &self.ml) else {
            return bad("sequence table missing");
        };
        let mut bits = BackBits::new(b.get(at..).unwrap_or_default())?;
        let mut ll_s = bits.read(ll_t.log) as usize;
        let mut of_s = bits.read(of_t.log) as usize;
        let mut ml_s = bits.read(ml_t.log) as usize;
        let mut lit_at = 0usize;
        let mut reps = self.reps;
        for i in 0..count {
            let (Some(lle), Some(ofe), Some(mle)) = (
                ll_t.entries.get(ll_s),
                of_t.entries.get(of_s),
                ml_t.entries.get(ml_s),
            ) else {
                return bad("FSE state out of its table");
            };
            let of_code = u32::from(ofe.symbol);
            let ml_code = usize::from(mle.symbol);
            let ll_code = usize::from(lle.symbol);
            let (ml_base, ml_bits) = ML[ml_code];
            let (ll_base, ll_bits) = LL[ll_code];
            // One reload holds the offset's (at most 31) and the match length's (16)
            // extra bits; a second one only where the literal length's (16) and the
            // three state updates' (9 + 9 + 8) would not fit.
            bits.reload();
            let of_value = (1u64 << of_code) + bits.read_loaded(of_code);
            let ml = ml_base as usize + bits.read_loaded(u32::from(ml_bits)) as usize;
            if bits.consumed + u32::from(ll_bits) + STATE_BITS > 64 {
                bits.reload();
            }
            let ll = ll_base as usize + bits.read_loaded(u32::from(ll_bits)) as usize;
            let offset = if of_value > 3 {
                let o = (of_value - 3) as usize;
                reps = [o, reps[0], reps[1]];
                o
            } else {
                // A repeat offset: values 1-3 pick rep1-rep3, or after no literals
                // rep2, rep3, rep1 - 1; the one used moves to the front.
                match of_value as usize - usize::from(ll != 0) {
                    0 => reps[0],
                    1 => {
                        let o = reps[1];
                        reps = [o, reps[0], reps[2]];
                        o
                    }
                    2 => {
                        let o = reps[2];
                        reps = [o, reps[0], reps[1]];
                        o
                    }
                    _ => {
                        let o = reps[0].wrapping_sub(1);
                        reps = [o, reps[0], reps[1]];
                        o
                    }
                }
            };
            if i + 1 < count {
                ll_s = usize::from(lle.base) + bits.read_loaded(u32::from(lle.bits)) as usize;
                ml_s = usize::from(mle.base) + bits.read_loaded(u32::from(mle.bits)) as usize;
                of_s = usize::from(ofe.base) + bits.read_loaded(u32::from(ofe.bits)) as usize;
            }
            // Execute: literals, then the match.
            if lit_at + ll > lits.len() {
                return bad("sequence needs more literals than the block has");
            }
            out.reserve(ll + ml)?;
            let op = out.len;
            let buf = &mut out.buf[..];
            if ll <= 16 && lit_at + 16 <= lits.len() {
                buf[op..op + 16].copy_from_slice(&lits[lit_at..lit_at + 16]);
            } else {
                buf[op..op + ll].copy_from_slice(&lits[lit_at..lit_at + ll]);
            }
            lit_at += ll;
            let op = op + ll;
            if offset == 0 || offset > op - frame_start {
                return bad(format!("match offset {offset} reaches before the frame"));
            }
            copy_match(buf, op, offset, ml);
            out.len = op + ml;
        }
        if bits.remaining() != 0 {
            return bad("sequence bitstream not consumed exactly");
        }
        self.reps = reps;
        out.push_slice(&lits[lit_at.min(lits.len())..])
    }
}

/// Where a block's literals are.
enum Lits {
    /// Stored as they are in the block: (start, length).
    Raw(usize, usize),
    /// Decoded into [`Decoder::literals`].
    Buffer,
}

fn trunc_lit() -> ZstdError {
    ZstdError("truncated literals section".into())
}

fn trunc_seq() -> ZstdError {
    ZstdError("truncated sequences section".into())
}

/// Writes `len` bytes at `op` copied from `offset` bytes back (an overlapping copy
/// repeats the pattern). `buf` has [`SLACK`] bytes of room past `op + len`, which whole-word
/// copies may overwrite.
#[inline]
fn copy_match(buf: &mut [u8], op: usize, offset: usize, len: usize) {
    let mut src = op - offset;
    if offset >= len && len > 8 {
        // Apart: one copy.
        buf.copy_within(src..src + len, op);
    } else if offset >= 8 {
        let mut dst = op;
        let end = op + len;
        while dst < end {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[src..src + 8]);
            buf[dst..dst + 8].copy_from_slice(&w);
            src += 8;
            dst += 8;
        }
    } else {
        for dst in op..op + len {
            buf[dst] = buf[src];
            src += 1;
        }
    }
}

/// Reads a bitstream backwards: its last byte's highest set bit marks the end, and
/// values are taken from there towards the first byte. Reading past the first bit gives
/// meaningless values and makes [`BackBits::remaining`] negative, which every caller
/// checks before it trusts what it decoded.
struct BackBits<'a> {
    data: &'a [u8],
    /// The container holds the stream's bytes `base..base + 8` (zeros past its end).
    base: usize,
    bits: u64,
    /// Bits of the container already read, from its top.
    consumed: u32,
}

impl<'a> BackBits<'a> {
    fn new(data: &'a [u8]) -> Res<BackBits<'a>> {
        let Some(&last) = data.last() else {
            return bad("empty bitstream");
        };
        if last == 0 {
            return bad("bitstream without its end mark");
        }
        let base = data.len().saturating_sub(8);
        let bits = le_tail(data, base);
        // Everything above the end mark, and the mark itself, counts as read.
        let unread = (data.len() - base) * 8 - 1 - last.leading_zeros() as usize;
        Ok(BackBits {
            data,
            base,
            bits,
            consumed: 64 - unread as u32,
        })
    }

    /// Bits not read yet; negative once reading went past the first.
    fn remaining(&self) -> isize {
        (self.base * 8) as isize + 64 - self.consumed as isize
    }

    /// Moves the container down so that at least 56 bits are unread in it (when the
    /// stream has them).
    #[inline]
    fn reload(&mut self) {
        let back = (self.consumed as usize / 8).min(self.base);
        if back > 0 {
            self.base -= back;
            self.consumed -= back as u32 * 8;
            self.bits = match self.data.get(self.base..).and_then(<[u8]>::first_chunk) {
                Some(s) => u64::from_le_bytes(*s),
                None => le_tail(self.data, self.base),
            };
        }
    }

    /// The next `n` (at most 56) bits without reading them.
    #[inline]
    fn peek(&mut self, n: u32) -> u64 {
        if self.consumed + n > 64 {
            self.reload();
        }
        self.peek_loaded(n)
    }

    /// [`BackBits::peek`] when the container is known to hold `n` unread bits. Past the
    /// stream's first bit (`consumed` over 64) it returns garbage, never panics: such a
    /// stream fails its end check ([`BackBits::remaining`] is negative).
    #[inline]
    fn peek_loaded(&self, n: u32) -> u64 {
        ((self.bits << (self.consumed & 63)) >> 1) >> ((63 - n) & 63)
    }

    #[inline]
    fn skip(&mut self, n: u32) {
        self.consumed += n;
    }

    #[inline]
    fn read(&mut self, n: u32) -> u64 {
        let v = self.peek(n);
        self.consumed += n;
        v
    }

    /// [`BackBits::read`] when the container is known to hold `n` unread bits.
    #[inline]
    fn read_loaded(&mut self, n: u32) -> u64 {
        let v = self.peek_loaded(n);
        self.consumed += n;
        v
    }
}

fn le_tail(data: &[u8], byte: usize) -> u64 {
    let mut w = [0u8; 8];
    let s = data.get(byte..).unwrap_or_default();
    let n = s.len().min(8);
    w[..n].copy_from_slice(&s[..n]);
    u64::from_le_bytes(w)
}

/// Decodes one Huffman-coded literal stream filling `dst` exactly.
fn huff_stream(table: &HuffTable, data: &[u8], dst: &mut [u8]) -> Res<()> {
    let mut bits = BackBits::new(data)?;
    let mb = table.max_bits;
    let mask = table.entries.len() - 1;
    let entries = &table.entries[..];
    // Four symbols of at most 11 bits fit in what one reload leaves unread.
    let mut quads = dst.chunks_exact_mut(4);
    for q in &mut quads {
        bits.reload();
        for d in q {
            let e = entries[bits.peek_loaded(mb) as usize & mask];
            *d = (e >> 8) as u8;
            bits.skip(u32::from(e as u8));
        }
    }
    for d in quads.into_remainder() {
        let e = entries[bits.peek(mb) as usize & mask];
        *d = (e >> 8) as u8;
        bits.skip(u32::from(e as u8));
    }
    if bits.remaining() != 0 {
        return bad("Huffman stream not consumed exactly");
    }
    Ok(())
}

/// Reads a Huffman tree description; returns the table and the bytes it took.
fn read_huffman_table(data: &[u8]) -> Res<(HuffTable, usize)> {
    let hb = *data.first().ok_or_else(trunc_lit)?;
    let mut weights = [0u8; 256];
    let (n, used) = if hb < 128 {
        let body = data
            .get(1..1 + usize::from(hb))
            .ok_or_else(|| ZstdError("truncated Huffman weights".into()))?;
        let mut probs = Vec::new();
        let (table, tlen) = read_fse_table(body, 6, 255, &mut probs)?;
        let n = fse_weights(&table, body.get(tlen..).unwrap_or_default(), &mut weights)?;
        (n, 1 + usize::from(hb))
    } else {
        let n = usize::from(hb - 127);
        let bytes = data
            .get(1..1 + n.div_ceil(2))
            .ok_or_else(|| ZstdError("truncated Huffman weights".into()))?;
        for i in 0..n {
            let b = bytes[i / 2];
            weights[i] = if i % 2 == 0 { b >> 4 } else { b & 15 };
        }
        (n, 1 + n.div_ceil(2))
    };
    // The last symbol's weight is what brings the total to a power of two.
    let mut sum = 0u32;
    for &w in &weights[..n] {
        if w > 11 {
            return bad("Huffman weight above 11");
        }
        if w > 0 {
            sum += 1 << (w - 1);
        }
    }
    if sum == 0 || n >= 256 {
        return bad("bad Huffman weights");
    }
    let max_bits = 32 - sum.leading_zeros(); // bit length of sum: next power is 1 << max_bits
    let left = (1u32 << max_bits) - sum;
    if !left.is_power_of_two() || max_bits > 11 {
        return bad("Huffman weights do not sum to a power of two");
    }
    weights[n] = (left.trailing_zeros() + 1) as u8;
    let symbols = &weights[..=n];
    let size = 1usize << max_bits;
    // The table is sorted by weight, then by symbol; a symbol of weight w spans
    // 2^(w-1) entries. Where each weight's run starts, then one pass over the symbols.
    let mut start = [0usize; 13];
    for &w in symbols {
        start[usize::from(w)] += 1;
    }
    let mut pos = 0usize;
    for (w, at) in start.iter_mut().enumerate().skip(1) {
        let count = *at;
        *at = pos;
        pos += count << (w - 1);
    }
    if pos != size {
        return bad("Huffman table incomplete");
    }
    let mut entries = vec![0u16; size];
    for (s, &w) in symbols.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let span = 1usize << (w - 1);
        let at = start[usize::from(w)];
        start[usize::from(w)] = at + span;
        let e = ((s as u16) << 8) | u16::from(max_bits as u8 + 1 - w);
        entries
            .get_mut(at..at + span)
            .ok_or_else(|| ZstdError("Huffman table overflows".into()))?
            .fill(e);
    }
    Ok((HuffTable { max_bits, entries }, used))
}

/// Decodes Huffman weights with two interleaved FSE states; returns how many.
fn fse_weights(table: &FseTable, data: &[u8], weights: &mut [u8; 256]) -> Res<usize> {
    let mut bits = BackBits::new(data)?;
    let mut s1 = bits.read(table.log) as usize;
    let mut s2 = bits.read(table.log) as usize;
    let mut n = 0usize;
    let entry = |s: usize| {
        table
            .entries
            .get(s)
            .copied()
            .ok_or_else(|| ZstdError("FSE state out of its table".into()))
    };
    loop {
        for turn in 0..2 {
            let (cur, other) = if turn == 0 {
                (&mut s1, s2)
            } else {
                (&mut s2, s1)
            };
            let e = entry(*cur)?;
            if n >= 255 {
                return bad("too many Huffman weights");
            }
            weights[n] = e.symbol;
            n += 1;
            *cur = usize::from(e.base) + bits.read(u32::from(e.bits)) as usize;
            if bits.remaining() < 0 {
                if n >= 255 {
                    return bad("too many Huffman weights");
                }
                weights[n] = entry(other)?.symbol;
                return Ok(n + 1);
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Ll,
    Of,
    Ml,
}

/// Sets `slot` for a sequence table's mode; returns the bytes the description took.
fn table_for(
    slot: &mut Option<FseTable>,
    mode: u8,
    data: &[u8],
    kind: Kind,
    probs: &mut Vec<i16>,
) -> Res<usize> {
    let (max_sym, max_log, default, default_log): (usize, u32, &[i16], u32) = match kind {
        Kind::Ll => (35, 9, &LL_DEFAULT, 6),
        Kind::Of => (31, 8, &OF_DEFAULT, 5),
        Kind::Ml => (52, 9, &ML_DEFAULT, 6),
    };
    match mode {
        0 => {
            // The predefined tables, built once per process.
            static BUILT: [OnceLock<FseTable>; 3] =
                [OnceLock::new(), OnceLock::new(), OnceLock::new()];
            let built = &BUILT[kind as usize];
            let table = match built.get() {
                Some(t) => t,
                None => {
                    let t = build_fse(default, default_log)?;
                    built.get_or_init(|| t)
                }
            };
            match slot {
                Some(s) => {
                    s.log = table.log;
                    s.entries.clone_from(&table.entries);
                }
                None => *slot = Some(table.clone()),
            }
            Ok(0)
        }
        1 => {
            let s = *data.first().ok_or_else(trunc_seq)?;
            if usize::from(s) > max_sym {
                return bad("RLE sequence symbol out of range");
            }
            *slot = Some(FseTable {
                log: 0,
                entries: vec![FseEntry {
                    symbol: s,
                    bits: 0,
                    base: 0,
                }],
            });
            Ok(1)
        }
        2 => {
            let (t, used) = read_fse_table(data, max_log, max_sym, probs)?;
            *slot = Some(t);
            Ok(used)
        }
        _ => {
            if slot.is_none() {
                return bad("repeated sequence table with none before");
            }
            Ok(0)
        }
    }
}

/// Reads an FSE table description (forward bits) and builds its decoding table.
fn read_fse_table(
    data: &[u8],
    max_log: u32,
    max_sym: usize,
    probs: &mut Vec<i16>,
) -> Res<(FseTable, usize)> {
    let mut pos = 0usize; // bit position
    let read = |pos: usize, n: u32| -> u64 {
        let byte = pos / 8;
        (le_tail(data, byte) >> (pos % 8)) & ((1u64 << n) - 1)
    };
    if data.is_empty() {
        return bad("truncated FSE table");
    }
    let log = read(pos, 4) as u32 + 5;
    pos += 4;
    if log > max_log {
        return bad(format!("FSE accuracy {log} above {max_log}"));
    }
    probs.clear();
    let mut remaining = (1i32 << log) + 1;
    let mut threshold = 1i32 << log;
    let mut nb = log + 1;
    while remaining > 1 {
        if probs.len() > max_sym {
            return bad("FSE table has too many symbols");
        }
        let max = (2 * threshold - 1) - remaining;
        let low = read(pos, nb - 1) as i32;
        let count = if low < max {
            pos += (nb - 1) as usize;
            low
        } else {
            let mut v = read(pos, nb) as i32;
            if v >= threshold {
                v -= max;
            }
            pos += nb as usize;
            v
        };
        let prob = count - 1;
        remaining -= prob.abs();
        probs.push(prob as i16);
        if prob == 0 {
            loop {
                let r = read(pos, 2) as usize;
                pos += 2;
                for _ in 0..r {
                    probs.push(0);
                }
                if probs.len() > max_sym + 1 {
                    return bad("FSE table has too many symbols");
                }
                if r != 3 {
                    break;
                }
            }
        }
        while remaining < threshold && nb > 1 {
            nb -= 1;
            threshold >>= 1;
        }
        if pos > data.len() * 8 {
            return bad("truncated FSE table");
        }
    }
    if remaining != 1 || probs.len() > max_sym + 1 {
        return bad("FSE probabilities do not add up");
    }
    Ok((build_fse(probs, log)?, pos.div_ceil(8)))
}

/// Builds a decoding table from normalized probabilities (-1: "less than one").
fn build_fse(probs: &[i16], log: u32) -> Res<FseTable> {
    let size = 1usize << log;
    let mut entries = vec![FseEntry::default(); size];
    let mut next = [0u32; 256];
    let mut high = size - 1;
    for (s, &p) in probs.iter().enumerate() {
        if p == -1 {
            entries[high].symbol = s as u8;
            high = high.wrapping_sub(1);
            next[s] = 1;
        } else if p > 0 {
            next[s] = p as u32;
        }
    }
    let step = (size >> 1) + (size >> 3) + 3;
    let mask = size - 1;
    let mut pos = 0usize;
    for (s, &p) in probs.iter().enumerate() {
        for _ in 0..p.max(0) {
            entries[pos].symbol = s as u8;
            loop {
                pos = (pos + step) & mask;
                if high >= size || pos <= high {
                    break;
                }
            }
        }
    }
    if pos != 0 {
        return bad("FSE table does not spread evenly");
    }
    for e in entries.iter_mut() {
        let s = usize::from(e.symbol);
        let state = next[s];
        next[s] += 1;
        if state == 0 {
            return bad("FSE symbol without probability");
        }
        let bits = log - (31 - state.leading_zeros());
        e.bits = bits as u8;
        e.base = ((state << bits) as usize - size) as u16;
    }
    Ok(FseTable { log, entries })
}

const LL_DEFAULT: [i16; 36] = [
    4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
    -1, -1, -1, -1,
];
const ML_DEFAULT: [i16; 53] = [
    1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
];
const OF_DEFAULT: [i16; 29] = [
    1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
];

/// Literal length codes: baseline and extra bits (codes below 16 are the length).
const LL: [(u32, u8); 36] = codes(
    0,
    [
        16, 1, 18, 1, 20, 1, 22, 1, 24, 2, 28, 2, 32, 3, 40, 3, 48, 4, 64, 6, 128, 7, 256, 8, 512,
        9, 1024, 10, 2048, 11, 4096, 12, 8192, 13, 16384, 14, 32768, 15, 65536, 16,
    ],
);

/// Match length codes: baseline and extra bits (codes below 32 are the length less 3).
const ML: [(u32, u8); 53] = codes(
    3,
    [
        35, 1, 37, 1, 39, 1, 41, 1, 43, 2, 47, 2, 51, 3, 59, 3, 67, 4, 83, 4, 99, 5, 131, 7, 259,
        8, 515, 9, 1027, 10, 2051, 11, 4099, 12, 8195, 13, 16387, 14, 32771, 15, 65539, 16,
    ],
);

/// A code table of `N` codes: first those whose baseline is the code plus `plus` (no
/// extra bits), then one per (baseline, extra bits) pair given flat in `high`.
const fn codes<const N: usize, const F: usize>(plus: u32, high: [u32; F]) -> [(u32, u8); N] {
    let mut t = [(0u32, 0u8); N];
    let low = N - F / 2;
    let mut i = 0;
    while i < N {
        t[i] = if i < low {
            (i as u32 + plus, 0)
        } else {
            (high[2 * (i - low)], high[2 * (i - low) + 1] as u8)
        };
        i += 1;
    }
    t
}

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

fn le64(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

fn xxh_round(acc: u64, v: u64) -> u64 {
    acc.wrapping_add(v.wrapping_mul(P2))
        .rotate_left(31)
        .wrapping_mul(P1)
}

/// XXH64 with seed 0, whose low 32 bits are a frame's content checksum.
fn xxh64(data: &[u8]) -> u64 {
    let mut rest = data;
    let mut h = if data.len() >= 32 {
        let mut v = [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)];
        let mut stripes = data.chunks_exact(32);
        for s in &mut stripes {
            for (i, acc) in v.iter_mut().enumerate() {
                *acc = xxh_round(*acc, le64(&s[i * 8..]));
            }
        }
        rest = stripes.remainder();
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for acc in v {
            h = (h ^ xxh_round(0, acc)).wrapping_mul(P1).wrapping_add(P4);
        }
        h
    } else {
        P5
    };
    h = h.wrapping_add(data.len() as u64);
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        h ^= xxh_round(0, le64(w));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
    }
    let mut rest = words.remainder();
    if rest.len() >= 4 {
        let v = u64::from(u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]));
        h ^= v.wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        rest = &rest[4..];
    }
    for &b in rest {
        h ^= u64::from(b).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh64_matches_known_values() {
        // Reference values of XXH64 with seed 0.
        assert_eq!(xxh64(b""), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"a"), 0xD24E_C4F1_A98C_6E5B);
        assert_eq!(xxh64(b"abc"), 0x44BC_2CF5_AD77_0999);
        assert_eq!(
            xxh64(b"Nobody inspects the spammish repetition"),
            0xFBCE_A83C_8A37_8BF1
        );
    }
}
