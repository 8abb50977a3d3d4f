//! Evaluation of parsed print arguments against one record's bytes, and printing of
//! the format pieces, with libtraceevent's rules for types, pointers and helpers.

use std::fmt::Write;

use super::cfmt::{self, cast, Spec};
use super::fmt_parse::{strtoull, Arg, ConvKind, FastInt, Piece};
use super::symbols::Funcs;
use super::Line;
use crate::endian::Endian;
use crate::format::Field;
use crate::symbols::PrintkFormats;

/// What evaluation needs besides the arguments.
pub(crate) struct Ctx<'a> {
    /// The record payload, from `common_type` on.
    pub data: &'a [u8],
    /// The page bytes after the record (libtraceevent reads fixed arrays into them).
    pub following: &'a [u8],
    pub endian: Endian,
    /// The traced kernel's `long` size.
    pub long_size: usize,
    pub funcs: Funcs<'a>,
    pub printk: &'a PrintkFormats,
}

impl Ctx<'_> {
    /// libtraceevent's `tep_read_number`: 1, 2, 4 or 8 bytes, else 0; 0 past the end.
    pub fn read(&self, at: usize, size: usize) -> u64 {
        self.endian.read_uint(self.data, at, size).unwrap_or(0)
    }

    /// A field's number, 0 when it lies past the end of the record.
    pub fn field_num(&self, f: &Field) -> u64 {
        if f.offset.saturating_add(f.size) > self.data.len() {
            return 0;
        }
        self.read(f.offset, f.size)
    }

    /// Offset and length of a `__data_loc`/`__rel_loc` field's data, (0, 0) when broken.
    pub fn dynamic(&self, f: &Field) -> (usize, usize) {
        let size = self.data.len();
        if f.offset.saturating_add(f.size) > size {
            return (0, 0);
        }
        let val = self.read(f.offset, f.size);
        let o = (val & 0xffff) as usize;
        let l = if f.size == 2 {
            size.wrapping_sub(o)
        } else {
            ((val >> 16) & 0xffff) as usize
        };
        let mut offset = if o > size { 0 } else { o };
        let len = if o.checked_add(l).is_none_or(|end| end > size) {
            0
        } else {
            l
        };
        if f.flags.relative {
            offset += f.offset + f.size;
        }
        (offset, len)
    }

    /// Bytes from `at` up to (not including) the next NUL or the end of the record.
    pub fn cstr(&self, at: usize) -> &[u8] {
        let rest = self.data.get(at..).unwrap_or_default();
        match rest.iter().position(|b| *b == 0) {
            Some(n) => &rest[..n],
            None => rest,
        }
    }
}

/// Element size of an array field as libtraceevent computes it.
pub(crate) fn element_size(f: &Field, long_size: usize) -> usize {
    if !(f.flags.array || f.flags.dynamic) {
        return f.size;
    }
    if let Some(es) = f.size.checked_div(f.array_len) {
        return es;
    }
    if f.flags.dynamic {
        let elem = f
            .type_name
            .trim_start_matches("__data_loc")
            .trim_start_matches("__rel_loc");
        let elem = elem.split('[').next().unwrap_or("").trim();
        return match elem {
            "u8" | "s8" | "char" => 1,
            "u16" | "s16" => 2,
            "u32" | "s32" => 4,
            "u64" | "s64" => 8,
            _ => 0,
        };
    }
    if f.flags.string {
        1
    } else if f.flags.long {
        long_size
    } else {
        0
    }
}

/// The value libtraceevent gives a flag or symbol table entry's text.
fn flag_value(text: &str) -> i64 {
    if text.bytes().next().is_some_and(|c| c.is_ascii_digit()) {
        return strtoull(text) as i64;
    }
    const KNOWN: &[(&str, i64)] = &[
        ("HI_SOFTIRQ", 0),
        ("TIMER_SOFTIRQ", 1),
        ("NET_TX_SOFTIRQ", 2),
        ("NET_RX_SOFTIRQ", 3),
        ("BLOCK_SOFTIRQ", 4),
        ("IRQ_POLL_SOFTIRQ", 5),
        ("TASKLET_SOFTIRQ", 6),
        ("SCHED_SOFTIRQ", 7),
        ("HRTIMER_SOFTIRQ", 8),
        ("RCU_SOFTIRQ", 9),
        ("HRTIMER_NORESTART", 0),
        ("HRTIMER_RESTART", 1),
    ];
    KNOWN
        .iter()
        .find(|(n, _)| *n == text)
        .map(|(_, v)| *v)
        .unwrap_or(-1)
}

