//! Reading everything before the event data: the initial header, header_page, event
//! formats, kallsyms, printk formats, saved cmdlines, options, and where each CPU's data is.

use std::collections::HashSet;

use super::compress::{Codec, MAX_UNCOMPRESSED};
use super::source::Bytes;
use super::{Buffer, CpuData, FileInfo, MAGIC};
use crate::endian::{Cursor, Endian};
use crate::format::HeaderPage;
use crate::meta::{HostSync, TraceMeta, Tsc2Nsec};
use crate::symbols::{Cmdlines, Kallsyms, LazyText, PrintkFormats};
use crate::{Error, Result};

const OPT_DONE: u16 = 0;
const OPT_DATE: u16 = 1;
const OPT_BUFFER: u16 = 3;
const OPT_TRACECLOCK: u16 = 4;
const OPT_UNAME: u16 = 5;
const OPT_OFFSET: u16 = 7;
const OPT_CPUCOUNT: u16 = 8;
const OPT_VERSION: u16 = 9;
const OPT_TIME_SHIFT: u16 = 12;
const OPT_TSC2NSEC: u16 = 14;
const OPT_HEADER_INFO: u16 = 16;
const OPT_FTRACE_EVENTS: u16 = 17;
const OPT_EVENT_FORMATS: u16 = 18;
const OPT_KALLSYMS: u16 = 19;
const OPT_PRINTK: u16 = 20;
const OPT_CMDLINES: u16 = 21;
const OPT_BUFFER_TEXT: u16 = 22;
// trace-cmd 3.4's additions. Their layout is not in the v7.5 file spec, so each is read
// either as a pointer to a section of the same id (the v7 way for large contents) or as
// inline data, described in a note and otherwise unused.
const OPT_BTF_FILE: u16 = 23;
const OPT_LAST_BOOT_INFO: u16 = 24;
const OPT_MODULES_FILE: u16 = 25;

/// Most event format files a file may declare; real kernels have a few thousand.
const MAX_FORMATS: u32 = 1 << 16;
/// Most options sections followed in a v7 file.
const MAX_OPTION_SECTIONS: usize = 64;

pub(super) struct Parsed {
    pub meta: TraceMeta,
    pub info: FileInfo,
    pub buffers: Vec<Buffer>,
    pub warnings: Vec<String>,
}

/// Reads numbers and strings one after another straight from the file.
struct Seq<'b> {
    bytes: &'b Bytes,
    pos: u64,
    endian: Endian,
}

impl Seq<'_> {
    fn take(&mut self, n: u64, what: &'static str) -> Result<Vec<u8>> {
        let v = self.bytes.read_exact(self.pos, n, what)?;
        self.pos += n;
        Ok(v)
    }

    fn num(&mut self, size: usize, what: &'static str) -> Result<u64> {
        let b = self.take(size as u64, what)?;
        Ok(self.endian.read_uint(&b, 0, size).unwrap_or_default())
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.num(4, what).map(|v| v as u32)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.num(8, what)
    }

    fn cstr(&mut self, what: &'static str) -> Result<String> {
        let start = self.pos;
        let chunk = self.bytes.read_upto(start, 4096)?;
        match chunk.iter().position(|b| *b == 0) {
            Some(n) => {
                self.pos += n as u64 + 1;
                Ok(String::from_utf8_lossy(&chunk[..n]).into_owned())
            }
            None => Err(Error::corrupt(
                start,
                format!("{what}: no string terminator within 4096 bytes"),
            )),
        }
    }

    /// A fixed tag such as `header_page\0`.
    fn expect_tag(&mut self, tag: &[u8], what: &'static str) -> Result<()> {
        let at = self.pos;
        let got = self.take(tag.len() as u64, what)?;
        if got != tag {
            return Err(Error::corrupt(
                at,
                format!(
                    "expected {:?}, found {:?}",
                    String::from_utf8_lossy(tag),
                    String::from_utf8_lossy(&got)
                ),
            ));
        }
        Ok(())
    }
}

