//! What a trace file carries besides events: kernel symbols, `trace_printk` formats and
//! saved command lines (pid to task name).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A text of the trace file read the first time it is asked for, or ahead of that on a
/// thread of its own ([`Kallsyms::read_ahead`]). A kallsyms section is megabytes of
/// compressed text that printing raw records, or counting them, may never need.
/// Clones share the text (and its one reading).
#[derive(Clone, Default)]
pub struct LazyText(Arc<Lazy>);

#[derive(Default)]
struct Lazy {
    text: OnceLock<Result<Box<str>, String>>,
    read: Mutex<Option<Box<Reader>>>,
    /// Whether [`LazyText::get`] was called: an error is reported only then, so that what
    /// a command says does not depend on how far a read-ahead got.
    asked: AtomicBool,
}

type Reader = dyn FnOnce() -> Result<String, String> + Send;

impl LazyText {
    /// A text already read.
    pub fn new(text: String) -> LazyText {
        let lazy = Lazy::default();
        let _ = lazy.text.set(Ok(text.into()));
        LazyText(Arc::new(lazy))
    }

    /// A text `read` produces when first asked for; its error, if it fails, is kept for
    /// [`Self::error`] and the text is then empty.
    pub fn deferred(read: impl FnOnce() -> Result<String, String> + Send + 'static) -> LazyText {
        let lazy = Lazy {
            text: OnceLock::new(),
            read: Mutex::new(Some(Box::new(read))),
            asked: AtomicBool::new(false),
        };
        LazyText(Arc::new(lazy))
    }

    /// The text (read now if it was not yet, or waited for if a read-ahead is reading
    /// it); empty if reading it failed.
    pub fn get(&self) -> &str {
        self.0.asked.store(true, Ordering::Relaxed);
        self.fill().as_deref().unwrap_or_default()
    }

    fn fill(&self) -> &Result<Box<str>, String> {
        self.0.text.get_or_init(|| {
            // The reader runs once: the first caller takes it, and OnceLock makes any
            // other caller wait for that one's result.
            let read = self.0.read.lock().ok().and_then(|mut r| r.take());
            let Some(read) = read else {
                return Ok(Box::from(""));
            };
            // A reader that panics (a decoder bug) leaves an error, not a text that
            // silently stays empty for the next caller.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
                .unwrap_or_else(|_| Err("reading the section failed (a decoder bug)".into()))
                .map(String::into_boxed_str)
        })
    }

    /// Why the text could not be read, once something asked for it.
    pub fn error(&self) -> Option<&str> {
        if !self.0.asked.load(Ordering::Relaxed) {
            return None;
        }
        self.0.text.get()?.as_ref().err().map(String::as_str)
    }
}

impl From<String> for LazyText {
    fn from(text: String) -> LazyText {
        LazyText::new(text)
    }
}

/// Texts compare by content (reading both if they were not yet).
impl PartialEq for LazyText {
    fn eq(&self, other: &LazyText) -> bool {
        self.get() == other.get()
    }
}

impl Eq for LazyText {}

impl std::fmt::Debug for LazyText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.text.get() {
            Some(Ok(t)) => write!(f, "LazyText({} bytes)", t.len()),
            Some(Err(e)) => write!(f, "LazyText(unreadable: {e})"),
            None => f.write_str("LazyText(not read yet)"),
        }
    }
}

/// One kallsyms line, as offsets into the kept text: no allocation per symbol (a table
/// holds a few hundred thousand of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Symbol {
    addr: u64,
    name: (u32, u32),
    /// `(0, 0)` when the line names no module.
    module: (u32, u32),
    kind: u8,
}

/// Kernel symbols from `/proc/kallsyms`, for turning addresses into `function+0x10`.
///
/// A kallsyms table holds a few hundred thousand lines; it is parsed the first time a
/// symbol is looked up, or ahead of that by [`Self::read_ahead`].
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    text: LazyText,
    /// Sorted by address; symbols sharing an address keep their file order. Shared by
    /// clones, as the text is.
    entries: Arc<OnceLock<Vec<Symbol>>>,
    /// A read-ahead was started (by this or a clone): one thread reads, however often
    /// it is asked.
    reading: Arc<AtomicBool>,
}

