//! Damaged input: truncations and byte flips of every real trace give `Ok` or a one-line
//! error naming the file offset; never a panic, a hang or a runaway allocation.
//!
//! Beside blind byte damage, structure-aware mutants: each trace is rewritten by rtwhy's
//! own writer with non-ASCII whitespace, multibyte characters and huge numbers in its
//! event format texts, and with the length and count fields of the file's structure
//! (section sizes, format counts, option lengths, CPU data offsets) set to edge values;
//! report text gets the same characters and numbers.

use std::sync::Arc;

use rtwhy_decode::tracedat::TraceFile;
use rtwhy_tests::all_traces;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Reads everything a damaged file holds; returns the number of records.
fn read_all(bytes: Vec<u8>) -> Result<u64, String> {
    let file = TraceFile::from_source(Arc::new(bytes)).map_err(|e| e.to_string())?;
    let mut decoder = rtwhy_decode::EventDecoder::new();
    let mut printer = rtwhy_decode::print::Printer::new(file.meta_arc());
    let mut s = file.records().map_err(|e| e.to_string())?;
    let mut n = 0;
    let mut line = String::new();
    while let Some(r) = s.next_record().map_err(|e| e.to_string())? {
        let _ = decoder.decode(file.meta(), &r);
        line.clear();
        printer.write_raw(&r, &mut line);
        line.clear();
        printer.write_report(&r, &mut line);
        n += 1;
        assert!(n < 50_000_000, "runaway record stream");
    }
    Ok(n)
}

/// Characters a format or report text may carry by accident or malice: non-ASCII
/// whitespace (NBSP, NEL, EM SPACE, IDEOGRAPHIC SPACE, ZERO WIDTH SPACE), accented and
/// wide letters, an emoji, a lone continuation byte (made valid UTF-8 by the lossy
/// conversion as U+FFFD), and a byte-order mark.
const ODD: &[&str] = &[
    "\u{a0}", "\u{85}", "\u{2003}", "\u{3000}", "\u{200b}", "é", "ß", "€", "中", "😀", "\u{fffd}",
    "\u{feff}",
];

/// Numbers no kernel writes: past `u32`, `u64` and `i64`, negative, and very long.
const HUGE: &[&str] = &[
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "99999999999999999999999999999999999999",
    "-1",
];

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Index of a char boundary in `s`, chosen at random.
    fn boundary(&mut self, s: &str) -> usize {
        let mut at = self.below(s.len() + 1);
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

/// One text mutation: insert an odd character, write one over an ASCII space (as an
/// editor's NBSP does), or put a huge number where a run of digits was.
fn mutate_text(rng: &mut Rng, text: &mut String) {
    match rng.below(3) {
        0 => {
            let at = rng.boundary(text);
            text.insert_str(at, ODD[rng.below(ODD.len())]);
        }
        1 => {
            let spaces: Vec<usize> = text.match_indices(' ').map(|(i, _)| i).collect();
            if let Some(&at) = spaces.get(rng.below(spaces.len())) {
                text.replace_range(at..at + 1, ODD[rng.below(ODD.len())]);
            }
        }
        _ => {
            let digits: Vec<usize> = text
                .char_indices()
                .filter(|(i, c)| {
                    c.is_ascii_digit() && !text[..*i].ends_with(|p: char| p.is_ascii_digit())
                })
                .map(|(i, _)| i)
                .collect();
            if let Some(&at) = digits.get(rng.below(digits.len())) {
                let end = text[at..]
                    .find(|c: char| !c.is_ascii_digit())
                    .map_or(text.len(), |n| at + n);
                text.replace_range(at..end, HUGE[rng.below(HUGE.len())]);
            }
        }
    }
}

/// Rewrites `orig` as a v6 file whose metadata texts went through `edit`, carrying up to
/// `max_records` of its records, so the damaged formats are also used to print.
fn rewrite(
    orig: &TraceFile,
    max_records: usize,
    edit: impl FnOnce(&mut rtwhy_decode::meta::MetaSources),
) -> Option<Vec<u8>> {
    let meta = orig.meta();
    let mut b = rtwhy_decode::tracedat::TraceBuilder::like(meta, meta.page_size);
    edit(b.writer_mut().sources_mut());
    let mut s = orig.records().ok()?;
    let mut n = 0;
    while let Ok(Some(r)) = s.next_record() {
        if n >= max_records {
            break;
        }
        if b.push(r.cpu, r.ts, r.data).is_ok() {
            n += 1;
        }
    }
    let mut out = Vec::new();
    b.finish(&mut out).ok()?;
    Some(out)
}

fn check_error(e: &str, what: &str) {
    assert!(!e.contains('\n'), "{what}: error spans lines: {e}");
    assert!(!e.is_empty(), "{what}: empty error");
}

#[test]
fn truncations_and_byte_flips_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = 0;
    let mut errors = 0;
    for path in all_traces() {
        let Ok(orig) = std::fs::read(&path) else {
            continue;
        };
        let len = orig.len();
        // Metadata lives at the start: damage it densely there, sparsely in the data.
        let mut mutants: Vec<Vec<u8>> = Vec::new();
        for cut in [
            0,
            1,
            9,
            10,
            12,
            16,
            64,
            200,
            1000,
            4096,
            len / 3,
            len / 2,
            len - 1,
        ] {
            if cut < len {
                mutants.push(orig[..cut].to_vec());
            }
        }
        for i in 0..60 {
            let mut m = orig.clone();
            let at = if i % 2 == 0 {
                (rng.next() as usize) % len.min(8192)
            } else {
                (rng.next() as usize) % len
            };
            let flips = 1 + (rng.next() % 4) as usize;
            for k in 0..flips {
                let pos = (at + k * 7) % len;
                m[pos] ^= 1 << (rng.next() % 8);
            }
            mutants.push(m);
        }
        for (i, m) in mutants.into_iter().enumerate() {
            cases += 1;
            match read_all(m) {
                Ok(_) => {}
                Err(e) => {
                    errors += 1;
                    check_error(&e, &format!("{} mutant {i}", path.display()));
                }
            }
        }
    }
    eprintln!("mutations: {cases} damaged files read, {errors} refused with a one-line error");
    assert!(cases > 1500, "only {cases} cases");
}

