//! Parsing of an event's `print fmt:` text into a format string split into pieces and
//! an argument tree, following the grammar libtraceevent accepts (including its
//! associativity quirks, so values come out the same).

use super::cfmt::Spec;
use crate::format::{EventFormat, Field};

/// Token kinds of the print-fmt tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Item,
    DQuote,
    SQuote,
    Op,
    Delim,
}

/// One print argument.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    /// Empty left side of a unary operator.
    Null,
    /// A number, identifier or string literal, as written.
    Atom(String),
    /// `REC->name`; `None` when the event has no such field.
    Field(String, Option<Field>),
    /// `__print_flags(value, delim, { v, "s" }...)`.
    Flags {
        value: Box<Arg>,
        delim: Option<String>,
        list: Vec<(String, String)>,
    },
    /// `__print_symbolic(value, { v, "s" }...)`.
    Symbols {
        value: Box<Arg>,
        list: Vec<(String, String)>,
    },
    /// `__print_hex(field, len)` and `__print_hex_str` (`spaced` false).
    Hex {
        data: Box<Arg>,
        len: Box<Arg>,
        spaced: bool,
    },
    /// `__print_array(field, count, element size)`.
    IntArray {
        data: Box<Arg>,
        count: Box<Arg>,
        el_size: Box<Arg>,
    },
    /// `(type) item`.
    Cast(String, Box<Arg>),
    /// `__get_str(name)`.
    Str(Option<Field>),
    /// A string produced while printing (`bprint` arguments).
    BStr(Vec<u8>),
    /// `__get_bitmask(name)` (`cpus` false) or `__get_cpumask(name)`.
    Bitmask(Option<Field>, bool),
    /// `__get_dynamic_array(name)`.
    DynArray(Field),
    /// `__get_dynamic_array_len(name)`.
    DynArrayLen(Field),
    /// A binary or unary (`left` is `Null`) operator.
    Op(String, Box<Arg>, Box<Arg>),
    /// `cond ? a : b`.
    Cond(Box<Arg>, Box<Arg>, Box<Arg>),
    /// `base[index]`.
    Index(Box<Arg>, Box<Arg>),
    /// A helper function registered by a trace-cmd plugin.
    Func(String, Vec<Arg>),
}

/// How a conversion consumes its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConvKind {
    /// `d i u x X o c`, with the length modifier count (`h` -1, `l` +1, `ll` 2).
    Digit(i32),
    /// `%p` and its extensions (`%pS`, `%pM`...).
    Pointer,
    /// `%s`.
    Str,
}

/// A piece of a format string.
#[derive(Debug, Clone)]
// Pieces are built once per event format and kept; their size does not matter.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Piece {
    /// Literal text, escapes already processed.
    Text(String),
    /// A conversion with its argument and optional `*` argument.
    Conv {
        spec: String,
        parsed: Box<Spec>,
        kind: ConvKind,
        arg: Arg,
        star: Option<Arg>,
        /// For an integer conversion of a plain (possibly cast) field: how to print it
        /// without walking `arg`.
        fast: Option<FastInt>,
    },
}

/// An integer conversion whose argument is a field, possibly cast: its value is the
/// field's number (0 past the end of the record) masked by the casts.
#[derive(Debug, Clone)]
pub(crate) struct FastInt {
    pub offset: usize,
    pub size: usize,
    pub mask: u64,
    /// Width of the C type the value is passed as.
    pub bits: u32,
    /// The conversion (`u`, `x`, `d` or `i`) when it has no flags, width or precision,
    /// else 0: printed without looking at the spec (see [`super::cfmt::plain_int`]).
    pub plain: u8,
}

impl FastInt {
    /// The fast form of a conversion, when there is one.
    fn new(kind: ConvKind, spec: &Spec, arg: &Arg, star: Option<&Arg>) -> Option<FastInt> {
        let ConvKind::Digit(ls) = kind else {
            return None;
        };
        if star.is_some() {
            return None;
        }
        let bits = match ls {
            i32::MIN..=-2 => 8,
            -1 => 16,
            0 => 32,
            1 | 2 => 64,
            _ => return None,
        };
        let mut mask = u64::MAX;
        let mut a = arg;
        // libtraceevent's casts only mask, so a chain of them is one mask.
        while let Arg::Cast(ty, item) = a {
            mask &= super::cfmt::cast(u64::MAX, ty);
            a = item;
        }
        let Arg::Field(_, Some(f)) = a else {
            return None;
        };
        Some(FastInt {
            offset: f.offset,
            size: f.size,
            mask,
            bits,
            plain: super::cfmt::plain_conv(spec),
        })
    }
}

