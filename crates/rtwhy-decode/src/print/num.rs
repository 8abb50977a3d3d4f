//! Integer and padding writers for the hot printing paths: digits are produced into a
//! stack buffer and appended in one `push_str`, without going through `core::fmt`.

use super::Line;

const SPACES: &str = "                                                                ";
const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Appends `n` copies of `fill` (`' '` and `'0'` are fast; anything else goes one by one).
#[inline]
pub(crate) fn pad(out: &mut Line, mut n: usize, fill: char) {
    let chunk = match fill {
        ' ' => SPACES,
        '0' => ZEROS,
        _ => {
            for _ in 0..n {
                out.push(fill);
            }
            return;
        }
    };
    while n > chunk.len() {
        out.push_str(chunk);
        n -= chunk.len();
    }
    out.push_str(chunk.get(..n).unwrap_or_default());
}

/// Appends spaces to bring a piece of `len` characters up to `width`.
#[inline]
pub(crate) fn spaces_to(out: &mut Line, len: usize, width: usize) {
    if len < width {
        pad(out, width - len, ' ');
    }
}

/// "00" to "99".
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Digits of `v` in `radix` (8, 10 or 16) at the end of `buf`; returns where they start.
#[inline]
pub(crate) fn digits(buf: &mut [u8; 24], v: u64, radix: u64, upper: bool) -> usize {
    match radix {
        16 => hex_digits(buf, v, upper),
        8 => {
            let mut v = v;
            let mut i = buf.len();
            loop {
                i -= 1;
                buf[i] = b'0' + (v & 7) as u8;
                v >>= 3;
                if v == 0 {
                    break i;
                }
            }
        }
        _ => dec_digits(buf, v),
    }
}

/// Decimal digits of `v` at the end of `buf` (two at a time); returns where they start.
#[inline]
pub(crate) fn dec_digits(buf: &mut [u8; 24], mut v: u64) -> usize {
    let mut i = buf.len();
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i] = PAIRS[d];
        buf[i + 1] = PAIRS[d + 1];
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        buf[i] = PAIRS[d];
        buf[i + 1] = PAIRS[d + 1];
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    i
}

/// Hexadecimal digits of `v` at the end of `buf`; returns where they start.
#[inline]
fn hex_digits(buf: &mut [u8; 24], mut v: u64, upper: bool) -> usize {
    let table: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = table[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break i;
        }
    }
}

/// Appends the ASCII digits `digits` left in `buf` from `start` on (cheaper than
/// validating them as UTF-8 for the few bytes a number has).
#[inline]
pub(crate) fn push_digits(out: &mut Line, buf: &[u8], start: usize) {
    out.push_ascii_short(buf.get(start..).unwrap_or_default());
}

/// `%llu`.
#[inline]
pub(crate) fn dec(out: &mut Line, v: u64) {
    match u32::try_from(v) {
        Ok(small) if small < 100_000_000 => dec8(out, small),
        _ => dec_long(out, v),
    }
}

/// `%u` of a number below 10^8: [`dec8_digits`] with the leading zeros shifted out.
#[inline]
fn dec8(out: &mut Line, v: u32) {
    let digits = dec8_digits(v);
    let zeros = (digits.trailing_zeros() / 8).min(7);
    let text = ((digits + 0x3030_3030_3030_3030) >> (zeros * 8)).to_le_bytes();
    out.push_ascii_block(&text, 8 - zeros as usize);
}

