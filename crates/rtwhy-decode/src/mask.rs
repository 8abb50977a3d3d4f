//! Rewriting a trace's private values in place, for traces that are to be posted in
//! public: kernel addresses in event fields and in the symbol and printk tables, task
//! names in `comm` fields and `saved_cmdlines`, and the text of `print` events.
//!
//! What replaces a value is the caller's policy (a [`Mask`]); this module only knows
//! where such values sit in the bytes, from each event's own format, so that the
//! rewritten trace keeps its layout and `trace-cmd report` reads it as before.

use std::fmt::Write as _;

use crate::endian::Endian;
use crate::format::{EventFormat, Field};
use crate::meta::MetaSources;
use crate::symbols::Kallsyms;

/// What to put in place of a private value. Implementations must be functions of their
/// input (the same value always gets the same replacement), so that a field, the symbol
/// table and any text quoting the value still agree.
pub trait Mask {
    /// The value to store for kernel address `addr` (see [`is_kernel_address`]).
    fn address(&mut self, addr: u64) -> u64;
    /// The name to store for task name `comm`, or `None` to keep it.
    fn comm(&mut self, comm: &str) -> Option<String>;
    /// The text to store for the text of a `print` event or a string field.
    fn text(&mut self, text: &str) -> String;
    /// The symbols an [`Self::address`] placed: (original start address, start address
    /// given), so that the symbol table can name them at their new place.
    fn symbols(&self) -> Vec<(u64, u64)>;
}

/// Whether `v`, read from a 64-bit field, is an address in a 64-bit kernel's half of the
/// address space (x86_64 and arm64 kernels live at `0xff..`; with 5-level paging too).
/// The last 4 KiB are negative error numbers (`-ETIMEDOUT` is `0xffffffffffffff92`),
/// never an address, as the kernel's `IS_ERR_VALUE` has it.
pub fn is_kernel_address(v: u64) -> bool {
    (0xff00_0000_0000_0000..0xffff_ffff_ffff_f000).contains(&v)
}

/// Whether `field` may hold a kernel address: an unsigned 8-byte integer or an array of
/// them (pointers, `unsigned long` addresses such as `ip` and `caller[]`).
fn may_hold_address(field: &Field) -> bool {
    !field.flags.signed
        && !field.flags.string
        && !field.flags.dynamic
        && (field.element_size() == 8)
        && (field.size % 8 == 0)
        && field.size > 0
}

/// Whether `field` is a task name (`comm`, `prev_comm`, `next_comm`, `parent_comm`...).
fn is_comm(field: &Field) -> bool {
    field.flags.string && !field.flags.dynamic && field.name.ends_with("comm") && field.size > 0
}

/// The payload `data` (starting at `common_type`) of an event of `format`, with its
/// kernel addresses, task names and print text replaced through `mask`. Bytes the
/// format does not describe are kept; a record shorter than its format is rewritten as
/// far as it goes.
pub fn record(format: &EventFormat, endian: Endian, data: &[u8], mask: &mut impl Mask) -> Vec<u8> {
    let mut out = data.to_vec();
    let last = format.fields.iter().max_by_key(|f| f.offset);
    for field in &format.fields {
        if may_hold_address(field) {
            // The kernel writes a stack (`kernel_stack`'s `caller[8]`) as deep as it is:
            // an array that ends the record runs to the record's end, and trace-cmd
            // prints every frame there.
            let end = if field.array_len > 0 && last == Some(field) {
                out.len()
            } else {
                field.offset + field.size
            };
            let mut at = field.offset;
            while at + 8 <= end {
                if let Some(v) = endian.u64(&out, at) {
                    if is_kernel_address(v) {
                        put_u64(&mut out, at, endian, mask.address(v));
                    }
                }
                at += 8;
            }
        } else if is_comm(field) {
            let Some(raw) = out.get(field.offset..field.offset + field.size) else {
                continue;
            };
            let name = raw.split(|b| *b == 0).next().unwrap_or_default();
            if let Some(new) = mask.comm(&String::from_utf8_lossy(name)) {
                write_fixed_str(&mut out, field, new.as_bytes());
            }
        }
    }
    rewrite_dynamic_strs(&mut out, format, endian, mask);
    if format.system == "ftrace" && format.name == "print" {
        if let Some(buf) = format.field("buf").filter(|f| f.size == 0) {
            rewrite_print_buf(&mut out, buf.offset, mask);
        }
    }
    out
}