/// A parsed print format: the pieces to print, or the fact that libtraceevent would not
/// parse it (and prints `[FAILED TO PARSE]`).
#[derive(Debug, Clone)]
pub(crate) struct ParsedFmt {
    pub pieces: Vec<Piece>,
    pub failed: bool,
}

fn is_print(c: u8) -> bool {
    (0x20..0x7f).contains(&c)
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Splits print-fmt text into tokens. Spaces and newlines are dropped; an unprintable
/// byte ends the input.
fn tokenize(text: &str) -> Vec<(Tok, String)> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while let Some(&c) = b.get(i) {
        if is_space(c) {
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while b
                .get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                i += 1;
            }
            out.push((Tok::Item, text[start..i].to_string()));
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut s = Vec::new();
            let mut j = i + 1;
            let mut ok = false;
            loop {
                let mut last = 0u8;
                while let Some(&ch) = b.get(j) {
                    j += 1;
                    if ch == c && last != b'\\' {
                        ok = true;
                        break;
                    }
                    if !(is_print(ch) || ch == b'\n') {
                        break;
                    }
                    s.push(ch);
                    last = if ch == b'\\' && last == b'\\' { 0 } else { ch };
                }
                if !ok || c == b'\'' {
                    break;
                }
                // Adjacent string literals are concatenated.
                let mut k = j;
                while b.get(k).is_some_and(|x| is_space(*x)) {
                    k += 1;
                }
                if b.get(k) == Some(&b'"') {
                    j = k + 1;
                    ok = false;
                    continue;
                }
                break;
            }
            if !ok {
                return out;
            }
            i = j;
            let kind = if c == b'"' { Tok::DQuote } else { Tok::SQuote };
            out.push((kind, String::from_utf8_lossy(&s).into_owned()));
            continue;
        }
        if !is_print(c) {
            return out;
        }
        if matches!(c, b'(' | b')' | b',') {
            out.push((Tok::Delim, char::from(c).to_string()));
            i += 1;
            continue;
        }
        let next = b.get(i + 1).copied();
        let mut tok = vec![c];
        i += 1;
        let mut test_equal = false;
        match c {
            b'-' if next == Some(b'>') => {
                tok.push(b'>');
                i += 1;
            }
            b'-' | b'+' | b'|' | b'&' | b'>' | b'<' => {
                if next == Some(c) {
                    tok.push(c);
                    i += 1;
                    test_equal = matches!(c, b'>' | b'<');
                } else {
                    test_equal = true;
                }
            }
            b'!' | b'=' => test_equal = true,
            _ => {}
        }
        if test_equal && b.get(i) == Some(&b'=') {
            tok.push(b'=');
            i += 1;
        }
        out.push((Tok::Op, String::from_utf8_lossy(&tok).into_owned()));
    }
    out
}

/// libtraceevent's operator priorities (lower binds tighter); `None` for unknown ops.
fn op_prio(op: &str) -> Option<u32> {
    Some(match op {
        "~" | "!" => 4,
        "*" | "/" | "%" => 6,
        "+" | "-" => 7,
        "<<" | ">>" => 8,
        "<" | ">" | "<=" | ">=" => 9,
        "==" | "!=" => 10,
        "&" => 11,
        "^" => 12,
        "|" => 13,
        "&&" => 14,
        "||" => 15,
        "?" => 16,
        _ => return None,
    })
}

struct Parser<'a> {
    toks: Vec<(Tok, String)>,
    pos: usize,
    event: &'a EventFormat,
    long_size: usize,
}

type PResult<T> = Result<T, ()>;