impl Kallsyms {
    /// Keeps kallsyms text (`ffffffff81000000 T _stext [module]`) to be parsed on first
    /// use; bad lines are skipped then.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::from_text(LazyText::new(text.to_string()))
    }

    /// Kallsyms text read only when first needed (see [`LazyText`]).
    pub fn from_text(text: LazyText) -> Kallsyms {
        Kallsyms {
            text,
            entries: Arc::default(),
            reading: Arc::default(),
        }
    }

    /// Reads the text and parses the table on a thread of its own, so that the first
    /// lookup finds them ready (or nearer): a kallsyms section takes tens of milliseconds
    /// to decompress, and nearly every command looks a symbol up. Nothing is reported
    /// from the thread (see [`LazyText::error`]); if it cannot be started, the first
    /// lookup reads and parses.
    pub fn read_ahead(&self) {
        if self.entries.get().is_some() || self.reading.swap(true, Ordering::Relaxed) {
            return;
        }
        let k = self.clone();
        let _ = std::thread::Builder::new()
            .name("rtwhy-read-ahead".into())
            .spawn(move || {
                let text = k.text.fill().as_deref().unwrap_or_default();
                k.entries.get_or_init(|| parse_entries(text));
            });
    }

    /// The kallsyms text (read now if it was not yet).
    pub fn text(&self) -> &LazyText {
        &self.text
    }

    /// Lines of the kallsyms text: the number of symbols, without parsing them.
    pub fn line_count(&self) -> usize {
        self.text
            .get()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count()
    }

    /// Whether the table is parsed already (by a read-ahead or a lookup), so that a lookup
    /// now does not wait.
    pub fn is_parsed(&self) -> bool {
        self.entries.get().is_some()
    }

    fn entries(&self) -> &[Symbol] {
        // The text first, also when a read-ahead parsed the table: asking for it is what
        // lets its error be reported.
        let text = self.text.get();
        self.entries.get_or_init(|| parse_entries(text))
    }

    /// All symbols as (address, name as a byte range of the text for [`Self::slice`],
    /// type letter), in [`Self::iter`]'s order.
    pub(crate) fn iter_ranges(&self) -> impl Iterator<Item = (u64, (u32, u32), u8)> + '_ {
        self.entries().iter().map(|e| (e.addr, e.name, e.kind))
    }

    pub(crate) fn slice(&self, (start, end): (u32, u32)) -> &str {
        self.text
            .get()
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The symbol at or below `addr`: (start address, name, module).
    pub fn lookup(&self, addr: u64) -> Option<(u64, &str, Option<&str>)> {
        let entries = self.entries();
        let idx = entries.partition_point(|e| e.addr <= addr);
        let e = entries.get(idx.checked_sub(1)?)?;
        let module = (e.module.1 > e.module.0).then(|| self.slice(e.module));
        Some((e.addr, self.slice(e.name), module))
    }

    /// All symbols as (address, name, kallsyms type letter), sorted by address, symbols
    /// sharing an address in file order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &str, char)> {
        self.entries()
            .iter()
            .map(|e| (e.addr, self.slice(e.name), char::from(e.kind)))
    }

    /// Every symbol at exactly `addr` (aliases share an address), in file order:
    /// (name, kallsyms type letter, module).
    pub fn all_at(&self, addr: u64) -> impl Iterator<Item = (&str, char, Option<&str>)> {
        let entries = self.entries();
        let from = entries.partition_point(|e| e.addr < addr);
        entries
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(move |e| e.addr == addr)
            .map(|e| {
                let module = (e.module.1 > e.module.0).then(|| self.slice(e.module));
                (self.slice(e.name), char::from(e.kind), module)
            })
    }

    /// The symbol whose address is exactly `addr`.
    pub fn exact(&self, addr: u64) -> Option<&str> {
        self.lookup(addr)
            .filter(|(start, _, _)| *start == addr)
            .map(|(_, n, _)| n)
    }
}