/// libtraceevent's numbering of argument kinds, shown in its error texts.
fn arg_type_number(arg: &Arg) -> u32 {
    match arg {
        Arg::Null => 0,
        Arg::Atom(_) => 1,
        Arg::Field(..) => 2,
        Arg::Flags { .. } => 3,
        Arg::Symbols { .. } => 4,
        Arg::Hex { spaced: true, .. } => 5,
        Arg::IntArray { .. } => 6,
        Arg::Cast(..) => 7,
        Arg::Str(_) => 8,
        Arg::BStr(_) => 9,
        Arg::DynArray(_) => 10,
        Arg::Op(..) | Arg::Cond(..) | Arg::Index(..) => 11,
        Arg::Func(..) => 12,
        Arg::Bitmask(_, false) => 13,
        Arg::DynArrayLen(_) => 14,
        Arg::Hex { spaced: false, .. } => 15,
        Arg::Bitmask(_, true) => 16,
    }
}

/// Numeric value of an argument (`eval_num_arg`).
pub(crate) fn eval(ctx: &Ctx<'_>, arg: &Arg) -> u64 {
    match arg {
        Arg::Atom(a) => {
            let v = strtoull(a);
            if v != 0 || a.bytes().next().is_none_or(|c| c.is_ascii_digit()) {
                return v;
            }
            ctx.funcs.address_of(a).unwrap_or(0)
        }
        Arg::Field(_, Some(f)) => ctx.field_num(f),
        Arg::Cast(ty, item) => cast(eval(ctx, item), ty),
        Arg::Func(name, args) if name == "is_writable_pte" => {
            args.first().map(|a| eval(ctx, a) & 2).unwrap_or(0)
        }
        Arg::Cond(c, a, b) => {
            if eval(ctx, c) != 0 {
                eval(ctx, a)
            } else {
                eval(ctx, b)
            }
        }
        Arg::Index(base, idx) => eval_index(ctx, base, idx),
        Arg::DynArrayLen(f) => ctx.dynamic(f).1 as u64,
        Arg::DynArray(f) => ctx.dynamic(f).0 as u64,
        Arg::Op(op, l, r) => {
            let left = eval(ctx, l);
            let right = eval(ctx, r);
            match op.as_str() {
                "!" => u64::from(right == 0),
                "!=" => u64::from(left != right),
                "~" => !right,
                "|" => left | right,
                "||" => u64::from(left != 0 || right != 0),
                "&" => left & right,
                "&&" => u64::from(left != 0 && right != 0),
                "<" => u64::from(left < right),
                "<<" => left.wrapping_shl(right as u32),
                "<=" => u64::from(left <= right),
                ">" => u64::from(left > right),
                ">>" => left.wrapping_shr(right as u32),
                ">=" => u64::from(left >= right),
                "==" => u64::from(left == right),
                "-" => left.wrapping_sub(right),
                "+" => left.wrapping_add(right),
                "/" => left.checked_div(right).unwrap_or(0),
                "%" => left.checked_rem(right).unwrap_or(0),
                "*" => left.wrapping_mul(right),
                _ => 0,
            }
        }
        _ => 0,
    }
}

