//! Parsing of ftrace event `format` descriptions (`events/<system>/<event>/format`)
//! and of `header_page`.
//!
//! Layouts always come from the trace's own formats, so any kernel version, byte
//! order and long size decodes.

use crate::{Error, Result};

/// How a field's bytes are to be read. Mirrors the distinctions libtraceevent makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldFlags {
    /// Declared as a signed type (`signed:1`, or a signed C type on old kernels).
    pub signed: bool,
    /// A fixed array (`char comm[16]`).
    pub array: bool,
    /// `__data_loc`/`__rel_loc`: the field holds offset and length of data stored after the
    /// fixed fields.
    pub dynamic: bool,
    /// `__rel_loc`: the offset is relative to the end of this field.
    pub relative: bool,
    /// An array of `char`, `u8` or `s8`.
    pub string: bool,
    /// A pointer type.
    pub pointer: bool,
    /// A `long` type (the C type name contains `long`).
    pub long: bool,
}

/// One field of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`prev_comm`).
    pub name: String,
    /// C type as written, without the name and array suffix (`char`, `__data_loc char[]`).
    pub type_name: String,
    /// Byte offset in the event record.
    pub offset: usize,
    /// Byte size in the record (for dynamic fields, the size of the offset/length word).
    pub size: usize,
    /// Number of elements for fixed arrays, 0 otherwise.
    pub array_len: usize,
    /// Flags.
    pub flags: FieldFlags,
}

impl Field {
    /// Element size of an array field.
    pub fn element_size(&self) -> usize {
        self.size.checked_div(self.array_len).unwrap_or(self.size)
    }
}

/// The layout and print format of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// Numeric id, as stored in each record's `common_type`.
    pub id: u32,
    /// Subsystem (`sched`); `ftrace` for the ftrace internal events.
    pub system: String,
    /// Event name (`sched_switch`).
    pub name: String,
    /// The `common_*` fields.
    pub common_fields: Vec<Field>,
    /// The event's own fields.
    pub fields: Vec<Field>,
    /// The `print fmt:` text as written (format string and arguments).
    pub print_fmt: String,
}

impl EventFormat {
    /// A field by name, own fields first, then common fields.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .chain(self.common_fields.iter())
            .find(|f| f.name == name)
    }

    /// Parses one event format file. `system` is the directory it came from.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat> {
        let mut common_fields = Vec::new();
        let mut fields = Vec::new();
        let head = scan(
            system,
            text,
            Some(|field: FieldRef<'_>, common| {
                let field = field.to_field();
                if common {
                    common_fields.push(field);
                } else {
                    fields.push(field);
                }
            }),
        )?;
        Ok(EventFormat {
            id: head.id,
            system: system.to_string(),
            name: head.name.to_string(),
            common_fields,
            fields,
            print_fmt: head.print_fmt(),
        })
    }

    /// The id and name of the format in `text`, read as [`EventFormat::parse`] reads it
    /// but without building the fields: `parse` fails exactly when this does, with the
    /// same error. A trace holds a few thousand formats and uses a dozen, so the others
    /// are only checked.
    pub(crate) fn check<'t>(system: &str, text: &'t str) -> Result<(u32, &'t str)> {
        let head = scan(system, text, None::<fn(FieldRef<'t>, bool)>)?;
        Ok((head.id, head.name))
    }
}

/// What a format text says besides its fields.
struct Head<'t> {
    id: u32,
    name: &'t str,
    /// The `print fmt:` line after its label, and the text after that line.
    print_fmt_lines: Option<(&'t str, &'t str)>,
}

impl Head<'_> {
    /// The print fmt as written: it may continue over several lines on some kernels.
    fn print_fmt(self) -> String {
        let Some((first, more)) = self.print_fmt_lines else {
            return String::new();
        };
        let mut fmt = first.trim_ascii_start().to_string();
        for line in (Lines { rest: more }) {
            fmt.push('\n');
            fmt.push_str(line);
        }
        fmt.truncate(fmt.trim_ascii_end().len());
        fmt
    }
}

