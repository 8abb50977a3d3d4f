//! Everything about a trace except its events: the traced machine, the event formats,
//! symbols and names. Shared by every reader and by the printers.

use std::collections::HashMap;

use crate::endian::Endian;
use crate::format::{EventFormat, HeaderPage};
use crate::symbols::{Cmdlines, Kallsyms, PrintkFormats};

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
    /// Applies the conversion the way trace-cmd does (128-bit product, no overflow).
    pub fn convert(&self, tsc: u64) -> u64 {
        let ns = ((tsc as u128 * self.mult as u128) >> self.shift) as u64;
        ns.wrapping_add(self.offset)
    }
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
    pub formats: HashMap<u32, EventFormat>,
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
            formats: HashMap::new(),
            kallsyms: Kallsyms::default(),
            printk: PrintkFormats::default(),
            cmdlines: Cmdlines::default(),
            clock: None,
            tsc2nsec: None,
            ts_offset: 0,
        }
    }

    /// A format by event id.
    pub fn format(&self, id: u32) -> Option<&EventFormat> {
        self.formats.get(&id)
    }

    /// A format by system and name.
    pub fn format_named(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.formats.values().find(|f| f.name == name && (system.is_empty() || f.system == system))
    }

    /// Converts a raw ring-buffer timestamp to the file's reporting time.
    pub fn convert_ts(&self, raw: u64) -> u64 {
        let ts = match self.tsc2nsec {
            Some(c) => c.convert(raw),
            None => raw,
        };
        ts.wrapping_add(self.ts_offset as u64)
    }
}