impl Parser<'_> {
    fn peek(&self) -> Option<(Tok, &str)> {
        self.toks.get(self.pos).map(|(t, s)| (*t, s.as_str()))
    }

    fn next(&mut self) -> Option<(Tok, String)> {
        let t = self.toks.get(self.pos).cloned();
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    fn expect(&mut self, kind: Tok, text: &str) -> PResult<()> {
        match self.next() {
            Some((k, s)) if k == kind && s == text => Ok(()),
            _ => Err(()),
        }
    }

    fn expect_item(&mut self) -> PResult<String> {
        match self.next() {
            Some((Tok::Item, s)) => Ok(s),
            _ => Err(()),
        }
    }

    fn any_field(&self, name: &str) -> Option<Field> {
        let e = self.event;
        e.common_fields
            .iter()
            .chain(e.fields.iter())
            .find(|f| f.name == name)
            .cloned()
    }

    fn own_field(&self, name: &str) -> Option<Field> {
        self.event.fields.iter().find(|f| f.name == name).cloned()
    }

    fn expr(&mut self, min_bind: u32) -> PResult<Arg> {
        let left = self.unary()?;
        self.expr_rest(left, min_bind)
    }

    /// The binding strength of the operator at the cursor, if it continues an expression.
    fn peek_bind(&self) -> PResult<Option<(String, u32)>> {
        let Some((Tok::Op, op)) = self.peek() else {
            return Ok(None);
        };
        if matches!(op, ":" | "]" | "}" | "{") {
            return Ok(None);
        }
        let prio = op_prio(op).ok_or(())?;
        Ok(Some((op.to_string(), 20 - prio)))
    }

    fn expr_rest(&mut self, mut left: Arg, min_bind: u32) -> PResult<Arg> {
        while let Some((op, bind)) = self.peek_bind()? {
            if bind < min_bind {
                break;
            }
            self.pos += 1;
            if op == "?" {
                let then = self.expr(0)?;
                self.expect(Tok::Op, ":")?;
                let other = self.unary()?;
                left = Arg::Cond(Box::new(left), Box::new(then), Box::new(other));
                continue;
            }
            if op == "*" && matches!(self.peek(), Some((Tok::Delim, ")"))) {
                // `(char *)`: a pointer type, not a multiplication.
                match &mut left {
                    Arg::Atom(a) => {
                        a.push_str(" *");
                        continue;
                    }
                    _ => return Err(()),
                }
            }
            let first = self.unary()?;
            let continues = matches!(self.peek_bind()?, Some((_, b)) if b >= bind);
            if continues {
                // Equal priorities nest to the right, as libtraceevent builds them.
                let right = self.expr_rest(first, bind)?;
                left = Arg::Op(op, Box::new(left), Box::new(right));
            } else {
                left = combine(op, left, first);
            }
        }
        Ok(left)
    }

    fn unary(&mut self) -> PResult<Arg> {
        if let Some((Tok::Op, op)) = self.peek() {
            if matches!(op, "~" | "!" | "+" | "-") {
                let op = op.to_string();
                self.pos += 1;
                let right = self.unary()?;
                return Ok(Arg::Op(op, Box::new(Arg::Null), Box::new(right)));
            }
            return Err(());
        }
        let mut arg = self.primary()?;
        while matches!(self.peek(), Some((Tok::Op, "["))) {
            self.pos += 1;
            let idx = self.unary()?;
            self.expect(Tok::Op, "]")?;
            arg = Arg::Index(Box::new(arg), Box::new(idx));
        }
        Ok(arg)
    }

    fn primary(&mut self) -> PResult<Arg> {
        let (kind, tok) = self.next().ok_or(())?;
        match kind {
            Tok::Item if tok == "REC" => {
                self.expect(Tok::Op, "->")?;
                let name = self.expect_item()?;
                let field = self.any_field(&name);
                Ok(Arg::Field(name, field))
            }
            Tok::Item => {
                if matches!(self.peek(), Some((Tok::Delim, "("))) {
                    self.pos += 1;
                    return self.function(&tok);
                }
                let mut atom = tok;
                while let Some((Tok::Item, more)) = self.peek() {
                    atom.push(' ');
                    atom.push_str(more);
                    self.pos += 1;
                }
                Ok(Arg::Atom(atom))
            }
            Tok::DQuote => Ok(Arg::Atom(tok)),
            Tok::SQuote => Ok(Arg::Atom(
                tok.bytes()
                    .next()
                    .map(|b| i64::from(b as i8))
                    .unwrap_or(0)
                    .to_string(),
            )),
            Tok::Delim if tok == "(" => {
                let inner = self.expr(0)?;
                self.expect(Tok::Delim, ")")?;
                let cast = matches!(
                    self.peek(),
                    Some((Tok::Item | Tok::DQuote | Tok::SQuote, _)) | Some((Tok::Delim, "("))
                );
                if cast {
                    let Arg::Atom(ty) = inner else { return Err(()) };
                    let item = self.unary_no_op()?;
                    return Ok(Arg::Cast(ty, Box::new(item)));
                }
                Ok(inner)
            }
            _ => Err(()),
        }
    }

    /// The operand of a cast: a primary with its indexes.
    fn unary_no_op(&mut self) -> PResult<Arg> {
        let mut arg = self.primary()?;
        while matches!(self.peek(), Some((Tok::Op, "["))) {
            self.pos += 1;
            let idx = self.unary()?;
            self.expect(Tok::Op, "]")?;
            arg = Arg::Index(Box::new(arg), Box::new(idx));
        }
        Ok(arg)
    }

    fn delimited(&mut self, delim: &str) -> PResult<Arg> {
        let a = self.expr(0)?;
        self.expect(Tok::Delim, delim)?;
        Ok(a)
    }

    fn function(&mut self, name: &str) -> PResult<Arg> {
        match name {
            "__print_flags" | "__print_symbolic" => {
                let value = Box::new(self.delimited(",")?);
                let mut delim = None;
                if name == "__print_flags" {
                    if let Some((Tok::Item | Tok::DQuote | Tok::SQuote, d)) = self.peek() {
                        delim = Some(d.to_string());
                        self.pos += 1;
                    }
                    self.expect(Tok::Delim, ",")?;
                }
                let list = self.flag_list()?;
                self.expect(Tok::Delim, ")")?;
                Ok(if name == "__print_flags" {
                    Arg::Flags { value, delim, list }
                } else {
                    Arg::Symbols { value, list }
                })
            }
            "__print_hex" | "__print_hex_str" => {
                let data = Box::new(self.delimited(",")?);
                let len = Box::new(self.delimited(")")?);
                Ok(Arg::Hex {
                    data,
                    len,
                    spaced: name == "__print_hex",
                })
            }
            "__print_array" => {
                let data = Box::new(self.delimited(",")?);
                let count = Box::new(self.delimited(",")?);
                let el_size = Box::new(self.delimited(")")?);
                Ok(Arg::IntArray {
                    data,
                    count,
                    el_size,
                })
            }
            "__get_str" | "__get_rel_str" => {
                let f = self.expect_item()?;
                self.expect(Tok::Delim, ")")?;
                Ok(Arg::Str(self.any_field(&f)))
            }
            "__get_bitmask" | "__get_rel_bitmask" | "__get_cpumask" | "__get_rel_cpumask" => {
                let f = self.expect_item()?;
                self.expect(Tok::Delim, ")")?;
                Ok(Arg::Bitmask(self.any_field(&f), name.contains("cpumask")))
            }
            "__get_dynamic_array"
            | "__get_rel_dynamic_array"
            | "__get_sockaddr"
            | "__get_sockaddr_rel" => {
                let f = self.expect_item()?;
                let field = self.own_field(&f).ok_or(())?;
                self.expect(Tok::Delim, ")")?;
                // libtraceevent rejects an index after the array.
                if matches!(self.peek(), Some((Tok::Op, "["))) {
                    return Err(());
                }
                Ok(Arg::DynArray(field))
            }
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                let f = self.expect_item()?;
                let field = self.own_field(&f).ok_or(())?;
                self.expect(Tok::Delim, ")")?;
                Ok(Arg::DynArrayLen(field))
            }
            "__builtin_expect" => {
                let a = self.delimited(",")?;
                self.expect_item()?;
                self.expect(Tok::Delim, ")")?;
                Ok(a)
            }
            "sizeof" => self.sizeof(),
            "is_writable_pte" => {
                let a = self.delimited(")")?;
                Ok(Arg::Func(name.to_string(), vec![a]))
            }
            _ => Err(()),
        }
    }

    fn sizeof(&mut self) -> PResult<Arg> {
        let mut tok = self.expect_item()?;
        let mut consumed_close = false;
        if tok == "unsigned" {
            match self.peek() {
                Some((Tok::Item, t)) => {
                    tok = t.to_string();
                    self.pos += 1;
                }
                _ => tok = "int".into(),
            }
        }
        let size = match tok.as_str() {
            "int" => 4,
            "long" => {
                if matches!(self.peek(), Some((Tok::Item, "long"))) {
                    self.pos += 1;
                    8
                } else {
                    self.long_size
                }
            }
            "__u64" | "u64" | "__s64" | "s64" => 8,
            "__u32" | "u32" | "__s32" | "s32" => 4,
            "__u16" | "u16" | "__s16" | "s16" => 2,
            "__u8" | "u8" | "__8" | "s8" => 1,
            "REC" => {
                self.expect(Tok::Op, "->")?;
                let name = self.expect_item()?;
                let f = self.any_field(&name).ok_or(())?;
                if f.flags.array {
                    return Err(());
                }
                f.size
            }
            _ => return Err(()),
        };
        if !consumed_close {
            self.expect(Tok::Delim, ")")?;
            consumed_close = true;
        }
        let _ = consumed_close;
        Ok(Arg::Atom(size.to_string()))
    }

    fn flag_list(&mut self) -> PResult<Vec<(String, String)>> {
        let mut list = Vec::new();
        loop {
            self.expect(Tok::Op, "{")?;
            let v = self.expr(0)?;
            self.expect(Tok::Delim, ",")?;
            let value = const_text(&v).ok_or(())?;
            let s = self.unary()?;
            self.expect(Tok::Op, "}")?;
            let text = const_text(&s).ok_or(())?;
            list.push((value, text));
            if matches!(self.peek(), Some((Tok::Delim, ","))) {
                self.pos += 1;
                continue;
            }
            break;
        }
        Ok(list)
    }
}