/// Reads the lines of an event format text, handing each field to `on_field` with whether
/// it is one of the `common_*` fields. Without `on_field` the fields are only checked, and
/// a line of the kernel's usual shape is checked without being taken apart
/// ([`usual_field_line_parses`]).
fn scan<'t>(
    system: &str,
    text: &'t str,
    mut on_field: Option<impl FnMut(FieldRef<'t>, bool)>,
) -> Result<Head<'t>> {
    let mut name = None;
    let mut id = None;
    let mut print_fmt_lines = None;
    // The `common_*` fields come first, ended by a blank line or by any other field.
    let mut in_common = true;
    let mut any_common = false;
    let err = |line: usize, what: String, name: Option<&str>| Error::Format {
        name: name.map_or_else(|| format!("{system}/?"), str::to_string),
        line,
        what,
    };
    let mut lines = Lines { rest: text };
    let mut lineno = 0;
    while let Some(line) = lines.next() {
        lineno += 1;
        let trimmed = line.trim_ascii();
        if let Some(rest) = trimmed.strip_prefix("name:") {
            name = Some(rest.trim_ascii());
        } else if let Some(rest) = trimmed.strip_prefix("ID:") {
            id = Some(
                rest.trim_ascii()
                    .parse::<u32>()
                    .map_err(|_| err(lineno, format!("bad ID {:?}", rest.trim_ascii()), name))?,
            );
        } else if trimmed.starts_with("field") {
            if on_field.is_none() && usual_field_line_parses(trimmed) {
                continue;
            }
            let field = parse_field_line(trimmed).map_err(|what| err(lineno, what, name))?;
            let common = in_common && field.name.starts_with("common_");
            in_common = common;
            any_common |= common;
            if let Some(on_field) = on_field.as_mut() {
                on_field(field, common);
            }
        } else if trimmed.is_empty() {
            if any_common {
                in_common = false;
            }
        } else if let Some(rest) = trimmed.strip_prefix("print fmt:") {
            // Every line after this one belongs to the print fmt.
            print_fmt_lines = Some((rest, lines.rest));
            break;
        }
    }
    let name = name.ok_or_else(|| err(1, "no `name:` line".into(), None))?;
    let id = id.ok_or_else(|| err(1, "no `ID:` line".into(), Some(name)))?;
    Ok(Head {
        id,
        name,
        print_fmt_lines,
    })
}

/// The lines of a text, split as `str::lines` splits them (at `\n`, and a `\r` before it
/// dropped), found with memchr: a trace's formats have tens of thousands of lines, and
/// `str::lines` costs about 2.5 times as many instructions per line.
struct Lines<'t> {
    rest: &'t str,
}

impl<'t> Iterator for Lines<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        if self.rest.is_empty() {
            return None;
        }
        let Some(end) = memchr::memchr(b'\n', self.rest.as_bytes()) else {
            return Some(std::mem::take(&mut self.rest));
        };
        // `\n` is ASCII, so the bytes either side of it are char boundaries.
        let line = self.rest.get(..end)?;
        self.rest = self.rest.get(end + 1..)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// The `;`-separated parts of a field line, as `line.split(';')` gives them, found with
/// memchr: `split(';')` costs twice as many instructions per line.
fn parts(line: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(line);
    std::iter::from_fn(move || {
        let r = rest?;
        let Some(end) = memchr::memchr(b';', r.as_bytes()) else {
            rest = None;
            return Some(r);
        };
        // `;` is ASCII, so the bytes either side of it are char boundaries.
        rest = r.get(end + 1..);
        r.get(..end)
    })
}

/// A field line read but not yet copied out of the text.
struct FieldRef<'t> {
    name: &'t str,
    type_name: &'t str,
    offset: usize,
    size: usize,
    array_len: usize,
    /// A fixed array, or brackets in the type.
    array: bool,
    /// `signed:`, which old kernels do not write.
    signed: Option<bool>,
}