fn put_u64(out: &mut [u8], at: usize, endian: Endian, v: u64) {
    let mut b = Vec::with_capacity(8);
    endian.put_uint(&mut b, v, 8);
    if let Some(dst) = out.get_mut(at..at + 8) {
        dst.copy_from_slice(&b);
    }
}

/// Stores `new` in a fixed `char[N]` field, cut to leave room for its NUL, NUL-padded.
fn write_fixed_str(out: &mut [u8], field: &Field, new: &[u8]) {
    let Some(dst) = out.get_mut(field.offset..field.offset + field.size) else {
        return;
    };
    dst.fill(0);
    let n = new.len().min(field.size.saturating_sub(1));
    dst[..n].copy_from_slice(&new[..n]);
}

/// Where a dynamic (`__data_loc`/`__rel_loc`) field's data lies in the record:
/// (absolute offset, length), or `None` when the record is too short for it.
fn dynamic_span(data: &[u8], field: &Field, endian: Endian) -> Option<(usize, usize)> {
    if field.size < 4 {
        return None;
    }
    let word = endian.read_uint(data, field.offset, field.size)?;
    let mut off = (word & 0xffff) as usize;
    let len = ((word >> 16) & 0xffff) as usize;
    if field.flags.relative {
        off += field.offset + field.size;
    }
    (off.checked_add(len)? <= data.len()).then_some((off, len))
}

/// The `__data_loc char[]` strings (a task's name on newer kernels, an IRQ's or a
/// workqueue's name) through `mask`. A new string may be longer than the old one, so
/// the record's dynamic data is laid out again after its fixed fields, in the order it
/// had, and each field's offset/length word is written anew. A record whose dynamic data
/// does not lie in one stretch after the fixed fields is left as it is.
fn rewrite_dynamic_strs(
    out: &mut Vec<u8>,
    format: &EventFormat,
    endian: Endian,
    mask: &mut impl Mask,
) {
    let mut spans: Vec<(&Field, usize, usize)> = Vec::new();
    for f in format.fields.iter().filter(|f| f.flags.dynamic) {
        match dynamic_span(out, f, endian) {
            Some((off, len)) => spans.push((f, off, len)),
            None => return,
        }
    }
    if !spans.iter().any(|(f, _, _)| f.flags.string) {
        return;
    }
    spans.sort_by_key(|(_, off, _)| *off);
    let fixed_end = format
        .fields
        .iter()
        .chain(&format.common_fields)
        .map(|f| f.offset + f.size)
        .max()
        .unwrap_or(0);
    let Some(start) = spans.first().map(|(_, off, _)| *off) else {
        return;
    };
    if start < fixed_end {
        return;
    }
    let mut tail = Vec::new();
    let mut placed = Vec::new();
    let mut at = start;
    for (f, off, len) in &spans {
        let old = out.get(*off..off + len).unwrap_or_default();
        let new: Vec<u8> = if f.flags.string {
            let text = String::from_utf8_lossy(old.split(|b| *b == 0).next().unwrap_or_default())
                .into_owned();
            let replaced = if f.name.ends_with("comm") {
                mask.comm(&text)
            } else {
                Some(mask.text(&text)).filter(|t| *t != text)
            };
            match replaced {
                Some(t) => {
                    let mut v = t.into_bytes();
                    v.push(0);
                    v
                }
                None => old.to_vec(),
            }
        } else {
            old.to_vec()
        };
        if new.len() > 0xffff || at + new.len() > 0xffff {
            return;
        }
        placed.push((*f, at, new.len()));
        at += new.len();
        tail.extend_from_slice(&new);
    }
    let last_end = spans
        .iter()
        .map(|(_, off, len)| off + len)
        .max()
        .unwrap_or(start);
    let rest = out.get(last_end..).unwrap_or_default().to_vec();
    out.truncate(start);
    out.extend_from_slice(&tail);
    out.extend_from_slice(&rest);
    for (f, off, len) in placed {
        let off = if f.flags.relative {
            off - (f.offset + f.size)
        } else {
            off
        };
        let word = ((len as u64) << 16) | off as u64;
        let mut b = Vec::with_capacity(f.size);
        endian.put_uint(&mut b, word, f.size);
        if let Some(dst) = out.get_mut(f.offset..f.offset + f.size) {
            dst.copy_from_slice(&b);
        }
    }
}