fn eval_index(ctx: &Ctx<'_>, base: &Arg, idx: &Arg) -> u64 {
    let right = eval(ctx, idx);
    let mut typearg = None;
    let mut b = base;
    while let Arg::Cast(ty, item) = b {
        if typearg.is_none() {
            typearg = Some(ty.as_str());
        }
        b = item;
    }
    let (offset, size) = match b {
        Arg::DynArray(f) => {
            let es = element_size(f, ctx.long_size);
            let size = if es > 0 { es } else { ctx.long_size };
            ((ctx.dynamic(f).0 as u64).wrapping_add(right), size)
        }
        Arg::Field(_, Some(f)) => {
            let es = element_size(f, ctx.long_size);
            (
                (f.offset as u64).wrapping_add(right.wrapping_mul(es as u64)),
                es,
            )
        }
        _ => return 0,
    };
    let Ok(offset) = usize::try_from(offset) else {
        return 0;
    };
    if offset.saturating_add(size) > ctx.data.len() {
        return 0;
    }
    let val = ctx.read(offset, size);
    match typearg {
        Some(ty) => match ty.trim().strip_suffix('*') {
            Some(inner) => cast(val, inner.trim_end()),
            None => val,
        },
        None => val,
    }
}

/// The value a [`FastInt`] conversion prints: its field's number masked by the casts.
#[inline]
pub(crate) fn fast_value(ctx: &Ctx<'_>, fi: &FastInt) -> u64 {
    if fi.offset.saturating_add(fi.size) > ctx.data.len() {
        0
    } else {
        ctx.read(fi.offset, fi.size) & fi.mask
    }
}

/// Prints one format piece.
pub(crate) fn print_piece(ctx: &Ctx<'_>, out: &mut Line, piece: &Piece) {
    match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Conv {
            fast: Some(fi),
            parsed,
            ..
        } => {
            let v = fast_value(ctx, fi);
            if fi.plain != 0 {
                cfmt::plain_int(out, fi.plain, v, fi.bits);
            } else {
                cfmt::int(out, parsed, v, fi.bits);
            }
        }
        Piece::Conv {
            spec,
            parsed,
            kind,
            arg,
            star,
            ..
        } => {
            let star_val = star.as_ref().map(|a| i64::from(eval(ctx, a) as i32));
            match kind {
                ConvKind::Digit(ls) => {
                    let bits = match ls {
                        i32::MIN..=-2 => 8,
                        -1 => 16,
                        0 => 32,
                        1 | 2 => 64,
                        _ => return,
                    };
                    let s = if star_val.is_some() {
                        parsed.with_star(star_val)
                    } else {
                        **parsed
                    };
                    cfmt::int(out, &s, eval(ctx, arg), bits);
                }
                ConvKind::Pointer => print_pointer(ctx, out, spec, star_val.unwrap_or(1), arg),
                ConvKind::Str => {
                    let s = if star_val.is_some() {
                        parsed.with_star(star_val)
                    } else {
                        **parsed
                    };
                    print_str(ctx, out, &s, arg);
                }
            }
        }
    }
}

/// `%pS` and friends: the symbol (with `+0x` offset for `S`/`F`), else the address. Left
/// out, with a note of where it goes, when the printer defers symbols and they are not
/// read yet; the symbols are then read on a thread of their own from the first such
/// conversion on (a reader that knows it may need none does not start that at open,
/// see [`crate::input::Sink::read_symbols_ahead`]).
pub(crate) fn print_function(ctx: &Ctx<'_>, out: &mut Line, with_offset: bool, val: u64) {
    if let Some(holes) = ctx.funcs.defer {
        if !ctx.funcs.ready() {
            ctx.funcs.kallsyms.read_ahead();
            holes.borrow_mut().push(super::Hole {
                at: out.len(),
                val,
                with_offset,
            });
            return;
        }
    }
    write_function(ctx.funcs, out, with_offset, val);
}

/// What [`print_function`] prints, looked up now.
pub(crate) fn write_function(funcs: Funcs<'_>, out: &mut Line, with_offset: bool, val: u64) {
    match funcs.find(val) {
        Some((start, name)) => {
            out.push_str(name);
            if with_offset {
                let _ = write!(out, "+0x{:x}", val.wrapping_sub(start));
            }
        }
        None => {
            let _ = write!(out, "0x{val:x}");
        }
    }
}

fn strip_casts(arg: &Arg) -> &Arg {
    let mut a = arg;
    while let Arg::Cast(_, item) = a {
        a = item;
    }
    a
}

