//! ` name=value` field lists, as `trace-cmd report -R` prints them (and as the
//! `[FAILED TO PARSE]` fallback does).

use super::fmt_eval::{print_piece, Ctx};
use super::fmt_parse::{Arg, Piece};
use super::line::Snippet;
use super::{num, Line};
use crate::format::{EventFormat, Field};

/// How one field is printed in raw mode, decided once per event (the choice depends
/// only on the format and on which arrays were found not to be strings).
#[derive(Debug)]
pub(crate) struct FieldStep {
    /// ` name=`.
    label: Snippet,
    /// The print-format piece that prints the field, and whether `0x` goes before it.
    conv: Option<(usize, bool)>,
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
        let label = Snippet::new(&format!(" {}=", f.name));
        let cleared_here = cleared.get(i).copied().unwrap_or(false);
        let mut conv = None;
        if let (Some(pieces), Some(start)) = (pieces, cursor) {
            if !f.flags.array && (!f.flags.string || cleared_here) {
                if let Some((at, has_0x, next)) = find_conv(f, pieces, start) {
                    conv = Some((at, has_0x));
                    cursor = next;
                }
            }
        }
        steps.push(FieldStep { label, conv });
    }
    steps
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
    for (i, (f, step)) in event.fields.iter().zip(plan).enumerate() {
        out.push_snippet(&step.label);
        if let Some((at, has_0x)) = step.conv {
            if let Some(piece) = pieces.get(at) {
                if has_0x {
                    out.push_str("0x");
                }
                print_piece(ctx, out, piece);
                continue;
            }
        }
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
