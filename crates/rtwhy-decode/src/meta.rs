//! Everything about a trace except its events: the traced machine, the event formats,
//! symbols and names. Shared by every reader and by the printers.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use crate::endian::Endian;
use crate::format::{EventFormat, HeaderPage};
use crate::symbols::{Cmdlines, Kallsyms, LazyText, PrintkFormats};
use crate::Result;

/// Event formats by id, each parsed the first time it is looked up: a trace holds the
/// formats of every event of its kernel (a few thousand) and uses a dozen.
///
/// Looked up once per record, so hashed by a multiply instead of SipHash (ids come from
/// the file, but a table of at most 65536 ids cannot be flooded).
#[derive(Debug, Clone, Default)]
pub struct FormatMap(HashMap<u32, LazyFormat, BuildHasherDefault<IdHasher>>);

/// One format: its text, checked when added, and the format parsed from it once needed.
#[derive(Debug, Clone)]
struct LazyFormat {
    system: Box<str>,
    name: Box<str>,
    text: Box<str>,
    /// `None` only if the text, which passed [`EventFormat::check`], did not parse.
    parsed: OnceLock<Option<EventFormat>>,
}

impl FormatMap {
    /// Adds a parsed format under `id`, replacing any format of that id.
    pub fn insert(&mut self, id: u32, format: EventFormat) {
        let entry = LazyFormat {
            system: format.system.as_str().into(),
            name: format.name.as_str().into(),
            text: Box::default(),
            parsed: OnceLock::from(Some(format)),
        };
        self.0.insert(id, entry);
    }

    /// Adds the format in `text` (of `system`), replacing any format of its id; it is
    /// checked now and parsed when first looked up. Fails, adding nothing, with the error
    /// [`EventFormat::parse`] gives for the text.
    pub fn insert_text(&mut self, system: &str, text: &str) -> Result<()> {
        let (id, name) = EventFormat::check(system, text)?;
        let entry = LazyFormat {
            system: system.into(),
            name: name.into(),
            text: text.into(),
            parsed: OnceLock::new(),
        };
        self.0.insert(id, entry);
        Ok(())
    }

    /// The format of event `id`.
    pub fn get(&self, id: u32) -> Option<&EventFormat> {
        self.0.get(&id)?.format()
    }

    /// A format whose name is `name` and whose system is `system` (any system if `system`
    /// is empty); the first in the map's order if several are.
    pub fn named(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.0
            .values()
            .find(|f| &*f.name == name && (system.is_empty() || &*f.system == system))?
            .format()
    }

    /// How many formats there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl LazyFormat {
    /// The format, parsed now if this is the first time it is asked for.
    fn format(&self) -> Option<&EventFormat> {
        self.parsed
            .get_or_init(|| EventFormat::parse(&self.system, &self.text).ok())
            .as_ref()
    }
}

/// Hashes an event id by one multiply, keeping the bits the table indexes with.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, v: u32) {
        // The high bits of the product are the well-mixed ones; hashbrown takes its
        // bucket from the low bits and its tag from the top seven.
        let x = u64::from(v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 32);
    }
}

/// Converts TSC counts to nanoseconds (`TSC2NSEC` option): `ns = (tsc * mult) >> shift + offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tsc2Nsec {
    /// Multiplier.
    pub mult: u32,
    /// Shift.
    pub shift: u32,
    /// Offset added after scaling.
    pub offset: u64,
}

impl Tsc2Nsec {
    /// Applies the conversion exactly as trace-cmd does: the low and high 32-bit halves
    /// are scaled separately, so results agree with trace-cmd to the nanosecond.
    pub fn convert(&self, tsc: u64) -> u64 {
        let mult = u64::from(self.mult);
        if self.shift > 32 {
            return ((u128::from(tsc) * u128::from(mult)) >> self.shift) as u64;
        }
        let lo = tsc & 0xffff_ffff;
        let hi = tsc >> 32;
        let mut ns = lo.wrapping_mul(mult) >> self.shift;
        if hi != 0 {
            ns = ns.wrapping_add(hi.wrapping_mul(mult) << (32 - self.shift));
        }
        ns
    }
}