/// The eight decimal digits of `v` (below 10^8), one a byte, the first in the lowest:
/// made at once by divisions by 100 and 10 in 32- and 16-bit lanes of one word
/// (multiplications by fixed-point reciprocals, exact in that range).
#[inline]
fn dec8_digits(v: u32) -> u64 {
    let x = u64::from(v / 10_000) | u64::from(v % 10_000) << 32;
    let hundreds = ((x * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | (x - hundreds * 100) << 16;
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | (pairs - tens * 10) << 8
}

/// [`dec`] of a number from 10^8 on: the digits before the last eight, then those eight
/// with their zeros.
#[inline(never)]
fn dec_long(out: &mut Line, v: u64) {
    dec(out, v / 100_000_000);
    let low = dec8_digits((v % 100_000_000) as u32);
    out.push_ascii_array(&(low + 0x3030_3030_3030_3030).to_le_bytes());
}

/// `%lld`.
#[inline]
pub(crate) fn signed(out: &mut Line, v: i64) {
    if v < 0 {
        out.push('-');
    }
    dec(out, v.unsigned_abs());
}

/// `%*llu` (right-aligned in `width`, space-filled) or with `zero`, `%0*llu`.
#[inline]
pub(crate) fn dec_width(out: &mut Line, v: u64, width: usize, zero: bool) {
    let mut buf = [0u8; 24];
    let i = dec_digits(&mut buf, v);
    let len = buf.len() - i;
    if len < width {
        pad(out, width - len, if zero { '0' } else { ' ' });
    }
    push_digits(out, &buf, i);
}

/// `%*lld`: right-aligned in `width`, space-filled.
#[inline]
pub(crate) fn signed_width(out: &mut Line, v: i64, width: usize) {
    let mut buf = [0u8; 24];
    let i = dec_digits(&mut buf, v.unsigned_abs());
    let len = buf.len() - i + usize::from(v < 0);
    spaces_to(out, len, width);
    if v < 0 {
        out.push('-');
    }
    push_digits(out, &buf, i);
}

/// The eight nibbles of `x`, one a byte, the most significant in the first byte of the
/// big-endian bytes.
#[inline]
fn spread_nibbles(x: u32) -> u64 {
    let x = u64::from(x);
    let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f
}

/// Nibbles, one a byte, as lowercase hex digits, eight at a time: `'0'` added to each,
/// and `'a' - '0' - 10` more to those from 10 on (bit 4 of the nibble plus 6).
#[inline]
fn hex_ascii(n: u64) -> [u8; 8] {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let letters = ((n + 6 * ONES) >> 4) & ONES;
    (n + 0x30 * ONES + letters * 0x27).to_be_bytes()
}

/// `%llx`: the digits of all sixteen nibbles made at once, after a shift that puts the
/// first significant one first.
#[inline]
pub(crate) fn hex(out: &mut Line, v: u64) {
    let len = (67 - (v | 1).leading_zeros() as usize) / 4;
    let top = v << (64 - 4 * len);
    let hi = hex_ascii(spread_nibbles((top >> 32) as u32));
    let lo = hex_ascii(spread_nibbles(top as u32));
    let mut buf = [0u8; 16];
    let (a, b) = buf.split_at_mut(8);
    a.copy_from_slice(&hi);
    b.copy_from_slice(&lo);
    out.push_ascii_block(&buf, len);
}

/// `0x%llx`.
#[inline]
pub(crate) fn hex0x(out: &mut Line, v: u64) {
    out.push_str("0x");
    hex(out, v);
}

/// `%02x` of a byte.
#[inline]
pub(crate) fn hex2(out: &mut Line, b: u8, upper: bool) {
    let table: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    out.push(char::from(table[usize::from(b >> 4)]));
    out.push(char::from(table[usize::from(b & 15)]));
}

/// ` [%03u]`, the CPU column.
#[inline]
pub(crate) fn cpu_column(out: &mut Line, v: u32) {
    if v >= 1000 {
        out.push_str(" [");
        dec(out, u64::from(v));
        out.push(']');
        return;
    }
    let d = |x: u32| b'0' + (x % 10) as u8;
    out.push_ascii_array(&[b' ', b'[', d(v / 100), d(v / 10), d(v), b']']);
}

/// `%06u` of a number below a million (the microseconds of a timestamp).
#[inline]
pub(crate) fn dec6(out: &mut Line, v: u32) {
    if v >= 1_000_000 {
        return dec_width(out, u64::from(v), 6, true);
    }
    let (a, b, c) = (
        (v / 10000) as usize * 2,
        (v / 100 % 100) as usize * 2,
        (v % 100) as usize * 2,
    );
    out.push_ascii_array(&[
        PAIRS[a],
        PAIRS[a + 1],
        PAIRS[b],
        PAIRS[b + 1],
        PAIRS[c],
        PAIRS[c + 1],
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_core_fmt() {
        let vals = [
            0u64,
            1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1000,
            12345,
            123456,
            999_999,
            1_000_000,
            9_999_999,
            10_000_000,
            99_999_999,
            100_000_000,
            u32::MAX as u64,
            u64::MAX,
        ];
        for v in vals {
            let mut s = Line::default();
            dec(&mut s, v);
            hex(&mut s, v);
            hex0x(&mut s, v);
            dec_width(&mut s, v, 7, false);
            dec_width(&mut s, v, 7, true);
            signed(&mut s, v as i64);
            signed_width(&mut s, v as i64, 5);
            assert_eq!(
                s.to_string_lossy(),
                format!("{v}{v:x}0x{v:x}{v:7}{v:07}{}{:5}", v as i64, v as i64)
            );
        }
        let mut s = Line::default();
        pad(&mut s, 70, ' ');
        pad(&mut s, 3, '0');
        pad(&mut s, 2, 'x');
        hex2(&mut s, 0xa5, false);
        hex2(&mut s, 0x0f, true);
        assert_eq!(s.to_string_lossy(), format!("{:70}000xxa50F", ""));
        for v in [0u32, 7, 42, 999, 1000, 4096] {
            let mut s = Line::default();
            cpu_column(&mut s, v);
            dec6(&mut s, v * 233);
            assert_eq!(s.to_string_lossy(), format!(" [{v:03}]{:06}", v * 233));
        }
        for shift in 0..64 {
            let p = 1u64 << shift;
            for v in [p, p - 1, p | p >> 1, 0xdead_beef_u64.rotate_left(shift)] {
                let mut s = Line::default();
                dec(&mut s, v);
                s.push(' ');
                hex(&mut s, v);
                assert_eq!(s.to_string_lossy(), format!("{v} {v:x}"));
            }
        }
        for v in (0..100_000).chain((0..100_000_010).step_by(9_973)) {
            let mut s = Line::default();
            dec(&mut s, v);
            assert_eq!(s.to_string_lossy(), v.to_string());
        }
        let mut b = [0u8; 24];
        let i = digits(&mut b, 0o1777, 8, false);
        let mut s = Line::default();
        push_digits(&mut s, &b, i);
        assert_eq!(s.to_string_lossy(), "1777");
    }
}