impl FieldRef<'_> {
    /// The field, copied out, with its flags worked out from its type.
    fn to_field(&self) -> Field {
        let type_name = self.type_name;
        let mut flags = FieldFlags::default();
        let dynamic_rel = type_name.starts_with("__rel_loc");
        flags.dynamic = type_name.starts_with("__data_loc") || dynamic_rel;
        flags.relative = dynamic_rel;
        flags.array = self.array || flags.dynamic;
        flags.pointer = type_name.contains('*');
        flags.long = type_name.contains("long");
        flags.string = flags.array
            && (type_name.contains("char") || type_name.contains("u8") || type_name.contains("s8"));
        flags.signed = match self.signed {
            Some(s) => s,
            None => type_is_signed(type_name),
        };
        Field {
            name: self.name.to_string(),
            type_name: type_name.to_string(),
            offset: self.offset,
            size: self.size,
            array_len: if flags.dynamic { 0 } else { self.array_len },
            flags,
        }
    }
}

/// Whether `line` has the shape the kernel writes, `field:DECL;\toffset:N;\tsize:N;` and
/// an optional `\tsigned:0;` or `\tsigned:1;`, with numbers of at most six digits and a
/// declaration that splits: then [`parse_field_line`] reads it without error. Found
/// without splitting the line into parts, which is most of what checking a trace's tens
/// of thousands of field lines costs. `false` for any other line, which
/// [`parse_field_line`] then reads.
fn usual_field_line_parses(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("field:") else {
        return false;
    };
    let Some(semi) = memchr::memchr(b';', rest.as_bytes()) else {
        return false;
    };
    // `;` is ASCII, so the bytes either side of it are char boundaries.
    let (Some(decl), Some(tail)) = (rest.get(..semi), rest.as_bytes().get(semi..)) else {
        return false;
    };
    // One to six digits (so below the plausibility limit) and what follows them.
    fn number(t: &[u8]) -> Option<&[u8]> {
        let n = t.iter().take(7).take_while(|b| b.is_ascii_digit()).count();
        if (1..=6).contains(&n) {
            t.get(n..)
        } else {
            None
        }
    }
    let Some(tail) = tail.strip_prefix(b";\toffset:").and_then(number) else {
        return false;
    };
    let Some(tail) = tail.strip_prefix(b";\tsize:").and_then(number) else {
        return false;
    };
    let shape_ok = matches!(tail, b";" | b";\tsigned:0;" | b";\tsigned:1;");
    shape_ok && split_declaration(decl).is_ok()
}

/// Parses `field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:X;`.
fn parse_field_line(line: &str) -> std::result::Result<FieldRef<'_>, String> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = None;
    for part in parts(line) {
        let part = part.trim_ascii();
        if part.is_empty() {
            continue;
        }
        if let Some(rest) = part
            .strip_prefix("field special:")
            .or_else(|| part.strip_prefix("field:"))
        {
            decl = Some(rest.trim_ascii());
        } else if let Some(rest) = part.strip_prefix("offset:") {
            offset = Some(
                rest.trim_ascii()
                    .parse::<usize>()
                    .map_err(|_| format!("bad offset in {part:?}"))?,
            );
        } else if let Some(rest) = part.strip_prefix("size:") {
            size = Some(
                rest.trim_ascii()
                    .parse::<usize>()
                    .map_err(|_| format!("bad size in {part:?}"))?,
            );
        } else if let Some(rest) = part.strip_prefix("signed:") {
            signed = Some(rest.trim_ascii() == "1");
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    let offset = offset.ok_or("no offset")?;
    let size = size.ok_or("no size")?;
    if offset > u16::MAX as usize * 16 || size > u16::MAX as usize * 16 {
        return Err(format!("implausible offset {offset} or size {size}"));
    }
    let (type_name, name, array_len, array) = split_declaration(decl)?;
    Ok(FieldRef {
        name,
        type_name,
        offset,
        size,
        array_len,
        array,
        signed,
    })
}

/// Splits `unsigned char prev_comm[16]` into (`unsigned char`, `prev_comm`, 16, true).
///
/// Works on bytes and splits only at ASCII whitespace or `*`, as libtraceevent's
/// tokenizer does: the text comes from the file, and a multibyte character (a UTF-8
/// non-breaking space, say) is part of a word, never a separator to slice beside.
fn split_declaration(decl: &str) -> std::result::Result<(&str, &str, usize, bool), String> {
    let decl = decl.trim_ascii();
    // The `[` is looked for only in a declaration that ends in `]`: most do not, and the
    // search is a good part of the cost of checking a trace's thousands of field lines.
    let array = decl
        .strip_suffix(']')
        .and_then(|inner| Some((inner.find('[')?, inner)));
    let (base, array_len, is_array) = match array {
        Some((open, inner)) => {
            let len = inner
                .get(open + 1..)
                .and_then(|t| t.trim_ascii().parse::<usize>().ok())
                .unwrap_or(0);
            (decl.get(..open).unwrap_or(decl), len, true)
        }
        // `__data_loc char[] name`: brackets not at the end belong to the type.
        None => (decl, 0, false),
    };
    let base = base.trim_ascii_end();
    let split = base
        .bytes()
        .rposition(|c| c.is_ascii_whitespace() || c == b'*')
        .ok_or_else(|| format!("cannot split type and name in {decl:?}"))?;
    // `split` is the index of an ASCII byte, so both sides are char boundaries.
    let (type_part, name_part) = (base.get(..=split), base.get(split + 1..));
    let (Some(type_part), Some(name_part)) = (type_part, name_part) else {
        return Err(format!("cannot split type and name in {decl:?}"));
    };
    let name = name_part.trim_ascii();
    let type_name = type_part.trim_ascii();
    if name.is_empty() {
        return Err(format!("no field name in {decl:?}"));
    }
    // Brackets after the type part (`__data_loc char[] name`) mark a dynamic array.
    let is_array = is_array || type_name.contains('[');
    Ok((type_name, name, array_len, is_array))
}

/// Signedness of a C type, for formats written before the kernel printed `signed:`.
fn type_is_signed(type_name: &str) -> bool {
    let t = type_name.trim_ascii();
    if t.contains('*') || t.contains("unsigned") {
        return false;
    }
    !(t.starts_with('u') || t.starts_with("__u") || t.starts_with("bool") || t.starts_with("_Bool"))
}

/// What `header_page` says about ring-buffer pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPage {
    /// Offset of the `commit` field (after the 8-byte timestamp).
    pub commit_offset: usize,
    /// Size of `commit`: the kernel's long size (4 or 8).
    pub commit_size: usize,
    /// Offset where event data starts.
    pub data_offset: usize,
    /// Declared size of the data area (page size minus header), when given.
    pub data_size: Option<usize>,
}