/// The metadata of the file in `bytes`; `read_symbols_ahead`: see
/// [`crate::input::Sink::read_symbols_ahead`].
pub(super) fn read(bytes: &Bytes, read_symbols_ahead: bool) -> Result<Parsed> {
    let head = bytes.read_upto(0, 64)?;
    if !head.starts_with(MAGIC) {
        return Err(Error::corrupt(
            0,
            "not a trace.dat file (no trace-cmd magic); if this is `trace-cmd report` text, it is read as text",
        ));
    }
    let mut seq = Seq {
        bytes,
        pos: MAGIC.len() as u64,
        endian: Endian::Little,
    };
    let version_text = seq.cstr("file version")?;
    let version: u32 = version_text.parse().map_err(|_| {
        Error::corrupt(
            MAGIC.len() as u64,
            format!("file version {version_text:?} is not a number"),
        )
    })?;
    let endian_at = seq.pos;
    let endian = match seq.take(1, "endianness")?[0] {
        0 => Endian::Little,
        1 => Endian::Big,
        other => {
            return Err(Error::corrupt(
                endian_at,
                format!("endianness byte {other} is neither 0 nor 1"),
            ))
        }
    };
    seq.endian = endian;
    let long_at = seq.pos;
    let long_size = seq.take(1, "long size")?[0] as usize;
    if long_size != 4 && long_size != 8 {
        return Err(Error::corrupt(
            long_at,
            format!("long size {long_size} is neither 4 nor 8"),
        ));
    }
    let page_at = seq.pos;
    let page_size = seq.u32("page size")? as usize;
    if !(64..=(1 << 24)).contains(&page_size) {
        return Err(Error::corrupt(
            page_at,
            format!("page size {page_size} is implausible"),
        ));
    }
    let mut p = Parsed {
        meta: TraceMeta::new(endian, long_size, page_size),
        info: FileInfo {
            version,
            file_len: bytes.len(),
            ..FileInfo::default()
        },
        buffers: Vec::new(),
        warnings: Vec::new(),
    };
    match version {
        6 => read_v6(&mut seq, &mut p)?,
        7 => read_v7(&mut seq, &mut p, read_symbols_ahead)?,
        v => {
            return Err(Error::Unsupported {
                offset: MAGIC.len() as u64,
                what: format!("trace.dat version {v} (rtwhy reads versions 6 and 7)"),
            })
        }
    }
    check_cpu_data(bytes, &mut p);
    // Counted over the buffers that could be read: trace-cmd leaves out an instance
    // whose data it cannot open.
    p.meta.instance_width = p
        .buffers
        .iter()
        .filter(|b| !b.name.is_empty())
        .map(|b| b.name.len())
        .max();
    Ok(p)
}

