//! A small C `printf` for one conversion at a time: the subset libtraceevent hands to
//! the C library (flags, width, precision, `*` arguments), so numbers and strings come
//! out padded exactly as `trace-cmd report` prints them.

/// One parsed conversion such as `%-08.3lx`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spec {
    pub left: bool,
    pub zero: bool,
    pub plus: bool,
    pub space: bool,
    pub alt: bool,
    /// Width; `None` when absent. `Some(usize::MAX)` never occurs: `*` is resolved by
    /// the caller through [`Spec::with_star`].
    pub width: Option<usize>,
    pub prec: Option<usize>,
    /// The width or precision was `*`.
    pub star_width: bool,
    pub star_prec: bool,
    /// Length modifier count: `h` is -1, `l` is +1, `L`/`ll` 2.
    pub conv: u8,
}

impl Spec {
    /// Parses a conversion that starts with `%`. Unknown text yields a spec whose `conv`
    /// is the last byte.
    pub fn parse(text: &str) -> Spec {
        let b = text.as_bytes();
        let mut s = Spec::default();
        let mut i = usize::from(b.first() == Some(&b'%'));
        while let Some(&c) = b.get(i) {
            match c {
                b'-' => s.left = true,
                b'0' => s.zero = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                _ => break,
            }
            i += 1;
        }
        if b.get(i) == Some(&b'*') {
            s.star_width = true;
            i += 1;
        } else {
            let (n, used) = digits(&b[i.min(b.len())..]);
            if used > 0 {
                s.width = Some(n);
            }
            i += used;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if b.get(i) == Some(&b'*') {
                s.star_prec = true;
            } else {
                s.prec = Some(digits(&b[i.min(b.len())..]).0);
            }
        }
        s.conv = b.last().copied().unwrap_or(b'd');
        s
    }

    /// Applies a `*` argument the way C does: to the width if the width was `*`,
    /// else to the precision; a negative width means left-justified.
    pub fn with_star(&self, star: Option<i64>) -> Spec {
        let mut s = *self;
        if let Some(v) = star {
            if s.star_width {
                if v < 0 {
                    s.left = true;
                    s.width = Some(v.unsigned_abs().min(4096) as usize);
                } else {
                    s.width = Some((v as u64).min(4096) as usize);
                }
            } else if s.star_prec {
                s.prec = if v < 0 {
                    None
                } else {
                    Some((v as u64).min(4096) as usize)
                };
            }
        }
        s
    }
}

fn digits(b: &[u8]) -> (usize, usize) {
    let mut n: usize = 0;
    let mut used = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            break;
        }
        n = n
            .saturating_mul(10)
            .saturating_add(usize::from(c - b'0'))
            .min(4096);
        used += 1;
    }
    (n, used)
}

use super::num::{self, pad};
use super::Line;

/// Prints an integer conversion (`d i u x X o c`) of `val`, already cut to the width of
/// the C type it was passed as (`bits`: 8, 16, 32 or 64).
pub(crate) fn int(out: &mut Line, spec: &Spec, val: u64, bits: u32) {
    let conv = plain_conv(spec);
    if conv != 0 {
        return plain_int(out, conv, val, bits);
    }
    let v = cut(val, bits);
    if spec.conv == b'c' {
        let body = char::from(v as u8);
        let w = spec.width.unwrap_or(0).saturating_sub(1);
        if !spec.left {
            pad(out, w, ' ');
        }
        push_byte(out, v as u8, body);
        if spec.left {
            pad(out, w, ' ');
        }
        return;
    }
    let (neg, mag) = match spec.conv {
        b'd' | b'i' => {
            let sv = signed_of(v, bits);
            (sv < 0, sv.unsigned_abs())
        }
        _ => (false, v),
    };
    let mut buf = [0u8; 24];
    let start = match spec.conv {
        b'x' => num::digits(&mut buf, mag, 16, false),
        b'X' => num::digits(&mut buf, mag, 16, true),
        b'o' => num::digits(&mut buf, mag, 8, false),
        _ => num::digits(&mut buf, mag, 10, false),
    };
    let digits: &[u8] = if spec.prec == Some(0) && mag == 0 {
        &[]
    } else {
        buf.get(start..).unwrap_or_default()
    };
    // Leading zeros from the precision, then `#o`'s extra zero when the body does not
    // start with one already.
    let prec_zeros = spec.prec.map_or(0, |p| p.saturating_sub(digits.len()));
    let alt_zero =
        spec.alt && spec.conv == b'o' && prec_zeros == 0 && digits.first() != Some(&b'0');
    let body_len = prec_zeros + usize::from(alt_zero) + digits.len();
    let prefix = match spec.conv {
        b'd' | b'i' if neg => "-",
        b'd' | b'i' if spec.plus => "+",
        b'd' | b'i' if spec.space => " ",
        b'x' if spec.alt && mag != 0 => "0x",
        b'X' if spec.alt && mag != 0 => "0X",
        _ => "",
    };
    let body = |out: &mut Line| {
        pad(out, prec_zeros + usize::from(alt_zero), '0');
        num::push_digits(out, digits, 0);
    };
    let len = prefix.len() + body_len;
    let w = spec.width.unwrap_or(0);
    if len >= w {
        out.push_str(prefix);
        body(out);
    } else if spec.left {
        out.push_str(prefix);
        body(out);
        pad(out, w - len, ' ');
    } else if spec.zero && spec.prec.is_none() {
        out.push_str(prefix);
        pad(out, w - len, '0');
        body(out);
    } else {
        pad(out, w - len, ' ');
        out.push_str(prefix);
        body(out);
    }
}