/// Splits each line at ASCII whitespace, as libtraceevent's `sscanf("%llx %c %s")` does
/// (ASCII bytes never occur inside a multi-byte UTF-8 character, so every piece is a
/// valid `str` range). One pass over the bytes, each looked at once: a kallsyms text is
/// a few hundred thousand lines, read before the first symbol prints.
fn parse_entries(text: &str) -> Vec<Symbol> {
    let bytes = text.as_bytes();
    // Offsets are u32: a kallsyms text over 4 GiB is not a kallsyms text.
    if u32::try_from(bytes.len()).is_err() {
        return Vec::new();
    }
    let mut entries = Vec::with_capacity(bytes.len() / 40);
    let mut start = 0usize;
    while start < bytes.len() {
        if let Some((sym, end)) = kernel_line(bytes, start) {
            entries.push(sym);
            start = end + 1;
            continue;
        }
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |n| start + n);
        entries.extend(any_line(bytes, start, end));
        start = end + 1;
    }
    entries.sort_by_key(|e| e.addr);
    entries
}

/// A line as the kernel writes it, `<hex> <type> <name>` and optionally `\t[<module>]`,
/// read in one pass over its bytes without splitting words, with where it ends (its
/// newline, or the end of the text): the line end is found by the scan of the name or
/// module instead of a search of its own. `None` for any other shape; [`any_line`] reads
/// those, and accepts every line this one accepts with the same result.
#[inline]
fn kernel_line(bytes: &[u8], start: usize) -> Option<(Symbol, usize)> {
    let line = bytes.get(start..)?;
    let digits = if line.get(16) == Some(&b' ') {
        16
    } else {
        line.iter().take(17).position(|&b| b == b' ')?
    };
    let addr = hex_short(line.get(..digits)?)?;
    let kind = *line.get(digits + 1)?;
    if kind <= b' ' || line.get(digits + 2) != Some(&b' ') {
        return None;
    }
    let name_at = digits + 3;
    let word_end = |from: usize| from + word_len(line.get(from..).unwrap_or_default());
    let name_end = word_end(name_at);
    if name_end == name_at {
        return None;
    }
    let (module, end) = match line.get(name_end) {
        None | Some(b'\n') => ((0, 0), name_end),
        Some(b'\t') => {
            let module_end = word_end(name_end + 1);
            if module_end == name_end + 1 || !matches!(line.get(module_end), None | Some(b'\n')) {
                return None;
            }
            let span = ((start + name_end + 1) as u32, (start + module_end) as u32);
            (module_name(bytes, span), module_end)
        }
        Some(_) => return None,
    };
    let sym = Symbol {
        addr,
        name: ((start + name_at) as u32, (start + name_end) as u32),
        module,
        kind,
    };
    Some((sym, start + end))
}

/// How many bytes of `text` come before the first at or below a space (a tab, a newline
/// or another control byte: each ends a kallsyms word), or its length. Eight bytes at a
/// time: a name is some twenty bytes and there are a few hundred thousand of them.
#[inline]
fn word_len(text: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut chunks = text.chunks_exact(8);
    let mut done = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // The high bit of each byte below 0x21 is set, and maybe those of bytes after
        // it (a borrow runs upwards), never of one before it: the lowest set bit is the
        // first such byte.
        let below = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
        if below != 0 {
            return done + (below.trailing_zeros() / 8) as usize;
        }
        done += 8;
    }
    let rest = chunks.remainder();
    done + rest.iter().position(|&b| b <= b' ').unwrap_or(rest.len())
}

/// Any line: its words split at ASCII whitespace.
fn any_line(bytes: &[u8], start: usize, end: usize) -> Option<Symbol> {
    // The first four words of the line (more are ignored), and how many.
    let mut words = [(0u32, 0u32); 4];
    let mut count = 0usize;
    let mut word_start: Option<usize> = None;
    for i in start..=end {
        let b = bytes.get(i).copied().unwrap_or(b'\n');
        if b.is_ascii_whitespace() || i == end {
            if let Some(s) = word_start.take() {
                if let Some(w) = words.get_mut(count) {
                    *w = (s as u32, i as u32);
                }
                count += 1;
            }
        } else if word_start.is_none() {
            word_start = Some(i);
        }
    }
    symbol_of(bytes, &words, count)
}