/// The text of a `print` event (a `trace_marker` line) runs from `at` to the record's
/// end; it may change length, so the record is cut there and the new text appended
/// with its NUL.
fn rewrite_print_buf(out: &mut Vec<u8>, at: usize, mask: &mut impl Mask) {
    let Some(raw) = out.get(at..) else {
        return;
    };
    let text = raw.split(|b| *b == 0).next().unwrap_or_default();
    let old = String::from_utf8_lossy(text).into_owned();
    let new = mask.text(&old);
    if new != old {
        out.truncate(at);
        out.extend_from_slice(new.as_bytes());
        out.push(0);
    }
}

/// The metadata of a trace whose events went through `mask`: `printk_formats` at the
/// addresses `mask` gives, `saved_cmdlines` with its names masked, and a symbol table
/// holding only the symbols [`Mask::symbols`] placed, at their new addresses, so that
/// events naming a function still print its name. `kallsyms` is the trace's table.
pub fn sources(src: &MetaSources, kallsyms: &Kallsyms, mask: &mut impl Mask) -> MetaSources {
    let mut out = src.clone();
    let mut printk = String::new();
    for line in src.printk.lines() {
        let parsed = line.split_once(':').and_then(|(addr, rest)| {
            let hex = addr.trim().trim_start_matches("0x");
            u64::from_str_radix(hex, 16).ok().map(|a| (a, rest))
        });
        match parsed {
            Some((addr, rest)) => {
                let addr = if is_kernel_address(addr) {
                    mask.address(addr)
                } else {
                    addr
                };
                let _ = writeln!(printk, "0x{addr:x} :{rest}");
            }
            // A line that names no address is kept as it is only if it holds no address.
            None => {
                let _ = writeln!(printk, "{}", mask.text(line));
            }
        }
    }
    out.printk = printk;
    let mut cmdlines = String::new();
    for line in src.cmdlines.lines() {
        match line.trim_start().split_once(' ') {
            Some((pid, comm)) => {
                let comm = mask.comm(comm).unwrap_or_else(|| comm.to_string());
                let _ = writeln!(cmdlines, "{pid} {comm}");
            }
            None => {
                let _ = writeln!(cmdlines, "{line}");
            }
        }
    }
    out.cmdlines = cmdlines;
    let mut placed = mask.symbols();
    placed.sort_by_key(|(_, new)| *new);
    let mut text = String::new();
    for (old, new) in placed {
        // Every name at the old address (aliases), with its module.
        for (name, kind, module) in kallsyms.all_at(old) {
            let module = module.map(|m| format!("\t[{m}]")).unwrap_or_default();
            let _ = writeln!(text, "{new:016x} {kind} {name}{module}");
        }
    }
    out.kallsyms = crate::symbols::LazyText::new(text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Adds 1 to every address, names tasks `t-<name>`, upper-cases text.
    #[derive(Default)]
    struct Plus1 {
        seen: HashMap<u64, u64>,
    }

    impl Mask for Plus1 {
        fn address(&mut self, addr: u64) -> u64 {
            self.seen.insert(addr, addr + 1);
            addr + 1
        }
        fn comm(&mut self, comm: &str) -> Option<String> {
            (comm != "keep").then(|| format!("t-{comm}"))
        }
        fn text(&mut self, text: &str) -> String {
            text.to_uppercase()
        }
        fn symbols(&self) -> Vec<(u64, u64)> {
            self.seen.iter().map(|(a, b)| (*a, *b)).collect()
        }
    }

    const HRTIMER: &str = "name: hrtimer_start
ID: 90
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;
\tfield:s64 expires;\toffset:16;\tsize:8;\tsigned:1;
\tfield:char comm[16];\toffset:24;\tsize:16;\tsigned:0;

print fmt: \"hrtimer=%p\", REC->hrtimer
";

    #[test]
    fn addresses_and_names_are_replaced_where_the_format_puts_them() {
        let f = EventFormat::parse("timer", HRTIMER).unwrap();
        let mut data = vec![0u8; 40];
        data[8..16].copy_from_slice(&0xff53_04f8_c05f_bac0u64.to_le_bytes());
        data[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        data[24..28].copy_from_slice(b"bash");
        let out = record(&f, Endian::Little, &data, &mut Plus1::default());
        assert_eq!(
            u64::from_le_bytes(out[8..16].try_into().unwrap()),
            0xff53_04f8_c05f_bac1
        );
        // A signed field is a number, never an address.
        assert_eq!(&out[16..24], &data[16..24]);
        assert_eq!(&out[24..40], b"t-bash\0\0\0\0\0\0\0\0\0\0");
    }

    const FORK: &str = "name: sched_process_fork
ID: 366
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] parent_comm;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t parent_pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] child_comm;\toffset:16;\tsize:4;\tsigned:0;
\tfield:pid_t child_pid;\toffset:20;\tsize:4;\tsigned:1;

print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", __get_str(parent_comm), REC->parent_pid, __get_str(child_comm), REC->child_pid
";

    #[test]
    fn dynamic_task_names_may_grow_and_the_record_is_laid_out_again() {
        let f = EventFormat::parse("sched", FORK).unwrap();
        let mut data = vec![0u8; 24];
        // parent_comm "sh" at 24 (3 bytes), child_comm "keep" at 27 (5 bytes).
        data[8..12].copy_from_slice(&((3u32 << 16) | 24).to_le_bytes());
        data[12..16].copy_from_slice(&7i32.to_le_bytes());
        data[16..20].copy_from_slice(&((5u32 << 16) | 27).to_le_bytes());
        data[20..24].copy_from_slice(&8i32.to_le_bytes());
        data.extend_from_slice(b"sh\0keep\0");
        let out = record(&f, Endian::Little, &data, &mut Plus1::default());
        let r = crate::record::Record {
            ts: 0,
            cpu: 0,
            data: &out,
            format: Some(&f),
            endian: Endian::Little,
            missed_before: None,
            following: &[],
        };
        assert_eq!(r.str_named("parent_comm").unwrap(), "t-sh");
        assert_eq!(r.str_named("child_comm").unwrap(), "keep");
        assert_eq!(r.int_named("child_pid"), Some(8));
        assert_eq!(out.len(), data.len() + 2);
    }

    const STACK: &str = "name: kernel_stack
ID: 4
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;

print fmt: \"\\t=> %ps\\n\", (void *)REC->caller[0]
";

    /// Regression: frames past `caller[8]` of a deeper stack kept their real addresses
    /// (a wild trace's redacted window printed `=> ffffffffa89747d1`).
    #[test]
    fn a_stack_deeper_than_its_format_is_rewritten_to_its_last_frame() {
        let f = EventFormat::parse("ftrace", STACK).unwrap();
        let mut data = vec![0u8; 16];
        for i in 0..10u64 {
            data.extend_from_slice(&(0xffff_ffff_a800_0000 + i).to_le_bytes());
        }
        let out = record(&f, Endian::Little, &data, &mut Plus1::default());
        let last = u64::from_le_bytes(out[16 + 9 * 8..16 + 10 * 8].try_into().unwrap());
        assert_eq!(last, 0xffff_ffff_a800_000a);
    }

    #[test]
    fn a_short_record_is_rewritten_as_far_as_it_goes() {
        let f = EventFormat::parse("timer", HRTIMER).unwrap();
        let data = vec![0xffu8; 12];
        let out = record(&f, Endian::Little, &data, &mut Plus1::default());
        assert_eq!(out, data);
    }

    #[test]
    fn the_symbol_table_keeps_only_placed_symbols_at_their_new_place() {
        let src = MetaSources {
            printk: "0xffffffff82000010 : \"hello\\n\"\n".to_string(),
            cmdlines: "12 bash\n13 keep\n".to_string(),
            ..MetaSources::default()
        };
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t secret_fn\nffffffff81000200 T hrtimer_wakeup\n",
        );
        let mut m = Plus1::default();
        m.address(0xffff_ffff_8100_0200);
        let out = sources(&src, &k, &mut m);
        assert_eq!(out.printk, "0xffffffff82000011 : \"hello\\n\"\n");
        assert_eq!(out.cmdlines, "12 t-bash\n13 keep\n");
        let syms = out.kallsyms.get();
        assert!(syms.contains("ffffffff81000201 T hrtimer_wakeup"), "{syms}");
        assert!(
            !syms.contains("secret_fn") && !syms.contains("_stext"),
            "{syms}"
        );
    }
}