fn read_v6(seq: &mut Seq<'_>, p: &mut Parsed) -> Result<()> {
    seq.expect_tag(b"header_page\0", "header_page tag")?;
    let size = seq.u64("header_page size")?;
    let at = seq.pos;
    let text = seq.take(size, "header_page")?;
    header_page(&text, at, p)?;
    seq.expect_tag(b"header_event\0", "header_event tag")?;
    let size = seq.u64("header_event size")?;
    let text = seq.take(size, "header_event")?;
    p.meta.sources.header_event = String::from_utf8_lossy(&text).into_owned();

    let count = seq.u32("ftrace format count")?;
    check_count(count, seq.pos)?;
    for _ in 0..count {
        let size = seq.u64("ftrace format size")?;
        let at = seq.pos;
        let text = seq.take(size, "ftrace format")?;
        add_format("ftrace", &text, at, p);
    }
    let systems = seq.u32("event system count")?;
    check_count(systems, seq.pos)?;
    for _ in 0..systems {
        let system = seq.cstr("event system name")?;
        let count = seq.u32("event format count")?;
        check_count(count, seq.pos)?;
        for _ in 0..count {
            let size = seq.u64("event format size")?;
            let at = seq.pos;
            let text = seq.take(size, "event format")?;
            add_format(&system, &text, at, p);
        }
    }
    let size = seq.u32("kallsyms size")?;
    let text = seq.take(u64::from(size), "kallsyms")?;
    set_kallsyms(&text, p);
    let size = seq.u32("printk formats size")?;
    let text = seq.take(u64::from(size), "printk formats")?;
    set_printk(&text, p);
    let size = seq.u64("saved cmdlines size")?;
    let text = seq.take(size, "saved cmdlines")?;
    set_cmdlines(&text, p);

    let cpus = seq.u32("CPU count")?;
    if cpus > 1 << 16 {
        return Err(Error::corrupt(
            seq.pos - 4,
            format!("CPU count {cpus} is implausible"),
        ));
    }
    p.info.cpus = cpus;
    let mut tag_at = seq.pos;
    let mut tag = seq.take(10, "data kind tag")?;
    let mut v6_buffers = Vec::new();
    let mut saw_clock_option = false;
    if tag == b"options  \0" {
        p.info.has_options = true;
        loop {
            let id_at = seq.pos;
            let id = seq.num(2, "option id")? as u16;
            if id == OPT_DONE {
                break;
            }
            let size = seq.u32("option size")?;
            let data = seq.take(u64::from(size), "option data")?;
            if id == OPT_TRACECLOCK {
                saw_clock_option = true;
            }
            if id == OPT_BUFFER {
                let mut c = Cursor::new(&data, id_at + 6, p.meta.endian);
                let offset = c.u64("buffer offset")?;
                let name = String::from_utf8_lossy(c.cstr("buffer name")?).into_owned();
                v6_buffers.push((name, offset));
            } else {
                option(id, &data, id_at + 6, p)?;
            }
        }
        tag_at = seq.pos;
        tag = seq.take(10, "data kind tag")?;
    }
    if tag == b"latency  \0" {
        let rest = seq.bytes.len().saturating_sub(seq.pos);
        let text = seq.take(rest.min(MAX_UNCOMPRESSED), "latency text")?;
        p.info.latency_text = Some(String::from_utf8_lossy(&text).into_owned());
        return Ok(());
    }
    if tag != b"flyrecord\0" {
        return Err(Error::corrupt(
            tag_at,
            format!(
                "expected \"flyrecord\" or \"latency\", found {:?}",
                String::from_utf8_lossy(&tag)
            ),
        ));
    }
    let top = v6_cpu_table(seq, cpus, p.meta.clock.clone(), "", p.meta.page_size)?;
    p.buffers.push(top);
    if saw_clock_option {
        // With a TRACECLOCK option, v6 files also store the trace_clock file after the CPU table.
        let size = seq.u64("trace_clock size")?;
        let text = seq.take(size.min(4096), "trace_clock")?;
        if let Some(clock) = chosen_clock(&String::from_utf8_lossy(&text)) {
            p.meta.clock = Some(clock.clone());
            for b in &mut p.buffers {
                b.clock = Some(clock.clone());
            }
        }
    }
    for (name, offset) in v6_buffers {
        let mut s = Seq {
            bytes: seq.bytes,
            pos: offset,
            endian: seq.endian,
        };
        if s.take(10, "buffer tag")
            .map(|t| t == b"flyrecord\0")
            .unwrap_or(false)
        {
            match v6_cpu_table(&mut s, cpus, p.meta.clock.clone(), &name, p.meta.page_size) {
                Ok(b) => p.buffers.push(b),
                Err(e) => p.warnings.push(format!("buffer {name:?}: {e}")),
            }
        } else {
            p.warnings.push(format!(
                "buffer {name:?}: no flyrecord data at file offset {offset:#x}"
            ));
        }
    }
    Ok(())
}

fn v6_cpu_table(
    seq: &mut Seq<'_>,
    cpus: u32,
    clock: Option<String>,
    name: &str,
    page_size: usize,
) -> Result<Buffer> {
    let mut table = Vec::new();
    for cpu in 0..cpus {
        let offset = seq.u64("CPU data offset")?;
        let size = seq.u64("CPU data size")?;
        table.push(CpuData { cpu, offset, size });
    }
    Ok(Buffer {
        name: name.to_string(),
        clock,
        cpus: table,
        compressed: false,
        page_size,
    })
}