/// Builds `left op right` where `right` is a single operand. libtraceevent rotates the
/// tree when that operand is a parenthesised (or unary) expression whose operator has a
/// lower priority than `op`: `a & (b | c)` becomes `(a & b) | c`. Output depends on it.
fn combine(op: String, left: Arg, right: Arg) -> Arg {
    let Some(p) = op_prio(&op) else {
        return Arg::Op(op, Box::new(left), Box::new(right));
    };
    match right {
        Arg::Op(rop, rl, rr) if op_prio(&rop).is_some_and(|rp| p < rp) => {
            Arg::Op(rop, Box::new(Arg::Op(op, Box::new(left), rl)), rr)
        }
        Arg::Cond(c, a, b) if p < 16 => Arg::Cond(Box::new(Arg::Op(op, Box::new(left), c)), a, b),
        right => Arg::Op(op, Box::new(left), Box::new(right)),
    }
}

/// The text libtraceevent stores for a flag or symbol table entry.
fn const_text(arg: &Arg) -> Option<String> {
    match arg {
        Arg::Atom(a) => Some(a.clone()),
        Arg::Cast(_, item) => const_text(item),
        Arg::Op(..) => const_num(arg).map(|v| v.to_string()),
        _ => None,
    }
}

/// Constant evaluation of table values (only the operators libtraceevent folds there).
fn const_num(arg: &Arg) -> Option<i64> {
    match arg {
        Arg::Atom(a) => Some(strtoll(a)),
        Arg::Cast(ty, item) => Some(super::cfmt::cast(const_num(item)? as u64, ty) as i64),
        Arg::Op(op, l, r) => {
            let num = |a: &Arg| -> Option<i64> {
                if matches!(a, Arg::Null) {
                    Some(0)
                } else {
                    const_num(a)
                }
            };
            let (a, b) = (num(l)?, num(r)?);
            Some(match op.as_str() {
                "|" => a | b,
                "||" => i64::from(a != 0 || b != 0),
                "&" => a & b,
                "&&" => i64::from(a != 0 && b != 0),
                "<" => i64::from(a < b),
                "<<" => a.wrapping_shl(b as u32),
                "<=" => i64::from(a <= b),
                ">" => i64::from(a > b),
                ">>" => a.wrapping_shr(b as u32),
                ">=" => i64::from(a >= b),
                "==" => i64::from(a == b),
                "!=" => i64::from(a != b),
                "-" => a.wrapping_sub(b),
                "+" => a.wrapping_add(b),
                "~" => !b,
                _ => return None,
            })
        }
        _ => None,
    }
}

