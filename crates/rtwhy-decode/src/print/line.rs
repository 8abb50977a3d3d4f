//! The text a printer writes: bytes that are UTF-8 by construction.
//!
//! Every write is of a `&str`, a `char`, digits and other ASCII the printer made itself
//! (asserted in debug builds) or bytes from the trace checked on the way in, so the
//! buffer is always UTF-8; unlike `String` it does not check a string field's bytes a
//! second time when they are ASCII, and its ASCII writes are one byte each. Whoever
//! needs a `str` gets one through [`Line::to_string_lossy`], which checks again.

use std::fmt;

/// Printed text, one or more lines. See the module documentation.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Line(Vec<u8>);

impl Line {
    /// An empty buffer with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Line {
        Line(Vec::with_capacity(n))
    }

    /// The text, to write out.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Empties it, keeping its memory.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Appends a string.
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
    }

    /// Appends a character.
    #[inline]
    pub fn push(&mut self, c: char) {
        if c.is_ascii() {
            self.0.push(c as u8);
        } else {
            self.0
                .extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }

    /// Appends bytes as text; invalid UTF-8 becomes U+FFFD, as a terminal would show it.
    #[inline]
    pub(crate) fn push_lossy(&mut self, b: &[u8]) {
        if b.is_ascii() || std::str::from_utf8(b).is_ok() {
            self.0.extend_from_slice(b);
            return;
        }
        for chunk in b.utf8_chunks() {
            self.push_str(chunk.valid());
            if !chunk.invalid().is_empty() {
                self.push(char::REPLACEMENT_CHARACTER);
            }
        }
    }

    /// Appends ASCII bytes of a size known when compiling (a column of digits): one
    /// copy, no per-byte checks.
    #[inline]
    pub(crate) fn push_ascii_array<const N: usize>(&mut self, a: &[u8; N]) {
        debug_assert!(a.is_ascii());
        self.0.extend_from_slice(a);
    }

    /// Appends a few ASCII bytes (the digits of a number) byte by byte after one
    /// reservation: for so few, cheaper than a call to `memcpy`.
    #[inline]
    pub(crate) fn push_ascii_short(&mut self, b: &[u8]) {
        debug_assert!(b.is_ascii());
        self.0.extend(b.iter().copied());
    }

    /// Appends the first `n` bytes of `block`, ASCII (what follows them may be anything):
    /// the whole block in one copy of a size known when compiling, then cut back to `n`;
    /// cheaper than copying `n` bytes.
    #[inline]
    pub(crate) fn push_ascii_block<const N: usize>(&mut self, block: &[u8; N], n: usize) {
        debug_assert!(block.get(..n).is_some_and(<[u8]>::is_ascii));
        let at = self.0.len();
        self.0.extend_from_slice(block);
        self.0.truncate(at + n.min(N));
    }

    /// Appends a [`Snippet`].
    #[inline]
    pub(crate) fn push_snippet(&mut self, s: &Snippet) {
        match s {
            Snippet::Short(block, n) => {
                let at = self.0.len();
                self.0.extend_from_slice(block);
                self.0.truncate(at + usize::from(*n));
            }
            Snippet::Long(s) => self.push_str(s),
        }
    }

    /// Reserves room for `n` more bytes.
    pub fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    /// Whether the text ends with the ASCII byte `b`.
    pub(crate) fn ends_with_byte(&self, b: u8) -> bool {
        self.0.last() == Some(&b)
    }

    /// Drops the last byte, which the caller knows to be ASCII (so what is left is still
    /// whole characters).
    pub(crate) fn pop_ascii(&mut self) {
        if self.0.last().is_some_and(u8::is_ascii) {
            self.0.pop();
        }
    }

    /// The bytes from `at` on.
    pub(crate) fn tail(&self, at: usize) -> &[u8] {
        self.0.get(at..).unwrap_or_default()
    }

    /// Appends another buffer's text.
    pub fn push_line(&mut self, other: &Line) {
        self.0.extend_from_slice(&other.0);
    }

    /// Appends `text[from..to]` of another buffer, cut at byte positions this printer
    /// wrote at (so between characters).
    pub(crate) fn push_range(&mut self, text: &Line, from: usize, to: usize) {
        self.push_lossy(text.0.get(from..to).unwrap_or_default());
    }

    /// The text as a string. Always whole: the bytes are UTF-8 by construction (checked
    /// again here, without `unsafe`, by `str::from_utf8`, which passes ASCII a word at a
    /// time where the lossy conversion goes byte by byte).
    pub fn to_string_lossy(&self) -> std::borrow::Cow<'_, str> {
        match std::str::from_utf8(&self.0) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(&self.0),
        }
    }
}

/// Fixed text printed again and again (a field's ` name=`): where it is short, appended
/// as one copy of a whole block cut to its length, cheaper than copying a length known
/// only then.
#[derive(Debug, Clone)]
pub(crate) enum Snippet {
    /// The text, then padding; its length (the cut falls between characters).
    Short([u8; SNIPPET], u8),
    Long(Box<str>),
}

const SNIPPET: usize = 32;

impl Snippet {
    pub(crate) fn new(s: &str) -> Snippet {
        let mut block = [0u8; SNIPPET];
        match (block.get_mut(..s.len()), u8::try_from(s.len())) {
            (Some(head), Ok(n)) => {
                head.copy_from_slice(s.as_bytes());
                Snippet::Short(block, n)
            }
            _ => Snippet::Long(s.into()),
        }
    }
}

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write;

    #[test]
    fn every_write_keeps_it_utf8() {
        let mut l = Line::default();
        l.push_str("sched_switch: ");
        l.push('é');
        l.push('x');
        l.push_lossy(b"0x1f");
        l.push_lossy(b"ok \xc2\xa0 \xc2");
        // A block's bytes past the ones kept need not be text (a string's tail after
        // its NUL).
        l.push_ascii_block(b"ab\0\xff\xc2", 2);
        let _ = write!(l, " {}", 42);
        assert_eq!(
            l.to_string_lossy(),
            "sched_switch: éx0x1fok \u{a0} \u{fffd}ab 42"
        );
        assert!(std::str::from_utf8(l.as_bytes()).is_ok());
        assert!(l.ends_with_byte(b'2'));
        l.pop_ascii();
        assert_eq!(l.tail(l.len() - 2), b" 4");
    }

    #[test]
    fn snippets_short_and_long() {
        let mut l = Line::default();
        let long = "x".repeat(SNIPPET + 1);
        for s in ["", " prev_comm=", "ü", &"y".repeat(SNIPPET), &long] {
            l.push_snippet(&Snippet::new(s));
        }
        let want = format!(" prev_comm=ü{}{long}", "y".repeat(SNIPPET));
        assert_eq!(l.to_string_lossy(), want);
    }
}