/// `bytes` as text, invalid UTF-8 replaced: the check alone where it is valid, as it is
/// in every real file (a kallsyms text is megabytes; the replacing pass costs ten times
/// the check).
fn text_of(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

fn set_kallsyms(text: &[u8], p: &mut Parsed) {
    set_kallsyms_text(text_of(text).into(), p);
}

fn set_kallsyms_text(text: LazyText, p: &mut Parsed) {
    p.meta.kallsyms = Kallsyms::from_text(text.clone());
    p.meta.sources.kallsyms = text;
}

/// The kallsyms section of a v7 file at `offset`: its header checked now, its content
/// decompressed by a read-ahead thread from now on, and waited for (or read then, if
/// there was no thread) the first time a symbol is needed.
fn deferred_kallsyms(bytes: &Bytes, offset: u64, codec: Codec, endian: Endian) -> Result<LazyText> {
    section_header(bytes, offset, OPT_KALLSYMS, endian)?;
    let bytes = bytes.clone();
    let read = move || -> Result<String> {
        let content = section(&bytes, offset, OPT_KALLSYMS, codec, endian)?;
        let mut c = Cursor::new(&content, offset, endian);
        let n = c.u32("kallsyms size")?;
        let text = c.bytes(n as usize, "kallsyms")?;
        Ok(text_of(text))
    };
    Ok(LazyText::deferred(move || {
        read().map_err(|e| {
            format!("{e}; the kallsyms section is skipped (addresses print as numbers)")
        })
    }))
}

fn set_printk(text: &[u8], p: &mut Parsed) {
    let text = text_of(text);
    p.meta.printk = PrintkFormats::parse(&text);
    p.meta.sources.printk = text;
}

fn set_cmdlines(text: &[u8], p: &mut Parsed) {
    let text = text_of(text);
    p.meta.cmdlines = Cmdlines::parse(&text);
    p.meta.sources.cmdlines = text;
}

fn check_count(count: u32, at: u64) -> Result<()> {
    if count > MAX_FORMATS {
        return Err(Error::corrupt(
            at - 4,
            format!("count {count} is implausible"),
        ));
    }
    Ok(())
}

fn header_page(text: &[u8], at: u64, p: &mut Parsed) -> Result<()> {
    p.meta.sources.header_page = String::from_utf8_lossy(text).into_owned();
    let hp = HeaderPage::parse(&String::from_utf8_lossy(text))
        .map_err(|e| Error::corrupt(at, e.to_string()))?;
    if hp.data_offset >= p.meta.page_size {
        return Err(Error::corrupt(
            at,
            format!(
                "header_page data offset {} beyond page size",
                hp.data_offset
            ),
        ));
    }
    p.meta.kernel_long_size = hp.commit_size;
    p.meta.header_page = hp;
    Ok(())
}

fn add_format(system: &str, text: &[u8], at: u64, p: &mut Parsed) {
    let text = text_of(text);
    if let Err(e) = p.meta.formats.insert_text(system, &text) {
        p.warnings.push(format!(
            "at file offset {at:#x}: {e}; events of this kind print as unknown"
        ));
    }
    let sources = &mut p.meta.sources;
    if system == "ftrace" {
        sources.ftrace_formats.push(text);
        return;
    }
    match sources.event_formats.iter_mut().find(|(s, _)| s == system) {
        Some((_, v)) => v.push(text),
        None => sources.event_formats.push((system.to_string(), vec![text])),
    }
}

/// The selected clock of a `trace_clock` file: the word in brackets.
fn chosen_clock(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| {
            w.trim_matches(|c: char| c == '[' || c == ']' || c.is_whitespace() || c == '\0')
                .to_string()
        })
}