/// C `strtoull(s, NULL, 0)`: the longest numeric prefix, 0 when there is none.
pub(crate) fn strtoull(s: &str) -> u64 {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, body) = if let Some(rest) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        if rest.bytes().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            (16, rest)
        } else {
            (10, "0")
        }
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    let mut v: u64 = 0;
    for c in body.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        v = v.wrapping_mul(u64::from(radix)).wrapping_add(u64::from(d));
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// C `strtoll(s, NULL, 0)` for the values that appear in formats.
pub(crate) fn strtoll(s: &str) -> i64 {
    strtoull(s) as i64
}

/// Parses an event's print fmt.
pub(crate) fn parse_event(event: &EventFormat, long_size: usize) -> ParsedFmt {
    let toks = tokenize(&event.print_fmt);
    let failed = ParsedFmt {
        pieces: Vec::new(),
        failed: true,
    };
    let mut p = Parser {
        toks,
        pos: 0,
        event,
        long_size,
    };
    let fmt = match p.next() {
        Some((Tok::DQuote, s)) => s,
        _ => return failed,
    };
    let mut args = Vec::new();
    let mut more = true;
    match p.next() {
        None => more = false,
        Some((Tok::Delim, d)) if d == "," => {}
        _ => return failed,
    }
    while more {
        let Ok(arg) = p.expr(0) else { return failed };
        args.push(arg);
        match p.next() {
            Some((Tok::Delim, d)) if d == "," => {}
            _ => more = false,
        }
    }
    if args.is_empty() && event.system == "ftrace" {
        // Old ftrace events list their fields instead of arguments.
        args = event
            .fields
            .iter()
            .map(|f| Arg::Field(f.name.clone(), Some(f.clone())))
            .collect();
    }
    split_format(&fmt, args)
}