/// One guest-to-host clock correction sample (`TIME_SHIFT` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSample {
    /// Guest time the sample was taken at.
    pub time: i64,
    /// Offset to add at that time.
    pub offset: i64,
    /// Scaling multiplier.
    pub scaling: i64,
    /// Scaling fraction bits.
    pub fraction: u32,
}

/// Guest-to-host timestamp synchronisation recorded by `trace-cmd record` with guests.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostSync {
    /// Interpolate between samples (protocol flag bit 0).
    pub interpolate: bool,
    /// Samples per CPU, sorted by time.
    pub cpus: Vec<Vec<ClockSample>>,
}

impl HostSync {
    fn correct(&self, ts: u64, cpu: u32) -> u64 {
        let Some(samples) = self.cpus.get(cpu as usize) else {
            return ts;
        };
        let n = samples.len();
        let (min, max) = match n {
            0 => return ts,
            1 => return ts.wrapping_add(samples[0].offset as u64),
            2 => (&samples[0], &samples[1]),
            _ => {
                let t = ts as i64;
                if t <= samples[0].time {
                    (&samples[0], &samples[1])
                } else if t >= samples[n - 1].time {
                    (&samples[n - 2], &samples[n - 1])
                } else {
                    let i = samples
                        .partition_point(|s| s.time <= t)
                        .saturating_sub(1)
                        .min(n - 2);
                    (&samples[i], &samples[i + 1])
                }
            }
        };
        let cor = if self.interpolate {
            let delta = max.time.wrapping_sub(min.time);
            let off = (ts as i64)
                .wrapping_sub(min.time)
                .wrapping_mul(max.offset.wrapping_sub(min.offset));
            if delta == 0 {
                min.offset
            } else {
                min.offset.wrapping_add(off.wrapping_add(delta / 2) / delta)
            }
        } else {
            min.offset
        };
        let scaled = if min.fraction < 64 {
            ts.wrapping_mul(min.scaling as u64) >> min.fraction
        } else {
            ts
        };
        scaled.wrapping_add(cor as u64)
    }
}

/// The metadata texts exactly as the file (or tracefs) held them, so a trace can be
/// written out again without loss.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaSources {
    /// `events/header_page`.
    pub header_page: String,
    /// `events/header_event`.
    pub header_event: String,
    /// `events/ftrace/*/format` texts.
    pub ftrace_formats: Vec<String>,
    /// `events/<system>/*/format` texts, by system.
    pub event_formats: Vec<(String, Vec<String>)>,
    /// `/proc/kallsyms` (shared with [`TraceMeta::kallsyms`], read when first needed).
    pub kallsyms: LazyText,
    /// `printk_formats`.
    pub printk: String,
    /// `saved_cmdlines`.
    pub cmdlines: String,
}

/// The trace's description of the traced machine and of its events.
#[derive(Debug, Clone)]
pub struct TraceMeta {
    /// Byte order of the traced machine.
    pub endian: Endian,
    /// Size of a user-space `long` on the traced machine, as the file header says.
    pub long_size: usize,
    /// Size of a kernel `long`, from `header_page`'s commit field.
    pub kernel_long_size: usize,
    /// Ring-buffer sub-buffer (page) size.
    pub page_size: usize,
    /// Ring-buffer page layout.
    pub header_page: HeaderPage,
    /// Event formats by id.
    pub formats: FormatMap,
    /// Kernel symbols.
    pub kallsyms: Kallsyms,
    /// `trace_printk` formats.
    pub printk: PrintkFormats,
    /// Saved task names.
    pub cmdlines: Cmdlines,
    /// Trace clock (`local`, `global`, `mono`, `x86-tsc`...), when recorded.
    pub clock: Option<String>,
    /// TSC to nanoseconds conversion, when recorded and the clock counts TSC.
    pub tsc2nsec: Option<Tsc2Nsec>,
    /// Fixed offset added to every timestamp (`OFFSET` option).
    pub ts_offset: i64,
    /// Guest-to-host clock correction, for guest traces.
    pub host_sync: Option<HostSync>,
    /// The metadata texts as read, for writing the trace out again.
    pub sources: MetaSources,
    /// When the file holds instance buffers, the length of the longest instance name:
    /// `trace-cmd report` then starts every line with a buffer column that wide (see
    /// [`crate::print::Printer::set_instance`]). `None` for a file of one top-level buffer.
    pub instance_width: Option<usize>,
}