fn cstr_at(data: &[u8]) -> String {
    let end = data.iter().position(|b| *b == 0).unwrap_or(data.len());
    String::from_utf8_lossy(&data[..end]).into_owned()
}

fn newer_option_name(id: u16) -> &'static str {
    match id {
        OPT_BTF_FILE => "BTF_FILE (option 23)",
        OPT_LAST_BOOT_INFO => "LAST_BOOT_INFO (option 24)",
        _ => "MODULES_FILE (option 25)",
    }
}

/// What a trace-cmd 3.4 option holds, in one line for `rtwhy info`. rtwhy does not use
/// these contents: BTF types are not needed to decode events (formats say it all), and
/// addresses are not shifted by a previous boot's offset.
fn newer_option_note(id: u16, content: &[u8], at: u64) -> String {
    let name = newer_option_name(id);
    let n = content.len();
    let text = || {
        String::from_utf8_lossy(content.split(|b| *b == 0).next().unwrap_or_default()).into_owned()
    };
    match id {
        OPT_BTF_FILE => {
            // BTF data starts with the magic 0xeb9f in the writer's byte order.
            let magic = matches!(content.get(..2), Some([0x9f, 0xeb] | [0xeb, 0x9f]));
            let what = if magic {
                "kernel BTF"
            } else {
                "data without the BTF magic"
            };
            format!("{name} at file offset {at:#x}: {n} bytes of {what}; not used")
        }
        OPT_LAST_BOOT_INFO => {
            let t = text();
            let first: String = t
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .chars()
                .take(80)
                .collect();
            let modules = t.lines().skip(1).filter(|l| !l.trim().is_empty()).count();
            format!(
                "{name} at file offset {at:#x}: the instance's last_boot_info ({first:?}, {modules} module lines); addresses are not relocated by it"
            )
        }
        _ => {
            let modules = text().lines().filter(|l| !l.trim().is_empty()).count();
            format!("{name} at file offset {at:#x}: {modules} loaded modules listed; not used")
        }
    }
}