/// Splits a format string into text and conversions, pairing each conversion with its
/// argument(s). Running out of arguments marks the format failed.
pub(crate) fn split_format(fmt: &str, args: Vec<Arg>) -> ParsedFmt {
    let b = fmt.as_bytes();
    let mut args = args.into_iter();
    let mut pieces = Vec::new();
    let mut failed = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && b.get(i + 1) != Some(&b'%') {
            let start = i;
            i += 1;
            let mut ls: i32 = 0;
            let mut star = None;
            let mut done = false;
            while let Some(&c) = b.get(i) {
                match c {
                    b'#' | b'.' | b'0'..=b'9' | b'-' | b'+' => {}
                    b'h' => ls -= 1,
                    b'l' => ls += 1,
                    b'L' => ls = 2,
                    b'z' | b'Z' => ls = 1,
                    b'*' => match args.next() {
                        Some(a) if star.is_none() => star = Some(a),
                        _ => {
                            failed = true;
                            break;
                        }
                    },
                    b'p' => {
                        let Some(arg) = args.next() else {
                            failed = true;
                            break;
                        };
                        let ext = pointer_ext_len(&b[i + 1..]);
                        i += ext;
                        let spec = fmt.get(start..=i).unwrap_or("%p").to_string();
                        let parsed = Box::new(Spec::parse(&spec));
                        pieces.push(Piece::Conv {
                            spec,
                            parsed,
                            kind: ConvKind::Pointer,
                            arg,
                            star: star.take(),
                            fast: None,
                        });
                        done = true;
                    }
                    b'c' | b'd' | b'u' | b'i' | b'x' | b'X' | b'o' | b's' => {
                        let Some(arg) = args.next() else {
                            failed = true;
                            break;
                        };
                        let spec = fmt.get(start..=i).unwrap_or("%d").to_string();
                        let kind = if c == b's' {
                            ConvKind::Str
                        } else {
                            ConvKind::Digit(ls)
                        };
                        let parsed = Box::new(Spec::parse(&spec));
                        let star = star.take();
                        let fast = FastInt::new(kind, &parsed, &arg, star.as_ref());
                        pieces.push(Piece::Conv {
                            spec,
                            parsed,
                            kind,
                            arg,
                            star,
                            fast,
                        });
                        done = true;
                    }
                    other => {
                        pieces.push(Piece::Text(format!(">{}<", char::from(other))));
                        done = true;
                    }
                }
                if done {
                    break;
                }
                i += 1;
            }
            if !done {
                // Out of arguments: libtraceevent prints the rest as text, starting
                // at the conversion character.
                continue;
            }
            i += 1;
            continue;
        }
        let mut text = Vec::new();
        while i < b.len() {
            match b[i] {
                b'\\' => {
                    i += 1;
                    match b.get(i) {
                        Some(b'n') => text.push(b'\n'),
                        Some(b't') => text.push(b'\t'),
                        Some(b'r') => text.push(b'\r'),
                        Some(&c) => text.push(c),
                        None => {}
                    }
                }
                b'%' if b.get(i + 1) == Some(&b'%') => {
                    text.push(b'%');
                    i += 1;
                }
                b'%' => break,
                c => text.push(c),
            }
            i += 1;
        }
        pieces.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
    }
    ParsedFmt { pieces, failed }
}