impl HeaderPage {
    /// The layout every kernel has used, for a given kernel long size.
    pub fn default_for_long(long_size: usize) -> HeaderPage {
        HeaderPage {
            commit_offset: 8,
            commit_size: long_size,
            data_offset: 8 + long_size,
            data_size: None,
        }
    }

    /// Parses the `header_page` text.
    pub fn parse(text: &str) -> Result<HeaderPage> {
        let mut fields = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_ascii();
            if t.starts_with("field") {
                let f = parse_field_line(t).map_err(|what| Error::Format {
                    name: "header_page".into(),
                    line: i + 1,
                    what,
                })?;
                fields.push(f);
            }
        }
        let get = |n: &str| fields.iter().find(|f| f.name == n);
        let commit = get("commit").ok_or_else(|| Error::Format {
            name: "header_page".into(),
            line: 1,
            what: "no `commit` field".into(),
        })?;
        let data = get("data");
        let commit_size = commit.size;
        if commit_size != 4 && commit_size != 8 {
            return Err(Error::Format {
                name: "header_page".into(),
                line: 1,
                what: format!("commit size {commit_size} is neither 4 nor 8"),
            });
        }
        Ok(HeaderPage {
            commit_offset: commit.offset,
            commit_size,
            data_offset: data
                .map(|d| d.offset)
                .unwrap_or(commit.offset + commit_size),
            data_size: data.map(|d| d.size),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED_SWITCH: &str = "name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:64;\tsize:4;\tsigned:0;
\tfield:const char * fn;\toffset:68;\tsize:8;\tsigned:0;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

    #[test]
    fn parses_fields_offsets_and_flags() {
        let f = EventFormat::parse("sched", SCHED_SWITCH).expect("parses");
        assert_eq!(f.id, 316);
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.common_fields.len(), 4);
        assert_eq!(f.fields.len(), 9);
        let comm = f.field("prev_comm").expect("prev_comm");
        assert_eq!((comm.offset, comm.size, comm.array_len), (8, 16, 16));
        assert!(comm.flags.array && comm.flags.string && !comm.flags.signed);
        let state = f.field("prev_state").expect("prev_state");
        assert!(state.flags.long && state.flags.signed && !state.flags.array);
        let name = f.field("name").expect("name");
        assert!(name.flags.dynamic && name.flags.string && name.flags.array);
        assert_eq!(name.type_name, "__data_loc char[]");
        let func = f.field("fn").expect("fn");
        assert!(func.flags.pointer);
        assert_eq!(
            f.print_fmt,
            "\"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid"
        );
    }

    #[test]
    fn old_formats_without_signed_guess_from_type() {
        let text = "name: x\nID: 5\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n\tfield:int common_pid;\toffset:4;\tsize:4;\n\n\tfield:u32 a;\toffset:8;\tsize:4;\n\tfield:s64 b;\toffset:12;\tsize:8;\n\nprint fmt: \"\"\n";
        let f = EventFormat::parse("s", text).expect("parses");
        assert!(!f.field("a").expect("a").flags.signed);
        assert!(f.field("b").expect("b").flags.signed);
        assert!(f.field("common_pid").expect("pid").flags.signed);
    }

    #[test]
    fn header_page_of_64_and_32_bit_kernels() {
        let h64 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
        let p = HeaderPage::parse(h64).expect("parses");
        assert_eq!(
            (p.commit_size, p.data_offset, p.data_size),
            (8, 16, Some(4080))
        );
        let h32 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:1;\n";
        let p = HeaderPage::parse(h32).expect("parses");
        assert_eq!((p.commit_size, p.data_offset), (4, 12));
    }

    /// Regression: a UTF-8 non-breaking space (0xC2 0xA0) written over the space before a
    /// field name made the declaration split at a byte index found by a Unicode
    /// whitespace search plus one, inside the character: "byte index is not a char
    /// boundary", and `rtwhy info`/`analyze` exited 101.
    #[test]
    fn nbsp_over_the_space_before_a_field_name_is_an_error_not_a_panic() {
        let text =
            "name: x\nID: 7\nformat:\n\tfield:int\u{a0}ommon_pid;\toffset:4;\tsize:4;\tsigned:1;\n";
        let e = EventFormat::parse("s", text).expect_err("no ASCII separator");
        assert!(e.to_string().contains("cannot split type and name"), "{e}");
    }

    #[test]
    fn multibyte_characters_anywhere_in_a_declaration_never_panic() {
        let pieces = ["\u{a0}", "\u{2003}", "\u{3000}", "é", "€", "😀", "\u{85}"];
        let decls = [
            "int a",
            "unsigned char comm[16]",
            "__data_loc char[] name",
            "const char * fn",
            "char x[4294967296000000000000]",
        ];
        for p in pieces {
            for d in decls {
                for at in 0..=d.len() {
                    let mut m = d.to_string();
                    m.insert_str(at, p);
                    let line = format!("field:{m};\toffset:8;\tsize:4;\tsigned:0;");
                    let _ = parse_field_line(&line);
                    if at < d.len() {
                        let mut over = d.to_string();
                        over.replace_range(at..at + 1, p);
                        let _ = parse_field_line(&format!("field:{over};\toffset:8;\tsize:4;"));
                    }
                }
            }
        }
        // A multibyte character inside a word keeps it one word.
        let f = parse_field_line("field:int caf\u{e9};\toffset:8;\tsize:4;").expect("parses");
        assert_eq!((f.type_name, f.name), ("int", "caf\u{e9}"));
        // Huge numbers are refused, not wrapped.
        assert!(
            parse_field_line("field:int a;\toffset:99999999999999999999999;\tsize:4;").is_err()
        );
        assert!(parse_field_line("field:int a;\toffset:8;\tsize:18446744073709551615;").is_err());
    }

    #[test]
    fn lines_and_parts_split_as_the_standard_library_does() {
        let texts = [
            "",
            "\n",
            "\n\n",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "a\r",
            "a\rb\n\r\n\r",
            "\r\n",
            "é\n\u{a0}\r\n😀",
            ";",
            ";;",
            "a;",
            ";a",
            "field:int a;\toffset:0;\tsize:4;",
            "é;€\n;",
        ];
        for t in texts {
            let ours: Vec<&str> = Lines { rest: t }.collect();
            assert_eq!(ours, t.lines().collect::<Vec<_>>(), "{t:?}");
            let ours: Vec<&str> = parts(t).collect();
            assert_eq!(ours, t.split(';').collect::<Vec<_>>(), "{t:?}");
        }
    }

    #[test]
    fn a_print_fmt_over_several_lines_keeps_them_and_drops_the_carriage_returns() {
        let text = "name: x\r\nID: 3\r\n\tfield:int common_pid;\toffset:4;\tsize:4;\r\n\r\nprint fmt: \"%d\",  \r\n  REC->a\r\n\r\n";
        let f = EventFormat::parse("s", text).expect("parses");
        assert_eq!((f.id, f.name.as_str()), (3, "x"));
        assert_eq!(f.common_fields.len(), 1);
        assert_eq!(f.print_fmt, "\"%d\",\n  REC->a");
    }

    /// `check` is what decides at load time whether a format is kept or warned about, so
    /// it must fail exactly when `parse` does, with the same error.
    #[test]
    fn check_fails_exactly_when_parse_does() {
        let texts = [
            SCHED_SWITCH.to_string(),
            String::new(),
            "name: x\nID: nope\n".into(),
            "ID: 4\n".into(),
            "name: x\n".into(),
            "name: x\nID: 1\n\tfield:int;\toffset:0;\tsize:4;\n".into(),
            SCHED_SWITCH.replace("offset:24;", "offset:;"),
            SCHED_SWITCH.replace(
                "size:16;\tsigned:0;\n\tfield:pid_t",
                "signed:0;\n\tfield:pid_t",
            ),
            SCHED_SWITCH.replace("char next_comm[16]", "next_comm[16]"),
            SCHED_SWITCH.replace("print fmt:", "ID: 5\nprint fmt:"),
            format!("{SCHED_SWITCH}ID: x\n"),
        ];
        for t in &texts {
            match (
                EventFormat::parse("sched", t),
                EventFormat::check("sched", t),
            ) {
                (Ok(f), Ok((id, name))) => assert_eq!((f.id, f.name.as_str()), (id, name)),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                (a, b) => panic!("{t:?}: parse {a:?}, check {b:?}"),
            }
        }
    }

    #[test]
    fn a_usual_field_line_is_one_parse_field_line_reads() {
        let usual = [
            "field:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;",
            "field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;",
            "field:__data_loc char[] name;\toffset:8;\tsize:4;",
            "field:const char * fn;\toffset:999999;\tsize:8;\tsigned:0;",
        ];
        for line in usual {
            assert!(usual_field_line_parses(line), "{line:?}");
            assert!(parse_field_line(line).is_ok(), "{line:?}");
        }
        let others = [
            "field:int;\toffset:0;\tsize:4;",
            "field: ;\toffset:0;\tsize:4;",
            "field:int a;\toffset:1048561;\tsize:4;",
            "field:int a;\toffset:0;\tsize:4;\tsigned:2;",
            "field:int a;\toffset:;\tsize:4;",
            "field:int a;\toffset:+1;\tsize:4;",
            "field:int a;\toffset:0; size:4;",
            "field:int a;\toffset:0;\tsize:4",
            "field:int a;\toffset:0;\tsize:4;\tsigned:0; ",
            "field special:int a;\toffset:0;\tsize:4;",
            "field:int a[;\toffset:0;\tsize:4;",
            "field:int a\u{a0};\toffset:0;\tsize:4;",
        ];
        for line in others {
            assert!(
                !usual_field_line_parses(line) || parse_field_line(line).is_ok(),
                "{line:?}"
            );
        }
        assert!(!usual_field_line_parses("field:int;\toffset:0;\tsize:4;"));
        assert!(!usual_field_line_parses(
            "field:int a;\toffset:1048561;\tsize:4;"
        ));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(EventFormat::parse("s", "").is_err());
        assert!(EventFormat::parse("s", "name: x\nID: nope\n").is_err());
        assert!(
            EventFormat::parse("s", "name: x\nID: 1\n\tfield:int;\toffset:0;\tsize:4;\n").is_err()
        );
        assert!(HeaderPage::parse("garbage").is_err());
    }
}