fn print_pointer(ctx: &Ctx<'_>, out: &mut Line, spec: &str, plen: i64, arg: &Arg) {
    if let Arg::BStr(s) = arg {
        out.push_lossy(s);
        return;
    }
    let ext = spec
        .split_once('p')
        .map(|(_, e)| e.as_bytes())
        .unwrap_or_default();
    let at = |i: usize| ext.get(i).copied().unwrap_or(0);
    match at(0) {
        b'F' | b'f' | b'S' | b's' => {
            print_function(ctx, out, matches!(at(0), b'F' | b'S'), eval(ctx, arg))
        }
        b'M' | b'm' => print_mac(ctx, out, ext, arg),
        b'I' | b'i' => print_ip(ctx, out, ext, arg),
        b'U' => print_uuid(ctx, out, ext, arg),
        b'h' => {
            let delim = match at(1) {
                b'C' => ":",
                b'D' => "-",
                b'N' => "",
                _ => " ",
            };
            let Arg::DynArray(f) = arg else {
                let _ = write!(out, "ARG TYPE NOT FIELD BUT {}", arg_type_number(arg));
                return;
            };
            let (off, len) = ctx.dynamic(f);
            let n = usize::try_from(plen).unwrap_or(0).min(len);
            for (i, b) in ctx.data.iter().skip(off).take(n).enumerate() {
                if i > 0 {
                    out.push_str(delim);
                }
                let _ = write!(out, "{b:02x}");
            }
        }
        _ => cfmt::pointer(out, eval(ctx, arg)),
    }
}

fn field_bytes<'a>(
    ctx: &'a Ctx<'_>,
    out: &mut Line,
    arg: &Arg,
    want: usize,
    what: &str,
) -> Option<&'a [u8]> {
    let arg = strip_casts(arg);
    let Arg::Field(_, f) = arg else {
        let _ = write!(out, "ARG TYPE NOT FIELD BUT {}", arg_type_number(arg));
        return None;
    };
    let f = f.as_ref()?;
    if f.size != want {
        out.push_str(what);
        return None;
    }
    ctx.data.get(f.offset..f.offset + want)
}

fn print_mac(ctx: &Ctx<'_>, out: &mut Line, ext: &[u8], arg: &Arg) {
    let Some(b) = field_bytes(ctx, out, arg, 6, "INVALIDMAC") else {
        return;
    };
    let sep = match (ext.first(), ext.get(1)) {
        (Some(b'm'), _) => "",
        (Some(b'M'), Some(b'F')) => "-",
        _ => ":",
    };
    let reverse = ext.get(1) == Some(&b'R');
    let order: Vec<u8> = if reverse {
        b.iter().rev().copied().collect()
    } else {
        b.to_vec()
    };
    for (i, x) in order.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        let _ = write!(out, "{x:02x}");
    }
}

fn print_ip(ctx: &Ctx<'_>, out: &mut Line, ext: &[u8], arg: &Arg) {
    let leading = ext.first() == Some(&b'i');
    match ext.get(1) {
        Some(b'4') => {
            let Some(b) = field_bytes(ctx, out, arg, 4, "INVALIDIPv4") else {
                return;
            };
            let reverse = match ext.get(2) {
                Some(b'h') => ctx.endian == Endian::Little,
                Some(b'l') => true,
                _ => false,
            };
            let v: Vec<u8> = if reverse {
                b.iter().rev().copied().collect()
            } else {
                b.to_vec()
            };
            if leading {
                let _ = write!(out, "{:03}.{:03}.{:03}.{:03}", v[0], v[1], v[2], v[3]);
            } else {
                let _ = write!(out, "{}.{}.{}.{}", v[0], v[1], v[2], v[3]);
            }
        }
        Some(b'6') => {
            let Some(b) = field_bytes(ctx, out, arg, 16, "INVALIDIPv6") else {
                return;
            };
            if !leading && ext.get(2) == Some(&b'c') {
                ip6_compressed(out, b);
                return;
            }
            for j in (0..16).step_by(2) {
                let _ = write!(out, "{:02x}{:02x}", b[j], b[j + 1]);
                if !leading && j < 14 {
                    out.push(':');
                }
            }
        }
        _ => {}
    }
}

