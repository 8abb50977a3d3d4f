//! `bprint` records: the `trace_printk` format comes from the file's printk formats and
//! the arguments are unpacked from the binary buffer the way libtraceevent does it.

use super::fmt_parse::Arg;
use crate::format::EventFormat;

/// The format libtraceevent prints a `bprint` record with: `%ps: ` (the caller) then the
/// `trace_printk` format, or a note that it is missing.
pub(crate) fn bprint_format(fmt_addr: u64, printk: Option<&str>) -> String {
    match printk {
        Some(f) => {
            let f = f.strip_suffix("\\n").unwrap_or(f);
            format!("%ps: {f}")
        }
        None => format!("%ps: (NO FORMAT FOUND at {fmt_addr:x})\n"),
    }
}

/// Unpacks the binary `trace_printk` arguments: the caller address first, then one
/// argument per conversion until the buffer runs out.
pub(crate) fn bprint_args(
    event: &EventFormat,
    data: &[u8],
    endian: crate::Endian,
    long_size: usize,
    fmt: &str,
) -> Vec<Arg> {
    let mut args = Vec::new();
    let Some(ip_field) = event.fields.iter().find(|f| f.name == "ip") else {
        return args;
    };
    let Some(buf_field) = event.fields.iter().find(|f| f.name == "buf") else {
        return args;
    };
    let ip = endian
        .read_uint(data, ip_field.offset, ip_field.size)
        .unwrap_or(0);
    args.push(Arg::Atom(ip.to_string()));
    let f = fmt.as_bytes();
    let mut p = 5.min(f.len());
    let mut at = buf_field.offset;
    let read = |at: usize, size: usize| endian.read_uint(data, at, size).unwrap_or(0);
    while at < data.len() && p < f.len() {
        if f[p] != b'%' {
            p += 1;
            continue;
        }
        let mut ls = 0usize;
        loop {
            p += 1;
            let Some(&c) = f.get(p) else { break };
            let mut number = false;
            let mut string = false;
            match c {
                b'l' => {
                    ls += 1;
                    continue;
                }
                b'L' => {
                    ls = 2;
                    continue;
                }
                b'0'..=b'9' | b'.' | b'#' | b'+' => continue,
                b'z' | b'Z' => {
                    ls = 1;
                    continue;
                }
                b'p' => {
                    ls = 1;
                    number = true;
                    if f.get(p + 1).is_some_and(|c| c.is_ascii_alphanumeric()) {
                        p += 1;
                        let special = match f[p] {
                            b's' | b'S' | b'x' => false,
                            b'f' | b'F' => f.get(p + 1) == Some(&b'w'),
                            _ => true,
                        };
                        if special && data.get(at).is_some_and(|b| (0x20..0x7f).contains(b)) {
                            number = false;
                            string = true;
                        }
                    }
                }
                b'd' | b'u' | b'i' | b'x' | b'X' | b'o' => number = true,
                b'*' => {
                    at = (at + 3) & !3;
                    args.push(Arg::Atom((read(at, 4) as i64).to_string()));
                    at += 4;
                    continue;
                }
                b's' => string = true,
                _ => {}
            }
            if number {
                let size = match ls {
                    0 => 4,
                    1 => long_size,
                    2 => 8,
                    n => n,
                };
                at = (at + 3) & !3;
                args.push(Arg::Atom((read(at, size) as i64).to_string()));
                at += size;
            } else if string {
                let rest = data.get(at..).unwrap_or_default();
                let n = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
                args.push(Arg::BStr(rest[..n].to_vec()));
                at += n + 1;
            }
            break;
        }
        p += 1;
    }
    args
}
