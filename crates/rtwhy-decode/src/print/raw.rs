//! ` name=value` field lists, as `trace-cmd report -R` prints them (and as the
//! `[FAILED TO PARSE]` fallback does).

use super::cfmt;
use super::fmt_eval::{fast_value, print_piece, Ctx};
use super::fmt_parse::{Arg, FastInt, Piece};
use super::line::Snippet;
use super::{num, Line};
use crate::format::{EventFormat, Field};

/// How one field is printed in raw mode, decided once per event (the choice depends
/// only on the format and on which arrays were found not to be strings).
#[derive(Debug)]
pub(crate) struct FieldStep {
    /// ` name=`, and `0x` when the print format has it before the field's conversion.
    label: Snippet,
    op: FieldOp,
    /// The field's index in the event's fields.
    field: usize,
}

/// What prints a field's value.
#[derive(Debug)]
enum FieldOp {
    /// A plain integer conversion of the field (see [`FastInt`]).
    Plain(FastInt),
    /// The print-format piece at this index.
    Piece(usize),
    /// The field's bytes alone ([`print_field_raw`]).
    Raw,
}

/// Decides, field by field, what [`write_fields`] would do.
pub(crate) fn plan(
    event: &EventFormat,
    pieces: Option<&[Piece]>,
    cleared: &[bool],
) -> Vec<FieldStep> {
    let pieces = pieces.filter(|p| !p.is_empty());
    let mut cursor = pieces.map(|_| 0usize);
    let mut steps = Vec::with_capacity(event.fields.len());
    for (i, f) in event.fields.iter().enumerate() {
        let cleared_here = cleared.get(i).copied().unwrap_or(false);
        let mut conv = None;
        if let (Some(pieces), Some(start)) = (pieces, cursor) {
            if !f.flags.array && (!f.flags.string || cleared_here) {
                if let Some((at, has_0x, next)) = find_conv(f, pieces, start) {
                    conv = pieces.get(at).map(|p| (at, p, has_0x));
                    cursor = next;
                }
            }
        }
        steps.push(step(f, i, conv));
    }
    steps
}

/// The step for field `i`, printed by the piece `conv` finds (with its index, and
/// whether `0x` goes before it) or from its bytes.
fn step(f: &Field, i: usize, conv: Option<(usize, &Piece, bool)>) -> FieldStep {
    let (op, has_0x) = match conv {
        Some((_, Piece::Conv { fast: Some(fi), .. }, has_0x)) if fi.plain != 0 => {
            (FieldOp::Plain(fi.clone()), has_0x)
        }
        Some((at, _, has_0x)) => (FieldOp::Piece(at), has_0x),
        None => (FieldOp::Raw, false),
    };
    let prefix = if has_0x { "0x" } else { "" };
    FieldStep {
        label: Snippet::new(&format!(" {}={prefix}", f.name)),
        op,
        field: i,
    }
}

/// Prints every non-common field following `plan` (made by [`plan`] for the same
/// `pieces`). Returns true when an array turned out not to be a printable string, which
/// changes the plan for the next records.
pub(crate) fn write_planned(
    ctx: &Ctx<'_>,
    out: &mut Line,
    event: &EventFormat,
    pieces: &[Piece],
    plan: &[FieldStep],
    cleared: &mut [bool],
) -> bool {
    let mut changed = false;
    for step in plan {
        out.push_snippet(&step.label);
        let piece = match &step.op {
            FieldOp::Plain(fi) => {
                cfmt::plain_int(out, fi.plain, fast_value(ctx, fi), fi.bits);
                continue;
            }
            FieldOp::Piece(at) => pieces.get(*at),
            FieldOp::Raw => None,
        };
        if let Some(piece) = piece {
            print_piece(ctx, out, piece);
            continue;
        }
        let i = step.field;
        let Some(f) = event.fields.get(i) else {
            continue;
        };
        let cleared_here = cleared.get(i).copied().unwrap_or(false);
        if print_field_raw(ctx, out, f, cleared_here) && !cleared_here {
            if let Some(c) = cleared.get_mut(i) {
                *c = true;
                changed = true;
            }
        }
    }
    changed
}

/// Prints every non-common field. With `pieces`, a field passed as exactly `REC->field`
/// to a conversion of the print format is printed with that conversion (libtraceevent
/// 1.2 and later); `cleared` remembers arrays that turned out not to be printable
/// strings, which libtraceevent then prints as arrays for the rest of the trace.
pub(crate) fn write_fields(
    ctx: &Ctx<'_>,
    out: &mut Line,
    event: &EventFormat,
    pieces: Option<&[Piece]>,
    cleared: &mut [bool],
) {
    let steps = plan(event, pieces, cleared);
    write_planned(ctx, out, event, pieces.unwrap_or_default(), &steps, cleared);
}

