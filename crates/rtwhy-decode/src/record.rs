//! A decoded ring-buffer record: timestamp, CPU and the event's bytes, read through
//! its format.

use crate::endian::Endian;
use crate::format::{EventFormat, Field};

/// One event record as stored in the ring buffer, borrowed from the page it came from.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Timestamp in the trace clock (after TSC2NSEC conversion and offsets, when the file
    /// asks for them).
    pub ts: u64,
    /// CPU whose buffer held it.
    pub cpu: u32,
    /// The event payload, starting with `common_type`.
    pub data: &'a [u8],
    /// The event's format; `None` when the file has no format for this id.
    pub format: Option<&'a EventFormat>,
    /// Byte order of the traced machine.
    pub endian: Endian,
    /// Events the kernel dropped on this CPU just before this record, when the page said so
    /// (`Some(0)` means "some, count unknown").
    pub missed_before: Option<u64>,
    /// The bytes that follow this record in the page (and the next pages read with it). libtraceevent reads a fixed-size field
    /// whole even when the record is shorter (a `kernel_stack` with fewer frames than its
    /// declared array); printing the same bytes needs them. Never used for meaning.
    pub following: &'a [u8],
}

impl<'a> Record<'a> {
    /// `common_type`: the event id.
    pub fn event_id(&self) -> Option<u32> {
        self.endian.u16(self.data, 0).map(u32::from)
    }

    /// `common_pid`: the task current on the CPU (from the format, else offset 4).
    pub fn pid(&self) -> i32 {
        let at = self
            .format
            .and_then(|f| f.field("common_pid"))
            .map(|f| (f.offset, f.size))
            .unwrap_or((4, 4));
        self.endian
            .read_uint(self.data, at.0, at.1)
            .map(|v| v as i32)
            .unwrap_or(-1)
    }

    /// A field's raw value, zero-extended, or `None` if the record is too short.
    #[inline]
    pub fn uint(&self, field: &Field) -> Option<u64> {
        self.endian.read_uint(self.data, field.offset, field.size)
    }

    /// A field's value, sign-extended when the field is signed.
    #[inline]
    pub fn int(&self, field: &Field) -> Option<i64> {
        let v = self.uint(field)?;
        Some(if field.flags.signed {
            sign_extend(v, field.size)
        } else {
            v as i64
        })
    }

    /// The bytes of an array field; for `__data_loc`/`__rel_loc` fields, the dynamic data.
    pub fn array(&self, field: &Field) -> Option<&'a [u8]> {
        if field.flags.dynamic {
            let word = self.uint(field)?;
            let (mut off, len) = if field.size >= 4 {
                ((word & 0xffff) as usize, ((word >> 16) & 0xffff) as usize)
            } else {
                (word as usize, 0)
            };
            if field.flags.relative {
                off += field.offset + field.size;
            }
            self.data.get(off..off.checked_add(len)?)
        } else if field.size == 0 {
            // A flexible array (`char buf[]`, as in ftrace:print) runs to the end of the record.
            self.data.get(field.offset..)
        } else {
            self.data
                .get(field.offset..field.offset.checked_add(field.size)?)
        }
    }

    /// The bytes of a fixed-size field as libtraceevent reads them: running past the end of
    /// the record into the page when the record is shorter than its format says.
    pub fn field_bytes_unbounded(&self, field: &Field) -> std::borrow::Cow<'a, [u8]> {
        let (start, end) = (field.offset, field.offset.saturating_add(field.size));
        if end <= self.data.len() {
            return std::borrow::Cow::Borrowed(&self.data[start..end]);
        }
        let mut v: Vec<u8> = self.data.get(start..).unwrap_or_default().to_vec();
        let from_tail = start.saturating_sub(self.data.len());
        let want = end - start.max(self.data.len());
        v.extend(self.following.iter().skip(from_tail).take(want));
        std::borrow::Cow::Owned(v)
    }

    /// A string field (fixed or dynamic char array), cut at the first NUL.
    pub fn str_bytes(&self, field: &Field) -> Option<&'a [u8]> {
        let raw = self.array(field)?;
        Some(raw.split(|b| *b == 0).next().unwrap_or_default())
    }

    /// A field by name, as an integer.
    pub fn int_named(&self, name: &str) -> Option<i64> {
        self.int(self.format?.field(name)?)
    }

    /// A field by name, as a string (lossy UTF-8).
    pub fn str_named(&self, name: &str) -> Option<std::borrow::Cow<'a, str>> {
        Some(String::from_utf8_lossy(
            self.str_bytes(self.format?.field(name)?)?,
        ))
    }
}

/// Sign-extends the low `size` bytes of `v`.
#[inline]
pub fn sign_extend(v: u64, size: usize) -> i64 {
    match size {
        1 => v as u8 as i8 as i64,
        2 => v as u16 as i16 as i64,
        4 => v as u32 as i32 as i64,
        _ => v as i64,
    }
}