/// How many characters after `%p` belong to the pointer extension (`S`, `M`, `I4`...).
fn pointer_ext_len(b: &[u8]) -> usize {
    let at = |i: usize| b.get(i).copied().unwrap_or(0);
    match at(0) {
        b'F' | b'S' | b'f' | b's' => 1,
        b'M' | b'm' => 1 + usize::from(matches!(at(1), b'R' | b'F')),
        b'I' | b'i' => {
            let mut ret = 1;
            let mut index = 2;
            let kind = at(1);
            if kind == b'S' {
                while matches!(at(index), b'p' | b'f' | b's') {
                    ret += 1;
                    index += 1;
                }
            }
            if kind == b'S' || kind == b'4' {
                if matches!(at(index), b'h' | b'n' | b'l' | b'b') {
                    ret += 1;
                    index += 1;
                }
                if kind == b'4' {
                    return ret + 1;
                }
            }
            if kind == b'S' || kind == b'6' {
                if at(index) == b'c' {
                    ret += 1;
                }
                ret += 1;
            }
            ret
        }
        b'U' => 1 + usize::from(matches!(at(1), b'L' | b'l' | b'B' | b'b')),
        b'h' => 1 + usize::from(matches!(at(1), b'C' | b'D' | b'N')),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(print_fmt: &str) -> EventFormat {
        let text = format!(
            "name: e\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n\nprint fmt: {print_fmt}\n"
        );
        EventFormat::parse("s", &text).expect("test format parses")
    }

    #[test]
    fn splits_text_and_conversions() {
        let p = parse_event(&event("\"a=%d comm=%s 100%% x\\n\", REC->a, REC->comm"), 8);
        assert!(!p.failed);
        assert_eq!(p.pieces.len(), 5);
        assert!(matches!(&p.pieces[4], Piece::Text(t) if t == " 100% x\n"));
    }

    #[test]
    fn same_priority_operators_nest_right_like_libtraceevent() {
        let p = parse_event(&event("\"%d\", REC->a - 1 - 2"), 8);
        let Piece::Conv {
            arg: Arg::Op(op, _, r),
            ..
        } = &p.pieces[0]
        else {
            panic!("conv")
        };
        assert_eq!(op, "-");
        assert!(matches!(&**r, Arg::Op(o, _, _) if o == "-"));
    }

    #[test]
    fn parenthesised_lower_priority_operand_rotates() {
        let p = parse_event(&event("\"%d\", REC->a & (1 | 2)"), 8);
        let Piece::Conv {
            arg: Arg::Op(op, l, _),
            ..
        } = &p.pieces[0]
        else {
            panic!("conv")
        };
        assert_eq!(op, "|");
        assert!(matches!(&**l, Arg::Op(o, _, _) if o == "&"));
    }

    #[test]
    fn flags_casts_and_failures() {
        let p = parse_event(
            &event("\"%s %lu\", __print_flags(REC->a, \"|\", { 1, \"A\" }, { (1 << 2), \"B\" }), (unsigned long)REC->a"),
            8,
        );
        assert!(!p.failed);
        let Piece::Conv {
            arg: Arg::Flags { list, delim, .. },
            ..
        } = &p.pieces[0]
        else {
            panic!("flags")
        };
        assert_eq!(delim.as_deref(), Some("|"));
        assert_eq!(list[1], ("4".to_string(), "B".to_string()));
        assert!(parse_event(&event("\"%d\", unknown_helper(REC->a)"), 8).failed);
        assert!(parse_event(&event("\"%d %d\", REC->a"), 8).failed);
        assert!(parse_event(&event("garbage"), 8).failed);
    }
}