#[test]
fn errors_name_the_file_offset() {
    let path = all_traces()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("bengo"))
        .expect("corpus file");
    let orig = std::fs::read(&path).expect("read");
    let e = read_all(orig[..100].to_vec()).expect_err("truncated header");
    assert!(e.contains("offset 0x"), "{e}");
    let mut bad = orig.clone();
    bad[0] = b'X';
    let e = read_all(bad).expect_err("bad magic");
    assert!(e.contains("not a trace.dat"), "{e}");
}

/// Mutants of one trace's format texts (event, ftrace, header_page), each written out by
/// rtwhy's writer and read back through typing and both printers.
#[test]
fn non_ascii_and_huge_numbers_in_format_text_never_panic() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut cases = 0;
    let mut refused = 0;
    for path in all_traces() {
        let Ok(file) = TraceFile::open(&path) else {
            continue;
        };
        let systems = file.meta().sources.event_formats.len();
        if systems == 0 {
            continue;
        }
        for i in 0..24 {
            let bytes = rewrite(&file, 2000, |src| {
                for _ in 0..1 + rng.below(3) {
                    let text = match rng.below(8) {
                        0 => &mut src.header_page,
                        1 if !src.ftrace_formats.is_empty() => {
                            let k = rng.below(src.ftrace_formats.len());
                            &mut src.ftrace_formats[k]
                        }
                        _ => {
                            let sys = &mut src.event_formats[rng.below(systems)].1;
                            if sys.is_empty() {
                                continue;
                            }
                            let k = rng.below(sys.len());
                            &mut sys[k]
                        }
                    };
                    mutate_text(&mut rng, text);
                }
            })
            .expect("rewrite");
            cases += 1;
            if let Err(e) = read_all(bytes) {
                refused += 1;
                check_error(&e, &format!("{} format mutant {i}", path.display()));
            }
        }
    }
    eprintln!("format-text mutants: {cases} files read, {refused} refused");
    assert!(cases > 300, "only {cases} cases");
}