/// The symbol of a line whose first `count` words (at most four kept) are `words`: an
/// address, a type letter, a name, and an optional `[module]`.
fn symbol_of(bytes: &[u8], words: &[(u32, u32); 4], count: usize) -> Option<Symbol> {
    if count < 3 {
        return None;
    }
    let [addr, kind, name, module] = *words;
    let addr = hex_u64(bytes.get(addr.0 as usize..addr.1 as usize)?)?;
    let module = if count > 3 {
        module_name(bytes, module)
    } else {
        (0, 0)
    };
    Some(Symbol {
        addr,
        name,
        module,
        kind: bytes.get(kind.0 as usize).copied().unwrap_or(b'?'),
    })
}

/// The `[module]` word `(start, end)` without its brackets.
fn module_name(bytes: &[u8], (mut s, mut e): (u32, u32)) -> (u32, u32) {
    let bracket = |i: u32| matches!(bytes.get(i as usize), Some(b'[' | b']'));
    while s < e && bracket(s) {
        s += 1;
    }
    while e > s && bracket(e - 1) {
        e -= 1;
    }
    (s, e)
}

/// Hex digits' values, 0x80 for any other byte.
const HEX: [u8; 256] = {
    let mut t = [0x80u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// One to 16 hex digits (so no overflow), without a sign.
#[inline]
fn hex_short(word: &[u8]) -> Option<u64> {
    if word.is_empty() || word.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    let mut bad = 0u8;
    for &c in word {
        let d = HEX[usize::from(c)];
        bad |= d;
        v = v << 4 | u64::from(d & 15);
    }
    (bad & 0x80 == 0).then_some(v)
}

/// A hexadecimal number as `u64::from_str_radix(_, 16)` reads it (an optional `+`, at
/// least one digit, no overflow), without first checking the bytes are UTF-8: a few
/// hundred thousand of these are read when a trace's first symbol is printed.
fn hex_u64(word: &[u8]) -> Option<u64> {
    let digits = word.strip_prefix(b"+").unwrap_or(word);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &c| {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        // v * 16 overflows exactly when one of its top four bits is set.
        (v >> 60 == 0).then_some(v << 4 | u64::from(d))
    })
}

/// `trace_printk` format strings by address (`printk_formats`).
#[derive(Debug, Clone, Default)]
pub struct PrintkFormats {
    map: HashMap<u64, String>,
}

impl PrintkFormats {
    /// Parses `0xffffffff81e0c0a0 : "format\n"` lines; bad lines are skipped.
    pub fn parse(text: &str) -> PrintkFormats {
        let mut map = HashMap::new();
        for line in text.lines() {
            let Some((addr, fmt)) = line.split_once(':') else {
                continue;
            };
            let addr = addr.trim().trim_start_matches("0x");
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let fmt = fmt.trim();
            let fmt = fmt.strip_prefix('"').unwrap_or(fmt);
            let fmt = fmt.strip_suffix('"').unwrap_or(fmt);
            map.insert(addr, fmt.to_string());
        }
        PrintkFormats { map }
    }

    /// The format at `addr`, still with its C escapes (`\n`) as written in the file.
    pub fn get(&self, addr: u64) -> Option<&str> {
        self.map.get(&addr).map(String::as_str)
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Task names by pid (`saved_cmdlines`: `<pid> <comm>` lines).
#[derive(Debug, Clone, Default)]
pub struct Cmdlines {
    map: HashMap<i32, String>,
}

impl Cmdlines {
    /// Parses `pid comm` lines; bad lines are skipped. Later lines win.
    pub fn parse(text: &str) -> Cmdlines {
        let mut map = HashMap::new();
        for line in text.lines() {
            let line = line.trim_start();
            let Some((pid, comm)) = line.split_once(' ') else {
                continue;
            };
            let Ok(pid) = pid.parse::<i32>() else {
                continue;
            };
            map.insert(pid, comm.to_string());
        }
        Cmdlines { map }
    }

    /// The name of `pid`, if saved.
    pub fn get(&self, pid: i32) -> Option<&str> {
        self.map.get(&pid).map(String::as_str)
    }

    /// Adds or replaces a name.
    pub fn insert(&mut self, pid: i32, comm: String) {
        self.map.insert(pid, comm);
    }

    /// All saved (pid, name) pairs, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (i32, &str)> {
        self.map.iter().map(|(p, c)| (*p, c.as_str()))
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `parse_entries` spelled out line by line with the standard library's splitting.
    fn entries_by_line(text: &str) -> Vec<Symbol> {
        let offset = |w: &str| (w.as_ptr() as usize - text.as_ptr() as usize) as u32;
        let mut out: Vec<Symbol> = text
            .split('\n')
            .filter_map(|line| {
                let words: Vec<&str> = line.split_ascii_whitespace().collect();
                let [addr, kind, name, rest @ ..] = words.as_slice() else {
                    return None;
                };
                let module = rest.first().map_or((0, 0), |m| {
                    let inner = m
                        .trim_start_matches(['[', ']'])
                        .trim_end_matches(['[', ']']);
                    let at = if inner.is_empty() {
                        offset(m) + m.len() as u32 - m.trim_start_matches(['[', ']']).len() as u32
                    } else {
                        offset(inner)
                    };
                    (at, at + inner.len() as u32)
                });
                Some(Symbol {
                    addr: hex_u64(addr.as_bytes())?,
                    name: (offset(name), offset(name) + name.len() as u32),
                    module,
                    kind: kind.as_bytes()[0],
                })
            })
            .collect();
        out.sort_by_key(|e| e.addr);
        out
    }

    fn same(text: &str) {
        assert_eq!(parse_entries(text), entries_by_line(text), "{text:?}");
    }

    #[test]
    fn one_pass_parsing_splits_lines_and_words_as_the_standard_library_does() {
        same("ffffffff81000000 T _stext\nffffffff81000010 t x\t[mod]\n");
        // No final newline, blank and short lines, runs of mixed whitespace, CRLF, a
        // fifth word, a module of brackets only, bad hex, `+`, multibyte names.
        same("ffffffff81000000 T a");
        same("\n\n  \nffff T\nffff T b c d e\n");
        same("  ffffffff81000000\t \tT   name  [ext4]\r\n");
        same("10 t x []\n20 t y [[m]]\n30 t z ]m[\n");
        same("zz T bad\n+1f T plus\n1f T caf\u{e9}\u{a0}x [m\u{f6}d]\n");
        same("");
        same("\n");
        same("ffffffffffffffffff T overflow\n");
    }

    #[test]
    fn one_pass_parsing_agrees_on_a_long_kallsyms_like_text() {
        let mut text = String::new();
        for (i, kind) in ["T", "t", "D", "b", "W", "A"]
            .iter()
            .cycle()
            .take(3000)
            .enumerate()
        {
            let module = if i % 7 == 0 { "\t[snd_hda_intel]" } else { "" };
            text.push_str(&format!(
                "ffffffff{:08x} {kind} sym_{i}{module}\n",
                0x8100_0000u32 + (i as u32 * 37) % 5000
            ));
        }
        same(&text);
    }

    #[test]
    fn lazy_text_reads_once_when_asked_and_keeps_its_error() {
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = reads.clone();
        let k = Kallsyms::from_text(LazyText::deferred(move || {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok("ffffffff81000000 T _stext\n".to_string())
        }));
        let copy = k.clone();
        assert_eq!(reads.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(copy.exact(0xffff_ffff_8100_0000), Some("_stext"));
        assert_eq!(k.line_count(), 1);
        assert_eq!(reads.load(std::sync::atomic::Ordering::Relaxed), 1);

        let bad = LazyText::deferred(|| Err("zstd data does not decompress".into()));
        assert_eq!(bad.error(), None, "not read yet, so no error yet");
        assert_eq!(Kallsyms::from_text(bad.clone()).lookup(0x1000), None);
        assert_eq!(bad.error(), Some("zstd data does not decompress"));
    }

    #[test]
    fn a_read_ahead_reads_once_and_reports_nothing_until_asked() {
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = reads.clone();
        let text = LazyText::deferred(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            Err("zstd data does not decompress".into())
        });
        Kallsyms::from_text(text.clone()).read_ahead();
        while reads.load(Ordering::Relaxed) == 0 {
            std::thread::yield_now();
        }
        assert_eq!(text.error(), None, "nobody asked yet");
        assert_eq!(text.get(), "");
        assert_eq!(text.error(), Some("zstd data does not decompress"));
        assert_eq!(reads.load(Ordering::Relaxed), 1);

        let bad = Kallsyms::from_text(LazyText::deferred(|| Err("bad section".into())));
        bad.read_ahead();
        while bad.entries.get().is_none() {
            std::thread::yield_now();
        }
        assert_eq!(bad.text().error(), None, "nobody asked yet");
        assert_eq!(bad.lookup(0x1000), None);
        assert_eq!(bad.text().error(), Some("bad section"));

        let good = Kallsyms::from_text(LazyText::deferred(|| {
            Ok("ffffffff81000000 T _stext\n".to_string())
        }));
        good.clone().read_ahead();
        assert_eq!(good.exact(0xffff_ffff_8100_0000), Some("_stext"));

        let panics = LazyText::deferred(|| panic!("a decoder bug"));
        assert_eq!(panics.get(), "");
        assert!(panics.error().is_some_and(|e| e.contains("decoder bug")));
    }

    #[test]
    fn word_len_stops_at_the_first_byte_at_or_below_a_space() {
        let mut bytes: Vec<u8> = (0..=255u8).collect();
        bytes.extend((0..=255u8).rev());
        for from in 0..bytes.len() {
            for to in from..(from + 20).min(bytes.len()) {
                let text = &bytes[from..to];
                let want = text.iter().position(|&b| b <= b' ').unwrap_or(text.len());
                assert_eq!(word_len(text), want, "{text:?}");
            }
        }
        for len in 0..40 {
            let mut text = vec![0xffu8; len];
            assert_eq!(word_len(&text), len);
            for at in 0..len {
                for b in [0u8, b'\t', b'\n', b' '] {
                    text[at] = b;
                    assert_eq!(word_len(&text), at);
                    text[at] = b'!';
                }
            }
        }
    }

    #[test]
    fn hex_addresses_read_as_from_str_radix_reads_them() {
        for w in [
            "ffffffff81000000",
            "+10",
            "0",
            "",
            "+",
            "-1",
            "1g",
            "10000000000000000",
            "fffffffffffffffff",
            "0000000000000000000000000000ffffffffffffffff",
            "FFFFFFFFFFFFFFFF",
            "AbCdEf09",
            "0fffffffffffffff0",
            "f000000000000000",
            "1000000000000000",
            "++1",
            "/:@G`g",
        ] {
            assert_eq!(
                hex_u64(w.as_bytes()),
                u64::from_str_radix(w, 16).ok(),
                "{w:?}"
            );
        }
    }

    #[test]
    fn kallsyms_lines_with_modules_bad_lines_and_crlf() {
        let k = Kallsyms::parse(
            "ffffffffc0002000 t e1000_intr\t[e1000]\r\n\
             not-hex T skipped\n\
             ffffffff81000000 T _stext\n\
             ffffffff81000000 T _text\n\
             ffffffff81000100 t only_two\n\
             ffffffff81000100\n\
             ffffffff81000200 t na\u{ef}ve_name\n",
        );
        assert_eq!(k.len(), 5);
        assert_eq!(
            k.lookup(0xffff_ffff_c000_2010),
            Some((0xffff_ffff_c000_2000, "e1000_intr", Some("e1000")))
        );
        // Of aliases at one address, lookup names the last in file order.
        assert_eq!(k.exact(0xffff_ffff_8100_0000), Some("_text"));
        assert_eq!(
            k.lookup(0xffff_ffff_8100_0210).map(|s| s.1),
            Some("na\u{ef}ve_name")
        );
        assert_eq!(k.lookup(0xffff_ffff_8000_0000), None);
        let order: Vec<_> = k.iter().map(|(_, n, t)| (n, t)).collect();
        assert_eq!(order.get(..2), Some(&[("_stext", 'T'), ("_text", 'T')][..]));
    }
}