/// Looks for the field's conversion, starting at `start` and wrapping around. Returns
/// the piece, whether the text before it ends in `0x`, and the new cursor.
fn find_conv(f: &Field, pieces: &[Piece], start: usize) -> Option<(usize, bool, Option<usize>)> {
    let n = pieces.len();
    let mut has_0x = false;
    let mut i = start;
    loop {
        match pieces.get(i)? {
            Piece::Text(t) => has_0x = t.len() > 1 && t.ends_with("0x"),
            Piece::Conv { arg, .. } => {
                let mut a: &Arg = arg;
                while let Arg::Cast(_, item) = a {
                    a = item;
                }
                match a {
                    Arg::Field(name, Some(ff)) if *name == f.name && ff.offset == f.offset => {
                        return Some((i, has_0x, if i + 1 < n { Some(i + 1) } else { None }));
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

/// Bytes libtraceevent prints in a string array: printable ASCII and the five spacing
/// controls.
const PRINTABLE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x20;
    while c < 0x7f {
        t[c] = true;
        c += 1;
    }
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[0x0b] = true;
    t[0x0c] = true;
    t[b'\r' as usize] = true;
    t
};

/// How many bytes of `b` come before its first NUL (all of them without one), when all
/// those are printable.
fn printable_len(b: &[u8]) -> Option<usize> {
    for (i, &c) in b.iter().enumerate() {
        if c == 0 {
            return Some(i);
        }
        if !PRINTABLE[usize::from(c)] {
            return None;
        }
    }
    Some(b.len())
}

/// The length of a string that ends within the first 16 bytes of `b`, when every byte
/// before its NUL is printable ASCII other than the spacing controls, found eight bytes
/// at a time; `None` leaves the string to [`printable_len`].
#[inline]
fn short_string(b: &[u8; 16]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    for (i, word) in b.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().ok()?);
        // High bit of each byte below 0x20, and of each from 0x7f on: exact up to the
        // first such byte (the borrows and carries only mark bytes after it).
        let below = w.wrapping_sub(0x20 * ONES) & !w & HIGH;
        let above = (w | w.wrapping_add(ONES)) & HIGH;
        let odd = below | above;
        if odd != 0 {
            let k = (odd.trailing_zeros() / 8) as usize;
            return (word.get(k) == Some(&0)).then_some(i * 8 + k);
        }
    }
    None
}

/// Prints a field from its bytes alone. Returns true when a string-typed array was
/// printed as bytes (so it is no longer treated as a string).
pub(crate) fn print_field_raw(ctx: &Ctx<'_>, out: &mut Line, f: &Field, cleared: bool) -> bool {
    if f.flags.array {
        let (off, len) = if f.flags.dynamic {
            ctx.dynamic(f)
        } else {
            (f.offset, f.size)
        };
        let inside = ctx.data.get(off..).unwrap_or_default();
        let inside = &inside[..len.min(inside.len())];
        if f.flags.string && !cleared {
            if let Some((head, n)) = inside
                .first_chunk::<16>()
                .and_then(|h| short_string(h).map(|n| (h, n)))
            {
                out.push_ascii_block(head, n);
                return false;
            }
            // The usual string: it ends inside the array, whose bytes the record holds
            // whole, so the array's bytes up to the NUL are what `%s` prints.
            if let Some(n) = printable_len(inside).filter(|&n| n < inside.len()) {
                out.push_lossy(&inside[..n]);
                return false;
            }
        }
        // libtraceevent prints a fixed array whole even when the record ends inside it
        // (a kernel_stack with fewer frames than `caller[]` holds): the rest comes from
        // the bytes that follow the record in the page.
        let spill: Vec<u8>;
        let bytes = if !f.flags.dynamic && inside.len() < len && off <= ctx.data.len() {
            spill = inside
                .iter()
                .chain(ctx.following.iter().take(len - inside.len()))
                .copied()
                .collect();
            &spill[..]
        } else {
            inside
        };
        if f.flags.string && !cleared && printable_len(bytes).is_some() {
            out.push_lossy(ctx.cstr(off));
            return false;
        }
        out.push_str("ARRAY[");
        for (i, b) in bytes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            num::hex2(out, *b, false);
        }
        out.push(']');
        return f.flags.string;
    }
    let val = ctx.read(f.offset, f.size);
    if f.flags.pointer {
        num::hex0x(out, val);
    } else if f.flags.signed {
        match f.size {
            4 if f.flags.long => num::hex0x(out, u64::from(val as u32)),
            4 => num::signed(out, i64::from(val as u32 as i32)),
            2 => num::signed_width(out, i64::from(val as u16 as i16), 2),
            1 => num::signed(out, i64::from(val as u8 as i8)),
            _ => num::signed(out, val as i64),
        }
    } else if f.flags.long {
        num::hex0x(out, val);
    } else {
        num::dec(out, val);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_string_agrees_with_printable_len() {
        let mut cases: Vec<[u8; 16]> = vec![*b"cyclictest\0\0\0\0\0\0", *b"0123456789abcdef"];
        for at in 0..16 {
            for odd in [
                0u8, 0x01, b'\t', b'\r', 0x1f, b' ', b'~', 0x7f, 0x80, 0xc3, 0xff,
            ] {
                let mut b = *b"irq/25-virtio0-\0";
                b[at] = odd;
                cases.push(b);
                let mut c = [b'x'; 16];
                c[at] = odd;
                cases.push(c);
            }
        }
        for b in cases {
            let slow = printable_len(&b).filter(|&n| n < b.len());
            match short_string(&b) {
                Some(n) => assert_eq!(slow, Some(n), "{b:?}"),
                None => assert!(
                    slow.is_none()
                        || b[..slow.unwrap_or(0)]
                            .iter()
                            .any(|c| !(0x20..0x7f).contains(c)),
                    "{b:?}"
                ),
            }
        }
    }
}