fn push_byte(out: &mut Line, b: u8, c: char) {
    if b.is_ascii() {
        out.push(c);
    } else {
        out.push(char::REPLACEMENT_CHARACTER);
    }
}

/// Prints `%s` of a byte string (cut at the first NUL), honouring width, precision and `-`.
pub(crate) fn string(out: &mut Line, spec: &Spec, s: &[u8]) {
    let s = match s.iter().position(|b| *b == 0) {
        Some(n) => &s[..n],
        None => s,
    };
    let s = match spec.prec {
        Some(p) if p < s.len() => &s[..p],
        _ => s,
    };
    let w = spec.width.unwrap_or(0);
    let fill = w.saturating_sub(s.len());
    if !spec.left {
        pad(out, fill, ' ');
    }
    out.push_lossy(s);
    if spec.left {
        pad(out, fill, ' ');
    }
}

/// The conversion of a spec printed as plainly as `%u`, `%x` or `%d` (no flags, width or
/// precision), else 0.
pub(crate) fn plain_conv(spec: &Spec) -> u8 {
    let plain = spec.width.is_none()
        && spec.prec.is_none()
        && !(spec.left || spec.zero || spec.plus || spec.space || spec.alt);
    match spec.conv {
        b'u' | b'x' | b'd' | b'i' if plain => spec.conv,
        _ => 0,
    }
}

/// [`int`] for a conversion [`plain_conv`] returned.
#[inline]
pub(crate) fn plain_int(out: &mut Line, conv: u8, val: u64, bits: u32) {
    let v = cut(val, bits);
    match conv {
        b'u' => num::dec(out, v),
        b'x' => num::hex(out, v),
        _ => num::signed(out, signed_of(v, bits)),
    }
}

/// `val` cut to a C type of `bits` bits (8, 16, 32 or 64).
#[inline]
fn cut(val: u64, bits: u32) -> u64 {
    if bits >= 64 {
        val
    } else {
        val & ((1u64 << bits) - 1)
    }
}

/// `v` (cut to `bits`) read as that type's signed value.
#[inline]
fn signed_of(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// glibc's `%p`: `(nil)` for zero, else `0x` and lowercase hex.
pub(crate) fn pointer(out: &mut Line, v: u64) {
    if v == 0 {
        out.push_str("(nil)");
    } else {
        num::hex0x(out, v);
    }
}

/// libtraceevent's cast: only masks (it never sign-extends).
pub(crate) fn cast(val: u64, ty: &str) -> u64 {
    let ty = ty.trim();
    if ty.len() < 2 || ty.ends_with('*') || ty.starts_with("struct") {
        return val;
    }
    let ty = ty.strip_prefix("unsigned ").unwrap_or(ty);
    match ty {
        "u8" | "s8" | "char" => val & 0xff,
        "u16" | "s16" | "short" => val & 0xffff,
        "u32" | "s32" | "int" => val & 0xffff_ffff,
        _ => val,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt_int(spec: &str, v: u64, bits: u32) -> String {
        let mut s = Line::default();
        int(&mut s, &Spec::parse(spec), v, bits);
        s.to_string_lossy().into_owned()
    }

    #[test]
    fn integers_pad_like_c() {
        assert_eq!(fmt_int("%d", u64::MAX, 32), "-1");
        assert_eq!(fmt_int("%u", u64::MAX, 32), "4294967295");
        assert_eq!(fmt_int("%03d", 5, 32), "005");
        assert_eq!(fmt_int("%-5d", 42, 32), "42   ");
        assert_eq!(fmt_int("%08lx", 0xabc, 64), "00000abc");
        assert_eq!(fmt_int("%#x", 255, 32), "0xff");
        assert_eq!(fmt_int("%#x", 0, 32), "0");
        assert_eq!(fmt_int("%.3x", 5, 32), "005");
        assert_eq!(fmt_int("%5.2d", 3, 32), "   03");
        assert_eq!(fmt_int("%lld", 1u64 << 63, 64), "-9223372036854775808");
        assert_eq!(fmt_int("%hd", 0xffff, 16), "-1");
    }

    #[test]
    fn strings_and_pointers() {
        let mut s = Line::default();
        string(&mut s, &Spec::parse("%-6s"), b"ab\0cd");
        string(&mut s, &Spec::parse("%.2s"), b"xyz");
        pointer(&mut s, 0);
        pointer(&mut s, 0x1f);
        assert_eq!(s.to_string_lossy(), "ab    xy(nil)0x1f");
        let star = Spec::parse("%*d").with_star(Some(-4));
        let mut t = Line::default();
        int(&mut t, &star, 7, 32);
        assert_eq!(t.to_string_lossy(), "7   ");
    }
}