/// Options shared by versions 6 and 7 (the v7-only section pointers are handled by the caller).
fn option(id: u16, data: &[u8], at: u64, p: &mut Parsed) -> Result<()> {
    match id {
        OPT_DATE => p.info.date = Some(cstr_at(data)),
        // The option holds the whole trace_clock file: `local [global] counter`.
        OPT_TRACECLOCK if p.meta.clock.is_none() => p.meta.clock = chosen_clock(&cstr_at(data)),
        OPT_UNAME => p.info.uname = Some(cstr_at(data)),
        OPT_VERSION => p.info.tracer_version = Some(cstr_at(data)),
        OPT_OFFSET => {
            let text = cstr_at(data);
            let text = text.trim();
            let parsed = if let Some(hex) = text.strip_prefix("0x") {
                i64::from_str_radix(hex, 16).ok()
            } else {
                text.parse::<i64>().ok()
            };
            match parsed {
                Some(v) => p.meta.ts_offset = p.meta.ts_offset.wrapping_add(v),
                None => p.warnings.push(format!("at file offset {at:#x}: OFFSET option {text:?} is not a number; ignored")),
            }
        }
        OPT_CPUCOUNT => {
            if let Some(n) = p.meta.endian.u32(data, 0) {
                p.info.cpus = n;
            }
        }
        OPT_TIME_SHIFT => match time_shift(data, p.meta.endian) {
            Some(sync) => p.meta.host_sync = Some(sync),
            None => p.warnings.push(format!("at file offset {at:#x}: TIME_SHIFT option is malformed; guest timestamps are not synchronised to the host")),
        },
        OPT_BTF_FILE | OPT_LAST_BOOT_INFO | OPT_MODULES_FILE => {
            p.info.notes.push(newer_option_note(id, data, at))
        }
        OPT_TSC2NSEC => {
            let e = p.meta.endian;
            if let (Some(mult), Some(shift), Some(offset)) = (e.u32(data, 0), e.u32(data, 4), e.u64(data, 8)) {
                if shift < 64 {
                    p.meta.tsc2nsec = Some(Tsc2Nsec { mult, shift, offset });
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Parses `TIME_SHIFT`: peer id, flags, CPU count, then per CPU a sample count and arrays of
/// times, offsets and scalings, then (newer files) per CPU an array of fraction bits.
fn time_shift(data: &[u8], endian: Endian) -> Option<HostSync> {
    let mut c = Cursor::new(data, 0, endian);
    c.u64("peer id").ok()?;
    let flags = c.u32("flags").ok()?;
    let cpus = c.u32("cpus").ok()?;
    if cpus as usize > data.len() / 4 {
        return None;
    }
    let mut all = Vec::new();
    for _ in 0..cpus {
        let n = c.u32("count").ok()? as usize;
        if n > c.remaining() / 24 {
            return None;
        }
        let read = |c: &mut Cursor<'_>| -> Option<Vec<i64>> {
            (0..n)
                .map(|_| c.u64("sample").ok().map(|v| v as i64))
                .collect()
        };
        let times = read(&mut c)?;
        let offsets = read(&mut c)?;
        let scalings = read(&mut c)?;
        all.push(
            times
                .into_iter()
                .zip(offsets)
                .zip(scalings)
                .map(|((time, offset), scaling)| crate::meta::ClockSample {
                    time,
                    offset,
                    scaling,
                    fraction: 0,
                })
                .collect::<Vec<_>>(),
        );
    }
    // Fraction bits were added later; older files end here and mean "no fraction".
    let fractions: Option<Vec<Vec<u32>>> = all
        .iter()
        .map(|samples| {
            samples
                .iter()
                .map(|_| c.u64("fraction").ok().map(|f| f as u32))
                .collect()
        })
        .collect();
    if let Some(fractions) = fractions {
        for (samples, fr) in all.iter_mut().zip(fractions) {
            for (s, f) in samples.iter_mut().zip(fr) {
                s.fraction = f;
            }
        }
    }
    Some(HostSync {
        interpolate: flags & 1 != 0,
        cpus: all,
    })
}

/// A v7 section's header, checked to be section `want`: (flags, content size).
fn section_header(bytes: &Bytes, offset: u64, want: u16, endian: Endian) -> Result<(u16, u64)> {
    let head = bytes.read_exact(offset, 16, "section header")?;
    let id = endian.u16(&head, 0).unwrap_or_default();
    let flags = endian.u16(&head, 2).unwrap_or_default();
    let size = endian.u64(&head, 8).unwrap_or_default();
    if id != want {
        return Err(Error::corrupt(
            offset,
            format!("expected section id {want}, found {id}"),
        ));
    }
    Ok((flags, size))
}

/// A v7 section: its header, then its (possibly compressed) content.
fn section(bytes: &Bytes, offset: u64, want: u16, codec: Codec, endian: Endian) -> Result<Vec<u8>> {
    let (flags, size) = section_header(bytes, offset, want, endian)?;
    if flags & 1 == 0 {
        return bytes.read_exact(offset + 16, size, "section content");
    }
    let ch = bytes.read_exact(offset + 16, 8, "compression header")?;
    let csize = u64::from(endian.u32(&ch, 0).unwrap_or_default());
    let usize_ = u64::from(endian.u32(&ch, 4).unwrap_or_default());
    let data = bytes.read_exact(offset + 24, csize, "compressed section")?;
    codec.decompress(&data, usize_, offset + 24)
}

fn read_v7(seq: &mut Seq<'_>, p: &mut Parsed, read_symbols_ahead: bool) -> Result<()> {
    let comp_at = seq.pos;
    let name = seq.cstr("compression name")?;
    let version = seq.cstr("compression version")?;
    let codec = Codec::from_name(&name, comp_at)?;
    if codec != Codec::None {
        p.info.compression = Some((name, version));
    }
    let mut next = seq.u64("first options offset")?;
    let endian = p.meta.endian;
    let bytes = seq.bytes;
    let mut seen = HashSet::new();
    let mut pointers: Vec<(u16, u64)> = Vec::new();
    let mut buffer_opts: Vec<(Vec<u8>, u64)> = Vec::new();
    while next != 0 {
        if !seen.insert(next) || seen.len() > MAX_OPTION_SECTIONS {
            return Err(Error::corrupt(next, "options sections form a loop"));
        }
        p.info.has_options = true;
        let data = section(bytes, next, 0, codec, endian)?;
        let base = next + 16;
        let mut c = Cursor::new(&data, base, endian);
        next = 0;
        while c.remaining() > 0 {
            let id = c.u16("option id")?;
            let size = c.u32("option size")?;
            let at = c.offset();
            let body = c.bytes(size as usize, "option data")?;
            match id {
                OPT_DONE => {
                    next = endian.u64(body, 0).unwrap_or(0);
                    break;
                }
                OPT_HEADER_INFO | OPT_FTRACE_EVENTS | OPT_EVENT_FORMATS | OPT_KALLSYMS
                | OPT_PRINTK | OPT_CMDLINES => {
                    let off = endian
                        .u64(body, 0)
                        .ok_or_else(|| Error::corrupt(at, "section pointer option too short"))?;
                    pointers.push((id, off));
                }
                OPT_BUFFER | OPT_BUFFER_TEXT => buffer_opts.push((body.to_vec(), at)),
                OPT_BTF_FILE | OPT_LAST_BOOT_INFO | OPT_MODULES_FILE => {
                    let pointed = endian
                        .u64(body, 0)
                        .filter(|_| body.len() == 8)
                        .map(|off| (off, section(bytes, off, id, codec, endian)));
                    match pointed {
                        Some((off, Ok(content))) => {
                            p.info.notes.push(newer_option_note(id, &content, off))
                        }
                        Some((off, Err(e))) => p.warnings.push(format!(
                            "{}: {e}; the section at {off:#x} is skipped",
                            newer_option_name(id)
                        )),
                        None => option(id, body, at, p)?,
                    }
                }
                _ => option(id, body, at, p)?,
            }
        }
    }
    // Kallsyms first, so that its read-ahead runs beside the event formats' parsing.
    pointers.sort_by_key(|(id, _)| *id != OPT_KALLSYMS);
    for (id, off) in pointers {
        if id == OPT_KALLSYMS && codec != Codec::None {
            match deferred_kallsyms(bytes, off, codec, endian) {
                Ok(text) => {
                    set_kallsyms_text(text, p);
                    if read_symbols_ahead {
                        p.meta.kallsyms.read_ahead();
                    }
                }
                Err(e) => p.warnings.push(format!("{e}; the section is skipped")),
            }
            continue;
        }
        let content = match section(bytes, off, id, codec, endian) {
            Ok(c) => c,
            Err(e) => {
                p.warnings.push(format!("{e}; the section is skipped"));
                continue;
            }
        };
        let mut c = Cursor::new(&content, off, endian);
        let r = match id {
            OPT_HEADER_INFO => v7_header_info(&mut c, off, p),
            OPT_FTRACE_EVENTS => v7_formats(&mut c, p, Some("ftrace")),
            OPT_EVENT_FORMATS => v7_formats(&mut c, p, None),
            OPT_KALLSYMS => c
                .u32("kallsyms size")
                .and_then(|n| c.bytes(n as usize, "kallsyms"))
                .map(|t| set_kallsyms(t, p)),
            OPT_PRINTK => c
                .u32("printk size")
                .and_then(|n| c.bytes(n as usize, "printk formats"))
                .map(|t| set_printk(t, p)),
            _ => c
                .u64("cmdlines size")
                .and_then(|n| c.bytes_u64(n, "saved cmdlines"))
                .map(|t| set_cmdlines(t, p)),
        };
        if let Err(e) = r {
            p.warnings
                .push(format!("{e}; the rest of that section is skipped"));
        }
    }
    for (body, at) in buffer_opts {
        let mut c = Cursor::new(&body, at, endian);
        let _section = c.u64("buffer section offset")?;
        let name = String::from_utf8_lossy(c.cstr("buffer name")?).into_owned();
        let clock = String::from_utf8_lossy(c.cstr("buffer clock")?).into_owned();
        if c.remaining() == 0 {
            // A latency (text) buffer: nothing to decode as pages.
            continue;
        }
        let page_size = c.u32("buffer page size")? as usize;
        if !(64..=(1 << 24)).contains(&page_size) {
            return Err(Error::corrupt(
                c.offset() - 4,
                format!("buffer page size {page_size} is implausible"),
            ));
        }
        let count = c.u32("buffer CPU count")?;
        if count > 1 << 16 {
            return Err(Error::corrupt(
                c.offset() - 4,
                format!("buffer CPU count {count} is implausible"),
            ));
        }
        let mut cpus = Vec::new();
        for _ in 0..count {
            let cpu = c.u32("CPU id")?;
            let offset = c.u64("CPU data offset")?;
            let size = c.u64("CPU data size")?;
            cpus.push(CpuData { cpu, offset, size });
        }
        cpus.sort_by_key(|d| d.cpu);
        let clock = if clock.is_empty() {
            p.meta.clock.clone()
        } else {
            Some(clock)
        };
        if name.is_empty() || p.meta.clock.is_none() {
            if let Some(c) = &clock {
                p.meta.clock = Some(c.clone());
            }
        }
        p.buffers.push(Buffer {
            name,
            clock,
            cpus,
            compressed: codec != Codec::None,
            page_size,
        });
    }
    Ok(())
}

fn v7_header_info(c: &mut Cursor<'_>, off: u64, p: &mut Parsed) -> Result<()> {
    let tag = c.bytes(12, "header_page tag")?;
    if tag != b"header_page\0" {
        return Err(Error::corrupt(
            off,
            "HEADER_INFO section does not start with header_page",
        ));
    }
    let n = c.u64("header_page size")?;
    let at = c.offset();
    let text = c.bytes_u64(n, "header_page")?;
    header_page(text, at, p)?;
    if c.remaining() >= 13 && c.bytes(13, "header_event tag")? == b"header_event\0" {
        let n = c.u64("header_event size")?;
        p.meta.sources.header_event =
            String::from_utf8_lossy(c.bytes_u64(n, "header_event")?).into_owned();
    }
    Ok(())
}

fn v7_formats(c: &mut Cursor<'_>, p: &mut Parsed, system: Option<&str>) -> Result<()> {
    let systems = match system {
        Some(_) => 1,
        None => c.u32("event system count")?,
    };
    check_count(systems, c.offset())?;
    for _ in 0..systems {
        let name = match system {
            Some(s) => s.to_string(),
            None => String::from_utf8_lossy(c.cstr("event system name")?).into_owned(),
        };
        let count = c.u32("event format count")?;
        check_count(count, c.offset())?;
        for _ in 0..count {
            let size = c.u64("event format size")?;
            let at = c.offset();
            let text = c.bytes_u64(size, "event format")?;
            add_format(&name, text, at, p);
        }
    }
    Ok(())
}

/// Notes CPU data that lies (partly) outside the file, which trace-cmd skips silently.
fn check_cpu_data(bytes: &Bytes, p: &mut Parsed) {
    let len = bytes.len();
    for b in &p.buffers {
        for d in &b.cpus {
            let end = d.offset.saturating_add(d.size);
            if d.offset > len || (d.size > 0 && d.offset == len) {
                p.warnings.push(format!(
                    "CPU {} data at file offset {:#x} ({} bytes) lies past the end of the file ({len} bytes): the file is truncated; no events for that CPU",
                    d.cpu, d.offset, d.size
                ));
            } else if end > len {
                p.warnings.push(format!(
                    "CPU {} data at file offset {:#x} runs {} bytes past the end of the file: the file is truncated; only the complete part is read",
                    d.cpu,
                    d.offset,
                    end - len
                ));
            }
        }
    }
}
