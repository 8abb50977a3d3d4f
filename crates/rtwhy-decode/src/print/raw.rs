//! ` name=value` field lists, as `trace-cmd report -R` prints them (and as the
//! `[FAILED TO PARSE]` fallback does).

use std::fmt::Write;

use super::fmt_eval::{print_piece, Ctx};
use super::fmt_parse::{Arg, Piece};
use crate::format::{EventFormat, Field};

/// Prints every non-common field. With `pieces`, a field passed as exactly `REC->field`
/// to a conversion of the print format is printed with that conversion (libtraceevent
/// 1.2 and later); `cleared` remembers arrays that turned out not to be printable
/// strings, which libtraceevent then prints as arrays for the rest of the trace.
pub(crate) fn write_fields(
    ctx: &Ctx<'_>,
    out: &mut String,
    event: &EventFormat,
    pieces: Option<&[Piece]>,
    cleared: &mut [bool],
) {
    let mut cursor = pieces.filter(|p| !p.is_empty()).map(|_| 0usize);
    for (i, f) in event.fields.iter().enumerate() {
        out.push(' ');
        out.push_str(&f.name);
        out.push('=');
        let cleared_here = cleared.get(i).copied().unwrap_or(false);
        if let (Some(pieces), Some(start)) = (pieces, cursor) {
            if !f.flags.array && (!f.flags.string || cleared_here) {
                if let Some(next) = print_with_format(ctx, out, f, pieces, start) {
                    cursor = next;
                    continue;
                }
            }
        }
        if print_field_raw(ctx, out, f, cleared_here) {
            if let Some(c) = cleared.get_mut(i) {
                *c = true;
            }
        }
    }
}

/// Looks for the field's conversion, starting at `start` and wrapping around. Returns
/// the new cursor when printed.
fn print_with_format(
    ctx: &Ctx<'_>,
    out: &mut String,
    f: &Field,
    pieces: &[Piece],
    start: usize,
) -> Option<Option<usize>> {
    let n = pieces.len();
    let mut has_0x = false;
    let mut i = start;
    loop {
        match pieces.get(i)? {
            Piece::Text(t) => has_0x = t.len() > 1 && t.ends_with("0x"),
            piece @ Piece::Conv { arg, .. } => {
                let mut a: &Arg = arg;
                while let Arg::Cast(_, item) = a {
                    a = item;
                }
                match a {
                    Arg::Field(name, Some(ff)) if *name == f.name && ff.offset == f.offset => {
                        if has_0x {
                            out.push_str("0x");
                        }
                        print_piece(ctx, out, piece);
                        return Some(if i + 1 < n { Some(i + 1) } else { None });
                    }
                    _ => has_0x = false,
                }
            }
        }
        i = if i + 1 < n { i + 1 } else { 0 };
        if i == start {
            return None;
        }
    }
}

fn is_printable(b: &[u8]) -> bool {
    b.iter()
        .take_while(|c| **c != 0)
        .all(|c| (0x20..0x7f).contains(c) || matches!(c, b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
}

/// Prints a field from its bytes alone. Returns true when a string-typed array was
/// printed as bytes (so it is no longer treated as a string).
pub(crate) fn print_field_raw(ctx: &Ctx<'_>, out: &mut String, f: &Field, cleared: bool) -> bool {
    if f.flags.array {
        let (off, len) = if f.flags.dynamic {
            ctx.dynamic(f)
        } else {
            (f.offset, f.size)
        };
        let bytes = ctx.data.get(off..).unwrap_or_default();
        let bytes = &bytes[..len.min(bytes.len())];
        if f.flags.string && !cleared && is_printable(bytes) {
            super::cfmt::push_bytes(out, ctx.cstr(off));
            return false;
        }
        out.push_str("ARRAY[");
        for (i, b) in bytes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{b:02x}");
        }
        out.push(']');
        return f.flags.string;
    }
    let val = ctx.read(f.offset, f.size);
    if f.flags.pointer {
        let _ = write!(out, "0x{val:x}");
    } else if f.flags.signed {
        match f.size {
            4 if f.flags.long => {
                let _ = write!(out, "0x{:x}", val as u32);
            }
            4 => {
                let _ = write!(out, "{}", val as u32 as i32);
            }
            2 => {
                let _ = write!(out, "{:2}", val as u16 as i16);
            }
            1 => {
                let _ = write!(out, "{}", val as u8 as i8);
            }
            _ => {
                let _ = write!(out, "{}", val as i64);
            }
        }
    } else if f.flags.long {
        let _ = write!(out, "0x{val:x}");
    } else {
        let _ = write!(out, "{val}");
    }
    false
}