/// `%pI6c`: the shortest form, with `::` for the longest run of zero words and a
/// dotted IPv4 tail for mapped and ISATAP addresses.
fn ip6_compressed(out: &mut Line, b: &[u8]) {
    let word = |i: usize| u16::from_be_bytes([b[2 * i], b[2 * i + 1]]);
    let mapped = word(0) == 0
        && word(1) == 0
        && word(2) == 0
        && word(3) == 0
        && word(4) == 0
        && word(5) == 0xffff;
    let isatap = (word(4) | 0x0200) == 0x0200 && word(5) == 0x5efe;
    let use_v4 = mapped || isatap;
    let range = if use_v4 { 6 } else { 8 };
    let mut longest = 1;
    let mut colonpos: Option<usize> = None;
    for i in 0..range {
        let run = (i..range).take_while(|j| word(*j) == 0).count();
        if run > longest {
            longest = run;
            colonpos = Some(i);
        }
    }
    let mut needcolon = false;
    let mut i = 0;
    while i < range {
        if Some(i) == colonpos {
            if needcolon || i == 0 {
                out.push(':');
            }
            out.push(':');
            needcolon = false;
            i += longest;
            continue;
        }
        if needcolon {
            out.push(':');
        }
        let _ = write!(out, "{:x}", word(i));
        needcolon = true;
        i += 1;
    }
    if use_v4 {
        if needcolon {
            out.push(':');
        }
        let _ = write!(out, "{}.{}.{}.{}", b[12], b[13], b[14], b[15]);
    }
}

fn print_uuid(ctx: &Ctx<'_>, out: &mut Line, ext: &[u8], arg: &Arg) {
    let Some(b) = field_bytes(ctx, out, arg, 16, "INVALIDUUID") else {
        return;
    };
    let upper = matches!(ext.get(1), Some(b'L') | Some(b'B'));
    let guid = matches!(ext.get(1), Some(b'L') | Some(b'l'));
    const GUID: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    for i in 0..16 {
        let x = b[if guid { GUID[i] } else { i }];
        if upper {
            let _ = write!(out, "{x:02X}");
        } else {
            let _ = write!(out, "{x:02x}");
        }
        if matches!(i, 3 | 5 | 7 | 9) {
            out.push('-');
        }
    }
}