impl TraceMeta {
    /// Metadata for a machine whose files are not read yet; formats are added later.
    pub fn new(endian: Endian, long_size: usize, page_size: usize) -> TraceMeta {
        TraceMeta {
            endian,
            long_size,
            kernel_long_size: long_size,
            page_size,
            header_page: HeaderPage::default_for_long(long_size),
            formats: FormatMap::default(),
            kallsyms: Kallsyms::default(),
            printk: PrintkFormats::default(),
            cmdlines: Cmdlines::default(),
            clock: None,
            tsc2nsec: None,
            ts_offset: 0,
            host_sync: None,
            sources: MetaSources::default(),
            instance_width: None,
        }
    }

    /// A format by event id.
    pub fn format(&self, id: u32) -> Option<&EventFormat> {
        self.formats.get(id)
    }

    /// A format by system and name.
    pub fn format_named(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.formats.named(system, name)
    }

    /// Converts a raw ring-buffer timestamp of `cpu` to the file's reporting time, in the
    /// order trace-cmd applies corrections: host sync, TSC scaling, fixed offset.
    pub fn convert_ts(&self, raw: u64, cpu: u32) -> u64 {
        let mut ts = raw;
        if let Some(sync) = &self.host_sync {
            ts = sync.correct(ts, cpu);
        }
        if let Some(c) = self.tsc2nsec {
            ts = c.convert(ts);
        }
        ts.wrapping_add(self.ts_offset as u64)
    }

    /// Whether timestamps are nanoseconds (printed as `secs.usecs`) rather than raw
    /// counter values (printed as integers), following trace-cmd's rule.
    pub fn ts_in_nanos(&self) -> bool {
        if self.tsc2nsec.is_some() {
            return true;
        }
        match self.clock.as_deref() {
            None => true,
            Some(c) => {
                matches!(
                    c,
                    "local" | "global" | "uptime" | "perf" | "tsc2nsec" | "tai"
                ) || c.starts_with("mono")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAKING: &str = "name: sched_waking\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\nprint fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n";

    #[test]
    fn a_format_added_as_text_is_parsed_when_looked_up() {
        let mut formats = FormatMap::default();
        formats.insert_text("sched", WAKING).unwrap();
        assert_eq!(formats.len(), 1);
        let expected = EventFormat::parse("sched", WAKING).unwrap();
        assert_eq!(formats.get(9), Some(&expected));
        assert_eq!(formats.named("sched", "sched_waking"), Some(&expected));
        assert_eq!(formats.named("", "sched_waking"), Some(&expected));
        assert_eq!(formats.named("irq", "sched_waking"), None);
        assert_eq!(formats.get(10), None);
    }

    #[test]
    fn a_malformed_format_is_refused_with_the_error_parse_gives() {
        let mut formats = FormatMap::default();
        let bad = WAKING.replace("offset:24;", "offset:x;");
        let e = formats.insert_text("sched", &bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            EventFormat::parse("sched", &bad).unwrap_err().to_string()
        );
        assert_eq!(
            e.to_string(),
            "event format \"sched_waking\": line 8: bad offset in \"offset:x\""
        );
        assert!(formats.is_empty());
    }

    #[test]
    fn a_later_format_of_the_same_id_replaces_the_earlier() {
        let mut formats = FormatMap::default();
        formats.insert_text("sched", WAKING).unwrap();
        let renamed = WAKING.replace("sched_waking", "sched_wakeup");
        formats.insert_text("sched", &renamed).unwrap();
        assert_eq!(formats.len(), 1);
        assert_eq!(
            formats.get(9).map(|f| f.name.as_str()),
            Some("sched_wakeup")
        );
        assert_eq!(formats.named("", "sched_waking"), None);
        let parsed = EventFormat::parse("sched", WAKING).unwrap();
        formats.insert(9, parsed.clone());
        assert_eq!(formats.get(9), Some(&parsed));
    }
}