/// Where the length, count and offset fields of a v6 file written by rtwhy's writer lie:
/// (offset, width in bytes).
fn v6_length_fields(b: &[u8]) -> Option<Vec<(usize, usize)>> {
    let le = |at: usize, w: usize| -> Option<u64> {
        let mut v = 0u64;
        for (k, byte) in b.get(at..at + w)?.iter().enumerate() {
            v |= u64::from(*byte) << (8 * k);
        }
        Some(v)
    };
    if b.get(12) != Some(&0) {
        return None; // big-endian: the walk below reads little-endian numbers
    }
    let mut fields = vec![(14, 4)]; // page size
    let mut at = 18;
    for tag in [&b"header_page\0"[..], &b"header_event\0"[..]] {
        at += tag.len();
        fields.push((at, 8));
        at += 8 + le(at, 8)? as usize;
    }
    fields.push((at, 4));
    let n = le(at, 4)?;
    at += 4;
    for _ in 0..n {
        fields.push((at, 8));
        at += 8 + le(at, 8)? as usize;
    }
    fields.push((at, 4));
    let systems = le(at, 4)?;
    at += 4;
    for _ in 0..systems {
        at += b.get(at..)?.iter().position(|c| *c == 0)? + 1;
        fields.push((at, 4));
        let n = le(at, 4)?;
        at += 4;
        for _ in 0..n {
            fields.push((at, 8));
            at += 8 + le(at, 8)? as usize;
        }
    }
    for w in [4, 4, 8] {
        fields.push((at, w)); // kallsyms, printk formats, cmdlines
        at += w + le(at, w)? as usize;
    }
    fields.push((at, 4)); // CPU count
    let cpus = le(at, 4)?;
    at += 4 + 10; // "options  \0"
    loop {
        fields.push((at, 2));
        if le(at, 2)? == 0 {
            at += 2;
            break;
        }
        fields.push((at + 2, 4));
        at += 6 + le(at + 2, 4)? as usize;
    }
    at += 10; // "flyrecord\0"
    for _ in 0..cpus {
        fields.push((at, 8));
        fields.push((at + 8, 8));
        at += 16;
    }
    Some(fields)
}

/// Length, count, option size and CPU data offset fields of rewritten traces set to 0,
/// one more or less than before, and all ones.
#[test]
fn edge_values_in_length_and_count_fields_never_panic() {
    let mut rng = Rng(0x6a09_e667_f3bc_c909);
    let mut cases = 0;
    for path in all_traces() {
        let Ok(file) = TraceFile::open(&path) else {
            continue;
        };
        let Some(bytes) = rewrite(&file, 500, |_| {}) else {
            continue;
        };
        let Some(fields) = v6_length_fields(&bytes) else {
            continue;
        };
        // The fields of the head (page size, header texts, first ftrace formats), of the
        // tail (symbol and cmdline sizes, CPU count, options, CPU table) and a sample of
        // the many format sizes between.
        let picks: Vec<(usize, usize)> = fields
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < 6 || *i + 20 > fields.len() || rng.below(64) == 0)
            .map(|(_, f)| *f)
            .collect();
        for (at, w) in picks {
            let mut old = 0u64;
            for k in 0..w {
                old |= u64::from(bytes[at + k]) << (8 * k);
            }
            let max = if w == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * w)) - 1
            };
            for v in [0, old.wrapping_add(1), old.wrapping_sub(1), max] {
                let mut m = bytes.clone();
                for k in 0..w {
                    m[at + k] = (v >> (8 * k)) as u8;
                }
                cases += 1;
                if let Err(e) = read_all(m) {
                    check_error(&e, &format!("{} field at {at:#x} = {v:#x}", path.display()));
                }
            }
        }
    }
    eprintln!("length-field mutants: {cases} files read");
    assert!(cases > 1000, "only {cases} cases");
}

/// trace-cmd report text with odd characters and huge numbers: the text reader and the
/// format sniffer take every mutant without a panic.
#[test]
fn non_ascii_and_huge_numbers_in_report_text_never_panic() {
    let mut rng = Rng(0xbb67_ae85_84ca_a73b);
    let mut cases = 0;
    for path in all_traces() {
        let Some(text) = rtwhy_tests::oracle(&path, "report") else {
            continue;
        };
        let mut cut = text.len().min(48 * 1024);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let head = &text[..cut];
        if head.is_empty() {
            continue;
        }
        for _ in 0..40 {
            let mut m = head.to_string();
            for _ in 0..1 + rng.below(20) {
                mutate_text(&mut rng, &mut m);
            }
            cases += 1;
            let _ = rtwhy_decode::text::looks_like_report_text(m.as_bytes());
            let mut n = 0usize;
            for ev in rtwhy_decode::text::TextReader::new(m.as_bytes()) {
                if let Err(e) = ev {
                    check_error(&e.to_string(), &path.display().to_string());
                }
                n += 1;
                assert!(n <= m.len() + 1, "runaway event stream");
            }
        }
    }
    eprintln!("report-text mutants: {cases} texts read");
    assert!(cases > 300, "only {cases} cases");
}