/// `%s` of an argument (`print_str_arg`).
pub(crate) fn print_str(ctx: &Ctx<'_>, out: &mut Line, spec: &Spec, arg: &Arg) {
    match arg {
        Arg::Atom(a) => cfmt::string(out, spec, a.as_bytes()),
        Arg::BStr(s) => cfmt::string(out, spec, s),
        Arg::Field(_, Some(f)) => {
            if !f.flags.array && f.size == ctx.long_size {
                let addr = ctx.read(f.offset, ctx.long_size);
                match ctx.printk.get(addr) {
                    Some(s) => out.push_str(s),
                    None => {
                        let _ = write!(out, "{addr:x}");
                    }
                }
                return;
            }
            let len = if f.size > 0 {
                f.size
            } else {
                ctx.data.len().saturating_sub(f.offset)
            };
            let bytes = ctx.data.get(f.offset..).unwrap_or_default();
            let bytes = &bytes[..len.min(bytes.len())];
            cfmt::string(out, spec, bytes);
        }
        Arg::Flags { value, delim, list } => {
            let mut val = eval(ctx, value);
            let mut printed = false;
            for (v, s) in list {
                let fval = flag_value(v);
                if val == 0 && fval < 0 {
                    cfmt::string(out, spec, s.as_bytes());
                    break;
                }
                if fval > 0 && (val & fval as u64) == fval as u64 {
                    if printed {
                        if let Some(d) = delim {
                            out.push_str(d);
                        }
                    }
                    cfmt::string(out, spec, s.as_bytes());
                    printed = true;
                    val &= !(fval as u64);
                }
            }
            if val != 0 {
                if printed {
                    if let Some(d) = delim {
                        out.push_str(d);
                    }
                }
                let _ = write!(out, "0x{val:x}");
            }
        }
        Arg::Symbols { value, list } => {
            let val = eval(ctx, value);
            match list.iter().find(|(v, _)| flag_value(v) as u64 == val) {
                Some((_, s)) => cfmt::string(out, spec, s.as_bytes()),
                None => {
                    let _ = write!(out, "0x{val:x}");
                }
            }
        }
        Arg::Hex { data, len, spaced } => {
            let Some(start) = array_start(ctx, data) else {
                return;
            };
            let n = eval(ctx, len) as i32;
            let bytes = ctx.data.get(start..).unwrap_or_default();
            for (i, b) in bytes
                .iter()
                .take(usize::try_from(n).unwrap_or(0))
                .enumerate()
            {
                if i > 0 && *spaced {
                    out.push(' ');
                }
                let _ = write!(out, "{b:02x}");
            }
        }
        Arg::IntArray {
            data,
            count,
            el_size,
        } => {
            let Some(mut at) = array_start(ctx, data) else {
                return;
            };
            let n = eval(ctx, count) as i32;
            let mut es = eval(ctx, el_size) as i32;
            out.push('{');
            for i in 0..n.max(0) {
                if at >= ctx.data.len() {
                    break;
                }
                if i > 0 {
                    out.push(',');
                }
                match es {
                    1 | 2 | 4 | 8 => {
                        let _ = write!(out, "0x{:x}", ctx.read(at, es as usize));
                    }
                    _ => {
                        let _ = write!(out, "BAD SIZE:{} 0x{:x}", es, ctx.read(at, 1));
                        es = 1;
                    }
                }
                at += es as usize;
            }
            out.push('}');
        }
        Arg::Str(Some(f)) => {
            let (off, len) = ctx.dynamic(f);
            if len == 0 {
                return;
            }
            cfmt::string(out, spec, ctx.cstr(off));
        }
        Arg::Bitmask(Some(f), cpus) => {
            let (off, len) = ctx.dynamic(f);
            let bytes = ctx
                .data
                .get(off..off.saturating_add(len))
                .unwrap_or_default();
            let text = if *cpus {
                cpumask_text(ctx, bytes)
            } else {
                bitmask_text(ctx, bytes)
            };
            cfmt::string(out, spec, text.as_bytes());
        }
        Arg::Cond(c, a, b) => {
            if eval(ctx, c) != 0 {
                print_str(ctx, out, spec, a);
            } else {
                print_str(ctx, out, spec, b);
            }
        }
        _ => {}
    }
}

fn array_start(ctx: &Ctx<'_>, data: &Arg) -> Option<usize> {
    match data {
        Arg::DynArray(f) => Some(ctx.dynamic(f).0),
        Arg::Field(_, f) => f.as_ref().map(|f| f.offset),
        _ => None,
    }
}

fn bitmask_text(ctx: &Ctx<'_>, bytes: &[u8]) -> String {
    let size = bytes.len();
    let mut s = String::new();
    for i in 0..size {
        let idx = if ctx.endian == Endian::Big {
            i
        } else {
            size - 1 - i
        };
        if i > 0 && (size - i) % 4 == 0 {
            s.push(',');
        }
        let _ = write!(s, "{:02x}", bytes.get(idx).copied().unwrap_or(0));
    }
    s
}

fn cpumask_text(ctx: &Ctx<'_>, bytes: &[u8]) -> String {
    let size = bytes.len();
    let bit = |n: usize| -> bool {
        let byte = n / 8;
        let idx = if ctx.endian == Endian::Big {
            size - 1 - byte
        } else {
            byte
        };
        bytes.get(idx).is_some_and(|b| b & (1 << (n % 8)) != 0)
    };
    let mut s = String::new();
    let mut n = 0;
    let total = size * 8;
    while n < total {
        if !bit(n) {
            n += 1;
            continue;
        }
        let start = n;
        while n < total && bit(n) {
            n += 1;
        }
        if !s.is_empty() {
            s.push(',');
        }
        if n - 1 > start {
            let _ = write!(s, "{start}-{}", n - 1);
        } else {
            let _ = write!(s, "{start}");
        }
    }
    s
}
